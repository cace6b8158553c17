"""One session header for every viewer (issue #23): the notebook widget and the JupyterLab
viewer send what pi_lab.view.header.session_header builds, for pi's sessions and other agents'
alike, each host adding only its own facts (how it names the file, following, writing)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import pi_lab
from pi_lab.data import recorded_session
from pi_lab.server.store import SessionStore
from pi_lab.view.actions import WRITE_ACTIONS
from pi_lab.view.header import session_header

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLAUDE = FIXTURES / "claude-code" / "inspect_scout-compaction_session.jsonl"
CODEX = FIXTURES / "codex" / "inspect_scout-rollout-2026-08-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"
# The fields of the viewer core's SessionInfo (src_frontend/core/transport.ts) every host sends.
FIELDS = {"id", "file", "name", "title", "first_message", "cwd", "entries", "model", "answering_model",
          "read_only", "following", "write_actions", "agent", "write_refusal"}


def _copy(tmp_path: Path, source: Path) -> str:
    return str(shutil.copy(source, tmp_path / source.name))


@pytest.mark.parametrize("source", ["pi", CLAUDE, CODEX], ids=["pi", "claude-code", "codex"])
def test_the_widget_and_the_lab_viewer_send_the_one_header(tmp_path, source):
    path = _copy(tmp_path, recorded_session().path if source == "pi" else source)
    widget = pi_lab.open(path)
    try:
        sm = widget.session_manager
        sent = widget.session
        assert set(sent) == FIELDS
        assert sent == session_header(sm, file=sm.session_file, following=sent["following"],
                                      read_only=sent["read_only"], answering_model=sent["answering_model"])
        # the same session in the JupyterLab viewer's store
        store = SessionStore()
        loaded = store.get(path)
        served = store.session_info(loaded)
        assert served == session_header(loaded.sm, file=None, following=True, read_only=True)
        host = {"file", "following", "read_only", "answering_model"}
        assert {k: v for k, v in served.items() if k not in host} == {k: v for k, v in sent.items() if k not in host}
    finally:
        widget.close()


def test_the_header_says_what_a_file_records_and_nothing_more(tmp_path):
    path = _copy(tmp_path, recorded_session().path)
    sm = pi_lab.open_session(path)
    header = session_header(sm, file="x.jsonl", following=False, read_only=True)
    assert header["name"] == sm.session_name and header["title"] == sm.session_name  # named: its name
    assert header["first_message"] == "Check the auth implementation"
    assert header["agent"] == "pi" and header["write_refusal"] is None
    assert header["write_actions"] == sorted(WRITE_ACTIONS)
    codex = pi_lab.open_session(_copy(tmp_path, CODEX))
    refused = session_header(codex, file=None, following=True, read_only=True)
    assert refused["agent"] == "codex" and "never" in refused["write_refusal"]
