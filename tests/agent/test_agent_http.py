"""Recovery and retry paths against real HTTP: the loopback server speaking both provider protocols."""

from __future__ import annotations

import asyncio
import logging
from email.utils import formatdate

import pytest
from llm.provider_server import (
    Drop,
    EchoHeaders,
    HttpError,
    PartialFailure,
    ProviderServer,
    StreamFailure,
    Text,
    ToolUse,
    Usage,
    anthropic_overflow,
    anthropic_overloaded,
    openai_overflow,
    openai_rate_limit,
)

from pi_lab.agent import AgentSession, tool
from pi_lab.compaction import CompactionSettings, RetryPolicy
from pi_lab.llm import AnthropicClient, Model, OpenAIClient
from pi_lab.llm.redact import MIN_SECRET_RUN
from pi_lab.session import SessionManager


@tool
def read(path: str) -> str:
    """Read a file.

    path: the file
    """
    return f"contents of {path}"


@pytest.fixture
def server():
    with ProviderServer() as s:
        yield s


def make(tmp_path, server, api):
    if api == "openai":
        model = Model("openai", "gpt-test", "openai-completions", context_window=128000, max_tokens=8192,
                      base_url=server.openai_base_url)
        client = OpenAIClient("sk-test-secret", base_url=server.openai_base_url)
    else:
        model = Model("anthropic", "claude-test", "anthropic-messages", context_window=200000, max_tokens=8192,
                      base_url=server.anthropic_base_url)
        client = AnthropicClient("sk-ant-secret", base_url=server.anthropic_base_url)
    sm = SessionManager.create("/repo", tmp_path / "s")
    agent = AgentSession(sm, model=model, client=client, tools=[read], retry=RetryPolicy(base_delay_ms=1),
                         settings=CompactionSettings(keep_recent_tokens=1))
    events = []
    agent.subscribe(events.append)
    return sm, agent, events


def kinds(sm):
    out = []
    for e in sm.get_branch():
        if e["type"] == "message":
            m = e["message"]
            out.append(m["role"] + ("!" if m.get("stopReason") == "error" else ""))
        else:
            out.append(e["type"])
    return out


@pytest.mark.parametrize("api, overflow", [("openai", openai_overflow()), ("anthropic", anthropic_overflow())])
def test_overflow_is_recovered_once_over_http(tmp_path, server, api, overflow):
    sm, agent, events = make(tmp_path, server, api)
    server.push(Text("first answer", usage=Usage(input=100, output=10)))
    asyncio.run(agent.prompt("hello"))
    # the overflowing call, then the summary request, then the retried call
    server.push(overflow, Text("## Goal\nsummary of the hello exchange"), Text("after recovery"))
    asyncio.run(agent.prompt("a much longer request"))
    assert kinds(sm)[-4:] == ["assistant!", "context_edit", "compaction", "assistant"]
    end = [e for e in events if e["type"] == "compaction_end"][-1]
    assert end["reason"] == "overflow" and end["willRetry"] is True
    retried = server.requests[-1].body
    text = str(retried)
    assert "prompt is too long" not in text and "maximum context length" not in text
    assert "The conversation history before this point was compacted" in text
    assert "sk-test-secret" not in str(sm.entries) and "sk-ant-secret" not in str(sm.entries)


@pytest.mark.parametrize("api, fault", [("openai", openai_rate_limit()), ("anthropic", anthropic_overloaded()),
                                        ("openai", Drop())])
def test_transient_failures_are_retried_over_http(tmp_path, server, api, fault):
    sm, agent, events = make(tmp_path, server, api)
    server.push(fault, Text("second try worked"))
    asyncio.run(agent.prompt("hello"))
    assert kinds(sm) == ["model_change", "thinking_level_change", "system", "user", "assistant!", "context_edit", "assistant"]
    assert [e["type"] for e in events if e["type"].startswith("auto_retry")] == ["auto_retry_start", "auto_retry_end"]
    assert len(server.requests) == 2
    second = str(server.requests[1].body)
    assert "second try" not in second  # the failed attempt is not resent


def test_tool_call_round_trip_over_http(tmp_path, server):
    sm, agent, events = make(tmp_path, server, "anthropic")
    server.push(ToolUse("read", {"path": "auth.ts"}), Text("done"))
    asyncio.run(agent.prompt("read auth.ts"))
    assert kinds(sm) == ["model_change", "thinking_level_change", "system", "user", "assistant", "toolResult", "assistant"]
    result = sm.get_branch()[5]["message"]
    assert result["content"][0]["text"] == "contents of auth.ts"
    body = server.requests[1].body
    assert any(block.get("type") == "tool_result" for m in body["messages"] for block in
               (m["content"] if isinstance(m["content"], list) else []))


# --- the provider's Retry-After -------------------------------------------------------------------

NOW_MS = 1_700_000_000_000


def retry_rig(tmp_path, server, policy):
    model = Model("openai", "gpt-test", "openai-completions", context_window=128000, max_tokens=8192,
                  base_url=server.openai_base_url)
    client = OpenAIClient("sk-test-secret", base_url=server.openai_base_url, clock=lambda: NOW_MS)
    sm = SessionManager.create("/repo", tmp_path / "s")
    agent = AgentSession(sm, model=model, client=client, retry=policy)
    events = []
    agent.subscribe(events.append)
    return agent, events


@pytest.mark.parametrize("retry_after", ["1", formatdate(NOW_MS / 1000 + 1, usegmt=True)], ids=["seconds", "date"])
def test_retry_after_is_honoured(tmp_path, server, retry_after):
    agent, events = retry_rig(tmp_path, server, RetryPolicy(base_delay_ms=5))
    server.push(HttpError(429, openai_rate_limit().body, {"Retry-After": retry_after}), Text("after the wait"))
    asyncio.run(agent.prompt("hello"))
    start = [e for e in events if e["type"] == "auto_retry_start"]
    assert [e["delayMs"] for e in start] == [1000]  # not the 5 ms back-off
    gap = server.requests[1].at - server.requests[0].at
    assert 1.0 <= gap < 3.0
    assert agent.messages[-1]["content"][0]["text"] == "after the wait"


def test_retry_after_above_the_limit_falls_back_to_the_back_off(tmp_path, server):
    agent, events = retry_rig(tmp_path, server, RetryPolicy(base_delay_ms=5, max_retry_delay_ms=20000))
    server.push(HttpError(503, {"error": {"message": "Service unavailable"}}, {"Retry-After": "30"}),
                HttpError(429, openai_rate_limit().body, {"retry-after-ms": "40"}), Text("ok"))
    asyncio.run(agent.prompt("hello"))
    assert [e["delayMs"] for e in events if e["type"] == "auto_retry_start"] == [5, 40]
    assert server.requests[2].at - server.requests[1].at >= 0.04


# --- the key never reaches the session file -------------------------------------------------------

KEY = "sk-ant-api03-Zt5yH8kLpQ2wE6rT9uI3oP7aS1dF4gJ0hK8lZ2xC6vB9nM3qW5eR7tY1uI4o"


def key_pieces(text):
    return [KEY[i:i + MIN_SECRET_RUN] for i in range(len(KEY) - MIN_SECRET_RUN + 1) if KEY[i:i + MIN_SECRET_RUN] in text]


def test_an_echoed_key_is_in_no_session_file_event_or_log_after_retries(tmp_path, server, caplog):
    model = Model("anthropic", "claude-test", "anthropic-messages", context_window=200000, max_tokens=8192,
                  base_url=server.anthropic_base_url)
    client = AnthropicClient(KEY, base_url=server.anthropic_base_url)
    sm = SessionManager.create("/repo", tmp_path / "s")
    agent = AgentSession(sm, model=model, client=client, retry=RetryPolicy(max_retries=4, base_delay_ms=1))
    events = []
    agent.subscribe(events.append)
    server.push(
        StreamFailure("overloaded_error", f"Overloaded (key {KEY})"),
        PartialFailure(f"I see {KEY} in my", f"overloaded; key={KEY}", chunks=7, error_type="overloaded_error"),
        HttpError(529, "overloaded " + "x" * 3985 + KEY),
        EchoHeaders(503),  # 503 keeps it retryable
        StreamFailure("overloaded_error", f"Overloaded again {KEY[:30]}"),
    )
    with caplog.at_level(logging.DEBUG):
        asyncio.run(agent.prompt("hello"))
    assert len(server.requests) == 5 and all(r.headers["x-api-key"] == KEY for r in server.requests)
    failed = [e["message"] for e in sm.get_branch() if e["type"] == "message" and e["message"].get("stopReason") == "error"]
    assert len(failed) == 5  # every attempt was persisted, each with its (redacted) error
    assert [e["type"] for e in events].count("auto_retry_start") == 4
    written = sm.session_file
    assert written and key_pieces(open(written, encoding="utf-8").read()) == []
    assert key_pieces(repr(events)) == []
    assert key_pieces("\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)) == []
    assert "***" in failed[0]["errorMessage"] and failed[1]["content"][0]["text"].startswith("I see ")
