"""Which agent wrote a session file, from its first lines (never from its name)."""

from __future__ import annotations

import os
import stat

from pi_lab.errors import PiLabError
from pi_lab.session._json import loads_object

# How much of the file the decision may read: enough for a first line of pi's header or a
# Codex session_meta that carries long instructions, and a few Claude Code lines after it.
PROBE_BYTES = 1 << 20
_PROBE_LINES = 64

# Line types Claude Code writes that carry no uuid tree of their own; a file may start with
# several of them before its first message line.
_CLAUDE_PREAMBLE_TYPES = frozenset({"summary", "file-history-snapshot", "custom-title", "mode", "progress",
                                    "queue-operation", "tag", "agent-name", "last-prompt", "pr-link"})
_CLAUDE_MESSAGE_TYPES = frozenset({"user", "assistant", "system", "attachment"})


class UnknownSessionFormat(PiLabError, ValueError):
    """The file is not a session of any agent pi_lab reads."""

    def __init__(self, path: str | os.PathLike[str], reason: str):
        super().__init__(f"{os.fspath(path)}: not a session file pi_lab can read ({reason})")
        self.path = os.fspath(path)
        self.reason = reason


def detect_format(path: str | os.PathLike[str]) -> str:
    """``"pi"``, ``"claude-code"`` or ``"codex"`` for the agent whose session ``path`` holds.

    pi: the first JSON object (pi skips blank and unparsable lines) is a header of type
    ``session``. Codex: lines of ``{timestamp, type, payload}`` starting with ``session_meta``.
    Claude Code: message lines with ``uuid`` and ``sessionId`` (possibly after summary and
    snapshot lines). A FIFO or device is refused without being opened for reading."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UnknownSessionFormat(path, "no such file") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnknownSessionFormat(path, "not a regular file")
    with open(path, "rb") as handle:
        data = handle.read(PROBE_BYTES)
    return detect_format_of(data, path)


def _lines(data: bytes):
    """The lines of ``data`` one at a time: the probe is up to 1 MB and most files are told by
    their first line, so splitting all of it (a list of every line) was most of the work
    (about 0.5 ms a file, seconds over a folder of thousands)."""
    start = 0
    while start <= len(data):
        end = data.find(b"\n", start)
        if end < 0:
            yield data[start:]
            return
        yield data[start:end]
        start = end + 1


def detect_format_of(data: bytes, path: str | os.PathLike[str] = "<bytes>") -> str:
    """:func:`detect_format` of the first bytes of a file."""
    seen = 0
    claude_preamble = False
    for raw in _lines(data):
        if seen >= _PROBE_LINES:
            break
        line = raw.strip()
        if not line:
            continue
        # JSON.parse's rules (lone surrogate escapes, any depth), as every reader here parses.
        value = loads_object(line)
        seen += 1
        if not isinstance(value, dict):
            # pi skips an unparsable line before its header; a cut-off probe ends the same way.
            continue
        kind = value.get("type")
        if kind is not None and not isinstance(kind, str):
            if claude_preamble:
                continue
            break  # a type of another JSON kind: no agent's line, and pi's first object is no header
        if kind == "session" and not claude_preamble:
            return "pi"
        if kind == "session_meta" and isinstance(value.get("payload"), dict):
            return "codex"
        if "payload" in value and "timestamp" in value and kind in {"response_item", "event_msg", "turn_context", "compacted"}:
            return "codex"
        if kind in _CLAUDE_MESSAGE_TYPES and "uuid" in value and ("sessionId" in value or "parentUuid" in value):
            return "claude-code"
        if kind in _CLAUDE_PREAMBLE_TYPES:
            claude_preamble = True
            continue
        if kind is not None and not claude_preamble:
            # pi opens a file only when its first JSON object is the header.
            break
    if claude_preamble:
        return "claude-code"
    raise UnknownSessionFormat(path, "its first lines are no pi, Claude Code or Codex session")
