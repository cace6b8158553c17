"""Keys through the whole agent, over real HTTP: a key the provider echoes in one-character
deltas reaches neither the session file nor an event, and a key no header can carry ends the
turn with an error on the assistant message instead of an exception out of `prompt`."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from llm.provider_server import Pieces, ProviderServer

from pi_lab.agent import AgentSession
from pi_lab.compaction import RetryPolicy
from pi_lab.llm import AnthropicClient, Model, OpenAIClient, TextDelta, ThinkingDelta
from pi_lab.session import SessionManager

KEY = "sk-proj-Xq7LmN2pR9sT4vW8yZ1bC5dF3gH6jK0aE2iO7uY4"


@pytest.fixture
def server():
    with ProviderServer() as s:
        yield s


def make(tmp_path, server, api, key):
    if api == "openai":
        model = Model("openai", "gpt-test", "openai-completions", 128000, 8192, base_url=server.openai_base_url)
        client = OpenAIClient(key, base_url=server.openai_base_url)
    else:
        model = Model("anthropic", "claude-test", "anthropic-messages", 200000, 8192, base_url=server.anthropic_base_url)
        client = AnthropicClient(key, base_url=server.anthropic_base_url)
    sm = SessionManager.create("/repo", tmp_path / "s")
    agent = AgentSession(sm, model=model, client=client, retry=RetryPolicy(base_delay_ms=1))
    events: list[dict] = []
    agent.subscribe(events.append)
    return sm, agent, events


def key_pieces(text: str, length: int = 4) -> list[str]:
    """Every piece of KEY of `length` characters found in `text`."""
    return sorted({KEY[i:i + length] for i in range(len(KEY) - length + 1) if KEY[i:i + length] in text})


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_key_echoed_one_character_at_a_time_stays_out_of_the_session(tmp_path, server, api):
    """The report: `sk-proj-Xq7` in the session file and in `message_update` events."""
    sm, agent, events = make(tmp_path, server, api, KEY)
    server.push(Pieces((("thinking", tuple(f"the key was {KEY}")), ("text", tuple(f"Echo: {KEY}.")))))
    asyncio.run(agent.prompt("what is my key?"))
    assistant = sm.get_branch()[-1]["message"]
    assert [b.get("text", b.get("thinking")) for b in assistant["content"]] == ["the key was ***", "Echo: ***."]
    with open(sm.session_file, encoding="utf-8") as handle:
        on_disk = handle.read()
    assert "Echo: ***." in on_disk
    updates = [e["event"] for e in events if e["type"] == "message_update"]
    shown = "".join(u.delta for u in updates if isinstance(u, (TextDelta, ThinkingDelta)))
    assert shown == "the key was ***Echo: ***."
    everything = on_disk + repr(events) + orjson.dumps(assistant).decode()
    assert key_pieces(everything) == []


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_key_with_a_smart_quote_ends_the_turn_with_an_error(tmp_path, server, api, monkeypatch):
    """The report: `UnicodeEncodeError` out of `AgentSession.prompt`, the user message saved with
    no reply. A key read from the environment at request time ends as an error message."""
    variable = "OPENAI_API_KEY" if api == "openai" else "ANTHROPIC_API_KEY"
    monkeypatch.setenv(variable, "\u201c" + KEY + "\u201d")
    sm, agent, events = make(tmp_path, server, api, None)
    asyncio.run(agent.prompt("hello"))
    user, assistant = (e["message"] for e in sm.get_branch()[-2:])
    assert user["role"] == "user" and assistant["role"] == "assistant"
    assert assistant["stopReason"] == "error"
    assert assistant["errorMessage"].startswith(
        f"The API key from {variable} has a non-ASCII character (U+201C LEFT DOUBLE QUOTATION MARK) as its 1st character;")
    assert key_pieces(assistant["errorMessage"]) == []
    assert not [e for e in events if e["type"].startswith("auto_retry")]  # retrying cannot help
    assert server.requests == []
    # once the variable is right, the same agent answers
    monkeypatch.setenv(variable, KEY + "\n")
    asyncio.run(agent.prompt("hello again"))
    assert sm.get_branch()[-1]["message"]["stopReason"] == "stop"
