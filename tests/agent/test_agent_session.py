"""AgentSession behaviour (agent-loop.md; catalogue §3)."""

from __future__ import annotations

import asyncio

import pytest

from pi_lab.agent import (
    ALREADY_PROCESSING,
    LENGTH_RETRY_FAILED,
    NAVIGATE_WHILE_RUNNING,
    OVERFLOW_RETRY_FAILED,
    tool,
)
from pi_lab.compaction import CompactionSettings, RetryPolicy
from pi_lab.llm import FaultReply, ToolCallReply

PLAIN = ["agent_start", "message_start", "message_end", "turn_start", "message_start", "message_update",
         "message_end", "turn_end", "agent_end", "agent_settled"]


@tool
def echo(text: str) -> str:
    """Echo text back.

    text: what to echo
    """
    return text.upper()


def core(types):
    return [t for t in types if t in set(PLAIN) | {"tool_execution_start", "tool_execution_end"}]


def dedupe_updates(types):
    out = []
    for t in types:
        if t == "message_update" and out and out[-1] == "message_update":
            continue
        out.append(t)
    return out


def conversation_calls(r):
    """Model calls of the conversation itself (summary requests excluded)."""
    def is_summary(call):
        text = str(call.context["messages"][0]["content"]) if call.context["messages"] else ""
        return "<conversation>" in text or "# Conversation" in text
    return [c for c in r.client.calls if not is_summary(c)]


def test_event_order_plain_prompt(rig):
    r = rig(script=["a reply with several words in it to stream"])
    r.prompt("hello")
    assert dedupe_updates(core(r.types())) == PLAIN
    assert r.branch_kinds() == ["user", "assistant"]


def test_event_order_with_a_tool_call(rig):
    r = rig(script=[ToolCallReply("echo", {"text": "hi"}), "done and dusted"], tools=[echo])
    r.prompt("call the tool")
    types = dedupe_updates(core(r.types()))
    # the first prompt also carries the tool-loadout system message
    assert types == ["agent_start", "message_start", "message_end", "message_start", "message_end", "turn_start",
                     "message_start", "message_update", "message_end", "tool_execution_start", "tool_execution_end", "message_start", "message_end", "turn_end",
                     "turn_start", "message_start", "message_update", "message_end", "turn_end", "agent_end",
                     "agent_settled"]
    assert r.branch_kinds() == ["system", "user", "assistant", "toolResult", "assistant"]
    result = r.agent.session_manager.get_branch()[3]["message"]
    assert result["content"] == [{"type": "text", "text": "HI"}] and result["isError"] is False
    system = r.agent.session_manager.get_branch()[0]["message"]
    assert system["toolsAdded"][0]["name"] == "echo" and system["content"] == ""


def test_user_message_is_persisted_before_the_model_answers(rig):
    r = rig(script=["answer"])
    seen = []
    r.agent.subscribe(lambda e: e["type"] == "turn_start" and seen.append(r.sm.flushed))
    r.prompt("first")
    assert seen == [True]


def test_transient_error_is_retried_and_the_attempt_omitted(rig):
    r = rig(script=[FaultReply("overloaded"), "recovered answer"])
    r.prompt("go")
    assert r.branch_kinds() == ["user", "assistant!", "context_edit", "assistant"]
    assert [e["attempt"] for e in r.of("auto_retry_start")] == [1]
    assert r.of("auto_retry_end") == [{"type": "auto_retry_end", "success": True, "attempt": 1}]
    assert [m["role"] for m in r.agent.messages] == ["user", "assistant"]


def test_retries_exhausted(rig):
    r = rig(script=[FaultReply("rate_limit")] * 3, retry=RetryPolicy(max_retries=2, base_delay_ms=1))
    r.prompt("go")
    assert len(r.of("auto_retry_start")) == 2
    end = r.of("auto_retry_end")[-1]
    assert end["success"] is False and end["attempt"] == 2 and "429" in end["finalError"]
    assert len(r.client.calls) == 3


@pytest.mark.parametrize("retry, fault", [(RetryPolicy(enabled=False), FaultReply("overloaded")),
                                          (RetryPolicy(base_delay_ms=1), FaultReply("error", "insufficient_quota"))])
def test_no_retry_when_disabled_or_not_retryable(rig, retry, fault):
    r = rig(script=[fault, "never"], retry=retry)
    r.prompt("go")
    assert len(r.client.calls) == 1 and r.of("auto_retry_start") == []


def test_retry_back_off_can_be_cancelled(rig):
    r = rig(script=[FaultReply("overloaded"), "never"], retry=RetryPolicy(base_delay_ms=30_000))

    async def scenario():
        task = asyncio.ensure_future(r.agent.prompt("go"))
        while not r.of("auto_retry_start"):
            await asyncio.sleep(0.01)
        r.agent.abort_retry()
        await task

    r.run(scenario())
    assert r.of("auto_retry_end")[-1] == {"type": "auto_retry_end", "success": False, "attempt": 1,
                                          "finalError": "Retry cancelled"}
    assert len(r.client.calls) == 1


def test_overflow_recovery_then_continue(rig):
    r = rig(script=["first answer here", FaultReply("overflow"), "after recovery"],
            settings=CompactionSettings(keep_recent_tokens=1))
    r.prompt("one")
    r.prompt("two")
    assert r.branch_kinds()[-4:] == ["assistant!", "context_edit", "compaction", "assistant"]
    end = r.of("compaction_end")[-1]
    assert end["reason"] == "overflow" and end["willRetry"] is True and end["aborted"] is False
    assert r.agent.messages[-1]["content"][0]["text"] == "after recovery"
    retried = r.client.calls[-1].context["messages"]
    assert all(m.get("stopReason") != "error" for m in retried)


def test_second_overflow_fails_once(rig):
    r = rig(script=["ok", FaultReply("overflow"), FaultReply("overflow")],
            settings=CompactionSettings(keep_recent_tokens=1))
    r.prompt("one")
    r.prompt("two")
    ends = r.of("compaction_end")
    assert [e["reason"] for e in ends] == ["overflow", "overflow"]
    assert ends[-1]["errorMessage"] == OVERFLOW_RETRY_FAILED and ends[-1]["result"] is None
    assert sum(k == "compaction" for k in r.branch_kinds()) == 1
    # a new user message resets the guard
    r.client.push(FaultReply("overflow"), "third time lucky")
    r.prompt("three")
    last = r.of("compaction_end")[-1]
    assert last["reason"] == "overflow" and last["willRetry"] is True and "errorMessage" not in last
    assert r.agent.messages[-1]["content"][0]["text"] == "third time lucky"


def test_recoverable_length_compacts_and_retries(rig):
    r = rig(script=["fine", FaultReply("length", output_tokens=5), "completed response"], max_tokens=100,
            settings=CompactionSettings(keep_recent_tokens=1))
    r.prompt("one")
    r.prompt("two")
    ends = r.of("compaction_end")
    assert len(ends) == 1 and ends[0]["reason"] == "overflow" and ends[0]["willRetry"] is True
    assert r.agent.messages[-1]["content"][0]["text"] == "completed response"


def test_length_at_the_output_limit_is_a_normal_truncation(rig):
    r = rig(script=[FaultReply("length")], max_tokens=100)
    r.prompt("write a lot")
    assert r.of("compaction_start") == [] and len(r.client.calls) == 1


def test_two_truncations_report_the_length_message(rig):
    r = rig(script=["fine", FaultReply("length", output_tokens=5), FaultReply("length", output_tokens=5)],
            max_tokens=100, settings=CompactionSettings(keep_recent_tokens=1))
    r.prompt("one")
    r.prompt("two")
    assert r.of("compaction_end")[-1]["errorMessage"] == LENGTH_RETRY_FAILED


def test_completed_answer_over_the_window_compacts_without_retry(rig):
    r = rig(script=["first reply", "second reply"], window=60, settings=CompactionSettings(reserve_tokens=0, keep_recent_tokens=1))
    r.prompt("one")
    r.prompt("two " + "y" * 400)
    ends = r.of("compaction_end")
    assert ends and ends[-1]["reason"] in ("overflow", "threshold") and ends[-1]["willRetry"] is False
    assert len(conversation_calls(r)) == 2  # the answer is not retried


def test_threshold_compaction_after_a_run(rig):
    r = rig(script=["a" * 400, "b" * 400], window=400, settings=CompactionSettings(reserve_tokens=150, keep_recent_tokens=50))
    r.prompt("one " + "x" * 200)
    r.prompt("two " + "x" * 200)
    assert r.of("compaction_end")[0]["reason"] == "threshold"
    assert r.agent.get_context_usage().tokens is None  # unknown right after a compaction
    r.prompt("three")
    assert r.agent.get_context_usage().tokens is not None


def test_disabled_compaction_never_runs_automatically(rig):
    r = rig(script=["a" * 400, "b" * 400], window=400,
            settings=CompactionSettings(enabled=False, reserve_tokens=150, keep_recent_tokens=50))
    r.prompt("one " + "x" * 200)
    r.prompt("two " + "x" * 200)
    assert r.of("compaction_start") == []


def test_manual_compaction_outcomes(rig):
    r = rig(script=["short"])
    with pytest.raises(RuntimeError, match="Nothing to compact"):
        r.run(r.agent.compact())
    r.prompt("hello " + "x" * 100)
    r.agent.settings = CompactionSettings(keep_recent_tokens=1)
    r.prompt("again")
    result = r.run(r.agent.compact("focus on greetings"))
    assert result.summary and result.tokens_before > 0 and result.estimated_tokens_after > 0
    entry = r.sm.get_branch()[-1]
    assert entry["type"] == "compaction" and entry["fromHook"] is False
    request = r.client.calls[-1].context["messages"][0]["content"][0]["text"]
    assert "Additional focus: focus on greetings" in request
    with pytest.raises(RuntimeError, match="^Already compacted$"):
        r.run(r.agent.compact())
    starts = [e for e in r.events if e["type"] == "compaction_start"]
    assert all(e["reason"] == "manual" for e in starts)
    ends = r.of("compaction_end")
    assert ends[-1]["errorMessage"] == "Compaction failed: Already compacted"


def test_before_compact_hook_can_cancel_or_supply(rig):
    decisions = iter([{"cancel": True}, {"compaction": {"summary": "from the hook", "firstKeptEntryId": None,
                                                        "tokensBefore": 999}}])
    seen = []

    def hook(**inputs):
        seen.append(inputs)
        return next(decisions)

    r = rig(script=["a", "b"], settings=CompactionSettings(keep_recent_tokens=1), before_compact=hook)
    r.prompt("one")
    r.prompt("two")
    with pytest.raises(RuntimeError, match="^Compaction cancelled$"):
        r.run(r.agent.compact())
    assert seen[0]["reason"] == "manual" and seen[0]["will_retry"] is False and seen[0]["preparation"].tokens_before >= 0
    seen[1:] = []
    first_user = r.sm.get_branch()[0]["id"]
    decisions = iter([{"compaction": {"summary": "from the hook", "firstKeptEntryId": first_user, "tokensBefore": 999}}])
    result = r.run(r.agent.compact())
    assert result.summary == "from the hook" and result.tokens_before == 999
    assert r.sm.get_branch()[-1]["fromHook"] is True
    assert r.of("session_compact")[-1]["fromExtension"] is True


def test_abort_compaction_while_the_hook_waits(rig):
    async def hook(**inputs):
        while not inputs["signal"].is_set():
            await asyncio.sleep(0.01)
        return None

    r = rig(script=["a", "b"], settings=CompactionSettings(keep_recent_tokens=1), before_compact=hook)
    r.prompt("one")
    r.prompt("two")

    async def scenario():
        task = asyncio.ensure_future(r.agent.compact())
        await asyncio.sleep(0.05)
        with pytest.raises(RuntimeError, match="Wait for the current compaction"):
            await r.agent.navigate_tree(r.sm.get_branch()[0]["id"])
        with pytest.raises(RuntimeError, match="compaction is in progress"):
            await r.agent.prompt("during")
        r.agent.abort_compaction()
        with pytest.raises(RuntimeError, match="^Compaction cancelled$"):
            await task

    r.run(scenario())
    assert r.of("compaction_end")[-1]["aborted"] is True
    assert all(e["type"] != "compaction" for e in r.sm.entries)


def test_prompt_while_running_needs_a_queue_choice(rig):
    r = rig(script=["one", "two", "three"])

    async def scenario():
        task = asyncio.ensure_future(r.agent.prompt("first"))
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError) as info:
            await r.agent.prompt("second")
        assert str(info.value) == ALREADY_PROCESSING
        await r.agent.prompt("queued", streaming_behavior="followUp")
        await task

    r.run(scenario())
    texts = [m["content"][0]["text"] for m in r.agent.messages if m["role"] == "user"]
    assert texts == ["first", "queued"]


def setup_tree(r):
    """u1 a1 u2 a2 on the offline model; returns the four ids."""
    r.client.push("a1 answer", "a2 answer")
    r.prompt("u1 question")
    r.prompt("u2 question")
    return [e["id"] for e in r.sm.get_branch()]


def test_navigate_to_root_user_without_summary(rig):
    r = rig()
    u1, a1, u2, a2 = setup_tree(r)
    result = r.run(r.agent.navigate_tree(u1))
    assert result.editor_text == "u1 question" and r.sm.leaf_id is None
    assert r.agent.messages == [] and len(r.sm.entries) == 4


def test_navigate_to_assistant(rig):
    r = rig()
    u1, a1, u2, a2 = setup_tree(r)
    result = r.run(r.agent.navigate_tree(a1))
    assert result.editor_text is None and r.sm.leaf_id == a1


def test_summarize_to_root_user_creates_a_second_root(rig):
    r = rig()
    u1, *_ = setup_tree(r)
    result = r.run(r.agent.navigate_tree(u1, summarize=True))
    entry = result.summary_entry
    assert entry["type"] == "branch_summary" and entry["parentId"] is None and entry["summary"]
    assert r.sm.leaf_id == entry["id"] and len(r.sm.get_tree()) == 2


def test_summarize_to_nested_user(rig):
    r = rig()
    u1, a1, u2, a2 = setup_tree(r)
    result = r.run(r.agent.navigate_tree(u2, summarize=True, custom_instructions="mention files"))
    assert result.summary_entry["parentId"] == a1 and result.summary_entry["fromId"] == a2
    assert {e["id"] for e in r.sm.get_children(a1)} == {u2, result.summary_entry["id"]}
    assert "Additional focus: mention files" in r.client.calls[-1].context["messages"][0]["content"][0]["text"]
    assert result.summary_entry["details"] == {"readFiles": [], "modifiedFiles": []}


def test_nothing_to_summarize_when_target_is_ahead(rig):
    r = rig()
    u1, a1, u2, a2 = setup_tree(r)
    r.sm.branch(a1)
    r.agent._refresh_finalized_context()
    before = len(r.sm.entries)
    r.run(r.agent.navigate_tree(a2, summarize=True))
    assert len(r.sm.entries) == before and r.sm.leaf_id == a2


def test_navigate_to_current_leaf_is_a_no_op(rig):
    r = rig()
    *_, a2 = setup_tree(r)
    assert r.run(r.agent.navigate_tree(a2, summarize=True)).cancelled is False
    assert r.of("session_tree") == []


def test_before_tree_cancel_and_supplied_summary(rig):
    answers = iter([{"cancel": True}, {"summary": {"summary": "ext summary", "usage": None}}])
    r = rig(before_tree=lambda **kw: next(answers))
    u1, a1, u2, a2 = setup_tree(r)
    result = r.run(r.agent.navigate_tree(u2, summarize=True))
    assert result.cancelled is True and r.sm.leaf_id == a2 and not r.agent.is_compacting
    result = r.run(r.agent.navigate_tree(u2, summarize=True))
    assert result.summary_entry["summary"] == "ext summary" and result.summary_entry["fromHook"] is True


def test_failed_branch_summary_changes_nothing(rig):
    r = rig(retry=RetryPolicy(enabled=False))
    u1, a1, u2, a2 = setup_tree(r)
    r.client.push_summary(FaultReply("error", "boom"))
    before = list(r.sm.entries)
    with pytest.raises(RuntimeError, match="Branch summarization failed: boom"):
        r.run(r.agent.navigate_tree(u2, summarize=True))
    assert r.sm.entries == before and r.sm.leaf_id == a2


def test_navigation_refused_while_running(rig):
    r = rig(script=["slow answer with many words to stream out"])

    async def scenario():
        task = asyncio.ensure_future(r.agent.prompt("go"))
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError) as info:
            await r.agent.navigate_tree("whatever")
        assert str(info.value) == NAVIGATE_WHILE_RUNNING
        await task

    r.run(scenario())


def test_fork_before_the_first_user_message(rig):
    r = rig()
    u1, *_ = setup_tree(r)
    old = r.sm.session_file
    result = r.run(r.agent.fork(u1))
    new = r.agent.session_manager
    assert result.selected_text == "u1 question" and new.entries == []
    assert new.header["parentSession"] == old and new.session_file != old
    import os

    assert not os.path.exists(new.session_file)


def test_fork_and_clone_copy_the_path(rig):
    r = rig()
    u1, a1, u2, a2 = setup_tree(r)
    old = r.sm.session_file
    result = r.run(r.agent.fork(u2))
    assert result.selected_text == "u2 question"
    assert [e["id"] for e in r.agent.session_manager.entries] == [u1, a1]
    assert [m["role"] for m in r.agent.messages] == ["user", "assistant"]
    clone = r.run(r.agent.fork(a1, position="at"))
    assert clone.selected_text is None and r.agent.session_manager.header["parentSession"] != old
    with pytest.raises(ValueError, match="Invalid entry ID for forking"):
        r.run(r.agent.fork(a1))


def test_fork_in_memory(rig):
    r = rig(in_memory=True)
    u1, a1, u2, a2 = setup_tree(r)
    r.run(r.agent.fork(u2))
    assert r.agent.session_manager.session_file is None
    assert [e["id"] for e in r.agent.session_manager.entries] == [u1, a1]


def test_context_usage_and_stats(rig):
    r = rig(script=["answer"])
    r.prompt("hello")
    usage = r.agent.get_context_usage()
    last = r.agent.messages[-1]["usage"]
    assert usage.tokens == last["totalTokens"] and usage.percent == pytest.approx(usage.tokens / 100_000 * 100)
    stats = r.agent.get_session_stats()
    assert (stats.user_messages, stats.assistant_messages, stats.total_messages) == (1, 1, 2)
    assert stats.input == last["input"]
