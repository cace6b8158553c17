"""A pi file's entries read as skeletons, their bodies read back one at a time (the lean parse).

:func:`pi_lab.corpus.reading.read_pi_entries` parses every line of a file whose bytes are all in
memory: on a million-entry session that is the file (319 MB) plus every parsed entry (about
1.3 KB each) at once, before the walk has made a single row. Here the file is read a block at
a time, and a message line of one of the roles the extractor slims (``user``, ``assistant``,
``toolResult``) is kept as a skeleton: ``{"type": "message", "id": ..., "parentId": ...}`` (only
the keys its line has) and where the line lies. :class:`BodyReader` puts the rest of the line
back into that same dict as the walk enters it (the walk's caches are keyed by the entry's
identity), and the extractor slims it again once its rows are made.

The result equals ``read_pi_entries`` of the whole bytes (same entries, same skipped lines, same
partial flag) once every skeleton is restored: the lines are split and parsed by the rules of
:func:`pi_lab.session.storage.parse_lines` (``complete_only``) and
:func:`pi_lab.corpus.reading.read_complete_lines`. It is used only for a file whose first line
is a pi header of the current version (:func:`plain_pi_header`): no migration rewrites its
entries, so a line read back is the entry it was. Any other file goes the whole-bytes way.
"""

from __future__ import annotations

import gc
from array import array
from typing import Any, BinaryIO

import orjson

from pi_lab.corpus.fields import _ms
from pi_lab.corpus.reading import FileUnreadable, plain_pi_header
from pi_lab.session._json import loads_object
from pi_lab.session.storage import decode_and_parse

__all__ = ["BodyReader", "FileChanged", "LeanFile", "Stamps", "read_lean"]

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)

# The message roles whose entries the extractor slims after its walk entered them (extract._slim).
LEAN_ROLES = frozenset(("user", "assistant", "toolResult"))
# The file is read this much at a time (a line longer than a block is read whole, as one block).
_BLOCK = 4 << 20
# Bodies are read back through a window of the file this large (a walk in file order reads
# each byte once, one read per window).
_WINDOW = 4 << 20


class FileChanged(FileUnreadable):
    """A skeleton's line no longer holds its entry: the file was rewritten while it was read
    (the extractor reads it again, whole)."""


_NO_TIME = -(1 << 63)  # (a Stamps cell: no timestamp)
_OTHER_TIME = _NO_TIME + 1  # (a Stamps cell: a value past 2**62 either way, kept in ``other``)


class Stamps:
    """The entries' epoch-ms timestamps (int or None) in an array of 64-bit integers: no int
    object per entry, allocated among the skeletons, whose memory would then stay in use
    after the skeletons are let go. ``stamps[i]`` and ``stamps[a:b]`` (a list) read like
    the list of them."""

    __slots__ = ("values", "other")

    def __init__(self) -> None:
        self.values = array("q")
        self.other: dict[int, int] = {}

    def append(self, value: int | None) -> None:
        if value is None:
            self.values.append(_NO_TIME)
        elif -(1 << 62) < value < 1 << 62:
            self.values.append(value)
        else:  # (not a date JavaScript can hold; kept exactly all the same)
            self.other[len(self.values)] = value
            self.values.append(_OTHER_TIME)

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            if not self.other:
                return [None if t == _NO_TIME else t for t in self.values[key]]
            return [self[k] for k in range(*key.indices(len(self.values)))]
        return self._cell(key, self.values[key])

    def _cell(self, i: int, value: int) -> int | None:
        if value == _NO_TIME:
            return None
        if value == _OTHER_TIME:
            return self.other[i]
        return value


class LeanFile:
    """What :func:`read_lean` read: ``read_pi_entries``'s five values, the entries' epoch-ms
    timestamps, and the reader of the skeletons' bodies (None when no line became one)."""

    __slots__ = ("header", "entries", "version", "skipped", "partial", "ts", "bodies")

    def __init__(self, header: Entry, entries: list[Entry], version: int, skipped: int, partial: bool,
                 ts: Stamps, bodies: BodyReader | None):
        self.header, self.entries, self.version, self.skipped, self.partial = header, entries, version, skipped, partial
        self.ts, self.bodies = ts, bodies


class BodyReader:
    """Reads skeletons' lines back from the open file: ``offsets[i]`` and ``lengths[i]`` of
    entry ``i`` (length 0: the entry is whole, never a skeleton); ``pending[i]`` is 1 while
    skeleton ``i`` has not been restored."""

    def __init__(self, handle: BinaryIO, path: str, offsets: array, lengths: array):
        self.handle: BinaryIO | None = handle
        self.path = path
        self.offsets, self.lengths = offsets, lengths
        self.pending = bytearray(1 if length else 0 for length in lengths)
        self._start = 0
        self._window = b""

    def read(self, i: int, entry: Entry) -> dict[str, Any]:
        """Skeleton ``entry`` (entry ``i``) whole, as its line reads: a new dict. Raises
        :class:`FileChanged` when the line no longer holds that entry (the file was
        rewritten while it was read)."""
        offset, length = self.offsets[i], self.lengths[i]
        at = offset - self._start
        if at < 0 or at + length > len(self._window):
            self._fill(offset, length)
            at = 0
        try:
            full: Any = orjson.loads(memoryview(self._window)[at:at + length])
        except orjson.JSONDecodeError:
            full = None
        if not isinstance(full, dict) or full.get("type") != "message" or full.get("id") != entry.get("id"):
            raise FileChanged(f"the file changed while it was read (line at byte {offset})")
        return full

    def restore(self, i: int, entry: Entry) -> None:
        """Put the rest of entry ``i``'s line back into its skeleton ``entry``.

        The skeleton's id and parentId stay (equal values): the extractor's lists hold the
        same string objects, and the parentId may be its parent's id object."""
        full = self.read(i, entry)
        kept = [(key, entry[key]) for key in ("id", "parentId") if key in entry]
        entry.update(full)
        entry.update(kept)
        self.pending[i] = 0

    def restore_all(self, entries: list[Entry]) -> None:
        for i, entry in enumerate(entries):
            if self.pending[i]:
                self.restore(i, entry)

    def _fill(self, offset: int, length: int) -> None:
        handle = self.handle
        if handle is None:
            raise ValueError(f"{self.path}: closed")
        handle.seek(offset)
        self._window = handle.read(max(length, _WINDOW))
        self._start = offset
        if len(self._window) < length:
            raise FileChanged(f"the file changed while it was read (line at byte {offset})")

    def close(self) -> None:
        handle, self.handle = self.handle, None
        self._window = b""
        if handle is not None:
            handle.close()


def read_lean(path: str, first: bytes, handle: BinaryIO) -> LeanFile | None:
    """The lean read of the file open as ``handle``, positioned after ``first`` (the bytes read
    so far), or None when its first line is not a current pi header (then read it whole).
    ``handle`` is the returned :class:`BodyReader`'s, else closed here."""
    header = plain_pi_header(first) if first.find(b"\n") > 0 else None
    if header is None:
        return None
    entries: list[Entry] = []
    ts = Stamps()
    offsets, lengths = array("q"), array("q")
    skipped: list[int] = []
    number = 1
    base = 0  # file offset of data[0]
    data = first
    paused = gc.isenabled()
    if paused:
        gc.disable()  # (a million small containers: the collector would only rescan them)
    try:
        while True:
            end = data.rfind(b"\n") + 1
            if end == 0:  # no complete line: read on, or it is the unfinished tail
                more = handle.read(_BLOCK)
                if not more:
                    break
                data += more
                continue
            number = _parse_block(data, end, base, number, entries, ts, offsets, lengths, skipped)
            base += end
            rest = data[end:]
            data = b""  # (the block goes before the next is read)
            more = handle.read(_BLOCK)
            data = rest + more if rest else more
            if not more:
                break
        partial = False
        if data.strip():  # a last line without its newline: read_complete_lines' rule
            entry = loads_object(data)
            if entry is None:
                partial = True
            elif entry.get("type") != "session":
                entries.append(entry)
                ts.append(_ms(entry.get("timestamp")))
                offsets.append(0)
                lengths.append(0)
    finally:
        if paused:
            gc.enable()
    bodies = None
    if any(lengths):
        bodies = BodyReader(handle, path, offsets, lengths)
    else:
        handle.close()
    return LeanFile(header, entries, header["version"], len(skipped), partial, ts, bodies)


def _parse_block(data: bytes, stop: int, base: int, number: int, entries: list[Entry], ts: Stamps,
                 offsets: array, lengths: array, skipped: list[int]) -> int:
    """Parse the lines of ``data[:stop]`` (each ends with its newline) as
    :func:`pi_lab.session.storage.parse_lines` does, appending each entry (or its skeleton)
    but the ``session`` lines; returns the next line number."""
    find = data.find
    loads = orjson.loads
    view = memoryview(data)  # lines are parsed from slices of it without copying them
    add, add_ts, add_offset, add_length = entries.append, ts.append, offsets.append, lengths.append
    start = 0
    while start < stop:
        end = find(b"\n", start)
        entry = None
        length = 0
        if data[start] == 0x7B:  # "{": nearly every line is one object written by pi
            try:
                entry = loads(view[start:end])
            except orjson.JSONDecodeError:
                entry = None
            else:
                length = end - start
        if entry is None and start < end:
            raw = data[start:end]
            if raw.strip():
                entry = decode_and_parse(raw)  # (kept whole: its line does not parse the fast way)
                if entry is None:
                    skipped.append(number)
        number += 1
        start = end + 1
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type")  # (decode_and_parse gives a dict, or a NonObjectLine: a dict)
        if kind == "session":
            continue  # (read_pi_entries leaves every header line out of the entries)
        add_ts(_ms(entry.get("timestamp")))
        if length and kind == "message":
            message = entry.get("message")
            role = message.get("role") if isinstance(message, dict) else None
            if role.__class__ is str and role in LEAN_ROLES:
                skeleton = {"type": "message"}
                if "id" in entry:
                    skeleton["id"] = entry["id"]
                if "parentId" in entry:
                    skeleton["parentId"] = entry["parentId"]
                add(skeleton)
                add_offset(base + start - length - 1)
                add_length(length)
                continue
        add(entry)
        add_offset(0)
        add_length(0)
    return number
