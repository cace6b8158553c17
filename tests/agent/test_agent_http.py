"""Recovery and retry paths against real HTTP: the loopback server speaking both provider protocols."""

from __future__ import annotations

import asyncio

import pytest
from llm.provider_server import (
    Drop,
    ProviderServer,
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
