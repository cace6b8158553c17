"""Format versions 1 → 2 → 3 (session-format.md §7)."""

from __future__ import annotations

import math
import re
from typing import Any

from pi_lab.session._js import js_double
from pi_lab.session._text import js_trim
from pi_lab.session.ids import UuidFactory, new_entry_id

__all__ = ["CURRENT_VERSION", "migrate_entries"]

CURRENT_VERSION = 3


def migrate_entries(file_entries: list[dict[str, Any]], uuid_factory: UuidFactory | None = None) -> bool:
    """Migrate ``file_entries`` (header included) in place; return whether anything changed."""
    header = next((e for e in file_entries if e.get("type") == "session"), None)
    version = header.get("version") if header is not None else None
    # pi: `header?.version ?? 1`, then `>=`/`<` against numbers, which convert the value
    # with JavaScript's ToNumber: "2" is 2, "3" is 3, true is 1, "" and [] are 0, and a
    # value that converts to NaN ("abc", {}) fails every comparison: no step runs, yet pi
    # still reports a migration and rewrites the file unchanged.
    number = 1.0 if version is None else js_to_number(version)
    if number >= CURRENT_VERSION:
        return False
    if number < 2:
        _v1_to_v2(file_entries, uuid_factory)
    if number < 3:
        _v2_to_v3(file_entries)
    return True


_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_RADIX = {"0x": 16, "0o": 8, "0b": 2}


def js_to_number(value: Any) -> float:
    """JavaScript's ``ToNumber`` for a parsed JSON value (NaN where JavaScript gives NaN)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        return js_double(value)  # past the float range: ±Infinity, as JavaScript reads the digits
    if value is None:
        return 0.0
    if isinstance(value, list):
        # An array converts through its string form: [] is "", [5] is "5", [1,2] is "1,2".
        return js_to_number(_array_to_string(value))
    if not isinstance(value, str):
        return math.nan  # an object converts through "[object Object]"
    text = js_trim(value)
    if not text:
        return 0.0
    prefix = text[:2].lower()
    if prefix in _RADIX:
        try:
            return float(int(text[2:], _RADIX[prefix])) if text[2:].isascii() and text[2:].isalnum() else math.nan
        except ValueError:
            return math.nan
    if not _DECIMAL.fullmatch(text):
        return math.nan
    return float(text.replace("Infinity", "inf"))


def _array_to_string(value: list[Any]) -> str:
    """``Array.prototype.toString`` (elements joined by ","; null becomes ""), iteratively."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Sep):
            out.append(",")
        elif isinstance(item, list):
            parts: list[Any] = []
            for index, child in enumerate(item):
                if index:
                    parts.append(_Sep())
                parts.append(child)
            stack.extend(reversed(parts))
        elif item is None:
            continue
        elif isinstance(item, bool):
            out.append("true" if item else "false")
        elif isinstance(item, dict):
            out.append("[object Object]")
        elif isinstance(item, float):
            from pi_lab.session._json import js_number

            out.append(js_number(item) if math.isfinite(item) else ("NaN" if item != item else ("Infinity" if item > 0 else "-Infinity")))
        else:
            out.append(str(item))
    return "".join(out)


class _Sep:
    """A comma between two array elements on the conversion stack."""


def _v1_to_v2(file_entries: list[dict[str, Any]], uuid_factory: UuidFactory | None) -> None:
    # v1 files are a linear log without ids. pi gives every line a fresh id chained to the
    # previous one; its collision set is never filled, we check against the ids we made.
    # One pass, as pi's: a compaction's firstKeptEntryIndex is resolved when the compaction
    # is reached, so an index pointing further down finds a line without its id yet.
    used: set[str] = set()
    previous: str | None = None
    for entry in file_entries:
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        entry_id = new_entry_id(used, uuid_factory)
        used.add(entry_id)
        entry["id"] = entry_id  # a number or string line raises TypeError, as in pi
        entry["parentId"] = previous
        previous = entry_id
        if entry.get("type") != "compaction":
            continue
        index = entry.get("firstKeptEntryIndex")
        if isinstance(index, bool) or not isinstance(index, (int, float)):
            continue
        # The index counts lines of the whole loaded list, header at 0.
        if isinstance(index, float) and index.is_integer():
            index = int(index)
        if isinstance(index, int) and 0 <= index < len(file_entries):
            target = file_entries[index]
            if target.get("type") != "session":
                if "id" in target:
                    entry["firstKeptEntryId"] = target["id"]
                else:
                    entry.pop("firstKeptEntryId", None)  # JavaScript stores undefined: not written
        del entry["firstKeptEntryIndex"]


def _v2_to_v3(file_entries: list[dict[str, Any]]) -> None:
    for entry in file_entries:
        if entry.get("type") == "session":
            entry["version"] = 3
        elif entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
