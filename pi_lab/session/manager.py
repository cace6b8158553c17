"""SessionManager: the owner of one session's entries, index, leaf and file.

The hard work lives in pure functions (``tree``, ``projection``); this class keeps the
state pi keeps (session-format.md §9, tree-and-context.md §1) and calls them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pi_lab.session import opening as _opening
from pi_lab.session import paths as _paths
from pi_lab.session._gc import collector_paused
from pi_lab.session._text import js_trim
from pi_lab.session.appends import EntryAppends, is_user_or_assistant
from pi_lab.session.bodies import BodyFile, LazyEntry, ResolvingIndex, ResolvingPath, resolve_all
from pi_lab.session.changes import ChangeCursor, ChangeLog, Changes
from pi_lab.session.errors import EntryNotFound, SessionNotFound
from pi_lab.session.ids import (
    Clock,
    UuidFactory,
    epoch_ms,
    iso_timestamp,
    utc_now,
    uuid7,
    validate_session_id,
)
from pi_lab.session.index import apply_label, index_and_tree, index_lines, last_line_path
from pi_lab.session.migration import CURRENT_VERSION, migrate_entries
from pi_lab.session.projection import (
    SessionContext,
    SessionProjection,
    build_context_entries,
    build_session_projection,
    project_path,
)
from pi_lab.session.tail import FileTail
from pi_lab.session.tree import (
    UNSET,
    BranchPath,
    TreeNode,
    build_tree,
    find_cycles,
    get_branch,
)

__all__ = ["SessionManager", "SessionNotFound", "EntryNotFound"]

_PATHS_KEPT = 8  # cached root-to-entry paths (per kind: dicts, a lazy session's skeletons)


def _remember(cache: dict[str, list[Any]], target: str, path: list[Any]) -> None:
    """Keep ``path`` as the newest of at most _PATHS_KEPT in ``cache``."""
    if target in cache:
        del cache[target]
    elif len(cache) >= _PATHS_KEPT:
        del cache[next(iter(cache))]
    cache[target] = path

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)


class SessionManager(EntryAppends):
    """One pi session: a header plus an append-only tree of entries and a leaf pointer.

    Construct with :meth:`open`, :meth:`create`, :meth:`in_memory`, :meth:`continue_recent`
    or :meth:`fork_from`. ``uuid_factory`` replaces the random UUID strings entry ids are
    cut from, ``clock`` replaces "now" (a UTC ``datetime``); both make runs reproducible.
    """

    #: The agent that writes this format (``pi_lab.session.protocol.ReadableSession``).
    agent = "pi"

    def __init__(
        self,
        cwd: str,
        session_dir: str | None,
        session_file: str | None,
        persist: bool,
        *,
        uuid_factory: UuidFactory | None = None,
        clock: Clock | None = None,
        session_id_factory: Callable[[], str] | None = None,
        new_id: str | None = None,
        parent_session: str | None = None,
        preloaded: list[Entry] | None = None,
        lazy: bool | None = None,
    ):
        if new_id is not None:
            validate_session_id(new_id)
        self._cwd = cwd
        self._session_dir = session_dir or ""
        self._persist = persist
        self._uuid_factory = uuid_factory
        self._clock = clock or utc_now
        self._session_id_factory = session_id_factory
        self._file_entries: list[Entry] = []
        self._by_id: dict[str, Entry] = {}
        self._labels: dict[str, str] = {}
        self._label_timestamps: dict[str, str] = {}
        self._leaf_id: str | None = None
        self._flushed = False
        self._session_file: str | None = None
        self._session_id = ""
        self._has_conversation = False
        self.skipped_lines: list[int] = []
        """1-based numbers of lines that were not JSON objects when the file was read."""
        # The read position in the file: _consumed_bytes (every byte before it is in memory),
        # _known_size (the size when pi_lab last read or wrote it) and _identity (st_dev,
        # st_ino) are views of it (properties below).
        self._file_tail = FileTail()
        self._changes = ChangeLog()  # what changed since the last rebuild (changes_since)
        # Own lines past _consumed_bytes (written after another writer's unread bytes):
        # (start, end, entry), in file order.
        self._own_spans: list[tuple[int, int, Entry]] = []
        self._tail: bytes | None = None  # an unterminated last line already parsed (read-only)
        self._line_count = 0  # lines before _consumed_bytes (numbers for skipped_lines)
        self._read_only = False
        self._pending_rewrite = False  # read-only: migrated in memory, the file is older
        self._leaf_pinned = False
        self.allow_concurrent_writes = False
        """Append after another writer's new lines instead of raising ConcurrentWriteError."""
        self._entries_cache: list[Entry] | None = None
        self._branch_cache: dict[str, list[Entry]] = {}
        self._tree: tuple[list[TreeNode], dict[str, TreeNode]] | None = None
        # Lazy bodies (pi_lab.session.bodies): the file message bodies are read back from, or
        # None when every entry is a dict. The index, the entry list and the tree then hold
        # skeletons for those lines; every method below hands out dicts (resolve).
        self._lazy = lazy
        self._bodies: BodyFile | None = None
        self._raw_paths: dict[str, list[Any]] = {}  # lazy only: paths of skeletons, by leaf
        if persist and self._session_dir and not os.path.exists(self._session_dir):
            os.makedirs(self._session_dir, exist_ok=True)
        if session_file:
            self._set_session_file(session_file)
        elif preloaded is not None:
            if preloaded:
                self._adopt(preloaded)
        else:
            self.new_session(id=new_id, parent_session=parent_session)

    # ------------------------------------------------------------------ constructors

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        cwd_override: str | None = None,
        *,
        uuid_factory: UuidFactory | None = None,
        clock: Clock | None = None,
        read_only: bool = False,
        lazy: bool | None = None,
    ) -> SessionManager:
        """Open a session file (created lazily at the first message if it does not exist).

        ``lazy`` keeps message bodies in the file until they are read (``None``: for files
        of 8 MiB and more; see :mod:`pi_lab.session.bodies`). Every method returns the same
        dicts either way; a lazy session holds a descriptor of the file while it lives.
        Raises :class:`InvalidSessionFile` for a non-empty file that is not a pi session.
        An unfinished last line (no newline) is left to its writer, where pi ends it with a
        newline: appends are refused with :class:`~pi_lab.session.errors.UnfinishedLineError`
        until it is finished or :meth:`end_unfinished_line` ends it.
        """
        resolved = _paths.resolve_path(str(path))
        if read_only:
            return _opening.open_read_only(cls, resolved, session_dir, cwd_override, uuid_factory=uuid_factory,
                                           clock=clock, lazy=lazy)
        cwd = cwd_override if cwd_override is not None else _opening.header_cwd(resolved)
        return cls(cwd, _opening.directory_of(resolved, session_dir), resolved, True, uuid_factory=uuid_factory,
                   clock=clock, lazy=lazy)

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        id: str | None = None,
        parent_session: str | None = None,
        uuid_factory: UuidFactory | None = None,
        clock: Clock | None = None,
    ) -> SessionManager:
        """A new persisting session; its file appears with the first user or assistant message."""
        cwd_s = str(cwd)
        directory = str(session_dir) if session_dir is not None else _paths.default_session_dir(cwd_s)
        return cls(cwd_s, directory, None, True, uuid_factory=uuid_factory, clock=clock, new_id=id,
                   parent_session=parent_session)

    @classmethod
    def in_memory(
        cls,
        cwd: str | os.PathLike[str] = ".",
        *,
        id: str | None = None,
        entries: list[Entry] | None = None,
        uuid_factory: UuidFactory | None = None,
        clock: Clock | None = None,
    ) -> SessionManager:
        """A session that never touches the file system.

        ``entries`` preloads a session: with a header among them they are adopted verbatim
        (migrated if old); without one a header is made from ``id``/``cwd``.
        """
        if entries and any(e.get("type") == "session" for e in entries):
            return cls(str(cwd), "", None, False, uuid_factory=uuid_factory, clock=clock, preloaded=list(entries))
        manager = cls(str(cwd), "", None, False, uuid_factory=uuid_factory, clock=clock, new_id=id)
        if entries:
            manager._file_entries.extend(entries)
            manager._rebuild_index()
        return manager

    @classmethod
    def continue_recent(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        uuid_factory: UuidFactory | None = None,
        clock: Clock | None = None,
    ) -> SessionManager:
        """Open the most recently modified session of ``cwd``, or start a new one."""
        cwd_s = str(cwd)
        directory, filter_cwd = _opening.cwd_sessions(cwd_s, session_dir)
        found = _paths.find_most_recent_session(directory, filter_cwd)
        if found:
            return cls(cwd_s, directory, found, True, uuid_factory=uuid_factory, clock=clock)
        return cls(cwd_s, directory, None, True, uuid_factory=uuid_factory, clock=clock)

    @classmethod
    def fork_from(
        cls,
        source_path: str | os.PathLike[str],
        target_cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        id: str | None = None,
        uuid_factory: UuidFactory | None = None,
        clock: Clock | None = None,
    ) -> SessionManager:
        """Copy a whole session file into a new one whose header names it as parent."""
        cwd, directory, target = _opening.write_fork(source_path, target_cwd, session_dir, id=id, clock=clock)
        return cls(cwd, directory, target, True, uuid_factory=uuid_factory, clock=clock)

    @staticmethod
    def list(cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None) -> list[_paths.SessionInfo]:
        """Sessions of ``cwd``, newest first."""
        directory, filter_cwd = _opening.cwd_sessions(str(cwd), session_dir)
        return _paths.list_sessions(directory, filter_cwd)

    @staticmethod
    def list_all(session_dir: str | os.PathLike[str] | None = None) -> list[_paths.SessionInfo]:
        """Every session under the sessions root (or one directory), newest first."""
        return _paths.list_all_sessions(str(session_dir) if session_dir is not None else None)

    # ------------------------------------------------------------------ file state

    def _adopt(self, file_entries: list[Entry]) -> bool:
        """Take over loaded lines (header first); return whether migration changed them."""
        self._file_entries = file_entries
        header = self.header
        self._session_id = header.get("id", "") if header else ""
        migrated = migrate_entries(self._file_entries, self._uuid_factory)
        with collector_paused(len(file_entries), keep=True):
            fused = index_and_tree(self._file_entries)
        if fused is None:  # an unusual file: the general index and tree
            self._rebuild_index()
            self._build_views()
            return migrated
        self._entries_cache = fused.entries
        self._branch_cache = {}
        self._by_id, self._leaf_id, self._has_conversation = fused.by_id, fused.leaf, fused.has_conversation
        self._labels, self._label_timestamps = fused.labels, fused.label_timestamps
        self._tree = (fused.roots, fused.nodes)
        self._changes.rebuilt()
        leaf, bodies = self.leaf_id, self._bodies
        if leaf and bodies is None:
            self._cache_branch(leaf, fused.branch())  # the walk over places (get_branch's answer)
        elif leaf and bodies is not None:  # a lazy session parses the branch when asked; its path is known
            path = last_line_path(bodies.last_path, fused)
            self._cache_raw_path(leaf, path if path is not None else get_branch(self._by_id, leaf))
        return migrated

    def _build_views(self) -> None:
        """Build the tree and the current branch while the loaded entries are still hot.

        Every consumer of a loaded session (projection, gauge, /tree rows) asks for these
        first; building them here, in one pass with the collector paused, is cheaper than
        walking a cold structure on the first request, and appends keep both up to date.
        """
        entries = self._entries_view()
        with collector_paused(len(entries), keep=True):
            self._tree = build_tree(entries, self._by_id, self._labels, self._label_timestamps)
            leaf = self.leaf_id
            if leaf and self._bodies is None:
                self._cache_branch(leaf, get_branch(self._by_id, leaf))

    def new_session(self, id: str | None = None, parent_session: str | None = None) -> str | None:
        """Start an empty session (new id and header); returns its file path when persisting."""
        if id is not None:
            validate_session_id(id)
        now = self._clock()
        if id is not None:
            self._session_id = id
        elif self._session_id_factory is not None:
            self._session_id = self._session_id_factory()
        else:
            self._session_id = uuid7(epoch_ms(now))
        header: Entry = {
            "type": "session",
            "version": CURRENT_VERSION,
            "id": self._session_id,
            "timestamp": iso_timestamp(now),
            "cwd": self._cwd,
        }
        if parent_session is not None:
            header["parentSession"] = parent_session
        self._file_entries = [header]
        self._bodies = None
        self._rebuild_index()
        self._forget_file()
        self._leaf_pinned = False
        if self._persist:
            self._session_file = os.path.join(
                self._session_dir, _paths.session_file_name(header["timestamp"], self._session_id)
            )
            return self._session_file
        return None

    def _rebuild_index(self) -> None:
        self._entries_cache = None
        self._clear_paths()
        self._tree = None
        (self._by_id, self._leaf_id, self._has_conversation, self._labels,
         self._label_timestamps) = index_lines(self._file_entries)
        self._changes.rebuilt()

    def _index_entry(self, entry: Entry) -> None:
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            self._by_id[entry_id] = entry
        # pi sets the leaf to the line's id even when it has none ("undefined").
        self._leaf_id = entry_id if isinstance(entry_id, str) else UNSET
        if entry.get("type") == "label":
            self._apply_label(entry)
        if not self._has_conversation and is_user_or_assistant(entry):
            self._has_conversation = True

    def _apply_label(self, entry: Entry) -> None:
        apply_label(self._labels, self._label_timestamps, entry)

    # ------------------------------------------------------------------ read API

    @property
    def header(self) -> Entry | None:
        for entry in self._file_entries:
            if entry.get("type") == "session":
                return entry
        return None

    def get_header(self) -> Entry | None:
        return self.header

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def session_file(self) -> str | None:
        return self._session_file if self._persist else None

    @property
    def session_dir(self) -> str:
        return self._session_dir

    @property
    def cwd(self) -> str:
        return self._cwd

    @property
    def is_persisted(self) -> bool:
        return self._persist

    @property
    def flushed(self) -> bool:
        """Whether the file exists on disk (the lazy first write has happened)."""
        return self._flushed

    @property
    def leaf_id(self) -> str | None:
        return None if self._leaf_id is UNSET else self._leaf_id

    @property
    def entries(self) -> list[Entry]:
        """Every entry (all branches) in file order, headers excluded. A fresh list."""
        if self._bodies is not None:
            return resolve_all(self._entries_view())
        return list(self._entries_view())

    def get_entries(self) -> list[Entry]:
        return self.entries

    @property
    def file_entries(self) -> list[Entry]:
        """Every line as loaded, header included (a fresh list)."""
        if self._bodies is not None:
            return resolve_all(self._file_entries)
        return list(self._file_entries)

    def get_entry(self, entry_id: str) -> Entry | None:
        found = self._by_id.get(entry_id)
        return found.resolve() if type(found) is LazyEntry else found

    def get_leaf_entry(self) -> Entry | None:
        return self.get_entry(self._leaf_id) if isinstance(self._leaf_id, str) else None

    def get_entry_count(self) -> int:
        return len(self._by_id)

    def get_children(self, parent_id: str | None) -> list[Entry]:
        return resolve_all([e for e in self._by_id.values() if e.get("parentId") == parent_id])

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def get_label_timestamp(self, entry_id: str) -> str | None:
        return self._label_timestamps.get(entry_id)

    @property
    def labels(self) -> dict[str, str]:
        return dict(self._labels)

    @property
    def session_name(self) -> str | None:
        for entry in reversed(self._file_entries):
            if entry.get("type") == "session_info":
                name = entry.get("name")
                name = js_trim(name) if isinstance(name, str) else ""
                return name or None
        return None

    def get_session_name(self) -> str | None:
        return self.session_name

    def get_branch(self, from_id: str | None = None) -> list[Entry]:
        """Entries from the root to ``from_id`` (default: the leaf). A fresh list."""
        target = from_id if from_id is not None else self.leaf_id
        if not target:
            return []
        cached = self._branch_cache.get(target)
        if cached is None:
            if self._bodies is None:
                cached = get_branch(self._by_id, target)
            else:
                cached = resolve_all(self._raw_path(target))
            self._cache_branch(target, cached)
        return BranchPath(cached)

    def _raw_path(self, target: str) -> list[Any]:
        """The path to ``target`` as the engine holds it (skeletons of a lazy session)."""
        if self._bodies is None:
            return self.get_branch(target)
        raw = self._raw_paths.get(target)
        if raw is None:
            raw = get_branch(self._by_id, target)
            self._cache_raw_path(target, raw)
        return raw

    def _clear_paths(self) -> None:
        """Forget every cached path (the index was rebuilt or an id was replaced)."""
        self._branch_cache = {}
        self._raw_paths = {}

    def _lookups(self) -> tuple[Any, Any]:
        """(entry list, id index) for the pure path functions: dicts either way."""
        if self._bodies is None:
            return self._entries_view(), self._by_id
        return ResolvingPath(self._entries_view()), ResolvingIndex(self._by_id)

    def _cache_branch(self, target: str, path: list[Entry]) -> None:
        # Paths never change when entries are appended (entries are immutable and an id's
        # path only depends on its ancestors), so the cache survives appends; it is cleared
        # whenever the index is rebuilt or a re-read line replaces an existing id.
        _remember(self._branch_cache, target, path)

    def _cache_raw_path(self, target: str, path: list[Any]) -> None:
        """:meth:`_cache_branch` for a lazy session's paths of skeletons."""
        _remember(self._raw_paths, target, path)

    def get_tree(self) -> list[TreeNode]:
        """Every entry as a tree node (roots in file order, children by timestamp).

        The tree is built once and then kept up to date by this manager's appends, so
        repeated calls are free; treat the nodes as read-only.
        """
        if self._tree is None:
            self._tree = build_tree(self._entries_view(), self._by_id, self._labels, self._label_timestamps)
        return list(self._tree[0])

    @property
    def lazy_bodies(self) -> bool:
        """Whether message bodies are read from the file when first used (``lazy`` at open)."""
        return self._bodies is not None

    def load_bodies(self) -> None:
        """Read every body still in the file into memory: from here on the session is as if
        opened with ``lazy=False`` (one dict per entry, for as long as the session lives).

        For a caller about to read every entry anyway, and that keys caches by entry
        identity (the views do): a lazy session may parse a let-go body again as a new dict."""
        if self._bodies is None:
            return
        old = self._file_entries
        with collector_paused(len(old), keep=True):
            loaded = resolve_all(old)
            now = {id(before): after for before, after in zip(old, loaded) if before is not after}
            self._file_entries = loaded
            by_id = self._by_id
            for key, value in by_id.items():
                if type(value) is LazyEntry:
                    by_id[key] = now[id(value)]
            if self._tree is not None:
                for node in self._tree[1].values():
                    if node._entry.__class__ is LazyEntry:
                        node._entry = now[id(node._entry)]
        self._entries_cache = None
        self._clear_paths()  # cached paths may hold other dicts of the same lines
        self._bodies = None

    def _entries_view(self) -> list[Entry]:
        """The cached entry list itself (callers inside the engine never mutate it)."""
        if self._entries_cache is None:
            self._entries_cache = [e for e in self._file_entries if e.get("type") != "session"]
        return self._entries_cache

    def find_cycles(self) -> set[str]:
        """Entries whose parent chain loops (only possible in hand-edited files)."""
        return find_cycles(self._by_id)

    def build_context_entries(self, leaf_id: Any = ...) -> list[Entry]:
        entries, by_id = self._lookups()
        return build_context_entries(entries, self._leaf_id if leaf_id is ... else leaf_id, by_id)

    def build_session_projection(self, leaf_id: Any = ...) -> SessionProjection:
        """What the model sees at the leaf (or at ``leaf_id``), with each message's source."""
        return self._projection(leaf_id, True)

    def _projection(self, leaf_id: Any, sources: bool) -> SessionProjection:
        """:meth:`build_session_projection`; ``sources=False`` leaves its ``entries`` empty."""
        if leaf_id is ...:
            if self._leaf_id is UNSET:
                # The last line had no id: pi then projects from the last entry.
                entries, by_id = self._lookups()
                return build_session_projection(entries, UNSET, by_id)
            leaf = self.leaf_id
            if self._bodies is not None and leaf:
                # Read back from the leaf: only the kept region's bodies are parsed.
                return project_path(ResolvingPath(self._raw_path(leaf)), sources=sources)
            return project_path(self.get_branch(), sources=sources)
        entries, by_id = self._lookups()
        return build_session_projection(entries, leaf_id, by_id)

    def build_session_context(self, leaf_id: Any = ...) -> SessionContext:
        return self._projection(leaf_id, False).context()

    # ------------------------------------------------------------------ moving the leaf

    def branch(self, branch_from_id: str) -> None:
        """Move the leaf to an existing entry; nothing is written.

        The leaf then stays there while :meth:`refresh` follows the file (``leaf_pinned``)."""
        if branch_from_id not in self._by_id:
            raise EntryNotFound(branch_from_id)
        self._leaf_id = branch_from_id
        self._leaf_pinned = True

    def reset_leaf(self) -> None:
        """Leaf before the first entry: the next append becomes a new root."""
        self._leaf_id = None
        self._leaf_pinned = True

    @property
    def leaf_pinned(self) -> bool:
        """Whether the leaf was moved here (branch, reset, own append) and so stays put when
        :meth:`refresh` reads new lines; otherwise it follows the file's last entry, as pi's.
        Set it to ``False`` to follow the file again (the leaf moves to the last entry)."""
        return self._leaf_pinned

    @leaf_pinned.setter
    def leaf_pinned(self, value: bool) -> None:
        self._leaf_pinned = bool(value)
        if not value:
            self._leaf_id = self._file_leaf()

    def _file_leaf(self) -> Any:
        """pi's leaf for the lines as they are: the last non-header line's id."""
        for entry in reversed(self._file_entries):
            if entry.get("type") == "session":
                continue
            entry_id = entry.get("id")
            return entry_id if type(entry_id) is str else UNSET
        return None

    @property
    def read_only(self) -> bool:
        """Opened with ``read_only=True`` and not made writable: nothing is ever written."""
        return self._read_only

    # ------------------------------------------------------------------ change feed

    @property
    def change_cursor(self) -> ChangeCursor:
        """The position of "now" in the change feed (see :mod:`pi_lab.session.changes`)."""
        return self._changes.cursor(self._leaf_id)

    def changes_since(self, cursor: ChangeCursor) -> Changes:
        """What changed since ``cursor`` was taken: appended entries (file order), whether
        the leaf moved, labels changed, or ``rebuilt`` (reload). O(changes)."""
        return self._changes.since(cursor, self._leaf_id)

    def __repr__(self) -> str:
        where = self._session_file if self._persist else "in memory"
        return f"<SessionManager {self._session_id} {len(self._by_id)} entries, leaf {self._leaf_id!r}, {where}>"


