"""compaction.test.ts's buildSessionContext cases (catalogue §2): what the model sees after
one or two compactions, and the model / thinking level restored across them."""

from __future__ import annotations

from cbuild import Branch

from pi_lab.session import build_session_context


def base() -> Branch:
    b = Branch()
    b.user("u1", "first")
    b.asst("a1", "first answer")
    b.user("u2", "second")
    b.asst("a2", "second answer")
    return b


def test_no_compaction():
    context = build_session_context(base().entries)
    assert [m["role"] for m in context.messages] == ["user", "assistant", "user", "assistant"]
    assert context.thinking_level == "off"
    assert context.model == {"provider": "anthropic", "modelId": "claude-test"}


def test_single_compaction_keeps_from_u2():
    b = base()
    b.compaction("c1", "Summary 1", "u2")
    b.user("u3", "third")
    context = build_session_context(b.entries)
    assert [m["role"] for m in context.messages] == ["compactionSummary", "user", "assistant", "user"]
    b.asst("a3", "third answer")
    context = build_session_context(b.entries)
    assert len(context.messages) == 5 and context.messages[0]["summary"] == "Summary 1"


def test_two_compactions_use_the_latest_summary():
    b = base()
    b.compaction("c1", "Summary 1", "u2")
    b.user("u3", "third")
    b.asst("a3", "third answer")
    b.compaction("c2", "Summary 2", "u3")
    b.user("u4", "fourth")
    b.asst("a4", "fourth answer")
    messages = build_session_context(b.entries).messages
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant", "user", "assistant"]
    assert messages[0]["summary"] == "Summary 2"


def test_compaction_keeping_from_the_first_entry():
    b = base()
    b.compaction("c1", "Summary 1", "u1")
    messages = build_session_context(b.entries).messages
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant", "user", "assistant"]


def test_model_and_thinking_level_survive_compaction():
    b = Branch()
    b.model_change("m")
    b.user("u1", "hi")
    msg = b.asst("a1", "hello")
    msg["message"]["model"] = "claude-sonnet-4-5"
    b.compaction("c1", "Summary", "a1")
    b.thinking("t", "high")
    context = build_session_context(b.entries)
    assert context.model == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    assert context.thinking_level == "high"
