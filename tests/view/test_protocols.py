"""The view reads sessions and drives agents through protocols (issue #23), never ``Any``: each
narrow protocol it declares is what the engine's own classes offer, pi's sessions and other
agents' alike, so a rename in the engine fails here and not in a viewer's click."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import pi_lab
from pi_lab.agent import AgentSession
from pi_lab.data import recorded_session
from pi_lab.session.protocol import ReadableSession
from pi_lab.view.actions import ActingAgent, WritableSession
from pi_lab.view.header import HeaderSession

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLAUDE = FIXTURES / "claude-code" / "inspect_scout-compaction_session.jsonl"
CODEX = FIXTURES / "codex" / "inspect_scout-rollout-2026-08-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"


@pytest.mark.parametrize("source", ["pi", CLAUDE, CODEX], ids=["pi", "claude-code", "codex"])
def test_every_session_offers_what_the_view_reads(tmp_path, source):
    original = recorded_session().path if source == "pi" else source
    sm = pi_lab.open_session(str(shutil.copy(original, tmp_path / Path(original).name)))
    for protocol in (ReadableSession, WritableSession, HeaderSession):
        assert isinstance(sm, protocol), protocol.__name__


def test_the_agent_offers_what_the_actions_drive(tmp_path):
    sm = pi_lab.open_session(str(shutil.copy(recorded_session().path, tmp_path / "s.jsonl")))
    agent = AgentSession(sm, record_startup=False)
    assert isinstance(agent, ActingAgent)
    assert isinstance(agent.session_manager, WritableSession)
