"""context_diff and context_search on real fixtures and edge cases."""

from __future__ import annotations

import pytest

from helpers import asst_msg, entry, header, msg, user_msg

from pi_lab.compaction.tokens import estimate_tokens
from pi_lab.session import SessionManager
from pi_lab.view import UnknownEntry, ViewError, context_diff, context_search
from view.view_sessions import fixture_session, generated_session, needs_fixtures


def assert_consistent(sm, a_id, b_id):
    diff = context_diff(sm, a_id, b_id)
    msgs_a = sm.build_session_context(a_id).messages
    msgs_b = sm.build_session_context(b_id).messages
    assert len(diff["both"]) + len(diff["only_a"]) == len(msgs_a)
    assert len(diff["both"]) + len(diff["only_b"]) == len(msgs_b)
    assert diff["tokens_a"] == sum(estimate_tokens(m) for m in msgs_a)
    assert diff["tokens_b"] == sum(estimate_tokens(m) for m in msgs_b)
    assert diff["tokens_a"] == sum(r["tokens"] for r in diff["both"] + diff["only_a"])
    return diff


@needs_fixtures()
def test_before_compaction_fixture_across_its_checkpoint(tmp_path):
    sm = fixture_session("before-compaction.jsonl", tmp_path)
    path = sm.get_branch()
    compactions = [i for i, e in enumerate(path) if e["type"] == "compaction"]
    at = compactions[-1]
    before, after = path[at - 1]["id"], path[at]["id"]
    diff = assert_consistent(sm, before, after)
    by_side = {r["side"]: r for r in diff["replaced"]}
    replaced = by_side["b"]
    assert replaced["compaction_id"] == after
    # A's context opens with the earlier checkpoint: what it summarised, B does not hold either
    assert by_side["a"]["compaction_id"] == path[compactions[-2]]["id"] and by_side["a"]["source_ids"] == []
    kept = path[at]["firstKeptEntryId"]
    # everything the checkpoint summarised is only in A; what it kept is in both
    assert kept in [r["source_id"] for r in diff["both"]]
    assert set(replaced["source_ids"]) <= {r["source_id"] for r in diff["only_a"]}
    assert replaced["source_ids"] and kept not in replaced["source_ids"]
    assert diff["tokens_b"] < diff["tokens_a"]


@needs_fixtures()
def test_branching_fixture_leaves(tmp_path):
    sm = fixture_session("public-twkrash-branching.jsonl", tmp_path)
    ids = [e["id"] for e in sm.entries if isinstance(e.get("id"), str)]
    for a_id in ids:
        for b_id in ids:
            assert_consistent(sm, a_id, b_id)


def test_generated_leaves_of_two_branches():
    sm = generated_session(2500, 3)
    tips = [e["fromId"] for e in sm.entries if e.get("type") == "branch_summary" and sm.get_entry(e.get("fromId") or "")]
    for tip in tips[:4]:
        assert_consistent(sm, tip, sm.leaf_id)


def test_edited_message_is_in_both_and_marked():
    entries = [
        msg("u1", None, user_msg("hello world")),
        msg("a1", "u1", asst_msg("a long answer " * 5)),
        entry("context_edit", "e1", "a1", targetId="a1", replacement={"content": "short"}),
    ]
    sm = SessionManager.in_memory("/repo", entries=[header(), *entries])
    diff = assert_consistent(sm, "a1", "e1")
    edited = [r for r in diff["both"] if r.get("edited")]
    assert [r["source_id"] for r in edited] == ["a1"]
    assert edited[0]["tokens_b"] < edited[0]["tokens"]
    assert "edited" not in diff["both"][0]


def test_same_node_and_unrelated_roots():
    entries = [
        msg("u1", None, user_msg("first root")),
        msg("a1", "u1", asst_msg("one")),
        msg("u2", None, user_msg("second root")),  # an orphan tree
        msg("a2", "u2", asst_msg("two")),
    ]
    sm = SessionManager.in_memory("/repo", entries=[header(), *entries])
    same = context_diff(sm, "a1", "a1")
    assert [r["source_id"] for r in same["both"]] == ["u1", "a1"]
    assert same["only_a"] == same["only_b"] == [] and same["delta"] == 0
    assert "same entry" in same["notes"][0]
    apart = context_diff(sm, "a1", "a2")
    assert apart["both"] == [] and "unrelated roots" in apart["notes"][0]
    found = context_search(sm, "a1", "a2", "ROOT")
    assert [h["source_id"] for h in found["a"]] == ["u1"] and [h["source_id"] for h in found["b"]] == ["u2"]


def test_bad_input_gets_pi_lab_errors():
    sm = SessionManager.in_memory("/repo", entries=[header(), msg("u1", None, user_msg("x"))])
    for bad in ("missing", "", None, 5, ["u1"]):
        with pytest.raises(UnknownEntry) as caught:
            context_diff(sm, "u1", bad)
        assert not isinstance(caught.value, (KeyError, TypeError))
        assert "b_id" in str(caught.value)
    with pytest.raises(ViewError):
        context_search(sm, "u1", "u1", "")
    with pytest.raises(ViewError):
        context_search(sm, "u1", "u1", 3)
