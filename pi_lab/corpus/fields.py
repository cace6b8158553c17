"""Reading the fields of session entries into corpus columns: timestamps, usage, sizes.

Each function maps one JSON value to one cell, lenient the way pi is (a missing or odd
value counts 0 or None, never an error), with caches for the values a session repeats.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from pi_lab.llm.catalog import context_window_for
from pi_lab.session._js import js_double
from pi_lab.session._text import js_len
from pi_lab.session.ids import parse_iso_ms

_MINUTE_MS: dict[str, int | None] = {}


def _ms(value: Any) -> int | None:
    """Epoch ms of an ISO timestamp (``parse_iso_ms``), with a fast path for the shape pi
    writes (``2026-03-02T09:00:00.000Z``): the engine parses each minute once (a session
    writes many entries a minute), the seconds and milliseconds are added to it."""
    if value.__class__ is str and len(value) == 24 and value[23] == "Z" and value[19] == "." and value[16] == ":":
        minute = value[:17]
        base = _MINUTE_MS.get(minute, -1)
        if base == -1:
            base = None
            # hour 24 is valid only as 24:00:00.000 (the next midnight): that goes the slow way
            if minute[10] == "T" and minute[13] == ":" and minute[11:13] < "24":
                start = parse_iso_ms(minute + "00.000Z")
                base = None if start != start else int(start)
            if len(_MINUTE_MS) > 100_000:
                _MINUTE_MS.clear()
            _MINUTE_MS[minute] = base
        if base is not None:
            rest = value[17:19] + value[20:23]  # seconds and milliseconds: "05123" is 5,123 ms
            if rest.isascii() and rest.isdigit() and value[17] < "6":
                return base + int(rest)
    ms = parse_iso_ms(value)
    return None if ms != ms else int(ms)


_WINDOWS: dict[Any, int | None] = {}


def _window(model: str | None) -> int | None:
    found = _WINDOWS.get(model, -1)
    if found == -1:
        found = _WINDOWS[model] = context_window_for(model)
    return found


def _num(value: Any) -> float:
    """A usage counter as a number: missing, null or not a number → 0 (session-format.md §6.2)."""
    if value.__class__ is int:  # nearly every counter (exact type checks first: 250,000 per corpus)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and math.isnan(value):
        return 0
    return value


# ``float(value)``; an integer past the float range (a hand-edited 400-digit counter, which
# Python's JSON reader keeps exact) is the infinity JavaScript reads it as: the engine's rule.
_float = js_double


def _usage_row(usage: Any) -> tuple[float, float, float, float, float, float]:
    """(input, output, cache_read, cache_write, total_tokens, cost) of one Usage object."""
    if usage.__class__ is not dict and not isinstance(usage, Mapping):
        return (0, 0, 0, 0, 0, 0.0)
    inp, out = _num(usage.get("input")), _num(usage.get("output"))
    cr, cw = _num(usage.get("cacheRead")), _num(usage.get("cacheWrite"))
    total = _num(usage.get("totalTokens")) or (inp + out + cr + cw)
    cost = usage.get("cost")
    cost_total = _float(_num(cost.get("total"))) if cost.__class__ is dict or isinstance(cost, Mapping) else 0.0
    return (inp, out, cr, cw, total, cost_total)


def _utf8_len(text: str) -> int:
    if text.isascii():  # one byte per character, no copy
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _block_sum(content: Any, measure: Callable[[str], int], images: bool) -> int:
    """``measure`` of a content string, or summed over its text blocks (and, with ``images``,
    the base64 length of its image blocks); any other block or value counts 0."""
    if isinstance(content, str):
        return measure(content)
    total = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                total += measure(block["text"])
            elif images and kind == "image" and isinstance(block.get("data"), str):
                total += len(block["data"])
    return total


def _text_chars(content: Any) -> int:
    """JavaScript length of the text blocks (or the string) of a content value."""
    return _block_sum(content, js_len, False)


def _content_bytes(content: Any) -> int:
    """UTF-8 bytes of a tool result's content: its text plus the base64 of its images."""
    return _block_sum(content, _utf8_len, True)
