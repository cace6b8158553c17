"""String helpers that measure and cut text the way JavaScript does (UTF-16 code units)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# The JavaScript string helpers live in _js; they are re-exported here for existing callers.
from pi_lab.session._js import JS_WHITESPACE, js_len, js_slice, js_trim

__all__ = [
    "js_len",
    "js_slice",
    "js_trim",
    "content_text",
    "text_blocks",
    "content_preview",
    "field_text",
    "safe_repr",
    "JS_WHITESPACE",
]


def content_text(content: Any, separator: str = "") -> str:
    """The text of message content: a string as it is, or its text blocks joined.

    pi joins text blocks with nothing for user text and editor text, with a newline for
    system prompts and assistant text, and with a space in session listings; images, tool
    calls and thinking blocks contribute nothing.
    """
    if isinstance(content, str):
        return content
    return separator.join(block["text"] for block in text_blocks(content) if isinstance(block.get("text"), str))


def text_blocks(content: Any) -> Iterator[dict[str, Any]]:
    """The ``text`` blocks of message content given as a list of blocks, in order (none for
    a string or any other value); what each reader takes from a block is its own rule."""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                yield block


def content_preview(content: Any, separator: str = " ", *, thinking_text: bool = False) -> str:
    """A readable rendering of message content for previews (CLI, widget, teaching printouts).

    Text blocks as they are, tool calls as ``→ name({compact JSON arguments})``, thinking as
    ``[thinking]`` (or ``(thinking) …`` with its text), images and other blocks as ``[kind]``.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    from pi_lab.session._json import dumps

    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            if isinstance(block.get("text"), str):
                parts.append(block["text"])
        elif kind == "toolCall":
            try:
                arguments = dumps(block.get("arguments", {})).decode("utf-8")
            except (TypeError, ValueError):
                arguments = repr(block.get("arguments"))
            parts.append(f"→ {field_text(block.get('name'))}({arguments})")
        elif kind == "thinking":
            text = block.get("thinking")
            parts.append(f"(thinking) {text}" if thinking_text and isinstance(text, str) else "[thinking]")
        elif kind is not None:
            parts.append(f"[{field_text(kind)}]")
    return separator.join(parts)


def field_text(value: Any) -> str:
    """A field as text: scalars as Python shows them, a list or object as compact JSON
    (written iteratively: ``str`` of a 3,000-level list would recurse)."""
    if isinstance(value, (list, dict)):
        from pi_lab.session._json import js_json

        return js_json(value)
    return str(value)


# How deep safe_repr shows nested lists and objects before it cuts them with "…".
_SAFE_REPR_DEPTH = 8


def _scalar_repr(value: Any, limit: int) -> str:
    """repr of one non-container value, bounded by ``limit`` characters of output."""
    if isinstance(value, str):
        # Cut before repr: repr of a 10 MB string would cost its full size. Python's repr
        # already writes a lone surrogate as a \\udXXX escape.
        text = repr(value[: limit + 1])
        return text if len(value) <= limit else text[:-1] + "…" + text[-1]
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        # repr of an int past Python's digit limit raises ValueError; bit_length is cheap.
        if value.bit_length() > 4 * limit:
            return f"<int of {value.bit_length()} bits>"
        return repr(value)
    try:
        text = repr(value)
    except Exception:  # an object whose own repr fails or recurses: show its type
        text = f"<{type(value).__name__}>"
    if not isinstance(text, str):
        text = f"<{type(value).__name__}>"
    return text


def safe_repr(value: Any, limit: int = 80) -> str:
    """A short, Python-style repr of any value for error messages; never raises.

    Walks lists and objects with an explicit stack (a 3,000-level id would make ``repr``
    raise RecursionError), shows containers deeper than a few levels as ``[…]``/``{…}``,
    writes lone surrogates as escapes, and stops after ``limit`` characters with "…".
    """
    try:
        limit = max(int(limit), 1)
        out: list[str] = []
        size = 0
        # Each frame: a pending text token, or (iterator, is_dict, depth, first) for an open container.
        stack: list[Any] = [("value", value, 0)]
        while stack and size <= limit:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                size += len(item)
                continue
            if item[0] == "value":
                _, current, depth = item
                if isinstance(current, (list, tuple, dict)):
                    is_dict = isinstance(current, dict)
                    opening, closing = ("{", "}") if is_dict else ("[", "]") if isinstance(current, list) else ("(", ")")
                    if depth >= _SAFE_REPR_DEPTH and len(current):
                        token = opening + "…" + closing
                        out.append(token)
                        size += len(token)
                        continue
                    if closing == ")" and len(current) == 1:
                        closing = ",)"  # a one-item tuple, as repr writes it
                    out.append(opening)
                    size += 1
                    stack.append(closing)
                    stack.append(("open", iter(current.items() if isinstance(current, dict) else current), is_dict, depth + 1, True))
                else:
                    token = _scalar_repr(current, limit - size + 1)
                    out.append(token)
                    size += len(token)
                continue
            _, iterator, is_dict, depth, first = item
            try:
                element = next(iterator)
            except StopIteration:
                continue  # the closing bracket is next on the stack
            stack.append(("open", iterator, is_dict, depth, False))
            if is_dict:
                key, element = element
                stack.append(("value", element, depth))
                stack.append(": ")
                stack.append(("value", key, depth))
            else:
                stack.append(("value", element, depth))
            if not first:
                stack.append(", ")
        text = "".join(out)
        if stack or len(text) > limit:
            text = text[: limit - 1] + "…"
        return text
    except Exception:  # never let a message builder hide the real error
        return f"<{type(value).__name__}>"
