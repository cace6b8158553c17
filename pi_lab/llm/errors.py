"""Classify failed assistant messages: context overflow, recoverable length stop, retryable error.

The pattern lists are pi-ai 1.6.0's (spec: agent-loop.md §7). pi compiles them as JavaScript
regular expressions with the `i` flag; `_js_regex` translates the few constructs whose meaning
differs in Python so that every pattern accepts exactly the same strings:

* `\\d`, `\\w` are ASCII in JavaScript → compiled with `re.ASCII`;
* `\\s`/`\\S` include Unicode spaces in JavaScript (NBSP, U+2028, BOM, …) → an explicit class;
* `.` excludes all four JavaScript line terminators → `[^\\n\\r\\u2028\\u2029]`;
* `$` (no `m` flag) is only the end of input → `\\Z` (Python's `$` also matches before a final
  newline).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "NON_OVERFLOW_PATTERNS",
    "NON_RETRYABLE_PATTERN",
    "OVERFLOW_PATTERNS",
    "RETRYABLE_PATTERN",
    "is_context_overflow",
    "is_recoverable_length",
    "is_retryable_assistant_error",
]

_JS_SPACE = (
    "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)


def _js_regex(source: str) -> re.Pattern[str]:
    """Compile a JavaScript `/source/i` pattern so that Python matches the same strings."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\" and i + 1 < len(source):
            escaped = source[i + 1]
            if escaped == "s":
                out.append(_JS_SPACE if in_class else f"[{_JS_SPACE}]")
            elif escaped == "S" and not in_class:
                out.append(f"[^{_JS_SPACE}]")
            else:
                out.append(char + escaped)
            i += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif char == "$":
            out.append("\\Z")
        else:
            out.append(char)
        i += 1
    return re.compile("".join(out), re.IGNORECASE | re.ASCII)


# --- context overflow (agent-loop.md §7.1) -------------------------------------------------

NON_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    _js_regex(p)
    for p in (
        r"^(Throttling error|Service unavailable):",
        r"rate limit",
        r"too many requests",
    )
)

OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    _js_regex(p)
    for p in (
        r"prompt (?:is )?too long",  # Anthropic, z.ai
        r"prompt exceeds max length",  # z.ai (China)
        r"request_too_large",  # Anthropic HTTP 413
        r"input is too long for requested model",  # Bedrock
        r"exceeds the context window",  # OpenAI
        r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
        r"context window exceeded",  # LiteLLM pre-call check
        r"input token count.*exceeds the maximum",  # Gemini
        r"maximum prompt length is \d+",  # xAI
        r"reduce the length of the messages",  # Groq
        r"maximum context length is \d+ tokens",  # OpenRouter
        r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",  # OpenRouter/Poolside
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",  # Together
        r"exceeds the limit of \d+",  # GitHub Copilot
        r"exceeds the available context size",  # llama.cpp
        r"greater than the context length",  # LM Studio
        r"context window exceeds limit",  # MiniMax
        r"exceeded model token limit",  # Kimi
        r"too large for model with \d+ maximum context length",  # Mistral
        r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",  # DS4
        r"model_context_window_exceeded",  # z.ai
        r"prompt too long; exceeded (?:max )?context length",  # Ollama
        r"range of input length should be",  # DashScope / Qwen
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",  # any HTTP 413 at the start
    )
)

# Cerebras answers an oversized request with a bare status line and no body.
_CEREBRAS_OVERFLOW = _js_regex(r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)")


def _counter(usage: Any, key: str) -> float | None:
    if not isinstance(usage, dict):
        return None
    value = usage.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def is_context_overflow(message: dict[str, Any], context_window: int | None = None) -> bool:
    """True when `message` shows that the request did not fit the model's context window.

    Three signals: an error text from the overflow list (and none from the rate-limit list);
    a successful answer whose input alone exceeds `context_window` (providers that truncate
    silently); a length stop with no output whose input fills 99% of the window.
    """
    stop_reason = message.get("stopReason")
    error = message.get("errorMessage")
    if stop_reason == "error" and isinstance(error, str) and error:
        if not any(p.search(error) for p in NON_OVERFLOW_PATTERNS):
            if any(p.search(error) for p in OVERFLOW_PATTERNS):
                return True
            if message.get("provider") == "cerebras" and _CEREBRAS_OVERFLOW.search(error):
                return True

    if context_window:
        usage = message.get("usage")
        input_tokens, cache_read = _counter(usage, "input"), _counter(usage, "cacheRead")
        # Missing counters make the JavaScript sum NaN, and every comparison with NaN is false.
        if input_tokens is None or cache_read is None:
            return False
        prompt = input_tokens + cache_read
        if stop_reason == "stop" and prompt > context_window:
            return True
        if (
            stop_reason == "length"
            and _counter(usage, "output") == 0
            and prompt >= context_window * 0.99
        ):
            return True
    return False


def is_recoverable_length(message: dict[str, Any], desired_max_output: int | None) -> bool:
    """A length stop that ended below the output the caller wanted: a sign of context pressure."""
    if message.get("stopReason") != "length" or not desired_max_output or desired_max_output <= 0:
        return False
    output = _counter(message.get("usage"), "output")
    return output is not None and output < desired_max_output


# --- retryable errors (agent-loop.md §7.2) --------------------------------------------------

NON_RETRYABLE_PATTERN = _js_regex(
    "|".join(
        (
            r"GoUsageLimitError",
            r"FreeUsageLimitError",
            r"Monthly usage limit reached",
            r"available balance",
            r"insufficient_quota",
            r"out of budget",
            r"quota exceeded",
            r"billing",
            r"subscription_sharing_usage_limit_exceeded",
            r"subscription_sharing_workplace_individual_usage_limit_exceeded",
            r'"code"\s*:\s*"?1308(?![0-9])',
        )
    )
)

RETRYABLE_PATTERN = _js_regex(
    "|".join(
        (
            r"overloaded",
            r"server_busy",
            r"servers are currently busy",
            r"currently experiencing high demand",
            r"model is at capacity",
            r"rate.?limit",
            r"too many requests",
            r"(?<![a-z0-9])(?:429|500|502|503|504|520|524)(?![a-z0-9])",
            r"service.?(?:is.?)?(?:temporarily.?)?unavailable",
            r"server.?error",
            r"internal.?error",
            r"provider.?returned.?(?:an.?)?error",
            r"exceeded request buffer limit while retrying upstream",
            r"unable to forward upstream",
            r"upstream.?request.?failed",
            r"upstream_stream_read_error",
            r"stream was interrupted",
            r"http/?2 stream failed",
            r"network.?error",
            r"connection.?error",
            r"connection.?refused",
            r"connection.?lost",
            r"connection.?closed",
            r"other side closed",
            r"fetch failed",
            r"request to \S+ failed, reason:",
            r"getaddrinfo",
            r"(?<![a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?![a-z0-9_])",
            r"connection reset by peer",
            r"ENOTFOUND",
            r"EAI_AGAIN",
            r"upstream.?connect",
            r"reset before headers",
            r"socket hang up",
            r"socket connection was closed",
            r"timed? out",
            r"timeout",
            r"terminated",
            r"websocket.?closed",
            r"websocket.?error",
            r"websocket.?connection.?limit.?reached",
            r"ended without",
            r"stream ended before message_stop",
            r"stream ended before a terminal response event",
            r"http2 request did not get a response",
            r"stream disconnected before completion",
            r"cut short after the reply had begun",
            r"pending stream has been canceled",
            r"retry delay",
            r"you can retry your request",
            r"try your request again",
            r"please retry your request",
            r"ResourceExhausted",
            r"subscription_sharing_usage_unavailable",
            r"subscription_sharing_user_unavailable",
        )
    )
)


def is_retryable_assistant_error(message: Mapping[str, Any]) -> bool:
    """True for transient provider failures (overload, rate limit, dropped stream, 5xx…).

    Quota and billing errors are never retryable, whatever else their text says. Callers that
    also check overflow must do so first: an overflow retried as-is would overflow again.
    """
    if message.get("stopReason") != "error":
        return False
    error = message.get("errorMessage")
    if not isinstance(error, str) or not error:
        return False
    return not NON_RETRYABLE_PATTERN.search(error) and bool(RETRYABLE_PATTERN.search(error))
