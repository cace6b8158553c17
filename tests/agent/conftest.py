from __future__ import annotations

import asyncio

import pytest
from helpers import Clock

from pi_lab.agent import AgentSession
from pi_lab.compaction import CompactionSettings, RetryPolicy
from pi_lab.llm import OfflineModel
from pi_lab.session import SessionManager
from pi_lab.session.ids import epoch_ms


class Rig:
    """An AgentSession on a temp file, an offline model and one clock, with recorded events."""

    def __init__(self, tmp_path, *, script=(), window=100_000, max_tokens=4096, settings=None, retry=None,
                 in_memory=False, **agent_options):
        self.clock = Clock()
        self.client = OfflineModel(script, context_window=window, max_tokens=max_tokens,
                                   clock=lambda: epoch_ms(self.clock()))
        if in_memory:
            self.sm = SessionManager.in_memory("/repo", clock=self.clock)
        else:
            self.sm = SessionManager.create("/repo", tmp_path / "sessions", clock=self.clock)
        self.agent = AgentSession(self.sm, client=self.client, settings=settings or CompactionSettings(),
                                  retry=retry or RetryPolicy(base_delay_ms=1), record_startup=False, **agent_options)
        self.events: list[dict] = []
        self.agent.subscribe(self.events.append)

    def run(self, coro):
        return asyncio.run(coro)

    def prompt(self, text, **kw):
        return self.run(self.agent.prompt(text, **kw))

    def types(self, prefix=""):
        return [e["type"] for e in self.events if e["type"].startswith(prefix)]

    def of(self, kind):
        return [e for e in self.events if e["type"] == kind]

    def branch_kinds(self):
        out = []
        for e in self.agent.session_manager.get_branch():
            if e["type"] == "message":
                out.append(e["message"]["role"] + ("!" if e["message"].get("stopReason") in ("error", "length") else ""))
            else:
                out.append(e["type"])
        return out


@pytest.fixture
def rig(tmp_path):
    def make(**kw):
        return Rig(tmp_path, **kw)

    return make
