"""The corpus cache is not trusted (issue #21): a table or report edited behind pi_lab's back,
a FIFO or link planted in it, a cache folder that is a link or someone else's, are all treated
as no cache (read again, with a warning), never followed, never blocking, never written to."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from corpus_builders import build_corpus

from pi_lab.cli import main
from pi_lab.corpus import Corpus

TIMEOUT = 120  # a safety net for the tests run against a cache that blocks (never reached otherwise)


def cache_folder(cache: Path) -> Path:
    """The one folder a scan made under ``cache`` (whatever its key)."""
    (folder,) = [p for p in cache.iterdir()]
    return folder


def generation(cache: Path) -> Path:
    (gen,) = cache_folder(cache).glob("gen-*")
    return gen


def truth(folder: Path, by: str = "day") -> list[dict]:
    return Corpus.scan(folder, cache=False, workers=1).usage(by=by).to_pylist()


def usage_in_a_process(folder: Path, cache: Path, by: str = "day") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pi_lab.cli", "usage", str(folder), "--by", by, "--json",
                           "--workers", "1", "--cache-dir", str(cache)],
                          capture_output=True, text=True, timeout=TIMEOUT)


def usage(folder: Path, cache: Path, capsys, by: str = "day") -> list[dict]:
    assert main(["usage", str(folder), "--by", by, "--json", "--workers", "1", "--cache-dir", str(cache)]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_cache_folder_is_private(tmp_path):
    build_corpus(tmp_path / "s")
    Corpus.scan(tmp_path / "s", cache=tmp_path / "cache", workers=1)
    folder = cache_folder(tmp_path / "cache")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in folder.rglob("*"):
        assert path.stat().st_uid == os.geteuid()
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_an_edited_table_is_not_believed(tmp_path, capsys, caplog):
    import pyarrow as pa
    import pyarrow.compute as pc

    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    Corpus.scan(tmp_path / "s", cache=cache, workers=1)  # tables cached, no report kept yet
    table_file = generation(cache) / "model_calls.arrow"
    table = pa.ipc.open_file(pa.BufferReader(table_file.read_bytes())).read_all()  # not mapped: rewritten below
    i = table.schema.get_field_index("input")  # (the builders' calls cost nothing; their tokens count)
    edited = table.set_column(i, table.schema.field(i), pc.multiply(table.column("input"), 1000))
    mode = table_file.stat().st_mode
    table_file.chmod(mode | 0o200)
    with pa.OSFile(str(table_file), "wb") as sink, pa.ipc.new_file(sink, edited.schema) as writer:
        writer.write_table(edited)
    with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
        assert usage(tmp_path / "s", cache, capsys) == truth(tmp_path / "s")
    assert "checksum" in caplog.text


def test_an_edited_report_is_not_believed(tmp_path, capsys, caplog):
    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    right = usage(tmp_path / "s", cache, capsys, by="model")
    (kept,) = generation(cache).glob("usage-model.json")
    data = kept.read_bytes()
    # Whatever comes before the JSON is kept as it was: the edit is to the figures only.
    at = data.index(b"{")
    report = json.loads(data[at:])
    column = report["columns"].index("input")
    for row in report["rows"]:
        row[column] *= 1000
    kept.write_bytes(data[:at] + json.dumps(report).encode())
    with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
        assert usage(tmp_path / "s", cache, capsys, by="model") == right
    assert "checksum" in caplog.text


def _kept_file(cache: Path, which: str) -> Path:
    """The cache's file ``which``: its pointer, its list of files, a table or a report. For a
    table, the kept reports are removed, so that the next report reads the tables."""
    if which == "current":
        return cache_folder(cache) / "current"
    gen = generation(cache)
    if which == "list of files":
        return next(p for p in (gen / "manifest.json", gen / "files.json") if p.exists())
    if which.endswith(".arrow"):
        for report in gen.glob("usage-*.json"):
            report.unlink()
    return gen / which


PLANTED = ("current", "list of files", "model_calls.arrow", "usage-day.json")


@pytest.mark.parametrize("which", PLANTED)
def test_a_fifo_in_the_cache_never_blocks(tmp_path, which):
    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    first = usage_in_a_process(tmp_path / "s", cache)
    assert first.returncode == 0, first.stderr
    path = _kept_file(cache, which)
    path.unlink()
    os.mkfifo(path)
    again = usage_in_a_process(tmp_path / "s", cache)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)
    if which != "usage-day.json":  # (a missing report is simply computed again)
        assert "not used" in again.stderr and "FIFO" in again.stderr, again.stderr
    # It was rebuilt: the next run is served from the cache again, quietly.
    third = usage_in_a_process(tmp_path / "s", cache)
    assert third.returncode == 0 and third.stderr == "" and third.stdout == first.stdout


@pytest.mark.parametrize("which", PLANTED)
def test_a_link_planted_in_the_cache_is_never_followed(tmp_path, capsys, which):
    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    right = usage(tmp_path / "s", cache, capsys)
    path = _kept_file(cache, which)
    planted = tmp_path / "elsewhere"
    planted.write_bytes(path.read_bytes())  # the same bytes: only the link is wrong
    path.unlink()
    path.symlink_to(planted)
    assert usage(tmp_path / "s", cache, capsys) == right
    # The link was not read; the cache was rebuilt beside it and holds no link any more.
    assert [p for p in cache.rglob("*") if p.is_symlink()] == []


def _victim(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder someone cares about that looks like a cache: a file named current, gen-* folders."""
    victim = tmp_path / "victim"
    (victim / "gen-keep").mkdir(parents=True)
    (victim / "gen-keep" / "data.txt").write_text("mine", encoding="utf-8")
    (victim / "current").write_text("gen-keep", encoding="utf-8")
    return victim, _snapshot(victim)


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


def test_a_symlinked_cache_folder_is_never_written(tmp_path, caplog):
    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    expected = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    folder = cache_folder(cache)
    for path in sorted(folder.rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() else path.rmdir()
    folder.rmdir()
    victim, before = _victim(tmp_path)
    folder.symlink_to(victim)
    with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
        c = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert c.stats["read"] == 5
    assert c.usage().to_pylist() == expected.usage().to_pylist()
    assert _snapshot(victim) == before and folder.is_symlink()
    assert "symbolic link" in caplog.text


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing a folder's owner needs root")
def test_a_cache_folder_of_another_user_is_not_used(tmp_path, caplog):
    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    folder = cache_folder(cache)
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)
    before = _snapshot(folder)
    with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
        again = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert again.stats["read"] == 5 and _snapshot(folder) == before
    assert "owned by another user" in caplog.text


def test_a_cache_folder_open_to_others_is_not_used(tmp_path, caplog):
    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    folder = cache_folder(cache)
    folder.chmod(0o777)  # anyone could have put tables there
    before = _snapshot(folder)
    with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
        again = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert again.stats["read"] == 5 and _snapshot(folder) == before
    assert "open to others" in caplog.text


def test_a_cached_table_is_checked_when_first_used(tmp_path, caplog):
    """Issue 28: a cached scan hashed every table (seconds on 3 GB) before returning. Now the
    tables are mapped at the scan and each is hashed, before pyarrow reads it, when first used:
    an edited table is still never believed. The corpus then reads the sessions again, caches
    them anew and replaces every table."""
    import pyarrow as pa

    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    table_file = generation(cache) / "entries.arrow"
    data = bytearray(table_file.read_bytes())
    data[len(data) // 2] ^= 1  # one bit of the body
    table_file.chmod(table_file.stat().st_mode | 0o200)
    table_file.write_bytes(bytes(data))
    right = Corpus.scan(tmp_path / "s", cache=False, workers=1)
    with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
        c = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
        assert c.stats["read"] == 0 and "checksum" not in caplog.text  # nothing hashed yet
        assert c.usage(by="day").to_pylist() == right.usage(by="day").to_pylist()  # model_calls: intact
        assert "checksum" not in caplog.text
        assert c.entries.equals(right.entries)  # first use: the edit is found, the sessions read again
    assert "entries.arrow does not match its checksum" in caplog.text
    assert c.stats["read"] == 5
    for name in ("sessions", "model_calls", "messages"):
        assert isinstance(getattr(c, name), pa.Table) and getattr(c, name).equals(getattr(right, name))
    assert c.sql("SELECT count(*) AS n FROM entries").column("n").to_pylist() == [right.entries.num_rows]
    # The cache was written anew: the next scan is quiet and reads nothing.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pi_lab.corpus"):
        again = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
        assert again.entries.equals(right.entries) and again.stats["read"] == 0
    assert caplog.text == ""


def test_a_query_finds_every_table_whatever_the_case_of_its_name(tmp_path):
    """Tables are registered with DuckDB as a query names them (a cached one is checked when
    first used): as case-insensitively as DuckDB reads names, and all of them for a query
    that names none (SHOW TABLES)."""
    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    c = Corpus.scan(tmp_path / "s", cache=cache, workers=1)
    assert c.sql("SELECT count(*) AS n FROM Model_Calls").column("n").to_pylist() == [c.model_calls.num_rows]
    shown = set(c.sql("SHOW TABLES").column("name").to_pylist())
    assert {"sessions", "entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries"} <= shown
