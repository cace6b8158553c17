"""The typed decode of Claude Code and Codex lines (``pi_lab.formats.claude_code_usage_fast``,
``codex_usage_fast``: msgspec Structs naming only the fields the adapters' rules read) against the
dict way it stands in for and against the adapters: for each line a typed decode could get wrong
(a kept field of another type, huge ints, lone surrogates, invalid UTF-8, raw control characters,
missing fields, nulls, nesting, duplicate keys, a BOM, non-object lines), the same calls, keys and
header facts all three ways. Also: the adapters' rules the readers restate are the adapters'."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_corpus_usage_fast_agents import assert_same_file

from pi_lab.formats import agent_usage_lines, claude_code_usage_fast, codex_usage_fast
from pi_lab.formats.claude_code_usage_fast import claude_code_usage
from pi_lab.formats.codex_usage_fast import codex_usage

typed_only = pytest.mark.skipif(claude_code_usage_fast._DECODE is None, reason="msgspec is not installed")
T = "2026-03-01T09:00:{:02d}.000Z"


def _claude_lines() -> list[dict[str, Any]]:
    """A session: a user turn, a response streamed over two lines with a progress line between
    them, a tool result, a second response, a snapshot, a summary line."""
    def reply(uuid, parent, second, message_id, request, counts, model="claude-x"):
        usage = dict(zip(("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"),
                         counts))
        return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "s-1", "cwd": "/p",
                "requestId": request, "timestamp": T.format(second),
                "message": {"id": message_id, "type": "message", "role": "assistant", "model": model,
                            "content": [{"type": "text", "text": "working"}], "usage": usage}}
    return [
        {"type": "summary", "summary": "an earlier title", "leafUuid": "x-0"},
        {"type": "user", "uuid": "u-1", "parentUuid": None, "sessionId": "s-1", "cwd": "/p", "timestamp": T.format(1),
         "message": {"role": "user", "content": "fix it"}},
        reply("a-1", "u-1", 2, "m-1", "r-1", (5, 7, 11, 13)),
        {"type": "progress", "uuid": "p-1", "parentUuid": "a-1", "sessionId": "s-1", "timestamp": T.format(3),
         "data": {"type": "bash_progress", "output": "running"}},
        reply("a-2", "p-1", 4, "m-1", "r-1", (5, 9, 11, 13)),
        {"type": "user", "uuid": "u-2", "parentUuid": "a-2", "sessionId": "s-1", "timestamp": T.format(5),
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t-1", "content": "1 passed"}]}},
        reply("a-3", "u-2", 6, "m-2", "r-2", (3, 4, 100, 0), model="claude-y"),
        {"type": "file-history-snapshot", "messageId": "a-3", "snapshot": {"timestamp": T.format(7), "files": {}}},
        {"type": "user", "uuid": "u-3", "parentUuid": "a-3", "sessionId": "s-1", "timestamp": T.format(8),
         "message": {"role": "user", "content": "thanks"}},
    ]


def _codex_lines() -> list[dict[str, Any]]:
    """A rollout: header, turn context, a call of reasoning and a tool call priced by a count,
    its output, an answer priced by a second count (then a repeat), a compaction, an event."""
    def count(total, last):
        names = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")
        return {"type": "token_count", "info": {"total_token_usage": dict(zip(names, total)),
                                                "last_token_usage": dict(zip(names, last))}}
    def line(second, kind, payload):
        return {"timestamp": T.format(second), "type": kind, "payload": payload}
    return [
        line(0, "session_meta", {"id": "c-1", "timestamp": T.format(0), "cwd": "/p", "model_provider": "openai",
                                 "instructions": "be terse"}),
        line(1, "turn_context", {"cwd": "/p", "model": "gpt-5-codex", "effort": "medium"}),
        line(2, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        line(3, "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}),
        line(4, "response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        line(5, "event_msg", count((100, 40, 10, 3, 110), (100, 40, 10, 3, 110))),
        line(6, "response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        line(7, "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
        line(8, "event_msg", count((250, 90, 30, 5, 280), (150, 50, 20, 2, 170))),
        line(9, "event_msg", count((250, 90, 30, 5, 280), (150, 50, 20, 2, 170))),
        line(10, "compacted", {"message": "summary", "replacement_history": [
            {"type": "message", "role": "user", "content": []}, {"type": "message", "role": "assistant", "content": []}]}),
        line(11, "event_msg", {"type": "agent_message", "message": "done"}),
        line(12, "turn_context", {"cwd": "/p", "model": "gpt-5"}),
        line(13, "response_item", {"type": "local_shell_call", "status": "completed"}),
        line(14, "event_msg", count((400, 100, 40, 5, 440), (150, 10, 10, 0, 0))),
    ]


def _dump(lines: list[Any]) -> bytes:
    return b"".join((x if isinstance(x, bytes) else json.dumps(x, separators=(",", ":")).encode()) + b"\n"
                    for x in lines)


def _at(value: Any, path: tuple) -> tuple[Any, Any]:
    for key in path[:-1]:
        value = value[key]
    return value, path[-1]


def _set(path: tuple, new: Any):
    def change(lines):
        parent, key = _at(lines, path)
        parent[key] = new
    return change


def _drop(path: tuple):
    def change(lines):
        parent, key = _at(lines, path)
        del parent[key]
    return change


def _raw(index: int, old: bytes, new: bytes):
    """Replace bytes in one line's JSON text (what json.dumps cannot write: raw control
    characters, invalid UTF-8, lone surrogate escapes, duplicate keys, nesting)."""
    def change(lines):
        text = json.dumps(lines[index], separators=(",", ":")).encode()
        assert old in text, (old, text)
        lines[index] = text.replace(old, new, 1)
    return change


def _replace_line(index: int, new: bytes):
    def change(lines):
        lines[index] = new
    return change


DEEP = b"[" * 2000 + b"]" * 2000
ODD_INTS = [5.0, True, "5", 2**63, 2**64 + 1, -(2**63) - 1, 10**30, -3, None, [], {}]

CLAUDE_CASES: dict[str, Any] = {
    **{f"counter {v!r}": _set((4, "message", "usage", "input_tokens"), v) for v in ODD_INTS},
    **{f"first counter {v!r}": _set((2, "message", "usage", "cache_read_input_tokens"), v) for v in ODD_INTS},
    "usage missing": _drop((4, "message", "usage")),
    "usage null": _set((2, "message", "usage"), None),
    "usage a list": _set((2, "message", "usage"), [1, 2]),
    "message id int": _set((4, "message", "id"), 7),
    "message id null": _set((4, "message", "id"), None),
    "request id int": _set((4, "requestId"), 5),
    "request id missing": _drop((4, "requestId")),
    "model a list": _set((2, "message", "model"), ["x"]),
    "model missing": _drop((6, "message", "model")),
    "uuid int": _set((4, "uuid"), 12),
    "uuid null": _set((5, "uuid"), None),
    "parent int": _set((4, "parentUuid"), 3),
    "parent missing": _drop((4, "parentUuid")),
    "progress parent null": _set((3, "parentUuid"), None),
    "progress parent missing": _drop((3, "parentUuid")),
    "progress parent int": _set((3, "parentUuid"), 9),
    "timestamp int": _set((4, "timestamp"), 5),
    "timestamp null": _set((4, "timestamp"), None),
    "timestamp missing": _drop((4, "timestamp")),
    "first timestamp empty": _set((1, "timestamp"), ""),
    "first timestamp a list": _set((1, "timestamp"), ["x"]),
    "snapshot a string": _set((7, "snapshot"), "x"),
    "snapshot time int": _set((7, "snapshot", "timestamp"), 5),
    "message a string": _set((4, "message"), "text"),
    "message null": _set((5, "message"), None),
    "type int": _set((5, "type"), 9),
    "type null": _set((2, "type"), None),
    "session id int": _set((1, "sessionId"), 5),
    "session id empty": _set((1, "sessionId"), ""),
    "cwd null": _set((1, "cwd"), None),
    "compact flag a string": _set((5, "isCompactSummary"), "yes"),
    "compact flag true": _set((5, "isCompactSummary"), True),
    "subtype int": _set((8, "subtype"), 1),
    "boundary": _set((8, "subtype"), "compact_boundary"),
    "lone high surrogate in content": _raw(4, b'"working"', b'"work\\ud800ing"'),
    "lone low surrogate in content": _raw(2, b'"working"', b'"\\udc00"'),
    "reversed pair in content": _raw(2, b'"working"', b'"\\udc00\\ud800"'),
    "lone surrogate in a key": _raw(2, b'"text":"working"', b'"te\\ud800xt":"working"'),
    "lone surrogate in the uuid": _raw(4, b'"a-2"', b'"a-\\ud8002"'),
    "raw tab in content": _raw(6, b'"working"', b'"work\ting"'),
    "raw NUL in content": _raw(4, b'"working"', b'"work\x00ing"'),
    "invalid UTF-8 in content": _raw(6, b'"working"', b'"work\xffing"'),
    "encoded surrogate in content": _raw(4, b'"working"', b'"work\xed\xa0\x80ing"'),
    "invalid UTF-8 in the model": _raw(2, b'"claude-x"', b'"claude-\xff"'),
    "invalid UTF-8 in a user line": _raw(5, b'"1 passed"', b'"1 \xff"'),
    "non-ASCII content": _raw(2, b'"working"', "\"w\u00f6rk \u4e2d \U0001f600\"".encode()),
    "non-ASCII uuid": _raw(4, b'"a-2"', '"a-\u00e9"'.encode()),
    "number past the float range in content": _raw(2, b'"working"', b"1e400"),
    "huge int in content": _raw(2, b'"working"', b"1" + b"0" * 400),
    "nested 2,000 deep in content": _raw(2, b'"working"', DEEP),
    "usage written twice": _raw(4, b'"usage":{', b'"usage":{"input_tokens":999},"usage":{'),
    "uuid written twice": _raw(4, b'"uuid":"a-2"', b'"uuid":"zz","uuid":"a-2"'),
    "type written twice": _raw(2, b'"type":"assistant"', b'"type":"assistant","type":"user"'),
    "BOM": _raw(2, b'{"type"', b'\xef\xbb\xbf{"type"'),
    "trailing bytes": _raw(4, b"}}}", b"}}} x"),
    "torn line": _raw(4, b'"usage"', b'"usa'),
    "a list line": _replace_line(5, b"[1]"),
    "a number line": _replace_line(5, b"7"),
    "a string line": _replace_line(5, b'"x"'),
    "blank line": _replace_line(5, b""),
    "white space line": _replace_line(5, b"  \r"),
    "CR ending": _raw(4, b"}}}", b"}}}\r"),
    "white space around": _raw(4, b'{"type"', b'  {"type"'),
    "NaN in content": _raw(2, b'"working"', b"NaN"),
    "escaped letters in the type": _raw(2, b'"assistant"', b'"\\u0061ssistant"'),
}

CODEX_CASES: dict[str, Any] = {
    **{f"total counter {v!r}": _set((8, "payload", "info", "total_token_usage", "input_tokens"), v) for v in ODD_INTS},
    **{f"last counter {v!r}": _set((8, "payload", "info", "last_token_usage", "cached_input_tokens"), v) for v in ODD_INTS},
    "info null": _set((5, "payload", "info"), None),
    "info empty": _set((5, "payload", "info"), {}),
    "info a string": _set((5, "payload", "info"), "x"),
    "info missing": _drop((8, "payload", "info")),
    "total missing": _drop((8, "payload", "info", "total_token_usage")),
    "total a list": _set((8, "payload", "info", "total_token_usage"), [1]),
    "last missing": _drop((8, "payload", "info", "last_token_usage")),
    "last null": _set((5, "payload", "info", "last_token_usage"), None),
    "repeat differs by a negative": _set((9, "payload", "info", "total_token_usage", "output_tokens"), -30),
    "item type int": _set((3, "payload", "type"), 5),
    "item type null": _set((4, "payload", "type"), None),
    "item type unknown call": _set((4, "payload", "type"), "mystery_call"),
    "role null": _set((7, "payload", "role"), None),
    "role int": _set((7, "payload", "role"), 1),
    "model int": _set((1, "payload", "model"), 7),
    "model missing": _drop((12, "payload", "model")),
    "payload a string": _set((3, "payload"), "x"),
    "payload null": _set((5, "payload"), None),
    "line type int": _set((6, "type"), 9),
    "line type missing": _drop((11, "type")),
    "timestamp int": _set((3, "timestamp"), 5),
    "timestamp null": _set((0, "timestamp"), None),
    "header timestamp missing": _drop((0, "payload", "timestamp")),
    "header id int": _set((0, "payload", "id"), 5),
    "provider int": _set((0, "payload", "model_provider"), 5),
    "header payload a list": _set((0, "payload"), []),
    "history a string": _set((10, "payload", "replacement_history"), "x"),
    "history item a string": _set((10, "payload", "replacement_history", 0), "x"),
    "lone surrogate in content": _raw(2, b'"go"', b'"g\\ud800o"'),
    "lone surrogate in a count's key": _raw(5, b'"input_tokens"', b'"input_tok\\udc00ens"'),
    "raw tab in content": _raw(7, b'"done"', b'"do\tne"'),
    "invalid UTF-8 in content": _raw(7, b'"done"', b'"do\xffne"'),
    "invalid UTF-8 in the model": _raw(1, b'"gpt-5-codex"', b'"gpt-\xff"'),
    "non-ASCII content": _raw(7, b'"done"', "\"d\u00f6ne \U0001f600\"".encode()),
    "number past the float range in content": _raw(4, b'"{}"', b"1e400"),
    "nested 2,000 deep in content": _raw(2, b'"go"', DEEP),
    "info written twice": _raw(8, b'"info":{', b'"info":null,"info":{'),
    "type written twice": _raw(6, b'"type":"response_item"', b'"type":"event_msg","type":"response_item"'),
    "BOM": _raw(3, b'{"timestamp"', b'\xef\xbb\xbf{"timestamp"'),
    "torn line": _raw(8, b'"info"', b'"inf'),
    "a list line": _replace_line(6, b"[1]"),
    "blank line": _replace_line(6, b""),
    "NaN in content": _raw(2, b'"go"', b"NaN"),
}


def _write(path: Path, lines: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_dump(lines))


def _claude_facts(found: Any) -> Any:
    if found is None:
        return None
    return (found.session_id, found.cwd, found.timestamp, found.calls, sorted(found.keys, key=repr))


def _codex_facts(found: Any) -> Any:
    return (found.session_id, found.cwd, found.timestamp, found.parent_file, found.calls)


def _untyped(module: Any, read: Any, path: Path) -> Any:
    saved = module._DECODE
    module._DECODE = None
    try:
        return read(str(path))
    finally:
        module._DECODE = saved


@typed_only
@pytest.mark.parametrize("case", sorted(CLAUDE_CASES))
def test_claude_code_lines_typed_equal_the_dict_way_and_the_adapter(tmp_path, case):
    lines = copy.deepcopy(_claude_lines())
    CLAUDE_CASES[case](lines)
    path = tmp_path / "claude" / "projects" / "p" / "s-1.jsonl"
    _write(path, lines)
    typed = claude_code_usage(str(path))
    assert _claude_facts(typed) == _claude_facts(_untyped(claude_code_usage_fast, claude_code_usage, path))
    assert_same_file(path, "claude-code")


@typed_only
@pytest.mark.parametrize("case", sorted(CODEX_CASES))
def test_codex_lines_typed_equal_the_dict_way_and_the_adapter(tmp_path, case):
    lines = copy.deepcopy(_codex_lines())
    CODEX_CASES[case](lines)
    path = tmp_path / "codex" / "sessions" / "2026" / "03" / "01" / "rollout-2026-03-01T09-00-00-c-1.jsonl"
    _write(path, lines)
    typed = codex_usage(str(path))
    assert _codex_facts(typed) == _codex_facts(_untyped(codex_usage_fast, codex_usage, path))
    assert_same_file(path, "codex")


@typed_only
def test_plain_lines_are_answered_by_the_typed_decode(tmp_path, monkeypatch):
    """Every line of the plain files is decoded typed (none goes the dict way, which here
    would fail), and every field the rules read comes through it (the calls are the adapter's)."""
    claude = tmp_path / "claude" / "projects" / "p" / "s-1.jsonl"
    codex = tmp_path / "codex" / "sessions" / "rollout-2026-03-01T09-00-00-c-1.jsonl"
    _write(claude, _claude_lines())
    # (the header and the compaction are read whole: they are left out here)
    _write(codex, [x for x in _codex_lines() if x["type"] not in ("session_meta", "compacted")])
    for path, agent in ((claude, "claude-code"), (codex, "codex")):
        assert_same_file(path, agent)

    def refuse(raw):
        raise AssertionError(f"the dict way for {raw[:60]!r}")
    monkeypatch.setattr(claude_code_usage_fast, "dict_line", refuse)
    monkeypatch.setattr(codex_usage_fast, "dict_line", refuse)
    found = claude_code_usage(str(claude))
    assert found is not None
    assert [(c.entry_id, c.model, c.usage["input"], c.usage["output"], c.usage["cacheRead"], c.usage["cacheWrite"])
            for c in found.calls] == [("a-2", "claude-x", 5, 9, 11, 13), ("a-3", "claude-y", 3, 4, 100, 0)]
    rollout = codex_usage(str(codex))
    assert [(c.entry_id, c.model, c.usage["input"], c.usage["cacheRead"], c.usage["output"]) for c in rollout.calls] \
        == [("L000003", "gpt-5-codex", 60, 40, 10), ("L000007", "gpt-5-codex", 100, 50, 20),
            ("L000012", "gpt-5", 140, 10, 10)]


def test_field_fuzz_of_the_typed_lines(tmp_path):
    """Random fields of the sessions above set to odd values (all three ways equal)."""
    rng = random.Random(28)
    odd = [*ODD_INTS, "", "x", "\ud800", 1.5, -1, 0, 2**53 + 1, [[[]]], {"a": None}]
    for lines, agent, where in ((_claude_lines(), "claude-code", tmp_path / "claude" / "projects" / "p" / "s-1.jsonl"),
                                (_codex_lines(), "codex", tmp_path / "codex" / "sessions" / "rollout-c-1.jsonl")):
        paths = []
        def walk(value, path):
            if isinstance(value, dict):
                for k, v in value.items():
                    paths.append((*path, k))
                    walk(v, (*path, k))
        for index, line in enumerate(lines):
            walk(line, (index,))
        for _ in range(60):
            changed = copy.deepcopy(lines)
            path = rng.choice(paths)
            parent, key = _at(changed, path)
            parent[key] = rng.choice(odd)
            where.parent.mkdir(parents=True, exist_ok=True)
            where.write_bytes(b"".join(json.dumps(x, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"
                                       for x in changed))
            try:
                assert_same_file(where, agent)
                if agent == "claude-code":
                    assert _claude_facts(claude_code_usage(str(where))) == \
                        _claude_facts(_untyped(claude_code_usage_fast, claude_code_usage, where))
                else:
                    assert _codex_facts(codex_usage(str(where))) == \
                        _codex_facts(_untyped(codex_usage_fast, codex_usage, where))
            except AssertionError as error:
                raise AssertionError(f"{agent} {path} = {parent[key]!r}") from error


def test_the_restated_rules_are_the_adapters():
    from pi_lab.formats import claude_code_lines, codex

    assert codex_usage_fast.ASSISTANT_SIDE == codex._ASSISTANT_SIDE
    assert codex_usage_fast.OUTPUTS == codex._OUTPUTS
    for number in (1, 7, 999_999, 1_000_000, 12_345_678):
        assert codex_usage_fast.line_id(number) == codex.line_id(number)
    rng = random.Random(5)
    values = [0, 1, 7, -1, 2**70, 1.0, True, None, "3", [], {}]
    names = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens",
             "cache_read_input_tokens", "cache_creation_input_tokens")
    for _ in range(300):
        raw = {k: rng.choice(values) for k in names if rng.random() < 0.8}
        assert codex_usage_fast.token_usage(raw) == codex.token_usage(raw)
        counts = codex.token_usage(raw)
        assert codex_usage_fast.pi_usage(counts) == codex.pi_usage(counts)
        assert claude_code_usage_fast.pi_usage(claude_code_usage_fast._UsageFields(raw)) == claude_code_lines.pi_usage(raw)
    assert codex_usage_fast.token_usage([1]) is None and codex_usage_fast.pi_usage(None) == codex.pi_usage(None)
    assert claude_code_usage_fast.pi_usage(None) == claude_code_lines.pi_usage(None)


def test_utf8_valid_and_read_file(tmp_path):
    valid = agent_usage_lines.utf8_valid
    big = b"x" * ((1 << 22) - 1) + "\u00e9".encode()  # (a character across the 4 MB step)
    assert valid(b"") and valid(b"plain") and valid(big) and valid("\U0001f600".encode())
    assert not valid(b"a\xffb") and not valid(big + b"\xff") and not valid(b"\xed\xa0\x80")
    assert not valid(big[:-1])  # (cut inside a character at the end)
    for size in (0, 10, (1 << 20) + 5):
        path = tmp_path / f"f{size}"
        path.write_bytes(bytes(range(256)) * (size // 256) + b"z" * (size % 256))
        assert agent_usage_lines.read_file(str(path)) == path.read_bytes()
