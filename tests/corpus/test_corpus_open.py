"""From the corpus to the viewer (issue #22): ``c.open(session_id, entry_id)`` gives the widget
on that session's file at that entry, read-only; and ``Corpus.scan()`` with no folder reads pi's."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from corpus_builders import build_corpus

from pi_lab.corpus import Corpus
from pi_lab.errors import PiLabError
from pi_lab.view.notes import notes_payload

pytest.importorskip("anywidget")


def _digests(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.jsonl"))}


@pytest.fixture()
def corpus(tmp_path):
    files = build_corpus(tmp_path / "s")
    return Corpus.scan(tmp_path / "s", cache=False, workers=1), files


def test_open_selects_the_entry_in_its_sessions_file(corpus, tmp_path):
    c, files = corpus
    before = _digests(tmp_path / "s")
    widget = c.open("P", "a2")
    try:
        assert widget.session_manager.session_file == str(files["P"])
        assert widget.selected_id == "a2"
        assert widget.leaf_id == "n1"  # the file's own leaf: only the selection moved
        assert widget.writable is False
    finally:
        widget.close()
    assert _digests(tmp_path / "s") == before  # opening never writes


def test_open_with_leaf_shows_the_session_as_it_was_at_the_entry(corpus):
    c, _files = corpus
    widget = c.open("P", "a3", leaf=True)
    try:
        assert widget.leaf_id == "a3" and widget.selected_id == "a3"
    finally:
        widget.close()


def test_open_by_file_and_a_hidden_entry(corpus):
    c, files = corpus
    # The label entry is hidden by the default filter: the viewer shows every entry instead.
    widget = c.open(str(files["P"]), "l1")
    try:
        assert widget.selected_id == "l1" and widget.filter_mode == "all"
    finally:
        widget.close()


def test_a_session_id_in_two_files_opens_the_one_that_wrote_the_entry(tmp_path):
    files = build_corpus(tmp_path / "s")
    copy = tmp_path / "s" / "zz-copy-of-p.jsonl"
    shutil.copyfile(files["P"], copy)
    c = Corpus.scan(tmp_path / "s", cache=False, workers=1)
    with pytest.raises(PiLabError, match="2 files"):
        c.open("P")
    widget = c.open(str(copy), "a1")
    try:
        assert widget.session_manager.session_file == str(copy)
    finally:
        widget.close()


def test_open_says_what_is_missing(corpus):
    c, _files = corpus
    with pytest.raises(PiLabError, match="no session 'nope'"):
        c.open("nope", "a1")
    with pytest.raises(PiLabError, match="no entry 'zz'"):
        c.open("P", "zz")


def test_scan_without_folders_reads_pis_folder_under_home(tmp_path, monkeypatch):
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    build_corpus(tmp_path / "home" / ".pi" / "agent" / "sessions" / "--repo--")
    build_corpus(tmp_path / "elsewhere")  # not read
    c = Corpus.scan(workers=1, cache=False)
    assert c.sessions.num_rows == 5
    assert all(f.startswith(str(tmp_path / "home" / ".pi" / "agent" / "sessions") + os.sep) for f in c.files)


def test_scan_without_folders_when_pi_has_no_sessions_yet(tmp_path, monkeypatch):
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    # (the other agents' default folders, read too, are this machine's: none here)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    c = Corpus.scan(workers=1, cache=False)
    assert c.sessions.num_rows == 0
    assert c.errors == [(str(tmp_path / "agent" / "sessions"), "no such file or directory")]


def test_open_shows_the_corpus_notes_and_findings(corpus, tmp_path):
    """The viewer c.open gives reads the corpus's notes file (where c.ask writes its findings),
    so a finding is a mark on its entry there; the session file is untouched."""
    c, files = corpus
    c.notes_path = tmp_path / "notes.jsonl"
    before = _digests(tmp_path / "s")
    c.notes.add("P", "a2", "claimed the tests pass", tag="claim", source="model:test/judge: did it run them?",
                question="did it run them?")
    widget = c.open("P", "a2")
    try:
        assert widget.notes.path == str(tmp_path / "notes.jsonl")
        payload = notes_payload(widget.notes, widget.session_manager)  # what the viewer asks for
        assert [(n["entry_id"], n["source"]) for n in payload["notes"]] == [("a2", "model:test/judge: did it run them?")]
    finally:
        widget.close()
    assert _digests(tmp_path / "s") == before
