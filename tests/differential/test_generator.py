"""The synthetic session generator (bench/generate.py) produces valid, realistic pi 1.6.0 files.

These tests need neither Node nor pi_lab: they check the generator's own output against the
on-disk format of spec/session-format.md, so benchmark and differential inputs are trustworthy.
"""

from __future__ import annotations

import importlib.util
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
HEX8 = re.compile(r"^[0-9a-f]{8}$")
UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

KEY_ORDERS = {  # session-format.md §5 (optional keys may be absent, order is fixed)
    "message": ["type", "id", "parentId", "timestamp", "message"],
    "thinking_level_change": ["type", "id", "parentId", "timestamp", "thinkingLevel"],
    "model_change": ["type", "id", "parentId", "timestamp", "provider", "modelId"],
    "compaction": ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore",
                   "details", "usage", "fromHook", "systemMessage"],
    "branch_summary": ["type", "id", "parentId", "timestamp", "fromId", "summary", "details", "usage", "fromHook"],
    "label": ["type", "id", "parentId", "timestamp", "targetId", "label"],
    "context_edit": ["type", "id", "parentId", "timestamp", "targetId", "replacement"],
    "session_info": ["type", "id", "parentId", "timestamp", "name"],
    "custom": ["type", "customType", "data", "id", "parentId", "timestamp"],
    "custom_message": ["type", "customType", "content", "display", "details", "id", "parentId", "timestamp"],
    "usage": ["type", "id", "parentId", "timestamp", "kind", "provider", "model", "usage", "note"],
}
MESSAGE_KEY_ORDERS = {
    "user": ["role", "content", "timestamp"],
    "assistant": ["role", "content", "api", "provider", "model", "responseModel", "responseId",
                  "providerThinkingLevel", "thinkingLevel", "diagnostics", "usage", "stopReason", "deferred",
                  "errorMessage", "rawStopReason", "endTurn", "timestamp", "durationMs"],
    "toolResult": ["role", "toolCallId", "toolName", "content", "details", "usage", "nestedCalls", "isError",
                   "timestamp", "durationMs"],
    "system": ["role", "content", "sections", "timestamp", "toolsAdded", "toolsRemoved"],
    "bashExecution": ["role", "command", "output", "exitCode", "cancelled", "truncated", "fullOutputPath",
                      "timestamp", "excludeFromContext"],
}
USAGE_KEYS = ["input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "reasoning", "totalTokens", "cost"]


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("bench_generate", REPO / "bench" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def s10k(gen):
    lines, _ = gen.generate(10_000, 1)
    return lines


def _in_order(keys: list[str], order: list[str]) -> bool:
    positions = [order.index(k) for k in keys if k in order]
    return all(k in order for k in keys) and positions == sorted(positions)


def _ms(iso: str) -> int:
    return int(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp() * 1000)


def test_same_seed_same_bytes_and_other_seed_differs(gen):
    a, _ = gen.generate(800, 7)
    b, _ = gen.generate(800, 7)
    c, _ = gen.generate(800, 8)
    assert a == b
    assert a != c


def test_header_is_v3_with_uuid7_id(s10k):
    header = json.loads(s10k[0])
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["version"] == 3 and UUID7.match(header["id"]) and ISO.match(header["timestamp"])


def test_entries_are_well_formed_and_in_pi_key_order(s10k):
    entries = [json.loads(line) for line in s10k[1:]]
    assert len(entries) == 10_000
    seen: set[str] = set()
    last_ms = _ms(json.loads(s10k[0])["timestamp"])
    for e in entries:
        assert HEX8.match(e["id"]) and e["id"] not in seen
        assert e["parentId"] is None or e["parentId"] in seen  # parents are written first
        seen.add(e["id"])
        assert ISO.match(e["timestamp"]) and _ms(e["timestamp"]) > last_ms  # strictly increasing
        last_ms = _ms(e["timestamp"])
        assert _in_order(list(e), KEY_ORDERS[e["type"]]), (e["type"], list(e))
        if e["type"] == "message":
            m = e["message"]
            assert isinstance(m["timestamp"], int)
            assert _in_order(list(m), MESSAGE_KEY_ORDERS[m["role"]]), (m["role"], list(m))
            if "usage" in m:
                assert _in_order(list(m["usage"]), USAGE_KEYS)
                u = m["usage"]
                assert u["totalTokens"] == u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]


def test_numbers_are_written_like_json_stringify(gen):
    assert gen.dumps({"a": gen.js_number(3e-06), "b": gen.js_number(0.0), "c": gen.js_number(1.5e-07),
                      "d": gen.js_number(0.000123), "e": gen.js_number(2.0)}) == \
        '{"a":0.000003,"b":0,"c":1.5e-7,"d":0.000123,"e":2}'


def test_realistic_mix(s10k):
    entries = [json.loads(line) for line in s10k[1:]]
    by_id = {e["id"]: e for e in entries}
    size = sum(len(line.encode()) + 1 for line in s10k[1:]) / len(entries)
    assert 1_500 <= size <= 2_600, size  # about 2 KB per entry
    children: dict[str, int] = {}
    for e in entries:
        if e["parentId"]:
            children[e["parentId"]] = children.get(e["parentId"], 0) + 1
    branch_points = sum(1 for n in children.values() if n > 1)
    assert 25 <= branch_points <= 60, branch_points  # roughly 40 per 10k entries
    types = {e["type"] for e in entries}
    assert {"message", "model_change", "thinking_level_change", "label", "branch_summary", "compaction",
            "context_edit"} <= types
    tools = {b["name"] for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"
             for b in e["message"]["content"] if b["type"] == "toolCall"}
    assert tools == {"read", "write", "edit", "bash"}
    longest = max(len(e["message"]["content"][0]["text"]) for e in entries
                  if e["type"] == "message" and e["message"]["role"] == "toolResult")
    assert longest > 20_000
    inputs = [e["message"]["usage"]["input"] + e["message"]["usage"]["cacheRead"] for e in entries
              if e["type"] == "message" and e["message"]["role"] == "assistant" and e["message"]["stopReason"] != "error"]
    assert max(inputs) > 100_000 and inputs[0] < inputs[10]  # context grows until compacted
    for e in entries:
        if e["type"] == "branch_summary":
            assert e["fromId"] in by_id and set(e["details"]) == {"readFiles", "modifiedFiles"}


def test_compactions_keep_a_user_or_assistant_entry_on_their_path(s10k):
    entries = [json.loads(line) for line in s10k[1:]]
    by_id = {e["id"]: e for e in entries}
    compactions = [e for e in entries if e["type"] == "compaction"]
    assert compactions
    for c in compactions:
        path = set()
        cur = c["parentId"]
        while cur:
            path.add(cur)
            cur = by_id[cur]["parentId"]
        kept = by_id[c["firstKeptEntryId"]]
        assert kept["id"] in path
        assert kept["type"] == "message" and kept["message"]["role"] in ("user", "assistant")
        assert kept["message"].get("stopReason") != "error"
        assert isinstance(c["tokensBefore"], int) and c["tokensBefore"] > 0
        if "systemMessage" in c:
            assert c["systemMessage"]["role"] == "system" and c["systemMessage"]["timestamp"] == _ms(c["timestamp"])


def test_failed_attempts_are_omitted_by_a_context_edit(s10k):
    entries = [json.loads(line) for line in s10k[1:]]
    by_id = {e["id"]: e for e in entries}
    omitted = {e["targetId"] for e in entries if e["type"] == "context_edit" and e["replacement"] is None}
    failed = [e for e in entries if e["type"] == "message" and e["message"].get("stopReason") == "error"]
    assert any(f["message"]["errorMessage"].startswith("prompt is too long: ") for f in failed)
    for target in omitted:
        assert by_id[target]["message"]["stopReason"] == "error"
    assert len([f for f in failed if f["id"] in omitted]) >= len(failed) - 1  # the last may be cut off


def test_linear_mode_is_one_chain(gen):
    lines = list(gen.linear_lines(1_001, 3))
    assert len(lines) == 1_002
    prev = None
    for line in lines[1:]:
        e = json.loads(line)
        assert e["parentId"] == prev and HEX8.match(e["id"])
        prev = e["id"]
    assert json.loads(lines[-1])["message"]["role"] == "user"


def test_cli_writes_the_file(gen, tmp_path):
    out = tmp_path / "s.jsonl"
    assert gen.main(["--entries", "50", "--out", str(out), "--seed", "4", "--quiet"]) == 0
    data = out.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 51
    assert data.splitlines()[1:] == [line.encode() for line in gen.generate(50, 4)[0][1:]]
