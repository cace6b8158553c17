"""The work behind SessionManager's constructors that is not object state.

Finding the cwd of a file being opened, reading a file read-only, choosing the directory
(and cwd filter) of a cwd's sessions and writing a fork's new file are plain steps on
paths and lines; ``SessionManager``'s classmethods call them and then build the object.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_lab.session import paths as _paths
from pi_lab.session.errors import SessionNotFound
from pi_lab.session.ids import Clock, UuidFactory, iso_timestamp, utc_now, uuid7, validate_session_id
from pi_lab.session.migration import CURRENT_VERSION
from pi_lab.session.stable_ids import needs_stable_ids, stable_uuid_factory_from_digest
from pi_lab.session.storage import (
    InvalidSessionFile,
    check_regular_file,
    create_exclusive,
    load_entries_from_file,
    read_session_header,
)

if TYPE_CHECKING:
    from pi_lab.session.entries import Entry
    from pi_lab.session.manager import SessionManager


def directory_of(resolved: str, session_dir: str | os.PathLike[str] | None) -> str:
    """The session directory of an opened file: the one given, else the file's folder."""
    return str(session_dir) if session_dir is not None else str(Path(resolved).parent)


def header_cwd(resolved: str) -> str:
    """The cwd named by a file's header (the process cwd when there is none)."""
    if os.path.exists(resolved):
        check_regular_file(resolved)
    header = read_session_header(resolved)
    if header is None and os.path.exists(resolved):
        # The first line may exceed the discovery scan; a full load learns the cwd (it
        # writes nothing: an unfinished last line is another writer's).
        loaded = load_entries_from_file(resolved, repair=False).entries
        header = loaded[0] if loaded else None
    cwd = header.get("cwd") if header else None
    return cwd if isinstance(cwd, str) else os.getcwd()


def cwd_sessions(cwd: str, session_dir: str | os.PathLike[str] | None) -> tuple[str, str | None]:
    """The directory holding ``cwd``'s sessions and the cwd to filter it by.

    The default directory of a cwd holds only that cwd's sessions, so it needs no filter;
    any other directory may mix cwds.
    """
    default_dir = _paths.default_session_dir(cwd)
    directory = str(session_dir) if session_dir is not None else default_dir
    filter_cwd = cwd if _paths.resolve_path(directory) != _paths.resolve_path(default_dir) else None
    return directory, filter_cwd


def open_read_only(
    cls: type[SessionManager],
    resolved: str,
    session_dir: str | os.PathLike[str] | None,
    cwd_override: str | None,
    *,
    uuid_factory: UuidFactory | None,
    clock: Clock | None,
    lazy: bool | None = None,
) -> SessionManager:
    """Read a session without writing it: no repair, no migration rewrite (in memory
    only, with ids derived from the file's bytes so every read gives the same ones)."""
    try:
        check_regular_file(resolved)
    except FileNotFoundError:
        raise SessionNotFound(f"No session file at {resolved}") from None
    # Ids are only made for a version-1 file; hash its bytes (while reading) only then.
    hasher = hashlib.sha256() if needs_stable_ids(read_session_header(resolved)) else None
    loaded = load_entries_from_file(resolved, repair=False, hasher=hasher, lazy=lazy)
    if loaded.invalid_reason or (not loaded.entries and loaded.skipped_lines):
        raise InvalidSessionFile(resolved, loaded.invalid_reason)
    if not loaded.entries:
        raise InvalidSessionFile(resolved, "empty file (no session header)")
    header = loaded.entries[0]
    cwd = cwd_override
    if cwd is None:
        named = header.get("cwd")
        cwd = named if isinstance(named, str) else os.getcwd()
    factory = uuid_factory or (stable_uuid_factory_from_digest(hasher.digest()) if hasher else None)
    sm = cls(cwd, directory_of(resolved, session_dir), None, True, uuid_factory=factory, clock=clock, preloaded=[])
    sm._read_only = True
    sm._session_file = resolved
    sm.skipped_lines = list(loaded.skipped_lines)
    # (file_sync reads it back with getattr and a default: SessionManager declares no such
    # attribute, and manager.py is not this module's to change)
    sm._loaded_version = loaded.entries[0].get("version")  # pyright: ignore[reportAttributeAccessIssue]
    sm._bodies = loaded.bodies
    sm._pending_rewrite = sm._adopt_checked(loaded.entries, resolved)
    sm._uuid_factory = uuid_factory  # stable ids only for the migration of this read
    sm._flushed = True
    sm._note_read(loaded)
    if loaded.tail_start < loaded.size:
        sm._note_unfinished(loaded)
    return sm


def write_fork(
    source_path: str | os.PathLike[str],
    target_cwd: str | os.PathLike[str],
    session_dir: str | os.PathLike[str] | None,
    *,
    id: str | None,
    clock: Clock | None,
) -> tuple[str, str, str]:
    """Copy a whole session file into a new one whose header names it as parent.

    Returns (cwd, directory, new file path) for the manager that opens the copy.
    """
    source = _paths.resolve_path(str(source_path))
    cwd = _paths.resolve_path(str(target_cwd))
    # The source is only read (pi ends its unfinished last line first: that line may be
    # another writer's, still being written; it is copied as pi parses it).
    loaded = load_entries_from_file(source, repair=False)
    if not loaded.entries:
        raise ValueError(f"Cannot fork: source session file is empty or invalid: {source}")
    directory = str(session_dir) if session_dir is not None else _paths.default_session_dir(cwd)
    os.makedirs(directory, exist_ok=True)
    session_id = validate_session_id(id) if id is not None else uuid7()
    now = (clock or utc_now)()
    header: Entry = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id,
        "timestamp": iso_timestamp(now),
        "cwd": cwd,
        "parentSession": source,
    }
    target = os.path.join(directory, _paths.session_file_name(header["timestamp"], session_id))
    # pi 1.6.0 copies the source lines without migrating them (session-format.md §7).
    body: list[Any] = [e for e in loaded.entries if e.get("type") != "session"]
    create_exclusive(target, [header, *body])
    return cwd, directory, target
