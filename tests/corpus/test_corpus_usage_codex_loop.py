"""The Codex usage reader's typed loop (``pi_lab.formats.codex_usage_fast``: the lines decoded in
one pass, the common kinds handled inline, a rare or refused line handed to the dict way's
methods) and the report's cells of its calls (``pi_lab.corpus.usage_fast._codex_cells``),
against the dict way and the adapter.

Random rollouts mix every kind of line the rules tell apart with lines the typed decode refuses
in the middle of a call, compactions, repeated and empty counts, turn contexts and headers with
and without timestamps: the calls, the header facts and the report's cells must be the same
all three ways."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_corpus_usage_fast_agents import assert_same_file

from pi_lab.corpus import usage_fast
from pi_lab.corpus.fields import _float_usage
from pi_lab.formats import codex_usage_fast
from pi_lab.formats.codex_usage_fast import CodexCall, codex_usage

typed_only = pytest.mark.skipif(codex_usage_fast._DECODE is None, reason="msgspec is not installed")
NAMES = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def _stamp(second: int) -> str:
    return f"2026-03-01T09:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def _count(rng: random.Random, previous: list[dict[str, int]]) -> dict[str, Any]:
    """A token_count: usually a new total, sometimes the previous one again, no info or odd info."""
    roll = rng.random()
    if roll < 0.1:
        return {"type": "token_count", "info": None}
    if roll < 0.15:
        return {"type": "token_count"}
    if roll < 0.3 and previous:
        return {"type": "token_count", "info": {"total_token_usage": previous[-1], "last_token_usage": previous[-1]}}
    last = {k: rng.choice((0, 1, 7, 300, 12_000)) for k in NAMES if rng.random() < 0.9}
    total = {k: rng.randrange(10**6) for k in NAMES}
    previous.append(total)
    info: dict[str, Any] = {"total_token_usage": total, "last_token_usage": last}
    if rng.random() < 0.1:
        del info[rng.choice(("total_token_usage", "last_token_usage"))]
    return {"type": "token_count", "info": info}


ITEMS = [{"type": "reasoning", "summary": []}, {"type": "function_call", "name": "shell", "arguments": "{}"},
         {"type": "custom_tool_call", "input": "x"}, {"type": "local_shell_call", "status": "completed"},
         {"type": "web_search_call"}, {"type": "mystery_call"}, {"type": "message", "role": "assistant", "content": []},
         {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
         {"type": "message", "role": "developer", "content": []}, {"type": "function_call_output", "output": "ok"},
         {"type": "custom_tool_call_output", "output": "ok"}, {"type": "ghost_snapshot"}, {"type": None},
         {"type": "message"}]
EVENTS = [{"type": "agent_message", "message": "done"}, {"type": "exec_command_begin"}, {"type": "task_started"}]


def _rollout(rng: random.Random, header_stamps: bool) -> list[bytes]:
    """A random rollout's lines as bytes (some refused by the typed decode, some not JSON)."""
    meta: dict[str, Any] = {"id": "c-1", "cwd": "/p", "model_provider": rng.choice(("openai", "azure", 5))}
    head: dict[str, Any] = {"type": "session_meta", "payload": meta}
    if header_stamps:
        meta["timestamp"] = _stamp(0)
        head["timestamp"] = _stamp(0)
    lines: list[Any] = [head]
    previous: list[dict[str, int]] = []
    for second in range(1, rng.randrange(20, 80)):
        roll = rng.random()
        if roll < 0.45:
            line: Any = {"type": "response_item", "payload": dict(rng.choice(ITEMS))}
        elif roll < 0.65:
            line = {"type": "event_msg", "payload": _count(rng, previous)}
        elif roll < 0.75:
            line = {"type": "event_msg", "payload": dict(rng.choice(EVENTS))}
        elif roll < 0.8:
            line = {"type": "turn_context", "payload": {"model": rng.choice(("gpt-5", "gpt-5-codex", "", None, 7))}}
        elif roll < 0.84:
            history = [dict(rng.choice(ITEMS)) for _ in range(rng.randrange(3))]
            line = {"type": "compacted", "payload": {"message": "s", "replacement_history": history}}
        elif roll < 0.87:
            line = {"type": rng.choice(("mystery_line", None)), "payload": {}}
        elif roll < 0.9:
            line = {"type": rng.choice(("response_item", "event_msg", "turn_context", "compacted")), "payload": None}
        else:
            line = {"type": "response_item", "payload": dict(rng.choice(ITEMS))}
            line["refused"] = True  # (written with a lone surrogate: the dict way reads it)
        if rng.random() < 0.9:
            line["timestamp"] = _stamp(second)
        lines.append(line)
    out = []
    for line in lines:
        refused = line.pop("refused", False)
        raw = json.dumps(line, separators=(",", ":")).encode()
        if refused:
            raw = raw[:-1] + b',"note":"\\ud800"}'
        out.append(raw)
    if rng.random() < 0.2:
        out.insert(rng.randrange(1, len(out)), rng.choice((b"", b"not json", b"[1]", b'{"type":"event_msg"')))
    return out


def _facts(found: Any) -> Any:
    return (found.session_id, found.cwd, found.timestamp, found.parent_file, found.calls)


def _dict_way(path: Path) -> Any:
    saved = codex_usage_fast._DECODE
    codex_usage_fast._DECODE = None
    try:
        return codex_usage(str(path))
    finally:
        codex_usage_fast._DECODE = saved


@typed_only
@pytest.mark.parametrize("seed", range(40))
def test_random_rollouts_typed_equal_the_dict_way_and_the_adapter(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "codex" / "sessions" / "rollout-2026-03-01T09-00-00-c-1.jsonl"
    path.parent.mkdir(parents=True)
    lines = _rollout(rng, header_stamps=seed % 4 != 0)
    path.write_bytes(b"\n".join(lines) + (b"\n" if seed % 3 else b""))
    typed = codex_usage(str(path))
    assert _facts(typed) == _facts(_dict_way(path))
    assert_same_file(path, "codex")


@typed_only
def test_a_header_without_timestamps_takes_the_first_entrys_as_the_dict_way(tmp_path):
    """The typed way does not follow which timestamp came first: with neither the header line
    nor its payload naming one, the reader asks the dict way."""
    path = tmp_path / "codex" / "sessions" / "rollout-2026-03-01T09-00-00-c-1.jsonl"
    path.parent.mkdir(parents=True)
    lines = [{"type": "session_meta", "payload": {"id": "c-1", "cwd": "/p"}},
             {"type": "event_msg", "payload": {"type": "agent_message"}},  # (no timestamp)
             {"type": "response_item", "timestamp": _stamp(2), "payload": {"type": "reasoning"}},
             {"type": "event_msg", "timestamp": _stamp(3), "payload": {"type": "task_started"}},
             {"type": "event_msg", "timestamp": _stamp(4), "payload": {"type": "token_count", "info": {
                 "total_token_usage": dict.fromkeys(NAMES, 9), "last_token_usage": dict.fromkeys(NAMES, 9)}}}]
    path.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
    typed = codex_usage(str(path))
    # (the event at 3 s was added before the call, which the adapter adds when it ends)
    assert typed.timestamp == _stamp(3)
    assert _facts(typed) == _facts(_dict_way(path))
    assert_same_file(path, "codex")


def test_the_report_cells_of_a_codex_call_are_its_usage_floats():
    rng = random.Random(11)
    values = [0, 1, 5, 17, 2**31, 2**53 + 1, 2**63 - 1, 10**30]
    for _ in range(2000):
        counts = tuple(rng.choice(values) for _ in NAMES)
        call = CodexCall("L000001", _stamp(1), "openai", "gpt-5", counts, 1)
        assert usage_fast._codex_cells(call) == _float_usage(call.usage), counts
    unpriced = CodexCall("L000001", _stamp(1), "openai", "gpt-5", None, 1)
    assert usage_fast._codex_cells(unpriced) == _float_usage(unpriced.usage)
    assert usage_fast._codex_calls([call, unpriced]) == [
        usage_fast._foreign_call(c.entry_id, c.timestamp, c.provider, c.model, c.usage, c.copied) for c in (call, unpriced)]
