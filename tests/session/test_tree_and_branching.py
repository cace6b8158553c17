"""Tree, leaf moves, labels, branch summaries, extraction into a new file (tree-and-context.md §2–§4, §7–§10)."""

from __future__ import annotations

import json
import os

import pytest
from helpers import Clock, Ids, asst_msg, header, msg, roles, texts, tool_result, user_msg

from pi_lab.session import EntryNotFound, SessionManager


@pytest.fixture
def sm():
    return SessionManager.in_memory(uuid_factory=Ids(), clock=Clock())


def ids(entries):
    return [e["id"] for e in entries]


def test_get_branch_variants(sm):
    assert sm.get_branch() == []
    a = sm.append_message(user_msg("1"))
    b = sm.append_message(asst_msg("2"))
    c = sm.append_message(user_msg("3"))
    assert ids(sm.get_branch()) == [a, b, c]
    assert ids(sm.get_branch(b)) == [a, b]
    assert sm.get_branch("unknown") == []


def test_tree_children_and_branching(sm):
    assert sm.get_tree() == []
    a = sm.append_message(user_msg("1"))
    b = sm.append_message(asst_msg("2"))
    sm.append_message(user_msg("3"))
    sm.branch(b)
    sm.append_message(user_msg("3b"))
    sm.branch(b)
    sm.append_message(user_msg("3c"))
    (root,) = sm.get_tree()
    assert root.entry["id"] == a
    assert len(root.children[0].children) == 3
    assert [c.entry["message"]["content"] for c in root.children[0].children] == ["3", "3b", "3c"]


def test_children_sorted_by_timestamp_not_file_order():
    entries = [header(), msg("r", None, user_msg("root"), 1), msg("late", "r", user_msg("late"), 9),
               msg("early", "r", user_msg("early"), 5)]
    sm = SessionManager.in_memory(entries=entries)
    assert [c.entry["id"] for c in sm.get_tree()[0].children] == ["early", "late"]
    assert [e["id"] for e in sm.get_children("r")] == ["late", "early"]


def test_branch_moves_leaf_and_next_append_is_a_sibling(sm):
    a = sm.append_message(user_msg("1"))
    b = sm.append_message(asst_msg("2"))
    sm.append_message(user_msg("3"))
    with pytest.raises(EntryNotFound, match="^Entry nonexistent not found$"):
        sm.branch("nonexistent")
    sm.branch(b)
    d = sm.append_message(user_msg("4-branch"))
    assert sm.get_entry(d)["parentId"] == b
    assert texts(sm.build_session_context().messages) == ["1", "2", "4-branch"]
    assert a


def test_reset_leaf_makes_a_new_root(sm):
    sm.append_message(user_msg("1"))
    sm.reset_leaf()
    assert sm.leaf_id is None and sm.build_session_context().messages == []
    new = sm.append_message(user_msg("again"))
    assert sm.get_entry(new)["parentId"] is None and len(sm.get_tree()) == 2


def test_branch_with_summary_records_abandoned_leaf(sm):
    id1 = sm.append_message(user_msg("1"))
    sm.append_message(asst_msg("2"))
    id3 = sm.append_message(user_msg("3"))
    use = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    summary_id = sm.branch_with_summary(id1, "Summary of abandoned work", None, False, use)
    entry = sm.get_entry(summary_id)
    assert sm.leaf_id == summary_id
    assert (entry["parentId"], entry["fromId"], entry["usage"], entry["fromHook"]) == (id1, id3, use, False)
    with pytest.raises(EntryNotFound):
        sm.branch_with_summary("nope", "x")


def test_branch_with_summary_without_leaf_says_root(sm):
    summary_id = sm.branch_with_summary(None, "from nowhere")
    assert sm.get_entry(summary_id)["fromId"] == "root" and sm.get_entry(summary_id)["parentId"] is None


def test_labels_set_clear_and_last_wins(sm):
    u = sm.append_message(user_msg("hi"))
    assert sm.get_label(u) is None
    lid = sm.append_label_change(u, "checkpoint")
    assert sm.get_label(u) == "checkpoint"
    assert sm.get_entry(lid)["targetId"] == u and sm.get_entry(lid)["label"] == "checkpoint"
    sm.append_label_change(u, None)
    assert sm.get_label(u) is None
    sm.append_label_change(u, "first")
    sm.append_label_change(u, "second")
    last = sm.append_label_change(u, "third")
    (node,) = sm.get_tree()
    assert node.label == "third" and node.label_timestamp == sm.get_entry(last)["timestamp"]
    assert len(sm.build_session_context().messages) == 1
    with pytest.raises(EntryNotFound, match="^Entry non-existent not found$"):
        sm.append_label_change("non-existent", "x")


def test_labels_are_global_in_file_order(sm):
    u = sm.append_message(user_msg("hi"))
    a = sm.append_message(asst_msg("a"))
    sm.branch(u)
    sm.append_label_change(a, "on other branch")
    assert sm.get_label(a) == "on other branch"


def test_labels_rebuilt_on_load(tmp_path):
    sm = SessionManager.create("/r", tmp_path, uuid_factory=Ids(), clock=Clock())
    u = sm.append_message(user_msg("hi"))
    sm.append_label_change(u, "keep")
    reopened = SessionManager.open(sm.session_file)
    assert reopened.get_label(u) == "keep" and reopened.get_tree()[0].label_timestamp is not None


def test_branched_session_in_memory_keeps_path_and_labels(sm):
    m1 = sm.append_message(user_msg("1"))
    m2 = sm.append_message(asst_msg("2"))
    m3 = sm.append_message(user_msg("3"))
    sm.append_label_change(m1, "one")
    sm.append_label_change(m2, "two")
    sm.append_label_change(m3, "three")
    stamps = {m1: sm.get_label_timestamp(m1), m2: sm.get_label_timestamp(m2)}
    assert sm.create_branched_session(m2) is None
    types = [e["type"] for e in sm.entries]
    assert types == ["message", "message", "label", "label"]
    assert sm.get_label(m1) == "one" and sm.get_label(m2) == "two" and sm.get_label(m3) is None
    labels = [e for e in sm.entries if e["type"] == "label"]
    assert [e["timestamp"] for e in labels] == [stamps[m1], stamps[m2]]
    assert labels[0]["parentId"] == m2 and labels[1]["parentId"] == labels[0]["id"]
    assert sm.leaf_id == labels[1]["id"] and "parentSession" not in sm.header


def test_branched_session_rewires_children_of_dropped_labels(sm):
    u1 = sm.append_message(user_msg("1"))
    sm.append_label_change(u1, "mark")
    mc = sm.append_model_change("p", "m")
    u2 = sm.append_message(user_msg("2"))
    sm.create_branched_session(u2)
    assert sm.get_entry(mc)["parentId"] == u1
    assert [e["type"] for e in sm.entries] == ["message", "model_change", "message", "label"]


def test_branched_session_fixes_compaction_pointing_at_a_label(sm):
    u1 = sm.append_message(user_msg("1"))
    label = sm.append_label_change(u1, "mark")
    a = sm.append_message(asst_msg("2"))
    c = sm.append_compaction("sum", label, 10)
    sm.create_branched_session(c)
    assert sm.get_entry(c)["firstKeptEntryId"] == a


def test_branched_session_extracts_a_branch_in_order(sm):
    e1 = sm.append_message(user_msg("1"))
    e2 = sm.append_message(asst_msg("2"))
    sm.append_message(user_msg("3"))
    sm.branch(e2)
    e4 = sm.append_message(user_msg("4"))
    e5 = sm.append_message(asst_msg("5"))
    sm.create_branched_session(e5)
    assert ids(sm.entries) == [e1, e2, e4, e5]
    with pytest.raises(EntryNotFound):
        sm.create_branched_session("nonexistent")


def test_persisted_branch_without_conversation_defers_the_write(tmp_path):
    sm = SessionManager.create("/r", tmp_path, uuid_factory=Ids(), clock=Clock())
    mc = sm.append_model_change("p", "m")
    sm.append_message(user_msg("u"))
    sm.append_message(asst_msg("a"))
    old = sm.session_file
    new_path = sm.create_branched_session(mc)
    assert new_path != old and not os.path.exists(new_path)
    assert sm.header["parentSession"] == old
    sm.append_message(user_msg("fresh"))
    assert os.path.exists(new_path)
    sm.append_custom_entry("c")
    sm.append_message(asst_msg("b"))
    types = [json.loads(line)["type"] for line in open(new_path)]
    assert types == ["session", "model_change", "message", "custom", "message"]


def test_persisted_branch_at_user_message_writes_immediately(tmp_path):
    sm = SessionManager.create("/r", tmp_path, uuid_factory=Ids(), clock=Clock())
    u = sm.append_message(user_msg("u"))
    sm.append_message(asst_msg("a"))
    path = sm.create_branched_session(u)
    assert os.path.exists(path)
    sm.append_message(asst_msg("b"))
    assert [json.loads(line)["type"] for line in open(path)] == ["session", "message", "message"]


def test_usage_fields_survive_reload(tmp_path):
    sm = SessionManager.create("/r", tmp_path, uuid_factory=Ids(), clock=Clock())
    use = {"input": 10, "output": 20, "cacheRead": 30, "cacheWrite": 40, "totalTokens": 100,
           "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.3, "cacheWrite": 0.4, "total": 1}}
    u = sm.append_message(user_msg("u"))
    tr = dict(tool_result("c", "read", "x"), usage=use)
    sm.append_message(tr)
    sm.append_compaction("s", u, 5, usage=use)
    sm.branch_with_summary(u, "b", usage=use)
    reopened = SessionManager.open(sm.session_file)
    assert [e.get("usage", e.get("message", {}).get("usage")) for e in reopened.entries[1:]] == [use, use, use]


def test_fork_from_copies_the_whole_file(tmp_path):
    src = SessionManager.create("/r", tmp_path / "a", uuid_factory=Ids(), clock=Clock())
    src.append_message(user_msg("u"))
    src.append_message(asst_msg("a"))
    forked = SessionManager.fork_from(src.session_file, "/r2", tmp_path / "b", id="forked-session-id")
    assert forked.session_id == "forked-session-id" and forked.header["parentSession"] == src.session_file
    assert os.path.basename(forked.session_file).endswith("_forked-session-id.jsonl")
    assert forked.entries == src.entries


def test_compaction_snapshots_the_system_state(sm):
    sm.append_message({"role": "system", "content": "", "sections": {"base": "You are pi", "tools": "t1"}, "timestamp": 1})
    u1 = sm.append_message(user_msg("u1"))
    sm.append_message(asst_msg("a1"))
    sm.append_message({"role": "system", "content": "", "sections": {"tools": None, "extra": "e"},
                       "toolsAdded": [{"name": "read"}], "timestamp": 2})
    u2 = sm.append_message(user_msg("u2"))
    c = sm.append_compaction("summary", u1, 100)
    snapshot = sm.get_entry(c)["systemMessage"]
    assert snapshot == {"role": "system", "content": "", "sections": {"base": "You are pi", "extra": "e"},
                        "toolsAdded": [{"name": "read"}], "timestamp": 1785315606000}
    assert sm.get_entry(c)["timestamp"] == "2026-07-29T09:00:06.000Z"  # the snapshot takes the entry's time
    sm.append_message({"role": "system", "content": "later", "timestamp": 3})
    messages = sm.build_session_context().messages
    assert roles(messages) == ["system", "compactionSummary", "user", "assistant", "user", "system"]
    assert messages[0] is snapshot and messages[-1]["content"] == "later"
    assert u2


def test_session_name_is_latest_in_file_order(sm):
    assert sm.session_name is None
    sm.append_session_info("first")
    sm.append_session_info("second")
    assert sm.session_name == "second"
    sm.append_session_info("   ")
    assert sm.session_name is None
