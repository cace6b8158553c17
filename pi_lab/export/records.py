"""How a chunk's records are written: the values the page rebuilds exactly (data.py's module
docstring says what a record holds).

A record leaves to the page what the page already has or can derive: the preview detail as
patches of the full one (:func:`short_patch`), the entry with its floats marked so the page
prints its raw JSON as Python does (:func:`printable_entry`), whole texts without their
derivable keys (:func:`mark_cuts`), a context row's own entry (:func:`own_rows`), the entry's
own and parent id (:data:`SELF`, :data:`PARENT`); :func:`encode_chunk` then shares long
strings and writes those markers as the page's ``$`` objects (data.ts puts each back).
Every walk here is iterative: an entry can nest thousands of levels deep.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PARENT", "SELF", "encode_chunk", "mark_cuts", "own_rows", "printable_entry", "short_patch"]


def _is_cut(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"text", "length", "truncated"}


def short_patch(short: Any, full: Any) -> list[list[Any]]:
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


def printable_entry(entry: Any) -> Any:
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


SELF, PARENT = _IdRef(0), _IdRef(1)


def mark_cuts(value: Any) -> Any:
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


def own_rows(record: dict[str, Any], entry_id: Any) -> dict[str, Any]:
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


def encode_chunk(records: list[dict[str, Any]]) -> dict[str, Any]:
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
