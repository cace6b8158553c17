"""Appends and the lazy first write (session-format.md §4, §5, §9)."""

from __future__ import annotations

import json
import os
import re

import pytest
from helpers import Clock, Ids, asst_msg, user_msg

from pi_lab.session import SessionManager
from pi_lab.session.ids import SESSION_ID_ERROR

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def make(tmp_path, **kw):
    return SessionManager.create("/repo", tmp_path, uuid_factory=Ids(), clock=Clock(), **kw)


def lines(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_nothing_on_disk_before_the_first_user_message(tmp_path):
    sm = make(tmp_path)
    sm.append_model_change("anthropic", "claude")
    sm.append_thinking_level_change("high")
    sm.append_message({"role": "system", "content": "", "sections": {"base": "You are pi"}, "timestamp": 5})
    sm.append_custom_entry("state", {"a": 1})
    assert not os.path.exists(sm.session_file)
    sm.append_message(user_msg("hello"))
    assert [e["type"] for e in lines(sm.session_file)] == [
        "session", "model_change", "thinking_level_change", "message", "custom", "message",
    ]


def test_each_later_append_adds_exactly_one_line(tmp_path):
    sm = make(tmp_path)
    sm.append_message(user_msg("hello"))
    size = os.path.getsize(sm.session_file)
    sm.append_message(asst_msg("hi"))
    data = open(sm.session_file, "rb").read()
    assert data[size:].count(b"\n") == 1 and data.endswith(b"\n")


def test_exact_bytes_with_pi_key_order(tmp_path):
    sm = make(tmp_path, id="abc")
    u = sm.append_message(user_msg("héllo 😀"))
    sm.append_custom_entry("ext", {"k": [1.0, 0.5]})
    sm.append_custom_message_entry("note", "text", False, {"d": 1})
    sm.append_label_change(u, "start")
    sm.append_session_info("  My\r\nSession \n")
    sm.append_compaction("sum", u, 1234, {"readFiles": [], "modifiedFiles": []}, False)
    data = open(sm.session_file, encoding="utf-8").read().splitlines()
    assert data[0] == '{"type":"session","version":3,"id":"abc","timestamp":"2026-07-29T09:00:00.000Z","cwd":"/repo"}'
    assert data[1] == ('{"type":"message","id":"00000001","parentId":null,"timestamp":"2026-07-29T09:00:01.000Z",'
                       '"message":{"role":"user","content":"héllo 😀","timestamp":1}}')
    assert data[2] == ('{"type":"custom","customType":"ext","data":{"k":[1,0.5]},"id":"00000002",'
                       '"parentId":"00000001","timestamp":"2026-07-29T09:00:02.000Z"}')
    assert data[3] == ('{"type":"custom_message","customType":"note","content":"text","display":false,'
                       '"details":{"d":1},"id":"00000003","parentId":"00000002","timestamp":"2026-07-29T09:00:03.000Z"}')
    assert data[4] == ('{"type":"label","id":"00000004","parentId":"00000003","timestamp":"2026-07-29T09:00:04.000Z",'
                       '"targetId":"00000001","label":"start"}')
    assert data[5] == ('{"type":"session_info","id":"00000005","parentId":"00000004",'
                       '"timestamp":"2026-07-29T09:00:05.000Z","name":"My Session"}')
    assert data[6] == ('{"type":"compaction","id":"00000006","parentId":"00000005","timestamp":"2026-07-29T09:00:06.000Z",'
                       '"summary":"sum","firstKeptEntryId":"00000001","tokensBefore":1234,'
                       '"details":{"readFiles":[],"modifiedFiles":[]},"fromHook":false}')
    assert sm.session_name == "My Session"


def test_optional_fields_are_omitted_when_unset(tmp_path):
    sm = make(tmp_path)
    u = sm.append_message(user_msg("q"))
    sm.append_custom_entry("no-data")
    sm.append_label_change(u)
    sm.append_label_change(u, "")
    bs = sm.branch_with_summary(u, "went elsewhere")
    raw = [json.loads(x) for x in open(sm.session_file, encoding="utf-8")]
    assert "data" not in raw[2]
    assert "label" not in raw[3] and raw[4]["label"] == ""
    assert list(raw[5]) == ["type", "id", "parentId", "timestamp", "fromId", "summary"]
    assert raw[5]["id"] == bs


def test_file_name_and_session_id_rules(tmp_path):
    sm = make(tmp_path, id="created-session-id")
    assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_created-session-id\.jsonl$", os.path.basename(sm.session_file))
    assert not os.path.exists(sm.session_file)
    assert UUID7.match(SessionManager.create("/repo", tmp_path).session_id)
    assert UUID7.match(SessionManager.in_memory().session_id)


@pytest.mark.parametrize("bad", ["", "-abc", "abc-", "_abc", "abc_", ".abc", "abc.", "abc/def", "abc\\def", "abc def"])
def test_invalid_explicit_session_ids(bad):
    with pytest.raises(ValueError) as info:
        SessionManager.in_memory(id=bad)
    assert str(info.value) == SESSION_ID_ERROR


def test_valid_explicit_session_id():
    sm = SessionManager.in_memory(id="abc-123_def.456")
    assert sm.session_id == "abc-123_def.456" and sm.header["id"] == "abc-123_def.456"
    assert sm.session_file is None


def test_exclusive_create_failure_rolls_back(tmp_path):
    sm = make(tmp_path)
    sm.append_model_change("p", "m")
    open(sm.session_file, "w").write("someone else's file\n")
    leaf, count = sm.leaf_id, len(sm.entries)
    with pytest.raises(FileExistsError):
        sm.append_message(user_msg("first"))
    assert sm.leaf_id == leaf and len(sm.entries) == count and sm.get_entry_count() == count
    assert open(sm.session_file).read() == "someone else's file\n"


def test_in_memory_never_writes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sm = SessionManager.in_memory(uuid_factory=Ids(), clock=Clock())
    sm.append_message(user_msg("q"))
    sm.append_message(asst_msg("a"))
    assert sm.session_file is None and os.listdir(tmp_path) == []


def test_entry_ids_avoid_collisions():
    # a factory that repeats its first id forces a redraw
    values = iter(["aaaaaaaa-1", "aaaaaaaa-2", "bbbbbbbb-3"])
    sm = SessionManager.in_memory(uuid_factory=lambda: next(values))
    first = sm.append_message(user_msg("a"))
    second = sm.append_message(user_msg("b"))
    assert (first, second) == ("aaaaaaaa", "bbbbbbbb")


def test_ids_fall_back_to_the_full_uuid_after_100_collisions():
    sm = SessionManager.in_memory(uuid_factory=lambda: "aaaaaaaa-0000-4000-8000-000000000000")
    assert sm.append_message(user_msg("a")) == "aaaaaaaa"
    assert sm.append_message(user_msg("b")) == "aaaaaaaa-0000-4000-8000-000000000000"


def test_appends_chain_and_advance_the_leaf():
    sm = SessionManager.in_memory(uuid_factory=Ids(), clock=Clock())
    assert sm.leaf_id is None
    ids = [sm.append_message(user_msg("1")), sm.append_thinking_level_change("high"),
           sm.append_model_change("openai", "gpt"), sm.append_message(asst_msg("2"))]
    parents = [sm.get_entry(i)["parentId"] for i in ids]
    assert parents == [None, *ids[:-1]]
    assert sm.leaf_id == ids[-1]
    assert sm.get_entry(ids[2])["provider"] == "openai" and sm.get_entry(ids[2])["modelId"] == "gpt"


def test_compaction_stores_usage_and_own_id_when_keeping_nothing():
    sm = SessionManager.in_memory(uuid_factory=Ids(), clock=Clock())
    sm.append_message(user_msg("q"))
    use = {"input": 10, "output": 20, "cacheRead": 30, "cacheWrite": 40, "totalTokens": 100,
           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 1}}
    c = sm.append_compaction("s", None, 50, usage=use)
    entry = sm.get_entry(c)
    assert entry["firstKeptEntryId"] == c and entry["usage"] == use
    assert [m["role"] for m in sm.build_session_context().messages] == ["compactionSummary"]


def test_usage_entry_is_a_tree_node_without_messages():
    sm = SessionManager.in_memory(uuid_factory=Ids(), clock=Clock())
    sm.append_message(user_msg("q"))
    entry = sm.append_usage("cache_warm", "anthropic", "claude", {"input": 1})
    assert list(entry) == ["type", "id", "parentId", "timestamp", "kind", "provider", "model", "usage"]
    assert sm.leaf_id == entry["id"]
    assert len(sm.build_session_context().messages) == 1
