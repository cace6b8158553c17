"""Summary generation and compact() with a scripted client (compaction.md §6; catalogue §2
compaction-summary-reasoning, 7048 truncated summary; §5 item 20)."""

from __future__ import annotations

import asyncio
import re

import pytest
from cbuild import Branch, FakeClient, asst, call, model, reply, usage, user

from pi_lab.compaction import (
    COMPACTION_PREFIX,
    CompactionPreparation,
    CompactionSettings,
    FileOperations,
    SummarizationError,
    compact,
    generate_summary,
    generate_summary_with_usage,
    generate_turn_prefix_summary,
    prepare_compaction,
)
from pi_lab.compaction.prompts import (
    BRANCH_SUMMARY_PROMPT,
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from pi_lab.compaction.summarize import FIRST_KEPT_ENTRY_MISSING

run = asyncio.run
MESSAGES = [user("Please fix the login bug"), asst("Looking at src/login.ts")]
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def prep(
    to_summarize=None,
    prefix=None,
    split=False,
    previous=None,
    first_kept="k1",
    ops=None,
) -> CompactionPreparation:
    return CompactionPreparation(
        first_kept_entry_id=first_kept,
        messages_to_summarize=list(MESSAGES if to_summarize is None else to_summarize),
        turn_prefix_messages=list(prefix or []),
        is_split_turn=split,
        tokens_before=12345,
        previous_summary=previous,
        file_ops=ops or FileOperations(),
        settings=CompactionSettings(),
    )


# --- request shape ----------------------------------------------------------------------------------


def test_history_request_shape_and_reasoning():
    client = FakeClient(reply("## Goal\nTest summary", use=usage(7, 3)))
    out = run(generate_summary_with_usage(MESSAGES, client, model(reasoning=True), thinking_level="high"))
    assert out.text == "## Goal\nTest summary"
    assert out.usage == usage(7, 3)
    request = client.calls[0]
    assert request["reasoning"] == "high"
    assert request["max_tokens"] is None  # 1.6.0 sends no output budget
    assert request["tools"] is None
    assert UUID_RE.match(request["session_id"])
    context = request["context"]
    assert context["system_prompt"] == SUMMARIZATION_SYSTEM_PROMPT
    assert len(context["messages"]) == 1
    message = context["messages"][0]
    assert message["role"] == "user" and isinstance(message["timestamp"], int)
    assert message["content"] == [{"type": "text", "text": client.prompt()}]
    assert client.prompt() == (
        "<conversation>\n[User]: Please fix the login bug\n\n[Assistant]: Looking at src/login.ts\n</conversation>\n\n"
        + SUMMARIZATION_PROMPT
    )


def test_generate_summary_returns_plain_text():
    client = FakeClient(reply("just text"))
    assert run(generate_summary(MESSAGES, client, model())) == "just text"


def test_each_call_gets_a_fresh_session_id():
    client = FakeClient(reply("a"), reply("b"))
    run(generate_summary(MESSAGES, client, model()))
    run(generate_summary(MESSAGES, client, model()))
    first, second = client.calls[0]["session_id"], client.calls[1]["session_id"]
    assert first != second
    run(generate_summary(MESSAGES, client, model(), session_id="given"))
    assert client.calls[2]["session_id"] == "given"


@pytest.mark.parametrize(("reasoning", "level"), [(True, "off"), (True, None), (False, "high")])
def test_no_reasoning_when_off_or_not_supported(reasoning, level):
    client = FakeClient(reply())
    run(generate_summary(MESSAGES, client, model(reasoning=reasoning), thinking_level=level))
    assert client.calls[0]["reasoning"] is None


def test_update_prompt_with_previous_summary_and_custom_focus():
    client = FakeClient(reply())
    run(generate_summary(MESSAGES, client, model(), previous_summary="PREV", custom_instructions="the API"))
    prompt = client.prompt()
    assert "\n</conversation>\n\n<previous-summary>\nPREV\n</previous-summary>\n\n" in prompt
    assert prompt.endswith(UPDATE_SUMMARIZATION_PROMPT + "\n\nAdditional focus: the API")


def test_cancel_flag_reaches_the_client():
    flag = asyncio.Event()
    client = FakeClient(reply())
    run(generate_summary(MESSAGES, client, model(), signal=flag))
    assert client.calls[0]["cancel"] is flag


def test_request_summary_takes_cancel_when_no_signal_is_given():
    from pi_lab.compaction.summarize import request_summary

    flag, other = asyncio.Event(), asyncio.Event()
    client = FakeClient(reply())
    run(request_summary("text", client, model(), cancel=flag))
    run(request_summary("text", client, model(), signal=other, cancel=flag))
    assert client.calls[0]["cancel"] is flag
    assert client.calls[1]["cancel"] is other


def test_an_unknown_request_option_is_refused():
    # The request options are declared once (SummaryRequestOptions) and taken as **options,
    # which Python does not check: a misspelt one must fail, not be dropped. The branch summary
    # checks before its early return for an empty branch, where no request is made.
    from pi_lab.compaction import generate_branch_summary

    client = FakeClient(reply())
    with pytest.raises(TypeError, match=r"^compact\(\) got an unexpected keyword argument 'thinking'$"):
        run(compact(prep(), client, model(), thinking="high"))
    with pytest.raises(TypeError, match=r"^request_summary\(\) got an unexpected keyword argument 'singal'$"):
        run(generate_summary(MESSAGES, client, model(), singal=None))
    with pytest.raises(TypeError, match="unexpected keyword argument 'sessionId'"):
        run(generate_branch_summary([], client, model(), sessionId="s"))
    assert client.calls == []


# --- prompts keep pi's structure ------------------------------------------------------------------------


def _headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#")]


def test_prompt_section_structure():
    checkpoint = ["## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
                  "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context"]
    assert _headings(SUMMARIZATION_PROMPT) == checkpoint
    assert _headings(UPDATE_SUMMARIZATION_PROMPT) == checkpoint
    assert _headings(BRANCH_SUMMARY_PROMPT) == checkpoint[:-1]
    assert _headings(TURN_PREFIX_SUMMARIZATION_PROMPT) == [
        "## Original Request", "## Progress So Far", "## Context Needed to Continue"]
    for prompt in (SUMMARIZATION_PROMPT, UPDATE_SUMMARIZATION_PROMPT, BRANCH_SUMMARY_PROMPT):
        assert "Use this EXACT format:" in prompt
        assert "- [x]" in prompt and "- [ ]" in prompt and "- **[Decision]**:" in prompt
    assert "(none)" in SUMMARIZATION_PROMPT and "(none)" in BRANCH_SUMMARY_PROMPT
    assert "<previous-summary>" in UPDATE_SUMMARIZATION_PROMPT and "RULES:" in UPDATE_SUMMARIZATION_PROMPT


# --- failure rules (regression 7048 and §6.5) ----------------------------------------------------------


def test_length_stop_is_rejected():
    client = FakeClient(reply("## Goal\nHalf a summ", stop="length"))
    with pytest.raises(SummarizationError, match="token cap"):
        run(generate_summary_with_usage(MESSAGES, client, model()))
    client = FakeClient(reply("## Goal\nHalf a summ", stop="length"))
    with pytest.raises(SummarizationError, match="Summarization failed") as err:
        run(generate_summary(MESSAGES, client, model()))
    assert str(err.value) == "Summarization failed: generation hit the token cap and the summary is incomplete"


def test_stop_resolves_to_the_text():
    client = FakeClient(reply("## Goal\nComplete summary"))
    assert run(generate_summary(MESSAGES, client, model())) == "## Goal\nComplete summary"


def test_error_carries_the_provider_message():
    client = FakeClient(reply(None, stop="error", error="boom"))
    with pytest.raises(SummarizationError, match="boom") as err:
        run(generate_summary(MESSAGES, client, model()))
    assert str(err.value) == "Summarization failed: boom"
    client = FakeClient(reply(None, stop="error"))
    with pytest.raises(SummarizationError) as err:
        run(generate_summary(MESSAGES, client, model()))
    assert str(err.value) == "Summarization failed: Unknown error"


def test_tool_calls_are_rejected():
    client = FakeClient(reply("## Goal", calls=[call("1", "read", path="x")], stop="toolUse"))
    with pytest.raises(SummarizationError) as err:
        run(generate_summary(MESSAGES, client, model()))
    assert str(err.value) == "Summarization attempted to call a tool"
    client = FakeClient(reply("## Original Request", calls=[call("1", "read", path="x")]))
    with pytest.raises(SummarizationError) as err:
        run(generate_turn_prefix_summary(MESSAGES, client, model()))
    assert str(err.value) == "Turn prefix summarization attempted to call a tool"


def test_turn_prefix_length_and_error_labels():
    client = FakeClient(reply("x", stop="length"))
    with pytest.raises(SummarizationError, match="^Turn prefix summarization failed: generation hit the token cap"):
        run(generate_turn_prefix_summary(MESSAGES, client, model()))


def test_aborted_response_returns_its_text():
    # the caller checks its own abort signal before appending (AgentSession does)
    client = FakeClient(reply("partial", stop="aborted"))
    assert run(generate_summary(MESSAGES, client, model())) == "partial"


# --- compact() ------------------------------------------------------------------------------------------


def test_compact_single_summary_with_file_lists():
    ops = FileOperations()
    ops.read.update(["b.md", "a.md"])
    ops.edited.add("src/x.ts")
    client = FakeClient(reply("## Goal\nFix login", use=usage(100, 20)))
    result = run(compact(prep(ops=ops, previous="PREV"), client, model(), thinking_level="medium"))
    assert len(client.calls) == 1
    assert "<previous-summary>\nPREV\n</previous-summary>" in client.prompt()
    assert client.calls[0]["reasoning"] == "medium"
    assert result.summary == (
        "## Goal\nFix login\n\n<read-files>\na.md\nb.md\n</read-files>\n\n<modified-files>\nsrc/x.ts\n</modified-files>"
    )
    assert result.first_kept_entry_id == "k1"
    assert result.tokens_before == 12345
    assert result.usage == usage(100, 20)
    assert result.details == {"readFiles": ["a.md", "b.md"], "modifiedFiles": ["src/x.ts"]}
    assert result.estimated_tokens_after is None
    assert result.to_dict() == {"summary": result.summary, "firstKeptEntryId": "k1", "tokensBefore": 12345,
                                "usage": usage(100, 20), "details": result.details}


def test_compact_split_turn_two_sequential_calls_and_combined_usage():
    prefix = [user("Implement the plan and test it"), asst("Reading", calls=[call("c", "read", path="a.py")])]
    client = FakeClient(reply("HISTORY", use=usage(10, 10)), reply("PREFIX", use=usage(10, 10)))
    result = run(compact(prep(prefix=prefix, split=True), client, model(), thinking_level="high",
                         custom_instructions="keep the tests"))
    assert len(client.calls) == 2
    history_prompt, prefix_prompt = client.prompt(0), client.prompt(1)
    assert history_prompt.startswith("<conversation>\n[User]: Please fix the login bug")
    assert history_prompt.endswith("\n\nAdditional focus: keep the tests")
    assert prefix_prompt == (
        "# Conversation\n[User]: Implement the plan and test it\n\n[Assistant]: Reading\n\n"
        '[Assistant tool calls]: read(path="a.py")\n\n# Instructions\n'
        + TURN_PREFIX_SUMMARIZATION_PROMPT + "\n\nAdditional focus: keep the tests"
    )
    assert [c["reasoning"] for c in client.calls] == ["high", "high"]
    assert [c["max_tokens"] for c in client.calls] == [None, None]
    assert client.calls[0]["session_id"] != client.calls[1]["session_id"]
    assert result.summary == "HISTORY" + SPLIT_TURN_SEPARATOR + "PREFIX"
    assert SPLIT_TURN_SEPARATOR == "\n\n---\n\n**Turn Context (split turn):**\n\n"
    assert result.usage["input"] == 20 and result.usage["output"] == 20 and result.usage["totalTokens"] == 40
    assert result.usage["cost"]["totalFromProvider"] is False


def test_compact_split_turn_without_history_uses_no_prior_history():
    client = FakeClient(reply("PREFIX", use=usage(3, 4)))
    result = run(compact(prep(to_summarize=[], prefix=MESSAGES, split=True), client, model()))
    assert len(client.calls) == 1
    assert client.prompt().startswith("# Conversation\n")
    assert result.summary == NO_PRIOR_HISTORY + SPLIT_TURN_SEPARATOR + "PREFIX"
    assert result.usage == usage(3, 4)


def test_compact_split_turn_carries_the_previous_summary_forward():
    # 1.6.0: historyText = previousSummary when there is nothing new before the split turn
    client = FakeClient(reply("PREFIX"))
    result = run(compact(prep(to_summarize=[], prefix=MESSAGES, split=True, previous="OLD"), client, model()))
    assert len(client.calls) == 1
    assert result.summary == "OLD" + SPLIT_TURN_SEPARATOR + "PREFIX"


def test_compact_history_failure_stops_before_the_prefix_call():
    client = FakeClient(reply(None, stop="error", error="boom"), reply("PREFIX"))
    with pytest.raises(SummarizationError, match="^Summarization failed: boom$"):
        run(compact(prep(prefix=MESSAGES, split=True), client, model()))
    assert len(client.calls) == 1


def test_compact_missing_first_kept_id_is_checked_after_summaries():
    client = FakeClient(reply("S"))
    with pytest.raises(SummarizationError) as err:
        run(compact(prep(first_kept=""), client, model()))
    assert str(err.value) == FIRST_KEPT_ENTRY_MISSING
    assert len(client.calls) == 1


def test_compact_end_to_end_from_a_prepared_branch():
    b = Branch()
    b.user("u1", "Fix the login bug " + "x" * 400)
    b.asst("a1", "x" * 400, calls=[call("c", "read", path="src/login.ts")])
    b.tool("t1", "c", "read", "export function login() {}")
    b.asst("a2", "x" * 400, calls=[call("d", "edit", path="src/login.ts")])
    b.user("u2", "x" * 400)
    b.asst("a3", "x" * 400)
    preparation = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=150))
    assert preparation.first_kept_entry_id == "u2"
    client = FakeClient(reply("## Goal\nFix login"))
    result = run(compact(preparation, client, model()))
    assert "[Tool result]: export function login() {}" in client.prompt()
    assert result.summary.endswith("\n\n<modified-files>\nsrc/login.ts\n</modified-files>")
    assert result.details == {"readFiles": [], "modifiedFiles": ["src/login.ts"]}
    # the summary later reaches the model wrapped as a user message
    assert COMPACTION_PREFIX.endswith("<summary>\n")
