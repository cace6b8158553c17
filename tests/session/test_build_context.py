"""Projection of a path into model messages (tree-and-context.md §5–§6, catalogue build-context)."""

from __future__ import annotations

import pytest
from helpers import asst_msg, chain, entry, header, msg, roles, texts, user_msg

from pi_lab.session import (
    SessionManager,
    build_context_entries,
    build_session_context,
    build_session_projection,
)


def sm_of(*entries):
    return SessionManager.in_memory(entries=[header(), *entries])


def test_empty_session_has_no_messages():
    context = build_session_context([])
    assert context.messages == [] and context.thinking_level == "off" and context.model is None


def test_linear_chain_keeps_roles_in_order():
    entries = chain(("1", user_msg("a")), ("2", asst_msg("b")), ("3", user_msg("c")), ("4", asst_msg("d")))
    assert roles(build_session_context(entries).messages) == ["user", "assistant", "user", "assistant"]


def test_hidden_custom_message_still_reaches_the_model():
    entries = [entry("custom_message", "1", None, customType="note", content="remember", display=False)]
    (message,) = build_session_context(entries).messages
    assert message == {"role": "custom", "customType": "note", "content": "remember", "display": False,
                       "timestamp": message["timestamp"]}
    assert list(message) == ["role", "customType", "content", "display", "timestamp"]


def test_thinking_level_change_sets_the_level():
    entries = [msg("1", None, user_msg("q")), entry("thinking_level_change", "2", "1", thinkingLevel="high"),
               msg("3", "2", asst_msg("a"))]
    context = build_session_context(entries)
    assert context.thinking_level == "high" and len(context.messages) == 2


def test_assistant_model_overrides_an_earlier_model_change():
    entries = [msg("1", None, user_msg("q")), entry("model_change", "2", "1", provider="openai", modelId="gpt-4"),
               msg("3", "2", asst_msg("a"))]
    assert build_session_context(entries).model == {"provider": "anthropic", "modelId": "claude-test"}
    assert build_session_context(entries[:2]).model == {"provider": "openai", "modelId": "gpt-4"}


def test_compaction_keeps_from_first_kept_entry():
    entries = chain(("1", user_msg("first")), ("2", asst_msg("response1")), ("3", user_msg("second")),
                    ("4", asst_msg("response2")))
    entries.append(entry("compaction", "5", "4", summary="Summary of first two turns", firstKeptEntryId="3", tokensBefore=1000))
    entries += [msg("6", "5", user_msg("third")), msg("7", "6", asst_msg("response3"))]
    messages = build_session_context(entries).messages
    assert texts(messages) == ["Summary of first two turns", "second", "response2", "third", "response3"]


def test_latest_of_two_compactions_wins():
    entries = chain(("1", user_msg("u1")), ("2", asst_msg("a1")))
    entries.append(entry("compaction", "3", "2", summary="first", firstKeptEntryId="1", tokensBefore=10))
    entries += [msg("4", "3", user_msg("u2")), msg("5", "4", asst_msg("a2"))]
    entries.append(entry("compaction", "6", "5", summary="second", firstKeptEntryId="4", tokensBefore=20))
    entries.append(msg("7", "6", user_msg("u3")))
    messages = build_session_context(entries).messages
    assert texts(messages) == ["second", "u2", "a2", "u3"]


def test_custom_entries_in_kept_range_are_context_entries_without_messages():
    entries = [
        msg("1", None, user_msg("u")),
        entry("custom", "2", "1", customType="x"),
        msg("3", "2", asst_msg("a")),
        entry("custom", "4", "3", customType="y"),
        msg("5", "4", user_msg("u2")),
        entry("compaction", "6", "5", summary="s", firstKeptEntryId="4", tokensBefore=5),
        entry("custom", "7", "6", customType="z"),
        msg("8", "7", asst_msg("a2")),
    ]
    assert [e["id"] for e in build_context_entries(entries)] == ["6", "4", "5", "7", "8"]
    assert roles(build_session_context(entries).messages) == ["compactionSummary", "user", "assistant"]


def test_settings_come_from_the_full_path_across_compaction():
    entries = [msg("1", None, user_msg("u")), entry("thinking_level_change", "2", "1", thinkingLevel="high"),
               msg("3", "2", asst_msg("a")), msg("4", "3", user_msg("u2")),
               entry("compaction", "5", "4", summary="s", firstKeptEntryId="4", tokensBefore=5)]
    context = build_session_context(entries)
    assert context.thinking_level == "high"
    assert roles(context.messages) == ["compactionSummary", "user"]


def test_branches_select_by_leaf():
    entries = [msg("1", None, user_msg("start")), msg("2", "1", asst_msg("r1")),
               msg("3", "2", user_msg("branch A")), msg("4", "2", user_msg("branch B"))]
    assert texts(build_session_context(entries, "3").messages)[-1] == "branch A"
    assert texts(build_session_context(entries, "4").messages)[-1] == "branch B"


def test_branch_summary_sits_between_branch_point_and_new_direction():
    entries = [msg("1", None, user_msg("start")), msg("2", "1", asst_msg("r1")), msg("3", "2", user_msg("abandoned")),
               entry("branch_summary", "4", "2", fromId="3", summary="tried X"), msg("5", "4", user_msg("new direction"))]
    messages = build_session_context(entries, "5").messages
    assert roles(messages) == ["user", "assistant", "branchSummary", "user"]
    assert messages[2]["summary"] == "tried X" and messages[2]["fromId"] == "3"


def test_empty_branch_summary_gives_no_message():
    entries = [msg("1", None, user_msg("q")), entry("branch_summary", "2", "1", fromId="root", summary="")]
    assert roles(build_session_context(entries).messages) == ["user"]


def test_unknown_leaf_falls_back_to_last_entry():
    entries = chain(("1", user_msg("a")), ("2", asst_msg("b")))
    assert len(build_session_context(entries, "nope").messages) == 2


def test_leaf_none_is_an_empty_path():
    entries = chain(("1", user_msg("a")), ("2", asst_msg("b")))
    assert build_session_context(entries, None).messages == []


def test_orphan_leaf_sees_only_itself():
    entries = [msg("1", None, user_msg("a")), msg("2", "missing", user_msg("orphan"))]
    assert texts(build_session_context(entries, "2").messages) == ["orphan"]


def test_null_content_is_normalised():
    entries = [msg("1", None, {"role": "user", "content": None, "timestamp": 1}),
               msg("2", "1", {"role": "system", "timestamp": 2})]
    messages = build_session_context(entries).messages
    assert messages[0]["content"] == [] and messages[1]["content"] == ""
    assert entries[0]["message"]["content"] is None  # the stored entry is untouched


def test_projection_maps_messages_to_source_entries():
    entries = chain(("1", user_msg("a")), ("2", asst_msg("b")))
    projection = build_session_projection(entries)
    assert [(p.source["id"], len(p.messages)) for p in projection.entries] == [("1", 1), ("2", 1)]
    assert projection.messages[1] is entries[1]["message"]


def test_older_compaction_in_kept_range_yields_nothing():
    # explainer: U1 A1 U2 A2 C1 U3 A3 C2 with C2 keeping from U2
    entries = chain(("U1", user_msg("u1")), ("A1", asst_msg("a1")), ("U2", user_msg("u2")), ("A2", asst_msg("a2")))
    entries.append(entry("compaction", "C1", "A2", summary="c1", firstKeptEntryId="U2", tokensBefore=1))
    entries += [msg("U3", "C1", user_msg("u3")), msg("A3", "U3", asst_msg("a3"))]
    entries.append(entry("compaction", "C2", "A3", summary="c2", firstKeptEntryId="U2", tokensBefore=2))
    assert [e["id"] for e in build_context_entries(entries)] == ["C2", "U2", "A2", "C1", "U3", "A3"]
    assert texts(build_session_context(entries).messages) == ["c2", "u2", "a2", "u3", "a3"]


@pytest.mark.parametrize("kept", ["C", "elsewhere", None])
def test_unresolvable_first_kept_keeps_nothing_before(kept):
    entries = chain(("1", user_msg("u1")), ("2", asst_msg("a1")))
    entries.append(entry("compaction", "C", "2", summary="s", firstKeptEntryId=kept, tokensBefore=1))
    entries.append(msg("3", "C", user_msg("after")))
    assert texts(build_session_context(entries).messages) == ["s", "after"]
