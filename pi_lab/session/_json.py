"""JSON exactly as pi reads and writes it (JavaScript's JSON.parse / JSON.stringify).

pi writes compact JSON with non-ASCII characters raw. Python's serialisers differ from
JavaScript's in a few places that matter for byte-identical files:

* JavaScript has one number type: an integral value is written without ``.0`` and the
  exponent form is used only below 1e-6 and from 1e21 on.
* A lone UTF-16 surrogate (legal in a JS string) is written as a ``\\udXXX`` escape.
* ``NaN`` and ``Infinity`` become ``null``.

orjson does the work; numbers and strings it would render differently are rewritten first.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

__all__ = ["dumps", "dumps_line", "loads_object", "js_number"]

# A float can only appear in orjson output as a digit followed by "." or "e"; when no such
# sequence appears anywhere, the fast output is already exact.
_FLOAT_HINT = re.compile(rb"\d[.eE]")
_LONE_SURROGATE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def js_number(value: float) -> str:
    """Format a float the way JavaScript's ``Number.prototype.toString`` does."""
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    text = repr(value)
    if "e" not in text and "E" not in text:
        return text[:-2] if text.endswith(".0") else text
    mantissa, exp_text = text.split("e")
    exponent = int(exp_text)
    if -7 < exponent < 21:
        # JavaScript writes this magnitude in plain decimal notation.
        sign = "-" if mantissa.startswith("-") else ""
        digits = mantissa.lstrip("-").replace(".", "")
        point = len(mantissa.lstrip("-").split(".")[0]) + exponent
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if mantissa.endswith(".0"):
        mantissa = mantissa[:-2]
    return f"{mantissa}e{'+' if exponent > 0 else '-'}{abs(exponent)}"


def _normalise(value: Any) -> Any:
    """Return a copy of ``value`` in which floats and lone surrogates are pre-rendered."""
    root: list[Any] = [value]
    # Iterative: session data can nest arbitrarily (tool arguments) and must never hit the
    # recursion limit.
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        parent, key, item = stack.pop()
        if isinstance(item, float):
            parent[key] = orjson.Fragment(js_number(item).encode())
        elif isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                parent[key] = orjson.Fragment(_dump_surrogate_string(item))
        elif isinstance(item, dict):
            copy = dict(item)
            parent[key] = copy
            for k, v in copy.items():
                if not isinstance(k, str):
                    raise TypeError(f"JSON object keys must be strings, not {type(k).__name__}")
                if _LONE_SURROGATE.search(k):
                    raise ValueError("lone surrogate in an object key cannot be written")
                stack.append((copy, k, v))
        elif isinstance(item, (list, tuple)):
            copy_list = list(item)
            parent[key] = copy_list
            for i, v in enumerate(copy_list):
                stack.append((copy_list, i, v))
        elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
            parent[key] = orjson.Fragment(js_number(float(item)).encode())
    return root[0]


def _dump_surrogate_string(text: str) -> bytes:
    rendered = json.dumps(text, ensure_ascii=False)
    rendered = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", rendered)
    return rendered.encode("utf-8")


def dumps(value: Any) -> bytes:
    """Serialise ``value`` byte-for-byte as ``JSON.stringify(value)`` would."""
    try:
        out = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return orjson.dumps(_normalise(value))
    if _FLOAT_HINT.search(out) is None:
        return out
    return orjson.dumps(_normalise(value))


def dumps_line(value: Any) -> bytes:
    """One JSONL line: the serialised value followed by ``\\n``."""
    return dumps(value) + b"\n"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_object(line: bytes | str) -> dict[str, Any] | None:
    """Parse one line as pi does; return the object, or ``None`` for anything else.

    pi keeps any truthy parsed value; only JSON objects are meaningful entries, so other
    values (numbers, strings, arrays) are treated like unparsable lines.
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        # orjson refuses lone surrogate escapes and very deep nesting that JSON.parse
        # accepts; the standard library takes them (and is told to refuse NaN/Infinity).
        try:
            value = json.loads(line, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, dict) else None
