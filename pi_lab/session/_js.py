"""JavaScript semantics that pi's behaviour depends on, in one place.

pi is JavaScript: a string's length is counted in UTF-16 code units, ``trim`` removes
ECMAScript's white space (not Python's), numbers print as ``Number.prototype.toString`` and
``JSON.stringify`` write them, and ``String(value)`` / truthiness follow their own rules. Each
helper here is the one answer the engine, the token estimates, the compaction code and the
views use, so that two callers never disagree about the same value.

Nothing here recurses over data: ``String`` of a nested array walks with an explicit stack.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    "JS_WHITESPACE",
    "MISSING",
    "js_len",
    "js_slice",
    "js_trim",
    "js_number",
    "js_double",
    "js_string",
    "js_join_part",
    "js_truthy",
    "js_to_number",
    "js_round",
]

# ECMAScript WhiteSpace and LineTerminator: what String.prototype.trim removes. Python's
# str.strip() differs (it strips U+001C–U+001F and U+0085, keeps U+FEFF).
JS_WHITESPACE = (
    "\t\n\u000b\u000c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_NON_BMP = re.compile("[\U00010000-\U0010ffff]")

MISSING: Any = object()
"""An absent key (JavaScript's ``undefined``), distinct from ``None`` (``null``)."""


def js_len(text: str) -> int:
    """``text.length`` in JavaScript: characters outside the BMP count twice, a lone
    surrogate (possible in a JSON string) counts once."""
    if text.isascii():
        return len(text)
    # UTF-16 is exactly JavaScript's string model; surrogatepass keeps lone surrogates (1 unit)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_slice(text: str, units: int) -> str:
    """``text.slice(0, units)``; a cut through a surrogate pair keeps the lone high half."""
    if text.isascii() or not _NON_BMP.search(text):
        return text[:units]
    out: list[str] = []
    used = 0
    for ch in text:
        width = 2 if ord(ch) > 0xFFFF else 1
        if used + width > units:
            if width == 2 and used < units:
                out.append(chr(0xD800 + ((ord(ch) - 0x10000) >> 10)))
            break
        out.append(ch)
        used += width
    return "".join(out)


def js_trim(text: str) -> str:
    """``String.prototype.trim``."""
    return text.strip(JS_WHITESPACE)


def js_number(value: float) -> str:
    """Format a float the way JavaScript's ``Number.prototype.toString`` (and therefore
    ``JSON.stringify``) does: ``1.0`` is ``1``, ``1e21`` is ``1e+21``, ``1e-7`` is ``1e-7``.
    NaN and the infinities give ``null``, as ``JSON.stringify`` writes them."""
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


def js_double(value: int) -> float:
    """The double JavaScript holds for an integer literal: past the float range, ±Infinity."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _scalar_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if -(10**21) < value < 10**21:
            return str(value)
        return js_number(js_double(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return js_number(value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def js_string(value: Any) -> str:
    """``String(value)``; an absent value (:data:`MISSING`) is ``"undefined"``.

    An array is ``Array.prototype.join(",")`` of its items, where null and undefined items
    are empty; nested arrays join the same way, walked with a stack (any depth).
    """
    if not isinstance(value, (list, tuple)):
        return _scalar_string(value)
    out: list[str] = []
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        items, i = stack.pop()
        if i >= len(items):
            continue
        if i:
            out.append(",")
        stack.append((items, i + 1))
        item = items[i]
        if isinstance(item, (list, tuple)):
            stack.append((item, 0))
        elif item is not None and item is not MISSING:
            out.append(_scalar_string(item))
    return "".join(out)


def js_join_part(value: Any) -> str:
    """An element of ``Array.prototype.join``: null and undefined become empty."""
    if value is None or value is MISSING:
        return ""
    return js_string(value)


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness: objects and arrays are true even when empty, NaN is false."""
    if value is None or value is MISSING or value is False:
        return False
    if isinstance(value, str):
        return value != ""
    if isinstance(value, (int, float)):
        return value == value and value != 0
    return True


_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_HEX_LIKE = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")


def js_to_number(value: Any) -> float:
    """``Number(value)`` for the values that occur in entries."""
    if value is MISSING:
        return math.nan
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip(JS_WHITESPACE)
        if text == "":
            return 0.0
        if _DECIMAL.fullmatch(text):
            return float(text)
        if text in ("Infinity", "+Infinity"):
            return math.inf
        if text == "-Infinity":
            return -math.inf
        if _HEX_LIKE.fullmatch(text):
            return float(int(text, 0))
        return math.nan
    return math.nan


def js_round(value: float) -> float:
    """``Math.round``: halves go up (12.5 → 13, -2.5 → -2), unlike Python's ``round``."""
    if math.isnan(value) or math.isinf(value):
        return value
    floor = math.floor(value)
    return float(floor + 1 if value - floor >= 0.5 else floor)
