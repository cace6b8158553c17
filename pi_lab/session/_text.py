"""String helpers that measure and cut text the way JavaScript does (UTF-16 code units)."""

from __future__ import annotations

from typing import Any

# The JavaScript string helpers live in _js; they are re-exported here for existing callers.
from pi_lab.session._js import JS_WHITESPACE, js_len, js_slice, js_trim

__all__ = ["js_len", "js_slice", "js_trim", "content_text", "content_preview", "field_text", "JS_WHITESPACE"]


def content_text(content: Any, separator: str = "") -> str:
    """The text of message content: a string as it is, or its text blocks joined.

    pi joins text blocks with nothing for user text and editor text, with a newline for
    system prompts and assistant text, and with a space in session listings; images, tool
    calls and thinking blocks contribute nothing.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


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
        from pi_lab.session._js import js_json

        return js_json(value)
    return str(value)
