"""Entry bodies that stay in the file until they are asked for (issue 11).

Most of a session file is message bodies, and the tree, the index, the leaf and the labels
need none of them. When a large current-format file is opened, each message line is still
parsed in full (pi's loader decides from the parse which lines to skip), but only its
skeleton is kept: type, id, parentId and timestamp, the message's role, and where the line
lies in the file. The body is parsed again from the file when something reads it.

Rules that keep this invisible:

* One accessor: :meth:`LazyEntry.resolve` (and :func:`resolve_all` for a path).
  Everything the manager hands out is a plain dict; a skeleton never leaves the engine.
* The line is read back through a descriptor opened with the file, so a rename or delete
  of the path changes nothing. If the bytes at the recorded place no longer parse to an
  entry with the same skeleton (the file was rewritten in place), :class:`SessionFileChanged`
  says so instead of handing out another entry's body.
* Parsed bodies are kept on their skeleton (so two reads give the same dict) up to a budget
  of line bytes; past it the oldest are let go (their dicts live on wherever a caller holds
  them, and a later read parses the line again: an equal dict, not the same object).
* Only lines parsed straight from valid UTF-8 by orjson are made lazy; a line that needed
  the slower fallbacks (invalid UTF-8, lone surrogates, deep nesting) stays a dict, so the
  read-back parse is the same parse.
* The reader's upkeep of the path is linear in the file, whatever its lines hold: lines
  parsed apart are on the path like the others, and searching or walking for an older
  branch is paid from a budget that grows with each line.
"""

from __future__ import annotations

import os
import weakref
from array import array
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from pi_lab.errors import PiLabError
from pi_lab.session.entries import Entry

__all__ = [
    "LAZY_MIN_FILE_BYTES",
    "LAZY_MIN_LINE_BYTES",
    "BodyFile",
    "LazyEntry",
    "ResolvingIndex",
    "ResolvingPath",
    "SessionFileChanged",
    "bodies_for",
    "resolve",
    "resolve_all",
]

LAZY_MIN_FILE_BYTES = 8 << 20
"""Files from this size are opened with lazy bodies by default (``lazy=None``): below it the
whole session costs a few tens of MB and reading bodies back would only add work."""

LAZY_MIN_LINE_BYTES = 512
"""A message line shorter than this stays a dict (its skeleton would save little)."""

BODY_BUDGET_BYTES = 64 << 20
"""Line bytes of parsed bodies kept on their skeletons (about twice that in dicts)."""

_SKELETON_KEYS = frozenset(("type", "id", "parentId", "timestamp"))

# The reader's path upkeep is kept linear in the file: each line read adds this much to a
# budget of steps for walking up an older branch to the path (two writers taking turns on
# two long branches would otherwise walk a whole branch per line); a line whose walk would
# cost more than is left starts the path afresh.
_PATH_STEPS_PER_LINE = 4
_PATH_STEPS_AT_START = 1 << 12


class SessionFileChanged(PiLabError, ValueError):
    """The file no longer holds, where it did, the line an entry was read from."""

    def __init__(self, path: str, offset: int, entry_id: str):
        self.path, self.offset, self.entry_id = path, offset, entry_id
        super().__init__(
            f"{path} changed under pi_lab: the line of entry {entry_id} (byte {offset}) is not there any more. "
            "A session file only grows; another program rewrote it. Open it again to read it as it is now.")


class LazyEntry:
    """The skeleton of one message line; :meth:`resolve` gives the whole entry (a dict).

    ``get`` and ``[]`` answer the skeleton's keys without parsing, and any other key from
    the parsed entry, so the engine's tree and index code reads skeletons and dicts alike.
    """

    __slots__ = ("source", "offset", "length", "skeleton", "role", "body", "__weakref__")

    def __init__(self, source: BodyFile, offset: int, length: int, skeleton: dict[str, Any], role: Any):
        self.source = source
        self.offset = offset
        self.length = length
        self.skeleton = skeleton
        self.role = role
        self.body: Entry | None = None

    def resolve(self) -> Entry:
        body = self.body
        return body if body is not None else self.source.resolve(self)

    def get(self, key: str, default: Any = None) -> Any:
        skeleton = self.skeleton
        if key in _SKELETON_KEYS:
            return skeleton.get(key, default)
        return self.resolve().get(key, default)

    def __getitem__(self, key: str) -> Any:
        if key in _SKELETON_KEYS:
            return self.skeleton[key]
        return self.resolve()[key]

    def __contains__(self, key: object) -> bool:
        if key in _SKELETON_KEYS:
            return key in self.skeleton
        return key in self.resolve()

    def __repr__(self) -> str:
        state = "parsed" if self.body is not None else "in the file"
        return f"<LazyEntry {self.skeleton.get('id')!r} {self.length} bytes at {self.offset}, {state}>"


def resolve(entry: Any) -> Any:
    """The dict of an entry the engine holds (a skeleton is parsed; anything else as it is)."""
    return entry.resolve() if entry.__class__ is LazyEntry else entry


def resolve_all(entries: Sequence[Any]) -> list[Any]:
    """:func:`resolve` of each; lines not parsed yet are read in runs of adjacent lines."""
    if LazyEntry not in map(type, entries):
        # The usual path of a lazy session (the reader keeps its bodies): a copy at C speed
        # instead of a class check per entry in Python (48,000 entries: ~10 ms).
        return list(entries)
    lazy = [e for e in entries if e.__class__ is LazyEntry and e.body is None]
    source = lazy[0].source if lazy else None
    if source is None or any(e.source is not source for e in lazy):  # (one file per session: not seen)
        return [e.resolve() if e.__class__ is LazyEntry else e for e in entries]
    parsed = dict(zip(map(id, lazy), source.parse_many(lazy)))
    return [(e.body or parsed[id(e)]) if e.__class__ is LazyEntry else e for e in entries]


class BodyFile:
    """The open file one read's skeletons are read back from, and their parsed bodies.

    While the file is read (:meth:`keep`), the path from the root to the latest line keeps
    its bodies: when a line branches off, the lines of the abandoned branch become
    skeletons. So the session's current branch, the first thing every caller reads, is
    parsed once, and the rest of the tree's bodies stay in the file.
    """

    def __init__(self, path: str, fd: int, *, min_line: int = LAZY_MIN_LINE_BYTES, budget: int | None = None):
        self.path = path
        self.min_line = min_line
        self.budget = BODY_BUDGET_BYTES if budget is None else budget
        self._fd: int | None = fd  # this object's own descriptor of the file that was read
        # Weak references: a skeleton holds its file, and the file must not hold its skeletons
        # (a cycle would keep a closed session's entries, frozen by the loader, forever).
        self._kept: deque[tuple[weakref.ref[LazyEntry], int]] = deque()
        self._kept_bytes = 0
        self.enabled = True  # until the first line turns out not to be a current-format header
        self._seen_header = False
        self.count = 0  # skeletons made
        # Only while loading: the loader's list, and the path from the root to the latest
        # line, one (place in the list, id, file offset, length) per line, root first.
        self._entries: list[Any] = []
        self._stack: list[tuple[int, str, int, int]] = []
        self._top_id: Any = None  # the id of the latest line (the top of the path)
        self._where: dict[str, int] | None = None  # each id's place, once a line needs it
        self._where_upto = 0  # the lines _where covers
        self._steps = _PATH_STEPS_AT_START  # the path upkeep still allowed (_PATH_STEPS_PER_LINE)
        self._depths = array("i")  # each place's depth when it was put on the path (-1: never)
        # After the load: the root-to-last-line path as the reader followed it (the lines'
        # entries and skeletons), for the manager's branch of the leaf (index.last_line_path).
        self.last_path: list[Any] | None = None

    # ------------------------------------------------------------------ while loading

    def begin(self, entries: list[Any]) -> None:
        """Follow the loader's list (the lines are appended to it in file order)."""
        self._entries = entries

    def keep(self, entry: Any, offset: int, length: int) -> Any:
        """What the loader keeps for one parsed line (the entry itself); the lines of a
        branch this line leaves become skeletons in the loader's list.

        ``entry`` is a dict. A line the loader parsed another way (invalid UTF-8, a lone
        surrogate, deep nesting) comes with ``length`` 0: it joins the path (its children
        continue it: without it each of them cost a walk up the whole branch) but stays a
        dict, so a read-back parse is always orjson's.
        Which lines keep their bodies decides only memory and speed, never a result: a
        skeleton reads its own line back, whatever the tree around it looks like."""
        if not self.enabled:
            return entry
        if not self._seen_header:
            self._seen_header = True
            # Only a file pi 1.6.0 writes today: older formats are migrated in memory, which
            # rewrites ids and fields a read-back parse would not see.
            self.enabled = entry.get("type") == "session" and entry.get("version") == 3
            return entry
        entry_id = entry.get("id")
        if entry_id.__class__ is not str:
            self.enabled = False  # an odd id: the rest of the file stays as dicts
            return entry
        index = len(self._entries)
        parent = entry.get("parentId")
        self._steps += _PATH_STEPS_PER_LINE
        if parent != self._top_id or parent is None:
            self._branch_off(parent)  # not a child of the line before it
        depths, stack = self._depths, self._stack  # (_push, inlined: once per line)
        if len(depths) <= index:
            self._grow_depths(index)
        depths[index] = len(stack)
        stack.append((index, entry_id, offset, length))
        self._top_id = entry_id
        return entry

    def _branch_off(self, parent: Any) -> None:
        """Make the path end at ``parent`` before its new child is added, letting go of the
        bodies of the lines that leave it."""
        stack = self._stack
        if parent.__class__ is str:
            depth = self._near_top(parent)
            if depth is None:
                at = self._where_now().get(parent)
                if at is not None:
                    depth = self._climb(at)
            if depth is not None:
                while len(stack) > depth + 1:  # back up to the branch point (the usual case)
                    self._let_body_go(stack.pop())
                return
        # A new root, or a branch the budget could not follow (the path starts afresh here:
        # its older lines keep what they hold; the manager walks the leaf's branch then).
        for item in stack:
            self._let_body_go(item)
        stack.clear()

    def _push(self, item: tuple[int, str, int, int]) -> None:
        if len(self._depths) <= item[0]:
            self._grow_depths(item[0])
        self._depths[item[0]] = len(self._stack)
        self._stack.append(item)

    def _grow_depths(self, place: int) -> None:
        """Room for ``place`` in the depths (doubling: places of lines the reader never saw
        stay -1)."""
        depths = self._depths
        depths.extend(array("i", [-1]) * max(place + 1 - len(depths), len(depths), 1024))

    def _on_path(self, place: int) -> int | None:
        """The depth of the line at ``place`` if it is on the path (one lookup)."""
        depths = self._depths
        depth = depths[place] if place < len(depths) else -1
        stack = self._stack
        return depth if 0 <= depth < len(stack) and stack[depth][0] == place else None

    def _near_top(self, entry_id: str) -> int | None:
        """Where ``entry_id`` is among the last lines of the path (branch points usually are),
        searched at C speed without building the id lookup."""
        stack = self._stack
        low = max(0, len(stack) - 64)
        ids = [item[1] for item in stack[low:]]
        ids.reverse()
        try:
            return len(stack) - 1 - ids.index(entry_id)
        except ValueError:
            return None

    def _climb(self, place: int) -> int | None:
        """Put the line at ``place`` on the path: walk up from it to the first line on the
        path (a line continuing an older branch; lines parsed apart included), back the path
        up to there and add the lines walked. Returns the new depth of ``place``, or ``None``
        when the walk would cost more steps than the budget has left."""
        entries, where = self._entries, self._where or {}
        walked: list[tuple[int, str, int, int]] = []
        current: int | None = place
        below = -1  # the depth on the path the walk reached (-1: it reached a root)
        while current is not None:
            depth = self._on_path(current)
            if depth is not None:
                below = depth
                break
            if len(walked) >= self._steps:  # (a parentId cycle ends here too)
                self._steps = 0
                return None
            line = entries[current]
            # Lines off the path are skeletons or dicts already (length 0: nothing to let go).
            walked.append((current, line.get("id"), 0, 0))
            parent = line.get("parentId")
            current = where.get(parent) if parent.__class__ is str else None
        self._steps -= len(walked)
        stack = self._stack
        while len(stack) > below + 1:
            self._let_body_go(stack.pop())
        for item in reversed(walked):
            self._push(item)
        return len(stack) - 1

    def _where_now(self) -> dict[str, int]:
        """Each id's place in the loader's list, brought up to date (built at the first need)."""
        if self._where is None:
            self._where = {}
        where, entries = self._where, self._entries
        for place in range(self._where_upto, len(entries)):
            line = entries[place]
            line_id = line.get("id") if line.__class__ is dict or line.__class__ is LazyEntry else None
            if type(line_id) is str:
                where[line_id] = place
        self._where_upto = len(entries)
        return where

    def _let_body_go(self, item: tuple[int, str, int, int]) -> None:
        """Make a line that left the path a skeleton (if it is a message worth one)."""
        place, entry_id, offset, length = item
        if length < self.min_line or not length:
            return
        entry = self._entries[place]
        if entry.__class__ is not dict or entry.get("type") != "message":
            return
        message = entry.get("message")
        if message.__class__ is not dict:
            return
        skeleton: dict[str, Any] = {"type": "message", "id": entry_id}
        if "parentId" in entry:
            parent = entry["parentId"]
            if parent is not None and parent.__class__ is not str:
                return
            skeleton["parentId"] = parent
        if "timestamp" in entry:
            skeleton["timestamp"] = entry["timestamp"]
        self.count += 1
        self._entries[place] = LazyEntry(self, offset, length, skeleton, message.get("role"))

    def finish(self) -> BodyFile | None:
        """This file, or ``None`` (and closed) when no line was made lazy."""
        if self.enabled:
            entries = self._entries
            self.last_path = [entries[item[0]] for item in self._stack]
        self._entries, self._stack, self._where, self._depths = [], [], None, array("i")
        if self.count:
            return self
        self.close()
        return None

    # ------------------------------------------------------------------ reading back

    def resolve(self, stub: LazyEntry) -> Entry:
        entry = self._parse(stub, self._read(stub.offset, stub.length))
        self._hold(stub, entry)
        return entry

    def parse_many(self, stubs: Sequence[LazyEntry]) -> list[Entry]:
        """The bodies of ``stubs`` in order, each run of adjacent lines read in one call."""
        out: list[Entry] = []
        i = 0
        count = len(stubs)
        while i < count:
            start = stubs[i].offset
            end = start + stubs[i].length
            j = i + 1
            # The next line of the file (one newline between) joins the run, up to 4 MiB.
            while j < count and stubs[j].offset == end + 1 and end - start < (4 << 20):
                end = stubs[j].offset + stubs[j].length
                j += 1
            data = memoryview(self._read(start, end - start))
            for stub in stubs[i:j]:
                at = stub.offset - start
                entry = self._parse(stub, data[at:at + stub.length])
                self._hold(stub, entry)
                out.append(entry)
            i = j
        return out

    def _read(self, offset: int, length: int) -> bytes:
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.path}: the session's file was closed")
        data = os.pread(fd, length, offset)
        while len(data) < length:  # pread may return less for a large read
            more = os.pread(fd, length - len(data), offset + len(data))
            if not more:
                break
            data += more
        return data

    def _parse(self, stub: LazyEntry, raw: Any) -> Entry:
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            entry = None
        skeleton = stub.skeleton
        if (not isinstance(entry, dict) or entry.get("id") != skeleton["id"] or entry.get("type") != "message"
                or entry.get("parentId") != skeleton.get("parentId")):
            raise SessionFileChanged(self.path, stub.offset, skeleton["id"])
        return entry

    def _hold(self, stub: LazyEntry, entry: Entry) -> None:
        stub.body = entry
        self._kept.append((weakref.ref(stub), stub.length))
        self._kept_bytes += stub.length
        if self._kept_bytes > self.budget:
            kept = self._kept
            while self._kept_bytes > self.budget // 2 and kept:
                ref, length = kept.popleft()
                self._kept_bytes -= length
                old = ref()
                if old is not None:  # (None: its session was dropped, the body with it)
                    old.body = None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def bodies_for(handle: Any, path: str, lazy: bool | None) -> BodyFile | None:
    """The :class:`BodyFile` that follows a lazy load through ``handle`` (it makes the
    skeletons as the lines are read), or ``None`` for an eager load.

    ``lazy``: ``True`` makes every message line lazy, ``False`` none, ``None`` decides by
    size (:data:`LAZY_MIN_FILE_BYTES`, :data:`LAZY_MIN_LINE_BYTES`)."""
    min_line = 0  # lazy=True: every message line
    if lazy is None:
        lazy = os.fstat(handle.fileno()).st_size >= LAZY_MIN_FILE_BYTES
        min_line = LAZY_MIN_LINE_BYTES
    if not lazy or not hasattr(os, "pread"):
        return None
    fd = os.dup(handle.fileno())  # the same open file: a rename or delete of the path changes nothing
    return BodyFile(str(path), fd, min_line=min_line)


class ResolvingIndex(Mapping):
    """The manager's id index as callers see it: every value a dict."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Mapping[str, Any]):
        self._raw = raw

    def get(self, key: Any, default: Any = None) -> Any:
        found = self._raw.get(key, default)
        return found.resolve() if found.__class__ is LazyEntry else found

    def __getitem__(self, key: Any) -> Any:
        return resolve(self._raw[key])

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class ResolvingPath(Sequence):
    """A path of skeletons and dicts read as a list of dicts, parsing only what is read
    (the projection reads back from the leaf to the latest compaction, not the whole path)."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Sequence[Any]):
        self._raw = raw

    def __getitem__(self, index: Any) -> Any:
        if index.__class__ is slice:
            return resolve_all(self._raw[index])
        return resolve(self._raw[index])

    def __len__(self) -> int:
        return len(self._raw)

    def __iter__(self) -> Iterator[Any]:
        return iter(resolve_all(self._raw))
