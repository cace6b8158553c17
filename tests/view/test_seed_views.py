"""The seed's worked example (section 14) through the four views.

Tree: U1 → A1 → T1 → A2 ┬→ U2 → A3                      (the JWT branch)
                         └→ BS1 → U2B → A4 → U3 → A5 → U4 → A6 → C1   (the cookie branch)
"""

from __future__ import annotations

from pi_lab.compaction.tokens import estimate_tokens
from pi_lab.view import compare_branches, context_composition, context_diff, context_search, context_timeline


def ids(rows):
    return [r["source_id"] for r in rows]


def test_jwt_leaf_against_cookie_leaf(seed):
    result = compare_branches(seed, "A3", "A4")
    assert result["common_ancestor"] == "A2"
    assert result["a"] == ["U2", "A3"]
    assert result["b"] == ["BS1", "U2B", "A4"]
    # BS1 hangs off the fork point and was written when the JWT branch was left; the seed
    # records fromId = A2 (the target, as the explainer describes), so it is on side b and no
    # side holds its fromId.
    assert [(s["entry_id"], s["on_side"], s["left_side"]) for s in result["summaries"]] == [("BS1", "b", None)]
    assert result["summaries"][0]["summary"] == "离开的 JWT 路径已完成认证改造。"
    assert result["a_stats"]["calls"] == 1 and result["b_stats"]["calls"] == 1
    assert result["a_stats"]["usage_known"] is False  # the seed records no usage
    assert any("no recorded usage" in note for note in result["notes"])


def test_what_each_side_holds(seed):
    diff = context_diff(seed, "A3", "A4")
    assert ids(diff["both"]) == ["U1", "A1", "T1", "A2"]
    assert ids(diff["only_a"]) == ["U2", "A3"]
    assert ids(diff["only_b"]) == ["BS1", "U2B", "A4"]
    assert [r["role"] for r in diff["only_b"]] == ["branchSummary", "user", "assistant"]
    assert diff["replaced"] == []  # no compaction at either node
    assert diff["tokens_a"] == sum(r["tokens"] for r in diff["both"] + diff["only_a"])
    assert diff["tokens_b"] == sum(r["tokens"] for r in diff["both"] + diff["only_b"])


def test_before_and_after_c1(seed):
    diff = context_diff(seed, "A6", "C1")
    kept = ["U4", "A6"]
    summarized = ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5"]
    assert ids(diff["both"]) == kept
    assert ids(diff["only_a"]) == summarized
    assert [(r["source_id"], r["role"]) for r in diff["only_b"]] == [("C1", "compactionSummary")]
    assert diff["replaced"] == [{
        "side": "b", "compaction_id": "C1", "source_ids": summarized,
        "tokens": sum(r["tokens"] for r in diff["only_a"]),
    }]
    assert diff["delta"] == diff["tokens_b"] - diff["tokens_a"] < 0


def test_auth_ts_is_gone_after_the_compaction(seed):
    found = context_search(seed, "A6", "C1", "AUTH.TS")
    assert found["in_a"] and not found["in_b"]
    assert [h["source_id"] for h in found["a"]] == ["A1"]  # the read tool call's arguments
    assert "auth.ts" in found["a"][0]["snippet"]
    assert context_diff(seed, "A6", "C1", search="auth.ts")["search"] == context_search(seed, "A6", "C1", "auth.ts")


def test_timeline_of_the_cookie_branch(seed):
    rows = context_timeline(seed)
    assert [(r["kind"], r["entry_id"]) for r in rows] == [
        ("call", "A1"), ("call", "A2"), ("branch_summary", "BS1"),
        ("call", "A4"), ("call", "A5"), ("call", "A6"), ("compaction", "C1"),
    ]
    calls = [r for r in rows if r["kind"] == "call"]
    assert all(r["measured"] is None and r["window"] is None for r in calls)  # no usage, no model
    # A1 saw only U1 ("检查认证实现": 6 UTF-16 units → 2 tokens)
    assert calls[0]["estimated"] == 2
    compaction = rows[-1]
    assert compaction["tokens_before"] == 115000 and compaction["first_kept_id"] == "U4"
    after = seed.build_session_context("C1").messages
    assert compaction["estimated"] == sum(estimate_tokens(m) for m in after)


def test_jwt_timeline_stops_at_a3(seed):
    assert [r["entry_id"] for r in context_timeline(seed, "A3")] == ["A1", "A2", "A3"]


def test_composition_at_c1_and_a2(seed):
    at_c1 = context_composition(seed, "C1")
    assert [(p["part"], p["messages"]) for p in at_c1] == [("compaction summary", 1), ("user", 1), ("assistant text", 1)]
    at_a2 = {p["part"]: p for p in context_composition(seed, "A2")}
    assert set(at_a2) == {"user", "assistant text", "tool calls", "tool result: read"}
    assert at_a2["tool calls"]["indexes"] == [1]
