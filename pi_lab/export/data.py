"""The data an export embeds: per-entry columns for the tree, and chunks for everything else.

The leaf is fixed in an export, so pi's flattened tree (display order, active branch first)
is computed once here; the page lays rows out from it for any filter, search and folds with
a port of ``navigation._visible_rows`` (src_frontend/export/layout.ts). What travels:

* ``main``: ``PIX1`` | uint32 header length | header JSON | little-endian columns, one item
  per flattened entry: ``parent`` (i32, flat index), ``category`` (u8, the filter category),
  ``kind`` (u8), ``tokens`` (u32), ``entry`` (u32, position in the file), ``flags`` (u16,
  the flags that do not depend on the layout) and ``facts`` (u8, views.FACT_BITS). The header
  holds the strings: ids, labels, label times, display texts and search texts, plus the
  session facts, the gauge, the leaf's timeline, what the context views need (``views``) and the notes.
* ``chunks``: for each run of ``CHUNK`` flattened entries, a JSON list of
  ``{"f": full entry detail, "p": how the preview detail differs, "e": the entry when the page
  can rebuild the detail's raw JSON from it, "c": context record, "v": the entry's share of
  the context views (views.py)}``, with long strings shared (records.py ``encode_chunk``).

A record leaves to the page what the page already has: the detail fields copied from the
entry (``x``), the kind, tokens and children that the columns give (``k``), the entry's own and
parent id (``{"$i": 0|1}``), a context row's own entry (``{"$o": 1}``), a whole text's length
(``"$c"``); data.ts puts each back exactly. Each part is gzip-compressed and written 7 bits per
character by ``html.py`` (``pack7``; a notebook snapshot uses base85, ``pack``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import orjson

from pi_lab.export.context import iter_context_records
from pi_lab.export.records import (
    PARENT,
    SELF,
    encode_chunk,
    mark_cuts,
    own_rows,
    printable_entry,
    short_patch,
)
from pi_lab.export.views import entry_facts, fact_bits, shared_texts, views_header
from pi_lab.session._json import dumps
from pi_lab.session.display import display_text_with, search_text
from pi_lab.session.flatten import string_positions
from pi_lab.session.protocol import ReadableSession
from pi_lab.view._common import str_or_none
from pi_lab.view.branches import entry_stats
from pi_lab.view.columns import TOKENS_MAX, pack_blob
from pi_lab.view.compare_requests import cut_summary, with_children
from pi_lab.view.detail import RAW_LIMIT, TEXT_LIMIT
from pi_lab.view.gauge import recorded_context_window
from pi_lab.view.header import session_header
from pi_lab.view.kinds import FLAG_BITS, KIND_NAMES, entry_kind
from pi_lab.view.payload import SessionView, ViewSettings, entry_payload
from pi_lab.view.rows import entry_flags

__all__ = ["CHUNK", "MAGIC", "ExportChunks", "export_data", "export_parts"]

CHUNK = 1024
# A notebook snapshot stops at its size limit chunk by chunk: smaller chunks fill it closer.
SNAPSHOT_CHUNK = 256
# Detail fields entry_detail copies from the entry as they are (the same objects): when the
# page has the entry (``e``), they travel once, in it, and the record's ``x`` lists which of
# them to copy back (bit k for COPIED[k]; data.ts restores them).
COPIED = (("id", ("id",)), ("type", ("type",)), ("parent_id", ("parentId",)), ("timestamp", ("timestamp",)),
          ("role", ("message", "role")), ("stop_reason", ("message", "stopReason")),
          ("error_message", ("message", "errorMessage")), ("model", ("message", "model")),
          ("provider", ("message", "provider")), ("usage", ("message", "usage")), ("api", ("message", "api")))
_NO_CUT = min(TEXT_LIMIT, RAW_LIMIT)
MAGIC = b"PIX1"
_COLUMNS = (("parent", "i", "i32"), ("category", "B", "u8"), ("kind", "B", "u8"), ("tokens", "I", "u32"),
            ("entry", "I", "u32"), ("flags", "H", "u16"), ("facts", "B", "u8"))


def _pack(header: dict[str, Any], columns: dict[str, Sequence[int]]) -> bytes:
    """The main part: ``header`` and the little-endian ``columns`` (view.columns.pack_blob,
    with the header's text as UTF-8)."""
    blocks = []
    for name, code, dtype in _COLUMNS:
        arr = array(code, columns[name])
        if sys.byteorder != "little":
            arr.byteswap()
        data = arr.tobytes()
        blocks.append((name, dtype, len(columns[name]), data + b"\0" * ((-len(data)) % 4)))
    return pack_blob(MAGIC, header, blocks, ensure_ascii=False)


# Record bits ``k``: the detail's kind, its tokens and its children are what the columns say
# (the kind column's name, the tokens column, the flattened children in flat order).
K_KIND, K_TOKENS, K_CHILDREN = 1, 2, 4


class _IndexedChildren:
    """The session manager, with ``get_children`` answered from one index built here.

    The manager's ``get_children`` scans every entry (as pi's does), and the detail of each
    entry lists its children: an export asked it once per entry, O(n²), which was most of
    the time of exporting a 10k session. The index lists the same entries in the same order
    (the manager's id lookup: first appearance of an id, its last entry), as linked lists in
    arrays over file positions (``positions``: each string id's, RowState.entry_pos); a
    list per parent in a dict held 0.14 KB an entry for the whole export."""

    def __init__(self, sm: Any, positions: Mapping[str, int] | None = None):
        self._sm = sm
        entries = self._entries = sm.entries
        ids = [entry.get("id") for entry in entries]
        positions = self._positions = string_positions(ids) if positions is None else positions
        count = len(entries)
        self._first = array("l", [-1]) * count  # by the parent's position: its first child's
        self._next = array("l", [-1]) * count  # by a child's position: its next sibling's
        last = array("l", [-1]) * count
        self._other: dict[Any, list[int]] = {}  # parents no string id names (null, missing, odd)
        # Only a file with a repeated id needs the set of ids seen (its first appearance counts).
        seen: set[str] | None = None if len(positions) == sum(isinstance(x, str) for x in ids) else set()
        for at, entry_id in enumerate(ids):
            if not isinstance(entry_id, str):
                continue
            if seen is not None:
                if entry_id in seen:
                    continue
                seen.add(entry_id)
            parent = sm.get_entry(entry_id).get("parentId")
            slot = positions.get(parent) if isinstance(parent, str) else None
            if slot is None:
                try:
                    self._other.setdefault(parent, []).append(at)
                except TypeError:  # an unhashable parentId is nobody's id
                    pass
            elif last[slot] < 0:
                self._first[slot] = last[slot] = at
            else:
                self._next[last[slot]] = at
                last[slot] = at

    def get_children(self, parent_id: Any) -> list[Any]:
        slot = self._positions.get(parent_id) if isinstance(parent_id, str) else None
        if slot is None:
            try:
                places: list[int] = self._other.get(parent_id, [])
            except TypeError:
                return []
        else:
            places = []
            at = self._first[slot]
            while at >= 0:
                places.append(at)
                at = self._next[at]
        return [self._sm.get_entry(self._entries[at].get("id")) for at in places]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sm, name)


class _Unheld:
    """The session, as an object nothing can reference weakly (no ``__weakref__`` slot)."""

    __slots__ = ("_sm",)

    def __init__(self, sm: Any):
        self._sm = sm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sm, name)


def _unheld(sm: ReadableSession) -> ReadableSession:
    """``sm`` as a :class:`_Unheld`, typed as what it is: it answers every attribute from ``sm``
    (``__getattr__``), which pyright cannot see of a proxy."""
    return cast(ReadableSession, _Unheld(sm))


@dataclasses.dataclass(frozen=True)
class _Settled:
    """What the timeline request reads of a view (``ViewOfSession``): the session and its settings."""

    sm: ReadableSession
    settings: ViewSettings


def _timeline(sm: ReadableSession, settings: ViewSettings) -> dict[str, Any] | None:
    """The context timeline at the export's leaf (the page answers ``timeline`` with it), when
    this pi_lab's view has that request.

    Asked before the rows are laid out: its walk (about 0.5 KB per entry for a moment) is then
    let go before anything else is built, and the rows take its place instead of adding to it."""
    from pi_lab.view.payload import READ_OPS, RequestError

    handler = READ_OPS.get("timeline")
    if handler is None:
        return None
    try:
        # Through a session the view's per-session timeline cache cannot hold (it keys
        # sessions weakly): the cached walk of a million-entry branch (about 0.85 KB per
        # entry) would live as long as the session, to the end of the export, which asks once.
        answer = handler(_Settled(_unheld(sm), settings), {})
    except RequestError:
        return None
    # ``serial`` names the kernel's walk for a later ``since`` request; it counts walks in this
    # process, so it would make the same session export to different bytes (the second snapshot
    # of a kernel, a test run). A page without a kernel never asks ``since`` (null: no walk).
    if isinstance(answer, dict) and "serial" in answer:
        answer = {**answer, "serial": None}
    return answer


_JSON_LEAVES = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """A copy of ``value`` with everything JSON has no form for written as its ``str`` (what
    the page was given before), so the writer below never meets an unknown type. Iterative."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, holder, key = stack.pop()
        if isinstance(item, dict):
            out: Any = {}
            for k, v in item.items():
                name = k if isinstance(k, str) else str(k)
                out[name] = None  # keeps the key order; filled in when popped
                stack.append((v, out, name))
        elif isinstance(item, (list, tuple)):
            out = [None] * len(item)
            stack.extend((v, out, k) for k, v in enumerate(item))
        elif isinstance(item, _JSON_LEAVES):
            out = item
        else:
            out = str(item)
        holder[key] = out
    return root[0]


def _dumps(value: Any) -> bytes:
    """The part as JSON the page's JSON.parse reads back (the standard library's json, used
    before, recursed, failed to encode a lone surrogate to UTF-8, and wrote NaN, which
    JSON.parse rejects).

    orjson first: the page only parses the text, so a float spelt ``1.0`` instead of
    JSON.stringify's ``1`` is the same number there, and NaN is null as in JSON.stringify.
    What orjson refuses (nesting past 255 levels, a lone surrogate, an integer past 64 bits,
    a type JSON does not know) goes to the engine's writer: no depth limit, lone surrogates as
    ``\\udXXX`` escapes, which JSON.parse reads back as the same string."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        pass
    try:
        return dumps(value)
    except TypeError:  # a value of a type JSON does not know
        return dumps(_plain(value))


class ExportChunks(Sequence[bytes]):
    """The chunks of an export, made as they are taken.

    Iterated once (as ``html.render_html`` does, compressing each chunk as it comes), no chunk
    is kept: the JSON of a million entries, about ten times the page's size, never sits in
    memory at once. Anything else (an index, a slice, ``len``, ``==``) makes the list first and
    answers from it, as the plain list this used to be."""

    __hash__ = None  # type: ignore[assignment]  (a mutable sequence's equality)

    def __init__(self, chunks: Iterator[bytes], length: int):
        self._stream: Iterator[bytes] | None = chunks
        self._list: list[bytes] | None = None
        self._length = length  # known before any chunk is made (list() asks it first)

    def _take(self) -> Iterator[bytes] | None:
        stream, self._stream = self._stream, None
        return stream

    def _items(self) -> list[bytes]:
        if self._list is None:
            stream = self._take()
            if stream is None:
                raise RuntimeError("the export's chunks were streamed already; call export_data again")
            self._list = list(stream)
        return self._list

    def __iter__(self) -> Iterator[bytes]:
        if self._list is not None:
            return iter(self._list)
        stream = self._take()
        if stream is None:
            raise RuntimeError("the export's chunks were streamed already; call export_data again")
        return stream

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: Any) -> Any:
        return self._items()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ExportChunks):
            other = other._items()
        return self._items() == other if isinstance(other, list) else NotImplemented

    def __repr__(self) -> str:
        return f"ExportChunks({'streaming' if self._list is None else len(self._list)})"


def export_data(sm: Any, *, settings: ViewSettings | None = None,
                notes: dict[str, Any] | None = None) -> tuple[bytes, ExportChunks]:
    """``(main, chunks)`` for the session at its current leaf (see the module docstring), the
    chunks made as taken (:class:`ExportChunks`); ``notes``: the header's notes payload or None."""
    main, chunks, count = _parts(sm, settings, CHUNK, notes)
    return main, ExportChunks(chunks, -(-count // CHUNK))


def export_parts(sm: Any, *, settings: ViewSettings | None = None, chunk: int = CHUNK,
                 notes: dict[str, Any] | None = None) -> tuple[bytes, Iterator[bytes]]:
    """``(main, chunks)`` with the chunks made one by one as they are taken: a notebook
    snapshot (pi_lab/widget/snapshot.py) stops at its size limit."""
    main, chunks, _count = _parts(sm, settings, chunk, notes)
    return main, chunks


def _parts(sm: Any, settings: ViewSettings | None, chunk: int,
           notes: dict[str, Any] | None = None) -> tuple[bytes, Iterator[bytes], int]:
    """export_parts, and the number of flattened entries."""
    if settings is None:
        window = recorded_context_window(sm)
        settings = ViewSettings(context_window=window) if window else ViewSettings()
    # Held as the JSON the header writes of it (about 0.15 KB an entry of the leaf's branch as
    # Python lists and ints, 0.05 as text) until the header is packed.
    timeline = _written(_timeline(sm, settings))
    view = SessionView.open(sm, settings, lay_out=False)  # (its own columns are made below)
    rows = view.rows
    _drop_projection(rows)
    flat = rows.flat
    home = rows.home
    count = len(flat.entries)
    # Typed arrays, not lists: no int object per cell (a million entries' parents and file
    # positions are a million distinct ints each).
    columns: dict[str, Any] = {name: array(code) for name, code, _ in _COLUMNS}
    text_search = _JsonList()
    # Asked through a session the per-manager cache cannot hold: the ids of a million parents
    # (about 50 MB) would live to the end of the export, which reads them in this loop only.
    parents_named = with_children(_unheld(sm))
    for i, entry in enumerate(flat.entries):
        entry_id = flat.ids[i]
        columns["parent"].append(flat.parents[i])
        columns["category"].append(flat._categories[i])
        columns["kind"].append(entry_kind(entry))
        # Capped below the widget's "not estimated yet" value, which the shared row list shows blank.
        columns["tokens"].append(min(rows._tokens(entry), TOKENS_MAX))
        columns["entry"].append(rows.entry_pos.get(entry_id, 0) if isinstance(entry_id, str) else 0)
        columns["flags"].append(entry_flags(rows.marks, entry, entry_id, label=flat.labels[i],
                                            on_active_path=flat.on_active_path[i]))
        # Neither text is kept (nor cached in the flat tree): a chunk makes its rows' display
        # texts again, and a million of them held to the end took about 75 MB.
        text_search.add(display_text_with(entry, flat.tool_call_of(i), home), search_text(entry, flat.labels[i]))
        # (made again for the entry's chunk: a million of them kept until then took 250 MB)
        columns["facts"].append(fact_bits(entry_stats(entry), isinstance(entry_id, str) and entry_id in parents_named))
    del parents_named  # (a set of every parent's id: let go before the header is packed, the peak)
    # The one session header of the widget, the server and the export; a shared page names the
    # file only, not where it lay on the exporter's disk, and it never follows the file.
    info = session_header(sm, file=os.path.basename(sm.session_file) if sm.session_file else None,
                          following=False, read_only=True)
    shared = shared_texts(flat.entries)
    header = {
        "kinds": list(KIND_NAMES),
        "flags": list(FLAG_BITS),
        "count": count,
        "chunk": chunk,
        "copied": [name for name, _ in COPIED],
        "leaf_id": sm.leaf_id,
        "entry_count": rows._entry_count,
        "session": info,
        "gauge": view.gauge,
        "settings": {"context_window": settings.context_window, "reserve_tokens": settings.reserve_tokens,
                     "keep_recent_tokens": settings.keep_recent_tokens},
        "ids": flat.ids,
        "labels": flat.labels,
        "label_times": flat.label_timestamps,
        # Each row's display text beside its search text: they share most words, and gzip
        # finds the repeats only within its window (data.ts splits them again).
        "text_search": text_search.written(),
        "timeline": timeline,
        "views": views_header(_summaries(sm, flat), shared),
        "notes": notes,
    }
    main = _pack(header, columns)
    del header, text_search, timeline  # (let go before the children's index is built: the peak)
    return main, _chunks(sm, dataclasses.replace(view, sm=_IndexedChildren(sm, rows.entry_pos)), flat, chunk,
                         columns["kind"], columns["tokens"], home, shared), count


def _written(value: Any) -> Any:
    """``value`` as the JSON text the header's writer makes of it (``pack_blob`` writes each
    member with the engine's writer, which writes a Fragment as it stands; its JSON of an
    object is its members' texts joined, so the page gets the same bytes)."""
    return orjson.Fragment(dumps(value))


class _JsonList:
    """A list of strings kept as its JSON text, written a block of items at a time: the search
    texts of a million rows as strings in a list held about 0.1 KB an entry until the header
    was packed. The engine's writer writes a list as its items' texts joined by commas."""

    _BLOCK = 8192

    def __init__(self) -> None:
        self._done: list[bytes] = []
        self._items: list[str] = []

    def add(self, *items: str) -> None:
        self._items.extend(items)
        if len(self._items) >= self._BLOCK:
            self._flush()

    def _flush(self) -> None:
        if self._items:
            self._done.append(dumps(self._items)[1:-1])
            self._items = []

    def written(self) -> Any:
        """The whole list as a Fragment (:func:`_written` of the list); the blocks are let go."""
        self._flush()
        done, self._done = self._done, []
        return orjson.Fragment(b"[" + b",".join(done) + b"]")


def _drop_projection(rows: Any) -> None:
    """Let the leaf's projection go (about 0.1 KB an entry of the branch: 200k linear entries,
    peak RSS -17 MB): it served the gauge, made when the view opened, and nothing an export
    asks later reads it (None means "stale", as after a live append)."""
    rows.projection = None


def _summaries(sm: Any, flat: Any) -> list[list[Any]]:
    """The session's branch summaries in file order (compare_branches reads them all), each
    ``[flat index, id, fromId, parentId]``; one the tree does not hold (a later entry took its
    id) also carries its text as the pane shows it."""
    # (a map of the summaries alone: one of every entry held 0.1 KB an entry for a moment)
    flat_of = {id(entry): i for i, entry in enumerate(flat.entries) if entry.get("type") == "branch_summary"}
    out: list[list[Any]] = []
    for entry in sm.entries:
        if entry.get("type") != "branch_summary":
            continue
        at = flat_of.get(id(entry), -1)
        row = [at, str_or_none(entry.get("id")), str_or_none(entry.get("fromId")), str_or_none(entry.get("parentId"))]
        if at < 0:
            summary = entry.get("summary")
            row.append(list(cut_summary(summary if isinstance(summary, str) else "")))
        out.append(row)
    return out


def _drop_copied(full: dict[str, Any], entry: Any) -> int:
    """Remove from ``full`` the COPIED fields that are the entry's own values; their bits."""
    bits = 0
    for k, (name, path) in enumerate(COPIED):
        if name not in full:
            continue
        value: Any = entry
        for key in path:
            value = value.get(key, _ABSENT) if isinstance(value, dict) else _ABSENT
            if value is _ABSENT:
                break
        if value is not _ABSENT and full[name] is value:
            del full[name]
            bits |= 1 << k
    return bits


_ABSENT = object()


def _chunks(sm: Any, view: Any, flat: Any, size: int, kinds: Sequence[int], tokens: Sequence[int],
            home: str, shared: dict[str, int]) -> Iterator[bytes]:
    count = len(flat.entries)
    # Per flat entry, whether it travels whole (its record's ``e``): 0 not known yet, 1 no,
    # 2 yes. A byte each: the answers of a million entries in a megabyte.
    whole = bytearray(count)
    # The printable copy made by embedded(i) for the record being built, taken by the loop.
    printed: dict[int, Any] = {}

    def embedded(i: int) -> bool:
        """Whether flat entry i travels whole as its record's ``e`` (the test below)."""
        found = whole[i]
        if not found:
            entry_id = flat.ids[i]
            copy = None
            if isinstance(entry_id, str) and sm.get_entry(entry_id) is flat.entries[i]:
                copy = printed[i] = printable_entry(flat.entries[i])
            found = whole[i] = 2 if copy is not None else 1
        return found == 2

    contexts = iter_context_records(flat.entries, flat.parents, embedded, shared)
    # Each entry's children in flat order, as first child and next sibling (no list per entry).
    first_kid = array("l", [-1]) * count
    next_kid = array("l", [-1]) * count
    for j in range(count - 1, -1, -1):
        p = flat.parents[j]
        if p >= 0:
            next_kid[j] = first_kid[p]
            first_kid[p] = j

    def kids_of(i: int) -> list[Any]:
        out = []
        j = first_kid[i]
        while j >= 0:
            out.append(flat.ids[j])
            j = next_kid[j]
        return out
    for start in range(0, count, size):
        part = []
        for i in range(start, min(count, start + size)):
            entry_id = flat.ids[i]
            record: dict[str, Any] = {"c": own_rows(next(contexts), entry_id)}
            if isinstance(entry_id, str) and sm.get_entry(entry_id) is flat.entries[i]:
                full = entry_payload(view, entry_id, True)
                # Every part of a detail is cut from this entry's own text, which its raw JSON
                # holds at full length; so a raw JSON under the smallest limit means nothing is
                # cut. A tool result also shows its call (another entry's arguments).
                raw = full.get("raw")
                if (isinstance(raw, dict) and isinstance(raw.get("text"), str) and len(raw["text"]) <= _NO_CUT
                        and full.get("kind") != "tool_result" and "tool_result" not in full):
                    short = full
                else:
                    short = entry_payload(view, entry_id, False)
                if full != short:
                    record["p"] = short_patch(short, full)
                derived = 0
                if full.get("kind") == KIND_NAMES[kinds[i]]:
                    derived |= K_KIND
                    del full["kind"]
                if type(full.get("tokens")) is int and full["tokens"] == tokens[i]:
                    derived |= K_TOKENS
                    del full["tokens"]
                if full.get("children") == kids_of(i):
                    derived |= K_CHILDREN
                    del full["children"]
                if derived:
                    record["k"] = derived
                entry = printed.pop(i) if i in printed else printable_entry(flat.entries[i])
                if isinstance(entry, dict):
                    p = flat.parents[i]
                    if "id" in entry and entry["id"] == entry_id:
                        entry["id"] = SELF
                    if p >= 0 and flat.ids[p] is not None and entry.get("parentId") == flat.ids[p]:
                        entry["parentId"] = PARENT
                if entry is not None:
                    # The page rebuilds the raw JSON text from the entry, whose strings it
                    # shares with the other parts of the detail.
                    full = dict(full, raw=None)
                    bits = _drop_copied(full, flat.entries[i])
                    if bits:
                        record["x"] = bits
                    record["e"] = entry
                record["f"] = mark_cuts(full)
            text = display_text_with(flat.entries[i], flat.tool_call_of(i), home)  # (the header's display text)
            facts = entry_facts(flat.entries[i], text, entry_stats(flat.entries[i]), record.get("e"))
            if facts:
                record["v"] = facts
            part.append(record)
        yield _dumps(encode_chunk(part))
