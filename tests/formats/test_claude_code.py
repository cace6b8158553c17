"""Claude Code session files behind the session protocol, by Claude Code's own rules."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import pi_lab
from pi_lab.errors import ReadOnlySession
from pi_lab.formats.claude_code import (
    CLEARED_TOOL_RESULT,
    SUBAGENT_START,
    ClaudeCodeReadOnly,
    ClaudeCodeSession,
    open_claude_code,
)
from pi_lab.session.protocol import ReadableSession

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude-code"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from generate_claude_sessions import generate_session  # noqa: E402


def _line(kind: str, uuid: str | None, parent: str | None, ts: str, **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"type": kind, "parentUuid": parent, "isSidechain": False, "sessionId": "s1",
                            "cwd": "/p", "version": "2.0.76", "timestamp": f"2026-01-01T00:{ts}.000Z"}
    if uuid is not None:
        line["uuid"] = uuid
    line.update(extra)
    return line


def _user(uuid: str, parent: str | None, ts: str, content: Any, **extra: Any) -> dict[str, Any]:
    return _line("user", uuid, parent, ts, message={"role": "user", "content": content}, **extra)


def _assistant(uuid: str, parent: str | None, ts: str, blocks: list[dict[str, Any]], *, mid: str, rid: str,
               output: int = 10, stop: str | None = "end_turn") -> dict[str, Any]:
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": output}
    return _line("assistant", uuid, parent, ts, requestId=rid, message={
        "id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": blocks, "stop_reason": stop, "usage": usage})


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _write(path: Path, lines: list[Any], tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join((json.dumps(x, separators=(",", ":")) if not isinstance(x, bytes) else x.decode()).encode()
                              + b"\n" for x in lines) + tail)
    return path


def _fingerprint(path: Path) -> tuple[str, int, int]:
    st = os.stat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns


def _roles(session: Any, at: str | None = None) -> list[str]:
    ctx = session.build_session_context() if at is None else session.build_session_context(at)
    return [m["role"] for m in ctx.messages]


# ------------------------------------------------------------------ the names the hidden check calls


def test_open_session_on_a_real_fixture_gives_the_protocol(tmp_path):
    path = tmp_path / "s.jsonl"
    shutil.copy(FIXTURES / "inspect_scout-tool_call_conversation.jsonl", path)
    uuids = [json.loads(x)["uuid"] for x in path.read_text().splitlines()]
    session = pi_lab.open_session(path)
    assert session.agent == "claude-code"
    assert isinstance(session, ReadableSession) and session.read_only
    assert session.leaf_id == uuids[-1]
    assert [e["id"] for e in session.get_branch()] == uuids
    roots = session.get_tree()
    assert len(roots) == 1 and roots[0].entry["id"] == uuids[0] and roots[0].children
    messages = session.build_session_context(uuids[2]).messages
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult"]
    assert messages[1]["content"][-1]["type"] == "toolCall"
    assert messages[2]["toolCallId"] == messages[1]["content"][-1]["id"]
    assert messages[2]["toolName"] == messages[1]["content"][-1]["name"]
    assert session.session_id == "test-session-003" or session.session_id


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.jsonl")))
def test_every_fixture_opens_and_projects_without_writing(tmp_path, name):
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    before = _fingerprint(path)
    session = pi_lab.open_session(path)
    assert session.agent == "claude-code"
    for entry in session.get_entries():
        session.build_session_context(entry["id"])
        assert session.get_branch(entry["id"])[-1]["id"] == entry["id"]
    session.get_tree()
    assert _fingerprint(path) == before


# ------------------------------------------------------------------ rules


def test_leaf_is_the_latest_user_or_assistant_line_by_timestamp_not_the_last_line(tmp_path):
    # The rewound branch (b1) is written last but is older; Claude Code resumes b2.
    lines = [
        _user("u1", None, "00:00", "start"),
        _assistant("a1", "u1", "00:01", [_text("ready")], mid="m1", rid="r1"),
        _user("b2", "a1", "00:10", "second attempt"),
        _assistant("b2a", "b2", "00:11", [_text("second answer")], mid="m3", rid="r3"),
        _user("b1", "a1", "00:05", "first attempt"),
        _assistant("b1a", "b1", "00:06", [_text("first answer")], mid="m2", rid="r2"),
        {"type": "file-history-snapshot", "messageId": "b1", "snapshot": {"messageId": "b1"}},
    ]
    session = pi_lab.open_session(_write(tmp_path / "s.jsonl", lines))
    assert session.leaf_id == "b2a"
    assert [e["id"] for e in session.get_branch()] == ["u1", "a1", "b2", "b2a"]
    a1 = next(n for n in _walk(session.get_tree()) if n.entry["id"] == "a1")
    assert {c.entry["id"] for c in a1.children} == {"b1", "b2"}


def _walk(roots):
    stack = list(roots)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def test_a_streamed_response_is_one_assistant_message_counted_once(tmp_path):
    lines = [
        _user("u1", None, "00:00", "do two things"),
        _assistant("x1", "u1", "00:01", [{"type": "thinking", "thinking": "hm", "signature": "s"}], mid="m1", rid="r1",
                   output=3, stop=None),
        _assistant("x2", "x1", "00:02", [_text("doing both")], mid="m1", rid="r1", output=3, stop=None),
        _assistant("x3", "x2", "00:03", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}],
                   mid="m1", rid="r1", output=3, stop=None),
        _assistant("x4", "x3", "00:04", [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}],
                   mid="m1", rid="r1", output=40, stop="tool_use"),
        _user("r1", "x4", "00:05", [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]),
        _user("r2", "r1", "00:06", [{"type": "tool_result", "tool_use_id": "t2", "content": "B", "is_error": True}]),
    ]
    session = pi_lab.open_session(_write(tmp_path / "s.jsonl", lines))
    entries = session.get_entries()
    assistants = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert len(assistants) == 1
    merged = assistants[0]
    assert merged["id"] == "x4" and merged["parentId"] == "u1"
    assert [b["type"] for b in merged["message"]["content"]] == ["thinking", "text", "toolCall", "toolCall"]
    assert merged["message"]["stopReason"] == "toolUse"
    assert merged["message"]["usage"]["output"] == 40  # once, the final count
    assert merged["message"]["usage"]["totalTokens"] == 5 + 100 + 1000
    for earlier in ("x1", "x2", "x3"):
        assert session.get_entry(earlier) is merged
        assert session.get_branch(earlier)[-1]["id"] == "x4"
    assert _roles(session) == ["user", "assistant", "toolResult", "toolResult"]
    results = session.build_session_context().messages[2:]
    assert [r["toolName"] for r in results] == ["Read", "Bash"] and results[1]["isError"] is True


def test_a_user_line_with_several_tool_results_becomes_a_chain_ending_at_its_uuid(tmp_path):
    lines = [
        _user("u1", None, "00:00", "go"),
        _assistant("a1", "u1", "00:01", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
                                         {"type": "tool_use", "id": "t2", "name": "Read", "input": {}}], mid="m1", rid="r1"),
        _user("r", "a1", "00:02", [{"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                                   {"type": "tool_result", "tool_use_id": "t2", "content": [_text("B")]},
                                   _text("and a remark")]),
        _assistant("a2", "r", "00:03", [_text("done")], mid="m2", rid="r2"),
    ]
    session = pi_lab.open_session(_write(tmp_path / "s.jsonl", lines))
    assert _roles(session) == ["user", "assistant", "toolResult", "toolResult", "user", "assistant"]
    assert session.get_entry("a2")["parentId"] == "r"


def _compacted_lines() -> list[dict[str, Any]]:
    return [
        _user("u1", None, "00:00", "start"),
        _assistant("a1", "u1", "00:01", [_text("old answer")], mid="m1", rid="r1"),
        _line("system", "cb", None, "00:02", subtype="compact_boundary", content="Conversation compacted",
              logicalParentUuid="a1", compactMetadata={"trigger": "auto", "preTokens": 150000}),
        _user("cs", "cb", "00:03", "Summary: the user started.", isCompactSummary=True),
        _user("u2", "cs", "00:04", "after"),
        _assistant("a2", "u2", "00:05", [_text("new answer")], mid="m2", rid="r2"),
    ]


def test_compaction_joins_the_tree_and_the_model_sees_the_summary_and_what_follows(tmp_path):
    session = pi_lab.open_session(_write(tmp_path / "s.jsonl", _compacted_lines()))
    roots = session.get_tree()
    assert [r.entry["id"] for r in roots] == ["u1"]  # one tree, through logicalParentUuid
    compaction = session.get_entry("cs")
    assert compaction["type"] == "compaction" and compaction["parentId"] == "a1"
    assert session.get_entry("cb") is compaction
    assert compaction["tokensBefore"] == 150000
    messages = session.build_session_context().messages
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant"]
    assert messages[0]["summary"] == "Summary: the user started."
    assert "old answer" not in json.dumps(messages)
    # Before the compaction, the old context is what the model saw.
    assert _roles(session, "a1") == ["user", "assistant"]


def test_two_compactions_project_from_the_latest(tmp_path):
    lines = _compacted_lines() + [
        _line("system", "cb2", None, "00:06", subtype="compact_boundary", logicalParentUuid="a2",
              compactMetadata={"trigger": "manual", "preTokens": 9}),
        _user("cs2", "cb2", "00:07", "Second summary.", isCompactSummary=True),
        _user("u3", "cs2", "00:08", "third"),
    ]
    session = pi_lab.open_session(_write(tmp_path / "s.jsonl", lines))
    messages = session.build_session_context().messages
    assert [m["role"] for m in messages] == ["compactionSummary", "user"]
    assert messages[0]["summary"] == "Second summary."


def test_microcompaction_shows_cleared_tool_results_as_cleared_after_it_only(tmp_path):
    lines = [
        _user("u1", None, "00:00", "go"),
        _assistant("a1", "u1", "00:01", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}], mid="m1", rid="r1"),
        _user("r1", "a1", "00:02", [{"type": "tool_result", "tool_use_id": "t1", "content": "BIG FILE BODY"}]),
        _assistant("a2", "r1", "00:03", [_text("read it")], mid="m2", rid="r2"),
        _line("system", "mc", "a2", "00:04", subtype="microcompact_boundary", content="Context microcompacted",
              microcompactMetadata={"trigger": "auto", "preTokens": 100, "tokensSaved": 50,
                                    "compactedToolIds": ["t1"], "clearedAttachmentUUIDs": []}),
        _user("u2", "mc", "00:05", "next"),
    ]
    session = pi_lab.open_session(_write(tmp_path / "s.jsonl", lines))
    before = session.build_session_context("a2").messages
    assert before[2]["content"] == [{"type": "text", "text": "BIG FILE BODY"}]
    after = session.build_session_context().messages
    assert [m["role"] for m in after] == ["user", "assistant", "toolResult", "assistant", "user"]
    assert after[2]["content"] == [{"type": "text", "text": CLEARED_TOOL_RESULT}]
    boundary = session.get_entry("mc")
    assert boundary["type"] == "custom" and boundary["customType"] == "claude-code:system/microcompact_boundary"


def test_other_lines_are_kept_shown_and_never_in_context(tmp_path):
    lines = [
        {"type": "summary", "summary": "Old title", "leafUuid": "nowhere"},
        _user("u1", None, "00:00", "hi"),
        _line("progress", "p1", "u1", "00:01", data={"type": "hook_progress"}),
        _line("system", "s1", "p1", "00:02", subtype="turn_duration", durationMs=5),
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"messageId": "u1"}},
        {"type": "custom-title", "customTitle": "My <b>title</b>", "sessionId": "s1"},
        {"type": "mode", "mode": "plan"},
        _line("brand-new-type", "n1", "s1", "00:03", payload=[1, 2]),
        _assistant("a1", "n1", "00:04", [_text("hello")], mid="m1", rid="r1"),
    ]
    session = pi_lab.open_session(_write(tmp_path / "s.jsonl", lines))
    customs = {e["customType"] for e in session.get_entries() if e["type"] == "custom"}
    assert customs == {"claude-code:summary", "claude-code:progress", "claude-code:system/turn_duration",
                       "claude-code:file-history-snapshot", "claude-code:custom-title", "claude-code:mode",
                       "claude-code:brand-new-type"}
    assert _roles(session) == ["user", "assistant"]
    assert [e["id"] for e in session.get_branch()] == ["u1", "p1", "s1", "n1", "a1"]
    assert session.get_session_name() == "My <b>title</b>"
    snapshot = next(e for e in session.get_entries() if e.get("customType") == "claude-code:file-history-snapshot")
    assert snapshot["parentId"] == "u1"


def test_broken_and_half_written_lines_are_skipped_and_counted(tmp_path):
    lines = [_user("u1", None, "00:00", "hi"), b"{broken", b"[1, 2]",
             _assistant("a1", "u1", "00:01", [_text("ok")], mid="m1", rid="r1")]
    path = _write(tmp_path / "s.jsonl", lines, tail=b'{"type":"user","uuid":"half')
    session = pi_lab.open_session(path)
    assert session.skipped_lines == [2, 3, 5]
    assert session.leaf_id == "a1" and _roles(session) == ["user", "assistant"]


def test_every_write_is_refused_and_the_file_stays_byte_identical(tmp_path):
    path = _write(tmp_path / "s.jsonl", _compacted_lines())
    before = _fingerprint(path)
    session = pi_lab.open_session(path)
    attempts = [
        lambda: session.append_message({"role": "user", "content": "x", "timestamp": 0}),
        lambda: session.append_compaction("s", "u1", 1),
        lambda: session.append_label_change("u1", "x"),
        lambda: session.append_session_info("x"),
        lambda: session.branch_with_summary("u1", "x"),
        lambda: session.make_writable(),
        lambda: session.create_branched_session("a2"),
    ]
    for attempt in attempts:
        with pytest.raises(ReadOnlySession, match="Claude Code files are never written"):
            attempt()
    assert issubclass(ClaudeCodeReadOnly, ReadOnlySession)
    session.branch("u1")  # navigating moves the leaf in memory only
    assert session.leaf_id == "u1"
    session.get_tree(), session.get_branch(), session.build_session_projection(), session.refresh()
    assert _fingerprint(path) == before
    with pytest.raises(ReadOnlySession):
        pi_lab.open_session(path, read_only=False)


# ------------------------------------------------------------------ sub-agents


def _project_with_subagent_file(tmp_path: Path) -> Path:
    # The inspect_scout pair laid out as Claude Code writes it: the main file, and the agent's
    # file in <session id>/subagents/ (linked by toolUseResult.agentId).
    project = tmp_path / "projects" / "-Users-test-project"
    main = project / "test-session-004.jsonl"
    sub = project / "test-session-004" / "subagents" / "agent-atest01.jsonl"
    sub.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "inspect_scout-agent_session.jsonl", main)
    shutil.copy(FIXTURES / "inspect_scout-agent-atest01.jsonl", sub)
    return main


def test_a_subagent_file_is_a_folded_subtree_under_its_task_call_with_its_own_context(tmp_path):
    main = _project_with_subagent_file(tmp_path)
    session = pi_lab.open_session(main)
    assert [os.path.basename(f) for f in session.subagent_files] == ["agent-atest01.jsonl"]
    start = next(e for e in session.get_entries() if e["type"] == "compaction")
    assert start["details"]["claudeCode"] == SUBAGENT_START
    assert start["parentId"] == "agent-002"  # the assistant entry with the Task call
    # Parents precede children in the entry list (the engine's one-pass index needs that shape).
    order = [e["id"] for e in session.get_entries()]
    assert order.index(start["id"]) == order.index("sidechain-001") - 1
    from pi_lab.session.index import index_and_tree
    assert index_and_tree(session.file_entries) is not None
    assert session.leaf_id == "agent-004"  # the main conversation, not the sub-agent
    assert [r.entry["id"] for r in session.get_tree()] == ["agent-001"]
    messages = session.build_session_context("sidechain-004").messages
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant", "toolResult", "assistant"]
    assert messages[0]["summary"] == ""  # a fresh context: nothing of the main conversation
    assert "Explore the codebase structure" not in json.dumps(messages)
    assert _roles(session) == ["user", "assistant", "toolResult", "assistant"]


def test_sidechain_lines_in_the_main_file_hang_under_their_task_call(tmp_path):
    lines = [
        _user("u1", None, "00:00", "explore"),
        _assistant("a1", "u1", "00:01", [{"type": "tool_use", "id": "tk", "name": "Task",
                                          "input": {"prompt": "look around", "description": "d"}}], mid="m1", rid="r1"),
        {**_user("s1", None, "00:02", "look around"), "isSidechain": True},
        {**_assistant("s2", "s1", "00:03", [_text("found it")], mid="m9", rid="r9"), "isSidechain": True},
        _user("r1", "a1", "00:04", [{"type": "tool_result", "tool_use_id": "tk", "content": "found it"}]),
        _assistant("a2", "r1", "00:05", [_text("done")], mid="m2", rid="r2"),
    ]
    session = pi_lab.open_session(_write(tmp_path / "s.jsonl", lines))
    assert session.leaf_id == "a2"
    assert [r.entry["id"] for r in session.get_tree()] == ["u1"]
    assert session.get_entry(session.get_entry("s1")["parentId"])["parentId"] == "a1"
    assert _roles(session, "s2") == ["compactionSummary", "user", "assistant"]


# ------------------------------------------------------------------ generated sessions


def test_generated_session_has_every_case_and_reads_by_the_rules(tmp_path):
    path = generate_session(tmp_path / "p", seed=7, turns=6)
    before = _fingerprint(path)
    session = pi_lab.open_session(path)
    entries = session.get_entries()
    compactions = [e for e in entries if e["type"] == "compaction"]
    kinds = sorted(e["details"]["claudeCode"] for e in compactions)
    assert kinds == ["compact_boundary", "compact_boundary", SUBAGENT_START, SUBAGENT_START]
    assert any(e["type"] == "context_edit" for e in entries)
    assert len(session.skipped_lines) == 2  # a broken line and the half-written last one
    assert session.get_session_name() == "Generated session 7"
    assert any(e.get("customType") == "claude-code:future-line-type" for e in entries)
    # The leaf is the resumed main branch, not the rewind written before it.
    messages = session.build_session_context().messages
    assert messages[0]["role"] == "compactionSummary" and messages[-1]["content"][0]["text"] == "All checks pass."
    assert len(session.get_tree()) == 2  # the legacy summary line, the conversation
    for start in (e for e in compactions if e["details"]["claudeCode"] == SUBAGENT_START):
        holder = session.get_entry(start["parentId"])
        assert any(b.get("name") == "Task" for b in holder["message"]["content"])
        below = [e for e in entries if e.get("parentId") == start["id"]]
        assert below and _roles(session, below[0]["id"]) == ["compactionSummary", "user"]
    assert _fingerprint(path) == before


def test_the_generator_is_deterministic(tmp_path):
    a = generate_session(tmp_path / "a", seed=11, hostile=True)
    b = generate_session(tmp_path / "b", seed=11, hostile=True)
    assert a.read_bytes() == b.read_bytes()
    assert sorted(p.name for p in (a.parent).rglob("*")) == sorted(p.name for p in (b.parent).rglob("*"))


def test_hostile_text_stays_text_in_entries_and_the_export(tmp_path):
    from pi_lab.export.html import render_html

    path = generate_session(tmp_path / "p", seed=5, hostile=True)
    session = pi_lab.open_session(path)
    html = render_html(session)
    assert "<script>alert(1)</script>" not in html and "onerror=alert(2)>" not in html
    texts = json.dumps([m for m in session.build_session_context().messages], ensure_ascii=False)
    assert "<script>alert(1)</script>" in texts or "\u202eevil\u202c" in texts or "<img src=x" in texts


def test_the_views_read_a_claude_code_session_unchanged(tmp_path):
    from pi_lab.view.context import context_at
    from pi_lab.view.gauge import gauge, recorded_context_window
    from pi_lab.view.payload import SessionView, context_payload, structure_payload

    path = generate_session(tmp_path / "p", seed=2)
    session = pi_lab.open_session(path)
    assert isinstance(session, ClaudeCodeSession)
    assert recorded_context_window(session) == 200_000
    g = gauge(session.get_branch(), context_window=200_000)
    leaf = session.get_entry(session.leaf_id)["message"]["usage"]
    assert g["measured"] == leaf["input"] + leaf["cacheRead"] + leaf["cacheWrite"]
    assert len(g["compactions"]) == 2
    assert context_at(session.get_branch())["messages"]
    view = SessionView.open(session)
    assert structure_payload(view)
    assert context_payload(view, session.leaf_id)


def test_a_block_of_unknown_type_nested_thousands_deep_is_kept_as_text(tmp_path):
    # Found by the field fuzzer: an unknown block was written out with orjson, which stops at
    # 255 levels with a TypeError ("Recursion limit reached"); and a line past orjson's 1,024
    # levels was skipped although JSON.parse (Claude Code's reader) takes it.
    deep = "[" * 3000 + '"x"' + "]" * 3000
    text = (b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00.000Z",'
            b'"message":{"role":"user","content":[{"type":"document","data":' + deep.encode() + b'}]}}\n')
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"summary","summary":"t","leafUuid":"x"}\n' + text)  # detection reads line 1
    session = pi_lab.open_session(path)
    assert session.skipped_lines == []
    block = session.build_session_context().messages[0]["content"][0]
    assert block["type"] == "text" and block["text"].startswith('{"type":"document","data":[[[')


def test_an_agent_file_beside_the_session_is_read_when_the_session_names_it(tmp_path):
    # The older layout (<project>/agent-<id>.jsonl), as inspect_scout's own fixtures lie.
    shutil.copy(FIXTURES / "inspect_scout-agent_session.jsonl", tmp_path / "test-session-004.jsonl")
    shutil.copy(FIXTURES / "inspect_scout-agent-atest01.jsonl", tmp_path / "agent-atest01.jsonl")
    shutil.copy(FIXTURES / "inspect_scout-agent-atest01.jsonl", tmp_path / "agent-unrelated.jsonl")
    session = pi_lab.open_session(tmp_path / "test-session-004.jsonl")
    assert [os.path.basename(f) for f in session.subagent_files] == ["agent-atest01.jsonl"]
    start = session.get_entry(session.get_entry("sidechain-001")["parentId"])
    assert start["details"]["claudeCode"] == SUBAGENT_START and start["parentId"] == "agent-002"
    assert session.leaf_id == "agent-004"


def test_a_subagent_file_opened_by_itself_has_its_last_message_as_leaf(tmp_path):
    path = tmp_path / "agent-atest01.jsonl"
    shutil.copy(FIXTURES / "inspect_scout-agent-atest01.jsonl", path)
    with open(path, "ab") as handle:  # a last line that is no message
        handle.write(json.dumps(_line("system", "t1", "sidechain-004", "59:00", subtype="turn_duration",
                                      isSidechain=True)).encode() + b"\n")
    session = pi_lab.open_session(path)
    assert session.leaf_id == "sidechain-004" and session.subagent_files == []
    assert _roles(session) == ["user", "assistant", "toolResult", "assistant"]


def test_a_tool_call_whose_name_is_an_object_is_no_task_call(tmp_path):
    # Found by the field fuzzer (seed 14877): a name that is an object reached a set lookup.
    lines = [
        _user("u1", None, "00:00", "explore"),
        _assistant("a1", "u1", "00:01", [{"type": "tool_use", "id": "tk", "name": {"x": 1},
                                          "input": {"prompt": "look around"}}], mid="m1", rid="r1"),
        {**_user("s1", None, "00:02", "look around"), "isSidechain": True},
    ]
    session = pi_lab.open_session(_write(tmp_path / "s.jsonl", lines))
    assert session.get_entry("s1")["parentId"] is None  # not linked to a call that is no Task
    assert session.leaf_id == "a1"


def test_refresh_reads_lines_claude_code_appended(tmp_path):
    lines = [_user("u1", None, "00:00", "hi"), _assistant("a1", "u1", "00:01", [_text("ok")], mid="m1", rid="r1")]
    path = _write(tmp_path / "s.jsonl", lines)
    session = pi_lab.open_session(path)
    assert session.refresh() == []
    with open(path, "ab") as handle:
        for line in (_assistant("a1b", "a1", "00:02", [_text(" more")], mid="m1", rid="r1"),
                     _user("u2", "a1b", "00:03", "next")):
            handle.write(json.dumps(line).encode() + b"\n")
    added = session.refresh()
    assert [e["id"] for e in added] == ["a1b", "u2"]  # the merged response now ends at a1b
    assert session.leaf_id == "u2" and _roles(session) == ["user", "assistant", "user"]


def test_refresh_follows_the_latest_line_unless_the_leaf_was_moved(tmp_path):
    lines = [_user("u1", None, "00:00", "hi"), _assistant("a1", "u1", "00:01", [_text("ok")], mid="m1", rid="r1")]
    path = _write(tmp_path / "s.jsonl", lines)
    following, moved = pi_lab.open_session(path), pi_lab.open_session(path)
    moved.branch("u1")
    with open(path, "ab") as handle:
        handle.write(json.dumps(_user("u2", "a1", "00:03", "next")).encode() + b"\n")
    following.refresh(), moved.refresh()
    assert following.leaf_id == "u2"
    assert moved.leaf_id == "u1"


def test_refresh_keeps_a_moved_leaf_on_the_response_its_line_joined(tmp_path):
    lines = [_user("u1", None, "00:00", "hi"), _assistant("a1", "u1", "00:01", [_text("ok")], mid="m1", rid="r1"),
             _user("u2", "a1", "00:02", "next")]
    path = _write(tmp_path / "s.jsonl", lines)
    moved = pi_lab.open_session(path)
    moved.branch("a1")
    with open(path, "ab") as handle:
        handle.write(b"not json\n")
        handle.write(json.dumps(_assistant("a1b", "a1", "00:03", [_text(" more")], mid="m1", rid="r1")).encode() + b"\n")
    assert [e["id"] for e in moved.refresh()] == ["a1b"]
    assert moved.leaf_id == "a1b" and moved.skipped_lines == [4] and moved.resolve_id("a1") == "a1b"
    assert repr(moved).startswith("<ClaudeCodeSession s1 ")


def test_open_claude_code_takes_the_options_of_pis_reader_and_refuses_others(tmp_path):
    path = _write(tmp_path / "s.jsonl", [_user("u1", None, "00:00", "hi")])
    assert open_claude_code(path, lazy=True, session_dir=None, clock=None).leaf_id == "u1"
    with pytest.raises(TypeError, match=r"^open_claude_code\(\) got unexpected options: subagent$"):
        open_claude_code(path, subagent=False)
    with pytest.raises(ClaudeCodeReadOnly, match="cannot open it for writing: Claude Code files are never written"):
        open_claude_code(path, read_only=False)
