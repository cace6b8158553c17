"""Conversation serialisation and file-operation lists (compaction.md §7, §8; catalogue §5 item 19)."""

from __future__ import annotations

from cbuild import asst, call, result, user

import pi_lab.compaction as compaction
from pi_lab.compaction import (
    FileOperations,
    compute_file_lists,
    convert_to_llm,
    extract_file_ops_from_message,
    format_file_operations,
    serialize_conversation,
)


def tool_text(text: str) -> dict:
    return result("c", "read", text)


# --- tool-result truncation (compaction-serialization.test.ts) ------------------------------------


def test_long_tool_result_is_truncated():
    content = "".join(chr(ord("a") + i % 26) for i in range(5000))
    text = serialize_conversation([tool_text(content)])
    assert text.startswith("[Tool result]: ")
    assert "[... 3000 more characters truncated]" in text
    assert content[:2000] in text
    assert content[:3000] not in text
    assert text == "[Tool result]: " + content[:2000] + "\n\n[... 3000 more characters truncated]"


def test_short_tool_result_is_verbatim():
    content = "y" * 1500
    assert serialize_conversation([tool_text(content)]) == "[Tool result]: " + content


def test_exactly_2000_units_is_not_truncated():
    assert serialize_conversation([tool_text("z" * 2000)]) == "[Tool result]: " + "z" * 2000


def test_truncation_never_splits_a_surrogate_pair():
    content = "a" * 1999 + "😀" + "b"  # 2002 UTF-16 units; unit 2000 would split the emoji
    text = serialize_conversation([tool_text(content)])
    assert text == "[Tool result]: " + "a" * 1999 + "\n\n[... 2 more characters truncated]"


def test_truncation_counts_utf16_units():
    content = "😀" * 1500  # 3000 units
    text = serialize_conversation([tool_text(content)])
    assert text == "[Tool result]: " + "😀" * 1000 + "\n\n[... 1000 more characters truncated]"


def test_user_and_assistant_text_never_truncated():
    long = "q" * 5000
    text = serialize_conversation([user(long), asst(long)])
    assert text == f"[User]: {long}\n\n[Assistant]: {long}"


# --- roles and shapes ------------------------------------------------------------------------------


def test_user_blocks_join_without_separator_and_ignore_images():
    message = user([{"type": "text", "text": "one"}, {"type": "image", "data": "x", "mimeType": "image/png"},
                    {"type": "text", "text": "two"}])
    assert serialize_conversation([message]) == "[User]: onetwo"


def test_empty_user_and_tool_result_are_skipped():
    assert serialize_conversation([user(""), tool_text(""), user([])]) == ""


def test_assistant_thinking_is_left_out():
    message = asst("answer", thinking="private reasoning")
    assert serialize_conversation([message]) == "[Assistant]: answer"
    assert "[Assistant thinking]" not in serialize_conversation([asst(None, thinking="only thinking")])


def test_assistant_text_blocks_join_with_newline_and_tool_calls_follow():
    message = asst(None)
    message["content"] = [
        {"type": "text", "text": "first"},
        {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "a.py", "offset": 10}},
        {"type": "text", "text": "second"},
        {"type": "toolCall", "id": "2", "name": "bash", "arguments": {"command": "ls \"x\"", "opts": {"n": 1.0}}},
    ]
    assert serialize_conversation([message]) == (
        '[Assistant]: first\nsecond\n\n'
        '[Assistant tool calls]: read(path="a.py", offset=10); bash(command="ls \\"x\\"", opts={"n":1})'
    )


def test_empty_text_block_still_makes_an_assistant_part():
    message = asst("", calls=[call("1", "read", path="é.txt")])
    assert serialize_conversation([message]) == '[Assistant]: \n\n[Assistant tool calls]: read(path="é.txt")'


def test_tool_call_arguments_in_javascript_key_order():
    message = asst(None, calls=[{"id": "1", "name": "f", "arguments": {"b": 1, "10": "x", "a": 2, "2": "y"}}])
    assert serialize_conversation([message]) == '[Assistant tool calls]: f(2="y", 10="x", b=1, a=2)'


def test_system_and_unknown_roles_are_omitted():
    messages = [{"role": "system", "content": "sys", "timestamp": 1}, user("hi"), {"role": "other", "content": "?"}]
    assert serialize_conversation(messages) == "[User]: hi"


def test_parts_are_separated_by_blank_lines():
    text = serialize_conversation([user("q"), asst("a"), tool_text("r")])
    assert text == "[User]: q\n\n[Assistant]: a\n\n[Tool result]: r"


# --- convert_to_llm is the model layer's, re-exported ------------------------------------------------


def test_convert_to_llm_reexport_and_summary_strings():
    from pi_lab.llm.convert import convert_to_llm as llm_convert

    assert compaction.convert_to_llm is llm_convert
    assert compaction.COMPACTION_PREFIX == (
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
    )
    assert compaction.COMPACTION_SUFFIX == "\n</summary>"
    assert compaction.BRANCH_PREFIX == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
    )
    assert compaction.BRANCH_SUFFIX == "</summary>"


def test_summaries_serialise_as_wrapped_user_text():
    messages = [
        {"role": "compactionSummary", "summary": "S", "tokensBefore": 1, "timestamp": 1},
        {"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 1},
        {"role": "bashExecution", "command": "ls", "output": "", "cancelled": False, "truncated": False, "timestamp": 1},
        {"role": "bashExecution", "command": "rm", "output": "", "cancelled": False, "truncated": False, "timestamp": 1,
         "excludeFromContext": True},
    ]
    assert serialize_conversation(convert_to_llm(messages)) == (
        "[User]: " + compaction.COMPACTION_PREFIX + "S" + compaction.COMPACTION_SUFFIX + "\n\n"
        "[User]: " + compaction.BRANCH_PREFIX + "B" + compaction.BRANCH_SUFFIX + "\n\n"
        "[User]: Ran `ls`\n(no output)"
    )


# --- file operations ---------------------------------------------------------------------------------


def test_file_ops_from_tool_calls():
    ops = FileOperations()
    message = asst(None, calls=[
        call("1", "read", path="b.py"),
        call("2", "read", path="a.py"),
        call("3", "write", path="new.py", content="x"),
        call("4", "edit", path="a.py", oldText="x", newText="y"),
        call("5", "bash", command="cat c.py", path="ignored-for-bash.py"),
        call("6", "read", path=""),
        call("7", "read", file="no-path-key.py"),
        {"id": "8", "name": "read", "arguments": {"path": 42}},
    ])
    extract_file_ops_from_message(message, ops)
    assert list(ops.read) == ["b.py", "a.py"]  # insertion order
    assert ops.read == {"a.py", "b.py"}
    assert list(ops.written) == ["new.py"]
    assert list(ops.edited) == ["a.py"]


def test_file_ops_from_nested_calls_of_a_tool_result():
    ops = FileOperations()
    tool = result("c", "subagent", "done", nestedCalls={"calls": [
        {"id": "n1", "name": "read", "arguments": {"path": "x.md"}, "status": "ok"},
        {"id": "n2", "name": "edit", "arguments": {"path": "y.md"}, "status": "error"},
        {"id": "n3", "name": "write", "argumentsBytes": 10, "status": "unfinished"},
    ], "complete": True})
    extract_file_ops_from_message(tool, ops)
    extract_file_ops_from_message(user("read path=z"), ops)
    assert (list(ops.read), list(ops.edited), list(ops.written)) == (["x.md"], ["y.md"], [])


def test_compute_file_lists_sorts_and_separates():
    ops = FileOperations()
    ops.read.update(["z.py", "b.py", "a.py", "Z.py"])
    ops.written.add("b.py")
    ops.edited.update(["c.py", "a.py"])
    assert compute_file_lists(ops) == (["Z.py", "z.py"], ["a.py", "b.py", "c.py"])


def test_compute_file_lists_accepts_plain_sets_and_mappings():
    class Ops:
        read = {"r.md", "both.py"}
        written = {"both.py"}
        edited = set()

    assert compute_file_lists(Ops()) == (["r.md"], ["both.py"])
    assert compute_file_lists({"read": ["x"], "written": [], "edited": ["y"]}) == (["x"], ["y"])


def test_compute_file_lists_uses_utf16_order():
    ops = FileOperations()
    ops.read.update(["\uff5e.txt", "😀.txt", "a.txt"])  # U+FF5E sorts after a surrogate pair in UTF-16
    assert compute_file_lists(ops)[0] == ["a.txt", "😀.txt", "\uff5e.txt"]


def test_format_file_operations():
    assert format_file_operations([], []) == ""
    assert format_file_operations(["a", "b"], []) == "\n\n<read-files>\na\nb\n</read-files>"
    assert format_file_operations([], ["m"]) == "\n\n<modified-files>\nm\n</modified-files>"
    assert format_file_operations(["r"], ["m"]) == (
        "\n\n<read-files>\nr\n</read-files>\n\n<modified-files>\nm\n</modified-files>"
    )
