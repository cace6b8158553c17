"""Turning LLM messages into the plain text a summariser reads (compaction.md §7.2).

The conversation is sent as text inside one user message, never replayed as chat turns,
so the summarising model describes it instead of continuing it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pi_lab.compaction.tokens import js_json, js_len
from pi_lab.session._text import content_text

__all__ = ["TOOL_RESULT_MAX_CHARS", "serialize_conversation", "truncate_for_summary", "js_object_keys"]

TOOL_RESULT_MAX_CHARS = 2000


_joined_text = content_text


def truncate_for_summary(text: str, max_units: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Keep the first ``max_units`` UTF-16 units (never half a surrogate pair) plus a marker."""
    length = js_len(text)
    if length <= max_units:
        return text
    if text.isascii():
        head = text[:max_units]
    else:
        units = 0
        end = 0
        for ch in text:
            width = 2 if ord(ch) > 0xFFFF else 1
            if units + width > max_units:
                break
            units += width
            end += 1
        head = text[:end]
        # Two lone surrogates that JavaScript would read as one pair.
        if head and "\ud800" <= head[-1] <= "\udbff" and end < len(text) and "\udc00" <= text[end] <= "\udfff":
            head = head[:-1]
    return f"{head}\n\n[... {length - max_units} more characters truncated]"


def _is_array_index(key: str) -> bool:
    # JavaScript lists "array index" keys first, in ascending numeric order.
    if not key or not key.isdigit() or not key.isascii():
        return False
    if len(key) > 1 and key[0] == "0":
        return False
    return int(key) < 2**32 - 1


def js_object_keys(obj: Mapping[str, Any]) -> list[str]:
    """Keys in JavaScript property order: integer-like keys ascending, then insertion order."""
    keys = list(obj.keys())
    index_keys = [k for k in keys if isinstance(k, str) and _is_array_index(k)]
    if not index_keys:
        return keys
    index_keys.sort(key=int)
    return index_keys + [k for k in keys if not (isinstance(k, str) and _is_array_index(k))]


def _format_tool_call(block: Mapping[str, Any]) -> str:
    args = block.get("arguments")
    pairs: list[str] = []
    if isinstance(args, Mapping):
        for key in js_object_keys(args):
            pairs.append(f"{key}={js_json(args[key])}")
    return f"{block.get('name')}({', '.join(pairs)})"


def serialize_conversation(messages: Sequence[Mapping[str, Any]]) -> str:
    """``[User]: …`` / ``[Assistant]: …`` / ``[Assistant tool calls]: …`` / ``[Tool result]: …``.

    Input is LLM messages (the output of ``convert_to_llm``). Thinking is left out; tool
    results are cut to 2000 UTF-16 units; system messages and other roles are omitted.
    """
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = _joined_text(message.get("content"), "")
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            content = message.get("content")
            blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
            if any(b.get("type") == "text" for b in blocks):
                parts.append(f"[Assistant]: {_joined_text(blocks, chr(10))}")
            calls = [_format_tool_call(b) for b in blocks if b.get("type") == "toolCall"]
            if calls:
                parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
        elif role == "toolResult":
            text = _joined_text(message.get("content"), "")
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(text)}")
    return "\n\n".join(parts)
