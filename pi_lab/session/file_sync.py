"""The file side of a SessionManager: reading it in, the second-writer guard, appending, and
following the file as other processes append to it.

:class:`FileSync` is the part of :class:`~pi_lab.session.SessionManager` that talks to the
file and takes in what other processes append (:meth:`~FileSync.add_loaded_entries`); the
manager inherits it (through :class:`~pi_lab.session.appends.EntryAppends`) and keeps the
index and the leaf, which this part reaches only through :class:`FileSyncOwner`. The rules it
keeps (session-format.md §9, and pi_lab's own safety rules):

* the read position is one :class:`~pi_lab.session.tail.FileTail` (``_consumed_bytes``:
  every byte before it is in memory; ``_known_size``; ``_identity``, the file's device and
  inode);
* an append goes out only when the file is exactly as pi_lab last left it; otherwise the
  other writer's complete lines are read first and :class:`~pi_lab.errors.ConcurrentWriteError`
  is raised (or, with ``allow_concurrent_writes``, the entry goes after them);
* an unfinished last line (another writer's: pi_lab writes each line whole) is never written
  after, whatever its age: an append is refused with
  :class:`~pi_lab.session.errors.UnfinishedLineError` while it lasts, a writable open leaves
  it as it is (pi would end it with a newline), and only :meth:`end_unfinished_line` or
  :meth:`make_writable`, called by the user, end it;
* own lines that landed after another writer's unread bytes are remembered (``_own_spans``)
  so that a refresh reads theirs and skips ours, and memory stays in file order;
* a read-only manager never writes until :meth:`make_writable` does what :meth:`write_plan` says.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, overload

from pi_lab.errors import ConcurrentWriteError, ReadOnlySession
from pi_lab.session import paths as _paths
from pi_lab.session._json import dumps_line
from pi_lab.session.bodies import BodyFile
from pi_lab.session.changes import ChangeLog
from pi_lab.session.entries import Entry
from pi_lab.session.errors import UnfinishedLineError
from pi_lab.session.ids import UuidFactory, new_entry_id
from pi_lab.session.migration import CURRENT_VERSION
from pi_lab.session.storage import (
    TAIL_SETTLE_SECONDS,
    InvalidSessionFile,
    LoadResult,
    append_bytes,
    check_regular_file,
    create_exclusive,
    load_entries_from_file,
    open_for_append,
    parse_lines,
    rewrite_file,
)
from pi_lab.session.tail import FileTail
from pi_lab.session.tree import TreeNode, attach_node

__all__ = ["FileSync", "FileSyncOwner"]

_GUARD_ATTEMPTS = 32  # with allow_concurrent_writes: tries to find the file between two lines
_T = TypeVar("_T")


class FileSyncOwner(Protocol):
    """What :class:`FileSync` needs from the session it is part of (SessionManager): the lines
    and the index it reads into, the leaf it moves, the calls that rebuild them, and the
    read position its constructor sets up."""

    _session_file: str | None
    _persist: bool
    _lazy: bool | None
    _bodies: BodyFile | None
    _uuid_factory: UuidFactory | None
    _file_entries: list[Entry]
    _entries_cache: list[Entry] | None
    _by_id: dict[str, Entry]
    _labels: dict[str, str]
    _label_timestamps: dict[str, Any]
    _leaf_id: Any  # an id, None, or UNSET (the last line had no id)
    _leaf_pinned: bool
    _has_conversation: bool
    _tree: tuple[list[TreeNode], dict[str, TreeNode]] | None
    _changes: ChangeLog
    # The file side's own state (the owner's constructor sets it up): the read position, what
    # was read, the guard's setting.
    _file_tail: FileTail
    _own_spans: list[tuple[int, int, Entry]]
    _tail: bytes | None
    _line_count: int
    _flushed: bool
    _pending_rewrite: bool
    _read_only: bool
    allow_concurrent_writes: bool
    skipped_lines: list[int]

    def new_session(self, id: str | None = None, parent_session: str | None = None) -> str | None: ...

    def _adopt(self, file_entries: list[Entry]) -> bool: ...

    def _index_entry(self, entry: Entry) -> None: ...

    def _rebuild_index(self) -> None: ...

    def _clear_paths(self) -> None: ...

    def _file_leaf(self) -> Any: ...


class _TailField(Generic[_T]):
    """An attribute of the owner that is a field of its ``_file_tail``, read and written."""

    __slots__ = ("_field",)

    def __init__(self, field: str) -> None:
        self._field = field

    @overload
    def __get__(self, owner: None, kind: object = None) -> _TailField[_T]: ...

    @overload
    def __get__(self, owner: FileSyncOwner, kind: object = None) -> _T: ...

    def __get__(self, owner: FileSyncOwner | None, kind: object = None) -> _T | _TailField[_T]:
        if owner is None:  # looked up on the class, as a property answers then
            return self
        return getattr(owner._file_tail, self._field)

    def __set__(self, owner: FileSyncOwner, value: _T) -> None:
        setattr(owner._file_tail, self._field, value)


if TYPE_CHECKING:
    _Owner = FileSyncOwner
else:  # the protocol only types the methods below; at run time the owner provides it all
    _Owner = object


class FileSync(_Owner):
    """The file-facing methods of SessionManager (a base class, never used alone)."""

    __slots__ = ()

    # Views of the read position (the FileTail), under the names the rest of the engine uses.
    _consumed_bytes = _TailField[int]("offset")  # every byte before it is in memory
    _known_size = _TailField[int]("size")  # the size when pi_lab last read or wrote the file
    _identity = _TailField["tuple[int, int] | None"]("identity")  # (st_dev, st_ino) then

    def _set_session_file(self, path: str) -> None:
        resolved = _paths.resolve_path(path)
        if not os.path.exists(resolved):
            self.new_session()
            self._session_file = resolved
            return
        # A rewrite (migration, empty-file header) is refused if another process wrote to the
        # file after it was read; it is read again then (its lines must not be lost).
        for attempt in range(3):
            # Never pi's repair on open (a newline after an unfinished last line): the line
            # may be another writer's, still being written. It is shown as pi parses it.
            loaded = load_entries_from_file(resolved, repair=False, lazy=self._lazy)
            try:
                self._take_loaded(resolved, loaded)
                return
            except UnfinishedLineError:
                raise  # (reading again changes nothing while the line stays unfinished)
            except ConcurrentWriteError:
                if attempt == 2:
                    raise

    def _take_loaded(self, resolved: str, loaded: LoadResult) -> None:
        expect = (*loaded.identity, loaded.size) if loaded.identity else None
        if not loaded.entries:
            if loaded.size > 0 or loaded.skipped_lines:
                raise InvalidSessionFile(resolved, loaded.invalid_reason)
            self.new_session()
            self._session_file = resolved
            self._note_write(rewrite_file(resolved, self._file_entries, expect))
            self._flushed = True
            return
        self._session_file = resolved
        self.skipped_lines = loaded.skipped_lines
        self._bodies = loaded.bodies
        unfinished = loaded.tail_start < loaded.size
        if self._adopt_checked(loaded.entries, resolved):
            if unfinished:  # the rewrite would end (or drop) that line
                raise UnfinishedLineError(resolved, loaded.size - loaded.tail_start, at_open=True)
            self._note_write(rewrite_file(resolved, self._file_entries, expect))
        else:
            self._note_read(loaded)
            if unfinished:
                self._note_unfinished(loaded)
        self._flushed = True

    def _note_unfinished(self, loaded: LoadResult) -> None:
        """An unterminated last line read at open: shown as pi parses it, not yet consumed (if
        its writer is still on it, a refresh reads the finished line again). Unparsable, it is
        not counted in ``skipped_lines`` until it is finished or ended."""
        self._consumed_bytes = loaded.tail_start
        if loaded.tail_skipped and self.skipped_lines:
            self.skipped_lines.pop()
        path = self._session_file
        if loaded.tail_parsed and path:  # (always set by the time a file was read)
            with open(path, "rb") as handle:
                handle.seek(loaded.tail_start)
                self._tail = handle.read(loaded.size - loaded.tail_start)

    def _adopt_checked(self, entries: list[Entry], path: str) -> bool:
        """:meth:`_adopt`, with pi's failure on a v1 file that holds a number or string line
        (its migration assigns an id to every line) turned into a clear error."""
        try:
            return self._adopt(entries)
        except TypeError as error:
            raise InvalidSessionFile(path, f"format version 1 with a line that is not an object: {error}") from None

    def _note_read(self, loaded: LoadResult) -> None:
        """Remember how far the file was read (the state the second-writer guard checks)."""
        self._identity = loaded.identity
        self._known_size = loaded.size
        self._consumed_bytes = loaded.consumed_bytes
        self._line_count = loaded.lines
        self._own_spans = []
        self._tail = None

    def _forget_file(self) -> None:
        """Start over for a new session's lines (a new session, a branched one): nothing of
        them read from or written to a file yet."""
        self._flushed = False
        self._file_tail.reset()
        self._line_count = 0
        self._own_spans = []
        self._tail = None
        self._pending_rewrite = False
        self.skipped_lines = []

    def _note_write(self, st: os.stat_result) -> None:
        """Remember the file pi_lab has just written whole."""
        self._identity = (st.st_dev, st.st_ino)
        self._known_size = self._consumed_bytes = st.st_size
        self._line_count = len(self._file_entries)
        self._own_spans = []
        self._tail = None
        self._pending_rewrite = False

    def write_plan(self) -> str:
        """What :meth:`make_writable` will do to which file, as a sentence for the user."""
        where = self._session_file or "memory"
        if not self._read_only:
            return f"Nothing to do: appends already go to {where}"
        steps: list[str] = []
        if self._pending_rewrite:
            steps.append(f"Rewrite {where} in format v{CURRENT_VERSION} (it is v{self._source_version()})")
        elif self._consumed_bytes < self._known_size:
            steps.append(f"End the unfinished last line of {where} with a newline")
        if steps:
            return ", then ".join(steps) + ", then append"
        return f"Append new entries to {where}"

    def _source_version(self) -> str:
        version = getattr(self, "_loaded_version", None)
        if version is None:
            return "1"
        return str(version) if not isinstance(version, str) else repr(version)

    def make_writable(self) -> None:
        """Allow appends on a manager opened read-only, after doing what :meth:`write_plan`
        says: a migrated file is rewritten atomically (refused with ConcurrentWriteError if
        another process wrote to it meanwhile); an unfinished last line that stayed unchanged
        is ended with a newline (pi's repair on open: :meth:`write_plan` says so first)."""
        if not self._read_only:
            return
        path = self._session_file
        if path and self._flushed:
            self._refresh()
            if self._pending_rewrite:
                expect = (*self._identity, self._known_size) if self._identity else None
                self._note_write(rewrite_file(path, self._file_entries, expect))
            elif self._consumed_bytes < self._known_size:
                self._end_stale_line(path, wait=True)
        self._read_only = False
        self._tail = None

    def end_unfinished_line(self) -> bool:
        """End the file's unfinished last line with a newline (pi's repair on open), so that
        appends can go after it; the user's explicit choice when its writer is gone (an
        append is refused with :class:`~pi_lab.session.errors.UnfinishedLineError` while it
        lasts). The line is then read as pi reads it (an entry, or a skipped line).

        Returns ``False`` when there is no unfinished line, or when it changed between the
        look and the newline (its writer is still on it: nothing is written then)."""
        if self._read_only:
            raise ReadOnlySession(self._session_file, "end the unfinished last line (make_writable() does)")
        path = self._session_file
        if not self._persist or not path or not self._flushed:
            return False
        self._refresh()
        if self._consumed_bytes >= self._known_size:
            return False
        return self._end_stale_line(path, wait=False)

    def _end_stale_line(self, path: str, *, wait: bool) -> bool:
        """Append ``\n`` after an unterminated last line that did not change across two
        reads; return whether it did (a growing line is left to its writer)."""
        if wait:
            time.sleep(TAIL_SETTLE_SECONDS)
        fd, st = open_for_append(path)
        try:
            if (st.st_dev, st.st_ino) != self._identity or st.st_size != self._known_size:
                return False
            start, end = append_bytes(fd, b"\n")
        finally:
            os.close(fd)
        if start != self._known_size:
            self._known_size = end  # someone wrote between the check and the newline
            return False
        self._known_size = end
        # The line is complete now: take it in as pi would read it (one already parsed at
        # open, kept in _tail, is then consumed, not read twice).
        self._refresh()
        return True

    def _open_checked(self, entry: Entry) -> int | None:
        """The second-writer guard: an append descriptor, once the file is exactly as pi_lab
        last left it (one fstat when pi_lab's own write is the last thing on disk).

        If another process wrote since, its complete lines are read in first; then
        ConcurrentWriteError is raised, unless ``allow_concurrent_writes`` (the entry then
        goes after them). ``None`` when there is no file to append to yet.
        """
        if self._read_only:
            raise ReadOnlySession(self._session_file, "append")
        if not self._persist or not self._session_file or not self._flushed:
            return None
        path = self._session_file
        for _ in range(_GUARD_ATTEMPTS):
            try:
                fd, st = open_for_append(path)
            except FileNotFoundError:
                raise ConcurrentWriteError(path, "the file was deleted") from None
            same_file = (st.st_dev, st.st_ino) == self._identity
            if same_file and st.st_size == self._known_size and self._consumed_bytes == self._known_size:
                return fd
            os.close(fd)
            if not same_file:
                raise ConcurrentWriteError(path, "the file was replaced by another one")
            if st.st_size < self._known_size:
                raise ConcurrentWriteError(path, f"it shrank by {self._known_size - st.st_size} bytes")
            own = sum(end - start for start, end, _ in self._own_spans)
            foreign = st.st_size - self._consumed_bytes - own
            # Nothing new since the last read, only an unfinished last line seen then: no
            # other write to report, just that line to wait for (below).
            only_partial = st.st_size == self._known_size and not self._own_spans
            keep = self._leaf_id
            new = self._refresh()
            if self.allow_concurrent_writes or (only_partial and not new):
                # This append moves the leaf itself: the lines read just now do not.
                self._leaf_id = keep
                if entry.get("id") in self._by_id:  # an id the other writer used meanwhile
                    entry["id"] = new_entry_id(self._by_id, self._uuid_factory)
            elif self._consumed_bytes == self._known_size or new:
                raise ConcurrentWriteError(path, f"it grew by {foreign} bytes" if foreign else "it changed", new)
            if self._consumed_bytes < self._known_size:
                # An unfinished last line: appending now would join it. It is usually a write
                # in progress, finished a moment later; whatever its age it is never ended
                # here (its writer may be slow, not dead): only end_unfinished_line() does.
                time.sleep(TAIL_SETTLE_SECONDS)
                later = self._refresh()
                if later and not self.allow_concurrent_writes:
                    raise ConcurrentWriteError(path, "another writer finished a line", later)
                if self.allow_concurrent_writes:
                    self._leaf_id = keep
                if self._consumed_bytes < self._known_size:
                    raise UnfinishedLineError(path, self._known_size - self._consumed_bytes, [*new, *later])
        raise ConcurrentWriteError(path, f"it kept changing ({_GUARD_ATTEMPTS} attempts to append)")

    def _persist_entry(self, entry: Entry, fd: int | None = None) -> None:
        if not self._persist or not self._session_file:
            return
        if not self._flushed:
            if not self._has_conversation:
                return  # nothing on disk until the first user or assistant message
            self._note_write(create_exclusive(self._session_file, self._file_entries))
            self._flushed = True
            return
        line = dumps_line(entry)
        if fd is None:  # not reached through _append (no guard): open plainly
            fd, _ = open_for_append(self._session_file)
            try:
                start, end = append_bytes(fd, line)
            finally:
                os.close(fd)
        else:
            start, end = append_bytes(fd, line)
        if start == self._known_size == self._consumed_bytes:
            self._known_size = self._consumed_bytes = end
            self._line_count += 1
        else:
            # Another process wrote between the check and this write: its bytes are unread;
            # remember where this line is so a refresh reads theirs and skips ours.
            self._own_spans.append((start, end, entry))
            self._known_size = max(self._known_size, end)

    def refresh(self) -> list[Entry]:
        """Pick up complete lines another process appended since the last read.

        Every byte not yet read is read, including lines another process wrote before one
        of pi_lab's own appends (pi_lab's own lines are skipped: they are in memory). Leaf
        rule: if the leaf was moved in pi_lab (branch, reset_leaf, branch_with_summary, an
        own append; see ``leaf_pinned``) it stays; otherwise it follows the file (the last
        line), as a fresh open would. Returns the new entries (headers excluded). Raises
        ValueError if the file shrank or was replaced, since an append-only session can only
        grow. Nothing is written.
        """
        return self._refresh()

    def add_loaded_entries(self, entries: list[Entry]) -> list[Entry]:
        """Take in entries another process appended to the file, as :meth:`refresh` does.

        For a reader that reads the bytes itself (the read-only viewer follows a file with an
        in-memory manager). Nothing is written; the leaf follows the last entry unless it was
        moved in pi_lab (``leaf_pinned``). Returns the entries that are not headers.
        """
        added: list[Entry] = []
        leaf = self._leaf_id
        for entry in entries:
            self._file_entries.append(entry)
            if entry.get("type") == "session":
                continue
            entry_id = entry.get("id")
            duplicate = type(entry_id) is str and entry_id in self._by_id
            if duplicate:
                self._clear_paths()  # a duplicate id replaces an indexed entry
            self._index_entry(entry)
            added.append(entry)
            self._grow_tree(entry, duplicate)
            self._changes.appended(entry)
        if added:
            self._entries_cache = None
            if self._leaf_pinned:
                self._leaf_id = leaf
        return added

    def _grow_tree(self, entry: Entry, duplicate: bool) -> None:
        """Keep a built tree current for one entry read from the file, or drop it when the
        entry could reshape it (a duplicate id, or the parent an earlier orphan waited for)."""
        if self._tree is None:
            return
        roots, nodes = self._tree
        entry_id = entry.get("id")
        waiting = any(r._entry.get("parentId") == entry_id for r in roots) if entry_id else False
        if duplicate or waiting or type(entry_id) is not str:
            self._tree = None
            return
        attach_node(roots, nodes, TreeNode(entry))
        if entry.get("type") == "label":
            self._show_label(nodes, entry.get("targetId"))

    def _show_label(self, nodes: dict[str, TreeNode], target_id: Any) -> None:
        """Give a built tree's node the label the index now holds for it (a label entry was
        taken in); nothing for a target that is not a string id or not in the tree."""
        if not isinstance(target_id, str) or (node := nodes.get(target_id)) is None:
            return
        node.label = self._labels.get(target_id)
        node.label_timestamp = self._label_timestamps.get(target_id)

    def _refresh(self) -> list[Entry]:
        if not self._persist or not self._session_file or not self._flushed:
            return []
        path = self._session_file
        check_regular_file(path)
        chunk = self._file_tail.read(path)  # raises FileReplaced (a ValueError) if shrunk/replaced
        if not chunk.data:
            return []
        data = chunk.data
        base = chunk.start
        size = chunk.size
        pos = 0
        loaded: list[Entry] = []
        if self._tail is not None:
            # The unterminated line shown at open: finished as it was, it is already in memory.
            tail = self._tail
            if data.startswith(tail + b"\n"):
                pos = len(tail) + 1
                self._line_count += 1
                self._tail = None
            elif data == tail:
                self._known_size = size
                return []
            else:
                self._tail = None
                self._drop_last_line_entry()
        # Pieces in file order: lists of the other writer's entries, and own entries (already
        # in memory) where they landed between them.
        pieces: list[Any] = []
        own = [span[2] for span in self._own_spans]
        for start, end, entry in self._own_spans:
            segment = data[pos:start - base]
            part = parse_lines(segment, self._line_count + 1)
            pieces.append(part.entries)
            pieces.append(entry)
            self.skipped_lines.extend(part.skipped_lines)
            self._line_count += segment.count(b"\n") + 1
            pos = end - base
        self._own_spans = []
        rest = data[pos:] if pos else data
        part = parse_lines(rest, self._line_count + 1, complete_only=True)
        self._finish_read(part, rest, base, pos, size)
        if own and any(pieces[0::2]):
            return self._take_interleaved(own, pieces, part.entries)
        for piece in pieces[0::2]:
            loaded.extend(piece)
        loaded.extend(part.entries)
        return self.add_loaded_entries(loaded)

    def _finish_read(self, part: LoadResult, rest: bytes, base: int, pos: int, size: int) -> None:
        self.skipped_lines.extend(part.skipped_lines)
        self._line_count += part.lines  # complete_only: each line walked ended with \n
        self._consumed_bytes = base + pos + part.consumed_bytes
        self._known_size = size

    def _take_interleaved(self, own: list[Entry], pieces: list[Any], after: list[Entry]) -> list[Entry]:
        """Another writer's lines landed before own lines on disk (it wrote between the
        guard's check and the write): put memory in file order, so that the last line, label
        order and a fresh open all agree with the file."""
        count = len(own)
        tail = self._file_entries[-count:]
        if len(tail) != count or any(a is not b for a, b in zip(tail, own)):
            # Own entries are not the last in memory (cannot happen through the append path):
            # fall back to reading the other lines after them.
            return self.add_loaded_entries([e for piece in pieces[0::2] for e in piece] + after)
        del self._file_entries[-count:]
        self._entries_cache = None
        leaf = self._leaf_id
        added: list[Entry] = []
        for index, piece in enumerate(pieces):
            if index % 2 == 0:
                added.extend(self.add_loaded_entries(piece))
            else:
                self._file_entries.append(piece)
        added.extend(self.add_loaded_entries(after))
        self._entries_cache = None
        self._tree = None
        self._clear_paths()
        if any(e.get("type") == "label" for e in self._file_entries[-(len(added) + count):]):
            self._rebuild_index()  # label order decides which label wins
        self._leaf_id = leaf if self._leaf_pinned else self._file_leaf()
        self._changes.rebuilt()  # own entries already reported moved in file order: reload
        return added

    def _drop_last_line_entry(self) -> None:
        """Forget the entry parsed from an unterminated line that then changed."""
        if self._file_entries:
            self._file_entries.pop()
            leaf, pinned = self._leaf_id, self._leaf_pinned
            self._rebuild_index()
            if pinned and (leaf is None or leaf in self._by_id):
                self._leaf_id = leaf
