"""AnthropicClient against a real loopback server speaking Messages-API SSE."""

from __future__ import annotations

import asyncio
import time

import pytest

from llm.provider_server import (
    Drop,
    EndEarly,
    HttpError,
    ProviderServer,
    Stall,
    StreamFailure,
    Text,
    Thinking,
    ToolUse,
    Truncated,
    Usage,
    anthropic_overflow,
    anthropic_overloaded,
    anthropic_rate_limit,
)
from pi_lab.llm import (
    AnthropicClient,
    Model,
    ModelCost,
    StreamDone,
    StreamError,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    is_context_overflow,
    is_retryable_assistant_error,
)

KEY = "sk-ant-test-fedcba9876543210"
CONTEXT = {"system_prompt": "You are terse.", "messages": [{"role": "user", "content": "hi", "timestamp": 1}]}


def claude(server: ProviderServer, *, reasoning: bool = True, context_window: int = 200000,
           max_tokens: int = 64000) -> Model:
    return Model("anthropic", "claude-test", "anthropic-messages", context_window, max_tokens, reasoning=reasoning,
                 cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
                 base_url=server.anthropic_base_url)


def client(**kwargs: object) -> AnthropicClient:
    return AnthropicClient(KEY, clock=lambda: 1_700_000_000_000, **kwargs)


def events_of(model: Model, context: dict = CONTEXT, **options: object) -> list:
    async def run() -> list:
        return [event async for event in client().stream(model, context, **options)]
    return asyncio.run(run())


# --- success paths ----------------------------------------------------------------------------

def test_text_reply_with_cache_usage(provider_server: ProviderServer) -> None:
    provider_server.push(Text("Hi. How can I help?", usage=Usage(input=50, output=9, cache_read=1000,
                                                                    cache_write=200)))
    events = events_of(claude(provider_server))
    assert isinstance(events[0], StreamStart) and isinstance(events[-1], StreamDone)
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "Hi. How can I help?"
    message = events[-1].message
    assert list(message) == ["role", "content", "api", "provider", "model", "responseId", "usage", "stopReason",
                             "timestamp"]
    assert message["content"] == [{"type": "text", "text": "Hi. How can I help?"}]
    assert message["responseId"] == "msg_test_1"
    assert message["stopReason"] == "stop"
    usage = message["usage"]
    # pi-ai 1.6.0 appends cacheWrite1h after the cost object.
    assert list(usage) == ["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost", "cacheWrite1h"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"], usage["totalTokens"]) == (
        50, 9, 1000, 200, 1259)
    assert usage["cacheWrite1h"] == 0
    cost = usage["cost"]
    assert cost["total"] == cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    assert cost["totalFromProvider"] is False


def test_request_body_headers_and_default_output_budget(provider_server: ProviderServer) -> None:
    client().complete_sync(claude(provider_server), CONTEXT)
    [request] = provider_server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.body == {
        "model": "claude-test",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi",
                                                   "cache_control": {"type": "ephemeral"}}]}],
        "max_tokens": 64000,  # the API requires one: the model's own limit
        "stream": True,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        "thinking": {"type": "disabled"},  # a reasoning model asked for no thinking
    }


def test_output_budget_is_clamped_to_room_left(provider_server: ProviderServer) -> None:
    # 24000 characters ≈ 6858 tokens (pi-ai counts 3.5 characters a token); margin 4096.
    big = {"system_prompt": None, "messages": [{"role": "user", "content": "x" * 24000, "timestamp": 1}]}
    client().complete_sync(claude(provider_server, reasoning=False, context_window=15000, max_tokens=8000), big)
    client().complete_sync(claude(provider_server, reasoning=False, context_window=6500, max_tokens=8000), big)
    client().complete_sync(claude(provider_server, reasoning=False, context_window=15000, max_tokens=8000), big,
                           max_tokens=7000)
    client().complete_sync(claude(provider_server, reasoning=False, context_window=15000, max_tokens=8000), big,
                           max_tokens=2000)
    budgets = [r.body["max_tokens"] for r in provider_server.requests]
    assert budgets == [15000 - 6858 - 4096, 1, 15000 - 6858 - 4096, 2000]


def test_cache_retention_none_and_long(provider_server: ProviderServer) -> None:
    client().complete_sync(claude(provider_server), CONTEXT, cache_retention="none")
    client(cache_retention="long").complete_sync(claude(provider_server), CONTEXT)
    plain, long = (r.body for r in provider_server.requests)
    assert plain["system"] == [{"type": "text", "text": "You are terse."}]
    assert plain["messages"] == [{"role": "user", "content": "hi"}]
    assert long["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    with pytest.raises(ValueError):
        AnthropicClient(KEY, cache_retention="forever")


def test_thinking_budget_by_level(provider_server: ProviderServer) -> None:
    client().complete_sync(claude(provider_server), CONTEXT, reasoning="medium", max_tokens=4000)
    client().complete_sync(claude(provider_server, max_tokens=4096), CONTEXT, reasoning="high")
    client().complete_sync(claude(provider_server, max_tokens=1500), CONTEXT, reasoning="high")
    client().complete_sync(claude(provider_server), CONTEXT, reasoning="off")
    client().complete_sync(claude(provider_server, reasoning=False), CONTEXT, reasoning="high")
    bodies = [r.body for r in provider_server.requests]
    assert bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 8192, "display": "summarized"}
    assert bodies[0]["max_tokens"] == 12192
    # Output limit 4096 cannot hold 16384 thinking tokens: the budget leaves 1024 for the answer.
    assert (bodies[1]["thinking"]["budget_tokens"], bodies[1]["max_tokens"]) == (3072, 4096)
    assert (bodies[2]["thinking"]["budget_tokens"], bodies[2]["max_tokens"]) == (1500 - 1024, 1500)
    assert bodies[3]["thinking"] == {"type": "disabled"}
    assert "thinking" not in bodies[4]


def test_signed_thinking_block(provider_server: ProviderServer) -> None:
    provider_server.push(Thinking("Consider the options.", "Option B.", signature="EqQBCkYIBxgCKkDsig"))
    events = events_of(claude(provider_server), reasoning="high")
    assert "".join(e.delta for e in events if isinstance(e, ThinkingDelta)) == "Consider the options."
    assert events[-1].message["content"] == [
        {"type": "thinking", "thinking": "Consider the options.", "thinkingSignature": "EqQBCkYIBxgCKkDsig"},
        {"type": "text", "text": "Option B."},
    ]


def test_tool_use_reply(provider_server: ProviderServer) -> None:
    provider_server.push(ToolUse("edit", {"path": "a.py", "old": "x", "new": "y"}, id="toolu_01A", text="Editing."))
    tool = {"name": "edit", "description": "Edit a file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
    events = events_of(claude(provider_server), tools=[tool])
    [call] = [e for e in events if isinstance(e, ToolCallEvent)]
    message = events[-1].message
    assert message["stopReason"] == "toolUse"
    assert call.tool_call == {"type": "toolCall", "id": "toolu_01A", "name": "edit",
                              "arguments": {"path": "a.py", "old": "x", "new": "y"}}
    assert message["content"][0] == {"type": "text", "text": "Editing."}
    assert provider_server.requests[0].body["tools"] == [{
        "name": "edit", "description": "Edit a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]


def test_history_encoding_thinking_tools_and_results(provider_server: ProviderServer) -> None:
    context = {"system_prompt": None, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "fix it"}], "timestamp": 1},
        {"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-test",
         "content": [{"type": "thinking", "thinking": "plan", "thinkingSignature": "sig1"},
                     {"type": "thinking", "thinking": "[redacted]", "thinkingSignature": "opaque", "redacted": True},
                     {"type": "toolCall", "id": "call|odd/id", "name": "read", "arguments": {"path": "a.py"}},
                     {"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "b.py"}}],
         "usage": {}, "stopReason": "toolUse", "timestamp": 2},
        {"role": "toolResult", "toolCallId": "call|odd/id", "toolName": "read",
         "content": [{"type": "text", "text": "A"}], "isError": False, "timestamp": 3},
        {"role": "toolResult", "toolCallId": "c2", "toolName": "read",
         "content": [{"type": "text", "text": "missing"}], "isError": True, "timestamp": 4},
    ]}
    client().complete_sync(claude(provider_server), context, cache_retention="none")
    assert provider_server.requests[0].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "call_odd_id", "name": "read", "input": {"path": "a.py"}},
            {"type": "tool_use", "id": "c2", "name": "read", "input": {"path": "b.py"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_odd_id", "content": [{"type": "text", "text": "A"}],
             "is_error": False},
            {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "missing"}],
             "is_error": True}]},
    ]


def test_max_tokens_stop_is_length(provider_server: ProviderServer) -> None:
    provider_server.push(Truncated("Partial", usage=Usage(output=64000)))
    message = client().complete_sync(claude(provider_server), CONTEXT)
    assert message["stopReason"] == "length"
    assert message["usage"]["output"] == 64000


# --- failures ---------------------------------------------------------------------------------

def test_prompt_too_long_is_an_overflow(provider_server: ProviderServer) -> None:
    provider_server.push(anthropic_overflow(213000, 200000))
    message = client().complete_sync(claude(provider_server), CONTEXT)
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == (
        '400 {"type":"error","error":{"type":"invalid_request_error",'
        '"message":"prompt is too long: 213000 tokens > 200000 maximum"}}'
    )
    assert is_context_overflow(message, 200000) is True
    assert is_retryable_assistant_error(message) is False


def test_overloaded_and_rate_limited_are_retryable(provider_server: ProviderServer) -> None:
    provider_server.push(anthropic_overloaded(), anthropic_rate_limit())
    overloaded = client().complete_sync(claude(provider_server), CONTEXT)
    limited = client().complete_sync(claude(provider_server), CONTEXT)
    assert overloaded["errorMessage"].startswith("529 ")
    assert limited["errorMessage"].startswith("429 ")
    for message in (overloaded, limited):
        assert is_retryable_assistant_error(message) is True
        assert is_context_overflow(message) is False


def test_overloaded_event_inside_the_stream(provider_server: ProviderServer) -> None:
    provider_server.push(StreamFailure("overloaded_error", "Overloaded"))
    message = client().complete_sync(claude(provider_server), CONTEXT)
    assert message["stopReason"] == "error"
    assert "overloaded_error" in message["errorMessage"]
    assert is_retryable_assistant_error(message) is True


def test_dropped_connection_is_retryable(provider_server: ProviderServer) -> None:
    provider_server.push(Drop("I was say"))
    message = client().complete_sync(claude(provider_server), CONTEXT)
    assert message["stopReason"] == "error"
    assert message["content"] == [{"type": "text", "text": "I was say"}]
    assert message["errorMessage"].startswith("terminated")
    assert is_retryable_assistant_error(message) is True


def test_stream_without_message_stop_is_retryable(provider_server: ProviderServer) -> None:
    provider_server.push(EndEarly())
    message = client().complete_sync(claude(provider_server), CONTEXT)
    assert message["errorMessage"] == "Anthropic stream ended before message_stop"
    assert is_retryable_assistant_error(message) is True


def test_cancel_ends_the_stream_as_aborted(provider_server: ProviderServer) -> None:
    provider_server.push(Stall(seconds=10))

    async def run() -> tuple[list, float]:
        cancel = asyncio.Event()
        asyncio.get_running_loop().call_later(0.2, cancel.set)
        started = time.monotonic()
        events = [e async for e in client().stream(claude(provider_server), CONTEXT, cancel=cancel)]
        return events, time.monotonic() - started

    events, elapsed = asyncio.run(run())
    assert isinstance(events[-1], StreamError)
    assert events[-1].message["stopReason"] == "aborted"
    assert elapsed < 3


def test_key_never_appears_in_repr_or_messages(provider_server: ProviderServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    provider_server.push(HttpError(401, {"type": "error", "error": {"type": "authentication_error",
                                                                     "message": f"invalid x-api-key {KEY}"}}))
    the_client = client()
    assert KEY not in repr(the_client)
    events = events_of(claude(provider_server))
    assert all(KEY not in repr(e) for e in events)
    assert "***" in events[-1].message["errorMessage"]
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    missing = AnthropicClient().complete_sync(claude(provider_server), CONTEXT)
    assert missing["errorMessage"].startswith("No API key for provider: anthropic")
    assert len(provider_server.requests) == 1  # no request without a key


def test_refusal_and_unknown_stop_reasons_are_errors(provider_server: ProviderServer) -> None:
    provider_server.push(Text("I can't", stop_reason="refusal"),
                         Text("and then", stop_reason="model_context_window_exceeded"),
                         Text("ok", stop_reason="pause_turn"))
    refusal = client().complete_sync(claude(provider_server), CONTEXT)
    window = client().complete_sync(claude(provider_server), CONTEXT)
    paused = client().complete_sync(claude(provider_server), CONTEXT)
    assert (refusal["stopReason"], refusal["errorMessage"]) == ("error", "The model refused to complete the request")
    assert window["errorMessage"] == "Unhandled stop reason: model_context_window_exceeded"
    assert is_context_overflow(window) is True  # as pi: the raw reason matches an overflow pattern
    assert paused["stopReason"] == "stop"


def test_reported_thinking_tokens_become_reasoning(provider_server: ProviderServer) -> None:
    provider_server.push(Thinking("deep thought", "42", usage=Usage(input=10, output=300, reasoning=250)))
    usage = client().complete_sync(claude(provider_server), CONTEXT, reasoning="low")["usage"]
    assert list(usage)[-2:] == ["cacheWrite1h", "reasoning"]
    assert (usage["output"], usage["reasoning"]) == (300, 250)


def test_tool_arguments_with_raw_newlines_are_accepted(provider_server: ProviderServer) -> None:
    provider_server.push(ToolUse("write", {}, raw_arguments='{"path": "a.txt", "content": "line 1\nline 2"}'))
    [call] = client().complete_sync(claude(provider_server), CONTEXT)["content"]
    assert call["arguments"] == {"path": "a.txt", "content": "line 1\nline 2"}
    assert "argumentsError" not in call
