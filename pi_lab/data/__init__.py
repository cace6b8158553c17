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

__all__ = ["RecordedSession", "TINY_AUTH", "recorded_session"]


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
        return Path(str(files(__package__) / "sessions" / f"{self.name}.jsonl"))


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
