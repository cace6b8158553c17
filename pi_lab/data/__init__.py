"""Session files shipped with pi_lab, so a tour or a test works without any other file.

``recorded_session()`` describes ``sessions/tiny-auth.jsonl``: a session recorded by pi_lab's own
:class:`~pi_lab.agent.AgentSession` on the offline model (scripted replies and tool calls) against a
tiny real project built in a temporary folder. The agent really listed, read and edited the
project's files; the file was written by :class:`~pi_lab.session.SessionManager` line by line, as
pi writes its sessions. ``tools/record_sample_session.py`` regenerates it byte for byte (fixed ids
and clock), and a test re-records it and compares the bytes.

The offline model's window is set small (see ``RecordedSession.context_window``) so that two
compactions happen within a dozen turns. A session file does not record its model's window, so
a viewer has to be told it: ``SessionWidget(path, context_window=rec.context_window)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

__all__ = ["RecordedSession", "TINY_AUTH", "WORKED_EXAMPLE", "recorded_session"]


@dataclass(frozen=True, slots=True)
class RecordedSession:
    """A packaged session and the settings it was recorded with."""

    name: str
    context_window: int
    reserve_tokens: int
    keep_recent_tokens: int
    description: str

    @property
    def path(self) -> Path:
        """The packaged file (read it or copy it; do not write to it)."""
        return Path(str(files(__name__) / "sessions" / f"{self.name}.jsonl"))


TINY_AUTH = RecordedSession(
    name="tiny-auth",
    context_window=4_000,
    reserve_tokens=2_000,
    keep_recent_tokens=600,
    description=(
        "recorded by pi_lab's AgentSession on the offline model (scripted replies and tool calls) "
        "against a tiny real project: it lists, reads and edits the files, goes back from a JWT "
        "attempt with a branch summary, and is compacted twice"
    ),
)

_SESSIONS = {TINY_AUTH.name: TINY_AUTH}


def recorded_session(name: str = TINY_AUTH.name) -> RecordedSession:
    """The packaged session called ``name`` (``"tiny-auth"``)."""
    try:
        return _SESSIONS[name]
    except KeyError:
        raise KeyError(f"no packaged session {name!r}; known: {', '.join(sorted(_SESSIONS))}") from None


# The worked example of the explainer pi_lab started from (its section 14), as the final JSONL: U1 → A1 → T1 → A2 read the auth
# code, the JWT path U2 → A3, the branch summary BS1 back at A2, the cookie path U2B …, and a compaction C1
# keeping U4 onwards. The tour, its marimo version and the tests all read this one copy.
WORKED_EXAMPLE = r'''{"type":"session","version":3,"id":"S1","timestamp":"2026-07-29T09:00:00Z","cwd":"/repo"}
{"type":"message","id":"U1","parentId":null,"timestamp":"2026-07-29T09:00:01Z","message":{"role":"user","content":"检查认证实现","timestamp":1}}
{"type":"message","id":"A1","parentId":"U1","timestamp":"2026-07-29T09:00:02Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-1","name":"read","arguments":{"path":"auth.ts"}}]}}
{"type":"message","id":"T1","parentId":"A1","timestamp":"2026-07-29T09:00:03Z","message":{"role":"toolResult","toolCallId":"call-1","toolName":"read","content":[{"type":"text","text":"..."}],"isError":false}}
{"type":"message","id":"A2","parentId":"T1","timestamp":"2026-07-29T09:00:04Z","message":{"role":"assistant","content":[{"type":"text","text":"认证逻辑已定位"}]}}
{"type":"message","id":"U2","parentId":"A2","timestamp":"2026-07-29T09:01:00Z","message":{"role":"user","content":"改成 JWT","timestamp":2}}
{"type":"message","id":"A3","parentId":"U2","timestamp":"2026-07-29T09:01:01Z","message":{"role":"assistant","content":[{"type":"text","text":"JWT 方案已完成"}]}}
{"type":"branch_summary","id":"BS1","parentId":"A2","timestamp":"2026-07-29T09:02:00Z","fromId":"A2","summary":"离开的 JWT 路径已完成认证改造。"}
{"type":"message","id":"U2B","parentId":"BS1","timestamp":"2026-07-29T09:02:01Z","message":{"role":"user","content":"改成 session cookie","timestamp":3}}
{"type":"message","id":"A4","parentId":"U2B","timestamp":"2026-07-29T09:02:02Z","message":{"role":"assistant","content":[{"type":"text","text":"cookie 方案已完成"}]}}
{"type":"message","id":"U3","parentId":"A4","timestamp":"2026-07-29T09:03:00Z","message":{"role":"user","content":"补充测试","timestamp":4}}
{"type":"message","id":"A5","parentId":"U3","timestamp":"2026-07-29T09:03:01Z","message":{"role":"assistant","content":[{"type":"text","text":"测试已补充"}]}}
{"type":"message","id":"U4","parentId":"A5","timestamp":"2026-07-29T09:04:00Z","message":{"role":"user","content":"检查边界条件","timestamp":5}}
{"type":"message","id":"A6","parentId":"U4","timestamp":"2026-07-29T09:04:01Z","message":{"role":"assistant","content":[{"type":"text","text":"边界条件已处理"}]}}
{"type":"compaction","id":"C1","parentId":"A6","timestamp":"2026-07-29T09:05:00Z","summary":"目标是完成认证改造；当前采用 session cookie；测试已补充。","firstKeptEntryId":"U4","tokensBefore":115000}
'''
