"""AgentSession's parts: one run state with one cancellation registry, refusals kept apart from
failures, and the event order pi gives automatic and manual compaction (agent-loop.md §12)."""

from __future__ import annotations

import asyncio

import pytest

from pi_lab.agent import (
    ALREADY_PROCESSING,
    NAVIGATE_WHILE_COMPACTING,
    NAVIGATE_WHILE_RUNNING,
    PROMPT_DURING_COMPACTION,
    CompactionCancelled,
    InvalidEntry,
)
from pi_lab.agent.run_state import AUTO_COMPACTION, BRANCH_SUMMARY, MANUAL_COMPACTION, RETRY, RunState
from pi_lab.compaction import CompactionSettings, RetryPolicy, SummarizationError
from pi_lab.errors import PiLabError, Refused
from pi_lab.llm import FaultReply


def two_turns(r):
    r.client.push("a1 answer", "a2 answer")
    r.prompt("u1 question")
    r.prompt("u2 question")
    return [e["id"] for e in r.sm.get_branch()]


async def until(predicate):
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never met")


# ------------------------------------------------------------------ the run state


def test_cancel_sets_only_the_kinds_asked_for():
    run = RunState()
    ops = {kind: run.begin(kind) for kind in (RETRY, AUTO_COMPACTION, MANUAL_COMPACTION, BRANCH_SUMMARY)}
    run.cancel(MANUAL_COMPACTION, AUTO_COMPACTION)
    assert {k for k, op in ops.items() if op.cancelled} == {MANUAL_COMPACTION, AUTO_COMPACTION}
    run.cancel()
    assert all(op.cancelled for op in ops.values())


def test_ending_an_older_operation_keeps_the_newer_one():
    run = RunState()
    old = run.begin(AUTO_COMPACTION)
    new = run.begin(AUTO_COMPACTION)
    run.end(old)
    assert run.running(AUTO_COMPACTION)
    run.cancel(AUTO_COMPACTION)
    assert new.cancelled and not old.cancelled
    run.end(new)
    run.end(new)  # repeating is harmless
    assert not run.running(AUTO_COMPACTION)


# ------------------------------------------------------------------ which abort stops what


def waiting_tree_hook(log):
    async def before_tree(preparation, signal):
        log.append("waiting")
        await until(signal.is_set)
        log.append("cancelled")
        return None

    return before_tree


def test_abort_compaction_does_not_stop_a_branch_summary_but_abort_branch_summary_does(rig):
    log = []
    r = rig(before_tree=waiting_tree_hook(log))
    u1, a1, u2, a2 = two_turns(r)

    async def scenario():
        task = asyncio.ensure_future(r.agent.navigate_tree(u2, summarize=True))
        await until(lambda: log == ["waiting"])
        assert r.agent.is_compacting
        r.agent.abort_compaction()
        r.agent.abort_retry()
        await asyncio.sleep(0.05)
        assert log == ["waiting"] and not task.done()
        r.agent.abort_branch_summary()
        return await task

    result = r.run(scenario())
    assert result.cancelled and result.aborted and r.sm.leaf_id == a2
    assert not r.agent.is_compacting


def test_abort_stops_a_branch_summary(rig):
    log = []
    r = rig(before_tree=waiting_tree_hook(log))
    u1, a1, u2, a2 = two_turns(r)

    async def scenario():
        task = asyncio.ensure_future(r.agent.navigate_tree(u2, summarize=True))
        await until(lambda: log == ["waiting"])
        await r.agent.abort()
        return await task

    assert r.run(scenario()).aborted is True and r.sm.leaf_id == a2


def test_abort_branch_summary_does_not_stop_a_compaction(rig):
    seen = []

    async def before_compact(**inputs):
        seen.append("waiting")
        await until(inputs["signal"].is_set)
        return None

    r = rig(settings=CompactionSettings(keep_recent_tokens=1), before_compact=before_compact)
    two_turns(r)

    async def scenario():
        task = asyncio.ensure_future(r.agent.compact())
        await until(lambda: seen == ["waiting"])
        r.agent.abort_branch_summary()
        r.agent.abort_retry()
        await asyncio.sleep(0.05)
        assert not task.done()
        r.agent.abort_compaction()
        with pytest.raises(CompactionCancelled):
            await task

    r.run(scenario())
    assert not r.agent.is_compacting


def test_abort_stops_a_retry_back_off(rig):
    r = rig(script=[FaultReply("overloaded"), "never"], retry=RetryPolicy(base_delay_ms=30_000))

    async def scenario():
        task = asyncio.ensure_future(r.agent.prompt("go"))
        await until(lambda: r.of("auto_retry_start"))
        await r.agent.abort()
        await task

    r.run(scenario())
    assert r.of("auto_retry_end")[-1]["finalError"] == "Retry cancelled" and len(r.client.calls) == 1


# ------------------------------------------------------------------ pi's event order


COMPACTION_EVENTS = ("compaction_start", "session_compact", "compaction_end")


def automatic(rig):
    """A threshold compaction after the second run (as in test_threshold_compaction_after_a_run)."""
    r = rig(script=["a" * 400, "b" * 400], window=400,
            settings=CompactionSettings(reserve_tokens=150, keep_recent_tokens=50))
    return r


def manual(rig):
    r = rig(settings=CompactionSettings(keep_recent_tokens=1))
    two_turns(r)
    return r


def compacting_at_end(r):
    seen = []
    r.agent.subscribe(lambda e: e["type"] == "compaction_end" and seen.append((e["reason"], r.agent.is_compacting)))
    return seen


def test_manual_compaction_is_finished_at_its_end_event_an_automatic_one_is_not(rig):
    # pi clears the manual controller before compaction_end (its listeners may prompt again);
    # the automatic one is cleared in `finally`, after its events
    r = automatic(rig)
    seen = compacting_at_end(r)
    r.prompt("one " + "x" * 200)
    r.prompt("two " + "x" * 200)
    assert seen == [("threshold", True)] and not r.agent.is_compacting
    r = manual(rig)
    seen = compacting_at_end(r)
    r.run(r.agent.compact())
    assert seen == [("manual", False)]


def test_one_place_emits_the_same_events_for_both(rig):
    r = automatic(rig)
    r.prompt("one " + "x" * 200)
    r.prompt("two " + "x" * 200)
    auto = [e for e in r.events if e["type"] in COMPACTION_EVENTS]
    r = manual(rig)
    result = r.run(r.agent.compact())
    by_hand = [e for e in r.events if e["type"] in COMPACTION_EVENTS]
    assert [e["type"] for e in auto] == [e["type"] for e in by_hand] == list(COMPACTION_EVENTS)
    assert [e["reason"] for e in auto] == ["threshold"] * 3 and [e["reason"] for e in by_hand] == ["manual"] * 3
    for events in (auto, by_hand):
        start, done, end = events
        assert set(end) == {"type", "reason", "result", "aborted", "willRetry"} and end["aborted"] is False
        assert set(end["result"]) == {"summary", "firstKeptEntryId", "tokensBefore", "estimatedTokensAfter",
                                      "usage", "details"}
        assert done["compactionEntry"]["type"] == "compaction" and done["fromExtension"] is False
    assert by_hand[-1]["result"]["estimatedTokensAfter"] == result.estimated_tokens_after


# ------------------------------------------------------------------ refusals and failures


def test_refusals_are_refused_and_still_runtime_errors(rig):
    r = rig(script=["slow answer with many words to stream out", "x"])

    async def scenario():
        task = asyncio.ensure_future(r.agent.prompt("go"))
        await asyncio.sleep(0)
        with pytest.raises(Refused) as busy:
            await r.agent.prompt("second")
        with pytest.raises(Refused) as navigating:
            await r.agent.navigate_tree("whatever")
        with pytest.raises(Refused, match="only be appended while the session is idle"):
            r.agent.send_custom_message("note", "text")
        await task
        return busy.value, navigating.value

    busy, navigating = r.run(scenario())
    assert isinstance(busy, RuntimeError) and str(busy) == ALREADY_PROCESSING
    assert str(navigating) == NAVIGATE_WHILE_RUNNING


def test_nothing_to_compact_is_a_refusal(rig):
    r = rig(script=["short"])
    with pytest.raises(Refused, match="^Nothing to compact"):
        r.run(r.agent.compact())
    assert r.of("compaction_end")[-1]["errorMessage"] == "Compaction failed: Nothing to compact (session too small)"


def test_refused_while_a_compaction_runs(rig):
    async def hook(**inputs):
        await until(inputs["signal"].is_set)

    r = rig(settings=CompactionSettings(keep_recent_tokens=1), before_compact=hook)
    two_turns(r)

    async def scenario():
        task = asyncio.ensure_future(r.agent.compact())
        await asyncio.sleep(0.05)
        with pytest.raises(Refused) as navigating:
            await r.agent.navigate_tree(r.sm.get_branch()[0]["id"])
        with pytest.raises(Refused) as prompting:
            await r.agent.prompt("during")
        r.agent.abort_compaction()
        with pytest.raises(CompactionCancelled) as cancelled:
            await task
        return str(navigating.value), str(prompting.value), cancelled.value

    navigating, prompting, cancelled = r.run(scenario())
    assert (navigating, prompting) == (NAVIGATE_WHILE_COMPACTING, PROMPT_DURING_COMPACTION)
    # a cancel is not a refusal, but pi_lab's own error with pi's message
    assert isinstance(cancelled, PiLabError) and not isinstance(cancelled, Refused)


def test_unknown_or_unfit_entries_are_refused_with_their_old_types(rig):
    r = rig()
    u1, a1, u2, a2 = two_turns(r)
    with pytest.raises(InvalidEntry) as missing:
        r.run(r.agent.navigate_tree("nope"))
    assert isinstance(missing.value, KeyError) and isinstance(missing.value, Refused)
    assert str(missing.value) == "Entry nope not found"  # not KeyError's quoted repr
    with pytest.raises(ValueError, match="^Invalid entry ID for forking$") as unfit:
        r.run(r.agent.fork(a1))
    assert isinstance(unfit.value, Refused)
    with pytest.raises(ValueError) as wrong_position:
        r.run(r.agent.fork(a1, position="after"))
    assert not isinstance(wrong_position.value, PiLabError)  # a caller's bug, not a refusal


def test_a_failed_branch_summary_is_a_failure_not_a_refusal(rig):
    r = rig(retry=RetryPolicy(enabled=False))
    u1, a1, u2, a2 = two_turns(r)
    r.client.push_summary(FaultReply("error", "boom"))
    with pytest.raises(SummarizationError, match="Branch summarization failed: boom") as failed:
        r.run(r.agent.navigate_tree(u2, summarize=True))
    assert isinstance(failed.value, PiLabError) and not isinstance(failed.value, Refused)
    assert isinstance(failed.value, RuntimeError)
