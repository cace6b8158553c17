"""context_composition: parts sum exactly to pi's per-message estimates."""

from __future__ import annotations

import pytest

from helpers import asst_msg, header, msg, tool_result, usage, user_msg

from pi_lab.compaction.tokens import estimate_context_tokens, estimate_tokens
from pi_lab.session import SessionManager
from pi_lab.view import context_composition
from pi_lab.view.composition import PART_ORDER
from view.view_sessions import FIXTURE_NAMES, fixture_session, generated_session, needs_fixtures


def assert_sums(sm, entry_id):
    parts = context_composition(sm, entry_id)
    messages = sm.build_session_context(entry_id).messages
    assert sum(p["tokens"] for p in parts) == sum(estimate_tokens(m) for m in messages)
    covered = sorted({i for p in parts for i in p["indexes"]})
    assert covered == list(range(len(messages)))  # every message lands in some part
    assert all(p["messages"] == len(p["indexes"]) for p in parts)
    return parts


@needs_fixtures()
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_real_fixtures_at_several_nodes(name, tmp_path):
    sm = fixture_session(name, tmp_path)
    path = sm.get_branch()
    for entry in path[:: max(1, len(path) // 25)] + path[-1:]:
        assert_sums(sm, entry["id"])


def test_generated_session_has_every_kind_of_part():
    sm = generated_session(2500, 2)
    names = set()
    for entry in sm.get_branch()[::40]:
        names.update(p["part"] for p in assert_sums(sm, entry["id"]))
    assert {"system prompt and tools", "compaction summary", "user", "assistant text", "thinking",
            "tool calls", "tool result: read", "tool result: bash"} <= names


def test_no_usage_anchor_means_the_parts_equal_pi_context_estimate():
    entries = [
        msg("u1", None, user_msg("hello")),
        msg("a1", "u1", asst_msg("t" * 5, thinking="k" * 5, use=usage(0, 0),
                                 tool_calls=[{"id": "c", "name": "bash", "arguments": {"command": "ls"}}])),
        msg("t1", "a1", tool_result("c", "bash", "out" * 7)),
    ]
    sm = SessionManager.in_memory("/repo", entries=[header(), *entries])
    parts = {p["part"]: p["tokens"] for p in assert_sums(sm, "t1")}
    assert sum(parts.values()) == estimate_context_tokens(sm.build_session_context("t1").messages).tokens


def test_assistant_split_telescopes():
    # thinking 5 chars, text 5, tool call "bash" + {"command":"ls"} = 4 + 16 = 20: 30 chars → 8 tokens.
    # laid end to end: thinking [0,5) → 2, text [5,10) → 3−2 = 1, tool call [10,30) → 8−3 = 5
    message = asst_msg("t" * 5, thinking="k" * 5, tool_calls=[{"id": "c", "name": "bash", "arguments": {"command": "ls"}}])
    assert estimate_tokens(message) == 8
    sm = SessionManager.in_memory("/repo", entries=[header(), msg("a1", None, message)])
    assert [(p["part"], p["tokens"]) for p in context_composition(sm, "a1")] == [
        ("assistant text", 1), ("thinking", 2), ("tool calls", 5),
    ]


def test_parts_follow_the_documented_order():
    sm = generated_session(1500, 1)
    parts = [p["part"] for p in context_composition(sm, sm.leaf_id)]
    rank = [PART_ORDER.index("tool result: " if p.startswith("tool result: ") else p) for p in parts]
    assert rank == sorted(rank)


def test_odd_roles_and_tool_names_do_not_crash():
    entries = [
        msg("u1", None, {"role": 7, "content": "x"}),
        msg("t1", "u1", {**tool_result("c", "read", "abc"), "toolName": ["read"]}),
        msg("a1", "t1", {"role": "assistant", "content": "a string, not blocks"}),
    ]
    sm = SessionManager.in_memory("/repo", entries=[header(), *entries])
    parts = [(p["part"], p["tokens"]) for p in assert_sums(sm, "a1")]
    assert parts == [("assistant text", 0), ("tool result: (unnamed)", 1), ("other", 0)]
