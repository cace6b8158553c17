"""The usage-only readers of Claude Code sessions and Codex rollouts
(``pi_lab.formats.claude_code_usage_fast``, ``pi_lab.formats.codex_usage_fast``) against the
adapters they stand in for: per file, the same calls (id, time, provider, model, usage, copy
mark), the same header facts and, for Claude Code, the same (id, timestamp) keys of the entries
a call's id can equal; per folder, the same report as ``Corpus.scan(cache=False).usage(by)``.
On generated sessions, on odd and torn lines, and on one-field mutations of the field fuzzer."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest
from fuzz import fieldfuzz
from test_corpus_usage_fast import assert_same_reports

from pi_lab.corpus import usage_fast, usage_lines
from pi_lab.formats.claude_code_usage_fast import claude_code_usage, made_up_id
from pi_lab.formats.codex_usage_fast import codex_usage

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
import generate_claude_sessions  # noqa: E402
import generate_codex_sessions  # noqa: E402
from test_claude_code_fuzz import CLAUDE_FIELD_PATHS  # noqa: E402
from test_codex_fuzz import CODEX_FIELD_PATHS  # noqa: E402

MUTATIONS = int(os.environ.get("PI_LAB_FUZZ_EXAMPLES", "300")) // 2


def _facts(found: dict) -> dict:
    return {k: found[k] for k in ("session_id", "project", "created", "parent_session", "agent")}


def assert_same_file(path: Path, agent: str, *, fast: bool | None = None) -> None:
    """The usage-only reader's answer for ``path`` is the adapter's (``fast``: whether the
    usage-only reader must have answered itself)."""
    got = usage_fast._other_usage(str(path), agent)
    want = usage_fast._adapter_usage(str(path), agent)
    assert sorted(got["calls"], key=repr) == sorted(want["calls"], key=repr)
    assert _facts(got) == _facts(want)
    if agent == "claude-code":
        answered = "raw_keys" in got
        if fast is not None:
            assert answered is fast
        if answered:
            # Every key but those of made-up ids (no call's id can equal one of them).
            keys = usage_lines._keys({"id": i, "timestamp": t} for i, t in got["raw_keys"])
            keys |= {(usage_lines._safe(c[0]), c[1]) for c in got["calls"]}  # (as _claude_keys)
            assert keys == {k for k in want["keys"] if not made_up_id(k[0])}
        else:
            assert got["keys"] == want["keys"]


def _claude_folder(root: Path, seeds: range, **options) -> Path:
    project = root / "claude" / "projects" / "-home-user-project"
    for seed in seeds:
        generate_claude_sessions.generate_session(project, seed=seed, turns=6, **options)
    return project


def test_generated_claude_sessions_are_read_by_the_usage_reader_as_by_the_adapter(tmp_path):
    project = _claude_folder(tmp_path, range(3))
    files = sorted(project.glob("*.jsonl"))
    assert len(files) == 3 and any(project.glob("*/subagents/agent-*.jsonl"))
    for path in files:
        assert_same_file(path, "claude-code", fast=True)
        found = claude_code_usage(str(path))
        assert found is not None and len(found.calls) > 10  # (sub-agent files folded in)


def test_hostile_claude_sessions_equal_the_adapter_read_whichever_way(tmp_path):
    project = _claude_folder(tmp_path, range(4), hostile=True)
    for path in sorted(project.glob("*.jsonl")):
        assert_same_file(path, "claude-code")


def _rewrite(path: Path, change) -> None:
    lines = [json.loads(x) for x in path.read_bytes().splitlines() if x.startswith(b"{") and x.endswith(b"}")]
    change(lines)
    path.write_bytes(b"".join(json.dumps(x, separators=(",", ":")).encode() + b"\n" for x in lines))


@pytest.mark.parametrize("case", ["duplicate uuid", "made-up uuid", "progress without parent", "no uuid",
                                  "older layout"])
def test_claude_sessions_the_usage_reader_refuses_go_the_adapters_way(tmp_path, case):
    project = _claude_folder(tmp_path, range(1))
    path = next(project.glob("*.jsonl"))

    def change(lines):
        replies = [x for x in lines if x.get("type") == "assistant"]
        if case == "duplicate uuid":
            replies[3]["uuid"] = replies[1]["uuid"]
        elif case == "made-up uuid":
            replies[2]["uuid"] = "line-3"
        elif case == "no uuid":
            del replies[4]["uuid"]
        elif case == "progress without parent":
            lines.insert(5, {"type": "progress", "uuid": "p-1", "timestamp": "2026-03-01T09:00:00.000Z"})

    if case == "older layout":
        (project / "agent-zzz.jsonl").write_bytes(b"")
    else:
        _rewrite(path, change)
    assert claude_code_usage(str(path)) is None
    assert_same_file(path, "claude-code", fast=False)
    assert_same_reports(tmp_path / "claude")


def test_a_call_with_a_made_up_id_makes_every_session_keyed_in_full(tmp_path):
    """A session the adapter reads can have a call whose id the adapter made up (``line-N``):
    an earlier session's entry with that id and time (which the usage reader does not key)
    would make it a copy."""
    project = tmp_path / "claude" / "projects" / "p"
    project.mkdir(parents=True)
    stamp = "2026-03-01T09:00:00.000Z"
    usage = {"input_tokens": 5, "output_tokens": 7}
    first = [{"type": "user", "uuid": "u-1", "sessionId": "s1", "timestamp": stamp, "message": {"role": "user", "content": "hi"}},
             {"type": "mode", "mode": "plan", "timestamp": stamp},  # line 2: id line-2
             {"type": "assistant", "uuid": "a-1", "parentUuid": "u-1", "sessionId": "s1", "timestamp": stamp,
              "message": {"id": "m1", "model": "claude-x", "usage": usage, "content": []}}]
    second = [{"type": "user", "uuid": "u-9", "sessionId": "s2", "timestamp": "2026-03-02T09:00:00.000Z",
               "message": {"role": "user", "content": "again"}},
              {"type": "assistant", "sessionId": "s2", "timestamp": stamp,  # line 2, no uuid: id line-2
               "message": {"id": "m9", "model": "claude-x", "usage": usage, "content": []}}]
    for name, lines in (("a.jsonl", first), ("b.jsonl", second)):
        (project / name).write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
    assert claude_code_usage(str(project / "a.jsonl")) is not None
    assert claude_code_usage(str(project / "b.jsonl")) is None
    assert_same_reports(tmp_path / "claude")


def test_generated_codex_rollouts_forks_and_torn_lines(tmp_path):
    home = tmp_path / "codex"
    generate_codex_sessions.generate_session(home, seed=1, turns=6, fork=True)
    generate_codex_sessions.generate_session(home, seed=2, turns=5, hostile=True, torn=True, fork=True)
    files = sorted(home.rglob("*.jsonl"))
    assert len(files) == 4
    copies = 0
    for path in files:
        assert_same_file(path, "codex")
        copies += sum(c.copied for c in codex_usage(str(path)).calls)
    assert copies > 0


def test_a_codex_fork_whose_parent_is_missing(tmp_path):
    home = tmp_path / "codex"
    parent, fork = generate_codex_sessions.generate_session(home, seed=3, turns=4, fork=True)
    parent.unlink()
    assert_same_file(fork, "codex")


def _mutations(lines: list[bytes], paths, seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        yield fieldfuzz.mutate_line(lines, paths, rng)


def test_field_fuzz_claude_code(tmp_path):
    project = _claude_folder(tmp_path, range(9, 10))
    path = next(project.glob("*.jsonl"))
    lines = path.read_bytes().splitlines()
    lines = [x for x in lines if x.startswith(b"{") and x.endswith(b"}")]
    fast = 0
    for data, what in _mutations(lines, CLAUDE_FIELD_PATHS, 28, MUTATIONS):
        path.write_bytes(data)
        try:
            assert_same_file(path, "claude-code")
        except AssertionError as error:
            raise AssertionError(what) from error
        fast += claude_code_usage(str(path)) is not None
    assert fast > MUTATIONS // 2  # (most mutations keep the ids plain: the fast path is tested)


def test_field_fuzz_codex(tmp_path):
    home = tmp_path / "codex"
    parent, fork = generate_codex_sessions.generate_session(home, seed=9, turns=4, fork=True)
    for target, seed in ((parent, 28), (fork, 29)):
        original = target.read_bytes()
        lines = original.splitlines()
        for data, what in _mutations(lines, CODEX_FIELD_PATHS, seed, MUTATIONS // 2):
            target.write_bytes(data)
            try:
                assert_same_file(fork, "codex")
                assert_same_file(parent, "codex")
            except AssertionError as error:
                raise AssertionError(what) from error
        target.write_bytes(original)


def test_folder_reports_equal_the_scan(tmp_path):
    _claude_folder(tmp_path, range(3))
    _claude_folder(tmp_path, range(3, 5), hostile=True)
    generate_codex_sessions.generate_session(tmp_path / "codex", seed=1, turns=5, fork=True)
    generate_codex_sessions.generate_session(tmp_path / "codex", seed=2, turns=3, hostile=True, torn=True)
    assert_same_reports(tmp_path)


def test_a_streamed_response_keeps_the_last_of_equal_largest_usages(tmp_path):
    """The adapter keeps a later line's usage when its total equals the largest so far."""
    project = tmp_path / "claude" / "projects" / "p"
    project.mkdir(parents=True)
    stamp = "2026-03-01T09:00:0{}.000Z"
    lines = [{"type": "user", "uuid": "u-1", "sessionId": "s", "timestamp": stamp.format(0),
              "message": {"role": "user", "content": "hi"}}]
    parent = "u-1"
    for n, (inp, out) in enumerate(((5, 1), (3, 3), (1, 5)), start=1):
        lines.append({"type": "assistant", "uuid": f"a-{n}", "parentUuid": parent, "sessionId": "s", "requestId": "r",
                      "timestamp": stamp.format(n), "message": {"id": "m", "model": "claude-x", "content": [],
                                                                "usage": {"input_tokens": inp, "output_tokens": out}}})
        parent = f"a-{n}"
    path = project / "s.jsonl"
    path.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
    found = claude_code_usage(str(path))
    assert found is not None and [(c.entry_id, c.usage["input"], c.usage["output"]) for c in found.calls] == [("a-3", 1, 5)]
    assert_same_file(path, "claude-code", fast=True)


def test_parsed_lines_keeps_the_lines_read_lines_keeps():
    from pi_lab.formats.claude_code_lines import read_lines
    from pi_lab.formats.agent_usage_lines import parsed_lines

    data = (b'{"a":1}\n\n   \n{"b":"\\ud800"}\n[1]\n7\n{not json\n{"c":' + b"[" * 2000 + b"]" * 2000
            + b'}\n\xff\n {"d":2} \r\n{"e":3')
    got, want = parsed_lines(data), read_lines(data)[0]
    assert [n for n, _ in got] == [n for n, _ in want] == [1, 4, 8, 10]
    # (the line nested 2,000 deep, which orjson refuses, is compared by its depth: == recurses)
    assert [x for n, x in got if n != 8] == [x for n, x in want if n != 8]
    deep = got[2][1]["c"]
    for _ in range(1999):
        deep = deep[0]
    assert deep == []


def test_an_unread_line_with_a_call_id_is_keyed(tmp_path):
    """A user line of an earlier session with the id and time of a later session's call makes
    that call a copy: its key is read."""
    project = tmp_path / "claude" / "projects" / "p"
    project.mkdir(parents=True)
    stamp = "2026-03-01T09:00:00.000Z"
    usage = {"input_tokens": 5, "output_tokens": 7}
    first = [{"type": "user", "uuid": "x-1", "sessionId": "s1", "timestamp": stamp, "message": {"role": "user", "content": "hi"}},
             {"type": "assistant", "uuid": "a-1", "parentUuid": "x-1", "sessionId": "s1", "timestamp": stamp,
              "message": {"id": "m1", "model": "claude-x", "usage": usage, "content": []}}]
    second = [{"type": "user", "uuid": "u-9", "sessionId": "s2", "timestamp": "2026-03-02T09:00:00.000Z",
               "message": {"role": "user", "content": "again"}},
              {"type": "assistant", "uuid": "x-1", "parentUuid": "u-9", "sessionId": "s2", "timestamp": stamp,
               "message": {"id": "m9", "model": "claude-x", "usage": usage, "content": []}}]
    for name, lines in (("a.jsonl", first), ("b.jsonl", second)):
        (project / name).write_bytes(b"".join(json.dumps(x, separators=(",", ":")).encode() + b"\n" for x in lines))
    found = claude_code_usage(str(project / "a.jsonl"))
    assert found is not None and ("x-1", stamp) in found.keys
    assert_same_reports(tmp_path / "claude")
    report, _errors, _read = usage_fast.usage_report([tmp_path / "claude"], "session", workers=1)
    assert sum(row[2] for row in report["rows"]) == 1  # (the second session's call is the first's user line: a copy)


def test_a_sub_agent_line_repeating_a_uuid_of_the_main_file(tmp_path):
    """The adapter gives a sub-agent's line whose uuid the main file used already another id
    (the agent's prefix): the usage reader must see it and leave the session to the adapter."""
    project = _claude_folder(tmp_path, range(1))
    path = next(project.glob("*.jsonl"))
    sub = next(project.glob("*/subagents/agent-*.jsonl"))
    lines = [json.loads(x) for x in path.read_bytes().splitlines() if x.startswith(b"{") and x.endswith(b"}")]
    taken = next(x["uuid"] for x in lines if x.get("type") == "user" and x.get("uuid") and not x.get("isCompactSummary"))
    _rewrite(sub, lambda lines: next(x for x in lines if x.get("type") == "assistant").update(uuid=taken))
    assert_same_file(path, "claude-code", fast=False)


def _write_lines(path: Path, lines: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(json.dumps(x, separators=(",", ":")).encode() + b"\n" for x in lines))


def test_compactions(tmp_path):
    """A compact summary joins its boundary's entry (which keeps the boundary's time and takes
    the summary's uuid): the session's first time and an entry's key depend on it. (A summary's
    line is read the dict way, for its text.)"""
    usage = {"input_tokens": 5, "output_tokens": 7}
    reply = {"type": "assistant", "uuid": "a-1", "parentUuid": "s-1", "sessionId": "s", "timestamp": "2026-03-01T09:00:03.000Z",
             "message": {"id": "m1", "model": "claude-x", "usage": usage, "content": []}}
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b-1", "sessionId": "s"}
    summary = {"type": "user", "isCompactSummary": True, "uuid": "s-1", "parentUuid": "b-1", "sessionId": "s",
               "timestamp": "2026-03-01T09:00:01.000Z", "message": {"role": "user", "content": "Summary."}}
    # (the header's time: the boundary has none, the summary makes no entry of its own)
    head = tmp_path / "a" / "projects" / "p" / "head.jsonl"
    _write_lines(head, [boundary, summary, {**reply, "uuid": "a-0", "parentUuid": None}, reply])
    # (a summary whose text names the assistant)
    named = tmp_path / "b" / "projects" / "p" / "named.jsonl"
    _write_lines(named, [{**boundary, "timestamp": "2026-03-01T09:00:00.000Z"},
                         {**summary, "message": {"role": "user", "content": "The assistant did this."}}, reply])
    for path in (head, named):
        assert claude_code_usage(str(path)) is not None
        assert_same_file(path, "claude-code", fast=True)
