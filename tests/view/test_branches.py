"""compare_branches: common ancestor, the two segments, per-side statistics, summaries."""

from __future__ import annotations

import re

import pytest

from helpers import asst_msg, entry, header, msg, tool_result, usage, user_msg

from pi_lab.errors import PiLabError
from pi_lab.session import SessionManager
from pi_lab.view import UnknownEntry, compare_branches
from view.view_sessions import fixture_session, generated_session, needs_fixtures


def call(call_id, name, **arguments):
    return {"id": call_id, "name": name, "arguments": arguments}


def priced(inp, out, cost):
    u = usage(inp, out)
    u["cost"]["total"] = cost
    return u


def tree():
    overloaded = "529 overloaded_error: Overloaded"
    entries = [
        msg("u0", None, user_msg("start")),
        msg("a0", "u0", asst_msg("hi", use=priced(10, 5, 0.5))),
        # side A: reads and edits, one overloaded attempt retried
        msg("ua", "a0", user_msg("do A")),
        msg("aa1", "ua", asst_msg(None, tool_calls=[call("c1", "read", path="a.py"), call("c2", "edit", path="b.py")],
                                  use=priced(100, 20, 1.25))),
        msg("ta1", "aa1", tool_result("c1", "read", "text")),
        msg("ta2", "ta1", tool_result("c2", "edit", "failed", is_error=True)),
        msg("aa2", "ta2", asst_msg(None, stop="error", error=overloaded, use=usage(0, 0))),
        entry("context_edit", "ea", "aa2", targetId="aa2", replacement=None),
        msg("aa3", "ea", asst_msg("done A", use=priced(200, 30, 2.0))),
        # side B: writes, a bash call, an overflow, a usage entry
        msg("ub", "a0", user_msg("do B")),
        msg("ab1", "ub", asst_msg(None, tool_calls=[call("c3", "write", path="c.py", content="x"), call("c4", "bash", command="ls")],
                                  use=priced(50, 10, 0.25))),
        msg("tb1", "ab1", tool_result("c3", "write", "ok")),
        msg("tb2", "tb1", tool_result("c4", "bash", "files")),
        msg("ab2", "tb2", asst_msg(None, stop="error", error="prompt is too long: 250000 tokens > 200000 maximum",
                                   model="claude-sonnet-4", use=usage(0, 0))),
        {**entry("usage", "ub2", "ab2", provider="anthropic", model="claude-sonnet-4", usage=priced(7, 0, 0.1)), "kind": "warm"},
        # a summary written when leaving side A (pi ≥ 0.87: fromId = the abandoned leaf)
        entry("branch_summary", "bs", "a0", fromId="aa3", summary="A was done"),
        msg("uc", "bs", user_msg("third")),
        msg("x0", None, user_msg("an unrelated root")),
    ]
    return SessionManager.in_memory("/repo", entries=[header(), *entries])


def test_sides_and_stats():
    result = compare_branches(tree(), "aa3", "ub2")
    assert result["common_ancestor"] == "a0"
    assert result["a"] == ["ua", "aa1", "ta1", "ta2", "aa2", "ea", "aa3"]
    assert result["b"] == ["ub", "ab1", "tb1", "tb2", "ab2", "ub2"]
    a, b = result["a_stats"], result["b_stats"]
    assert a["tools"] == {"edit": 1, "read": 1} and b["tools"] == {"bash": 1, "write": 1}
    assert (a["files_read"], a["files_modified"]) == (["a.py"], ["b.py"])
    assert (b["files_read"], b["files_modified"]) == ([], ["c.py"])
    assert a["tokens"] == {"input": 300, "output": 50, "cache_read": 0, "cache_write": 0, "total": 350}
    assert a["cost"] == pytest.approx(3.25) and b["cost"] == pytest.approx(0.35)
    assert b["tokens"]["input"] == 57  # the usage entry counts, as in pi's session statistics
    assert a["tool_errors"] == 1 and a["calls"] == 3
    assert [(e["entry_id"], e["retryable"], e["overflow"], e["omitted"]) for e in a["errors"]] == [("aa2", True, False, True)]
    assert a["retries"] == 1
    assert [(e["entry_id"], e["retryable"], e["overflow"]) for e in b["errors"]] == [("ab2", False, True)]
    assert b["retries"] == 0
    assert [(s["entry_id"], s["left_side"], s["on_side"]) for s in result["summaries"]] == [("bs", "a", None)]
    assert result["notes"] == []


def test_summary_on_a_side():
    result = compare_branches(tree(), "aa3", "uc")
    assert result["b"] == ["bs", "uc"]
    assert [(s["entry_id"], s["left_side"], s["on_side"]) for s in result["summaries"]] == [("bs", "a", "b")]


def test_same_leaf_ancestor_and_orphans():
    sm = tree()
    same = compare_branches(sm, "aa3", "aa3")
    assert same["common_ancestor"] == "aa3" and same["a"] == same["b"] == []
    assert "same entry" in same["notes"][0]
    ancestor = compare_branches(sm, "a0", "aa3")
    assert ancestor["common_ancestor"] == "a0" and ancestor["a"] == []
    assert ancestor["notes"][0].startswith("A comes before B on the same branch: A is the fork point")
    backwards = compare_branches(sm, "aa3", "a0")
    assert backwards["notes"][0].startswith("B comes before A on the same branch: B is the fork point")
    orphans = compare_branches(sm, "x0", "aa3")
    assert orphans["common_ancestor"] is None
    assert orphans["a"] == ["x0"] and orphans["b"][0] == "u0"
    assert "unrelated roots" in orphans["notes"][0]
    assert "A's side has no recorded usage" in " ".join(orphans["notes"])  # x0's side has none
    # The Compare pane shows the notes as they are: no argument names (leaf_a), no snake_case.
    for result in (same, ancestor, backwards, orphans):
        for note in result["notes"]:
            assert not CODE_WORD.search(note), note


# An identifier a user never typed: snake_case, or a Python type name.
CODE_WORD = re.compile(r"\b[a-z]+_[a-z_]+\b|\b(?:int|str|dict|list|NoneType)\b")


def test_unknown_leaves():
    for bad in ("nope", None, 1.5, {"id": "aa3"}):
        with pytest.raises(PiLabError) as caught:
            compare_branches(tree(), bad, "aa3")
        assert isinstance(caught.value, UnknownEntry) and not isinstance(caught.value, KeyError)


@needs_fixtures()
def test_branching_fixture(tmp_path):
    sm = fixture_session("public-twkrash-branching.jsonl", tmp_path)
    leaves = [e["id"] for e in sm.entries if isinstance(e.get("id"), str) and not sm.get_children(e["id"])]
    for leaf_a in leaves:
        for leaf_b in leaves:
            result = compare_branches(sm, leaf_a, leaf_b)
            path_a = [e["id"] for e in sm.get_branch(leaf_a)]
            assert path_a[len(path_a) - len(result["a"]):] == result["a"]
            if result["common_ancestor"] is not None:
                assert result["common_ancestor"] in path_a


def test_generated_session_branches():
    sm = generated_session(2500, 1)
    summaries = [e for e in sm.entries if e.get("type") == "branch_summary" and sm.get_entry(e.get("fromId") or "")]
    left = summaries[0]
    result = compare_branches(sm, left["fromId"], sm.leaf_id)
    assert any(s["entry_id"] == left["id"] and s["left_side"] == "a" for s in result["summaries"])
    stats = result["a_stats"]
    assert stats["usage_known"] and stats["tokens"]["total"] > 0 and stats["cost"] > 0
    assert stats["tool_calls"] == sum(stats["tools"].values())
