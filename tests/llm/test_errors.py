"""Error classification: test-catalogue.md §4 (pi-ai overflow tests) and §5 item 21 (1.6.0)."""

from __future__ import annotations

import pytest

from pi_lab.llm import is_context_overflow, is_recoverable_length, is_retryable_assistant_error
from pi_lab.llm.errors import OVERFLOW_PATTERNS, _js_regex


def error_message(text: str, provider: str = "ollama") -> dict:
    return {
        "role": "assistant",
        "content": [],
        "api": "openai-completions",
        "provider": provider,
        "model": "qwen3.5:35b",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "error",
        "errorMessage": text,
        "timestamp": 0,
    }


def length_stop(input_tokens: int, cache_read: int, output: int) -> dict:
    return {
        "role": "assistant",
        "content": [],
        "api": "openai-completions",
        "provider": "xiaomi",
        "model": "mimo-v2.5-pro",
        "usage": {"input": input_tokens, "output": output, "cacheRead": cache_read, "cacheWrite": 0,
                  "totalTokens": input_tokens + cache_read + output,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "length",
        "timestamp": 0,
    }


# --- §4: detected overflows -------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("400 `prompt too long; exceeded max context length by 100918 tokens`", 32768),  # Ollama
        ("400 The input (516368 tokens) is longer than the model's context length (262144 tokens).", 262144),
        ("Error: 503 litellm.ServiceUnavailableError: litellm.MidStreamFallbackError: litellm.APIConnectionError: "
         "APIConnectionError: OpenAIException - Requested token count exceeds the model's maximum context length "
         "of 131072 tokens.", 131072),
        ("Error: 400 Input length (265330) exceeds model's maximum context length (262144).", 262144),
        ("Provider returned error: Input length 131393 exceeds the maximum allowed input length of 131040 tokens.",
         131072),
        ("400 prompt has 300,123 tokens, but the configured context size is 262,144 tokens", 262144),  # DS4
        ("400 prompt has 300123 tokens, but the configured context size is 262144 tokens", 262144),
    ],
    ids=["ollama", "together", "litellm-openai", "openai-compatible-parens", "openrouter-poolside",
         "ds4-separators", "ds4-plain"],
)
def test_provider_overflow_texts_are_overflows(text: str, window: int) -> None:
    assert is_context_overflow(error_message(text), window) is True


# --- §4: not overflows ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text",
    [
        "500 `model runner crashed unexpectedly`",
        "Throttling error: Too many tokens, please wait before trying again.",
        "Service unavailable: The service is temporarily unavailable.",
        "Rate limit exceeded, please retry after 30 seconds.",
        "Too many requests. Please slow down.",
    ],
    ids=["ollama-crash", "bedrock-throttling", "bedrock-unavailable", "rate-limit", "too-many-requests"],
)
def test_throttling_and_crashes_are_not_overflows(text: str) -> None:
    assert is_context_overflow(error_message(text), 200000) is False


def test_length_stop_with_no_output_and_full_context_is_overflow() -> None:
    assert is_context_overflow(length_stop(58, 1048512, 0), 1048576) is True


def test_length_stop_with_output_is_not_overflow() -> None:
    assert is_context_overflow(length_stop(1000, 0, 4096), 200000) is False


def test_zero_output_length_stop_far_below_window_is_not_overflow() -> None:
    assert is_context_overflow(length_stop(100, 0, 0), 200000) is False


@pytest.mark.parametrize(
    ("output", "desired", "expected"),
    [(16, 128000, True), (1024, 1024, False), (0, 128000, True)],
)
def test_recoverable_length(output: int, desired: int, expected: bool) -> None:
    assert is_recoverable_length(length_stop(100, 0, output), desired) is expected


def test_recoverable_length_needs_a_length_stop_and_a_positive_budget() -> None:
    stop = {**length_stop(100, 0, 16), "stopReason": "stop"}
    assert is_recoverable_length(stop, 128000) is False
    assert is_recoverable_length(length_stop(100, 0, 16), 0) is False


# --- other overflow signals -------------------------------------------------------------------

def test_silent_overflow_when_input_exceeds_window() -> None:
    message = {**length_stop(150000, 60000, 10), "stopReason": "stop"}
    assert is_context_overflow(message, 200000) is True
    assert is_context_overflow(message, None) is False  # needs a window
    assert is_context_overflow(message, 0) is False


def test_usage_must_fill_99_percent_of_window_for_length_overflow() -> None:
    assert is_context_overflow(length_stop(198000, 0, 0), 200000) is True
    assert is_context_overflow(length_stop(197999, 0, 0), 200000) is False


def test_error_text_requires_error_stop_reason() -> None:
    message = {**error_message("prompt is too long: 213000 tokens > 200000 maximum"), "stopReason": "stop"}
    assert is_context_overflow(message) is False


@pytest.mark.parametrize(
    "text",
    [
        "prompt is too long: 213462 tokens > 200000 maximum",
        '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
        "Your input exceeds the context window of this model",
        "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
        "Please reduce the length of the messages or completion",
        "This endpoint's maximum context length is 128000 tokens. However, you requested about 130000 tokens",
        "the request exceeds the available context size, try increasing it",
        "tokens to keep from the initial prompt is greater than the context length",
        "prompt token count of 140000 exceeds the limit of 128000",
        "invalid params, context window exceeds limit",
        "Your request exceeded model token limit: 262144 (requested: 300000)",
        "Prompt contains 140000 tokens and is too large for model with 131072 maximum context length",
        "model_context_window_exceeded",
        "Range of input length should be [1, 30720]",
        "prompt exceeds max length",
        "Input is too long for requested model.",
        "context_length_exceeded",
        "token limit exceeded",
    ],
)
def test_each_provider_wording_is_an_overflow(text: str) -> None:
    assert is_context_overflow(error_message(text)) is True


def test_cerebras_bare_status_counts_only_for_cerebras() -> None:
    assert is_context_overflow(error_message("400 status code (no body)", provider="cerebras")) is True
    assert is_context_overflow(error_message("413 status code (no body)", provider="cerebras")) is True
    assert is_context_overflow(error_message("400 status code (no body)", provider="openai")) is False


def test_there_are_27_overflow_patterns() -> None:
    assert len(OVERFLOW_PATTERNS) == 27


# --- §5 item 21: 1.6.0 additions --------------------------------------------------------------

def test_http_413_at_the_start_is_an_overflow() -> None:
    assert is_context_overflow(error_message("413 Request Entity Too Large")) is True
    assert is_context_overflow(error_message('github-copilot API error (413): {"error":"too big"}')) is True
    assert is_context_overflow(error_message("413")) is True
    assert is_context_overflow(error_message("413: payload too large")) is True


def test_http_413_in_the_middle_is_not_an_overflow() -> None:
    assert is_context_overflow(error_message("Upstream said Error 413 while proxying")) is False
    assert is_context_overflow(error_message("4130 widgets")) is False


def test_translated_patterns_follow_javascript_semantics() -> None:
    # `$` is the end of input (Python's `$` also matches before a final newline).
    assert _js_regex(r"abc$").search("abc\n") is None
    assert _js_regex(r"abc$").search("abc") is not None
    # `\s` includes Unicode spaces, `\S` excludes them.
    assert _js_regex(r"a\sb").search("a\u00a0b") is not None
    assert _js_regex(r"a\Sb").search("a\u2028b") is None
    # `.` stops at all four line terminators.
    assert _js_regex(r"a.b").search("a\rb") is None
    assert _js_regex(r"a.b").search("a-b") is not None
    # Character classes are copied untouched.
    assert _js_regex(r"[.$]").search("$") is not None
    assert is_context_overflow(error_message("413\u00a0Entity")) is True


def test_litellm_context_window_exceeded_is_an_overflow() -> None:
    assert is_context_overflow(error_message("litellm.ContextWindowExceededError: context window exceeded")) is True


def test_request_id_with_503_inside_is_not_retryable() -> None:
    assert is_retryable_assistant_error(error_message("invalid request (request id 15003)")) is False
    assert is_retryable_assistant_error(error_message("upstream answered 503 Service busy")) is True
    assert is_retryable_assistant_error(error_message("status=503")) is True
    assert is_retryable_assistant_error(error_message("code 5030")) is False


def test_dropped_connections_are_retryable() -> None:
    assert is_retryable_assistant_error(error_message("Connection closed.")) is True
    assert is_retryable_assistant_error(error_message("read ECONNRESET")) is True
    assert is_retryable_assistant_error(error_message("terminated")) is True
    assert is_retryable_assistant_error(error_message("stream ended before message_stop")) is True


def test_zhipu_1308_quota_code_is_not_retryable() -> None:
    text = '429 {"error":{"code":"1308","message":"Usage limit reached, retry after reset"}}'
    assert is_retryable_assistant_error(error_message(text)) is False
    assert is_retryable_assistant_error(error_message('429 {"code": 1308}')) is False
    # 13080 is a different code: only the 429 remains, which is retryable.
    assert is_retryable_assistant_error(error_message('429 {"code":"13080"}')) is True


@pytest.mark.parametrize(
    "text",
    [
        "insufficient_quota: You exceeded your current quota",
        "Monthly usage limit reached",
        "Your credit balance is too low to access the API. Please go to Plans & Billing",
        "429 quota exceeded for this project",
        "GoUsageLimitError: rate limit",
    ],
)
def test_quota_and_billing_are_never_retryable(text: str) -> None:
    assert is_retryable_assistant_error(error_message(text)) is False


@pytest.mark.parametrize(
    "text",
    [
        '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        "429 Rate limit reached for requests",
        "500 Internal server error",
        "Service temporarily unavailable",
        "fetch failed",
        "request to https://api.example.com/v1 failed, reason: socket hang up",
        "getaddrinfo ENOTFOUND api.example.com",
        "Request timed out.",
        "websocket closed",
        "The server is currently experiencing high demand",
        "ResourceExhausted",
    ],
)
def test_transient_failures_are_retryable(text: str) -> None:
    assert is_retryable_assistant_error(error_message(text)) is True


def test_retry_needs_an_error_with_text() -> None:
    assert is_retryable_assistant_error({**error_message("overloaded"), "stopReason": "aborted"}) is False
    assert is_retryable_assistant_error(error_message("")) is False
    no_text = error_message("x")
    del no_text["errorMessage"]
    assert is_retryable_assistant_error(no_text) is False


def test_patterns_use_javascript_character_classes() -> None:
    # `\d` is ASCII in JavaScript: Arabic-Indic digits are not digits.
    assert is_context_overflow(error_message("maximum prompt length is \u0661\u0662\u0663")) is False
    # `.` does not cross a line separator in JavaScript.
    assert is_retryable_assistant_error(error_message("rate\u2028limit")) is False
    assert is_retryable_assistant_error(error_message("rate-limit")) is True
