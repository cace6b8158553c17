"""Codex CLI rollouts behind the session protocol, by Codex's own rules."""

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
from pi_lab.formats.codex import CodexReadOnly, CodexSession, line_id, open_codex
from pi_lab.session.protocol import ReadableSession

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "codex"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from generate_claude_sessions import HOSTILE  # noqa: E402
from generate_codex_sessions import generate_session  # noqa: E402


def _line(kind: str, payload: dict[str, Any], second: int) -> dict[str, Any]:
    return {"timestamp": f"2026-02-01T10:{second // 60:02d}:{second % 60:02d}.000Z", "type": kind, "payload": payload}


def _meta(sid: str = "0199aaaa-0000-7000-8000-000000000001", **extra: Any) -> dict[str, Any]:
    return {"id": sid, "timestamp": "2026-02-01T10:00:00.000Z", "cwd": "/repo", "originator": "codex_cli_rs",
            "cli_version": "0.63.0", "instructions": None, "source": "cli", "model_provider": "openai",
            "git": {"branch": "main"}, **extra}


def _msg(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _count(inp: int, cached: int, out: int, total_in: int, total_cached: int, total_out: int,
           window: int = 272000) -> dict[str, Any]:
    def usage(i: int, c: int, o: int) -> dict[str, int]:
        return {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": 0,
                "total_tokens": i + o}
    return {"type": "token_count", "info": {"total_token_usage": usage(total_in, total_cached, total_out),
                                            "last_token_usage": usage(inp, cached, out),
                                            "model_context_window": window}, "rate_limits": None}


def _write(path: Path, lines: list[Any], tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join((x if isinstance(x, bytes) else json.dumps(x, separators=(",", ":")).encode()) + b"\n"
                              for x in lines) + tail)
    return path


def _fingerprint(path: Path) -> tuple[str, int, int]:
    st = os.stat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns


def _rollout(tmp_path: Path) -> Path:
    """A small rollout: one turn of two model calls, a repeated count, then a compaction."""
    lines = [
        _line("session_meta", _meta(), 0),                                                          # 1
        _line("turn_context", {"cwd": "/repo", "model": "gpt-5-codex", "approval_policy": "never",
                               "sandbox_policy": {"type": "read-only"}, "summary": "auto"}, 1),     # 2
        _line("response_item", _msg("developer", "<permissions>read-only</permissions>"), 2),         # 3
        _line("response_item", _msg("user", "<environment_context>\n<cwd>/repo</cwd>\n</environment_context>"), 3),  # 4
        _line("response_item", _msg("user", "list the files"), 4),                                  # 5
        _line("event_msg", {"type": "user_message", "message": "list the files"}, 4),               # 6
        _line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Listing**"}],
                                 "content": None, "encrypted_content": "gAAAAsecret"}, 5),          # 7
        _line("event_msg", {"type": "agent_reasoning", "text": "**Listing**"}, 5),                  # 8
        _line("response_item", {"type": "function_call", "name": "shell", "call_id": "call_1",
                                 "arguments": "{\"command\":[\"ls\"]}"}, 6),                        # 9
        _line("event_msg", _count(1000, 800, 50, 1000, 800, 50), 7),                               # 10
        _line("response_item", {"type": "function_call_output", "call_id": "call_1", "output": "a.py\nb.py"}, 8),  # 11
        _line("response_item", {"type": "reasoning", "summary": [], "content": None,
                                 "encrypted_content": "gAAAAopaque"}, 9),                           # 12
        _line("response_item", _msg("assistant", "Two files."), 10),                                # 13
        _line("event_msg", _count(1100, 1000, 20, 2100, 1800, 70), 11),                            # 14
        _line("event_msg", _count(1100, 1000, 20, 2100, 1800, 70), 12),                            # 15 repeat
        _line("compacted", {"message": "SUMMARY", "replacement_history": [
            _msg("user", "list the files"), _msg("user", "SUMMARY")]}, 13),                          # 16
        _line("response_item", _msg("user", "now count them"), 14),                                 # 17
        _line("response_item", _msg("assistant", "2"), 15),                                         # 18
        _line("event_msg", _count(300, 0, 5, 2400, 1800, 75, window=200000), 16),                  # 19
    ]
    return _write(tmp_path / "sessions" / "2026" / "02" / "01" / "rollout-2026-02-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl", lines)


def test_open_session_reads_a_rollout_by_the_protocol(tmp_path):
    path = _rollout(tmp_path)
    sm = pi_lab.open_session(path)
    assert isinstance(sm, CodexSession) and isinstance(sm, ReadableSession)
    assert sm.agent == "codex" and sm.read_only
    assert sm.session_id == "0199aaaa-0000-7000-8000-000000000001" and sm.cwd == "/repo"
    branch = sm.get_branch()
    assert all("id" in e for e in branch)
    assert sm.leaf_id == branch[-1]["id"] == line_id(19)
    assert [e["parentId"] for e in branch[1:]] == [e["id"] for e in branch[:-1]]  # one path, no tree
    assert len(sm.get_tree()) == 1
    header = sm.get_header()
    assert header["codex"]["originator"] == "codex_cli_rs" and header["codex"]["git"] == {"branch": "main"}
    assert sm.context_window == 200000 and header["codex"]["modelContextWindow"] == 200000


def test_one_model_call_is_one_assistant_message_with_its_usage(tmp_path):
    sm = pi_lab.open_session(_rollout(tmp_path))
    first = sm.get_entry(line_id(7))
    message = first["message"]
    assert [b["type"] for b in message["content"]] == ["thinking", "toolCall"]
    assert message["content"][0]["thinking"] == "**Listing**"
    assert message["content"][1] == {"type": "toolCall", "id": "call_1", "name": "shell",
                                     "arguments": {"command": ["ls"]}}
    assert message["stopReason"] == "toolUse" and message["model"] == "gpt-5-codex"
    assert message["provider"] == "openai"
    # input_tokens include the cached ones; pi's input does not.
    usage = message["usage"]
    assert (usage["input"], usage["cacheRead"], usage["output"], usage["totalTokens"]) == (200, 800, 50, 1050)
    assert first["codex"]["lines"] == [7, 9] and first["codex"]["tokenCountLine"] == 10
    second = sm.get_entry(line_id(12))["message"]
    assert second["content"][0] == {"type": "thinking", "thinking": "", "redacted": True}  # encrypted only
    assert second["content"][1] == {"type": "text", "text": "Two files."}
    assert (second["usage"]["input"], second["usage"]["cacheRead"], second["usage"]["output"]) == (100, 1000, 20)
    result = sm.get_entry(line_id(11))["message"]
    assert result["role"] == "toolResult" and result["toolName"] == "shell" and result["toolCallId"] == "call_1"
    assert sm.model_calls == 3  # the repeated count (line 15) is no call
    repeat = sm.get_entry(line_id(15))
    assert repeat["type"] == "custom" and repeat["codex"]["repeat"] is True


def test_what_the_model_saw_before_and_after_the_compaction(tmp_path):
    sm = pi_lab.open_session(_rollout(tmp_path))
    before = sm.build_session_context(line_id(12)).messages
    assert [m["role"] for m in before] == ["custom", "user", "user", "assistant", "toolResult", "assistant"]
    assert before[0]["customType"] == "codex:developer"
    assert sm.get_entry(line_id(4))["codex"]["injected"] == "environment_context"
    after = sm.build_session_context(sm.leaf_id).messages
    assert [m["role"] for m in after] == ["compactionSummary", "user", "user", "user", "assistant"]
    # The summary is not said twice: the compaction's own summary is empty, the replacement
    # history (which holds it) follows as entries copied by the compaction.
    assert after[0]["summary"] == ""
    texts = [m["content"][0]["text"] for m in after[1:]]
    assert texts == ["list the files", "SUMMARY", "now count them", "2"]
    copied = sm.get_entry(f"{line_id(16)}.r0002")
    assert copied["codex"]["fromCompaction"] == 16
    compaction = sm.get_entry(line_id(16))
    assert compaction["details"]["message"] == "SUMMARY" and compaction["details"]["replacementItems"] == 2


def test_a_compaction_says_its_token_count_is_not_recorded(tmp_path):
    """A rollout records no count before a compaction: the views say so, never "0k tokens"."""
    from pi_lab.session.display import display_text
    from pi_lab.view.payload import SessionView, gauge_payload

    sm = pi_lab.open_session(_rollout(tmp_path))
    compaction = sm.get_entry(line_id(16))
    assert compaction["tokensBefore"] is None
    assert display_text(compaction) == "[compaction: tokens not recorded]"
    view = SessionView.open(sm)
    assert [c["tokens_before"] for c in gauge_payload(sm, view.settings)["compactions"]] == [None]


def test_the_timeline_uses_the_window_the_rollout_records(tmp_path):
    """Every call's window is the one Codex wrote (model_context_window), not the catalog's
    figure for the model: the gauge, the timeline and its overflow check agree."""
    from pi_lab.view import context_timeline
    from pi_lab.view.gauge import recorded_context_window
    from pi_lab.view.payload import SessionView
    from pi_lab.view.timeline_requests import timeline_payload

    sm = pi_lab.open_session(_rollout(tmp_path))
    calls = [row for row in context_timeline(sm) if row["kind"] == "call"]
    assert calls and {row["window"] for row in calls} == {200000}
    assert recorded_context_window(sm) == 200000  # what the viewers set their gauge to
    columns = timeline_payload(SessionView.open(sm))
    assert set(columns["calls"]["window"]) == {200000}


def test_a_compaction_without_replacement_history_is_its_summary(tmp_path):
    path = _write(tmp_path / "r.jsonl", [_line("session_meta", _meta(), 0), _line("response_item", _msg("user", "hi"), 1),
                                         _line("compacted", {"message": "old summary"}, 2)])
    messages = pi_lab.open_session(path).build_session_context().messages
    assert [(m["role"], m.get("summary")) for m in messages] == [("compactionSummary", "old summary")]


def test_events_and_unknown_lines_are_shown_never_in_the_context(tmp_path):
    path = _write(tmp_path / "r.jsonl", [
        _line("session_meta", _meta(), 0), _line("event_msg", {"type": "task_started"}, 1),
        _line("mystery", {"x": 1}, 2), _line("response_item", {"type": "ghost_snapshot", "ghost_commit": {}}, 3),
        _line("response_item", _msg("user", "hi"), 4)])
    sm = pi_lab.open_session(path)
    kinds = [(e["type"], e.get("customType")) for e in sm.get_branch()]
    assert kinds == [("custom", "codex:event_msg/task_started"), ("custom", "codex:mystery"),
                     ("custom", "codex:response_item/ghost_snapshot"), ("message", None)]
    assert [m["role"] for m in sm.build_session_context().messages] == ["user"]


def test_a_model_change_comes_from_turn_context_and_the_provider_from_session_meta(tmp_path):
    tc = {"cwd": "/r", "approval_policy": "never", "sandbox_policy": {"type": "read-only"}, "summary": "auto"}
    path = _write(tmp_path / "r.jsonl", [
        _line("session_meta", _meta(model_provider="oss"), 0), _line("turn_context", {**tc, "model": "m1"}, 1),
        _line("turn_context", {**tc, "model": "m1"}, 2), _line("turn_context", {**tc, "model": "m2"}, 3),
        _line("response_item", _msg("assistant", "x"), 4)])
    sm = pi_lab.open_session(path)
    kinds = [e["type"] for e in sm.get_branch()]
    assert kinds == ["model_change", "custom", "model_change", "message"]
    assert sm.get_entry(line_id(4))["provider"] == "oss" and sm.get_entry(line_id(4))["modelId"] == "m2"
    assert sm.build_session_context().model == {"provider": "oss", "modelId": "m2"}


def test_broken_and_half_written_lines_are_skipped_and_counted(tmp_path):
    path = _write(tmp_path / "r.jsonl", [_line("session_meta", _meta(), 0), b"{not json", b"[1,2]",
                                         _line("response_item", _msg("user", "hi"), 1)],
                  tail=b'{"timestamp":"2026-02-01T10:00:09.000Z","type":"response_item","payload":{"ty')
    sm = pi_lab.open_session(path)
    assert sm.skipped_lines == [2, 3, 5]
    assert [e["id"] for e in sm.get_branch()] == [line_id(4)]


def test_reading_never_changes_the_file_and_writes_are_refused(tmp_path):
    path = _rollout(tmp_path)
    before = _fingerprint(path)
    sm = pi_lab.open_session(path)
    sm.get_branch(), sm.get_tree(), sm.build_session_context(line_id(9)), sm.refresh()
    sm.branch(line_id(5))
    assert sm.leaf_id == line_id(5)
    with pytest.raises(CodexReadOnly) as raised:
        sm.append_message({"role": "user", "content": "x", "timestamp": 0})
    assert isinstance(raised.value, ReadOnlySession) and "never written" in str(raised.value)
    for attempt in (sm.make_writable, lambda: sm.create_branched_session(line_id(5)),
                    lambda: sm.new_session(), lambda: pi_lab.open_session(path, read_only=False)):
        with pytest.raises(CodexReadOnly):
            attempt()
    assert _fingerprint(path) == before


def test_refresh_follows_lines_codex_appends(tmp_path):
    path = _rollout(tmp_path)
    sm = pi_lab.open_session(path)
    with open(path, "ab") as handle:
        handle.write(json.dumps(_line("response_item", _msg("user", "more"), 30), separators=(",", ":")).encode() + b"\n")
    new = sm.refresh()
    assert [e["id"] for e in new] == [line_id(20)] and sm.leaf_id == line_id(20)


def test_refresh_keeps_a_leaf_moved_back_and_takes_what_the_new_lines_say(tmp_path):
    path = _rollout(tmp_path)
    moved, following = pi_lab.open_session(path), pi_lab.open_session(path)
    moved.branch(line_id(5))
    calls = moved.model_calls
    with open(path, "ab") as handle:
        handle.write(b"{half a line\n")
        for line in (_line("response_item", _msg("user", "and now?"), 30), _line("response_item", _msg("assistant", "3"), 31),
                     _line("event_msg", _count(400, 0, 7, 2800, 1800, 82, window=128000), 32)):
            handle.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
    for sm in (moved, following):
        assert [e["id"] for e in sm.refresh()] == [line_id(21), line_id(22), line_id(23)]
        assert sm.skipped_lines == [20] and sm.model_calls == calls + 1 and sm.context_window == 128000
        assert sm.refresh() == []  # nothing new since: the file is not read again
    assert moved.leaf_id == line_id(5) and following.leaf_id == line_id(23)
    assert repr(moved).startswith("<CodexSession 0199aaaa-0000-7000-8000-000000000001 ")


def test_open_codex_takes_the_options_of_pis_reader_and_refuses_others(tmp_path):
    path = _rollout(tmp_path)
    assert open_codex(path, lazy=True, read_only=True, cwd_override="/x").session_id.startswith("0199aaaa")
    with pytest.raises(TypeError, match=r"^open_codex\(\) got unexpected options: parent, writable$"):
        open_codex(path, writable=True, parent=None)
    with pytest.raises(CodexReadOnly, match="cannot open it for writing: Codex rollouts are never written by pi_lab"):
        open_codex(path, read_only=False)


def _fork_lines(parent: Path, parent_id: str, *, same_second: bool = True) -> list[Any]:
    """A fork as Codex writes it: its header, then the parent's lines re-stamped, then its own."""
    own = _meta("0199bbbb-0000-7000-8000-000000000002", forked_from_id=parent_id)
    copied = [json.loads(x) for x in parent.read_bytes().splitlines()]
    stamp = "2026-02-01T11:00:00.000Z"
    lines = [{**_line("session_meta", own, 0), "timestamp": stamp}]
    lines += [{**x, "timestamp": stamp if same_second else x["timestamp"]} for x in copied]
    lines += [_line("response_item", _msg("user", "forked question"), 3700),
              _line("response_item", _msg("assistant", "forked answer"), 3701),
              _line("event_msg", _count(500, 0, 9, 2900, 1800, 84), 3702)]
    return lines


def test_a_fork_names_its_parent_and_marks_the_copied_prefix(tmp_path):
    parent = _rollout(tmp_path)
    parent_id = "0199aaaa-0000-7000-8000-000000000001"
    fork = _write(parent.parent / "rollout-2026-02-01T11-00-00-0199bbbb-0000-7000-8000-000000000002.jsonl",
                  _fork_lines(parent, parent_id))
    sm = pi_lab.open_session(fork)
    assert sm.parent_session_id == parent_id and sm.parent_kind == "fork"
    assert sm.parent_file == str(parent) and sm.get_header()["parentSession"] == str(parent)
    copied = [e for e in sm.get_branch() if e["codex"].get("copied")]
    own = [e for e in sm.get_branch() if not e["codex"].get("copied")]
    assert [e["id"] for e in own] == [line_id(21), line_id(22), line_id(23)]
    assert len(copied) == len(sm.copied_entry_ids) == len(pi_lab.open_session(parent).get_branch()) + 1
    # Each copy names its parent line (the fork's line n+1 is the parent's line n).
    assert all(e["codex"]["parentLine"] == e["codex"].get("fromCompaction", e["codex"]["line"]) - 1 for e in copied)
    assert sm.get_entry(line_id(2))["customType"] == "codex:session_meta"  # the parent's copied header
    # The fork's model saw the parent's history (after its compaction) and then its own turn.
    texts = [m["content"][0]["text"] for m in sm.build_session_context().messages[1:]]
    assert texts[-2:] == ["forked question", "forked answer"]


def test_without_the_parent_file_the_copy_is_the_replay_stamped_at_once(tmp_path):
    parent = _rollout(tmp_path / "a")
    fork = _write(tmp_path / "b" / "fork.jsonl", _fork_lines(parent, "0199aaaa-0000-7000-8000-000000000001"))
    sm = pi_lab.open_session(fork)
    assert sm.parent_file is None and "parentSession" not in sm.get_header()
    assert sm.copied_entry_ids and not any("parentLine" in sm.get_entry(i)["codex"] for i in sm.copied_entry_ids)
    assert [e["id"] for e in sm.get_branch() if not e["codex"].get("copied")] == [line_id(21), line_id(22), line_id(23)]


def test_a_sub_agent_names_its_parent_thread(tmp_path):
    source = {"subagent": {"thread_spawn": {"parent_thread_id": "0199cccc-0000-7000-8000-000000000003", "depth": 1}}}
    path = _write(tmp_path / "r.jsonl", [_line("session_meta", _meta(source=source), 0),
                                         _line("response_item", _msg("user", "sub task"), 1)])
    sm = pi_lab.open_session(path)
    assert (sm.parent_session_id, sm.parent_kind) == ("0199cccc-0000-7000-8000-000000000003", "subagent")
    assert sm.copied_entry_ids == []


def test_hostile_text_in_every_field_is_kept_as_written(tmp_path):
    paths = generate_session(tmp_path, seed=3, hostile=True, fork=True, torn=True)
    raw = b"".join(p.read_bytes() for p in paths)
    before = [_fingerprint(p) for p in paths]
    for path in paths:
        sm = pi_lab.open_session(path)
        assert sm.agent == "codex" and sm.get_branch()
        text = json.dumps([e.get("message") or e.get("data") or e.get("content") for e in sm.get_branch()],
                          ensure_ascii=False)
        assert any(h in text for h in HOSTILE)
        sm.build_session_context()
    assert sum(h.encode() in raw for h in HOSTILE) >= 3
    assert pi_lab.open_session(paths[0]).skipped_lines  # the half-written last line
    assert [_fingerprint(p) for p in paths] == before


def test_the_generator_is_deterministic(tmp_path):
    a = generate_session(tmp_path / "a", seed=5, fork=True)
    b = generate_session(tmp_path / "b", seed=5, fork=True)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_public_fixtures(tmp_path):
    files = sorted(FIXTURES.glob("**/*.jsonl")) if FIXTURES.is_dir() else []
    if not files:
        pytest.skip("no public Codex fixtures in tests/fixtures/codex")
    for fixture in files:
        copy = tmp_path / fixture.name
        shutil.copy(fixture, copy)
        sm = pi_lab.open_session(copy)
        assert sm.agent == "codex" and sm.leaf_id == sm.get_branch()[-1]["id"]
        sm.build_session_context()


def _fixture_home(tmp_path: Path, *names: str) -> list[Path]:
    if not FIXTURES.is_dir():
        pytest.skip("no public Codex fixtures in tests/fixtures/codex")
    out = []
    for name in names:
        source = FIXTURES / name
        if not source.is_file():
            pytest.skip(f"public fixture {name} missing")
        target = tmp_path / "sessions" / "2026" / "08" / "01" / name.split("-", 1)[1]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        out.append(target)
    return out


def test_public_fixture_sub_agent_and_its_spawning_call(tmp_path):
    parent, child = _fixture_home(tmp_path, "inspect_scout-rollout-2026-08-01T10-03-00-0199aaaa-0000-7000-8000-000000000004.jsonl",
                                  "inspect_scout-rollout-2026-08-01T10-03-30-0199aaaa-0000-7000-8000-000000000104.jsonl")
    sm = pi_lab.open_session(child)
    assert (sm.parent_session_id, sm.parent_kind) == ("0199aaaa-0000-7000-8000-000000000004", "subagent")
    assert sm.parent_file == str(parent) and sm.copied_entry_ids == []  # the sub-agent copied nothing
    assert sm.get_header()["codex"]["agent_nickname"] == "zippy"
    call = pi_lab.open_session(parent).get_entry(line_id(4))["message"]
    assert call["content"][0]["name"] == "spawn_agent" and call["usage"]["totalTokens"] == 500


def test_public_fixture_paginated_fork_names_its_parent_and_copies_nothing(tmp_path):
    (fork,) = _fixture_home(tmp_path, "inspect_scout-rollout-2026-08-01T10-07-30-0199aaaa-0000-7000-8000-000000000108.jsonl")
    sm = pi_lab.open_session(fork)
    assert sm.parent_session_id == "0199aaaa-0000-7000-8000-000000000008" and sm.parent_kind == "fork"
    assert sm.get_header()["codex"]["history_base"]["end_ordinal_exclusive"] == 4
    assert sm.copied_entry_ids == [] and [m["role"] for m in sm.build_session_context().messages] == ["user", "assistant"]


def test_public_fixture_simple_turn(tmp_path):
    (path,) = _fixture_home(tmp_path, "inspect_scout-rollout-2026-08-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl")
    sm = pi_lab.open_session(path)
    answer = sm.get_entry(line_id(6))["message"]
    assert [b["type"] for b in answer["content"]] == ["thinking", "text"] and answer["usage"]["totalTokens"] == 120
    assert sm.context_window == 272000 and sm.leaf_id == line_id(10)
