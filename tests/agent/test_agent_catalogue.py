"""Regression cases of pi's agent-session suites (catalogue §3), driven directly."""

from __future__ import annotations

import asyncio

from helpers import Clock, asst_msg, header, msg, tool_result, usage, user_msg

from pi_lab.agent import AgentSession
from pi_lab.compaction import CompactionSettings
from pi_lab.llm import Model, OfflineModel
from pi_lab.session import SessionManager
from pi_lab.session.ids import epoch_ms


def session_of(entries, *, window=100, max_tokens=100, reserve=10, keep=1):
    sm = SessionManager.in_memory(entries=[header(), *entries], clock=Clock())
    client = OfflineModel(context_window=window, max_tokens=max_tokens)
    model = Model("anthropic", "claude-test", "anthropic-messages", context_window=window, max_tokens=max_tokens)
    agent = AgentSession(sm, model=model, client=client, settings=CompactionSettings(reserve_tokens=reserve, keep_recent_tokens=keep),
                         record_startup=False)
    calls = []

    async def fake_auto(reason, will_retry):
        calls.append((reason, will_retry))
        return False

    agent._compactor.run_automatic = fake_auto
    return sm, agent, calls


def check(agent, message, **kw):
    return asyncio.run(agent._compactor.check(message, **kw))


def test_zero_usage_stop_uses_the_pure_estimate():
    # issue 8328: no usage anywhere, a 400-character user message crosses 100 − 10
    entries = [msg("u", None, user_msg("x" * 400)),
               msg("a", "u", asst_msg("ok", use=usage(0, 0), ts=10))]
    sm, agent, calls = session_of(entries)
    check(agent, sm.get_entry("a")["message"])
    assert calls == [("threshold", False)]


def test_zero_usage_with_short_message_does_nothing():
    entries = [msg("u", None, user_msg("hi")), msg("a", "u", asst_msg("ok", use=usage(0, 0), ts=10))]
    sm, agent, calls = session_of(entries)
    check(agent, sm.get_entry("a")["message"])
    assert calls == []


def test_error_after_good_usage_over_threshold_compacts_by_threshold():
    entries = [msg("u", None, user_msg("q")),
               msg("a", "u", asst_msg("ok", use=usage(91, 0), ts=10)),
               msg("u2", "a", user_msg("again")),
               msg("e", "u2", asst_msg(None, stop="error", error="529 overloaded", use=usage(0, 0), ts=20))]
    sm, agent, calls = session_of(entries)
    check(agent, sm.get_entry("e")["message"])
    assert calls == [("threshold", False)]


def test_stale_pre_compaction_usage_never_triggers():
    entries = [msg("u", None, user_msg("q")),
               msg("a", "u", asst_msg("ok", use=usage(610_000, 0), ts=10)),
               {"type": "compaction", "id": "c", "parentId": "a", "timestamp": "2026-07-29T09:00:05.000Z",
                "summary": "s", "firstKeptEntryId": "a", "tokensBefore": 610_000},
               msg("u2", "c", user_msg("next"))]
    sm, agent, calls = session_of(entries, window=200_000, reserve=16_384)
    # the assistant's timestamp (10 ms) is long before the compaction
    check(agent, sm.get_entry("a")["message"], skip_aborted_check=False)
    assert calls == []


def test_only_kept_pre_compaction_usage_is_ignored():
    ts_compaction = "2026-07-29T09:00:05.000Z"
    entries = [msg("u", None, user_msg("q")),
               msg("a", "u", asst_msg("ok", use=usage(190_000, 0), ts=10)),
               {"type": "compaction", "id": "c", "parentId": "a", "timestamp": ts_compaction,
                "summary": "s", "firstKeptEntryId": "u", "tokensBefore": 190_000},
               msg("u2", "c", user_msg("next")),
               msg("e", "u2", asst_msg(None, stop="error", error="529 overloaded", use=usage(0, 0),
                                       ts=1785315605000 + 1000))]
    sm, agent, calls = session_of(entries, window=200_000, reserve=16_384)
    check(agent, sm.get_entry("e")["message"])
    assert calls == []


def test_overflow_of_another_model_is_ignored():
    entries = [msg("u", None, user_msg("q")),
               msg("e", "u", asst_msg(None, stop="error", error="prompt is too long: 300000 tokens > 200000",
                                      provider="other", model="small", use=usage(0, 0), ts=10))]
    sm, agent, calls = session_of(entries, window=1_000_000, reserve=16_384)
    check(agent, sm.get_entry("e")["message"])
    assert calls == []


def test_pre_prompt_compaction_never_continues():
    # window 100, maxTokens 100, keep 1, reserve 0: a seeded length stop at the limit of usage
    clock = Clock()
    sm = SessionManager.in_memory(clock=clock)
    sm.append_message(user_msg("seed question", ts=1))
    sm.append_message(asst_msg("cut", stop="length", use=usage(100, 0), ts=2, provider="pi-lab", model="offline"))
    client = OfflineModel(["fresh answer"], context_window=100, max_tokens=100, clock=lambda: epoch_ms(clock()))
    agent = AgentSession(sm, client=client, settings=CompactionSettings(reserve_tokens=0, keep_recent_tokens=1),
                         record_startup=False)
    events = []
    agent.subscribe(events.append)
    asyncio.run(agent.prompt("next prompt"))
    ends = [e for e in events if e["type"] == "compaction_end"]
    assert ends and ends[0]["reason"] == "overflow" and ends[0]["willRetry"] is True
    conversation = [c for c in client.calls if "<conversation>" not in str(c.context["messages"])
                    and "# Conversation" not in str(c.context["messages"])]
    assert len(conversation) == 1
    users = [m for m in agent.messages if m["role"] == "user"]
    assert users[-1]["content"][0]["text"] == "next prompt"


def test_omit_recovery_attempt_takes_only_its_own_tool_results():
    clock = Clock()
    sm = SessionManager.in_memory(clock=clock)
    sm.append_message(user_msg("go"))
    attempt = asst_msg(None, tool_calls=[{"id": "c1", "name": "read", "arguments": {"path": "a"}},
                                          {"id": "c2", "name": "read", "arguments": {"path": "b"}}], stop="toolUse")
    sm.append_message(attempt)
    sm.append_message(tool_result("c1", "read", "A"))
    sm.append_message(tool_result("c2", "read", "B"))
    sm.append_message(tool_result("other", "read", "unrelated"))
    sm.append_message(asst_msg("next assistant"))
    sm.append_message(tool_result("c1", "read", "after the next assistant"))
    agent = AgentSession(sm, client=OfflineModel(), record_startup=False)
    attempt_in_state = next(m for m in agent.messages if m.get("stopReason") == "toolUse")
    agent._transcript.omit_recovery_attempt(attempt_in_state)
    edits = [e for e in sm.entries if e["type"] == "context_edit"]
    targets = [sm.get_entry(e["targetId"])["message"] for e in edits]
    assert [t.get("toolCallId", "assistant") for t in targets] == ["assistant", "c1", "c2"]
    remaining = [(m["role"], m.get("toolCallId")) for m in agent.messages]
    assert remaining == [("user", None), ("toolResult", "other"), ("assistant", None), ("toolResult", "c1")]


def test_custom_message_and_bash_are_persisted():
    sm = SessionManager.in_memory(clock=Clock())
    agent = AgentSession(sm, client=OfflineModel(["answer"]), record_startup=False)
    agent.send_custom_message("note", "remember this", display=False)
    agent.record_bash("ls", "a\nb", 0)
    asyncio.run(agent.prompt("go"))
    assert [e["type"] for e in sm.entries[:2]] == ["custom_message", "message"]
    roles = [m["role"] for m in agent.messages]
    assert roles[:2] == ["custom", "bashExecution"] and roles[-2:] == ["user", "assistant"]


def test_session_name_event_and_sanitising():
    sm = SessionManager.in_memory(clock=Clock())
    agent = AgentSession(sm, client=OfflineModel(), record_startup=False)
    events = []
    agent.subscribe(events.append)
    agent.set_session_name("My\nsession")
    assert events == [{"type": "session_info_changed", "name": "My session"}]


def test_startup_records_model_and_thinking_level():
    sm = SessionManager.in_memory(clock=Clock())
    AgentSession(sm, client=OfflineModel(), thinking_level="high")
    assert [(e["type"], e.get("modelId") or e.get("thinkingLevel")) for e in sm.entries] == [
        ("model_change", "offline"), ("thinking_level_change", "high")]
