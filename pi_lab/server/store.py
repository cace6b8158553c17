"""Parsed sessions, kept per file and brought up to date as the file grows.

The viewer never writes a session file: a file is read as bytes and held in an in-memory
``SessionManager`` (``pi_lab.session.readonly``). The cache is keyed by the file's resolved
path and checked against its size, modification time and inode on every state or poll
request:

* unchanged: nothing is read;
* grown (same inode, same first bytes, at least as long as what was read): only the bytes after
  the last complete line are read, and only complete lines are taken in (pi may be in the middle
  of writing one), like ``SessionManager.refresh``;
* anything else (shrunk, replaced, rewritten in place): the file is read again from the start,
  and the session gets a new ``generation``.

Each session keeps a few row layouts (:class:`SharedView`), one per (filter, search, folds), shared
by every browser that looks at the same layout. A view catches up with its session before it
answers, and remembers its recent deltas so that a browser a few versions behind gets the same
small deltas instead of the whole structure.

Every method here is blocking and meant to run in a worker thread; the locks make the objects
safe to share between those threads.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import stat
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pi_lab.errors import PiLabError
from pi_lab.formats.detect import UnknownSessionFormat, detect_format_of
from pi_lab.research.notes import NoteStore
from pi_lab.session.readonly import session_from_loaded
from pi_lab.session.stable_ids import needs_stable_ids, stable_uuid_factory_from_digest
from pi_lab.session.storage import InvalidSessionFile, check_regular_file, parse_lines, read_lines
from pi_lab.session.tail import FileReplaced, FileTail
from pi_lab.view.gauge import gauge_after_entries
from pi_lab.view.header import session_header
from pi_lab.view.notes import kept_entry_ids
from pi_lab.view.payload import SessionView, ViewSettings, gauge_payload, kind_of
from pi_lab.view.rows import RowState

__all__ = ["SessionStore", "LoadedSession", "SharedView", "ViewKey", "NotASession", "FileTooLarge", "view_key"]

_HEAD_BYTES = 4096
_FIRST_LINE_SCAN = 1024 * 1024
_DELTA_HISTORY = 64
# Versions of different layouts never collide: each layout starts at its own multiple of this.
_VERSION_STRIDE = 1 << 20
_versions = itertools.count(1)
_generations = itertools.count(1)


class NotASession(PiLabError):
    """The file is readable but is not a pi session; the message says why."""


class FileTooLarge(Exception):
    """The file is larger than ``PiLabConfig.max_file_bytes``."""


ViewKey = tuple[str, str, tuple[str, ...], str]


def view_key(filter_mode: Any = "default", search: Any = "", folded: Iterable[Any] | None = (),
             note_filter: Any = "") -> ViewKey:
    """A normalised (filter, search, folds, note filter); raises ``ValueError`` on bad types."""
    if not isinstance(filter_mode, str) or not isinstance(search, str) or not isinstance(note_filter, str):
        raise ValueError("filter_mode, search and note_filter must be strings")
    folds = tuple(sorted({f for f in (folded or ()) if isinstance(f, str)}))
    return filter_mode, search, folds, note_filter


@dataclass(frozen=True, slots=True)
class FileStamp:
    size: int
    mtime_ns: int
    inode: int
    device: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


@dataclass
class SharedView:
    """One row layout of one session, and the deltas that led to its current version."""

    view: SessionView
    deltas: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=_DELTA_HISTORY))
    # per settings: (the engine's change cursor when computed, the gauge)
    gauges: dict[ViewSettings, tuple[Any, dict[str, Any]]] = field(default_factory=dict)
    # the notes store's version the note filter's entries were computed at (-1: not yet)
    notes_version: int = -1

    @property
    def version(self) -> int:
        return self.view.rows.version

    def deltas_since(self, version: int) -> list[dict[str, Any]] | None:
        """The deltas from ``version`` to the current one, or None when they are not all known."""
        if version == self.version:
            return []
        chain: list[dict[str, Any]] = []
        at = version
        for delta in self.deltas:
            if delta["from"] == at:
                chain.append(delta)
                at = delta["to"]
        return chain if at == self.version and chain else None


@dataclass
class LoadedSession:
    """One parsed file: its manager, where reading stopped, and its views."""

    path: str
    sm: Any
    stamp: FileStamp
    head: bytes
    consumed: int  # bytes up to the end of the last complete line taken in
    tail: bytes  # what followed that line when it was read
    tail_taken: bool  # whether that tail was a whole JSON object and is in the session
    lines: int  # complete lines taken in
    # "pi", or the other agent whose adapter holds the file (read again whole by its refresh)
    agent: str = "pi"
    generation: int = field(default_factory=lambda: next(_generations))
    views: OrderedDict[ViewKey, SharedView] = field(default_factory=OrderedDict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    changed_at: float = field(default_factory=time.time)

    @property
    def size(self) -> int:
        return self.stamp.size


def _first_line_problem(handle: Any) -> tuple[str | None, Any]:
    """Why the file is not a session, judged by its first JSON line (None: read on), and that
    line's object when it was found in the first MiB."""
    chunk = handle.read(_FIRST_LINE_SCAN)
    handle.seek(0)
    for raw in chunk.split(b"\n")[:-1] if b"\n" in chunk else []:
        if not raw.strip():
            continue
        parsed = parse_lines(raw).entries
        if not parsed:
            continue  # pi skips unparsable lines before the header too
        first = parsed[0]
        if first.get("type") != "session" or not isinstance(first.get("id"), str):
            return f"its first JSON line is not a pi session header (type {_value_text(first.get('type'))})", first
        return None, first
    return None, None


def _agent_of(handle: Any) -> str:
    """Which agent wrote the file, from its first bytes (``pi`` when no agent is recognised:
    pi's reader then says what is wrong with the first line)."""
    chunk = handle.read(_FIRST_LINE_SCAN)
    handle.seek(0)
    try:
        return detect_format_of(chunk)
    # TypeError: detect_format_of compares a line's type with a set, and a list is unhashable
    # (a type nested in lists); no agent writes that, so pi's reader says what is wrong.
    except (UnknownSessionFormat, TypeError):
        return "pi"


def _value_text(value: Any) -> str:
    """A field of the file in a message: a short string as written, anything else by its kind
    (the repr of a value nested 3,000 levels deep would recurse, a long one would flood the line)."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:59] + "…")
    return kind_of(value)


def _tail_entry(tail: bytes) -> list[dict[str, Any]]:
    """The object on a last line without its newline, when it is a whole one (pi reads it)."""
    if not tail.strip():
        return []
    return parse_lines(tail).entries[:1]


class SessionStore:
    """The cache of parsed sessions (see the module docstring)."""

    def __init__(self, *, cache_bytes: int = 512 * 1024 * 1024, max_sessions: int = 16, max_views: int = 6,
                 max_file_bytes: int = 2 * 1024 * 1024 * 1024):
        self.cache_bytes = cache_bytes
        self.max_sessions = max(1, max_sessions)
        self.max_views = max(1, max_views)
        self.max_file_bytes = max_file_bytes
        self._sessions: OrderedDict[str, LoadedSession] = OrderedDict()
        self._path_locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ loading and freshness

    def _path_lock(self, path: str) -> threading.Lock:
        with self._lock:
            return self._path_locks.setdefault(path, threading.Lock())

    def get(self, path: str, *, refresh: bool = True) -> LoadedSession:
        """The parsed session of ``path`` (resolved), read or caught up as needed.

        Raises ``FileNotFoundError``, :class:`NotASession`, :class:`FileTooLarge` or ``OSError``.
        """
        with self._path_lock(path):
            with self._lock:
                loaded = self._sessions.get(path)
                if loaded is not None:
                    self._sessions.move_to_end(path)
            if loaded is None:
                loaded = self._load(path)
            elif refresh:
                with loaded.lock:
                    fresh = self._catch_up(loaded)
                if fresh is not loaded:
                    loaded = fresh
            else:
                return loaded
            with self._lock:
                self._sessions[path] = loaded
                self._sessions.move_to_end(path)
                self._evict(keep=path)
            return loaded

    def drop(self, path: str) -> None:
        with self._lock:
            self._sessions.pop(path, None)

    def cached_paths(self) -> list[str]:
        with self._lock:
            return list(self._sessions)

    def _evict(self, keep: str) -> None:
        total = sum(s.size for s in self._sessions.values())
        for path in list(self._sessions):
            if path == keep:
                continue
            if total <= self.cache_bytes and len(self._sessions) <= self.max_sessions:
                break
            total -= self._sessions.pop(path).size

    def _load(self, path: str) -> LoadedSession:
        if os.path.isdir(path):
            raise NotASession("it is a folder, not a session file")
        # A FIFO or device must never be opened: the open itself blocks the worker.
        check_regular_file(path)
        try:
            handle = open(path, "rb")
        except IsADirectoryError:
            raise NotASession("it is a folder, not a session file") from None
        with handle:
            st = os.fstat(handle.fileno())
            if not os.path.isfile(path):
                raise NotASession("it is not a regular file")
            if st.st_size > self.max_file_bytes:
                raise FileTooLarge(f"the file has {st.st_size:,} bytes; the viewer reads at most {self.max_file_bytes:,}")
            agent = _agent_of(handle)
            if agent != "pi":
                return self._load_foreign(path, agent, st, handle)
            problem, first = _first_line_problem(handle)
            if problem:
                raise NotASession(problem)
            # The engine's chunked reader: a 200 MB file is never in memory as bytes and as
            # entries at once, and its bytes are hashed only for a format that needs ids made
            # (the rule of a read-only open: ids derived from the file's bytes).
            hasher = hashlib.sha256() if needs_stable_ids(first) else None
            result, first_bytes = read_lines(handle, limit=st.st_size, hasher=hasher)
            handle.seek(0)
            head = handle.read(_HEAD_BYTES)
            consumed = result.tail_start  # the end of the last complete line
            handle.seek(consumed)
            tail = handle.read(result.size - consumed)
        try:
            factory = stable_uuid_factory_from_digest(hasher.digest()) if hasher is not None else None
            sm = session_from_loaded(result, first_bytes, os.path.basename(path), factory)
        except InvalidSessionFile as error:
            raise NotASession(error.reason or "it is not a pi session") from None
        return LoadedSession(
            path=path,
            sm=sm,
            stamp=FileStamp(result.size, st.st_mtime_ns, st.st_ino, st.st_dev),
            head=head,
            consumed=consumed,
            tail=tail,
            tail_taken=bool(_tail_entry(tail)),
            lines=result.lines,
        )

    def _load_foreign(self, path: str, agent: str, st: os.stat_result, handle: Any) -> LoadedSession:
        """Another agent's file, through its adapter (its raw lines are not pi entries)."""
        if agent == "claude-code":
            from pi_lab.formats.claude_code import ClaudeCodeSession as adapter
        else:
            from pi_lab.formats.codex import CodexSession as adapter
        head = handle.read(_HEAD_BYTES)
        sm = adapter.from_file(path)
        return LoadedSession(path=path, sm=sm, stamp=FileStamp.of(st), head=head, consumed=st.st_size, tail=b"",
                             tail_taken=False, lines=0, agent=agent)

    def _catch_up(self, loaded: LoadedSession) -> LoadedSession:
        """``loaded`` with what was appended, or a fresh read when the file was replaced."""
        st = os.stat(loaded.path)
        stamp = FileStamp.of(st)
        if stamp == loaded.stamp:
            return loaded
        if not stat.S_ISREG(st.st_mode):
            return self._load(loaded.path)  # replaced by a FIFO or a folder: refused there
        if loaded.agent != "pi":
            return self._refresh_foreign(loaded, stamp)
        grew = (stamp.inode, stamp.device) == (loaded.stamp.inode, loaded.stamp.device) and stamp.size > loaded.stamp.size
        header = loaded.sm.header or {}
        if not grew or header.get("version", 1) != 3:
            # Shrunk, replaced or rewritten; or an old format whose appended lines would
            # need the migration a full read does.
            return self._load(loaded.path)
        with open(loaded.path, "rb") as handle:
            if handle.read(len(loaded.head)) != loaded.head:
                return self._load(loaded.path)
        # The engine's reader of a growing file (SessionManager.refresh reads with it too).
        reader = FileTail(loaded.path, offset=loaded.consumed, size=loaded.stamp.size,
                          identity=(loaded.stamp.device, loaded.stamp.inode))
        try:
            chunk = reader.read().data
        except FileReplaced:
            return self._load(loaded.path)
        start = 0
        if loaded.tail_taken:
            newline = chunk.find(b"\n")
            if newline == -1:
                if chunk != loaded.tail:
                    return self._load(loaded.path)  # the finished-looking last line changed
                loaded.stamp = stamp
                return loaded
            if chunk[:newline].rstrip(b"\r") != loaded.tail.rstrip(b"\r"):
                return self._load(loaded.path)
            start = newline + 1
        elif loaded.tail and not chunk.startswith(loaded.tail):
            return self._load(loaded.path)
        body = chunk[start:]
        result = parse_lines(body, loaded.lines + (2 if loaded.tail_taken else 1), complete_only=True)
        tail = body[result.consumed_bytes:]
        extra = _tail_entry(tail)
        loaded.sm.skipped_lines.extend(result.skipped_lines)
        added = loaded.sm.add_loaded_entries(result.entries + extra)
        loaded.lines += (1 if loaded.tail_taken else 0) + body.count(b"\n", 0, result.consumed_bytes)
        loaded.consumed += start + result.consumed_bytes
        loaded.tail = tail
        loaded.tail_taken = bool(extra)
        loaded.stamp = stamp
        if added:
            loaded.changed_at = time.time()
        return loaded

    def _refresh_foreign(self, loaded: LoadedSession, stamp: FileStamp) -> LoadedSession:
        """The adapter's own refresh (a whole read that keeps a leaf moved in the viewer) when the
        file grew in place; a fresh load, with a new generation, when it was replaced or shrank."""
        same = (stamp.inode, stamp.device) == (loaded.stamp.inode, loaded.stamp.device)
        if not same or stamp.size < loaded.stamp.size:
            return self._load(loaded.path)
        with open(loaded.path, "rb") as handle:
            if handle.read(len(loaded.head)) != loaded.head:
                return self._load(loaded.path)
        if loaded.sm.refresh():
            loaded.changed_at = time.time()
        loaded.stamp = stamp
        loaded.consumed = stamp.size
        return loaded

    # ------------------------------------------------------------------ views

    def view(self, loaded: LoadedSession, key: ViewKey, notes: NoteStore | None = None) -> SharedView:
        """The layout ``key`` of ``loaded``, created or caught up with the session (and, with a
        note filter in ``key``, with the ``notes`` store: laid out again when they changed)."""
        with loaded.lock:
            shared = loaded.views.get(key)
            if shared is None:
                filter_mode, search, folded, note_filter = key
                version, keep = self._note_keep(loaded, note_filter, notes)
                # Not SessionView.open: its gauge has the default settings, and every answer
                # here takes the gauge of the request's settings from ``gauge`` (kept per settings).
                view = SessionView(loaded.sm, RowState(loaded.sm, filter_mode=filter_mode, search=search, folded=folded,
                                                       note_filter=note_filter, note_keep=keep))
                view.rows.version = next(_versions) * _VERSION_STRIDE
                shared = loaded.views[key] = SharedView(view, notes_version=version)
                while len(loaded.views) > self.max_views:
                    loaded.views.popitem(last=False)
            else:
                loaded.views.move_to_end(key)
                self._sync(shared)
                self._follow_notes(loaded, shared, key[3], notes)
            return shared

    @staticmethod
    def _note_keep(loaded: LoadedSession, note_filter: str, notes: NoteStore | None) -> tuple[int, Any]:
        """The notes store's version and the entries the note filter keeps (None: no filter)."""
        if not note_filter or notes is None:
            return -1, None
        version = notes.version()  # before the notes: a write in between is seen next time
        return version, kept_entry_ids(notes, loaded.sm, note_filter)

    def _follow_notes(self, loaded: LoadedSession, shared: SharedView, note_filter: str,
                      notes: NoteStore | None) -> None:
        """A note filter's rows laid out again when the notes changed the entries it keeps."""
        if not note_filter or notes is None or notes.version() == shared.notes_version:
            return
        shared.notes_version, keep = self._note_keep(loaded, note_filter, notes)
        rows = shared.view.rows
        if keep != rows.note_keep:
            rows.set_view(note_filter=note_filter, note_keep=keep)
            shared.deltas.clear()  # a new structure version, reached by no delta

    def _sync(self, shared: SharedView) -> None:
        rows = shared.view.rows
        result = rows.sync()
        if result.kind == "delta" and result.delta is not None:
            shared.deltas.append(result.delta.message())
        elif result.kind == "layout":
            shared.deltas.clear()

    def gauge(self, loaded: LoadedSession, shared: SharedView, settings: ViewSettings) -> dict[str, Any]:
        """The gauge at the session's leaf with these settings.

        Kept per settings with the engine's change cursor; when the session only grew at the
        leaf, the kept gauge is moved forward over the appended entries (``gauge_after_entries``,
        the widget's rule too) instead of walking the whole branch again.
        """
        with loaded.lock:
            sm = loaded.sm
            known = shared.gauges.get(settings)
            value = None
            if known is not None:
                changes = sm.changes_since(known[0])
                if not changes.rebuilt and not changes.appended and not changes.leaf_moved:
                    return known[1]
                if not changes.rebuilt and changes.appended:
                    value = gauge_after_entries(known[1], changes.appended)
                    if value is not None and value.get("leaf_id") != sm.leaf_id:
                        value = None  # the leaf stayed elsewhere (pinned): not a step forward
            cursor = sm.change_cursor
            if value is None:
                # The layout's projection is only current while no delta has been applied since.
                projection = shared.view.rows.projection if not shared.deltas else None
                value = gauge_payload(sm, settings, projection=projection, facts=shared.view.rows.facts)
            if len(shared.gauges) > 8:
                shared.gauges.clear()
            shared.gauges[settings] = (cursor, value)
            return value

    # ------------------------------------------------------------------ summaries

    def session_info(self, loaded: LoadedSession) -> dict[str, Any]:
        """What the viewer's header shows (the ``session`` state of the core)."""
        sm = loaded.sm
        with loaded.lock:
            # "file" is filled in by the handler with the browser's name for the file; nothing
            # answers prompts in the read-only viewer.
            return session_header(sm, file=None, following=True, read_only=True)

    def file_facts(self, loaded: LoadedSession) -> Mapping[str, Any]:
        return {
            "size": loaded.stamp.size,
            "mtime": loaded.stamp.mtime_ns / 1e9,
            "generation": loaded.generation,
            "agent": loaded.agent,
            "skipped_lines": len(loaded.sm.skipped_lines),
            "first_skipped_lines": loaded.sm.skipped_lines[:20],
            "incomplete_tail": bool(loaded.tail.strip()) and not loaded.tail_taken,
        }
