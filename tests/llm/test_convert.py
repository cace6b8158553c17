"""convert_to_llm (compaction.md §7.1), pi-ai's request-time transform, system-message replay."""

from __future__ import annotations

from pi_lab.llm import Model, build_request, convert_to_llm, prepare_request_messages
from pi_lab.llm.convert import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
)

CLAUDE = Model("anthropic", "claude-test", "anthropic-messages", 200000, 64000, reasoning=True)


def user(text: str, ts: int = 1) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant(*blocks: dict, stop: str = "stop", provider: str = "anthropic", model: str = "claude-test",
              api: str = "anthropic-messages") -> dict:
    return {"role": "assistant", "content": list(blocks), "api": api, "provider": provider, "model": model,
            "usage": {}, "stopReason": stop, "timestamp": 2}


def call(call_id: str, name: str = "read", **arguments: object) -> dict:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def result(call_id: str, text: str = "ok", name: str = "read") -> dict:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": False, "timestamp": 3}


def bash(**fields: object) -> dict:
    return {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 0, "cancelled": False,
            "truncated": False, "timestamp": 5, **fields}


# --- convert_to_llm -----------------------------------------------------------------------------

def test_exact_summary_strings() -> None:
    assert COMPACTION_SUMMARY_PREFIX == (
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
    )
    assert COMPACTION_SUMMARY_SUFFIX == "\n</summary>"
    assert BRANCH_SUMMARY_PREFIX == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
    )
    assert BRANCH_SUMMARY_SUFFIX == "</summary>"


def test_llm_roles_pass_through_as_the_same_objects() -> None:
    messages = [
        {"role": "system", "content": "", "sections": {"base": "You help."}, "timestamp": 0},
        user("hi"),
        assistant({"type": "text", "text": "hello"}),
        result("c1"),
    ]
    converted = convert_to_llm(messages)
    assert len(converted) == 4
    assert all(a is b for a, b in zip(converted, messages))


def test_summaries_become_user_messages_with_prefix_and_suffix() -> None:
    converted = convert_to_llm([
        {"role": "compactionSummary", "summary": "S1", "tokensBefore": 115000, "timestamp": 10},
        {"role": "branchSummary", "summary": "B1", "fromId": "A2", "timestamp": 11},
    ])
    assert converted == [
        {"role": "user", "content": [{"type": "text", "text": COMPACTION_SUMMARY_PREFIX + "S1\n</summary>"}],
         "timestamp": 10},
        {"role": "user", "content": [{"type": "text", "text": BRANCH_SUMMARY_PREFIX + "B1</summary>"}],
         "timestamp": 11},
    ]


def test_custom_message_string_becomes_one_text_block_and_arrays_pass() -> None:
    blocks = [{"type": "text", "text": "x"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]
    converted = convert_to_llm([
        {"role": "custom", "customType": "note", "content": "remember", "display": True, "timestamp": 7},
        {"role": "custom", "customType": "img", "content": blocks, "display": False, "timestamp": 8},
    ])
    assert converted[0] == {"role": "user", "content": [{"type": "text", "text": "remember"}], "timestamp": 7}
    assert converted[1]["content"] is blocks
    assert list(converted[1]) == ["role", "content", "timestamp"]


def test_bash_execution_text() -> None:
    [converted] = convert_to_llm([bash()])
    assert converted == {"role": "user", "content": [{"type": "text", "text": "Ran `ls`\n```\na\nb\n```"}],
                         "timestamp": 5}


def test_bash_execution_variants() -> None:
    texts = [m["content"][0]["text"] for m in convert_to_llm([
        bash(output=""),
        bash(exitCode=2),
        bash(exitCode=None),
        bash(cancelled=True, exitCode=1),
        bash(truncated=True, fullOutputPath="/tmp/out.txt"),
        bash(truncated=True),
    ])]
    assert texts == [
        "Ran `ls`\n(no output)",
        "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2",
        "Ran `ls`\n```\na\nb\n```",
        "Ran `ls`\n```\na\nb\n```\n\n(command cancelled)",
        "Ran `ls`\n```\na\nb\n```\n\n[Output truncated. Full output: /tmp/out.txt]",
        "Ran `ls`\n```\na\nb\n```",
    ]


def test_excluded_bash_and_unknown_roles_are_dropped() -> None:
    assert convert_to_llm([bash(excludeFromContext=True), {"role": "mystery", "timestamp": 1}, "junk"]) == []


# --- prepare_request_messages -------------------------------------------------------------------

def test_failed_and_aborted_assistants_are_dropped() -> None:
    messages = [
        user("q"),
        assistant({"type": "text", "text": "partial"}, stop="error"),
        assistant({"type": "text", "text": "cut"}, stop="aborted"),
        assistant({"type": "text", "text": "truncated"}, stop="length"),
    ]
    prepared = prepare_request_messages(messages, CLAUDE)
    assert [m.get("stopReason") for m in prepared] == [None, "length"]


def test_missing_tool_results_are_synthesized_before_the_next_user_message() -> None:
    messages = [
        user("q"),
        assistant(call("c1"), call("c2", "write", path="a.py"), stop="toolUse"),
        result("c1"),
        user("never mind"),
    ]
    prepared = prepare_request_messages(messages, CLAUDE, now=99)
    assert [m["role"] for m in prepared] == ["user", "assistant", "toolResult", "toolResult", "user"]
    assert prepared[3] == {
        "role": "toolResult",
        "toolCallId": "c2",
        "toolName": "write",
        "content": [{"type": "text", "text": "No result provided"}],
        "isError": True,
        "timestamp": 99,
    }


def test_missing_results_are_synthesized_before_the_next_assistant_even_a_failed_one() -> None:
    messages = [
        user("q"),
        assistant(call("c1"), stop="toolUse"),
        assistant({"type": "text", "text": "oops"}, stop="error"),
        user("again"),
    ]
    prepared = prepare_request_messages(messages, CLAUDE, now=1)
    assert [m["role"] for m in prepared] == ["user", "assistant", "toolResult", "user"]
    assert prepared[2]["toolCallId"] == "c1"


def test_trailing_tool_calls_get_results_at_the_end() -> None:
    messages = [user("q"), assistant(call("c1"), call("c2"), stop="toolUse"), result("c2")]
    prepared = prepare_request_messages(messages, CLAUDE, now=5)
    assert [(m["role"], m.get("toolCallId")) for m in prepared] == [
        ("user", None), ("assistant", None), ("toolResult", "c2"), ("toolResult", "c1")]
    assert prepared[3]["content"] == [{"type": "text", "text": "No result provided"}]


def test_system_message_between_a_call_and_its_results_moves_after_them() -> None:
    note = {"role": "system", "content": "", "sections": {"x": "y"}, "timestamp": 4}
    messages = [user("q"), assistant(call("c1"), stop="toolUse"), note, result("c1"), user("next")]
    prepared = prepare_request_messages(messages, CLAUDE)
    assert [m["role"] for m in prepared] == ["user", "assistant", "toolResult", "system", "user"]


def test_missing_content_becomes_an_empty_list() -> None:
    [prepared] = prepare_request_messages([{"role": "user", "content": None, "timestamp": 1}], CLAUDE)
    assert prepared["content"] == []


def test_tool_calls_of_a_dropped_assistant_need_no_results() -> None:
    messages = [user("q"), assistant(call("c1"), stop="aborted"), user("retry")]
    assert [m["role"] for m in prepare_request_messages(messages, CLAUDE)] == ["user", "user"]


def test_other_models_thinking_is_dropped_and_signatures_go() -> None:
    foreign = assistant(
        {"type": "thinking", "thinking": "let me see", "thinkingSignature": "sig"},
        {"type": "thinking", "thinking": "  "},
        {"type": "thinking", "thinking": "[redacted]", "thinkingSignature": "opaque", "redacted": True},
        {"type": "text", "text": "answer", "textSignature": "ts"},
        {**call("c1"), "thoughtSignature": "g"},
        provider="openai", model="gpt-test", api="openai-completions", stop="toolUse",
    )
    [prepared, _] = prepare_request_messages([foreign, result("c1")], CLAUDE)
    assert prepared["content"] == [{"type": "text", "text": "answer"}, call("c1")]
    assert foreign["content"][0]["type"] == "thinking"  # the session's message is not modified


def test_same_model_messages_are_passed_unchanged() -> None:
    own = assistant({"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"},
                    {"type": "thinking", "thinking": "", "thinkingSignature": "encrypted"},
                    {"type": "text", "text": "hi", "textSignature": "t"})
    assert prepare_request_messages([user("q"), own], CLAUDE)[1] is own


def test_same_model_empty_unsigned_thinking_is_dropped() -> None:
    own = assistant({"type": "thinking", "thinking": "  "}, {"type": "text", "text": "hi"})
    [_, prepared] = prepare_request_messages([user("q"), own], CLAUDE)
    assert prepared["content"] == [{"type": "text", "text": "hi"}]


# --- build_request: system messages -------------------------------------------------------------

def test_system_messages_replay_into_prompt_and_tools() -> None:
    read_tool = {"name": "read", "description": "Read a file", "parameters": {"type": "object"}}
    bash_tool = {"name": "bash", "description": "Run", "parameters": {"type": "object"}}
    context = {
        "system_prompt": None,
        "messages": [
            {"role": "system", "content": "", "sections": {"base": "You are pi.", "cwd": "cwd: /repo"},
             "toolsAdded": [read_tool, bash_tool], "timestamp": 0},
            user("q"),
            {"role": "system", "content": "", "sections": {"cwd": "cwd: /other", "base": None},
             "toolsRemoved": [{"name": "read"}], "timestamp": 4},
        ],
    }
    request = build_request(CLAUDE, context)
    assert request.system_prompt == "cwd: /other"
    assert request.tools == [bash_tool]
    assert [m["role"] for m in request.messages] == ["user"]


def test_given_tools_come_first_and_system_messages_patch_them() -> None:
    tool = {"name": "only", "description": "", "parameters": {}}
    context = {"system_prompt": "base", "tools": [{"name": "ignored"}],
               "messages": [{"role": "system", "content": "extra", "toolsAdded": [{"name": "x"}], "timestamp": 0}]}
    request = build_request(CLAUDE, context, tools=[tool])
    assert request.system_prompt == "base\n\nextra"
    assert request.tools == [tool, {"name": "x"}]


def test_odd_system_fields_are_skipped_as_the_session_replay_skips_them() -> None:
    """A hand-edited system message (sections not an object, tool lists holding strings) is
    replayed as the context pane replays it: the odd parts count for nothing (pi-ai reads
    ``"x".name`` as undefined), not an AttributeError for the whole request."""
    tool = {"name": "bash", "description": "", "parameters": {}}
    context = {"system_prompt": "base", "messages": [
        {"role": "system", "content": "a", "sections": ["not", "an", "object"], "toolsAdded": [tool, "x"],
         "timestamp": 0},
        user("q"),
        {"role": "system", "content": "b", "toolsRemoved": ["bash", 7], "timestamp": 1},
    ]}
    request = build_request(CLAUDE, context)
    assert request.system_prompt == "base\n\na\n\nb"
    assert request.tools == [tool]
    assert [m["role"] for m in request.messages] == ["user"]


def test_output_budget_leaves_room_for_the_input() -> None:
    model = Model("p", "m", "anthropic-messages", context_window=200000, max_tokens=64000)
    small = build_request(model, {"system_prompt": None, "messages": [user("hi")]})
    assert small.output_budget(model, None) == 64000  # the model's own limit
    assert small.output_budget(model, 500) == 500
    # 140000 characters / 3.5 = 40000 estimated tokens; margin max(4096, 15%) = 6000.
    big = build_request(model, {"system_prompt": None, "messages": [user("x" * 140000)]})
    assert big.estimated_input_tokens == 40000
    assert big.output_budget(model, None) == 64000
    huge = build_request(model, {"system_prompt": None, "messages": [user("x" * 630000)]})  # 180000 tokens
    assert huge.output_budget(model, None) == 200000 - 180000 - 4096


def test_grouped_tool_results_keeps_order_and_gathers_each_run() -> None:
    from pi_lab.llm.request import grouped_tool_results

    def result(call_id: str) -> dict:
        return {"role": "toolResult", "toolCallId": call_id, "content": [], "timestamp": 0}

    a, b, c = result("a"), result("b"), result("c")
    q, answer = user("q"), {"role": "assistant", "content": [], "timestamp": 0}
    assert list(grouped_tool_results([q, answer, a, b, answer, c])) == [q, answer, [a, b], answer, [c]]
    assert list(grouped_tool_results([a])) == [[a]]
    assert list(grouped_tool_results([])) == []


def test_odd_values_print_as_javascript_prints_them_in_a_template() -> None:
    """bashExecution and summary texts print fields as pi's template literals do (String()):
    an array joined with commas, an object as [object Object], 1e21 in exponent form."""
    from pi_lab.llm.convert import bash_execution_to_text

    text = bash_execution_to_text({"role": "bashExecution", "command": ["ls", "-la"], "output": "x",
                                   "exitCode": 1e21, "cancelled": False, "timestamp": 0})
    assert text == "Ran `ls,-la`\n```\nx\n```\n\nCommand exited with code 1e+21"
    [message] = convert_to_llm([{"role": "branchSummary", "summary": {"k": 1}, "fromId": "f", "timestamp": 0}])
    assert message["content"][0]["text"].endswith("<summary>\n[object Object]</summary>")
