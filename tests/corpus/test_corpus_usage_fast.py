"""``pi-lab usage --no-cache`` reads only the model calls (``pi_lab.corpus.usage_fast``): its
report must equal ``Corpus.scan(cache=False).usage(by)``, row for row, for every grouping, on
folders with forks and clones, broken and odd lines, other agents, and the real fixtures."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest
from corpus_builders import a, build_corpus, write_session
from helpers import header, msg, usage, user_msg
from shared_fixtures import FIXTURES_DIR, FIXTURES_PRESENT, NO_FIXTURES

from pi_lab.cli import main
from pi_lab.corpus import Corpus, usage_fast

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import generate_claude_sessions  # noqa: E402
import generate_codex_sessions  # noqa: E402

BY = ("day", "session", "model", "project", "agent")


def _bench_module(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(f"bench_{name}", module)
    spec.loader.exec_module(module)
    return module


def _slow(folder: Path, by: str) -> tuple[dict, list]:
    c = Corpus.scan([folder], workers=1, cache=False)
    table = c.usage(by=by)
    return {"columns": table.column_names, "rows": [list(r.values()) for r in table.to_pylist()]}, c.errors


def assert_same_reports(folder: Path, *, pooled: bool = True, monkeypatch=None) -> None:
    for by in BY:
        expected, errors = _slow(folder, by)
        got, got_errors, _read = usage_fast.usage_report([folder], by, workers=1)
        assert got == expected, by
        assert sorted(got_errors) == sorted(errors), by
    if pooled and monkeypatch is not None:
        # The same through the two forked readers (the pool is used only past a size).
        monkeypatch.setattr(usage_fast, "POOL_MIN_BYTES", 0)
        for by in ("day", "session"):
            got, _errors, _read = usage_fast.usage_report([folder], by, workers=2)
            assert got == _slow(folder, by)[0], by


def test_hand_built_forks_clones_and_look_alikes(tmp_path, monkeypatch):
    build_corpus(tmp_path / "c")
    assert_same_reports(tmp_path / "c", monkeypatch=monkeypatch)


def test_generated_corpus_with_forks_of_forks(tmp_path, monkeypatch):
    bench = _bench_module("corpus_bench")
    bench.build_corpus(tmp_path / "c", sessions=12, forks=8, seed=3, fixtures=False)
    expected, _ = _slow(tmp_path / "c", "day")
    assert expected["rows"]
    assert_same_reports(tmp_path / "c", monkeypatch=monkeypatch)


def _odd_files(folder: Path) -> None:
    """Lines the byte search must not get wrong, each in a file of its own."""
    good = [header("G"), msg("u1", None, user_msg("the assistant said"), 1), msg("a1", "u1", a("x", usage(10, 2)), 2)]
    write_session(folder / "good.jsonl", good)
    lines = [json.dumps(x, separators=(",", ":")) for x in good]
    # An assistant line written with spaces, one with an escaped letter, one torn, one that is
    # no JSON, a blank first line before the header, a partial last line that parses and one
    # that does not.
    spaced = json.dumps(msg("a2", "a1", a("y", usage(20, 3)), 3))
    escaped = json.dumps(msg("a3", "a2", a("z", usage(30, 4)), 4), separators=(",", ":")).replace('"assistant"', '"\\u0061ssistant"')
    (folder / "odd.jsonl").write_text("\n".join([*lines, spaced, escaped, '{"type":"message","message":{"role":"assistant"', "not json"]) + "\n")
    (folder / "blank-first.jsonl").write_text("\n" + "\n".join(lines).replace('"id":"G"', '"id":"B"') + "\n")
    (folder / "tail.jsonl").write_text("\n".join(lines).replace('"id":"G"', '"id":"T"') + "\n" + spaced)
    (folder / "torn-tail.jsonl").write_text("\n".join(lines).replace('"id":"G"', '"id":"U"') + "\n" + spaced[:40])
    # pi's old versions (migrated in memory), a BOM, an empty file, another agent's look-alike
    v1 = [{"type": "session", "id": "V1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/v"},
          {"type": "message", "timestamp": "2026-01-01T00:00:01.000Z", "message": a("v", usage(5, 1))}]
    write_session(folder / "v1.jsonl", v1)
    (folder / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode())
    (folder / "empty.jsonl").write_text("")
    # A fork whose parent has a second entry with a copied id (other timestamp), and a call of
    # the fork that shares an id with a parent's entry at another time (not a copy).
    parent = write_session(folder / "p.jsonl", [header("P"), msg("u1", None, user_msg("hi"), 1),
                                                msg("a1", "u1", a("one", usage(7, 1)), 2),
                                                msg("a9", "a1", a("two", usage(8, 1)), 3)])
    write_session(folder / "f.jsonl", [header("F", parentSession=str(parent)), msg("u1", None, user_msg("hi"), 1),
                                       msg("a1", "u1", a("one", usage(7, 1)), 2),
                                       msg("a9", "a1", a("mine", usage(9, 1)), 7),
                                       msg("a1", "a9", a("dup id", usage(11, 1)), 8)])
    # A parent line whose second top-level "id" (the one JSON keeps) is a fork's call id: the
    # fork's call is a copy, though the line starts with another id.
    user = json.dumps(msg("zz", None, user_msg("hi"), 2), separators=(",", ":"))[:-1] + ',"id":"c1"}'
    (folder / "p3.jsonl").write_text(json.dumps(header("P3"), separators=(",", ":")) + "\n" + user + "\n")
    write_session(folder / "f3.jsonl", [header("F3", parentSession=str(folder / "p3.jsonl")),
                                        msg("c1", None, a("copied", usage(13, 1)), 2)])
    # A fork whose first line is blank: its parent is known only once its header is read.
    text = (folder / "f.jsonl").read_text().replace('"id":"F"', '"id":"F2"')
    (folder / "f2.jsonl").write_text("\n" + text)


def test_odd_and_broken_lines(tmp_path, monkeypatch):
    _odd_files(tmp_path / "c")
    assert_same_reports(tmp_path / "c", monkeypatch=monkeypatch)


def test_claude_code_and_codex_folders_with_resumed_sessions_and_forks(tmp_path, monkeypatch):
    root = tmp_path / "c"
    project = root / "claude" / "projects" / "-home-user-project"
    for seed in (1, 30):
        generate_claude_sessions.generate_session(project, seed=seed, turns=5)
    shutil.copy(sorted(project.glob("*.jsonl"))[0], project / "resumed.jsonl")
    generate_codex_sessions.generate_session(root / "codex", seed=1, turns=4, fork=True)
    generate_codex_sessions.generate_session(root / "codex", seed=2, turns=3, hostile=True, torn=True)
    build_corpus(root / "pi")
    assert_same_reports(root, monkeypatch=monkeypatch)


@pytest.mark.skipif(not FIXTURES_PRESENT, reason=NO_FIXTURES)
def test_real_fixtures(tmp_path, monkeypatch):
    folder = tmp_path / "c"
    folder.mkdir()
    for source in sorted(FIXTURES_DIR.glob("*.jsonl")):
        shutil.copyfile(source, folder / source.name)
    assert_same_reports(folder, monkeypatch=monkeypatch)


def test_pi_lab_usage_no_cache_prints_the_scans_report_and_skipped_files(tmp_path, capsys):
    _odd_files(tmp_path / "c")
    assert main(["usage", str(tmp_path / "c"), "--no-cache", "--json", "--by", "session"]) == 0
    fast = capsys.readouterr()
    # The same command through every table (a cache folder: the scan path)
    assert main(["usage", str(tmp_path / "c"), "--cache-dir", str(tmp_path / "cache"), "--json", "--by", "session"]) == 0
    slow = capsys.readouterr()
    assert fast.out == slow.out
    assert sorted(fast.err.splitlines()) == sorted(slow.err.splitlines()) and "empty.jsonl" in fast.err


def test_a_day_the_python_sums_cannot_write_goes_through_the_sql(tmp_path):
    lines = [header("Y"), msg("u1", None, user_msg("hi"), 1),
             {**msg("a1", "u1", a("x", usage(3, 1)), 2), "timestamp": "0500-01-01T00:00:00.000Z"},
             {**msg("a2", "a1", a("y", usage(4, 1)), 3), "timestamp": "1969-12-31T23:59:59.000Z"},
             {**msg("a3", "a2", a("z", usage(5, 1)), 4), "timestamp": "not a time"}]
    write_session(tmp_path / "c" / "y.jsonl", lines)
    expected, _ = _slow(tmp_path / "c", "day")
    got, _errors, _read = usage_fast.usage_report([tmp_path / "c"], "day", workers=1)
    assert got == expected and [r[0] for r in got["rows"]] == ["0500-01-01", "1969-12-31", None]


def test_the_progress_line_says_files_bytes_and_time_left(tmp_path, capsys):
    from pi_lab.corpus.corpus import _Progress

    bar = _Progress(4, True, 3_000_000_000)
    bar.started -= 10  # (ten seconds ago: a third of the bytes in 10 s leaves 20 s)
    bar.advance(1, 1_000_000_000)
    line = capsys.readouterr().err
    assert "1/4 files, 1.0 GB/3.0 GB, 0:2" in line and "left" in line
    silent = _Progress(4, False, 10)
    silent.advance(4, 10)
    assert capsys.readouterr().err == ""
