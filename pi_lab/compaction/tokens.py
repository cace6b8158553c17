"""Token accounting (compaction.md §2).

Every length is a JavaScript string length, i.e. UTF-16 code units, so that estimates equal
pi's on the same input. Tool-call arguments are measured as ``JSON.stringify`` output.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from pi_lab.compaction.settings import settings_value
from pi_lab.session._json import dumps, js_json
from pi_lab.session._text import js_len

__all__ = [
    "IMAGE_CHARS",
    "js_len",
    "js_json",
    "estimate_tokens",
    "assistant_chars",
    "calculate_context_tokens",
    "usage_anchor",
    "get_last_assistant_usage",
    "ContextUsageEstimate",
    "estimate_context_tokens",
    "estimate_projected_context_tokens",
    "source_entry_id",
    "should_compact",
]

IMAGE_CHARS = 4800  # an image is estimated as 4800 characters = 1200 tokens


def _json_len(value: Any) -> int:
    raw = None
    if value.__class__ is dict:
        # Tool-call arguments are mostly flat objects of strings and integers: orjson writes
        # those exactly as JSON.stringify does (no float whose text could differ), so the
        # writer's scan of the output for floats is not needed. Anything orjson refuses (a
        # lone surrogate, an integer past 64 bits) goes through the writer.
        for item in value.values():
            kind = item.__class__
            if kind is not str and kind is not int and kind is not bool and item is not None:
                break
        else:
            try:
                raw = orjson.dumps(value)
            except (TypeError, orjson.JSONEncodeError):
                raw = None
    if raw is None:
        raw = dumps(value)
    if raw.isascii():
        return len(raw)
    return js_len(raw.decode("utf-8"))


# The estimate runs over every message of a branch, so the helpers below avoid per-call
# overhead: exact type checks before the (slow) ABC checks, and no nested function calls for
# the common shapes.


def _text_len(value: Any) -> int:
    if value.__class__ is str:
        return len(value) if value.isascii() else js_len(value)
    return js_len(value) if isinstance(value, str) and value else 0


def _content_chars(content: Any) -> int:
    """Characters of a user/custom/toolResult/system content: string, or text + image blocks."""
    if content.__class__ is str:
        return len(content) if content.isascii() else js_len(content)
    if isinstance(content, str):
        return js_len(content)
    return _blocks_chars(content, assistant=False) if isinstance(content, list) else 0


def assistant_chars(content: Any) -> int:
    """Characters of an assistant content: text, thinking and tool-call blocks (the count
    ``estimate_tokens`` divides by 4; the context composition splits it per block)."""
    return _blocks_chars(content, assistant=True) if isinstance(content, list) else 0


def _blocks_chars(blocks: list[Any], *, assistant: bool) -> int:
    # pi counts text in every role, images only outside assistant messages, thinking and tool
    # calls only inside them; one walk serves both so the rules cannot drift apart.
    # The text of a block is read inline when it is an ASCII string (most are): one function
    # call less per block; any other value takes _text_len, the one rule.
    chars = 0
    for block in blocks:
        if block.__class__ is not dict and not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            chars += len(text) if type(text) is str and text.isascii() else _text_len(text)
        elif not assistant:
            if kind == "image":
                chars += IMAGE_CHARS
        elif kind == "thinking":
            text = block.get("thinking")
            chars += len(text) if type(text) is str and text.isascii() else _text_len(text)
        elif kind == "toolCall":
            chars += _text_len(block.get("name"))
            if "arguments" in block:
                chars += _json_len(block["arguments"])
    return chars


def _system_chars(message: Mapping[str, Any]) -> int:
    chars = _content_chars(message.get("content"))
    sections = message.get("sections")
    if isinstance(sections, Mapping):
        for value in sections.values():
            chars += _text_len(value)
    if message.get("toolsAdded") is not None:
        chars += _json_len(message["toolsAdded"])
    return chars


def estimate_tokens(message: Mapping[str, Any]) -> int:
    """pi's chars/4 estimate of one message, rounded up (compaction.md §2.1)."""
    role = message.get("role")
    if role == "assistant":
        content = message.get("content")
        # A list of blocks (what pi writes) goes straight to the walk: one call less per message.
        chars = _blocks_chars(content, assistant=True) if type(content) is list else assistant_chars(content)
    elif role == "toolResult" or role == "user" or role == "custom":
        content = message.get("content")
        chars = _blocks_chars(content, assistant=False) if type(content) is list else _content_chars(content)
    elif role == "bashExecution":
        chars = _text_len(message.get("command")) + _text_len(message.get("output"))
    elif role == "branchSummary" or role == "compactionSummary":
        chars = _text_len(message.get("summary"))
    elif role == "system":
        chars = _system_chars(message)
    else:
        return 0
    return -(-chars // 4)


_MISSING = object()
_FLOAT_MAX = int(sys.float_info.max)


def _usage_number(usage: Any, key: str, attr: str) -> float:
    """One usage counter with JavaScript arithmetic: absent → NaN (undefined), null → 0."""
    if isinstance(usage, Mapping):
        value = usage.get(key, _MISSING)
    else:
        value = getattr(usage, attr, _MISSING)
    if value is _MISSING:
        return math.nan
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        if -_FLOAT_MAX <= value <= _FLOAT_MAX:
            return value
        # JavaScript reads the digits of an integer past the float range as ±Infinity (a
        # hand-edited counter of 10**400); Python's int would overflow the first division.
        return math.inf if value > 0 else -math.inf
    return math.nan


# The largest integer a JavaScript number holds exactly: what a viewer can show of a counter.
JS_SAFE_MAX = 2**53 - 1


def whole_tokens(value: float) -> int:
    """A token count as a whole number for a viewer or a table: NaN (no count) is 0, and a
    hand-edited counter past the float range (10**400, which reads as Infinity as in JavaScript)
    is the largest exact number, never an OverflowError."""
    if value != value:
        return 0
    if value in (math.inf, -math.inf):
        return JS_SAFE_MAX if value > 0 else -JS_SAFE_MAX
    return int(value)


def calculate_context_tokens(usage: Any) -> int | float:
    """``usage.totalTokens`` when truthy, else input + output + cacheRead + cacheWrite.

    As in pi, a missing counter makes the sum NaN (so such a usage is never a valid anchor);
    files with all four counters but no ``totalTokens`` sum normally.
    """
    if usage is None:
        return 0
    total = _usage_number(usage, "totalTokens", "total_tokens")
    # total != total is NaN's test that also holds for an int past the float range (a counter
    # of 10**400 in a hand-edited file), where math.isnan raises OverflowError.
    if total and total == total:
        return total
    return (
        _usage_number(usage, "input", "input")
        + _usage_number(usage, "output", "output")
        + _usage_number(usage, "cacheRead", "cache_read")
        + _usage_number(usage, "cacheWrite", "cache_write")
    )


def usage_anchor(message: Any) -> Any:
    """The usage of an assistant message if it is a valid anchor (compaction.md §2.3), else None."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return None
    usage = message.get("usage")
    if not usage:
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    if not calculate_context_tokens(usage) > 0:
        return None
    return usage


def call_usage(message: Any) -> Any:
    """``calculate_context_tokens(usage_anchor(message))`` for a message entry's message,
    None when it is no valid usage anchor (not an assistant message, aborted, an error, no
    positive total): what the provider measured for that call.

    Next to :func:`usage_anchor` because it is that rule with a shortcut for the common case:
    a walk along a path (compaction/context_walk.py) asks it for every call."""
    if message.__class__ is dict:
        if message.get("role") != "assistant":
            return None
        usage = message.get("usage")
        if usage.__class__ is dict:
            # Nearly every call: a positive integer total that a float holds, which is then the
            # context tokens; anything else (no total, a float, a bool, a counter past the float
            # range, a message that is another mapping) takes the general rule.
            total = usage.get("totalTokens")
            if total.__class__ is int and 0 < total <= _FLOAT_MAX:
                return None if message.get("stopReason") in ("aborted", "error") else total
    usage = usage_anchor(message)
    return calculate_context_tokens(usage) if usage is not None else None


def get_last_assistant_usage(entries: Sequence[Mapping[str, Any]]) -> Any:
    """Usage of the last valid anchor among ``message`` session entries, or None."""
    for i in range(len(entries) - 1, -1, -1):
        entry = entries[i]
        if entry.get("type") == "message":
            usage = usage_anchor(entry.get("message"))
            if usage is not None:
                return usage
    return None


@dataclass(frozen=True, slots=True)
class ContextUsageEstimate:
    tokens: int | float
    usage_tokens: int | float
    trailing_tokens: int
    last_usage_index: int | None


def estimate_context_tokens(messages: Sequence[Mapping[str, Any]]) -> ContextUsageEstimate:
    """Last valid usage anchor plus the estimate of everything after it (compaction.md §2.4)."""
    for k in range(len(messages) - 1, -1, -1):
        usage = usage_anchor(messages[k])
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing = 0
            for i in range(k + 1, len(messages)):
                trailing += estimate_tokens(messages[i])
            return ContextUsageEstimate(usage_tokens + trailing, usage_tokens, trailing, k)
    total = 0
    for message in messages:
        total += estimate_tokens(message)
    return ContextUsageEstimate(total, 0, total, None)


def _source_of(projected: Any) -> Mapping[str, Any]:
    source = getattr(projected, "source", None)
    if source is None and isinstance(projected, Mapping):
        source = projected.get("sourceEntry", projected.get("source"))
    return source if source is not None else {}


def _messages_of(projected: Any) -> list[Mapping[str, Any]]:
    messages = getattr(projected, "messages", None)
    if messages is None and isinstance(projected, Mapping):
        messages = projected.get("messages")
    return messages or []


def source_entry_id(projection: Any, message_index: int | None) -> Any:
    """The id of the entry that produced ``projection.messages[message_index]`` (None if out of range)."""
    if message_index is None:
        return None
    seen = 0
    for projected in projection.entries:
        messages_of = getattr(projected, "messages", None)
        count = len(messages_of) if messages_of is not None else len(_messages_of(projected))
        if message_index < seen + count:
            return _source_of(projected).get("id")
        seen += count
    return None


def estimate_projected_context_tokens(projection: Any, branch_entries: Sequence[Mapping[str, Any]]) -> ContextUsageEstimate:
    """Context estimate that trusts usage only if measured after the last edit/compaction (§2.5)."""
    messages = projection.messages
    estimate = estimate_context_tokens(messages)
    if estimate.last_usage_index is not None:
        usage_entry_id = source_entry_id(projection, estimate.last_usage_index)
        usage_index = -1
        if usage_entry_id:
            # ids on a branch are unique; the anchor is near the leaf, so search from there
            for i in range(len(branch_entries) - 1, -1, -1):
                if branch_entries[i].get("id") == usage_entry_id:
                    usage_index = i
                    break
        invalidating = -1
        for i in range(len(branch_entries) - 1, -1, -1):
            if branch_entries[i].get("type") in ("context_edit", "compaction"):
                invalidating = i
                break
        if usage_index > invalidating:
            return estimate

    from pi_lab.session.projection import replay_system_state

    system = replay_system_state(messages)
    tokens = estimate_tokens(system) if system is not None else 0
    for message in messages:
        if message.get("role") != "system":
            tokens += estimate_tokens(message)
    return ContextUsageEstimate(tokens, 0, tokens, None)


def should_compact(context_tokens: float, context_window: float, settings: Any) -> bool:
    """True when automatic compaction is on and the context exceeds window − reserve."""
    if not settings_value(settings, "enabled", "enabled", True):
        return False
    reserve = settings_value(settings, "reserve_tokens", "reserveTokens", 16384)
    return context_tokens > context_window - reserve
