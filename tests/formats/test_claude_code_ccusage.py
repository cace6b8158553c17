"""Claude Code usage totals against ccusage itself (``ccusage claude daily --json --offline``).

ccusage 20 is a native binary from npm (``bash bench/ccusage_setup.sh`` installs it into the
gitignored bench/.ccusage-native); the comparison skips cleanly without node, npm or the registry.
The folder holds generated sessions (streamed responses, sub-agents in both layouts, compactions),
the public fixtures, and a file of odd lines that exercise each of ccusage's counting rules.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import timezone
from pathlib import Path
from typing import Any

import pytest

import pi_lab
from pi_lab.formats.claude_code_usage import folder_usage, usage_calls, usage_files, claude_config_dirs

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "claude-code"
SETUP = ROOT / "bench" / "ccusage_setup.sh"
sys.path.insert(0, str(ROOT / "tools"))
from generate_claude_sessions import generate_session  # noqa: E402


def _compact(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def _call(mid: str | None, rid: str | None, ts: str, *, model: str = "claude-opus-4-5-20251101", **usage: Any) -> dict[str, Any]:
    counts = {"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 40}
    counts.update(usage)
    line: dict[str, Any] = {"type": "assistant", "uuid": f"u-{mid}-{rid}-{ts}", "parentUuid": None, "sessionId": "odd",
                            "version": "2.0.76", "timestamp": ts,
                            "message": {"id": mid, "model": model, "role": "assistant", "content": [], "usage": counts}}
    if rid is not None:
        line["requestId"] = rid
    if mid is None:
        del line["message"]["id"]
    return line


def _odd_lines() -> bytes:
    lines = [
        _call("m1", "r1", "2026-04-01T23:59:59.000Z", output_tokens=5),
        _call("m1", "r1", "2026-04-01T23:59:59.500Z", output_tokens=500),  # same call, larger: kept
        _call("m1", "r1", "2026-04-01T23:59:59.900Z", output_tokens=7),  # same call, smaller: dropped
        _call("m2", "r2", "2026-04-02T00:00:00.000Z", cache_creation={"ephemeral_5m_input_tokens": 3,
                                                                     "ephemeral_1h_input_tokens": 4}),
        _call("m3", "r3", "2026-04-02T01:00:00.000Z", speed="fast"),
        _call("m4", "r4", "2026-04-02T02:00:00.000Z", model="<synthetic>"),
        {**_call("m5", "r5", "2026-04-02T03:00:00.000Z"), "version": "dev"},  # not N.N.N: dropped
        _call("m6", "r6", "2026-04-02T04:00:00.000Z", output_tokens=1.5),  # not an integer: dropped
        {**_call("m7", "r7", "2026-04-02T05:00:00.000Z"), "sessionId": ""},  # empty: dropped
        {**_call("m8", "r8", "2026-04-02T06:00:00.000Z"), "isSidechain": True},  # a sidechain call of its own
        {**_call("m1", "r-replay", "2026-04-02T07:00:00.000Z", output_tokens=9999), "isSidechain": True},  # replay: dropped
        _call(None, None, "2026-04-02T08:00:00.000Z"),  # no message id: always counted
        {**_call("m11", "r11", "2026-04-02T08:30:00.000Z"), "cwd": None},  # "cwd":null: dropped by its bytes
    ]
    data = b"".join(_compact(x) for x in lines)
    # ccusage skips these by their bytes: a null requestId, and a line written with spaces.
    data += b'{"type":"assistant","requestId":null,"timestamp":"2026-04-02T09:00:00.000Z","message":{"id":"m9","usage":{"input_tokens":1,"output_tokens":1}}}\n'
    data += json.dumps(_call("m10", "r10", "2026-04-02T10:00:00.000Z")).encode() + b"\n"
    return data + b"{broken\n"


def _folder(tmp_path: Path) -> Path:
    config = tmp_path / "claude"
    project = config / "projects" / "-home-user-project"
    for seed in (1, 30):  # 29 hours apart: two days
        generate_session(project, seed=seed, turns=6)
    other = config / "projects" / "-Users-test-project"
    other.mkdir(parents=True)
    for fixture in FIXTURES.glob("*.jsonl"):
        shutil.copy(fixture, other / fixture.name)
    (other / "odd.jsonl").write_bytes(_odd_lines())
    return config


def _ccusage() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("needs node and npm for ccusage")
    try:
        done = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.skip("ccusage install timed out")
    if done.returncode != 0:
        pytest.skip(f"ccusage not installed: {done.stderr.strip()[-300:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def _report(binary: Path, config: Path) -> dict[str, Any]:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "TZ": "UTC", "NO_COLOR": "1"}
    done = subprocess.run([str(binary), "claude", "daily", "--json", "--offline", "--timezone", "UTC"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_daily_tokens_equal_ccusage_token_for_token(tmp_path):
    binary = _ccusage()
    config = _folder(tmp_path)
    report = _report(binary, config)
    ours = folder_usage(config, by="day", tz=timezone.utc)
    theirs = {day["date"]: day for day in report["daily"]}
    assert set(ours) == set(theirs) and len(ours) >= 3
    for date, totals in ours.items():
        day = theirs[date]
        assert (totals.input, totals.output, totals.cache_write, totals.cache_read, totals.total) == (
            day["inputTokens"], day["outputTokens"], day["cacheCreationTokens"], day["cacheReadTokens"],
            day["totalTokens"]), date
        models = {m["modelName"]: (m["inputTokens"], m["outputTokens"], m["cacheCreationTokens"], m["cacheReadTokens"])
                  for m in day["modelBreakdowns"]}
        assert {k: (v["input"], v["output"], v["cache_write"], v["cache_read"]) for k, v in totals.models.items()} == models


def test_the_counting_rules_without_ccusage(tmp_path):
    config = tmp_path / "claude"
    (config / "projects" / "p").mkdir(parents=True)
    (config / "projects" / "p" / "odd.jsonl").write_bytes(_odd_lines())
    calls = usage_calls(usage_files(claude_config_dirs({"CLAUDE_CONFIG_DIR": str(config)})))
    by_id = {c.message_id: c for c in calls}
    assert set(by_id) == {"m1", "m2", "m3", "m4", "m8", None}  # not m5-m7, m9-m11
    assert by_id["m1"].output == 500 and not by_id["m1"].sidechain  # the replay did not replace it
    assert by_id["m2"].cache_write == 7
    assert by_id["m3"].model == "claude-opus-4-5-20251101-fast"
    assert by_id["m4"].model is None
    days = folder_usage(config, by="day", tz=timezone.utc)
    assert list(days) == ["2026-04-01", "2026-04-02"]


def test_the_session_view_counts_each_call_once_like_the_usage_rules(tmp_path):
    # A streamed response is one assistant message carrying the call's (largest) usage, so the
    # session's assistant messages total what the usage rules count for the same file.
    path = generate_session(tmp_path / "claude" / "projects" / "p", seed=4)
    session = pi_lab.open_session(path)
    main_calls = [c for c in usage_calls([path])]
    messages = [e["message"] for e in session.get_entries()
                if e["type"] == "message" and e["message"]["role"] == "assistant"]
    in_main_file = [m for m, e in zip(messages, [e for e in session.get_entries() if e["type"] == "message"
                                                 and e["message"]["role"] == "assistant"])
                    if "file" not in e["claudeCode"]["lines"][0]]
    assert len(in_main_file) == len(main_calls)
    assert sum(m["usage"]["output"] for m in in_main_file) == sum(c.output for c in main_calls)
    assert sum(m["usage"]["totalTokens"] for m in in_main_file) == sum(c.input + c.cache_read + c.cache_write
                                                                       for c in main_calls)


def test_a_line_written_with_spaces_is_read_by_the_view_but_not_counted_by_ccusage_rules(tmp_path):
    # The difference docs/formats.md explains: ccusage finds usage lines by the bytes
    # '"usage":{', which Claude Code writes; a file re-written with spaces (the claude-code-log
    # fixtures) shows its usage in pi_lab's views but counts nothing in either usage report.
    path = tmp_path / "claude" / "projects" / "p" / "s.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude-code-log-representative_messages.jsonl", path)
    session = pi_lab.open_session(path)
    assert any(e["message"]["usage"]["output"] for e in session.get_entries()
               if e["type"] == "message" and e["message"]["role"] == "assistant")
    assert usage_calls([path]) == []
