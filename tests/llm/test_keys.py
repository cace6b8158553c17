"""The API key never leaves the client: a loopback provider echoes it everywhere a provider can
put text, and neither the message, its errorMessage, the events, a repr nor a log line may hold
the key or any 12-character piece of it."""

from __future__ import annotations

import asyncio
import gc
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
    Pieces,
    ProviderServer,
    StreamFailure,
    Text,
    Thinking,
    ToolUse,
)
from pi_lab.errors import PiLabError
from pi_lab.llm import AnthropicClient, Model, OpenAIClient, StreamError, TextDelta, ThinkingDelta, is_retryable_assistant_error
from pi_lab.llm import keys
from pi_lab.llm._http import MAX_ERROR_BODY_CHARS
from pi_lab.llm.keys import InvalidApiKey
from pi_lab.llm.redact import MIN_SECRET_RUN, StreamRedactor, redact, redact_all, redact_tree

KEY = "sk-ant-api03-Qx7LmN2pR9sT4vW8yZ1bC5dF3gH6jK0aE2iO7uY4tR1eW9qP3zX8cV5bN6mM"
PROJECT_KEY = "sk-proj-Xq7LmN2pR9sT4vW8yZ1bC5dF3gH6jK0aE2iO7uY4"
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


def run(client: OpenAIClient | AnthropicClient, model: Model, snapshots: list[str] | None = None) -> list:
    """The stream's events; with `snapshots`, also the live message (the dict `StreamStart` hands
    out, which a UI may render at any time) as JSON after every event."""
    async def go() -> list:
        events = []
        async for event in client.stream(model, CONTEXT):
            events.append(event)
            if snapshots is not None:
                snapshots.append(orjson.dumps(events[0].message).decode())
        return events
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
    snapshots: list[str] = []
    with caplog.at_level(logging.DEBUG):
        events = run(client, model, snapshots)
    final = events[-1].message
    assert [leaks(snapshot) for snapshot in snapshots if leaks(snapshot)] == []
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
    # no character of the key shows, whatever the delta boundaries
    assert text == "The key *** ends here"
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
    longest=st.sampled_from([1, 2, 3, 9]),
    key=st.sampled_from([KEY, "abcabcabcxabcabcabcabcy", "aaaaaaaaaaaaaaab", "sk-test-1"]),
)
def test_streamed_text_never_shows_a_key_piece(before, pieces, seed, longest, key):
    """However the text is cut into deltas, the deltas plus the flush add up to exactly `redact`
    of the whole text: no key character at the edge of a `***`, nothing held back for good.
    Keys with repeated parts and keys shorter than a run are the hard cases of holding back."""
    text = before
    for start, end in pieces:
        start, end = min(start, end) % (len(key) + 1), max(start, end) % (len(key) + 1)
        text += key[start:end] + random.Random(start).choice(["", " ", "q"])
    rng = random.Random(seed)
    redactor = StreamRedactor(key)
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, longest)
        out.append(redactor.feed(text[i:i + n]))
        i += n
    out.append(redactor.flush())
    assert "".join(out) == redact(text, key)
    if len(key) >= MIN_SECRET_RUN:
        assert leaks(redact(text, key), key) == []
        assert all(leaks(delta, key) == [] for delta in out)
    # text without any long key piece goes through unchanged
    if key not in text and not leaks(text, key):
        assert "".join(out) == text


def test_one_character_deltas_show_no_character_of_the_key():
    """The report: fed one character at a time, the first 11 characters came out before the
    12th made a run (`sk-proj-Xq7***`)."""
    redactor = StreamRedactor(PROJECT_KEY)
    out = [redactor.feed(c) for c in f"key={PROJECT_KEY};"] + [redactor.flush()]
    assert "".join(out) == "key=***;"


def test_stream_redactor_passes_text_through_without_a_key():
    redactor = StreamRedactor(None)
    assert redactor.feed("abc") == "abc" and redactor.flush() == ""
    plain = StreamRedactor(KEY)
    # a tail that occurs early in the key ("d" of "dF3") waits for the next delta or the flush
    assert [plain.feed(x) for x in ("Hel", "lo ", "world")] + [plain.flush()] == ["Hel", "lo ", "worl", "d"]
    # text that cannot continue as the key (none of these characters occurs in it) is never held
    assert [plain.feed(x) for x in ("hollow", " flow", ", GUI.")] == ["hollow", " flow", ", GUI."]


# --- streamed in small pieces over real HTTP ---------------------------------------------------


def one_by_one(text: str) -> tuple[str, ...]:
    return tuple(text)


def setup_with(server: ProviderServer, api: str, key: str) -> tuple[Model, OpenAIClient | AnthropicClient]:
    model, _ = setup(server, api)
    base = server.openai_base_url if api == "openai" else server.anthropic_base_url
    return model, (OpenAIClient if api == "openai" else AnthropicClient)(key, base_url=base)


def deltas_by_block(events: list) -> dict[int, str]:
    out: dict[int, str] = {}
    for event in events:
        if isinstance(event, (TextDelta, ThinkingDelta)):
            out[event.index] = out.get(event.index, "") + event.delta
    return out


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_key_echoed_in_one_character_deltas_shows_none_of_it(provider_server, api):
    """The report: a provider echoing the key one character at a time left `sk-proj-Xq7` in the
    message and its deltas. Text, thinking and tool arguments, each cut into single characters."""
    model, client = setup_with(provider_server, api, PROJECT_KEY)
    arguments = orjson.dumps({"path": f"/{PROJECT_KEY}"}).decode()
    provider_server.push(Pieces((
        ("thinking", one_by_one(f"they sent {PROJECT_KEY}")),
        ("text", one_by_one(f"Your key is {PROJECT_KEY}, keep it safe")),
        ("tool", one_by_one(arguments)),
    )))
    events = run(client, model)
    final = events[-1].message
    assert final["stopReason"] == "toolUse"
    thinking, text, call = final["content"]
    assert thinking["thinking"] == "they sent ***"
    assert text["text"] == "Your key is ***, keep it safe"
    assert call["arguments"] == {"path": "/***"}
    shown = deltas_by_block(events)
    assert shown == {0: "they sent ***", 1: "Your key is ***, keep it safe"}
    everything = orjson.dumps(final).decode() + repr(events)
    assert PROJECT_KEY[:4] not in everything  # not even `sk-p`


CHUNKS = st.lists(st.integers(1, 4), min_size=1, max_size=8)
# Text made of the key, pieces of it (the first characters most of all) and ordinary text that
# shares the key's characters.
FRAGMENT = st.one_of(
    st.just(PROJECT_KEY),
    st.tuples(st.integers(0, len(PROJECT_KEY)), st.integers(0, len(PROJECT_KEY))).map(
        lambda ij: PROJECT_KEY[min(ij):max(ij)]),
    st.integers(1, len(PROJECT_KEY)).map(lambda n: PROJECT_KEY[:n]),
    st.text(alphabet="sk-projXq7 LmN.,", min_size=1, max_size=12),
)
BLOCK = st.tuples(st.sampled_from(["text", "thinking", "tool"]),
                  st.lists(FRAGMENT, min_size=1, max_size=5).map("".join).filter(bool), CHUNKS)


def cut(text: str, sizes: list[int]) -> tuple[str, ...]:
    pieces, at, turn = [], 0, 0
    while at < len(text):
        size = sizes[turn % len(sizes)]
        pieces.append(text[at:at + size])
        at, turn = at + size, turn + 1
    return tuple(pieces)


@pytest.fixture(scope="module")
def shared_server():
    with ProviderServer() as server:
        yield server


@settings(max_examples=40, deadline=None)
@given(blocks=st.lists(BLOCK, min_size=1, max_size=4), fails=st.booleans())
def test_any_chunking_on_any_channel_shows_no_key_piece(shared_server, blocks, fails):
    """Property, over real HTTP for both protocols: however text, thinking and tool arguments
    are cut, no delta, no block's deltas together and no final message hold 12 characters of
    the key; each block's deltas add up to its final text, which is the redaction of what was
    sent (so text without the key arrives unchanged once the block ends). An in-stream error
    at the end must not lose or leak the text held back."""
    merged: list[list] = []
    for kind, text, sizes in blocks:
        if merged and kind != "tool" and merged[-1][0] == kind:
            merged[-1][1] += text  # OpenAI has no block boundary between two texts: one block
        else:
            merged.append([kind, text, sizes])
    wire = tuple((kind, cut(text if kind != "tool" else orjson.dumps({"path": text}).decode(), sizes))
                 for kind, text, sizes in merged)
    for api in ("openai", "anthropic"):
        model, client = setup_with(shared_server, api, PROJECT_KEY)
        shared_server.push(Pieces(wire, error="broke" if fails else None))
        events = run(client, model)
        final = events[-1].message
        assert final["stopReason"] == ("error" if fails else "toolUse" if any(k == "tool" for k, *_ in merged) else "stop")
        deltas = [e.delta for e in events if isinstance(e, (TextDelta, ThinkingDelta))]
        assert all(leaks(delta, PROJECT_KEY) == [] for delta in deltas)
        assert leaks("".join(deltas), PROJECT_KEY) == []
        assert leaks(orjson.dumps(final).decode(), PROJECT_KEY) == []
        shown = deltas_by_block(events)
        assert len(final["content"]) == len(merged)
        for index, ((kind, text, _), block) in enumerate(zip(merged, final["content"])):
            if kind == "tool":
                assert block["arguments"] == {"path": redact(text, PROJECT_KEY)}
                continue
            field = "text" if kind == "text" else "thinking"
            assert shown[index] == block[field] == redact(text, PROJECT_KEY)
            if not leaks(text, PROJECT_KEY):
                assert block[field] == text


# --- keys as given: whitespace, control and non-ASCII characters --------------------------------


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("extra", ["\n", "\r\n", " ", "\t", " \n"])
def test_whitespace_around_a_key_is_stripped(provider_server, api, extra):
    model, client = setup_with(provider_server, api, f"{extra}{KEY}{extra}")
    assert run(client, model)[-1].message["stopReason"] == "stop"
    sent = provider_server.requests[0].headers
    assert sent.get("authorization", sent.get("x-api-key")) in (f"Bearer {KEY}", KEY)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("bad, kind, place", [
    (KEY + "\x00", "a control character (U+0000)", "74th (last)"),
    (KEY[:20] + "\n" + KEY[20:], "a control character (U+000A)", "21st"),
    (KEY[:40] + "\u201d" + KEY[40:], "a non-ASCII character (U+201D RIGHT DOUBLE QUOTATION MARK)", "41st"),
    ("\u201c" + KEY + "\u201d", "a non-ASCII character (U+201C LEFT DOUBLE QUOTATION MARK)", "1st"),
])
def test_a_key_no_header_can_carry_is_refused_when_the_client_is_made(api, bad, kind, place):
    cls = OpenAIClient if api == "openai" else AnthropicClient
    with pytest.raises(InvalidApiKey) as caught:
        cls(bad, base_url="http://127.0.0.1:9")
    message = str(caught.value)
    assert message.startswith(f"The API key from the api_key argument has {kind} as its {place} character;")
    assert leaks(message) == [] and KEY[:8] not in message
    assert isinstance(caught.value, PiLabError)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_bad_key_from_the_environment_ends_the_message(provider_server, api, monkeypatch):
    """A key read at request time cannot raise at construction: the message ends with the same
    clear error (the report: `UnicodeEncodeError` escaped from the stream), nothing is sent."""
    variable = "OPENAI_API_KEY" if api == "openai" else "ANTHROPIC_API_KEY"
    monkeypatch.setenv(variable, KEY[:10] + "\u2019" + KEY[10:])
    model, _ = setup(provider_server, api)
    client = OpenAIClient() if api == "openai" else AnthropicClient()
    events = run(client, model)
    final = events[-1].message
    assert isinstance(events[-1], StreamError) and final["stopReason"] == "error"
    assert final["errorMessage"].startswith(
        f"The API key from {variable} has a non-ASCII character (U+2019 RIGHT SINGLE QUOTATION MARK) as its 11th character;")
    assert not is_retryable_assistant_error(final) and leaks(final["errorMessage"]) == []
    assert provider_server.requests == []
    # whitespace around it is only stripped
    monkeypatch.setenv(variable, f" {KEY}\r\n")
    assert run(client, model)[-1].message["stopReason"] == "stop"
    sent = provider_server.requests[0].headers
    assert sent.get("authorization", sent.get("x-api-key")) in (f"Bearer {KEY}", KEY)


def test_a_header_http_cannot_carry_ends_the_message(provider_server):
    model, _ = setup(provider_server, "openai")
    client = OpenAIClient(KEY, base_url=provider_server.openai_base_url, headers={"x-team": "Zürich"})
    final = run(client, model)[-1].message
    assert final["errorMessage"] == "Cannot send the request: a header value has a non-ASCII character (U+00FC)"
    assert provider_server.requests == []


# --- DEBUG logging ------------------------------------------------------------------------------


def logged(caplog) -> str:
    return "\n".join(f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_debug_logs_of_a_response_header_echoing_the_key_are_redacted(provider_server, api, caplog):
    """The report: with the root logger at DEBUG, httpcore logs the response headers, and a
    server echoing the key there put it in the log."""
    model, client = setup(provider_server, api)
    provider_server.push(EchoHeaders(401, in_headers=True))
    with caplog.at_level(logging.DEBUG):
        final = run(client, model)[-1].message
    text = logged(caplog)
    assert "receive_response_headers.complete" in text and "x-echo-" in text  # httpcore did log them
    assert leaks(text) == []
    assert leaks(final["errorMessage"]) == []


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("extra", ["\n", "\r\n", " "])
def test_debug_logs_of_a_key_with_a_trailing_newline_are_clean(provider_server, api, extra, caplog):
    """The report: `Illegal header value b'Bearer sk-...\\n'` in httpcore's DEBUG log."""
    model, client = setup_with(provider_server, api, KEY + extra)
    with caplog.at_level(logging.DEBUG):
        final = run(client, model)[-1].message
    assert final["stopReason"] == "stop"
    text = logged(caplog)
    assert "send_request_headers" in text and "Illegal header" not in text
    assert leaks(text) == []


def test_the_log_filter_redacts_arguments_and_exceptions(caplog):
    client = OpenAIClient(KEY, base_url="http://127.0.0.1:9")
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("httpx").info("url %s and %r", f"https://h/?key={KEY}", {"k": KEY[5:30]})
        try:
            raise RuntimeError(f"failed with {KEY}")
        except RuntimeError:
            logging.getLogger("httpcore.http11").debug("failed", exc_info=True)
        logging.getLogger("httpcore.connection").debug("stack", stack_info=True)
    text = logged(caplog) + "".join(r.stack_info or "" for r in caplog.records)
    assert "url https://h/?key=*** and {'k': '***'}" in text and "failed with ***" in text
    assert leaks(text) == []
    client.close()


def test_the_log_filter_is_there_while_a_client_holds_a_key():
    gc.collect()  # clients of earlier tests
    assert not keys.installed()
    first = OpenAIClient(KEY, base_url="http://127.0.0.1:9")
    second = AnthropicClient(KEY, base_url="http://127.0.0.1:9")
    keyless = OpenAIClient(base_url="http://127.0.0.1:9")
    assert keys.installed() and all(keys._filter in logging.getLogger(name).filters for name in keys.LOGGERS)
    first.close()
    first.close()  # closing twice gives the key back once
    assert keys.installed()
    del second
    gc.collect()
    assert not keys.installed()
    assert repr(keyless)  # a client without a key never held anything


def test_two_keys_sharing_a_stretch_are_redacted_in_one_pass():
    """Two keys of one account can share a stretch: redacting one after the other would leave
    the part of the second that the first one's `***` cut off (here 10 characters)."""
    piece = KEY[5:30]  # "t-api03-Qx" + a stretch PROJECT_KEY shares
    assert redact(redact(piece, PROJECT_KEY), KEY) == "t-api03-Qx***"
    assert redact_all(piece, (PROJECT_KEY, KEY)) == "***"
    assert redact_all("plain", (KEY, "", None)) == "plain"
