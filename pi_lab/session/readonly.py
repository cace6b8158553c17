"""Reading a session file without ever writing it (the CLI and the JupyterLab viewer).

``SessionManager.open`` may migrate the file it opens (session-format.md §7–§8);
a viewer must not, since pi may be writing the same file. ``SessionManager.open(path,
read_only=True)`` reads a file that way; :func:`session_from_bytes` builds an in-memory
manager from bytes that were read elsewhere. Both use the same header rule
(``storage.validate_loaded``) and the same stable ids. Files of format version 1 have no
entry ids; they are migrated in memory with ids derived from the file's bytes, so the ids are
the same on every read (pi would write random ones when it opens such a file).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pi_lab.session.manager import SessionManager
from pi_lab.session.stable_ids import needs_stable_ids, stable_uuid_factory, stable_uuid_factory_from_digest
from pi_lab.session.storage import parse_lines, validate_loaded

__all__ = ["session_from_bytes", "session_from_loaded", "needs_stable_ids", "stable_uuid_factory",
           "stable_uuid_factory_from_digest"]


def session_from_bytes(data: bytes, path: str | os.PathLike[str] = "<bytes>") -> SessionManager:
    """An in-memory SessionManager holding the session in ``data``; nothing is written.

    Raises :class:`InvalidSessionFile` (naming ``path``) when ``data`` is empty or its first
    JSON object is not a session header. Unparsable lines are skipped and their numbers kept
    in ``skipped_lines``.
    """
    return session_from_loaded(parse_lines(data), data[:4], path, stable_uuid_factory(data))


def session_from_loaded(loaded: Any, first_bytes: bytes, path: str | os.PathLike[str],
                        uuid_factory: Callable[[], str] | None) -> SessionManager:
    """:func:`session_from_bytes` of lines already parsed (``storage.parse_lines`` or
    ``read_lines``): the same header rule, cwd and skipped lines; ``uuid_factory`` makes the ids
    a migration needs (None: the manager's own)."""
    validate_loaded(loaded, first_bytes, path, empty_ok=False)
    header = loaded.entries[0]
    cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else "."
    sm = SessionManager.in_memory(cwd, entries=loaded.entries, uuid_factory=uuid_factory)
    sm.skipped_lines = list(loaded.skipped_lines)
    return sm
