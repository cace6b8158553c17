"""Rough token counts, the two ways pi estimates them.

* `estimate_request_tokens` — chars / 4 rounded up, the coding agent's heuristic (the compaction
  module has the authoritative per-message version). The offline model reports it as usage.
* `estimate_context_tokens` / `clamp_max_tokens_to_context` — pi-ai 1.6.0's request-side
  estimate (chars / 3.5, anchored on the last valid assistant usage) and the output budget it
  derives from it when a request leaves `max_tokens` to the provider layer.

Lengths are JavaScript string lengths (UTF-16 code units); JSON is compact and not ASCII-escaped.
"""

from __future__ import annotations

import math
from typing import Any

from pi_lab.session._js import js_len
from pi_lab.session._json import js_json
from pi_lab.session._text import content_text

__all__ = [
    "IMAGE_CHARS",
    "clamp_max_tokens_to_context",
    "estimate_context_tokens",
    "estimate_request_tokens",
    "estimate_text_tokens",
    "message_chars",
    "utf16_len",
]

# pi counts an image as 4800 characters (1200 tokens).
IMAGE_CHARS = 4800


def utf16_len(text: str) -> int:
    """Length of `text` in UTF-16 code units (JavaScript's `string.length`; a lone
    surrogate counts one unit, as in JavaScript)."""
    return js_len(text)


def compact_json(value: Any) -> str:
    """`JSON.stringify(value)`: no spaces, non-ASCII kept as is, `1.0` written `1`."""
    return js_json(value)


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


# --- pi-ai 1.6.0: request-side estimate and output budget ------------------------------------

_CHARS_PER_TOKEN = 3.5
_CONTEXT_SAFETY_TOKENS = 4096
_CONTEXT_SAFETY_RATIO = 0.15
_MIN_OUTPUT_WITH_RATIO_MARGIN = 32768


def _content_text(content: Any) -> str:
    return content_text(content, "\n")


def system_message_text(message: dict[str, Any]) -> str:
    """A system message as prompt text: its content, then its sections, blank-line separated."""
    parts = [_content_text(message.get("content"))]
    sections = message.get("sections")
    if isinstance(sections, dict):
        parts.extend(v for v in sections.values() if isinstance(v, str))
    return "\n\n".join(part for part in parts if part)


def _ceil_tokens(chars: int) -> int:
    return math.ceil(chars / _CHARS_PER_TOKEN)


def _content_chars_pi_ai(content: Any) -> int:
    if isinstance(content, str):
        return utf16_len(content)
    total = 0
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            total += utf16_len(block.get("text") or "")
        else:
            total += IMAGE_CHARS  # pi-ai counts every non-text block like an image
    return total


def _message_tokens_pi_ai(message: dict[str, Any]) -> int:
    role = message.get("role")
    if role == "system":
        tokens = _ceil_tokens(utf16_len(system_message_text(message)))
        for key in ("toolsAdded", "toolsRemoved"):
            if message.get(key):
                tokens += _ceil_tokens(utf16_len(compact_json(message[key])))
        return tokens
    if role in ("user", "toolResult"):
        return _ceil_tokens(_content_chars_pi_ai(message.get("content")))
    chars = 0
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            chars += utf16_len(block.get("text") or "")
        elif block.get("type") == "thinking":
            chars += utf16_len(block.get("thinking") or "")
        else:
            chars += utf16_len(block.get("name") or "") + utf16_len(compact_json(block.get("arguments")))
    return _ceil_tokens(chars)


def _usage_tokens(usage: Any) -> float:
    if not isinstance(usage, dict):
        return 0
    total = usage.get("totalTokens")
    if isinstance(total, (int, float)) and total:
        return total
    return sum(usage.get(k) or 0 for k in ("input", "output", "cacheRead", "cacheWrite"))


def _js_max(a: float, b: Any) -> float:
    # Math.max: NaN (or a missing timestamp) poisons the result.
    if not isinstance(b, (int, float)) or isinstance(b, bool) or math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


def estimate_context_tokens(messages: list[dict[str, Any]]) -> int:
    """pi-ai's estimate of a transcript: the last trustworthy assistant usage plus an estimate
    of what follows it, or an estimate of everything when no usage applies.

    A usage is trustworthy when the assistant did not fail or abort, reported tokens, and no
    message older in the list has a newer timestamp (a summary inserted later invalidates it).
    """
    latest = -math.inf
    anchor: tuple[int, float] | None = None
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            timestamp = message.get("timestamp")
            fresh = isinstance(timestamp, (int, float)) and not math.isnan(latest) and timestamp >= latest
            if fresh and message.get("stopReason") not in ("aborted", "error"):
                tokens = _usage_tokens(message.get("usage"))
                if tokens > 0:
                    anchor = (index, tokens)
        latest = _js_max(latest, message.get("timestamp"))
    if anchor is not None:
        index, tokens = anchor
        return int(tokens + sum(_message_tokens_pi_ai(m) for m in messages[index + 1:]))
    return sum(_message_tokens_pi_ai(m) for m in messages)


def clamp_max_tokens_to_context(context_window: int, input_tokens: int, max_tokens: int) -> int:
    """Fit an output budget into the room the input leaves, with pi-ai's safety margin
    (4096 tokens or 15% of the input; never squeezed below 32768 when the window allows)."""
    if context_window <= 0:
        return max(1, max_tokens)
    margin = max(_CONTEXT_SAFETY_TOKENS, math.ceil(input_tokens * _CONTEXT_SAFETY_RATIO))
    room = context_window - input_tokens - margin
    if room < _MIN_OUTPUT_WITH_RATIO_MARGIN:
        room = min(_MIN_OUTPUT_WITH_RATIO_MARGIN, context_window - input_tokens - _CONTEXT_SAFETY_TOKENS)
    return min(max_tokens, max(1, room))
