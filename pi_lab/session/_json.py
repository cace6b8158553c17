"""JSON exactly as pi reads and writes it (JavaScript's JSON.parse / JSON.stringify).

pi writes compact JSON with non-ASCII characters raw. Python's serialisers differ from
JavaScript's in a few places that matter for byte-identical files:

* JavaScript has one number type: an integral value is written without ``.0`` and the
  exponent form is used only below 1e-6 and from 1e21 on.
* A lone UTF-16 surrogate (legal in a JS string) is written as a ``\\udXXX`` escape, in a
  value and in an object key alike.
* ``NaN`` and ``Infinity`` become ``null``.

orjson does the work; numbers and strings it would render differently are rewritten first.
Values nested deeper than orjson allows (it stops at 255 levels when writing and 1024 when
reading) go through iterative fallbacks that give the same bytes / the same values, so any
line pi can write, pi_lab can read back and write again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import orjson

from pi_lab.session._js import js_double, js_number

__all__ = ["dumps", "dumps_line", "js_json", "loads_object", "js_number", "NonObjectLine"]

# A float can only appear in orjson output as a digit followed by "." or "e"; when no such
# sequence appears anywhere, the fast output is already exact.
_FLOAT_HINT = re.compile(rb"\d[.eE]")
_LONE_SURROGATE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")
# Any surrogate code point: orjson refuses them all, the lone ones and those that a Python
# caller left as two halves of a pair (JavaScript sees such a pair as one character).
_SURROGATE = re.compile("[\ud800-\udfff]")


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
            if _SURROGATE.search(item):
                parent[key] = orjson.Fragment(_dump_surrogate_string(item))
        elif isinstance(item, dict):
            copy = dict(item)
            parent[key] = copy
            for k, v in copy.items():
                if not isinstance(k, str):
                    raise TypeError(f"JSON object keys must be strings, not {type(k).__name__}")
                if _SURROGATE.search(k):
                    # orjson takes no pre-rendered key: the iterative writer escapes it.
                    raise _SurrogateKey
                stack.append((copy, k, v))
        elif isinstance(item, (list, tuple)):
            copy_list = list(item)
            parent[key] = copy_list
            for i, v in enumerate(copy_list):
                stack.append((copy_list, i, v))
        elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
            # JavaScript holds it as a double: past the float range that is Infinity, which
            # JSON.stringify writes as null (js_number's rule for the infinities).
            parent[key] = orjson.Fragment(js_number(js_double(item)).encode())
    return root[0]


class _SurrogateKey(Exception):
    """Raised by :func:`_normalise` on an object key holding a lone surrogate (orjson cannot
    write it, not even pre-rendered), so that :func:`dumps` uses the iterative writer."""


def _dump_surrogate_string(text: str) -> bytes:
    # Join the halves of a pair into the character JavaScript sees (a UTF-16 round trip);
    # only the lone ones are then left to escape.
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    rendered = json.dumps(text, ensure_ascii=False)
    rendered = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", rendered)
    return rendered.encode("utf-8")


class NonObjectLine(dict):
    """A line holding a truthy JSON value that is not an object (``7``, ``[]``, ``"x"``, ``true``).

    pi keeps every truthy parsed line as an entry. Reading a property of such a value in
    JavaScript gives ``undefined``, which is what this empty mapping gives for every key, so
    the engine treats it exactly as pi does (no type, no id: it can become the leaf). Written
    back (migration, fork) it is the original value. Like a JavaScript array, an array line
    accepts properties (pi's v1 migration gives it an id) that are not written; assigning to
    a primitive throws, as it does in pi's strict-mode code.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any):
        super().__init__()
        self.value = value

    def __setitem__(self, key: str, item: Any) -> None:
        if not isinstance(self.value, list):
            kind = "string" if isinstance(self.value, str) else "boolean" if isinstance(self.value, bool) else "number"
            raise TypeError(f"Cannot create property '{key}' on {kind} '{self.value}'")
        super().__setitem__(key, item)

    def __repr__(self) -> str:
        return f"NonObjectLine({self.value!r})"


def dumps(value: Any) -> bytes:
    """Serialise ``value`` byte-for-byte as ``JSON.stringify(value)`` would."""
    if type(value) is NonObjectLine:
        value = value.value
    try:
        out = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        try:
            return orjson.dumps(_normalise(value))
        except _SurrogateKey:
            return _dumps_iterative(value)
        except orjson.JSONEncodeError as exc:
            if "ecursion" not in str(exc):
                raise
            return _dumps_iterative(value)
    if _FLOAT_HINT.search(out) is None:
        return out
    return orjson.dumps(_normalise(value))


class _Raw(bytes):
    """Bytes the iterative writer emits as they are (punctuation, keys), not a value."""


def _dump_scalar(item: Any) -> bytes:
    if isinstance(item, str):
        return _dump_surrogate_string(item) if _SURROGATE.search(item) else orjson.dumps(item)
    if isinstance(item, float):
        return js_number(item).encode()
    if isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
        return js_number(js_double(item)).encode()
    return orjson.dumps(item)  # ints, booleans, None, and whatever else orjson knows


def _dumps_iterative(value: Any) -> bytes:
    """The same bytes as :func:`dumps`, with an explicit stack instead of recursion (any depth)."""
    out: list[bytes] = []
    write = out.append
    # Each stack item is a value still to write or a _Raw piece of punctuation to emit.
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if item.__class__ is _Raw:
            write(item)
        elif isinstance(item, dict):
            if not item:
                write(b"{}")
                continue
            write(b"{")
            parts: list[Any] = []
            for index, (key, child) in enumerate(item.items()):
                if not isinstance(key, str):
                    raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
                # JSON.stringify escapes a lone surrogate in a key as it does in a value.
                written = _dump_surrogate_string(key) if _SURROGATE.search(key) else orjson.dumps(key)
                parts.append(_Raw((b"," if index else b"") + written + b":"))
                parts.append(child)
            parts.append(_Raw(b"}"))
            stack.extend(reversed(parts))
        elif isinstance(item, (list, tuple)):
            if not item:
                write(b"[]")
                continue
            write(b"[")
            parts = []
            for index, child in enumerate(item):
                if index:
                    parts.append(_Raw(b","))
                parts.append(child)
            parts.append(_Raw(b"]"))
            stack.extend(reversed(parts))
        else:
            write(_dump_scalar(item))
    return b"".join(out)


def dumps_line(value: Any) -> bytes:
    """One JSONL line: the serialised value followed by ``\\n``."""
    return dumps(value) + b"\n"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_object(line: bytes | str) -> dict[str, Any] | None:
    """Parse one line as pi does: the object, a :class:`NonObjectLine`, or ``None``.

    pi keeps any truthy parsed value as an entry (``7``, ``[]``, ``"x"``, ``true``); falsy
    ones (``0``, ``""``, ``false``, ``null``) and unparsable lines are dropped (``None``).
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        # orjson refuses lone surrogate escapes and nesting past 1024 levels that JSON.parse
        # accepts. The standard library takes lone surrogates (told to refuse NaN/Infinity);
        # past its recursion limit the iterative parser takes over (any depth).
        if isinstance(line, memoryview):
            line = line.tobytes()
        try:
            value = json.loads(line, parse_constant=_reject_constant)
        except RecursionError:
            try:
                value = loads_iterative(line.decode("utf-8") if not isinstance(line, str) else line)
            except (ValueError, UnicodeDecodeError):
                return None
        except ValueError:
            return None
    if isinstance(value, dict):
        return value
    if not value and not isinstance(value, list):  # JavaScript arrays are truthy, even []
        return None
    return NonObjectLine(value)


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
# The C string scanner json.loads uses (same escapes, same errors); it is public in the json
# package, but typeshed does not list it, hence the ignore with its declared type here.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # pyright: ignore[reportAttributeAccessIssue]


def _skip_blanks(text: str, i: int) -> int:
    """The index of the first character at or after ``i`` that is not JSON white space."""
    blanks = _WHITESPACE.match(text, i)
    return blanks.end() if blanks is not None else i  # (the pattern also matches nothing)


def loads_iterative(text: str) -> Any:
    """JSON.parse with an explicit stack: any depth, the same values as ``json.loads``."""
    ws = _skip_blanks
    n = len(text)
    i = ws(text, 0)
    stack: list[list[Any]] = []  # [container, pending key] for each open container
    while True:
        if i >= n:
            raise ValueError("unexpected end of JSON")
        c = text[i]
        if c == "{":
            i = ws(text, i + 1)
            if i < n and text[i] == "}":
                value: Any = {}
                i += 1
            else:
                key, i = _object_key(text, i)
                stack.append([{}, key])
                continue
        elif c == "[":
            i = ws(text, i + 1)
            if i < n and text[i] == "]":
                value = []
                i += 1
            else:
                stack.append([[], None])
                continue
        elif c == '"':
            value, i = _scanstring(text, i + 1, True)
        else:
            match = _NUMBER.match(text, i)
            if match is not None:
                integer, fraction, exponent = match.groups()
                value = float(integer + (fraction or "") + (exponent or "")) if fraction or exponent else int(integer)
                i = match.end()
            else:
                for word, literal in _LITERALS.items():
                    if text.startswith(word, i):
                        value = literal
                        i += len(word)
                        break
                else:
                    raise ValueError(f"unexpected character at {i}")
        # A value is complete: store it in its container, closing containers that end here.
        while True:
            i = ws(text, i)
            if not stack:
                if i != n:
                    raise ValueError(f"extra data at {i}")
                return value
            frame = stack[-1]
            container = frame[0]
            if container.__class__ is dict:
                container[frame[1]] = value
                closer = "}"
            else:
                container.append(value)
                closer = "]"
            if i >= n:
                raise ValueError("unexpected end of JSON")
            c = text[i]
            if c == ",":
                i = ws(text, i + 1)
                if closer == "}":
                    frame[1], i = _object_key(text, i)
                break
            if c != closer:
                raise ValueError(f"expected ',' or {closer!r} at {i}")
            stack.pop()
            value = container
            i += 1


def _object_key(text: str, i: int) -> tuple[str, int]:
    """Read ``"key" :`` at ``i``; return the key and the index of the value after it."""
    if i >= len(text) or text[i] != '"':
        raise ValueError(f"expected a property name at {i}")
    key, i = _scanstring(text, i + 1, True)
    i = _skip_blanks(text, i)
    if i >= len(text) or text[i] != ":":
        raise ValueError(f"expected ':' at {i}")
    return key, _skip_blanks(text, i + 1)


def js_json(value: Any) -> str:
    """``JSON.stringify(value)`` as text: compact, non-ASCII kept raw, ``1.0`` written ``1``,
    lone surrogates escaped, any depth."""
    return dumps(value).decode("utf-8")
