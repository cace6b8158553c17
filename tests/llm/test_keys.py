"""The API key never leaves the client: a loopback provider echoes it everywhere a provider can
put text, and neither the message, its errorMessage, the events, a repr nor a log line may hold
the key or any 12-character piece of it."""

from __future__ import annotations

import asyncio
import logging
import random

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm.provider_server import (
    EchoHeaders,
    HttpError,
    PartialFailure,
    ProviderServer,
    StreamFailure,
    Text,
    Thinking,
    ToolUse,
)
from pi_lab.llm import AnthropicClient, Model, OpenAIClient, is_retryable_assistant_error
from pi_lab.llm._http import MAX_ERROR_BODY_CHARS
from pi_lab.llm.redact import MIN_SECRET_RUN, StreamRedactor, redact, redact_tree

KEY = "sk-ant-api03-Qx7LmN2pR9sT4vW8yZ1bC5dF3gH6jK0aE2iO7uY4tR1eW9qP3zX8cV5bN6mM"
CONTEXT = {"system_prompt": "Be terse.", "messages": [{"role": "user", "content": "hi", "timestamp": 1}]}


def leaks(text: str, key: str = KEY) -> list[str]:
    """Every piece of `key` at least MIN_SECRET_RUN long that occurs in `text` (none is allowed)."""
    return [key[i:i + MIN_SECRET_RUN] for i in range(len(key) - MIN_SECRET_RUN + 1)
            if key[i:i + MIN_SECRET_RUN] in text]


def setup(server: ProviderServer, api: str) -> tuple[Model, OpenAIClient | AnthropicClient]:
    if api == "openai":
        return (Model("openai", "gpt-test", "openai-completions", 128000, 8192, base_url=server.openai_base_url),
                OpenAIClient(KEY, base_url=server.openai_base_url))
    return (Model("anthropic", "claude-test", "anthropic-messages", 200000, 8192, base_url=server.anthropic_base_url),
            AnthropicClient(KEY, base_url=server.anthropic_base_url))


def run(client: OpenAIClient | AnthropicClient, model: Model) -> list:
    async def go() -> list:
        return [event async for event in client.stream(model, CONTEXT)]
    return asyncio.run(go())


def escaped(text: str) -> str:
    """`text` as JSON string content with every character \\u-escaped (no raw substring survives)."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


# Each case: a reply that puts the key somewhere a provider can put text.
CASES = {
    "json error body": HttpError(401, {"type": "error", "error": {
        "type": "authentication_error", "message": f"invalid x-api-key {KEY}"}}),
    "openai error object": HttpError(401, {"error": {"message": f"Incorrect API key provided: {KEY}.",
                                                     "type": "invalid_request_error", "code": "invalid_api_key"}}),
    # The key straddles pi's 4,000-character cut of a raw body: cut first, redact second would keep
    # its first characters.
    "raw body straddling the cut": HttpError(500, "x" * (MAX_ERROR_BODY_CHARS - 25) + KEY + " trailing"),
    "json body straddling the cut": HttpError(400, {"error": {
        "message": "y" * (MAX_ERROR_BODY_CHARS - 40) + KEY, "type": "invalid_request_error"}}),
    "non-error json straddling the cut": HttpError(503, {"detail": "z" * (MAX_ERROR_BODY_CHARS - 30) + KEY}),
    # Escaped in the JSON: only the parsed text holds the key, and that text is cut too.
    "escaped key straddling the cut": HttpError(
        502, '{"error": {"message": "' + "w" * (MAX_ERROR_BODY_CHARS - 45) + escaped(KEY) + '", "type": "x"}}'),
    "openrouter raw upstream text": HttpError(502, {"error": {"message": "Provider returned error",
                                                              "metadata": {"raw": f"upstream said: key={KEY}"}}}),
    "headers echoed": EchoHeaders(401),
    "in-stream error": StreamFailure("invalid_request_error", f"API key {KEY} is not valid"),
    "error after partial content": PartialFailure(f"Here it is: {KEY}. Again, cut: {KEY[3:40]} and {KEY[20:]}",
                                                  f"stream broke; key was {KEY}", chunks=9),
    "key in a finished answer": Text(f"The key {KEY} ends here", chunks=11),
    "key in thinking": Thinking(f"they sent {KEY}", "fine"),
    "key in tool arguments": ToolUse("read", {"path": f"/keys/{KEY}", KEY: 1}, id=f"call_{KEY[13:30]}"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_key_appears_nowhere(provider_server, api, case, caplog):
    model, client = setup(provider_server, api)
    provider_server.push(CASES[case])
    with caplog.at_level(logging.DEBUG):
        events = run(client, model)
    final = events[-1].message
    # the provider really did send the key (the case tests something)
    assert KEY in provider_server.requests[0].headers.get("authorization", "") + \
        provider_server.requests[0].headers.get("x-api-key", "")
    assert leaks(orjson.dumps(final).decode()) == []
    assert leaks(repr(final)) == []
    assert leaks(final.get("errorMessage") or "") == []
    assert leaks(repr(events)) == []
    deltas = "".join(getattr(e, "delta", "") for e in events)
    assert leaks(deltas) == []
    assert leaks(repr(client)) == []
    logged = "\n".join(f"{r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records)
    assert leaks(logged) == []


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_redaction_keeps_the_rest_of_the_text(provider_server, api):
    model, client = setup(provider_server, api)
    provider_server.push(CASES["raw body straddling the cut"], CASES["in-stream error"],
                         CASES["error after partial content"], CASES["key in a finished answer"])
    straddle = run(client, model)[-1].message
    # redacted first, the body is shorter than the cut and survives whole
    assert straddle["errorMessage"] == "500 " + "x" * (MAX_ERROR_BODY_CHARS - 25) + "*** trailing"
    in_stream = run(client, model)[-1].message
    assert "API key *** is not valid" in in_stream["errorMessage"]
    partial = run(client, model)[-1].message
    assert partial["stopReason"] == "error" and "stream broke; key was ***" in partial["errorMessage"]
    assert partial["content"][0]["text"].startswith("Here it is: ***. Again, cut: ")
    answer = run(client, model)
    text = answer[-1].message["content"][0]["text"]
    # a delta boundary may release up to three characters of the key before the run is known
    assert text.startswith("The key ") and text.endswith("*** ends here") and len(text) <= len("The key sk-*** ends here")
    # the streamed deltas add up to what the message holds
    assert "".join(getattr(e, "delta", "") for e in answer) == text


def test_a_4xx_echo_is_still_classified(provider_server):
    model, client = setup(provider_server, "openai")
    provider_server.push(HttpError(429, {"error": {"message": f"Rate limit reached for key {KEY}",
                                                   "type": "requests"}}))
    message = run(client, model)[-1].message
    assert is_retryable_assistant_error(message) and leaks(message["errorMessage"]) == []


# --- the redaction function itself -------------------------------------------------------------


def test_redact_full_key_and_long_pieces_only():
    assert redact(f"a {KEY} b", KEY) == "a *** b"
    assert redact(f"cut: {KEY[:20]}", KEY) == "cut: ***"
    assert redact(f"tail {KEY[-12:]}.", KEY) == "tail ***."
    short = KEY[30:41]  # 11 characters: not identifying, left alone
    assert redact(f"x{short}y", KEY) == f"x{short}y"
    assert redact("nothing here", KEY) == "nothing here"
    assert redact("text", None) == "text" and redact("text", "") == "text"
    # a short key is matched whole, never in part
    assert redact("token sk-test-1 and sk-test", "sk-test-1") == "token *** and sk-test"
    # two runs next to each other
    assert leaks(redact(KEY[:30] + KEY[10:60], KEY)) == []


def test_redact_tree_walks_nested_values_and_keys():
    value = {"a": [KEY, {"b": f"x{KEY}"}], KEY: {"deep": [[KEY[:15]]]}}
    assert redact_tree(value, KEY) is value
    assert leaks(orjson.dumps(value).decode()) == []
    assert value["a"][0] == "***" and value["***"] == {"deep": [["***"]]}
    deep: dict = {}
    node = deep
    for _ in range(5000):  # iterative: no recursion limit
        node["n"] = {"k": KEY}
        node = node["n"]
    redact_tree(deep, KEY)
    node, seen = deep, 0
    while "n" in node:
        node = node["n"]
        assert node["k"] == "***"
        seen += 1
    assert seen == 5000


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(alphabet="ab -sk3_xyz", max_size=30),
    pieces=st.lists(st.tuples(st.integers(0, len(KEY)), st.integers(0, len(KEY))), max_size=4),
    seed=st.integers(0, 10_000),
)
def test_streamed_text_never_shows_a_key_piece(before, pieces, seed):
    """However the text is cut into deltas, the released text holds no 12-character key piece,
    and every delta plus the flush adds up to one string."""
    text = before
    for start, end in pieces:
        text += KEY[min(start, end):max(start, end)] + random.Random(start).choice(["", " ", "q"])
    rng = random.Random(seed)
    redactor = StreamRedactor(KEY)
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 9)
        out.append(redactor.feed(text[i:i + n]))
        i += n
    out.append(redactor.flush())
    shown = "".join(out)
    assert leaks(shown) == []
    assert leaks(redact(text, KEY)) == []
    # text without any long key piece goes through unchanged
    if not leaks(text):
        assert shown == text


def test_stream_redactor_passes_text_through_without_a_key():
    redactor = StreamRedactor(None)
    assert redactor.feed("abc") == "abc" and redactor.flush() == ""
    plain = StreamRedactor(KEY)
    assert [plain.feed(x) for x in ("Hel", "lo ", "world")] == ["Hel", "lo ", "world"]
