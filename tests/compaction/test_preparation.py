"""prepare_compaction (compaction.md §5): the explainer's §7/§8/§11 narratives and the catalogue cases."""

from __future__ import annotations

from cbuild import Branch, call, texts, usage

from pi_lab.compaction import (
    CompactionSettings,
    compute_file_lists,
    estimate_projected_context_tokens,
    prepare_compaction,
    serialize_conversation,
)
from pi_lab.compaction import convert_to_llm
from pi_lab.session import build_session_projection
from pi_lab.session.tree import get_branch, index_by_id

T100 = "x" * 400  # 100 tokens


def path_to(b: Branch, leaf: str):
    return get_branch(index_by_id(b.entries), leaf)


def keep(n: int) -> CompactionSettings:
    return CompactionSettings(enabled=True, reserve_tokens=16384, keep_recent_tokens=n)


def explainer_branch() -> Branch:
    """Explainer §6/§7: U1 A1 T1 A2 BS1 U2B A4 U3 A5 U4 A6 U5 A7, with the JWT sibling U2 A3."""
    b = Branch()
    b.user("U1", "检查认证实现" + T100)
    b.asst("A1", "reading " + T100, calls=[call("c1", "read", path="src/auth.ts")])
    b.tool("T1", "c1", "read", "export function login() {}" + T100)
    b.asst("A2", "认证逻辑已定位" + T100)
    b.user("U2", "改成 JWT", parent="A2")
    b.asst("A3", "JWT 方案已完成")
    b.branch_summary("BS1", "离开的 JWT 路径已完成认证改造。" + T100, parent="A2", fromId="A3")
    b.user("U2B", "改成 session cookie" + T100)
    b.asst("A4", "cookie 方案已完成" + T100, calls=[call("c2", "edit", path="src/auth.ts")])
    b.user("U3", "补充测试" + T100)
    b.asst("A5", "测试已补充" + T100, calls=[call("c3", "write", path="test/auth.test.ts")])
    for name in ("U4", "A6", "U5", "A7"):
        (b.user if name.startswith("U") else b.asst)(name, T100)
    return b


# --- explainer §7: a clean cut at a user message ----------------------------------------------------


def test_explainer_section_7_cut_at_u4():
    b = explainer_branch()
    path = path_to(b, "A7")
    assert [e["id"] for e in path] == [
        "U1", "A1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5", "U4", "A6", "U5", "A7",
    ]
    prep = prepare_compaction(path, keep(350))  # U4…A7 is 400 tokens: the budget is reached at U4
    assert prep is not None
    assert prep.first_kept_entry_id == "U4"
    assert prep.is_split_turn is False
    assert prep.turn_prefix_messages == []
    assert prep.previous_summary is None
    roles = [m["role"] for m in prep.messages_to_summarize]
    assert roles == ["user", "assistant", "toolResult", "assistant", "branchSummary", "user", "assistant", "user",
                     "assistant"]
    assert prep.messages_to_summarize[4]["summary"].startswith("离开的 JWT 路径")
    # the sibling JWT branch is not on the path and is never summarised
    assert all("JWT 方案已完成" not in t for t in texts(prep.messages_to_summarize))
    # deterministic file tracking from the summarised tool calls
    assert list(prep.file_ops.read) == ["src/auth.ts"]
    assert list(prep.file_ops.edited) == ["src/auth.ts"]
    assert list(prep.file_ops.written) == ["test/auth.test.ts"]
    assert compute_file_lists(prep.file_ops) == ([], ["src/auth.ts", "test/auth.test.ts"])
    # tokensBefore is the projected estimate (no edits → usage anchor of A7 + nothing after)
    projection = build_session_projection(path)
    assert prep.tokens_before == estimate_projected_context_tokens(projection, path).tokens == 15


def test_branch_summary_is_serialised_as_a_user_message():
    prep = prepare_compaction(path_to(explainer_branch(), "A7"), keep(350))
    text = serialize_conversation(convert_to_llm(prep.messages_to_summarize))
    assert "[User]: The following is a summary of a branch that this conversation came back from:" in text
    assert "[Assistant tool calls]: read(path=\"src/auth.ts\")" in text
    assert text.startswith("[User]: 检查认证实现")


def test_metadata_between_summary_and_kept_region_stays_kept():
    b = Branch()
    b.user("u1", T100)
    b.asst("a1", T100)
    b.user("u2", T100)
    b.asst("a2", T100)
    b.thinking("t")
    b.model_change("m")
    b.user("u3", T100)
    b.asst("a3", T100)
    prep = prepare_compaction(b.entries, keep(150))
    # the cut lands on u3 and is pulled back over the two settings entries
    assert prep.first_kept_entry_id == "t"
    # pi then reports the turn of u2 as split (the kept region starts on a non-turn-start entry)
    assert prep.is_split_turn is True
    assert texts(prep.messages_to_summarize) == [T100, T100]
    assert texts(prep.turn_prefix_messages) == [T100, T100]


# --- explainer §8: split turns ------------------------------------------------------------------------


def split_branch(with_history: bool = True) -> Branch:
    b = Branch()
    if with_history:
        b.user("U5", "检查认证实现")
        b.asst("A5", "读取代码并解释", calls=[call("c0", "read", path="old.py")])
    b.user("U6", "按方案修改并测试 " + T100)
    b.asst("A8", T100, calls=[call("c8", "read", path="a.py")])
    b.tool("T2", "c8", "read", T100)
    b.asst("A9", T100, calls=[call("c9", "edit", path="a.py")])
    b.tool("T3", "c9", "edit", T100)
    b.asst("A10", T100, calls=[call("c10", "bash", command="pytest")])
    b.tool("T4", "c10", "bash", T100)
    b.asst("A11", T100)
    return b


def test_split_turn_three_parts():
    b = split_branch()
    prep = prepare_compaction(b.entries, keep(250))
    assert prep.first_kept_entry_id == "A10"
    assert prep.is_split_turn is True
    assert texts(prep.messages_to_summarize) == ["检查认证实现", "读取代码并解释"]
    assert [m["role"] for m in prep.turn_prefix_messages] == ["user", "assistant", "toolResult", "assistant",
                                                              "toolResult"]
    assert texts(prep.turn_prefix_messages)[0].startswith("按方案修改并测试")
    # file operations come from the history and the turn prefix, not the kept suffix
    assert list(prep.file_ops.read) == ["old.py", "a.py"]
    assert list(prep.file_ops.edited) == ["a.py"]
    assert compute_file_lists(prep.file_ops) == (["old.py"], ["a.py"])


def test_split_turn_at_the_start_of_the_session_has_no_history():
    prep = prepare_compaction(split_branch(with_history=False).entries, keep(250))
    assert prep.first_kept_entry_id == "A10"
    assert prep.is_split_turn is True
    assert prep.messages_to_summarize == []
    assert len(prep.turn_prefix_messages) == 5


# --- explainer §11: a second compaction consumes the first -------------------------------------------


def after_first_compaction() -> Branch:
    b = explainer_branch()
    b.compaction("C1", "First summary: cookie auth, tests added.", "U4", details={
        "readFiles": ["docs/notes.md"], "modifiedFiles": ["src/auth.ts"]}, fromHook=False)
    for name in ("U8", "A9", "U10", "A11"):
        (b.user if name.startswith("U") else b.asst)(name, T100)
    return b


def test_second_compaction_resummarises_the_previously_kept_region():
    b = after_first_compaction()
    path = path_to(b, "A11")
    projected = build_session_projection(path).entries
    assert [p.source["id"] for p in projected] == ["C1", "U4", "A6", "U5", "A7", "U8", "A9", "U10", "A11"]
    prep = prepare_compaction(path, keep(350))
    assert prep.first_kept_entry_id == "U8"
    assert prep.previous_summary == "First summary: cookie auth, tests added."
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant", "user", "assistant"]
    assert all("First summary" not in t for t in texts(prep.messages_to_summarize))
    # carried over from C1's details: readFiles → read, modifiedFiles → edited
    assert list(prep.file_ops.read) == ["docs/notes.md"]
    assert list(prep.file_ops.edited) == ["src/auth.ts"]


def test_second_compaction_skipped_when_everything_since_still_fits():
    path = path_to(after_first_compaction(), "A11")
    assert prepare_compaction(path, keep(20000)) is None


def test_hook_compaction_details_are_not_carried_over():
    b = explainer_branch()
    b.compaction("C1", "ext summary", "U4", details={"readFiles": ["x"], "modifiedFiles": ["y"]}, fromHook=True)
    for name in ("U8", "A9", "U10", "A11"):
        (b.user if name.startswith("U") else b.asst)(name, T100)
    prep = prepare_compaction(path_to(b, "A11"), keep(350))
    assert list(prep.file_ops.read) == [] and list(prep.file_ops.edited) == []


def test_older_compaction_inside_kept_range_contributes_nothing():
    # explainer §11.1: U1 A1 U2 A2 C1 U3 A3 C2 with C2 keeping from U2
    b = Branch()
    for name in ("U1", "A1", "U2", "A2"):
        (b.user if name.startswith("U") else b.asst)(name, T100)
    b.compaction("C1", "old checkpoint", "U2")
    b.user("U3", T100)
    b.asst("A3", T100)
    b.compaction("C2", "new checkpoint", "U2")
    projection = build_session_projection(b.entries)
    assert [p.source["id"] for p in projection.entries] == ["C2", "U2", "A2", "C1", "U3", "A3"]
    assert [m["role"] for m in projection.messages] == ["compactionSummary", "user", "assistant", "user", "assistant"]
    assert prepare_compaction(b.entries, keep(10)) is None  # the last entry is a compaction
    b.user("U4", T100)
    b.asst("A4", T100)
    prep = prepare_compaction(b.entries, keep(150))
    assert prep.previous_summary == "new checkpoint"
    assert prep.first_kept_entry_id == "U4"
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant", "user", "assistant"]
    assert "old checkpoint" not in str(prep.messages_to_summarize)


# --- catalogue: compaction.test.ts "prepareCompaction with a previous compaction" -----------------------


def catalogue_branch(long: bool) -> Branch:
    filler = " " + "lorem ipsum " * 60 if long else ""
    b = Branch()
    b.user("u1", "user msg 1" + filler)
    b.asst("a1", "assistant msg 1" + filler)
    b.user("u2", "user msg 2 - kept by compaction1" + filler)
    b.asst("a2", "assistant msg 2" + filler)
    b.user("u3", "user msg 3 - also kept" + filler)
    b.asst("a3", "assistant msg 3" + filler, use=usage(5000, 1000))
    b.compaction("c1", "First summary", "u2", tokensBefore=6000)
    b.user("u4", "user msg 4" + filler)
    b.asst("a4", "assistant msg 4" + filler, use=usage(8000, 2000))
    return b


def test_skip_repeated_compaction_when_kept_messages_still_fit():
    assert prepare_compaction(catalogue_branch(long=False).entries, CompactionSettings()) is None


def test_resummarise_previously_kept_messages():
    prep = prepare_compaction(catalogue_branch(long=True).entries, keep(100))
    assert prep is not None
    summarised = "\n".join(texts(prep.messages_to_summarize))
    assert "user msg 2 - kept by compaction1" in summarised
    assert "user msg 3 - also kept" in summarised
    assert "First summary" not in summarised
    assert prep.previous_summary == "First summary"
    # a4 (after c1, non-zero usage) is a trusted anchor: 8000 + 2000, nothing after it
    assert prep.tokens_before == 10000


# --- other rules ----------------------------------------------------------------------------------------


def test_already_compacted():
    b = Branch()
    b.user("u", T100)
    b.asst("a", T100)
    b.compaction("c", "sum", "u")
    assert prepare_compaction(b.entries, keep(1)) is None


def test_nothing_to_compact_when_everything_fits():
    b = Branch()
    b.user("u", T100)
    b.asst("a", T100)
    assert prepare_compaction(b.entries, keep(10000)) is None
    assert prepare_compaction([], keep(1)) is None


def test_unmigrated_entries_without_ids():
    entries = [
        {"type": "message", "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": T100}},
        {"type": "message", "timestamp": "2026-01-01T00:00:01.000Z", "message": {"role": "user", "content": T100}},
    ]
    assert prepare_compaction(entries, keep(1)) is None


def test_system_messages_are_not_summarised():
    b = Branch()
    b.msg("s1", {"role": "system", "content": "", "sections": {"base": "You are pi."}, "timestamp": 1})
    b.user("u1", T100)
    b.asst("a1", T100)
    b.msg("s2", {"role": "system", "content": "", "sections": {"base": "You are pi, v2."}, "timestamp": 2})
    b.user("u2", T100)
    b.asst("a2", T100)
    prep = prepare_compaction(b.entries, keep(150))
    assert prep.first_kept_entry_id == "u2"
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant"]


def test_context_edits_are_applied_before_summarising():
    b = Branch()
    b.user("u1", "original question")
    b.asst("E1", "half an answer", stop="error", error="overloaded")
    b.edit("ce1", "E1", None)
    b.asst("a1", "secret token 123")
    b.edit("ce2", "a1", {"content": "[redacted]"})
    b.user("u2", T100)
    b.asst("a2", T100)
    prep = prepare_compaction(b.entries, keep(150))
    # the cut lands on u2 and is pulled back over ce2 (an edit projects nothing); that makes
    # the turn of u1 the split turn, so the edited messages form the turn prefix
    assert prep.first_kept_entry_id == "ce2"
    assert prep.is_split_turn is True
    assert prep.messages_to_summarize == []
    assert texts(prep.turn_prefix_messages) == ["original question", "[redacted]"]
    assert prep.turn_prefix_messages[1]["stopReason"] == "stop"  # other fields of a1 are kept


def test_settings_may_be_a_mapping():
    prep = prepare_compaction(path_to(explainer_branch(), "A7"), {"keepRecentTokens": 350})
    assert prep.first_kept_entry_id == "U4"
