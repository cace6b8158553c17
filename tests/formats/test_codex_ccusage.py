"""Codex usage totals against ccusage itself (``ccusage codex daily --json --offline``).

ccusage 20 is a native binary from npm (``bash bench/ccusage_setup.sh`` installs it into the
gitignored bench/.ccusage-native); the comparison skips cleanly without node, npm or the
registry. The ``CODEX_HOME`` holds generated rollouts (a fork with its copied prefix, hostile
text, a half-written last line) and a file of odd lines that exercise each counting rule.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timezone
from pathlib import Path
from typing import Any

import pytest
from formats.test_claude_code_ccusage import _ccusage

import pi_lab
from pi_lab.formats.codex_usage import FALLBACK_MODEL, folder_usage

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "codex"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from generate_codex_sessions import generate_session  # noqa: E402


def _usage(i: int, c: int, o: int, r: int = 0) -> dict[str, int]:
    return {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": r,
            "total_tokens": i + o}


def _count(ts: str, last: dict[str, int] | None, total: dict[str, int] | None, **info: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(info)
    if last is not None:
        body["last_token_usage"] = last
    if total is not None:
        body["total_token_usage"] = total
    return {"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": body, "rate_limits": None}}


def _odd_lines() -> bytes:
    day = "2026-03-03T"
    lines: list[Any] = [
        {"timestamp": day + "00:00:00.000Z", "type": "session_meta", "payload": {"id": "odd", "cwd": "/o"}},
        _count(day + "00:00:01.000Z", _usage(100, 40, 10), _usage(100, 40, 10)),  # no model yet: gpt-5 fallback
        {"timestamp": day + "00:00:02.000Z", "type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        _count(day + "00:00:03.000Z", _usage(200, 50, 20, 5), _usage(300, 90, 30, 5)),
        _count(day + "00:00:04.000Z", _usage(200, 50, 20, 5), _usage(300, 90, 30, 5)),  # repeat: skipped
        _count(day + "00:00:05.000Z", None, _usage(450, 100, 45)),  # no last: the difference of totals
        _count(day + "00:00:06.000Z", _usage(0, 0, 0), _usage(460, 100, 45)),  # all zero: skipped
        _count(day + "00:00:07.000Z", _usage(70, 90, 7), _usage(530, 190, 52)),  # cached > input: capped
        _count(day + "00:00:08.000Z", _usage(9, 0, 1), _usage(539, 190, 53), model="gpt-5.1"),  # its own model
        {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": _usage(5, 0, 5)}}},  # no time
        {"timestamp": day + "00:00:09.000Z", "type": "event_msg", "payload": {"type": "token_count", "info": None}},
    ]
    data = b"".join(json.dumps(x, separators=(",", ":")).encode() + b"\n" for x in lines)
    return data + b"{broken\n"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "codex"
    generate_session(home, seed=1, turns=4, fork=True)
    generate_session(home, seed=2, turns=5, hostile=True, torn=True)
    generate_session(home, seed=30, turns=3)
    odd = home / "sessions" / "2026" / "03" / "03"
    odd.mkdir(parents=True)
    (odd / "rollout-2026-03-03T00-00-00-odd.jsonl").write_bytes(_odd_lines())
    public = home / "sessions" / "2026" / "08" / "01"
    public.mkdir(parents=True)
    for fixture in sorted(FIXTURES.glob("*.jsonl")):  # written with spaces, as JSON allows
        (public / fixture.name).write_bytes(fixture.read_bytes())
    return home


def _report(binary: Path, home: Path) -> dict[str, Any]:
    env = {**os.environ, "CODEX_HOME": str(home), "TZ": "UTC", "NO_COLOR": "1"}
    done = subprocess.run([str(binary), "codex", "daily", "--json", "--offline", "--timezone", "UTC"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _ours(home: Path, **options: Any) -> dict[str, tuple[int, ...]]:
    return {day: (t.input, t.cache_read, t.output, t.reasoning, t.total)
            for day, t in folder_usage(home, by="day", tz=timezone.utc, **options).items()}


def test_daily_tokens_equal_ccusage_token_for_token(tmp_path):
    binary = _ccusage()
    home = _home(tmp_path)
    report = _report(binary, home)
    theirs = {d["date"]: (d["inputTokens"], d["cacheReadTokens"], d["outputTokens"], d["reasoningOutputTokens"],
                          d["totalTokens"]) for d in report["daily"]}
    assert _ours(home) == theirs and len(theirs) >= 3
    models = {d["date"]: {name: (m["inputTokens"], m["cacheReadTokens"], m["outputTokens"], m["totalTokens"])
                          for name, m in d["models"].items()} for d in report["daily"]}
    ours = {day: {name: (m["input"], m["cache_read"], m["output"], m["total"]) for name, m in t.models.items()}
            for day, t in folder_usage(home, by="day", tz=timezone.utc).items()}
    assert ours == models
    # ccusage counts a fork's copied calls once too; counting them again differs.
    assert _ours(home, count_copies=True) != theirs


def test_the_counting_rules_without_ccusage(tmp_path):
    home = tmp_path / "codex"
    folder = home / "sessions" / "2026" / "03" / "03"
    folder.mkdir(parents=True)
    (folder / "rollout-odd.jsonl").write_bytes(_odd_lines())
    totals = folder_usage(home, by="model")
    assert set(totals) == {FALLBACK_MODEL, "gpt-5-codex", "gpt-5.1"}
    codex = totals["gpt-5-codex"]
    # 200-50 | (450-300)-(100-90) (the difference of totals) | 70-70 (cached capped at input)
    assert (codex.calls, codex.input, codex.cache_read, codex.output) == (3, 150 + 140 + 0, 50 + 10 + 70, 20 + 15 + 7)
    assert (totals[FALLBACK_MODEL].input, totals[FALLBACK_MODEL].cache_read) == (60, 40)


def test_the_session_view_holds_the_same_calls_as_the_usage_rules(tmp_path):
    """Each counted call's usage is on exactly one assistant message of the session view."""
    home = tmp_path / "codex"
    parent, fork = generate_session(home, seed=4, turns=4, fork=True)
    totals = folder_usage(home, by="session")
    for path in (parent, fork):
        sm = pi_lab.open_session(path)
        own = [e["message"]["usage"] for e in sm.get_entries() if e.get("type") == "message"
               and e["message"]["role"] == "assistant" and not e["codex"].get("copied")
               and e["message"]["usage"]["totalTokens"]]
        key = path.relative_to(home / "sessions").as_posix()[: -len(".jsonl")]
        assert sum(u["input"] for u in own) == totals[key].input
        assert sum(u["cacheRead"] for u in own) == totals[key].cache_read
        assert sum(u["totalTokens"] for u in own) == totals[key].total


def test_a_branch_repeating_its_parents_count_is_counted_once_as_in_ccusages_own_test(tmp_path):
    """ccusage's fixture pair (tests/fixtures/codex): its loader test expects two calls, the
    parent's 1000/100/200 and the branch's own 600/200/250 (inputs with the cached part)."""
    fixtures = FIXTURES
    names = ["ccusage-branch-history-2026-05-12T08-00-00-parent.jsonl", "ccusage-branch-history-2026-05-12T08-02-00-branch.jsonl"]
    if not all((fixtures / n).is_file() for n in names):
        pytest.skip("ccusage's public fixture pair is missing")
    folder = tmp_path / "codex" / "sessions" / "branch-history"
    folder.mkdir(parents=True)
    for name in names:
        (folder / name.replace("ccusage-branch-history-", "")).write_bytes((fixtures / name).read_bytes())
    totals = folder_usage(tmp_path / "codex", by="session")
    parent, branch = totals["branch-history/2026-05-12T08-00-00-parent"], totals["branch-history/2026-05-12T08-02-00-branch"]
    assert (parent.calls, parent.input + parent.cache_read, parent.cache_read, parent.output, parent.total) == (1, 1000, 100, 200, 1200)
    assert (branch.calls, branch.input + branch.cache_read, branch.cache_read, branch.output, branch.total) == (1, 600, 200, 250, 850)


def test_a_rollout_written_with_spaces_is_read_by_the_view_but_not_counted_by_ccusage_rules(tmp_path):
    """The one difference with ccusage 20.0.24: it reads a line only when it holds the compact
    bytes ``"type":"token_count"``... Codex writes compact JSON; the hand-made inspect_scout
    fixtures are written with spaces, so ccusage (and these totals) count none of them, while
    the session view reads them whole."""
    name = "inspect_scout-rollout-2026-08-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"
    if not (FIXTURES / name).is_file():
        pytest.skip("public fixture missing")
    home = tmp_path / "codex"
    (home / "sessions").mkdir(parents=True)
    spaced = home / "sessions" / name
    spaced.write_bytes((FIXTURES / name).read_bytes())
    assert folder_usage(home) == {}
    assert pi_lab.open_session(spaced).get_entry("L000006")["message"]["usage"]["totalTokens"] == 120
    compact = home / "sessions" / ("compact-" + name)
    compact.write_bytes(b"".join(json.dumps(json.loads(line), separators=(",", ":")).encode() + b"\n"
                                 for line in spaced.read_bytes().splitlines()))
    assert [t.total for t in folder_usage(home).values()] == [120]
