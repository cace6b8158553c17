"""Rough token counts for requests, the way pi estimates them (chars / 4, rounded up).

Lengths are JavaScript string lengths (UTF-16 code units), JSON is compact and not ASCII-escaped.
The model layer needs these for two things: the offline model's reported usage and the output
budget of a request that leaves `max_tokens` to the provider layer. The compaction module has
its own, authoritative per-message estimate; this one only has to be plausible and stable.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["IMAGE_CHARS", "estimate_request_tokens", "estimate_text_tokens", "message_chars", "utf16_len"]

# pi counts an image as 4800 characters (1200 tokens).
IMAGE_CHARS = 4800


def utf16_len(text: str) -> int:
    """Length of `text` in UTF-16 code units (JavaScript's `string.length`)."""
    return len(text.encode("utf-16-le")) // 2


def compact_json(value: Any) -> str:
    """`JSON.stringify(value)`: no spaces, non-ASCII kept as is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def estimate_text_tokens(text: str) -> int:
    return math.ceil(utf16_len(text) / 4)


def _blocks_chars(content: Any) -> int:
    if isinstance(content, str):
        return utf16_len(content)
    total = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                total += utf16_len(block["text"])
            elif block.get("type") == "image":
                total += IMAGE_CHARS
    return total


def message_chars(message: dict[str, Any]) -> int:
    """Characters pi counts for one LLM message (user, assistant, toolResult, system)."""
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        total = 0
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                total += utf16_len(block.get("text") or "")
            elif kind == "thinking":
                total += utf16_len(block.get("thinking") or "")
            elif kind == "toolCall":
                total += utf16_len(block.get("name") or "")
                total += utf16_len(compact_json(block.get("arguments") or {}))
        return total
    if role == "system":
        total = _blocks_chars(content)
        sections = message.get("sections")
        if isinstance(sections, dict):
            total += sum(utf16_len(v) for v in sections.values() if isinstance(v, str) and v)
        if message.get("toolsAdded"):
            total += utf16_len(compact_json(message["toolsAdded"]))
        return total
    if role in ("user", "toolResult", "custom"):
        return _blocks_chars(content)
    return 0


def estimate_request_tokens(
    system_prompt: str | None, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> int:
    """Tokens of a whole request: system prompt, messages and tool definitions."""
    chars = utf16_len(system_prompt or "")
    chars += sum(message_chars(m) for m in messages if isinstance(m, dict))
    if tools:
        chars += utf16_len(compact_json(tools))
    return math.ceil(chars / 4)
