"""pi_lab.open on a Claude Code or Codex file: the widget draws it read-only, by that agent's
rules, and refuses to make it writable; the gauge takes the window Codex recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import pi_lab
from pi_lab.errors import ReadOnlySession
from pi_lab.view.payload import READ_OPS

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLAUDE = FIXTURES / "claude-code" / "inspect_scout-compaction_session.jsonl"
CODEX = FIXTURES / "codex" / "inspect_scout-rollout-2026-08-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"


@pytest.mark.parametrize("source,agent", [(CLAUDE, "claude-code"), (CODEX, "codex")])
def test_the_widget_reads_other_agents_files_and_never_writes_them(tmp_path, source, agent):
    path = shutil.copy(source, tmp_path / "session.jsonl")
    before = Path(path).read_bytes()
    widget = pi_lab.open(path)
    sm = widget.session_manager
    assert sm.agent == agent and sm.read_only
    assert widget.leaf_id == sm.leaf_id
    assert widget.row_count > 0
    context = READ_OPS["context_at"](widget.view, {})
    assert context  # what the model saw at the leaf, by the agent's rules
    with pytest.raises(ReadOnlySession, match="never written"):
        pi_lab.open(path, writable=True)
    with pytest.raises(ReadOnlySession):
        sm.make_writable()
    widget.close()
    assert Path(path).read_bytes() == before


def test_the_gauge_takes_the_window_codex_recorded(tmp_path):
    path = shutil.copy(CODEX, tmp_path / "rollout.jsonl")
    sm = pi_lab.open_session(path)
    widget = pi_lab.open(path)
    if sm.recorded_context_window:
        assert widget.context_window == sm.recorded_context_window
    widget.close()
