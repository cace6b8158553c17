"""OpenAIClient against a real loopback server speaking chat-completions SSE."""

from __future__ import annotations

import asyncio
import socket
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
    openai_context_window_overflow,
    openai_overflow,
    openai_rate_limit,
)
from pi_lab.llm import (
    Model,
    ModelCost,
    OpenAIClient,
    StreamDone,
    StreamError,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    is_context_overflow,
    is_retryable_assistant_error,
)

KEY = "sk-test-0123456789abcdef"
CONTEXT = {"system_prompt": "You are terse.", "messages": [{"role": "user", "content": "hi", "timestamp": 1}]}
READ_TOOL = {"name": "read", "description": "Read a file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}


def gpt(server: ProviderServer, *, reasoning: bool = False) -> Model:
    return Model("openai", "gpt-test", "openai-completions", 128000, 16384, reasoning=reasoning,
                 cost=ModelCost(input=2, output=8, cache_read=0.5), base_url=server.openai_base_url)


def client(**kwargs: object) -> OpenAIClient:
    return OpenAIClient(KEY, clock=lambda: 1_700_000_000_000, **kwargs)


def events_of(server: ProviderServer, model: Model, context: dict = CONTEXT, **options: object) -> list:
    async def run() -> list:
        return [event async for event in client().stream(model, context, **options)]
    return asyncio.run(run())


# --- success paths ----------------------------------------------------------------------------

def test_text_reply_streams_and_builds_a_pi_assistant_message(provider_server: ProviderServer) -> None:
    provider_server.push(Text("Hello there, friend.", usage=Usage(input=100, output=7, cache_read=20)))
    events = events_of(provider_server, gpt(provider_server))

    assert isinstance(events[0], StreamStart) and isinstance(events[-1], StreamDone)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 3 and "".join(d.delta for d in deltas) == "Hello there, friend."
    message = events[-1].message
    assert message is events[0].message  # the live partial message is the final one
    assert list(message) == ["role", "content", "api", "provider", "model", "responseId", "usage", "stopReason",
                             "timestamp"]
    assert message["content"] == [{"type": "text", "text": "Hello there, friend."}]
    assert (message["api"], message["provider"], message["model"]) == ("openai-completions", "openai", "gpt-test")
    assert message["responseId"] == "chatcmpl-test-1"
    assert message["stopReason"] == "stop"
    assert message["timestamp"] == 1_700_000_000_000
    # prompt_tokens 120 includes 20 cached: input 100, cacheRead 20. Costs are the numbers
    # Node computes for (price / 1e6) * tokens.
    assert message["usage"] == {
        "input": 100, "output": 7, "cacheRead": 20, "cacheWrite": 0, "reasoning": 0, "totalTokens": 127,
        "cost": {"input": 0.00019999999999999998, "output": 0.000056, "cacheRead": 0.000009999999999999999,
                 "cacheWrite": 0, "total": 0.00026599999999999996, "totalFromProvider": False},
    }
    assert list(message["usage"]) == ["input", "output", "cacheRead", "cacheWrite", "reasoning", "totalTokens",
                                      "cost"]


def test_request_body_asks_for_usage_and_caps_output_at_the_model_limit(provider_server: ProviderServer) -> None:
    # No max_tokens from the caller: the provider layer sends the model's own limit, fitted
    # into the room left in the context window (pi-ai 1.6.0).
    client().complete_sync(gpt(provider_server), CONTEXT)
    [request] = provider_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 16384,
    }


def test_output_cap_shrinks_when_the_context_is_nearly_full(provider_server: ProviderServer) -> None:
    model = Model("local", "small", "openai-completions", 40000, 16384, base_url=provider_server.openai_base_url)
    context = {"system_prompt": None, "messages": [{"role": "user", "content": "y" * 105000, "timestamp": 1}]}
    client().complete_sync(model, context)  # 30000 estimated tokens in a 40000 window
    assert provider_server.requests[0].body["max_completion_tokens"] == 40000 - 30000 - 4096


def test_official_endpoint_gets_store_false_and_a_prompt_cache_key() -> None:
    model = Model("openai", "gpt-test", "openai-completions", 128000, 16384)
    body = client().build_body(model, CONTEXT, session_id="0190-session")
    assert body["store"] is False and body["prompt_cache_key"] == "0190-session"
    assert "prompt_cache_key" not in client().build_body(model, CONTEXT, session_id="s", cache_retention="none")


def test_explicit_max_tokens_and_reasoning_effort(provider_server: ProviderServer) -> None:
    model = gpt(provider_server, reasoning=True)
    client().complete_sync(model, CONTEXT, max_tokens=500, reasoning="high")
    client().complete_sync(model, CONTEXT, reasoning="xhigh")
    client().complete_sync(model, CONTEXT, reasoning="off")
    client().complete_sync(gpt(provider_server), CONTEXT, reasoning="high")  # not a reasoning model
    client(max_tokens_field="max_tokens").complete_sync(model, CONTEXT, max_tokens=64)
    bodies = [r.body for r in provider_server.requests]
    assert bodies[0]["max_completion_tokens"] == 500 and bodies[0]["reasoning_effort"] == "high"
    assert bodies[0]["messages"][0]["role"] == "developer"  # OpenAI reasoning models
    assert bodies[1]["reasoning_effort"] == "high" and bodies[1]["max_completion_tokens"] == 16384
    assert "reasoning_effort" not in bodies[2]
    assert "reasoning_effort" not in bodies[3]
    assert bodies[4]["max_tokens"] == 64 and "max_completion_tokens" not in bodies[4]


def test_tool_call_reply(provider_server: ProviderServer) -> None:
    provider_server.push(ToolUse("read", {"path": "src/app.py", "limit": 20}, id="call_abc", text="Reading."))
    events = events_of(provider_server, gpt(provider_server), tools=[READ_TOOL])
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert len(calls) == 1
    message = events[-1].message
    assert message["stopReason"] == "toolUse"
    assert message["content"] == [
        {"type": "text", "text": "Reading."},
        {"type": "toolCall", "id": "call_abc", "name": "read", "arguments": {"path": "src/app.py", "limit": 20}},
    ]
    assert calls[0].tool_call is message["content"][1]
    assert provider_server.requests[0].body["tools"] == [
        {"type": "function", "function": {"name": "read", "description": "Read a file",
                                          "parameters": READ_TOOL["parameters"]}}
    ]


def test_tool_history_is_encoded_as_tool_calls_and_tool_messages(provider_server: ProviderServer) -> None:
    context = {"system_prompt": None, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "read it"}], "timestamp": 1},
        {"role": "assistant", "api": "openai-completions", "provider": "openai", "model": "gpt-test",
         "content": [{"type": "text", "text": "Sure."},
                     {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.py"}}],
         "usage": {}, "stopReason": "toolUse", "timestamp": 2},
        {"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
         "content": [{"type": "text", "text": "print(1)"}], "isError": False, "timestamp": 3},
    ]}
    client().complete_sync(gpt(provider_server), context)
    assert provider_server.requests[0].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "read it"}]},
        {"role": "assistant", "content": "Sure.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a.py"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
    ]


def test_reasoning_content_becomes_a_thinking_block(provider_server: ProviderServer) -> None:
    provider_server.push(Thinking("first I think", "then I answer"))
    events = events_of(provider_server, gpt(provider_server, reasoning=True))
    assert "".join(e.delta for e in events if isinstance(e, ThinkingDelta)) == "first I think"
    assert events[-1].message["content"] == [
        {"type": "thinking", "thinking": "first I think", "thinkingSignature": "reasoning_content"},
        {"type": "text", "text": "then I answer"},
    ]


def test_finish_reason_length_is_a_length_stop(provider_server: ProviderServer) -> None:
    provider_server.push(Truncated("The answer is"))
    message = client().complete_sync(gpt(provider_server), CONTEXT)
    assert message["stopReason"] == "length"
    assert message["content"] == [{"type": "text", "text": "The answer is"}]


# --- failures ---------------------------------------------------------------------------------

def test_maximum_context_length_error_is_an_overflow(provider_server: ProviderServer) -> None:
    provider_server.push(openai_overflow())
    message = client().complete_sync(gpt(provider_server), CONTEXT)
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith(
        '400: {"message":"This model\'s maximum context length is 128000 tokens.')
    assert message["errorMessage"].endswith('"code":"context_length_exceeded"}')
    assert list(message)[-2:] == ["errorMessage", "timestamp"]
    assert is_context_overflow(message, 128000) is True
    assert is_retryable_assistant_error(message) is False


def test_exceeds_the_context_window_error_is_an_overflow(provider_server: ProviderServer) -> None:
    provider_server.push(openai_context_window_overflow())
    message = client().complete_sync(gpt(provider_server), CONTEXT)
    assert message["errorMessage"].startswith('400: {"message":"Your input exceeds the context window')
    assert is_context_overflow(message) is True


def test_rate_limit_is_retryable_not_overflow(provider_server: ProviderServer) -> None:
    provider_server.push(openai_rate_limit())
    message = client().complete_sync(gpt(provider_server), CONTEXT)
    assert message["errorMessage"].startswith('429: {"message":"Rate limit reached')
    assert is_retryable_assistant_error(message) is True
    assert is_context_overflow(message) is False


def test_error_without_json_error_object_keeps_status_and_text(provider_server: ProviderServer) -> None:
    provider_server.push(HttpError(502, "<html>Bad gateway</html>"), HttpError(400, ""),
                         HttpError(503, {"detail": "warming up"}), HttpError(500, {"error": "boom"}))
    texts = [client().complete_sync(gpt(provider_server), CONTEXT)["errorMessage"] for _ in range(4)]
    assert texts == ["502 <html>Bad gateway</html>", "400 status code (no body)", '503 {"detail":"warming up"}',
                     '500 "boom"']


def test_connection_dropped_mid_stream_is_retryable_and_keeps_partial_text(provider_server: ProviderServer) -> None:
    provider_server.push(Drop("half an ans"))
    message = client().complete_sync(gpt(provider_server), CONTEXT)
    assert message["stopReason"] == "error"
    assert message["content"] == [{"type": "text", "text": "half an ans"}]
    assert message["errorMessage"].startswith("terminated")
    assert is_retryable_assistant_error(message) is True


def test_stream_ending_without_finish_reason_is_retryable(provider_server: ProviderServer) -> None:
    provider_server.push(EndEarly())
    message = client().complete_sync(gpt(provider_server), CONTEXT)
    assert message["stopReason"] == "error"
    assert is_retryable_assistant_error(message) is True


def test_error_inside_the_stream(provider_server: ProviderServer) -> None:
    provider_server.push(StreamFailure("server_error", "The server is overloaded, please try again later."))
    message = client().complete_sync(gpt(provider_server), CONTEXT)
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "The server is overloaded, please try again later."
    assert is_retryable_assistant_error(message) is True


def test_unreachable_server_is_a_retryable_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = Model("local", "m", "openai-completions", 8000, 1000, base_url=f"http://127.0.0.1:{port}/v1")
    message = client().complete_sync(model, CONTEXT)
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("Connection error")
    assert is_retryable_assistant_error(message) is True


def test_cancel_ends_the_stream_as_aborted(provider_server: ProviderServer) -> None:
    provider_server.push(Stall(seconds=10))

    async def run() -> tuple[list, float]:
        cancel = asyncio.Event()
        asyncio.get_running_loop().call_later(0.2, cancel.set)
        started = time.monotonic()
        events = [e async for e in client().stream(gpt(provider_server), CONTEXT, cancel=cancel)]
        return events, time.monotonic() - started

    events, elapsed = asyncio.run(run())
    assert isinstance(events[-1], StreamError)
    assert events[-1].message["stopReason"] == "aborted"
    assert events[-1].message["errorMessage"] == "Request was aborted"
    assert elapsed < 3


# --- keys -------------------------------------------------------------------------------------

def test_key_never_appears_in_repr_events_or_messages(provider_server: ProviderServer) -> None:
    provider_server.push(HttpError(401, {"error": {"message": f"Incorrect API key provided: {KEY}.",
                                                   "type": "invalid_request_error", "code": "invalid_api_key"}}),
                         Text("fine"))
    the_client = client()
    assert KEY not in repr(the_client) and "api_key=<given>" in repr(the_client)
    events = events_of(provider_server, gpt(provider_server)) + events_of(provider_server, gpt(provider_server))
    for event in events:
        assert KEY not in repr(event)
    assert events[1].message["errorMessage"] == (
        '401: {"message":"Incorrect API key provided: ***.","type":"invalid_request_error","code":"invalid_api_key"}')


def test_key_from_environment(provider_server: ProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-42")
    the_client = OpenAIClient()
    assert "sk-from-env-42" not in repr(the_client)
    the_client.complete_sync(gpt(provider_server), CONTEXT)
    assert provider_server.requests[0].headers["authorization"] == "Bearer sk-from-env-42"


def test_environment_key_is_only_sent_to_openai(provider_server: ProviderServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-42")
    local = Model("local", "m", "openai-completions", 8000, 1000, base_url=provider_server.openai_base_url)
    OpenAIClient().complete_sync(local, CONTEXT)
    assert "authorization" not in provider_server.requests[0].headers


def test_missing_key_for_the_public_endpoint_fails_without_a_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = Model("openai", "gpt-test", "openai-completions", 128000, 16384)
    message = OpenAIClient().complete_sync(model, CONTEXT)
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("No API key for provider: openai")
    assert is_retryable_assistant_error(message) is False


def test_local_server_needs_no_key(provider_server: ProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    message = OpenAIClient().complete_sync(gpt(provider_server), CONTEXT)
    assert message["stopReason"] == "stop"
    assert "authorization" not in provider_server.requests[0].headers


def test_other_finish_reasons_are_errors(provider_server: ProviderServer) -> None:
    provider_server.push(Text("blocked", stop_reason="content_filter"), Text("hm", stop_reason="something_new"))
    filtered = client().complete_sync(gpt(provider_server), CONTEXT)
    unknown = client().complete_sync(gpt(provider_server), CONTEXT)
    assert (filtered["stopReason"], filtered["errorMessage"]) == ("error", "Provider finish_reason: content_filter")
    assert unknown["errorMessage"] == "Provider finish_reason: something_new"
    assert filtered["content"] == [{"type": "text", "text": "blocked"}]


def test_malformed_tool_arguments_are_reported_not_raised(provider_server: ProviderServer) -> None:
    provider_server.push(ToolUse("read", {}, raw_arguments='{"path": "a.py"'), ToolUse("read", {}, raw_arguments="[1]"))
    broken = client().complete_sync(gpt(provider_server), CONTEXT)["content"][0]
    listed = client().complete_sync(gpt(provider_server), CONTEXT)["content"][0]
    assert broken["arguments"] == {} and broken["argumentsError"].endswith('Received arguments:\n{"path": "a.py"')
    assert listed["argumentsError"] == "Tool arguments must be a JSON object\n\nReceived arguments:\n[1]"
