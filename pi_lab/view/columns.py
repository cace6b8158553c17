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
    tokens  u32  pi's estimate of the entry's own messages, or ``TOKENS_UNKNOWN`` (0xFFFFFFFF)
                 for a row whose estimate is not made yet: the estimate travels with the
                 row's text (the ``rows`` reply's ``tokens``), so a structure costs no
                 estimate of the rows nobody looks at. Real estimates are capped at
                 0xFFFFFFFE; deltas always carry real ones.
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pi_lab.session._json import NonObjectLine, dumps, loads_object

__all__ = ["MAGIC", "ROW_COLUMNS", "TOKENS_UNKNOWN", "TOKENS_MAX", "TokenColumn", "GutterTable", "RowColumns", "encode_structure", "decode_structure", "row_values", "pack_blob"]

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
# The tokens column's "not estimated yet" value (row.ts TOKENS_UNKNOWN), and the largest
# estimate the column holds (an estimate above it is written as it: nothing real gets near).
TOKENS_UNKNOWN = 0xFFFFFFFF
TOKENS_MAX = 0xFFFFFFFE
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


class TokenColumn:
    """The tokens column of a layout, each row's estimate made when it is first read.

    ``values`` holds the estimates made so far and ``TOKENS_UNKNOWN`` elsewhere; ``facts``
    holds each row's :class:`~pi_lab.session.flatten.EntryFacts` (its ``tokens`` is -1 until
    someone estimates the entry), ``estimate`` makes and keeps an estimate from a facts
    object. Reading an item (index, slice, iteration, comparison) gives the real estimate, so
    every Python reader sees the eager column; only :meth:`wire` — what the structure blob
    carries — leaves the sentinel where no estimate is made yet. Rows inserted or replaced
    by a delta come with their estimate.
    """

    __slots__ = ("_values", "_facts", "_estimate")

    def __init__(self, values: list[int], facts: list[Any], estimate: Callable[[Any], int]) -> None:
        if len(values) != len(facts):
            raise ValueError("one facts object per row")
        self._values = values
        self._facts = facts
        self._estimate = estimate

    def __len__(self) -> int:
        return len(self._values)

    def _resolve(self, row: int) -> int:
        value = self._values[row]
        if value == TOKENS_UNKNOWN:
            value = min(max(int(self._estimate(self._facts[row])), 0), TOKENS_MAX)
            self._values[row] = value
        return value

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            return [self._resolve(row) for row in range(*key.indices(len(self._values)))]
        size = len(self._values)
        row = key + size if key < 0 else key
        if not 0 <= row < size:
            raise IndexError("token column index out of range")
        return self._resolve(row)

    def __setitem__(self, row: int, value: int) -> None:
        self._values[row] = min(max(int(value), 0), TOKENS_MAX)
        self._facts[row] = None  # a real value: never estimated again

    def __delitem__(self, row: int) -> None:
        del self._values[row]
        del self._facts[row]

    def insert(self, row: int, value: int) -> None:
        self._values.insert(row, min(max(int(value), 0), TOKENS_MAX))
        self._facts.insert(row, None)

    def append(self, value: int) -> None:
        self.insert(len(self._values), value)

    def __iter__(self) -> Iterator[int]:
        for row in range(len(self._values)):
            yield self._resolve(row)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (TokenColumn, list, tuple, array)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  (mutable, like a list)

    def __repr__(self) -> str:
        return f"TokenColumn({self._values!r})"

    def known(self, row: int) -> bool:
        """Whether row ``row``'s estimate is made (here or by another reader of its facts)."""
        if self._values[row] != TOKENS_UNKNOWN:
            return True
        facts = self._facts[row]
        return facts is not None and facts.tokens >= 0

    def wire(self) -> list[int]:
        """The column as the structure carries it: the estimates made so far (here, or by
        another reader of the same facts, e.g. the gauge) and ``TOKENS_UNKNOWN`` elsewhere."""
        unknown, cap = TOKENS_UNKNOWN, TOKENS_MAX
        out = self._values
        if unknown not in out:
            return out
        out = list(out)
        facts = self._facts
        for row, value in enumerate(out):
            if value == unknown:
                made = facts[row].tokens
                if made >= 0:
                    out[row] = self._values[row] = made if made < cap else cap
        return out


@dataclass
class RowColumns:
    """The row columns as Python lists, one item per visible row."""

    entry: list[int] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    indent: list[int] = field(default_factory=list)
    flags: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    tokens: list[int] | TokenColumn = field(default_factory=list)
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
    return [entry, parent, min(indent, 0xFFFF), flags, kind, min(max(int(tokens), 0), TOKENS_MAX), gutter]


def _pad4(data: bytes, fill: bytes = b"\0") -> bytes:
    rest = (-len(data)) % 4
    return data + fill * rest


def encode_structure(columns: RowColumns, gutters: GutterTable, header: dict[str, Any]) -> bytes:
    """One blob holding the header and every column (see the module docstring)."""
    gutter_dtype = "u16" if len(gutters) <= 0xFFFF else "u32"
    specs = [(name, gutter_dtype if name == "gutter" else dtype, _wire(getattr(columns, name))) for name, dtype in ROW_COLUMNS]
    specs += [("gutter_parent", "i32", gutters.parent), ("gutter_position", "u16", gutters.position),
              ("gutter_show", "u8", gutters.show)]
    blocks = []
    for name, dtype, values in specs:
        blocks.append((name, dtype, len(values), _pad4(_array(dtype, values).tobytes())))
    head = dict(header, row_count=len(columns), gutter_count=len(gutters))
    return pack_blob(MAGIC, head, blocks)


def _wire(values: Any) -> Sequence[int]:
    return values.wire() if isinstance(values, TokenColumn) else values


def pack_blob(magic: bytes, header: dict[str, Any], blocks: list[tuple[str, str, int, bytes]], *,
              ensure_ascii: bool = True) -> bytes:
    """``magic``, the JSON header's length (u32), the header padded to 4 bytes with spaces, then
    each block ``(name, dtype, count, padded bytes)``; the header lists every block's offset
    (its ``columns`` member).

    The header's own length decides where the columns start, so the offsets are iterated to
    a fixed point. Each member is written once, as the writer writes a one-key object (an
    object's JSON is its members' texts joined), and only the short ``columns`` member again:
    the writer copies a whole value to normalise its floats (a digit before a dot anywhere,
    as in "step 1.", is enough), which for the static export's header of a million entries
    cost about 1 GB for a moment each time round. (The static export packs its columns with this.)
    """
    # None marks where ``columns`` goes: its place in ``header`` if there, else last. Views
    # without the braces, not copies (the ids and texts of a million entries are 100 MB).
    members: list[memoryview | bytes | None] = [
        None if key == "columns" else memoryview(_header_json({key: value}, ensure_ascii))[1:-1]
        for key, value in header.items()]
    if "columns" not in header:
        members.append(None)
    fixed = sum(len(m) for m in members if m is not None) + len(members) + 1  # braces and commas
    described: list[dict[str, Any]] = []
    while True:
        tail = b'"columns":' + dumps(described)
        length = fixed + len(tail)
        padded = length + (-length) % 4
        offset = 8 + padded
        new = []
        for name, dtype, count, data in blocks:
            new.append({"name": name, "dtype": dtype, "offset": offset, "count": count})
            offset += len(data)
        if new == described:
            break
        described = new
    pieces: list[memoryview | bytes] = [magic, struct.pack("<I", padded), b"{"]
    for k, member in enumerate(members):
        if k:
            pieces.append(b",")
        pieces.append(tail if member is None else member)
    pieces += (b"}", b" " * (padded - length))
    pieces += (data for *_, data in blocks)
    return b"".join(pieces)


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
