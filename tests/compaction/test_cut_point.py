"""Cut points and turn starts (compaction.md §3–§4; catalogue §2 findCutPoint, §5 items 11–12)."""

from __future__ import annotations

from cbuild import Branch, call

from pi_lab.compaction import (
    CutPointResult,
    find_cut_point,
    find_projected_cut_point,
    find_turn_start_index,
)
from pi_lab.compaction.cut_point import find_projected_turn_start_index
from pi_lab.session import build_session_projection

T100 = "x" * 400  # 100 tokens


def cut(entries, keep, start=0, end=None):
    return find_cut_point(entries, start, len(entries) if end is None else end, keep)


def projected_cut(b: Branch, keep, start=0):
    projected = build_session_projection(b.entries).entries
    return find_projected_cut_point(projected, start, len(projected), keep), projected


def as_tuple(result: CutPointResult):
    return (result.first_kept_entry_index, result.turn_start_index, result.is_split_turn)


# --- findCutPoint (entry-based) ------------------------------------------------------------------


def test_ten_pairs_cut_at_a_user_or_assistant_entry():
    b = Branch()
    for i in range(10):
        b.user(f"u{i}", "u" * 1000)  # 250 tokens each
        b.asst(f"a{i}", "a" * 1000)
    result = cut(b.entries, 2500)
    # a9 … u5 is ten entries of 250 = 2500: the budget is reached exactly at u5
    assert as_tuple(result) == (10, -1, False)
    assert b.entries[result.first_kept_entry_index]["message"]["role"] in ("user", "assistant")


def test_single_assistant_keeps_everything():
    b = Branch()
    b.asst("a", T100)
    assert as_tuple(cut(b.entries, 1000)) == (0, -1, False)


def test_everything_within_budget_keeps_from_start():
    b = Branch()
    for i in range(5):
        b.user(f"u{i}")
        b.asst(f"a{i}")
    assert as_tuple(cut(b.entries, 50000)) == (0, -1, False)


def test_cut_at_assistant_inside_second_turn_is_split():
    b = Branch()
    b.user("u0", T100)
    b.asst("a0", T100)
    b.user("u1", T100)
    b.asst("a1", T100)
    b.asst("a1b", T100)
    b.asst("a1c", T100)
    result = cut(b.entries, 200)
    assert as_tuple(result) == (4, 2, True)


def test_custom_messages_count_and_start_turns():
    b = Branch()
    b.user("u", "hi")
    b.asst("a", "hello")
    b.custom_message("c", "x" * 4000)
    b.asst("a2", "ok")
    assert as_tuple(cut(b.entries, 1)) == (3, 2, True)
    assert as_tuple(cut(b.entries, 2)) == (2, -1, False)


def test_tool_results_are_never_cut_points():
    b = Branch()
    b.user("u", T100)
    b.asst("a", calls=[call("c1", "read", path="f")])
    b.tool("t", "c1", "read", "r" * 40000)
    # the budget is crossed inside the tool result; no cut point at or after it → the last one
    assert as_tuple(cut(b.entries, 10)) == (1, 0, True)


def test_metadata_before_the_cut_stays_with_the_kept_region():
    b = Branch()
    b.user("u0", T100)
    b.asst("a0", T100)
    b.model_change("m")
    b.thinking("t")
    b.label("l", "u0")
    b.user("u1", T100)
    b.asst("a1", T100)
    result = cut(b.entries, 200)
    # cut first lands on u1 (index 5), then walks back over the three metadata entries;
    # pi then sees a non-turn-start entry and reports the turn of u0 as split.
    assert as_tuple(result) == (2, 0, True)


def test_pull_back_stops_at_a_compaction_and_at_start():
    b = Branch()
    b.model_change("m0")
    b.user("u0", T100)
    b.compaction("c", "sum", "u0")
    b.model_change("m1")
    b.user("u1", T100)
    b.asst("a1", T100)
    assert cut(b.entries, 150).first_kept_entry_index == 3  # stops after the compaction
    assert cut(b.entries, 10**6).first_kept_entry_index == 0  # cutPoints[0] = u0, pulled back to m0


def test_range_without_cut_points_returns_start():
    b = Branch()
    b.user("u", T100)
    b.model_change("m")
    b.tool("t", "c", "read")
    assert as_tuple(cut(b.entries, 10, start=1)) == (1, -1, False)


def test_entry_based_variant_counts_raw_content_ignoring_edits():
    b = Branch()
    b.user("u0", T100)
    b.asst("a0", "z" * 4000)  # 1000 tokens, omitted below but counted by the raw variant
    b.edit("e", "a0", None)
    b.user("u1", T100)
    assert cut(b.entries, 300).first_kept_entry_index == 1


def test_find_turn_start_index():
    b = Branch()
    b.user("u")
    b.asst("a")
    b.msg("bash", {"role": "bashExecution", "command": "ls", "output": "", "cancelled": False, "truncated": False,
                   "timestamp": 1})
    b.asst("a2")
    b.branch_summary("bs", "went elsewhere")
    b.compaction("c", "sum", "u")
    b.asst("a3")
    entries = b.entries
    assert find_turn_start_index(entries, 1, 0) == 0
    assert find_turn_start_index(entries, 3, 0) == 2  # bashExecution starts a turn
    assert find_turn_start_index(entries, 6, 0) == 4  # compaction does not, branch summary does
    assert find_turn_start_index(entries, 1, 1) == -1


# --- findProjectedCutPoint ------------------------------------------------------------------------


def test_omitted_entries_cost_nothing_and_are_never_cut_points():
    b = Branch()
    b.user("u1", T100)
    b.asst("a1", T100)
    b.user("u2", T100)
    b.asst("E1", "e" * 16000, stop="error")  # 4000 tokens, dropped by the edit below
    b.edit("ce", "E1", None)
    b.asst("a3", T100)
    result, projected = projected_cut(b, 150)
    assert projected[3].messages == []
    # a3 (100) + u2 (100) reaches 150 at u2; E1 costs nothing
    assert as_tuple(result) == (2, -1, False)
    # with keep 50 the cut point is a3 itself; the edit and the omitted E1 before it project
    # nothing, so the metadata pull-back attaches them to the kept region (first kept = E1)
    result, _ = projected_cut(b, 50)
    assert as_tuple(result) == (3, 2, True)


def _recovery_branch() -> Branch:
    b = Branch()
    b.user("u1", T100)
    b.asst("a1", T100)
    b.user("u2", "h" * 40000)  # huge
    b.asst("E1", "", stop="error")
    b.edit("ce", "E1", None)
    return b


def test_recovery_omission_rule_moves_the_cut_past_the_last_input():
    result, projected = projected_cut(_recovery_branch(), 100)
    # the budget is crossed at u2; only the dropped attempt follows it → cut moves to E1
    assert as_tuple(result) == (3, 2, True)
    assert projected[3].source["id"] == "E1"


def test_recovery_rule_needs_the_budget_exceeded():
    result, _ = projected_cut(_recovery_branch(), 10**9)
    assert as_tuple(result) == (0, -1, False)


def test_recovery_rule_blocked_by_an_external_replacement():
    b = _recovery_branch()
    b.edit("ce2", "u1", {"content": "edited"})
    result, _ = projected_cut(b, 100)
    assert as_tuple(result) == (2, -1, False)


def test_recovery_rule_allows_replacement_of_an_omitted_suffix_entry():
    b = _recovery_branch()
    b.edit("ce2", "E1", {"content": "x"})  # targets E1 … but the later null edit wins
    b.edit("ce3", "E1", None)
    result, projected = projected_cut(b, 100)
    assert projected[3].messages == []
    assert as_tuple(result) == (3, 2, True)


def test_recovery_rule_not_for_metadata_only_or_omitted_user():
    b = Branch()
    b.user("u1", T100)
    b.asst("a1", T100)
    b.user("u2", "h" * 40000)
    b.model_change("m")
    result, _ = projected_cut(b, 100)
    assert as_tuple(result) == (2, -1, False)

    b = Branch()
    b.user("u1", T100)
    b.asst("a1", T100)
    b.user("u2", "h" * 40000)
    b.user("u3", "dropped")
    b.edit("ce", "u3", None)
    result, _ = projected_cut(b, 100)
    assert as_tuple(result) == (2, -1, False)


def test_recovery_rule_not_when_a_visible_entry_follows():
    b = _recovery_branch()
    b.asst("a2", "later")
    result, _ = projected_cut(b, 100)
    # a2 (2 tokens) then u2 crosses; suffix after u2 holds the visible a2 → no advance
    assert as_tuple(result) == (2, -1, False)


def test_projected_cut_after_previous_compaction():
    b = Branch()
    b.user("u1", T100)
    b.asst("a1", T100)
    b.user("u2", T100)
    b.asst("a2", T100)
    b.compaction("c1", "first", "u2")
    b.user("u3", T100)
    b.asst("a3", T100)
    projected = build_session_projection(b.entries).entries
    assert [p.source["id"] for p in projected] == ["c1", "u2", "a2", "u3", "a3"]
    result = find_projected_cut_point(projected, 1, len(projected), 150)
    assert as_tuple(result) == (3, -1, False)
    assert find_projected_turn_start_index(projected, 4, 1) == 3
    assert find_projected_turn_start_index(projected, 4, 4) == -1


def test_projected_accepts_plain_dicts():
    b = Branch()
    b.user("u1", T100)
    b.asst("a1", T100)
    projected = [{"sourceEntry": p.source, "messages": p.messages} for p in build_session_projection(b.entries).entries]
    assert as_tuple(find_projected_cut_point(projected, 0, 2, 50)) == (1, 0, True)
