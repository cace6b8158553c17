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
  the context views (views.py)}``, with long strings shared (``_encode_chunk``).

A record leaves to the page what the page already has: the detail fields copied from the
entry (``x``), the kind, tokens and children that the columns give (``k``), the entry's own and
parent id (``{"$i": 0|1}``), a context row's own entry (``{"$o": 1}``), a whole text's length
(``"$c"``); data.ts puts each back exactly. Each part is gzip-compressed and written 7 bits per
character by ``html.py`` (``pack7``; a notebook snapshot uses base85, ``pack``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import struct
import sys
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from pi_lab.export.context import iter_context_records
from pi_lab.export.views import entry_facts, fact_bits, shared_texts, views_header
from pi_lab.view.branches import entry_stats
from pi_lab.view._common import str_or_none
from pi_lab.view.compare_requests import cut_summary, with_children
from pi_lab.server.listing import title_fields
from pi_lab.session._json import dumps
from pi_lab.view.gauge import recorded_context_window, recorded_model
from pi_lab.view.detail import RAW_LIMIT, TEXT_LIMIT
from pi_lab.view.columns import TOKENS_MAX
from pi_lab.view.rows import entry_flags
from pi_lab.view.kinds import FLAG_BITS, KIND_NAMES, entry_kind
from pi_lab.view.payload import SessionView, ViewSettings, entry_payload
from pi_lab.view.rows import RowState

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
    """``pack_blob(MAGIC, header, blocks, ensure_ascii=False)``, byte for byte, written a key
    at a time: the engine's writer copies the whole header to normalise its floats (a digit
    before a dot anywhere, as in "step 1.", is enough), three times while the column offsets
    settle, which cost about 1 GB for a moment on a million entries. JSON.stringify of an
    object is the keys' texts joined, so each value is written once, by the same writer,
    and only the short ``columns`` list again."""
    blocks = []
    for name, code, dtype in _COLUMNS:
        arr = array(code, columns[name])
        if sys.byteorder != "little":
            arr.byteswap()
        data = arr.tobytes()
        blocks.append((name, dtype, len(columns[name]), data + b"\0" * ((-len(data)) % 4)))
    # (each member as the writer writes a one-key object: the same rules for the value)
    members = [dumps({key: value})[1:-1] for key, value in header.items()]
    body = sum(map(len, members)) + len(members)  # each member and the comma or brace after it
    described: list[dict[str, Any]] = []
    while True:
        tail = b'"columns":' + dumps(described) + b"}"
        length = 1 + body + len(tail)
        padded = length + (-length) % 4
        offset = 8 + padded
        new = []
        for name, dtype, count, data in blocks:
            new.append({"name": name, "dtype": dtype, "offset": offset, "count": count})
            offset += len(data)
        if new == described:
            break
        described = new
    pieces = [MAGIC, struct.pack("<I", padded), b"{"]
    for member in members:
        pieces += (member, b",")
    pieces += (tail, b" " * (padded - length))
    pieces += (data for *_, data in blocks)
    return b"".join(pieces)


def _is_cut(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"text", "length", "truncated"}


def _short_patch(short: Any, full: Any) -> list[list[Any]]:
    """How the preview detail differs from the full one, as ``[path, value]`` patches.

    A piece the preview cuts (detail._cut: the first ``n`` code points) travels as
    ``[path, None, n]`` instead of its text, so long bodies are embedded once. Iterative walk.
    """
    patch: list[list[Any]] = []
    stack: list[tuple[list[Any], Any, Any]] = [([], short, full)]
    while stack:
        path, a, b = stack.pop()
        if a == b:
            continue
        if _is_cut(a) and _is_cut(b) and a["truncated"] and b["text"][: len(a["text"])] == a["text"]:
            patch.append([path, None, len(a["text"])])
        elif isinstance(a, str) and isinstance(b, str) and len(a) < len(b) and b.startswith(a):
            patch.append([path, None, len(a)])  # a preview cut by another rule (a tool result's)
        elif isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
            stack.extend((path + [k], a[k], b[k]) for k in a)
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            stack.extend((path + [k], a[k], b[k]) for k in range(len(a)))
        else:
            patch.append([path, a])
    return patch


_MAX_SAFE = 2**53
# Deeper entries keep their raw JSON text: the chunk is written with json.dumps, which recurses.
_MAX_DEPTH = 200


class _Float:
    """A float of an entry, travelling as its Python JSON text (``{"$f": text}``) so the page
    can print the raw JSON exactly as ``json.dumps`` does (``1.0``, ``1e-05``)."""

    __slots__ = ("text", "value")

    def __init__(self, value: float):
        self.text = json.dumps(value)
        self.value = value


def _printable_entry(entry: Any) -> Any:
    """``entry`` with its floats marked, or None when the page's printer (data.ts
    ``pythonJson``) cannot reproduce ``detail._pretty(entry)``: integers past 2**53, lone
    surrogates, keys that are array indexes (JavaScript puts them first whatever their order),
    values that are not JSON, nesting deeper than ``_MAX_DEPTH``. Iterative walk."""
    root: list[Any] = []
    stack: list[tuple[Any, Any, Any, int]] = [(entry, root, None, 0)]
    while stack:
        value, holder, key, depth = stack.pop()
        if depth > _MAX_DEPTH:
            return None
        if value is None or isinstance(value, bool):
            out: Any = value
        elif isinstance(value, str):
            if not value.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in value):
                return None
            out = value
        elif isinstance(value, int):
            if abs(value) > _MAX_SAFE:
                return None
            out = value
        elif isinstance(value, float):
            out = _Float(value)
        elif isinstance(value, dict):
            out = {}
            for k, item in value.items():
                if not isinstance(k, str) or (k.isdigit() and k.isascii()) or (
                        not k.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in k)):
                    return None
                out[k] = None  # keeps the key order; filled in when popped
                stack.append((item, out, k, depth + 1))
        elif isinstance(value, list):
            out = [None] * len(value)
            stack.extend((item, out, k, depth + 1) for k, item in enumerate(value))
        else:
            return None
        if key is None:
            root.append(out)
        else:
            holder[key] = out
    return root[0]


_SHARED_MIN = 48  # strings at least this long are stored once per chunk


class _Cut(dict):  # type: ignore[type-arg]
    """A piece of a detail as detail._cut leaves a whole text: ``{"text", "length": its length
    in code points, "truncated": False}``. Travels without the two derivable keys, marked
    ``"$c"`` (data.ts puts them back)."""


class _Own:
    """A context row's ``source_id`` that is the record's own entry id (data.ts: ids[index])."""


_OWN = _Own()


class _IdRef:
    """An entry's own id (0) or its parent's id (1) in the entry's raw JSON: the page has
    both in its columns (data.ts puts them back in place, so the key order is kept)."""

    __slots__ = ("which",)

    def __init__(self, which: int):
        self.which = which


_SELF, _PARENT = _IdRef(0), _IdRef(1)
# Record bits ``k``: the detail's kind, its tokens and its children are what the columns say
# (the kind column's name, the tokens column, the flattened children in flat order).
K_KIND, K_TOKENS, K_CHILDREN = 1, 2, 4


def _mark_cuts(value: Any) -> Any:
    """A copy of ``value`` with every whole-text piece as a :class:`_Cut`. Iterative walk."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, holder, key = stack.pop()
        if isinstance(item, dict):
            text = item.get("text")
            if (isinstance(text, str) and item.get("truncated") is False and "length" in item
                    and type(item["length"]) is int and item["length"] == len(text)):
                out: Any = _Cut((k, v) for k, v in item.items() if k not in ("length", "truncated"))
            else:
                out = dict(item)
            for k, v in out.items():
                stack.append((v, out, k))
        elif isinstance(item, list):
            out = list(item)
            stack.extend((v, out, k) for k, v in enumerate(out))
        else:
            out = item
        holder[key] = out
    return root[0]


def _own_rows(record: dict[str, Any], entry_id: Any) -> dict[str, Any]:
    """The context record with the rows that come from this entry naming it by :data:`_OWN`."""
    if not isinstance(entry_id, str):
        return record

    def own(row: Any) -> Any:
        if isinstance(row, dict) and row.get("source_id") == entry_id:
            return dict(row, source_id=_OWN)
        return row

    out = dict(record)
    if "m" in out:
        out["m"] = [own(row) for row in out["m"]]
    if "d" in out:
        out["d"] = [op if isinstance(op, list) else own(op) for op in out["d"]]
    return out


def _encode_chunk(records: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"s": strings, "r": records}`` where every long string is ``{"$s": k}`` (an index into
    ``s``), every marked float ``{"$f": text}``, and every dict key starting with ``$`` gets one
    more ``$`` (so data can never look like either). The same text in the raw entry, the copy text, the tool result and the
    context preview is then embedded once. Iterative walk."""
    strings: list[str] = []
    index: dict[str, int] = {}

    def ref(text: str) -> dict[str, int]:
        k = index.get(text)
        if k is None:
            k = index[text] = len(strings)
            strings.append(text)
        return {"$s": k}

    root: list[Any] = []
    stack: list[tuple[Any, Any, Any]] = [(records, root, None)]
    while stack:
        value, holder, key = stack.pop()
        if isinstance(value, str) and len(value) >= _SHARED_MIN:
            out: Any = ref(value)
        elif isinstance(value, _Float):
            out = {"$f": value.text}
        elif isinstance(value, _Own):
            out = {"$o": 1}
        elif isinstance(value, _IdRef):
            out = {"$i": value.which}
        elif isinstance(value, dict):
            out = {"$c": 1} if isinstance(value, _Cut) else {}
            for k, item in value.items():
                name = "$" + k if k.startswith("$") else k
                out[name] = None  # keeps the key order; the value is filled in when popped
                stack.append((item, out, name))
        elif isinstance(value, list):
            out = [None] * len(value)
            for k, item in enumerate(value):
                stack.append((item, out, k))
        else:
            out = value
        if key is None:
            root.append(out)
        else:
            holder[key] = out
    return {"s": strings, "r": root[0]}


class _IndexedChildren:
    """The session manager, with ``get_children`` answered from one index built here.

    The manager's ``get_children`` scans every entry (as pi's does), and the detail of each
    entry lists its children: an export asked it once per entry, O(n²), which was most of
    the time of exporting a 10k session. The index lists the same entries in the same order
    (the manager's id lookup: first appearance of an id, its last entry)."""

    def __init__(self, sm: Any):
        self._sm = sm
        children: dict[Any, list[Any]] = {}
        seen: set[str] = set()
        for entry in sm.entries:
            entry_id = entry.get("id")
            if not isinstance(entry_id, str) or entry_id in seen:
                continue
            seen.add(entry_id)
            live = sm.get_entry(entry_id)
            try:
                children.setdefault(live.get("parentId"), []).append(live)
            except TypeError:  # an unhashable parentId is nobody's id
                pass
        self._children = children

    def get_children(self, parent_id: Any) -> list[Any]:
        try:
            return list(self._children.get(parent_id, ()))
        except TypeError:
            return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sm, name)


class _Unheld:
    """The session, as an object nothing can reference weakly (no ``__weakref__`` slot)."""

    __slots__ = ("_sm",)

    def __init__(self, sm: Any):
        self._sm = sm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sm, name)


def _timeline(view: Any) -> dict[str, Any] | None:
    """The context timeline at the export's leaf (the page answers ``timeline`` with it), when
    this pi_lab's view has that request."""
    from pi_lab.view.payload import READ_OPS, RequestError, read_request

    if "timeline" not in READ_OPS:
        return None
    try:
        # Through a session the view's per-session timeline cache cannot hold (it keys
        # sessions weakly): the cached walk of a million-entry branch (about 0.85 KB per
        # entry) would live as long as the session, to the end of the export, which asks once.
        answer = read_request(dataclasses.replace(view, sm=_Unheld(view.sm)), "timeline", {})
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
    view = SessionView.open(sm, settings)
    rows = view.rows
    flat = rows.flat
    home = rows.home
    count = len(flat.entries)
    # Typed arrays, not lists: no int object per cell (a million entries' parents and file
    # positions are a million distinct ints each).
    columns: dict[str, Any] = {name: array(code) for name, code, _ in _COLUMNS}
    texts: list[str] = []
    search: list[str] = []
    parents_named = with_children(sm)
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
        texts.append(flat.display_text(i, home))
        search.append(flat.search_text(i))
        # (made again for the entry's chunk: a million of them kept until then took 250 MB)
        columns["facts"].append(fact_bits(entry_stats(entry), isinstance(entry_id, str) and entry_id in parents_named))
    info = {
        "id": sm.session_id,
        # The file's name only: a shared page need not tell where it lay on the exporter's disk.
        "file": os.path.basename(sm.session_file) if sm.session_file else None,
        "name": sm.session_name,
        "cwd": sm.cwd,
        "entries": sm.get_entry_count(),
        "model": recorded_model(sm),
        "following": False,
        **title_fields(sm.session_name, sm.entries),
    }
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
        "text_search": [x for pair in zip(texts, search) for x in pair],
        "timeline": _timeline(view),
        "views": views_header(_summaries(sm, flat), shared),
        "notes": notes,
    }
    main = _pack(header, columns)
    return main, _chunks(sm, dataclasses.replace(view, sm=_IndexedChildren(sm)), flat, chunk,
                         columns["kind"], columns["tokens"], texts, shared), count


def _summaries(sm: Any, flat: Any) -> list[list[Any]]:
    """The session's branch summaries in file order (compare_branches reads them all), each
    ``[flat index, id, fromId, parentId]``; one the tree does not hold (a later entry took its
    id) also carries its text as the pane shows it."""
    flat_of = {id(entry): i for i, entry in enumerate(flat.entries)}
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
            texts: list[str], shared: dict[str, int]) -> Iterator[bytes]:
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
                copy = printed[i] = _printable_entry(flat.entries[i])
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
            record: dict[str, Any] = {"c": _own_rows(next(contexts), entry_id)}
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
                    record["p"] = _short_patch(short, full)
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
                entry = printed.pop(i) if i in printed else _printable_entry(flat.entries[i])
                if isinstance(entry, dict):
                    p = flat.parents[i]
                    if "id" in entry and entry["id"] == entry_id:
                        entry["id"] = _SELF
                    if p >= 0 and flat.ids[p] is not None and entry.get("parentId") == flat.ids[p]:
                        entry["parentId"] = _PARENT
                if entry is not None:
                    # The page rebuilds the raw JSON text from the entry, whose strings it
                    # shares with the other parts of the detail.
                    full = dict(full, raw=None)
                    bits = _drop_copied(full, flat.entries[i])
                    if bits:
                        record["x"] = bits
                    record["e"] = entry
                record["f"] = _mark_cuts(full)
            facts = entry_facts(flat.entries[i], texts[i], entry_stats(flat.entries[i]), record.get("e"))
            if facts:
                record["v"] = facts
            part.append(record)
        yield _dumps(_encode_chunk(part))
