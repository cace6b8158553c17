"""Branch summaries: collecting abandoned entries, preparing them, generating the summary
(compaction.md §9, tree-and-context.md §12; catalogue §5 items 16 and 18)."""

from __future__ import annotations

import asyncio

import pytest
from cbuild import Branch, FakeClient, call, model, reply, usage

from pi_lab.compaction import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    collect_entries_for_branch_summary,
    generate_branch_summary,
    prepare_branch_entries,
)
from pi_lab.session import SessionManager

run = asyncio.run
T100 = "x" * 400  # 100 tokens


def session_of(b: Branch) -> SessionManager:
    return SessionManager.in_memory(entries=b.entries)


def ids(entries):
    return [e["id"] for e in entries]


# --- collectEntriesForBranchSummary -----------------------------------------------------------------


def tree() -> Branch:
    """u1 a1 u2 a2, plus a sibling branch u2b a2b under a1, plus a separate root r1 r2."""
    b = Branch()
    b.user("u1")
    b.asst("a1")
    b.user("u2")
    b.asst("a2")
    b.user("u2b", parent="a1")
    b.asst("a2b")
    b.user("r1", parent=None)
    b.asst("r2")
    return b


def test_target_is_an_ancestor_of_the_old_leaf():
    entries, ancestor = collect_entries_for_branch_summary(session_of(tree()), "a2", "u2")
    # the target itself is the common ancestor: only what came after it is abandoned
    assert ancestor == "u2"
    assert ids(entries) == ["a2"]


def test_target_is_a_descendant_of_the_old_leaf():
    result = collect_entries_for_branch_summary(session_of(tree()), "a1", "a2")
    assert result.entries == [] and result.common_ancestor_id == "a1"


def test_sibling_branches_meet_at_the_fork():
    result = collect_entries_for_branch_summary(session_of(tree()), "a2", "a2b")
    assert result.common_ancestor_id == "a1"
    assert ids(result.entries) == ["u2", "a2"]


def test_disjoint_roots_abandon_the_whole_old_path():
    entries, ancestor = collect_entries_for_branch_summary(session_of(tree()), "a2", "r2")
    assert ancestor is None
    assert ids(entries) == ["u1", "a1", "u2", "a2"]


def test_no_old_leaf_means_nothing_to_summarise():
    assert collect_entries_for_branch_summary(session_of(tree()), None, "a2") == ([], None)


def test_collected_entries_are_raw_including_metadata():
    b = tree()
    b.label("lab", "u2", parent="a2")
    b.edit("ce", "a2", None)
    entries, _ = collect_entries_for_branch_summary(session_of(b), "ce", "a1")
    assert ids(entries) == ["u2", "a2", "lab", "ce"]


# --- prepareBranchEntries -----------------------------------------------------------------------------


def test_messages_in_order_without_tool_results_or_metadata():
    b = Branch()
    b.user("u", "question")
    b.asst("a", "reading", calls=[call("c", "read", path="src/app.py")])
    b.tool("t", "c", "read", "file body")
    b.model_change("m")
    b.custom("x")
    b.custom_message("cm", "a note")
    b.asst("a2", "answer")
    prepared = prepare_branch_entries(b.entries)
    assert [m["role"] for m in prepared.messages] == ["user", "assistant", "custom", "assistant"]
    # "question" 2; "reading" + "read" + '{"path":"src/app.py"}' = 32 chars → 8; "a note" 2; "answer" 2
    assert prepared.total_tokens == 2 + 8 + 2 + 2
    assert list(prepared.file_ops.read) == ["src/app.py"]


def test_file_lists_carried_from_earlier_branch_summaries_only():
    b = Branch()
    b.branch_summary("bs1", "earlier", details={"readFiles": ["r.md"], "modifiedFiles": ["m.py"]}, fromHook=False)
    b.branch_summary("bs2", "extension", details={"readFiles": ["hook.md"], "modifiedFiles": []}, fromHook=True)
    b.compaction("c", "checkpoint", "bs1", details={"readFiles": ["compaction.md"], "modifiedFiles": ["c.py"]})
    b.user("u", "hi")
    prepared = prepare_branch_entries(b.entries)
    assert list(prepared.file_ops.read) == ["r.md"]
    assert list(prepared.file_ops.edited) == ["m.py"]


def test_summaries_become_messages_even_when_empty():
    b = Branch()
    b.branch_summary("bs", "", fromId="old-leaf")
    b.compaction("c", "checkpoint", "bs", tokensBefore=77,
                 systemMessage={"role": "system", "content": "snapshot", "timestamp": 1})
    prepared = prepare_branch_entries(b.entries)
    assert [m["role"] for m in prepared.messages] == ["branchSummary", "compactionSummary"]
    assert prepared.messages[0] == {"role": "branchSummary", "summary": "", "fromId": "old-leaf",
                                    "timestamp": prepared.messages[0]["timestamp"]}
    assert prepared.messages[1]["tokensBefore"] == 77  # no system snapshot
    assert isinstance(prepared.messages[1]["timestamp"], int)


def test_budget_keeps_the_newest_messages():
    b = Branch()
    for i in range(5):
        b.user(f"u{i}", T100)
    prepared = prepare_branch_entries(b.entries, 250)
    assert [m["content"] for m in prepared.messages] == [T100, T100]
    assert prepared.total_tokens == 200


def test_budget_squeezes_in_a_summary_below_90_percent():
    b = Branch()
    b.branch_summary("bs", "s" * 400)
    b.user("u", T100)
    b.asst("a", T100)
    prepared = prepare_branch_entries(b.entries, 250)  # 200 < 225: the summary still goes in
    assert [m["role"] for m in prepared.messages] == ["branchSummary", "user", "assistant"]
    assert prepared.total_tokens == 300
    prepared = prepare_branch_entries(b.entries, 210)  # 200 ≥ 189: it does not
    assert [m["role"] for m in prepared.messages] == ["user", "assistant"]


def test_file_ops_are_read_even_past_the_budget():
    b = Branch()
    b.asst("old", T100, calls=[call("c", "edit", path="early.py")])
    b.user("u", T100)
    prepared = prepare_branch_entries(b.entries, 150)
    assert [m["role"] for m in prepared.messages] == ["user"]
    assert list(prepared.file_ops.edited) == ["early.py"]  # extracted before the budget check


def test_context_edits_among_the_entries_are_applied():
    b = Branch()
    b.user("u", "try it")
    b.asst("E1", "half", stop="error", error="overloaded")
    b.edit("ce1", "E1", None)  # the failed attempt is not summarised
    b.asst("a", "api key sk-123")
    b.edit("ce2", "a", {"content": [{"type": "text", "text": "[redacted]"}]})
    b.custom_message("cm", "original note")
    b.edit("ce3", "cm", {"content": "edited note"})
    b.tool("t", "c", "read", "tool output")
    b.edit("ce4", "t", {"content": [{"type": "text", "text": "x"}]})  # tool results stay skipped
    prepared = prepare_branch_entries(b.entries)
    texts = [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in prepared.messages]
    assert [m["role"] for m in prepared.messages] == ["user", "assistant", "custom"]
    assert texts == ["try it", "[redacted]", "edited note"]


def test_context_edit_outside_the_collected_range_has_no_effect():
    b = Branch()
    b.user("u1", "kept original")
    b.asst("a1", "fork point")
    b.user("u2", "abandoned")
    b.edit("ce", "u2", {"content": "edited"})
    # only u2 is handed in, the edit (after it) is not: the original content is summarised
    prepared = prepare_branch_entries([b.entries[2]])
    assert prepared.messages[0]["content"] == "abandoned"
    prepared = prepare_branch_entries(b.entries[2:])
    assert prepared.messages[0]["content"] == "edited"


# --- generateBranchSummary ------------------------------------------------------------------------------


def abandoned() -> list[dict]:
    b = Branch()
    b.user("u", "Try the JWT approach")
    b.asst("a", "Switched to JWT", calls=[call("c", "edit", path="src/auth.ts"), call("d", "read", path="docs.md")])
    b.tool("t", "c", "edit", "ok")
    return b.entries


def test_success_prepends_preamble_and_appends_file_lists():
    client = FakeClient(reply("## Goal\nJWT auth", use=usage(40, 8)))
    out = run(generate_branch_summary(abandoned(), client, model(), thinking_level="high"))
    assert out.error is None and out.aborted is False
    assert out.summary == (
        BRANCH_SUMMARY_PREAMBLE + "## Goal\nJWT auth"
        + "\n\n<read-files>\ndocs.md\n</read-files>\n\n<modified-files>\nsrc/auth.ts\n</modified-files>"
    )
    assert BRANCH_SUMMARY_PREAMBLE == (
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
    )
    assert out.usage == usage(40, 8)
    assert (out.read_files, out.modified_files) == (["docs.md"], ["src/auth.ts"])
    request = client.calls[0]
    assert request["reasoning"] == "high"  # 1.6.0: branch summaries may reason
    assert request["max_tokens"] is None
    assert client.prompt() == (
        "<conversation>\n[User]: Try the JWT approach\n\n[Assistant]: Switched to JWT\n\n"
        '[Assistant tool calls]: edit(path="src/auth.ts"); read(path="docs.md")\n</conversation>\n\n'
        + BRANCH_SUMMARY_PROMPT
    )


def test_nothing_to_summarise_makes_no_call():
    b = Branch()
    b.tool("t", "c", "read", "only a tool result")
    b.model_change("m")
    b.label("l", "t")
    client = FakeClient(reply("never"))
    out = run(generate_branch_summary(b.entries, client, model()))
    assert out.summary == "No content to summarize"
    assert out.usage is None and out.read_files is None
    assert client.calls == []
    assert run(generate_branch_summary([], client, model())).summary == "No content to summarize"


def test_custom_instructions_append_or_replace():
    client = FakeClient(reply("S"))
    run(generate_branch_summary(abandoned(), client, model(), custom_instructions="the API only"))
    assert client.prompt().endswith(BRANCH_SUMMARY_PROMPT + "\n\nAdditional focus: the API only")
    run(generate_branch_summary(abandoned(), client, model(), custom_instructions="Just list files.",
                                replace_instructions=True))
    assert client.prompt().endswith("</conversation>\n\nJust list files.")
    run(generate_branch_summary(abandoned(), client, model(), replace_instructions=True))
    assert client.prompt().endswith(BRANCH_SUMMARY_PROMPT)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (reply(None, stop="error", error="boom"), "Branch summarization failed: boom"),
        (reply("half", stop="length"),
         "Branch summarization failed: generation hit the token cap and the summary is incomplete"),
        (reply("S", calls=[call("x", "read", path="a")]), "Branch summarization attempted to call a tool"),
    ],
)
def test_failures_are_returned_not_raised(response, expected):
    out = run(generate_branch_summary(abandoned(), FakeClient(response), model()))
    assert out.error == expected and out.summary is None


def test_abort_is_checked_first():
    out = run(generate_branch_summary(abandoned(), FakeClient(reply("S", stop="aborted", error="x")), model()))
    assert out.aborted is True and out.error is None and out.summary is None


def test_budget_comes_from_the_context_window():
    b = Branch()
    for i in range(10):
        b.user(f"u{i}", f"message {i} " + "x" * 3990)  # 1000 tokens each
    client = FakeClient(reply("S"))
    # 20000 − 16384 = 3616 tokens: the three newest messages
    run(generate_branch_summary(b.entries, client, model(context_window=20000)))
    prompt = client.prompt()
    assert "message 7 " in prompt and "message 9 " in prompt and "message 6 " not in prompt
    # a window of 0 falls back to 128000
    run(generate_branch_summary(b.entries, client, model(context_window=0)))
    assert "message 0 " in client.prompt()
    # a smaller reserve widens the budget
    run(generate_branch_summary(b.entries, client, model(context_window=20000), reserve_tokens=14000))
    assert "message 4 " in client.prompt() and "message 3 " not in client.prompt()


def test_summary_entries_give_the_messages_the_projection_gives():
    """branch_entry_message and the model projection build a summary entry's message with one
    function each kind: same keys in pi's order, same values; only an empty branch summary
    differs (the projection leaves it out, a branch summary keeps it)."""
    from pi_lab.compaction.branch_summary import branch_entry_message
    from pi_lab.session.projection import entry_to_messages

    snapshot = {"role": "system", "content": "snap", "timestamp": 1}
    compaction = {"type": "compaction", "id": "c", "parentId": "p", "timestamp": "2026-01-01T00:00:01.000Z",
                  "summary": "S", "firstKeptEntryId": "u", "tokensBefore": 7, "systemMessage": snapshot}
    branch = {"type": "branch_summary", "id": "b", "parentId": "p", "timestamp": "2026-01-01T00:00:02.000Z",
              "fromId": "x", "summary": "B"}
    for entry, role, keys in ((compaction, "compactionSummary", ["role", "summary", "tokensBefore", "timestamp"]),
                              (branch, "branchSummary", ["role", "summary", "fromId", "timestamp"])):
        message = branch_entry_message(entry)
        assert message == entry_to_messages(entry)[-1]
        assert list(message) == keys and message["role"] == role
    assert entry_to_messages(compaction)[0] is snapshot
    empty = {**branch, "summary": ""}
    assert entry_to_messages(empty) == [] and branch_entry_message(empty)["summary"] == ""
    assert branch_entry_message(empty)["timestamp"] == 1767225602000
