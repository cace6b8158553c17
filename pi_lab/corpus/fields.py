"""Reading the fields of session entries into corpus columns: timestamps, usage, sizes.

Each function maps one JSON value to one cell, lenient the way pi is (a missing or odd
value counts 0 or None, never an error), with caches for the values a session repeats.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, cast

from pi_lab.llm.catalog import context_window_for
from pi_lab.session._js import js_double
from pi_lab.session._text import js_len
from pi_lab.session.ids import parse_iso_ms

_DAY_MS: dict[str, int | None] = {}


def _ms(value: Any) -> int | None:
    """Epoch ms of an ISO timestamp (``parse_iso_ms``), with a fast path for the shape pi
    writes (``2026-03-02T09:00:00.000Z``): the engine parses each day once (a session writes
    many entries a day), the time of day is added to it. Anything else (hour 24, which is
    valid only as 24:00:00.000, minute or second 60, another shape) goes the engine's way."""
    if value.__class__ is str and len(value) == 24 and value[23] == "Z" and value[19] == "." and value[16] == ":" \
            and value[13] == ":" and value[10] == "T":
        day = value[:10]
        base = _DAY_MS.get(day, -1)
        if base == -1:
            start = parse_iso_ms(day + "T00:00:00.000Z")
            base = None if start != start else int(start)
            if len(_DAY_MS) > 100_000:
                _DAY_MS.clear()
            _DAY_MS[day] = base
        if base is not None:
            hours, minutes = value[11:13], value[14:16]
            rest = value[17:19] + value[20:23]  # seconds and milliseconds: "05123" is 5,123 ms
            digits = hours + minutes + rest
            if digits.isascii() and digits.isdigit() and hours < "24" and value[14] < "6" and value[17] < "6":
                return base + int(hours) * 3_600_000 + int(minutes) * 60_000 + int(rest)
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
# (js_double is float() for any number; it is annotated for the integers, where it differs)
_float = cast("Callable[[float], float]", js_double)


def _usage_row(usage: Any) -> tuple[float, float, float, float, float, float]:
    """(input, output, cache_read, cache_write, total_tokens, cost) of one Usage object."""
    if usage.__class__ is not dict and not isinstance(usage, Mapping):
        return (0, 0, 0, 0, 0, 0.0)
    inp, out = _num(usage.get("input")), _num(usage.get("output"))
    cr, cw = _num(usage.get("cacheRead")), _num(usage.get("cacheWrite"))
    total = _num(usage.get("totalTokens")) or (inp + out + cr + cw)
    cost = usage.get("cost")
    cost_total = _float(_num(cost.get("total"))) if isinstance(cost, Mapping) else 0.0
    return (inp, out, cr, cw, total, cost_total)


def _float_usage(usage: Any) -> tuple[float, float, float, float, float, float]:
    """:func:`_usage_row` as floats (the model_calls and messages cells)."""
    if usage.__class__ is dict:
        # The shape pi writes (four int counters, an int total, a cost object with a float or
        # int total), without the general rules' calls; anything else goes the general way.
        get = usage.get
        inp, out, cr, cw, total, cost = get("input"), get("output"), get("cacheRead"), get("cacheWrite"), get("totalTokens"), get("cost")
        if inp.__class__ is int and out.__class__ is int and cr.__class__ is int and cw.__class__ is int \
                and total.__class__ is int and cost.__class__ is dict:
            paid = cost.get("total")
            if (paid.__class__ is float and paid == paid) or paid.__class__ is int:
                try:
                    return (float(inp), float(out), float(cr), float(cw), float(total or (inp + out + cr + cw)), float(paid))
                except OverflowError:
                    pass
    inp, out, cr, cw, total, cost = _usage_row(usage)
    try:
        return (float(inp), float(out), float(cr), float(cw), float(total), cost)
    except OverflowError:  # (a counter too large for a float: only then the slower way)
        return (_float(inp), _float(out), _float(cr), _float(cw), _float(total), cost)


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
