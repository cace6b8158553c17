"""The row structure on the wire: little-endian typed columns in one bytes object.

Layout of a structure blob::

    b"PIR1" | uint32 header length | header JSON (UTF-8, space-padded to 4 bytes) | columns

The header names every column with its dtype, byte offset and item count, so the reader
never guesses. Row columns (one item per visible row):

    entry   u32  position of the entry in the file (0 = first entry after the header)
    parent  i32  row index of the visible parent, -1 for a visible root
    indent  u16  display indent in levels
    flags   u16  bit set, see kinds.FLAG_BITS
    kind    u8   kinds.KIND_NAMES
    tokens  u32  pi's estimate of the entry's own messages
    gutter  u16 or u32  id of the row's gutter list

Gutter lists are shared by whole subtrees and each one is its parent list plus one
``(position, show)`` pair, so they travel as a prefix tree: ``gutter_parent`` (i32, -1 for
the empty list 0), ``gutter_position`` (u16) and ``gutter_show`` (u8). 825 distinct lists
describe the 83,000 rows of the 100,000-entry benchmark session.
"""

from __future__ import annotations

import re
import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pi_lab.session._json import NonObjectLine, dumps, loads_object

__all__ = ["MAGIC", "ROW_COLUMNS", "GutterTable", "RowColumns", "encode_structure", "decode_structure", "row_values", "pack_blob"]

MAGIC = b"PIR1"
ROW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("entry", "u32"),
    ("parent", "i32"),
    ("indent", "u16"),
    ("flags", "u16"),
    ("kind", "u8"),
    ("tokens", "u32"),
    ("gutter", "u16"),  # widened to u32 when there are more than 65,535 gutter lists
)
_TYPECODES = {"u32": "I", "i32": "i", "u16": "H", "u8": "B"}
_MAX = {"u32": 0xFFFFFFFF, "u16": 0xFFFF, "u8": 0xFF}
_LITTLE = sys.byteorder == "little"


def _array(dtype: str, values: Sequence[int]) -> array:
    arr = array(_TYPECODES[dtype], values)
    if not _LITTLE:
        arr.byteswap()
    return arr


class GutterTable:
    """Distinct gutter lists, each stored as (parent list id, position, show)."""

    __slots__ = ("_ids", "parent", "position", "show")

    def __init__(self) -> None:
        self._ids: dict[tuple[tuple[int, bool], ...], int] = {(): 0}
        self.parent: list[int] = [-1]
        self.position: list[int] = [0]
        self.show: list[int] = [0]

    def __len__(self) -> int:
        return len(self.parent)

    def id_of(self, gutters: tuple[tuple[int, bool], ...]) -> int:
        found = self._ids.get(gutters)
        if found is not None:
            return found
        # Register the missing prefixes, shortest first (no recursion: lists can be deep).
        start = len(gutters) - 1
        while start > 0 and gutters[:start] not in self._ids:
            start -= 1
        parent_id = self._ids[gutters[:start]]
        for end in range(start + 1, len(gutters) + 1):
            position, show = gutters[end - 1]
            new_id = len(self.parent)
            self.parent.append(parent_id)
            self.position.append(int(position))
            self.show.append(1 if show else 0)
            self._ids[gutters[:end]] = new_id
            parent_id = new_id
        return parent_id

    def entries_since(self, start: int) -> list[list[int]]:
        """Lists added since ``start`` as ``[parent, position, show]`` triples (for deltas)."""
        return [[self.parent[i], self.position[i], self.show[i]] for i in range(start, len(self.parent))]


@dataclass
class RowColumns:
    """The row columns as Python lists, one item per visible row."""

    entry: list[int] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    indent: list[int] = field(default_factory=list)
    flags: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    gutter: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.entry)

    def insert(self, row: int, values: Sequence[int]) -> None:
        """Insert one row; every parent index at or after ``row`` moves down by one."""
        self.parent[row:] = [p + 1 if p >= row else p for p in self.parent[row:]]
        for name, value in zip(_NAMES, values):
            getattr(self, name).insert(row, value)

    def remove(self, row: int) -> None:
        """Remove one row that has no visible children; later parent indexes move up."""
        for name in _NAMES:
            del getattr(self, name)[row]
        self.parent[row:] = [p - 1 if p > row else p for p in self.parent[row:]]

    def replace(self, row: int, values: Sequence[int]) -> None:
        for name, value in zip(_NAMES, values):
            getattr(self, name)[row] = value

    def values(self, row: int) -> list[int]:
        return [getattr(self, name)[row] for name in _NAMES]


_NAMES = tuple(name for name, _ in ROW_COLUMNS)


def row_values(entry: int, parent: int, indent: int, flags: int, kind: int, tokens: int, gutter: int) -> list[int]:
    return [entry, parent, min(indent, 0xFFFF), flags, kind, min(max(int(tokens), 0), 0xFFFFFFFF), gutter]


def _pad4(data: bytes, fill: bytes = b"\0") -> bytes:
    rest = (-len(data)) % 4
    return data + fill * rest


def encode_structure(columns: RowColumns, gutters: GutterTable, header: dict[str, Any]) -> bytes:
    """One blob holding the header and every column (see the module docstring)."""
    gutter_dtype = "u16" if len(gutters) <= 0xFFFF else "u32"
    specs = [(name, gutter_dtype if name == "gutter" else dtype, getattr(columns, name)) for name, dtype in ROW_COLUMNS]
    specs += [("gutter_parent", "i32", gutters.parent), ("gutter_position", "u16", gutters.position),
              ("gutter_show", "u8", gutters.show)]
    blocks = []
    for name, dtype, values in specs:
        blocks.append((name, dtype, len(values), _pad4(_array(dtype, values).tobytes())))
    head = dict(header, row_count=len(columns), gutter_count=len(gutters))
    return pack_blob(MAGIC, head, blocks)


def pack_blob(magic: bytes, header: dict[str, Any], blocks: list[tuple[str, str, int, bytes]], *,
              ensure_ascii: bool = True) -> bytes:
    """``magic``, the JSON header's length (u32), the header padded to 4 bytes with spaces, then
    each block ``(name, dtype, count, padded bytes)``; the header lists every block's offset.

    The header's own length decides where the columns start, so the offsets are iterated to
    a fixed point. (The static export packs its columns with this too.)
    """
    described: list[dict[str, Any]] = []
    while True:
        head_bytes = _pad4(_header_json(dict(header, columns=described), ensure_ascii), b" ")
        offset = 8 + len(head_bytes)
        new = []
        for name, dtype, count, data in blocks:
            new.append({"name": name, "dtype": dtype, "offset": offset, "count": count})
            offset += len(data)
        if new == described:
            break
        described = new
    return b"".join([magic, struct.pack("<I", len(head_bytes)), head_bytes, *(data for *_, data in blocks)])


_NON_ASCII = re.compile("[^\x00-\x7f]")


def _ascii_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # astral: a UTF-16 surrogate pair, as JSON escapes it
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _header_json(header: dict[str, Any], ensure_ascii: bool) -> bytes:
    """The header as JSON that the browser's ``JSON.parse(TextDecoder().decode(...))`` reads.

    The engine's writer, not the standard library's: the header holds values from the file
    (ids, texts, the file name) that may nest thousands of levels deep (json.dumps recurses),
    hold lone surrogates or a file name that is not UTF-8 (written as ``\\udXXX`` escapes, as
    JSON.stringify writes them, where ``encode("utf-8")`` would raise), or NaN (``null``).
    """
    data = dumps(header)
    if ensure_ascii:
        # Outside strings JSON is ASCII, so escaping every other character keeps it valid.
        data = _NON_ASCII.sub(_ascii_escape, data.decode("utf-8")).encode("ascii")
    return data


def decode_structure(blob: bytes) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """Header and columns of a blob (used by tests and the benchmark; the browser has its own)."""
    if blob[:4] != MAGIC:
        raise ValueError("not a pi_lab row structure")
    (length,) = struct.unpack_from("<I", blob, 4)
    header = loads_object(blob[8 : 8 + length])  # any depth, lone surrogate escapes included
    if not isinstance(header, dict) or isinstance(header, NonObjectLine):
        raise ValueError("the row structure's header is not a JSON object")
    out: dict[str, list[int]] = {}
    for spec in header["columns"]:
        arr = array(_TYPECODES[spec["dtype"]])
        size = arr.itemsize * spec["count"]
        arr.frombytes(blob[spec["offset"] : spec["offset"] + size])
        if not _LITTLE:
            arr.byteswap()
        out[spec["name"]] = arr.tolist()
    return header, out
