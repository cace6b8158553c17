"""Session files of every agent pi_lab reads, behind one read-only entry point.

``open_session(path)`` recognises a file by its content (never by its name) and returns a
:class:`~pi_lab.session.protocol.ReadableSession`: pi's own ``SessionManager`` opened read-only
for a pi file, a read-only adapter for another agent's file. Nothing here writes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pi_lab.formats.detect import UnknownSessionFormat, detect_format

if TYPE_CHECKING:
    from pi_lab.session.protocol import AGENTS, ReadableSession

__all__ = ["open_session", "detect_format", "UnknownSessionFormat", "ReadableSession", "AGENTS"]


def __getattr__(name: str) -> Any:
    # The protocol module (typing's Protocol machinery) loads when first asked for: a usage
    # read imports this package for format detection alone and never needs it.
    if name in ("AGENTS", "ReadableSession"):
        from pi_lab.session import protocol

        value = getattr(protocol, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_session(path: str | os.PathLike[str], **options: Any) -> ReadableSession:
    """Open the session file at ``path`` read-only, whichever agent wrote it.

    The result has ``.agent`` (``"pi"``, ``"claude-code"``, ...), ``.leaf_id``,
    ``.get_branch()``, ``.get_tree()`` and ``.build_session_context(entry_id)``; every entry is
    a dict with pi's keys (``id``, ``parentId``, ``type``). Raises
    :class:`UnknownSessionFormat` when the file is no agent's session pi_lab knows."""
    agent = detect_format(path)
    if agent == "pi":
        from pi_lab.session import SessionManager

        return SessionManager.open(path, read_only=True, **options)
    if agent == "claude-code":
        from pi_lab.formats.claude_code import open_claude_code

        return open_claude_code(path, **options)
    if agent == "codex":
        from pi_lab.formats.codex import open_codex

        return open_codex(path, **options)
    # Recognised, so the user is told what the file is rather than that it is no session.
    raise UnknownSessionFormat(path, f"a {agent} session: pi_lab does not read this agent's files yet")
