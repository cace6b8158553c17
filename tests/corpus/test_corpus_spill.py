"""A large corpus's scan spills its rows to disk batch by batch (pi_lab.corpus.spill): the
finished tables equal the in-memory ones (finish_tables), with and without the cache, with a
mix of cached and fresh files, and the temporary folder is private and goes, also on error."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from corpus_builders import build_corpus
from helpers import asst_msg, msg, usage
from test_corpus_agents import three_agents

import pi_lab.corpus.batches as corpus_module
import pi_lab.corpus.spill as spill_module
from pi_lab.corpus import Corpus
from pi_lab.corpus.schema import TABLE_NAMES


def _folder(root: Path) -> Path:
    """Forks, clones and look-alikes (twice), three agents, files that hold no session."""
    sessions = root / "s"
    build_corpus(sessions / "a")
    build_corpus(sessions / "b")
    three_agents(sessions / "agents")
    (sessions / "a" / "empty.jsonl").write_text("")
    (sessions / "a" / "notes.jsonl").write_text('{"hello": "world"}\n', encoding="utf-8")
    return sessions


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _assert_same(spilled: Corpus, held: Corpus) -> None:
    assert spilled.files == held.files and spilled.errors == held.errors
    for name in TABLE_NAMES:
        a, b = getattr(spilled, name), getattr(held, name)
        assert a.schema == b.schema, name
        assert a.equals(b), name


@pytest.fixture
def small_pieces(monkeypatch):
    """Spill whatever the size, in pieces of a few rows, into a temporary folder of the test's.

    A short one in the system's temporary folder, not under tmp_path: a process pool's
    forkserver puts its socket there, and a socket's path has room for about 100 bytes (a
    pytest-xdist worker's tmp_path is longer)."""
    temp = Path(tempfile.mkdtemp(prefix="pl-spill-"))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(spill_module, "CHUNK_BYTES", 3000)
    # (the large-file path too: its rows come in several batches of one file)
    monkeypatch.setattr(corpus_module, "LARGE_FILE_BYTES", 6000)
    yield temp
    shutil.rmtree(temp, ignore_errors=True)


def _spills(temp: Path) -> list[Path]:
    """The scan's spill folders in ``temp`` (a process pool may keep its own folder there)."""
    return list(temp.glob("pi-lab-corpus-*"))


def _both(monkeypatch, paths, **kw) -> tuple[Corpus, Corpus]:
    monkeypatch.setattr(spill_module, "SPILL_MIN_BYTES", 0)
    spilled = Corpus.scan(paths, **kw)
    monkeypatch.setattr(spill_module, "SPILL_MIN_BYTES", 1 << 62)
    held = Corpus.scan(paths, **{**kw, "cache": kw["cache"].with_name(kw["cache"].name + "-held") if kw.get("cache") else False})
    return spilled, held


@pytest.mark.parametrize("workers", [1, 2])
def test_spilled_tables_equal_the_held_ones(tmp_path, monkeypatch, small_pieces, workers):
    sessions = _folder(tmp_path)
    before = _listing(sessions)
    monkeypatch.setattr(corpus_module, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(corpus_module, "SPAWNED_POOL_MIN_BYTES", 0)
    made: list[int] = []
    real_add = spill_module.Spill.add

    def add(self, tables):
        made.append(stat.S_IMODE(os.stat(self.dir).st_mode))
        return real_add(self, tables)

    monkeypatch.setattr(spill_module.Spill, "add", add)
    spilled, held = _both(monkeypatch, sessions, cache=False, workers=workers)
    assert made and set(made) == {0o700}
    assert held.sessions.num_rows == 15 and len(held.errors) == 2
    assert sum(held.entries.column("copied").to_pylist()) > 0  # forks' and Codex's copies
    _assert_same(spilled, held)
    assert spilled.entries.column("entry_id").num_chunks > 1  # (written a chunk at a time)
    assert _spills(small_pieces) == []  # the spill's folder is gone
    assert _listing(sessions) == before  # nothing written beside the sessions


def test_cache_fill_and_mixed_rescan_equal_the_held_ones(tmp_path, monkeypatch, small_pieces):
    sessions = _folder(tmp_path)
    cache = tmp_path / "cache"
    spilled, held = _both(monkeypatch, sessions, cache=cache, workers=1)
    _assert_same(spilled, held)
    assert spilled.stats["read"] == 17 and spilled._generation is not None
    # the cache written by the spill serves the next scan as it is
    again, held_again = _both(monkeypatch, sessions, cache=cache, workers=1)
    assert again.stats["cached"] == 15 and again.stats["read"] == 2  # (the two bad files)
    _assert_same(again, held_again)
    _assert_same(again, held)
    # a grown fork and a new file: the others' rows come from the cache, their marks recomputed
    fork = next(p for p in (sessions / "a").rglob("*.jsonl") if "F" in p.read_text(encoding="utf-8")[:200])
    with open(fork, "a", encoding="utf-8") as handle:
        handle.write(__import__("json").dumps(msg("z9", None, asst_msg("more", model="m", use=usage(7, 1)), 40)) + "\n")
    build_corpus(sessions / "c")
    mixed, held_mixed = _both(monkeypatch, sessions, cache=cache, workers=1)
    assert mixed.stats["cached"] >= 10 and mixed.stats["read"] >= 7
    _assert_same(mixed, held_mixed)
    assert "z9" in mixed.entries.column("entry_id").to_pylist()
    assert _spills(small_pieces) == []


def test_the_spill_folder_goes_on_error(tmp_path, monkeypatch, small_pieces):
    sessions = _folder(tmp_path)
    monkeypatch.setattr(spill_module, "SPILL_MIN_BYTES", 0)

    def fail(self, files, sink):
        assert any(Path(self.dir).iterdir())  # rows were spilled
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(spill_module.Spill, "finish", fail)
    with pytest.raises(RuntimeError, match="disk on fire"):
        Corpus.scan(sessions, cache=tmp_path / "cache", workers=1)
    assert _spills(small_pieces) == []
    # no generation was left in the cache either
    assert not any(p.name.startswith("gen-") for p in (tmp_path / "cache").rglob("gen-*"))


def _count_parts(monkeypatch) -> list[str]:
    """The files whose rows came part by part from ``table_parts`` (a large file spilled as
    it is read, in this process)."""
    import pi_lab.corpus.extract as extract_module

    streamed: list[str] = []
    real = extract_module.table_parts

    def parts(path, *args, **kw):
        streamed.append(str(path))
        yield from real(path, *args, **kw)

    monkeypatch.setattr(extract_module, "table_parts", parts)
    return streamed


def test_a_large_file_read_here_is_spilled_part_by_part(tmp_path, monkeypatch, small_pieces):
    sessions = _folder(tmp_path)
    streamed = _count_parts(monkeypatch)
    spilled, held = _both(monkeypatch, sessions, cache=False, workers=1)
    assert streamed  # (the large-file path streamed into the spill)
    _assert_same(spilled, held)


def test_a_large_file_that_fails_halfway_takes_its_rows_back(tmp_path, monkeypatch, small_pieces):
    """A lean read that finds the file rewritten after some parts were spilled: those rows go
    and the file is read again whole; any other failure halfway leaves none of its rows and
    names the file in the errors."""
    import pi_lab.corpus.extract as extract_module
    from pi_lab.corpus.skeletons import FileChanged

    sessions = _folder(tmp_path)
    real = extract_module.table_parts
    failing: dict[str, type[BaseException]] = {}

    def parts(path, *args, **kw):
        for n, part in enumerate(real(path, *args, **kw)):
            yield part
            error = failing.get(str(path))
            if error is not None and n == 2 and kw.get("lean", True):
                raise error("halfway")

    monkeypatch.setattr(extract_module, "table_parts", parts)
    large = [str(p) for p in sorted(sessions.rglob("*.jsonl")) if p.stat().st_size >= corpus_module.LARGE_FILE_BYTES]
    assert len(large) >= 2
    failing[large[0]] = FileChanged
    spilled, held = _both(monkeypatch, sessions, cache=False, workers=1)
    _assert_same(spilled, held)
    failing[large[0]] = OSError
    monkeypatch.setattr(spill_module, "SPILL_MIN_BYTES", 0)
    broken = Corpus.scan(sessions, cache=False, workers=1)
    assert large[0] in dict(broken.errors)
    from pi_lab.corpus.schema import utf8_safe

    for name in TABLE_NAMES:
        assert utf8_safe(large[0]) not in set(getattr(broken, name).column("file").to_pylist()), name
    assert broken.sessions.num_rows == held.sessions.num_rows - 1
