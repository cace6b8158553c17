"""Every model call ends: an overall deadline and an idle limit between events, each a clear,
retryable error, even against a server that keeps the connection warm with keep-alives only."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from llm.provider_server import KeepAlive, Silent, Stall, Trickle
from pi_lab.llm import AnthropicClient, Model, OpenAIClient, is_context_overflow, is_retryable_assistant_error
from pi_lab.llm._http import DEFAULT_DEADLINE, DEFAULT_IDLE_TIMEOUT

CONTEXT = {"messages": [{"role": "user", "content": "hi", "timestamp": 1}]}
# httpx's own read timeout is far away: only our limits can end these streams in time.
SLOW_SOCKET = httpx.Timeout(connect=5.0, read=30.0, write=5.0, pool=5.0)
# The test servers hold a stream for 8 s: a call that ends before this ended by our limit. Well
# below 8 s, and far above the limits (under a second), so a loaded machine does not matter.
ENDED_BY_A_LIMIT = 6.0


def setup(server, api, **limits):
    if api == "openai":
        return (Model("openai", "gpt-test", "openai-completions", 128000, 8192, base_url=server.openai_base_url),
                OpenAIClient("sk-limit-test-key", base_url=server.openai_base_url, timeout=SLOW_SOCKET, **limits))
    return (Model("anthropic", "claude-test", "anthropic-messages", 200000, 8192, base_url=server.anthropic_base_url),
            AnthropicClient("sk-limit-test-key", base_url=server.anthropic_base_url, timeout=SLOW_SOCKET, **limits))


def timed(client, model):
    async def go():
        return [event async for event in client.stream(model, CONTEXT)]
    started = time.monotonic()
    events = asyncio.run(go())
    return events[-1].message, time.monotonic() - started


def assert_retryable(message):
    assert message["stopReason"] == "error"
    assert is_retryable_assistant_error(message)
    assert not is_context_overflow(message, 200000)


@pytest.mark.parametrize("ping_events", [False, True], ids=["comments", "anthropic-pings"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_keep_alive_only_stream_ends_at_the_idle_limit(provider_server, api, ping_events):
    model, client = setup(provider_server, api, idle_timeout=0.4, deadline=None)
    provider_server.push(KeepAlive(seconds=8, interval=0.05, ping_events=ping_events))
    message, elapsed = timed(client, model)
    assert 0.35 <= elapsed < ENDED_BY_A_LIMIT
    assert message["errorMessage"] == "Stream idle timeout: no event from the provider for 0.4 s"
    assert_retryable(message)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_keep_alive_only_stream_ends_at_the_deadline(provider_server, api):
    model, client = setup(provider_server, api, idle_timeout=None, deadline=0.6)
    provider_server.push(KeepAlive(seconds=8, interval=0.05))
    message, elapsed = timed(client, model)
    assert 0.55 <= elapsed < ENDED_BY_A_LIMIT
    assert message["errorMessage"] == "Request timeout: no complete answer within the 0.6 s deadline"
    assert_retryable(message)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_deadline_bounds_a_stream_that_keeps_sending_events(provider_server, api):
    # every event comes in time for the idle limit (with room for a loaded machine), but the
    # whole answer takes too long: 0.15 s between events (Anthropic's opening events too, so
    # its first text comes at about 0.45 s), some 12 events in all
    model, client = setup(provider_server, api, idle_timeout=2.0, deadline=1.5)
    provider_server.push(Trickle("one two three four five six seven eight", chunks=8, interval=0.15))
    message, elapsed = timed(client, model)
    assert 1.45 <= elapsed < ENDED_BY_A_LIMIT
    assert "deadline" in message["errorMessage"]
    assert message["content"] and message["content"][0]["text"]  # what came before is kept
    assert_retryable(message)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_idle_limit_restarts_at_every_event(provider_server, api):
    # an event every 0.25 s, 2 s in all: more than twice the idle limit, and each event has
    # 0.55 s of room (a loaded machine)
    model, client = setup(provider_server, api, idle_timeout=0.8, deadline=10)
    provider_server.push(Trickle("a b c d e f g h", chunks=8, interval=0.25))
    message, elapsed = timed(client, model)
    assert message["stopReason"] == "stop", message.get("errorMessage")
    assert message["content"][0]["text"] == "a b c d e f g h"
    assert elapsed > 0.8 * 2


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_idle_limit_covers_the_wait_after_the_first_event(provider_server, api):
    model, client = setup(provider_server, api, idle_timeout=0.3, deadline=None)
    provider_server.push(Stall(seconds=8))
    message, elapsed = timed(client, model)
    assert elapsed < ENDED_BY_A_LIMIT and "idle timeout" in message["errorMessage"]
    assert_retryable(message)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_server_that_never_answers_ends_at_the_idle_limit(provider_server, api):
    model, client = setup(provider_server, api, idle_timeout=0.3, deadline=5)
    provider_server.push(Silent(seconds=8))
    message, elapsed = timed(client, model)
    assert elapsed < ENDED_BY_A_LIMIT and message["errorMessage"].startswith("Stream idle timeout")
    assert_retryable(message)


def test_limits_with_a_cancel_flag_too(provider_server):
    # the agent passes a cancel flag: the limits hold on that path as well
    model, client = setup(provider_server, "anthropic", idle_timeout=0.3, deadline=None)
    provider_server.push(KeepAlive(seconds=8, ping_events=True))

    async def go():
        return [event async for event in client.stream(model, CONTEXT, cancel=asyncio.Event())]
    started = time.monotonic()
    message = asyncio.run(go())[-1].message
    assert time.monotonic() - started < ENDED_BY_A_LIMIT and "idle timeout" in message["errorMessage"]


def test_limits_off_and_defaults(provider_server):
    model, client = setup(provider_server, "openai", idle_timeout=0, deadline=None)
    provider_server.push(KeepAlive(seconds=0.5, interval=0.05))
    message, _ = timed(client, model)
    assert message["stopReason"] == "stop"  # no limit: the late answer arrives
    defaults = OpenAIClient("k")
    assert (defaults.idle_timeout, defaults.deadline) == (DEFAULT_IDLE_TIMEOUT, DEFAULT_DEADLINE) == (300.0, 3600.0)
    assert (AnthropicClient("k").idle_timeout, AnthropicClient("k").deadline) == (300.0, 3600.0)
