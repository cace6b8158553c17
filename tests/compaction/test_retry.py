"""Summarisation retry (compaction.md §6.6; regression 6647 transient stream drop)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from cbuild import FakeClient, model, reply, usage, user

from pi_lab.compaction import (
    CompactionPreparation,
    FileOperations,
    RetryCallbacks,
    RetryPolicy,
    SummarizationError,
    compact,
    generate_branch_summary,
    retry_assistant_call,
    retry_delay_ms,
)

run = asyncio.run
TERMINATED = reply(None, stop="error", error="terminated")


class Recorder:
    """Callbacks recording every event (plain methods; the dataclass form is tested separately)."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def on_retry_scheduled(self, attempt, max_attempts, delay_ms, error_message):
        self.events.append(("scheduled", attempt, max_attempts, delay_ms, error_message))

    def on_retry_attempt_start(self):
        self.events.append(("attempt_start",))

    def on_retry_finished(self, success, attempt, final_error=None):
        self.events.append(("finished", success, attempt, final_error))

    def kinds(self):
        return [e[0] for e in self.events]


def preparation() -> CompactionPreparation:
    return CompactionPreparation("k", [user("hello"), user("world")], [], False, 100, None, FileOperations())


def policy(**kw) -> RetryPolicy:
    return RetryPolicy(**{"enabled": True, "max_retries": 3, "base_delay_ms": 0, **kw})


# --- regression 6647 ---------------------------------------------------------------------------------


def test_two_transient_failures_then_success():
    client = FakeClient(TERMINATED, TERMINATED, reply("recovered summary"))
    events = Recorder()
    result = run(compact(preparation(), client, model(), retry=policy(), callbacks=events))
    assert "recovered summary" in result.summary
    assert len(client.calls) == 3
    assert events.events == [
        ("scheduled", 1, 3, 0, "terminated"),
        ("attempt_start",),
        ("scheduled", 2, 3, 0, "terminated"),
        ("attempt_start",),
        ("finished", True, 2, None),
    ]


def test_quota_errors_are_not_retried():
    client = FakeClient(reply(None, stop="error", error="429 insufficient_quota: you exceeded your quota"))
    events = Recorder()
    with pytest.raises(SummarizationError, match="insufficient_quota"):
        run(compact(preparation(), client, model(), retry=policy(), callbacks=events))
    assert len(client.calls) == 1
    assert events.events == []


def test_retry_disabled_means_one_call():
    client = FakeClient(TERMINATED, reply("never reached"))
    with pytest.raises(SummarizationError, match="terminated"):
        run(compact(preparation(), client, model(), retry=policy(enabled=False), callbacks=Recorder()))
    assert len(client.calls) == 1
    client = FakeClient(TERMINATED, reply("never reached"))
    with pytest.raises(SummarizationError, match="terminated"):
        run(compact(preparation(), client, model(), retry=None))
    assert len(client.calls) == 1


def test_retries_exhausted():
    client = FakeClient(TERMINATED)  # the last script item repeats
    events = Recorder()
    with pytest.raises(SummarizationError) as err:
        run(compact(preparation(), client, model(), retry=policy(max_retries=2), callbacks=events))
    assert str(err.value) == "Summarization failed: terminated"
    assert len(client.calls) == 3
    assert events.kinds() == ["scheduled", "attempt_start", "scheduled", "attempt_start", "finished"]
    assert events.events[-1] == ("finished", False, 2, "terminated")


def test_abort_during_backoff_stops_at_once():
    signal = asyncio.Event()
    events = Recorder()

    def scheduled(attempt, max_attempts, delay_ms, error_message):
        events.on_retry_scheduled(attempt, max_attempts, delay_ms, error_message)
        asyncio.get_running_loop().call_later(0.05, signal.set)

    callbacks = RetryCallbacks(
        on_retry_scheduled=scheduled,
        on_retry_attempt_start=events.on_retry_attempt_start,
        on_retry_finished=events.on_retry_finished,
    )
    client = FakeClient(TERMINATED, reply("too late"))

    async def produce():
        return await client.complete(model(), {}, cancel=signal)

    started = time.monotonic()
    out = run(retry_assistant_call(produce, policy(base_delay_ms=30000), signal, callbacks))
    assert time.monotonic() - started < 5
    assert len(client.calls) == 1
    assert out["stopReason"] == "aborted"
    assert "errorMessage" not in out
    assert events.events == [("scheduled", 1, 3, 30000, "terminated"), ("finished", False, 1, None)]


def test_abort_during_backoff_with_a_threading_event():
    signal = threading.Event()
    threading.Timer(0.05, signal.set).start()
    client = FakeClient(TERMINATED, reply("too late"))

    async def produce():
        return await client.complete(model(), {})

    started = time.monotonic()
    out = run(retry_assistant_call(produce, policy(base_delay_ms=30000), signal))
    assert time.monotonic() - started < 5
    assert out["stopReason"] == "aborted"


def test_compact_returns_quickly_on_abort_and_the_caller_sees_the_signal():
    signal = asyncio.Event()

    async def go():
        asyncio.get_running_loop().call_later(0.05, signal.set)
        return await compact(preparation(), FakeClient(TERMINATED), model(), retry=policy(base_delay_ms=30000),
                             signal=signal)

    started = time.monotonic()
    result = run(go())
    assert time.monotonic() - started < 5
    # like pi, an aborted summary is returned as is; AgentSession checks the signal before appending
    assert signal.is_set()
    assert result.summary == ""


def test_aborted_response_is_never_retried():
    client = FakeClient(reply("partial", stop="aborted"))
    events = Recorder()

    async def produce():
        return await client.complete(model(), {})

    out = run(retry_assistant_call(produce, policy(), None, events))
    assert out["stopReason"] == "aborted" and len(client.calls) == 1 and events.events == []


def test_aborted_after_a_retry_reports_finished_false():
    client = FakeClient(TERMINATED, reply("partial", stop="aborted"))
    events = Recorder()

    async def produce():
        return await client.complete(model(), {})

    out = run(retry_assistant_call(produce, policy(), None, events))
    assert out["content"][0]["text"] == "partial"
    assert events.events[-1] == ("finished", False, 1, None)


def test_async_callbacks_are_awaited():
    seen = []

    async def scheduled(*args):
        await asyncio.sleep(0)
        seen.append(("scheduled", *args))

    async def finished(*args):
        seen.append(("finished", *args))

    client = FakeClient(reply(None, stop="error", error="503 Service Unavailable"), reply("ok", use=usage(1, 1)))

    async def produce():
        return await client.complete(model(), {})

    out = run(retry_assistant_call(produce, policy(), None,
                                   RetryCallbacks(on_retry_scheduled=scheduled, on_retry_finished=finished)))
    assert out["stopReason"] == "stop"
    assert seen == [("scheduled", 1, 3, 0, "503 Service Unavailable"), ("finished", True, 1)]


def test_branch_summary_retries_too():
    client = FakeClient(TERMINATED, reply("## Goal\nbranch"))
    events = Recorder()
    entries = [{"type": "message", "id": "u", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
                "message": user("explore")}]
    out = run(generate_branch_summary(entries, client, model(), retry=policy(), callbacks=events))
    assert out.error is None and out.summary.endswith("## Goal\nbranch")
    assert events.kinds() == ["scheduled", "attempt_start", "finished"]


# --- delays ----------------------------------------------------------------------------------------


def test_retry_delay_doubles_and_is_capped():
    p = RetryPolicy()
    assert [retry_delay_ms(p, n) for n in (1, 2, 3, 4)] == [2000, 4000, 8000, 16000]
    assert retry_delay_ms(p, 10) == 60000
    assert retry_delay_ms(RetryPolicy(max_agent_delay_ms=None), 20) == 60000
    assert retry_delay_ms(RetryPolicy(max_agent_delay_ms=5000), 3) == 5000
    assert retry_delay_ms({"baseDelayMs": 100, "maxAgentDelayMs": 250}, 3) == 250


def test_policy_as_settings_mapping():
    client = FakeClient(TERMINATED, reply("ok"))

    async def produce():
        return await client.complete(model(), {})

    out = run(retry_assistant_call(produce, {"enabled": True, "maxRetries": 1, "baseDelayMs": 0}))
    assert out["stopReason"] == "stop" and len(client.calls) == 2


# --- the provider's Retry-After ----------------------------------------------------------------------


def test_server_delay_is_honoured_up_to_the_provider_limit():
    p = RetryPolicy()  # maxRetryDelayMs 60000, as pi's retry.provider default
    assert p.max_retry_delay_ms == 60000
    assert retry_delay_ms(p, 1, 30000) == 30000  # not the 2 s of the back-off
    assert retry_delay_ms(p, 3, 1000) == 1000  # exactly what was asked, even below the back-off
    assert retry_delay_ms(p, 1, 60000) == 60000
    assert retry_delay_ms(p, 1, 1500.2) == 1501  # never earlier than asked
    assert retry_delay_ms(p, 2, -4000) == 0  # a date already past
    # above the limit pi's provider retry gives up on the server's delay: the back-off applies
    assert retry_delay_ms(p, 2, 60001) == 4000
    assert retry_delay_ms(RetryPolicy(max_retry_delay_ms=5000), 1, 30000) == 2000
    assert retry_delay_ms(RetryPolicy(max_retry_delay_ms=0), 1, 3_600_000) == 3_600_000  # 0: no limit
    assert retry_delay_ms(RetryPolicy(max_retry_delay_ms=None), 1, 90000) == 2000  # None: pi's default limit
    assert retry_delay_ms(p, 1, float("nan")) == 2000 and retry_delay_ms(p, 1, float("inf")) == 2000
    assert retry_delay_ms({"baseDelayMs": 10, "maxRetryDelayMs": 100}, 1, 150) == 10


def test_provider_limit_from_settings_and_its_legacy_name():
    assert RetryPolicy.from_settings({"retry": {"provider": {"maxRetryDelayMs": 7000}}}).max_retry_delay_ms == 7000
    assert RetryPolicy.from_settings({"retry": {"maxDelayMs": 9000}}).max_retry_delay_ms == 9000
    both = {"retry": {"maxDelayMs": 9000, "provider": {"maxRetryDelayMs": 0}}}
    assert RetryPolicy.from_settings(both).max_retry_delay_ms == 0
    assert RetryPolicy.from_settings({}).max_retry_delay_ms == 60000


def test_summary_retry_waits_what_the_provider_asked():
    from pi_lab.llm._assistant import AssistantMessage

    limited = AssistantMessage(reply(None, stop="error", error="429 rate limit"))
    limited.retry_after_ms = 120.0
    responses = [limited, reply("fine")]
    stamps: list[float] = []

    async def produce():
        stamps.append(time.monotonic())
        return responses.pop(0)

    events = Recorder()
    out = run(retry_assistant_call(produce, policy(base_delay_ms=5000), callbacks=events))
    assert out["stopReason"] == "stop"
    assert events.events[0] == ("scheduled", 1, 3, 120, "429 rate limit")
    assert 0.12 <= stamps[1] - stamps[0] < 2.0  # waited the server's 120 ms, not the 5 s back-off
