"""`pi-lab corpus` and `pi-lab usage` on the real fixtures (copied to a temp folder)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from pi_lab.cli import main
from pi_lab.corpus import Corpus


def copied_fixtures(fixtures_dir: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for source in fixtures_dir.glob("*.jsonl"):
        shutil.copyfile(source, folder / source.name)
    return folder


def test_corpus_command_writes_every_table(fixtures_dir, tmp_path, capsys):
    folder = copied_fixtures(fixtures_dir, tmp_path)
    assert main(["corpus", str(folder), "--out", str(tmp_path / "out"), "--workers", "1"]) == 0
    expected = Corpus.scan(folder, cache=False, workers=1)
    for name in ("sessions", "entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries"):
        table = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        assert table.equals(getattr(expected, name)), name
    printed = capsys.readouterr().out
    assert f"entries.parquet  {expected.entries.num_rows} rows" in printed


def test_usage_json_equals_the_library(fixtures_dir, tmp_path, capsys):
    folder = copied_fixtures(fixtures_dir, tmp_path)
    expected = Corpus.scan(folder, cache=False, workers=1)
    for by in ("day", "session", "model", "project"):
        assert main(["usage", str(folder), "--by", by, "--json", "--no-cache"]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert rows == expected.usage(by=by).to_pylist()
    assert main(["usage", str(folder), "--by", "model"]) == 0
    text = capsys.readouterr().out
    calls = sum(expected.usage(by="model").column("calls").to_pylist())
    assert text.splitlines()[-1].startswith("total") and f"{calls:,}" in text.splitlines()[-1]


def test_piped_run_has_no_progress_bar_and_reports_bad_files(fixtures_dir, tmp_path):
    folder = copied_fixtures(fixtures_dir, tmp_path)
    (folder / "broken.jsonl").write_text("nonsense\n", encoding="utf-8")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "pi_lab.cli", "usage", str(folder), "--by", "day"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "reading sessions" not in done.stderr
    assert "broken.jsonl" in done.stderr and "no JSON object" in done.stderr
    assert done.stdout.splitlines()[0].split()[:2] == ["day", "calls"]


def test_usage_of_nothing_fails(tmp_path, capsys):
    assert main(["usage", str(tmp_path / "nowhere"), "--no-cache"]) == 1
    assert "no such file" in capsys.readouterr().err


def test_terminal_gets_a_progress_bar(fixtures_dir, tmp_path):
    folder = copied_fixtures(fixtures_dir, tmp_path)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    leader, follower = os.openpty()  # stderr is a terminal, stdout a pipe
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pi_lab.cli", "usage", str(folder), "--no-cache"],
            stdout=subprocess.PIPE, stderr=follower, env=env, timeout=300,
        )
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0
    assert b"reading sessions" in seen and b"6/6" in seen


def test_corpus_command_never_writes_through_a_link_onto_a_session(tmp_path, capsys):
    from corpus_builders import build_corpus

    files = build_corpus(tmp_path / "s")
    session = files["P"]
    before = session.read_bytes()
    out = tmp_path / "out"
    out.mkdir()
    (out / "sessions.parquet").symlink_to(session)
    assert main(["corpus", str(tmp_path / "s"), "--out", str(out), "--workers", "1", "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert "symbolic link" in err and err.count("\n") == 1, err
    assert session.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["sessions.parquet"]  # refused before any table


def test_corpus_command_never_replaces_a_session_named_like_a_table(tmp_path, capsys):
    from corpus_builders import build_corpus

    files = build_corpus(tmp_path / "s")
    out = tmp_path / "out"
    out.mkdir()
    copy = out / "entries.parquet"
    copy.write_bytes(b"\n" + files["P"].read_bytes())  # a session pi opens (a blank first line)
    before = copy.read_bytes()
    assert main(["corpus", str(tmp_path / "s"), "--out", str(out), "--workers", "1", "--no-cache"]) == 1
    assert "already holds a pi session" in capsys.readouterr().err
    assert copy.read_bytes() == before
