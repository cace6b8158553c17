"""The error contract of a scan: bad input is said plainly, a bug in pi_lab is said to be one.

Every file that cannot be read lands in ``Corpus.errors`` and the other files are still read.
Expected bad input (a file that holds no session, a FIFO, a file the system will not read)
gets its plain reason; an unexpected exception in pi_lab's own code must not pass for a bad
file: its reason starts with "internal error", asks to be reported, and a warning with the
traceback is logged.
"""

from __future__ import annotations

import json
import logging
import os

from corpus_builders import build_corpus
from pi_lab.corpus import Corpus
import pi_lab.corpus.extract as extract_module


def test_a_bug_in_the_extractor_is_an_internal_error_and_the_other_files_are_read(tmp_path, monkeypatch, caplog):
    files = build_corpus(tmp_path / "s")
    broken = str(files["O"])
    real_run = extract_module._Extractor.run

    def run(self):
        if self.path == broken:
            {}["no such key"]  # a pi_lab bug on one odd file
        return real_run(self)

    monkeypatch.setattr(extract_module._Extractor, "run", run)
    with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
        c = Corpus.scan(tmp_path / "s", cache=tmp_path / "cache", workers=1)
    reasons = dict(c.errors)
    assert list(reasons) == [broken]
    assert reasons[broken] == "internal error: KeyError: 'no such key' (please report)"
    assert c.sessions.num_rows == len(files) - 1  # the other files are all there
    warnings = [r for r in caplog.records if r.name == "pi_lab.corpus" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and broken in warnings[0].getMessage()
    assert warnings[0].exc_info is not None and warnings[0].exc_info[0] is KeyError  # the traceback
    # A file that failed is not cached as read: fixed, the next scan reads it.
    monkeypatch.setattr(extract_module._Extractor, "run", real_run)
    again = Corpus.scan(tmp_path / "s", cache=tmp_path / "cache", workers=1)
    assert again.errors == [] and again.sessions.num_rows == len(files)
    assert again.stats["read"] == 1


def test_bad_input_gets_its_plain_reason_and_no_warning(tmp_path, caplog):
    build_corpus(tmp_path / "s")
    (tmp_path / "s" / "notes.jsonl").write_text('{"hello": "world"}\n', encoding="utf-8")
    os.mkfifo(tmp_path / "s" / "pipe.jsonl")
    locked = tmp_path / "s" / "locked.jsonl"
    locked.write_text('{"type":"session","id":"L","version":3}\n', encoding="utf-8")
    locked.chmod(0)
    try:
        with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
            c = Corpus.scan(tmp_path / "s", cache=False, workers=1)
    finally:
        locked.chmod(0o644)
    reasons = {os.path.basename(p): r for p, r in c.errors}
    assert "session header" in reasons["notes.jsonl"]
    assert "FIFO" in reasons["pipe.jsonl"]
    if os.geteuid() != 0:  # root reads any file
        assert reasons["locked.jsonl"] == "Permission denied"
    assert not any(r.startswith("internal error") for r in reasons.values())
    assert not [r for r in caplog.records if r.name == "pi_lab.corpus"]


def test_odd_typed_ids_are_read_like_the_entries_table_does(tmp_path):
    """Hand-edited files can hold a number where pi writes an id string: the file is still
    read (no crash of the scan, no internal error) and every table shows such an id as null."""
    folder = tmp_path / "s"
    folder.mkdir()
    assistant = {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}],
                 "model": "claude-sonnet-4-5", "usage": {"input": 5, "output": 1, "totalTokens": 6}, "stopReason": "toolUse"}
    lines = [
        {"type": "session", "version": 3, "id": "S", "timestamp": "2026-07-29T09:00:00.000Z", "cwd": "/x"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-07-29T09:00:01.000Z",
         "message": {"role": "user", "content": "hi"}},
        {"type": "message", "id": 7, "parentId": 3, "timestamp": "2026-07-29T09:00:02.000Z", "message": assistant},
        {"type": "message", "id": 8, "parentId": 7, "timestamp": "2026-07-29T09:00:03.000Z",
         "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": "x"}},
        {"type": "compaction", "id": 9, "parentId": 8, "timestamp": "2026-07-29T09:00:04.000Z",
         "summary": "s", "firstKeptEntryId": "u1", "tokensBefore": 10},
    ]
    (folder / "odd.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    for workers in (1, 2):
        c = Corpus.scan(folder, cache=False, workers=workers)
        assert c.errors == []
        assert c.entries.column("entry_id").to_pylist() == ["u1", None, None, None]
        call = c.model_calls.to_pylist()
        assert [(r["entry_id"], r["parent_id"], r["input"]) for r in call] == [(None, None, 5.0)]
        assert c.tool_calls.column("entry_id").to_pylist() == [None]
        assert c.compactions.column("entry_id").to_pylist() == [None]
        assert c.usage(by="day").column("calls").to_pylist() == [1]


def test_rows_that_do_not_convert_to_arrow_lose_only_their_file(tmp_path, monkeypatch, caplog):
    files = build_corpus(tmp_path / "s")
    broken = str(files["P"])
    real_row = extract_module._Extractor._session_row

    def session_row(self, cols, name):
        real_row(self, cols, name)
        if self.path == broken:
            cols["sessions"]["name"][-1] = 12  # a pi_lab bug: a number in a string column

    monkeypatch.setattr(extract_module._Extractor, "_session_row", session_row)
    with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
        c = Corpus.scan(tmp_path / "s", cache=False, workers=1)
    reasons = dict(c.errors)
    assert list(reasons) == [broken]
    assert reasons[broken].startswith("internal error: ArrowTypeError: ") and reasons[broken].endswith("(please report)")
    assert sorted(c.sessions.column("session_id").to_pylist()) == ["C", "F", "L", "O"]
    assert c.entries.num_rows == sum(c.sessions.column("entries").to_pylist())  # nothing of P is left over
    assert len([r for r in caplog.records if r.name == "pi_lab.corpus"]) == 1
