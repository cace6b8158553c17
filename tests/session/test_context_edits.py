"""context_edit: omission and replacement in the model's view only (catalogue §5 items 1–5)."""

from __future__ import annotations

import pytest
from helpers import Clock, Ids, asst_msg, header, roles, texts, tool_result, user_msg

from pi_lab.session import EntryNotFound, SessionManager


@pytest.fixture
def sm():
    return SessionManager.in_memory(uuid_factory=Ids(), clock=Clock())


def test_omission_hides_target_but_keeps_entry(sm, tmp_path):
    u = sm.append_message(user_msg("q"))
    a = sm.append_message(asst_msg("bad", stop="error", error="boom"))
    sm.append_context_edit(a, None)
    assert roles(sm.build_session_context().messages) == ["user"]
    assert sm.get_entry(a)["message"]["content"][0]["text"] == "bad"
    assert [e["type"] for e in sm.entries] == ["message", "message", "context_edit"]
    assert sm.entries[-1] == {"type": "context_edit", "id": sm.leaf_id, "parentId": a,
                              "timestamp": sm.entries[-1]["timestamp"], "targetId": a, "replacement": None}
    assert u


def test_omission_survives_reload(tmp_path):
    sm = SessionManager.create("/repo", tmp_path, uuid_factory=Ids(), clock=Clock())
    sm.append_message(user_msg("q"))
    a = sm.append_message(asst_msg("bad", stop="error", error="boom"))
    sm.append_context_edit(a, None)
    reopened = SessionManager.open(sm.session_file)
    assert roles(reopened.build_session_context().messages) == ["user"]


def test_string_replacement_normalised_for_assistant_and_tool_result(sm):
    sm.append_message(user_msg("q"))
    a = sm.append_message(asst_msg("long answer", tool_calls=[{"id": "c1", "name": "read", "arguments": {"path": "x"}}], stop="toolUse"))
    t = sm.append_message(tool_result("c1", "read", "huge output"))
    sm.append_context_edit(a, {"content": "short"})
    sm.append_context_edit(t, {"content": "trimmed"})
    edits = [e for e in sm.entries if e["type"] == "context_edit"]
    assert edits[0]["replacement"] == {"content": [{"type": "text", "text": "short"}]}
    assert edits[1]["replacement"] == {"content": [{"type": "text", "text": "trimmed"}]}
    messages = sm.build_session_context().messages
    assert messages[1]["content"] == [{"type": "text", "text": "short"}]
    assert messages[1]["stopReason"] == "toolUse" and messages[1]["usage"]["totalTokens"] == 15
    assert list(messages[1]) == list(sm.get_entry(a)["message"])  # key positions kept
    assert messages[2]["toolCallId"] == "c1" and texts([messages[2]]) == ["trimmed"]


def test_string_replacement_stays_a_string_for_user_and_custom(sm):
    u = sm.append_message(user_msg("original"))
    c = sm.append_custom_message_entry("note", "x", True)
    sm.append_context_edit(u, {"content": "edited"})
    sm.append_context_edit(c, {"content": "y"})
    assert [e["replacement"] for e in sm.entries if e["type"] == "context_edit"] == [{"content": "edited"}, {"content": "y"}]
    assert texts(sm.build_session_context().messages) == ["edited", "y"]


@pytest.mark.parametrize("order, expected", [(("replace", "omit"), []), (("omit", "replace"), ["new"])])
def test_later_edit_wins(sm, order, expected):
    u = sm.append_message(user_msg("old"))
    for step in order:
        sm.append_context_edit(u, None if step == "omit" else {"content": "new"})
    assert texts(sm.build_session_context().messages) == expected


def test_validation_order(sm):
    u = sm.append_message(user_msg("q"))
    with pytest.raises(ValueError, match="^Context edit replacement must be null or contain string/array content$"):
        sm.append_context_edit("missing", {"text": "x"})
    with pytest.raises(ValueError, match="string/array"):
        sm.append_context_edit(u, {"content": 5})
    with pytest.raises(EntryNotFound, match="^Entry missing not found$"):
        sm.append_context_edit("missing", None)
    other = sm.append_message(asst_msg("a"))
    sm.branch(u)
    with pytest.raises(ValueError, match=f"^Entry {other} is not on the active branch$"):
        sm.append_context_edit(other, None)
    mc = sm.append_model_change("p", "m")
    with pytest.raises(ValueError, match=f"^Entry {mc} does not contribute editable model content$"):
        sm.append_context_edit(mc, None)
    s = sm.append_message({"role": "system", "content": "sys", "timestamp": 1})
    with pytest.raises(ValueError, match="does not contribute editable"):
        sm.append_context_edit(s, None)
    assert [e["type"] for e in sm.entries].count("context_edit") == 0


def test_edit_on_sibling_branch_does_not_leak(sm):
    u = sm.append_message(user_msg("q"))
    a1 = sm.append_message(asst_msg("first"))
    sm.append_context_edit(a1, {"content": "edited"})
    sm.branch(u)
    sm.append_message(asst_msg("second"))
    assert texts(sm.build_session_context().messages) == ["q", "second"]
    sm.branch(a1)
    assert texts(sm.build_session_context().messages) == ["q", "first"]  # edit is after a1, not on this path


def test_hand_written_edit_on_non_editable_entry(sm):
    u = sm.append_message(user_msg("q"))
    s = sm.append_message({"role": "system", "content": "sys", "timestamp": 1})
    # a hand-written edit: replacement leaves system content alone, null hides it
    entries = sm.entries + [
        {"type": "context_edit", "id": "e1", "parentId": s, "timestamp": "2026-07-29T09:00:09.000Z",
         "targetId": s, "replacement": {"content": "changed"}},
    ]
    loaded = SessionManager.in_memory(entries=[header(), *entries])
    assert texts(loaded.build_session_context().messages) == ["q", "sys"]
    entries.append({"type": "context_edit", "id": "e2", "parentId": "e1", "timestamp": "2026-07-29T09:00:10.000Z",
                    "targetId": s, "replacement": None})
    loaded = SessionManager.in_memory(entries=[header(), *entries])
    assert texts(loaded.build_session_context().messages) == ["q"]
    assert u
