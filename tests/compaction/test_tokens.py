"""Token accounting (compaction.md §2; test-catalogue §2 token helpers, §5 item 10)."""

from __future__ import annotations

import math

import pytest
from cbuild import Branch, asst, usage, user

from pi_lab.compaction import (
    CompactionSettings,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
    should_compact,
)
from pi_lab.session import build_session_projection

# --- estimate_tokens ------------------------------------------------------------------------


def test_user_string_rounds_up():
    assert estimate_tokens(user("Hello")) == 2  # 5 chars → ceil(1.25)
    assert estimate_tokens(user("abcd")) == 1
    assert estimate_tokens(user("")) == 0


def test_user_blocks_count_text_and_images():
    message = user([{"type": "text", "text": "abcdefgh"}, {"type": "image", "data": "xx", "mimeType": "image/png"}])
    assert estimate_tokens(message) == (8 + 4800) // 4  # 1202: an image costs 1200 tokens


def test_lengths_are_utf16_code_units():
    # "😀" is two UTF-16 units, "é" one; 4 emoji = 8 units = 2 tokens
    assert estimate_tokens(user("😀" * 4)) == 2
    assert estimate_tokens(user("é" * 4)) == 1
    assert estimate_tokens(user("😀")) == 1


def test_assistant_counts_text_thinking_and_tool_calls():
    message = asst(
        "abcd",
        thinking="12345678",
        calls=[{"id": "c1", "name": "read", "arguments": {"path": "é", "n": 1.0}}],
    )
    # text 4 + thinking 8 + "read" 4 + '{"path":"é","n":1}' 18 → 34 → ceil(8.5) = 9
    assert estimate_tokens(message) == 9


def test_assistant_images_are_not_counted():
    message = asst(None)
    message["content"] = [{"type": "image", "data": "x", "mimeType": "image/png"}]
    assert estimate_tokens(message) == 0


def test_tool_call_json_is_compact_and_not_ascii_escaped():
    args = {"cmd": "ls -la", "list": [1, 2.5, True, None], "nested": {"k": "中文"}}
    message = asst(None, calls=[{"id": "c", "name": "bash", "arguments": args}])
    compact = '{"cmd":"ls -la","list":[1,2.5,true,null],"nested":{"k":"中文"}}'
    assert estimate_tokens(message) == -(-(4 + len(compact)) // 4)


def test_custom_and_tool_result_like_user():
    custom = {"role": "custom", "customType": "x", "content": "x" * 10, "display": True, "timestamp": 1}
    assert estimate_tokens(custom) == 3
    tool = {"role": "toolResult", "toolCallId": "c", "toolName": "read", "isError": False, "timestamp": 1,
            "content": [{"type": "text", "text": "abc"}, {"type": "image", "data": "", "mimeType": "image/png"}]}
    assert estimate_tokens(tool) == -(-(3 + 4800) // 4)


def test_bash_execution_counts_command_and_output_even_when_excluded():
    bash = {"role": "bashExecution", "command": "ls", "output": "a.txt b.txt", "cancelled": False,
            "truncated": False, "timestamp": 1, "excludeFromContext": True}
    assert estimate_tokens(bash) == -(-13 // 4)


def test_summaries_count_their_text():
    assert estimate_tokens({"role": "branchSummary", "summary": "x" * 9, "fromId": "a", "timestamp": 1}) == 3
    assert estimate_tokens({"role": "compactionSummary", "summary": "x" * 8, "tokensBefore": 5, "timestamp": 1}) == 2


def test_system_counts_content_sections_and_added_tools():
    system = {
        "role": "system",
        "content": "abcd",
        "sections": {"a": "12345678", "b": None, "c": ""},
        "toolsAdded": [{"name": "read"}],
        "toolsRemoved": [{"name": "a-very-long-tool-name-that-is-not-counted"}],
        "timestamp": 1,
    }
    assert estimate_tokens(system) == -(-(4 + 8 + len('[{"name":"read"}]')) // 4)


def test_unknown_roles_cost_nothing():
    assert estimate_tokens({"role": "mystery", "content": "x" * 100}) == 0


# --- usage -----------------------------------------------------------------------------------


def test_calculate_context_tokens():
    assert calculate_context_tokens(usage(1000, 500, 200, 100)) == 1800
    assert calculate_context_tokens(usage(0, 0, 0, 0)) == 0
    # totalTokens wins when non-zero, components are the fallback
    assert calculate_context_tokens(usage(1, 1, total=50)) == 50
    assert calculate_context_tokens({"input": 3, "output": 4, "cacheRead": 0, "cacheWrite": 0}) == 7
    # JavaScript arithmetic: an absent counter gives NaN, a null one counts as 0
    assert math.isnan(calculate_context_tokens({"input": 3, "output": 4}))
    assert calculate_context_tokens({"input": 3, "output": None, "cacheRead": 0, "cacheWrite": 0}) == 3


def test_usage_with_missing_counters_is_not_an_anchor():
    old = asst("a", use={"input": 100, "output": 5})
    assert get_last_assistant_usage(_entries(user("hi"), old)) is None
    estimate = estimate_context_tokens([user("Hello"), old])
    assert estimate.last_usage_index is None and estimate.tokens == 2 + 1


def _entries(*messages):
    b = Branch()
    for i, m in enumerate(messages):
        b.msg(f"e{i}", m)
    return b.entries


def test_last_assistant_usage():
    entries = _entries(user("hi"), asst("a", use=usage(100, 10)), user("x"), asst("b", use=usage(200, 10)))
    assert get_last_assistant_usage(entries)["input"] == 200


def test_last_assistant_usage_skips_aborted_error_and_zero_usage():
    base = [user("hi"), asst("a", use=usage(100, 10))]
    assert get_last_assistant_usage(_entries(*base, asst("b", use=usage(200, 10), stop="aborted")))["input"] == 100
    assert get_last_assistant_usage(_entries(*base, asst("b", use=usage(200, 10), stop="error")))["input"] == 100
    assert get_last_assistant_usage(_entries(*base, asst("b", use=usage(0, 0))))["input"] == 100


def test_last_assistant_usage_none_without_assistant():
    assert get_last_assistant_usage(_entries(user("hi"), user("there"))) is None
    assert get_last_assistant_usage([]) is None


def test_estimate_context_tokens_uses_last_valid_anchor():
    messages = [user("Hello"), asst("Hi", use=usage(100, 50)), user("continue"), asst("zero", use=usage(0, 0))]
    estimate = estimate_context_tokens(messages)
    assert estimate.usage_tokens == 150
    assert estimate.last_usage_index == 1
    expected_trailing = estimate_tokens(messages[2]) + estimate_tokens(messages[3])
    assert estimate.trailing_tokens == expected_trailing == 2 + 1
    assert estimate.tokens == 150 + expected_trailing


def test_estimate_context_tokens_without_anchor_sums_everything():
    messages = [user("Hello"), asst("Hi", use=usage(0, 0)), asst("err", stop="error", use=usage(5, 5))]
    estimate = estimate_context_tokens(messages)
    assert estimate.last_usage_index is None
    assert estimate.usage_tokens == 0
    assert estimate.tokens == estimate.trailing_tokens == 2 + 1 + 1


# --- threshold -------------------------------------------------------------------------------


def test_should_compact_threshold_is_strict():
    settings = CompactionSettings(enabled=True, reserve_tokens=10000, keep_recent_tokens=20000)
    assert should_compact(95000, 100000, settings) is True
    assert should_compact(89000, 100000, settings) is False
    assert should_compact(90000, 100000, settings) is False  # equal is not over
    assert should_compact(90001, 100000, settings) is True


def test_should_compact_disabled():
    settings = CompactionSettings(enabled=False, reserve_tokens=10000, keep_recent_tokens=20000)
    assert should_compact(95000, 100000, settings) is False


def test_should_compact_window_zero_crosses_for_any_positive_estimate():
    assert should_compact(1, 0, CompactionSettings(reserve_tokens=0)) is True


# --- projected estimate (§2.5, catalogue §5 item 10) -----------------------------------------------


def _projected(b: Branch):
    return build_session_projection(b.entries), b.entries


def test_projected_estimate_trusts_anchor_after_last_edit():
    b = Branch()
    b.user("u1", "x" * 400)
    b.asst("a1", "y" * 40)
    b.edit("ce", "u1", {"content": "short"})
    b.user("u2", "next")
    b.asst("a2", "z" * 8, use=usage(700, 50))
    b.user("u3", "12345678")
    projection, entries = _projected(b)
    estimate = estimate_projected_context_tokens(projection, entries)
    assert estimate.usage_tokens == 750
    assert estimate.last_usage_index == 3  # u1 a1 u2 a2 u3: the edit adds no message
    assert estimate.tokens == 750 + 2


def test_projected_estimate_ignores_anchor_before_edit():
    b = Branch()
    b.user("u1", "x" * 400)
    b.asst("a1", "y" * 40, use=usage(900, 100))
    b.edit("ce", "u1", {"content": "short"})  # the usage measured the 400-char text
    projection, entries = _projected(b)
    estimate = estimate_projected_context_tokens(projection, entries)
    assert estimate.last_usage_index is None
    assert estimate.usage_tokens == 0
    assert estimate.tokens == estimate.trailing_tokens == 2 + 10  # "short" + 40 chars


def test_projected_estimate_ignores_anchor_before_compaction():
    b = Branch()
    b.user("u1", "x" * 400)
    b.asst("a1", "y" * 40, use=usage(900, 100))
    b.user("u2", "abcd")
    b.asst("a2", "b" * 8, use=usage(5000, 100))
    b.compaction("c1", "s" * 20, "u2")
    projection, entries = _projected(b)
    estimate = estimate_projected_context_tokens(projection, entries)
    assert [m["role"] for m in projection.messages] == ["compactionSummary", "user", "assistant"]
    assert estimate.last_usage_index is None
    assert estimate.tokens == 5 + 1 + 2


def test_projected_estimate_counts_current_system_state_once():
    b = Branch()
    b.msg("s1", {"role": "system", "content": "", "sections": {"base": "a" * 40}, "timestamp": 1})
    b.user("u1", "abcd")
    b.msg("s2", {"role": "system", "content": "", "sections": {"base": "b" * 8, "extra": "c" * 4}, "timestamp": 2})
    b.edit("ce", "u1", {"content": "abcdefgh"})
    projection, entries = _projected(b)
    estimate = estimate_projected_context_tokens(projection, entries)
    # replayed state: sections base=8 chars, extra=4 chars → 3 tokens; plus the edited user (2)
    assert estimate.tokens == 3 + 2
    assert estimate.last_usage_index is None


def test_projected_estimate_anchor_entry_not_on_branch_is_untrusted():
    b = Branch()
    b.user("u1", "abcd")
    b.asst("a1", "abcd", use=usage(100, 0))
    projection, _ = _projected(b)
    # The branch handed in does not contain a1: the anchor cannot be placed after anything.
    estimate = estimate_projected_context_tokens(projection, b.entries[:1])
    assert estimate.last_usage_index is None
    assert estimate.tokens == 2


@pytest.mark.parametrize("stop", ["stop", "toolUse", "length"])
def test_projected_estimate_trusted_without_edits(stop):
    b = Branch()
    b.user("u1", "abcd")
    b.asst("a1", "abcd", use=usage(100, 20), stop=stop)
    projection, entries = _projected(b)
    estimate = estimate_projected_context_tokens(projection, entries)
    assert (estimate.tokens, estimate.usage_tokens, estimate.last_usage_index) == (120, 120, 1)
