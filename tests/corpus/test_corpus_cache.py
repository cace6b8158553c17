"""Cache invalidation, bad input, the process pool and the no-write guarantee."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from corpus_builders import build_corpus
from helpers import asst_msg, msg, usage

import pi_lab.corpus.batches as corpus_module
from pi_lab.corpus import Corpus


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: its sha256 and mtime (to prove nothing was written)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            out[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return out


def same_tables(a: Corpus, b: Corpus) -> bool:
    return all(getattr(a, n).equals(getattr(b, n)) for n in (
        "sessions", "entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries"))


def test_second_scan_is_served_from_the_cache_and_a_grown_file_is_reread(tmp_path):
    files = build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    first = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert first.stats["read"] == 5 and first.stats["cached"] == 0
    second = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert second.stats["read"] == 0 and second.stats["cached"] == 5
    assert same_tables(first, second)
    # pi appends a call to O: only O is read again, and the new call is in the tables
    line = msg("a9", "a3", asst_msg("more", model="claude-sonnet-4-5", use=usage(7, 1)), 30)
    with open(files["O"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    third = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert third.stats["read"] == 1 and third.stats["cached"] == 4
    assert "a9" in third.model_calls.column("entry_id").to_pylist()
    fresh = Corpus.scan(tmp_path / "s", cache=False, workers=1)
    assert same_tables(third, fresh)
    # a removed file leaves the tables
    files["L"].unlink()
    fourth = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert "L" not in fourth.sessions.column("session_id").to_pylist()
    assert fourth.stats["read"] == 0


def test_replaced_file_with_the_same_size_is_reread(tmp_path):
    files = build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    data = files["L"].read_bytes().replace(b'"id":"L"', b'"id":"M"')
    replacement = files["L"].with_suffix(".new")
    replacement.write_bytes(data)
    os.replace(replacement, files["L"])  # new inode, same size
    again = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert again.stats["read"] == 1
    assert "M" in again.sessions.column("session_id").to_pylist()


def test_corrupt_cache_is_rebuilt(tmp_path):
    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    first = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    damaged = list(cache.rglob("entries.arrow"))
    assert damaged
    for path in damaged:
        path.write_bytes(b"not an arrow file at all")
    second = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert second.stats["read"] == 5 and second.errors == []
    assert same_tables(first, second)
    third = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert third.stats["cached"] == 5


def test_scanning_never_writes_in_the_sessions_folder(tmp_path):
    build_corpus(tmp_path / "s")
    v1 = tmp_path / "s" / "v1.jsonl"  # format 1: migrated in memory only
    v1.write_text('{"type":"session","id":"V1","timestamp":"2025-12-01T10:00:00.000Z","cwd":"/x"}\n'
                  '{"type":"message","timestamp":"2025-12-01T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}', encoding="utf-8")
    before = snapshot(tmp_path / "s")
    c = Corpus.scan(tmp_path / "s", cache=tmp_path / "cache", workers=1)
    Corpus.scan(tmp_path / "s", cache=True, workers=1)
    assert snapshot(tmp_path / "s") == before
    assert "V1" in c.sessions.column("session_id").to_pylist()


def test_bad_files_go_to_errors_and_half_lines_wait(tmp_path):
    files = build_corpus(tmp_path / "s")
    (tmp_path / "s" / "empty.jsonl").write_bytes(b"")
    (tmp_path / "s" / "notes.jsonl").write_text('{"hello": "world"}\n', encoding="utf-8")
    (tmp_path / "s" / "binary.jsonl").write_bytes(b"\x00\x01\x02 not json\n")
    os.mkfifo(tmp_path / "s" / "pipe.jsonl")
    with open(files["O"], "ab") as handle:
        handle.write(b'{"type":"message","id":"half","parentId":"a3","timestamp":"2026-07-29T09:')
    c = Corpus.scan([tmp_path / "s", tmp_path / "missing"], cache=False, workers=1)
    reasons = {Path(p).name: r for p, r in c.errors}
    assert set(reasons) == {"empty.jsonl", "notes.jsonl", "binary.jsonl", "pipe.jsonl", "missing"}
    assert "empty" in reasons["empty.jsonl"]
    assert "session header" in reasons["notes.jsonl"]
    assert "FIFO" in reasons["pipe.jsonl"]
    assert reasons["missing"] == "no such file or directory"
    o = [r for r in c.sessions.to_pylist() if r["session_id"] == "O"][0]
    assert o["partial_last_line"] is True and o["skipped_lines"] == 0
    assert "half" not in c.entries.column("entry_id").to_pylist()
    assert c.sessions.num_rows == 5


def test_process_pool_gives_the_same_tables(tmp_path, monkeypatch):
    build_corpus(tmp_path / "s")
    for i in range(6):  # more files than batches, so every worker gets some
        build_corpus(tmp_path / "s" / f"copy{i}")
    monkeypatch.setattr(corpus_module, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(corpus_module, "SPAWNED_POOL_MIN_BYTES", 0)  # (a fork server when threads run)
    pooled = Corpus.scan(tmp_path / "s", cache=False, workers=2)
    single = Corpus.scan(tmp_path / "s", cache=False, workers=1)
    assert pooled.sessions.num_rows == 35
    assert same_tables(pooled, single)


def test_default_paths_follow_pi_coding_agent_dir(tmp_path, monkeypatch):
    build_corpus(tmp_path / "agent" / "sessions" / "--repo--")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    c = Corpus.scan(workers=1)
    assert c.sessions.num_rows == 5
    assert (Path(os.environ["XDG_CACHE_HOME"]) / "pi_lab" / "corpus").is_dir()  # the default cache


def test_progress_bar_only_when_asked(tmp_path, capsys):
    build_corpus(tmp_path / "s")
    Corpus.scan(tmp_path / "s", cache=False, workers=1)
    assert capsys.readouterr().err == ""
    Corpus.scan(tmp_path / "s", cache=False, workers=1, progress=True)
    assert "5/5" in capsys.readouterr().err


def test_unchanged_thousand_sessions_scan_again_without_reading_a_file(tmp_path):
    """What makes the second scan fast: no file is read again. Its time is bench/'s
    (corpus_bench.py, scale_bench.py), not a test's."""
    for i in range(200):
        build_corpus(tmp_path / "s" / f"d{i:03}")
    cache = tmp_path / "cache"
    cold = Corpus.scan(tmp_path / "s", cache=cache)
    assert cold.stats["files"] == 1000 and cold.sessions.num_rows == 1000
    again = Corpus.scan(tmp_path / "s", cache=cache)
    assert again.stats["read"] == 0 and again.stats["cached"] == 1000
    assert same_tables(cold, again)


def test_small_folders_are_read_in_process_when_workers_would_be_spawned(tmp_path, monkeypatch):
    """With other threads running (a Jupyter kernel) workers come from a fork server, which
    costs seconds: a folder below SPAWNED_POOL_MIN_BYTES is read right here instead."""
    import concurrent.futures

    build_corpus(tmp_path / "s")
    monkeypatch.setattr(corpus_module, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(corpus_module.threading, "active_count", lambda: 3)

    def refuse(*args, **kwargs):
        raise AssertionError("a process pool was started for a small folder")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refuse)
    c = Corpus.scan(tmp_path / "s", cache=False, workers=2)
    assert c.sessions.num_rows == 5 and c.errors == []
