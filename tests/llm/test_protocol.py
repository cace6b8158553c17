"""The ModelClient protocol helpers: collect, and the sync wrappers (also inside a running loop)."""

from __future__ import annotations

import asyncio
import time

import pytest

from llm.provider_server import ProviderServer, Stall
from pi_lab.llm import (
    AnthropicClient,
    Model,
    ModelClient,
    OfflineModel,
    OpenAIClient,
    StreamDone,
    StreamStart,
    TextDelta,
    collect,
    complete_sync,
    run_sync,
    stream_sync,
)

CONTEXT = {"system_prompt": None, "messages": [{"role": "user", "content": "hello there", "timestamp": 1}]}


def test_all_clients_satisfy_the_protocol() -> None:
    for client in (OfflineModel(), OpenAIClient("k"), AnthropicClient("k")):
        assert isinstance(client, ModelClient)


def test_complete_sync_works_inside_a_running_event_loop() -> None:
    # A Jupyter cell runs inside the kernel's event loop, where asyncio.run() is refused.
    async def cell() -> dict:
        return complete_sync(OfflineModel(), None, CONTEXT)

    message = asyncio.run(cell())
    assert message["stopReason"] == "stop"
    assert complete_sync(OfflineModel(), None, CONTEXT)["content"] == message["content"]


def test_run_sync_reraises_in_the_caller() -> None:
    async def broken() -> None:
        raise KeyError("boom")

    async def cell() -> None:
        run_sync(broken())

    with pytest.raises(KeyError):
        run_sync(broken())
    with pytest.raises(KeyError):
        asyncio.run(cell())


def test_stream_sync_yields_events_in_order() -> None:
    events = list(stream_sync(OfflineModel(), None, CONTEXT))
    assert isinstance(events[0], StreamStart) and isinstance(events[-1], StreamDone)
    assert any(isinstance(e, TextDelta) for e in events)


def test_leaving_stream_sync_early_cancels_the_request(provider_server: ProviderServer) -> None:
    provider_server.push(Stall(seconds=10))
    model = Model("local", "m", "openai-completions", 8000, 1000, base_url=provider_server.openai_base_url)
    started = time.monotonic()
    for event in stream_sync(OpenAIClient(), model, CONTEXT):
        assert isinstance(event, StreamStart)
        break
    assert time.monotonic() - started < 3


def test_collect_needs_a_final_event() -> None:
    async def no_end():
        yield StreamStart({"role": "assistant"})

    with pytest.raises(RuntimeError):
        asyncio.run(collect(no_end()))


def test_events_of_the_same_shape_stay_distinct() -> None:
    # Start/done/error carry the same field, and so do the two deltas: each is still its own
    # frozen, slotted type that compares only with its own kind.
    from pi_lab.llm import StreamError, ThinkingDelta

    message = {"role": "assistant", "content": []}
    done, error = StreamDone(message), StreamError(message=message)
    assert (done.kind, error.kind, StreamStart(message).kind) == ("done", "error", "start")
    assert done != error and done == StreamDone(message)
    assert TextDelta(0, "x") != ThinkingDelta(0, "x")
    assert repr(ThinkingDelta(1, "y")) == "ThinkingDelta(index=1, delta='y')"
    assert not hasattr(done, "__dict__")
    with pytest.raises(AttributeError):
        done.message = {}  # type: ignore[misc]


def test_an_unknown_option_is_refused_at_the_call() -> None:
    # The options are declared once (StreamOptions, ClientSettings) and taken as **options,
    # which Python does not check: a misspelt one must still fail at once, not be ignored.
    for client in (OfflineModel(), OpenAIClient("k"), AnthropicClient("k")):
        with pytest.raises(TypeError, match=r"\.stream\(\) got an unexpected keyword argument 'max_token'"):
            client.stream(None, CONTEXT, max_token=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'reasonning'"):
        complete_sync(OfflineModel(), None, CONTEXT, reasonning="high")  # type: ignore[call-arg]
    model = Model(provider="openai", id="m", api="openai-completions", context_window=1000, max_tokens=100)
    for client in (OpenAIClient("k"), AnthropicClient("k")):
        with pytest.raises(TypeError, match=r"\.build_body\(\) got an unexpected keyword argument 'tool'"):
            client.build_body(model, CONTEXT, tool=[])  # type: ignore[call-arg]
    for cls in (OpenAIClient, AnthropicClient):
        with pytest.raises(TypeError, match=r"\.__init__\(\) got an unexpected keyword argument 'baseurl'"):
            cls("k", baseurl="http://127.0.0.1:9")  # type: ignore[call-arg]
    # The known ones still arrive.
    assert OpenAIClient("k", base_url="http://h", deadline=None).deadline is None
    assert AnthropicClient(base_url="http://h").base_url == "http://h"
