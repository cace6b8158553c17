"""The delay a provider asks for (`retry-after-ms`, `Retry-After` in seconds or as an HTTP date)
travels from the HTTP answer to the failed message, read as pi-ai 1.6.0 reads it."""

from __future__ import annotations

import asyncio
import math
from email.utils import formatdate

import httpx
import orjson
import pytest

from llm.provider_server import HttpError, openai_rate_limit
from pi_lab.compaction.retry import server_retry_delay_ms
from pi_lab.llm import AnthropicClient, Model, OpenAIClient
from pi_lab.llm._http import retry_after_ms

NOW_MS = 1_700_000_000_000
CONTEXT = {"messages": [{"role": "user", "content": "hi", "timestamp": 1}]}


def h(**values: str) -> httpx.Headers:
    return httpx.Headers({k.replace("_", "-"): v for k, v in values.items()})


def test_seconds_fractions_and_javascript_parse_float():
    assert retry_after_ms(h(retry_after="30"), NOW_MS) == 30000
    assert retry_after_ms(h(retry_after="1.5"), NOW_MS) == 1500
    assert retry_after_ms(h(retry_after=" 2s"), NOW_MS) == 2000  # parseFloat takes the numeric prefix
    assert retry_after_ms(h(retry_after="-3"), NOW_MS) == -3000  # waited as 0 by the retry rule
    assert retry_after_ms(h(retry_after="1e1"), NOW_MS) == 10000
    assert retry_after_ms(h(retry_after="Infinity"), NOW_MS) is None  # not finite: ignored
    assert retry_after_ms(h(retry_after="soon"), NOW_MS) is None
    assert retry_after_ms(h(), NOW_MS) is None and retry_after_ms(None, NOW_MS) is None


def test_http_dates_are_measured_against_the_clock():
    assert retry_after_ms(h(retry_after=formatdate(NOW_MS / 1000 + 7, usegmt=True)), NOW_MS) == 7000
    assert retry_after_ms(h(retry_after="Tue, 14 Nov 2023 22:13:20 GMT"), NOW_MS) == 0
    assert retry_after_ms(h(retry_after="Tue, 14 Nov 2023 22:13:10 GMT"), NOW_MS) == -10000  # already past


def test_retry_after_ms_header_wins():
    assert retry_after_ms(h(retry_after_ms="250", retry_after="30"), NOW_MS) == 250
    assert retry_after_ms(h(retry_after_ms="1500.5"), NOW_MS) == 1500.5
    assert retry_after_ms(h(retry_after_ms="x", retry_after="2"), NOW_MS) == 2000  # unusable: next header


def run(client, model):
    async def go():
        return [event async for event in client.stream(model, CONTEXT)]
    return asyncio.run(go())[-1].message


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_delay_reaches_the_failed_message_but_not_its_json(provider_server, api):
    if api == "openai":
        model = Model("openai", "gpt-test", "openai-completions", 128000, 8192, base_url=provider_server.openai_base_url)
        client = OpenAIClient("sk-x-1234", base_url=provider_server.openai_base_url, clock=lambda: NOW_MS)
    else:
        model = Model("anthropic", "c", "anthropic-messages", 200000, 8192, base_url=provider_server.anthropic_base_url)
        client = AnthropicClient("sk-x-1234", base_url=provider_server.anthropic_base_url, clock=lambda: NOW_MS)
    limited = openai_rate_limit()
    provider_server.push(
        HttpError(429, limited.body, {"Retry-After": "3"}),
        HttpError(503, {"error": {"message": "Service unavailable"}},
                  {"Retry-After": formatdate(NOW_MS / 1000 + 12, usegmt=True)}),
        HttpError(500, {"error": {"message": "Internal error"}}),
    )
    seconds = run(client, model)
    assert seconds["stopReason"] == "error" and server_retry_delay_ms(seconds) == 3000
    dated = run(client, model)
    assert server_retry_delay_ms(dated) == 12000
    plain = run(client, model)
    assert server_retry_delay_ms(plain) is None
    # pi's message has no such field: the session file stays byte-compatible
    assert b"retry" not in orjson.dumps(seconds).lower()
    assert dict(seconds) == orjson.loads(orjson.dumps(seconds))


def test_plain_dicts_have_no_server_delay():
    assert server_retry_delay_ms({"stopReason": "error", "errorMessage": "429"}) is None
    assert not math.isnan(retry_after_ms(h(retry_after="0"), NOW_MS))
