"""Bad input for the four views: clear pi_lab errors or clear results, never a crash."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers import asst_msg, header, msg, user_msg

from pi_lab.errors import PiLabError
from pi_lab.session import SessionManager
from pi_lab.view import (
    UnknownEntry,
    ViewError,
    compare_branches,
    context_composition,
    context_diff,
    context_search,
    context_timeline,
)

VIEW = Path(__file__).resolve().parents[2] / "pi_lab" / "view"


def small():
    entries = [msg("u1", None, user_msg("hi")), msg("a1", "u1", asst_msg("ok"))]
    return SessionManager.in_memory("/repo", entries=[header(), *entries])


CALLS = [
    ("timeline", lambda sm, x: context_timeline(sm, x)),
    ("composition", lambda sm, x: context_composition(sm, x)),
    ("diff a", lambda sm, x: context_diff(sm, x, "a1")),
    ("diff b", lambda sm, x: context_diff(sm, "a1", x)),
    ("search", lambda sm, x: context_search(sm, x, "a1", "hi")),
    ("compare a", lambda sm, x: compare_branches(sm, x, "a1")),
    ("compare b", lambda sm, x: compare_branches(sm, "a1", x)),
]


@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
@pytest.mark.parametrize("bad", ["missing", "", 7, 2.5, ["a1"], {"id": "a1"}, b"a1"])
def test_unknown_entries_raise_a_pi_lab_error(name, call, bad):
    with pytest.raises(UnknownEntry) as caught:
        call(small(), bad)
    error = caught.value
    assert isinstance(error, PiLabError) and not isinstance(error, (KeyError, TypeError))
    assert str(error) and "Traceback" not in str(error)


def test_messages_name_the_argument_and_the_id():
    with pytest.raises(UnknownEntry, match=r"leaf_b: entry nope not found"):
        compare_branches(small(), "a1", "nope")
    with pytest.raises(UnknownEntry, match=r"must be an entry id \(a string\), not int 7"):
        context_composition(small(), 7)


def test_not_a_session_manager():
    with pytest.raises(ViewError):
        context_timeline(object())


def test_an_agent_like_object_is_accepted():
    class Holder:
        session_manager = small()

    assert [r["entry_id"] for r in context_timeline(Holder())] == ["a1"]


def test_odd_field_types_do_not_crash():
    odd_assistant = {"role": "assistant", "content": [1, None, {"type": 3}, {"type": "toolCall", "name": 4, "arguments": [1]}],
                     "usage": "x", "stopReason": 7, "model": 9}
    entries = [
        msg("u1", None, user_msg("hi")),
        {"type": "message", "id": "x1", "parentId": "u1", "timestamp": 5, "message": odd_assistant},
        {"type": "message", "id": "x2", "parentId": "x1", "message": {"role": 5, "content": "a"}},
        {"type": "message", "id": "x3", "parentId": "x2", "message": "not a dict"},
        {"type": "message", "id": "x4", "parentId": "x3",
         "message": {"role": "toolResult", "toolName": {"a": 1}, "content": 5, "isError": "yes", "usage": {"input": True}}},
        {"type": ["odd"], "id": "o1", "parentId": "x4"},
        {"type": "context_edit", "id": "e1", "parentId": "o1", "targetId": "x1", "replacement": {"content": "r"}},
        {"type": "branch_summary", "id": "b1", "parentId": "e1", "fromId": ["a"], "summary": 5},
        {"type": "message", "id": 7, "parentId": "b1", "message": asst_msg("id is a number")},
        {"type": "compaction", "id": "c1", "parentId": "b1", "firstKeptEntryId": ["x"], "summary": None, "tokensBefore": "many"},
        {"type": "message", "id": "k1", "parentId": 7, "message": user_msg("parent is a number")},
        msg("a9", "c1", {**asst_msg("z"), "usage": {"input": "1", "output": None, "totalTokens": [1], "cost": "x"}}),
    ]
    sm = SessionManager.in_memory("/repo", entries=[header(), *entries])
    for leaf in ("x1", "x4", "e1", "b1", "c1", "a9", "k1"):
        context_timeline(sm, leaf)
        context_composition(sm, leaf)
        context_diff(sm, "u1", leaf, search="r")
        compare_branches(sm, "a9", leaf)
    rows = context_timeline(sm, "a9")
    assert [r["kind"] for r in rows] == ["call", "branch_summary", "compaction", "call"]
    assert rows[2]["tokens_before"] is None and rows[2]["first_kept_id"] is None
    assert compare_branches(sm, "a9", "k1")["common_ancestor"] is None  # k1's parent 7 is not an id


def test_unhashable_role_with_null_content():
    entries = [msg("u1", None, user_msg("hi")),
               {"type": "message", "id": "x1", "parentId": "u1", "message": {"role": ["x"], "content": None}}]
    sm = SessionManager.in_memory("/repo", entries=[header(), *entries])
    context_timeline(sm, "x1")


def test_view_imports_only_lower_layers():
    forbidden = ("pi_lab.widget", "pi_lab.server", "pi_lab.agent")
    for source in VIEW.glob("*.py"):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith(forbidden), f"{source.name} imports {name}"
