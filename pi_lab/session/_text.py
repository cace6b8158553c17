"""String helpers that measure and cut text the way JavaScript does (UTF-16 code units)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["js_len", "js_slice", "js_trim", "content_text", "content_preview", "JS_WHITESPACE"]

# ECMAScript WhiteSpace and LineTerminator: what String.prototype.trim removes. Python's
# str.strip() differs (it strips U+001C–U+001F and U+0085, keeps U+FEFF).
JS_WHITESPACE = (
    "\t\n\u000b\u000c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_NON_BMP = re.compile("[\U00010000-\U0010ffff]")


def js_len(text: str) -> int:
    """``text.length`` in JavaScript: characters outside the BMP count twice."""
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
    return text.strip(JS_WHITESPACE)


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
            parts.append(f"→ {block.get('name')}({arguments})")
        elif kind == "thinking":
            text = block.get("thinking")
            parts.append(f"(thinking) {text}" if thinking_text and isinstance(text, str) else "[thinking]")
        elif kind is not None:
            parts.append(f"[{kind}]")
    return separator.join(parts)
