"""The scan parses a small file once, whole (``extract_file(lean=False)``), and reads a file
from ``LEAN_MIN_BYTES`` lean (skeletons, bodies read back as walked): both give the same rows,
and a whole scan gives the same tables either way."""

from __future__ import annotations

import json

import pytest
from corpus_builders import build_corpus, overflow_entries, parent_entries, write_session
from helpers import header
from test_corpus_lean_parse import _random_lines

import pi_lab.corpus.batches as batches
import pi_lab.corpus.extract as extract_module
import pi_lab.corpus.skeletons as skeletons
from pi_lab.corpus import Corpus
from pi_lab.corpus.schema import TABLE_NAMES


def _files(tmp_path):
    folder = tmp_path / "s"
    paths = list(build_corpus(folder).values())
    paths.append(write_session(folder / "po.jsonl", [header("P"), *parent_entries(), *overflow_entries()]))
    for seed in range(4):
        path = folder / f"r{seed}.jsonl"
        path.write_text("\n".join(_random_lines(seed, 150)) + "\n", encoding="utf-8")
        paths.append(path)
    return folder, paths


def test_a_file_read_whole_gives_the_rows_of_the_lean_read(tmp_path):
    _folder, paths = _files(tmp_path)
    for path in paths:
        assert repr(extract_module.extract_file(path, lean=False)) == repr(extract_module.extract_file(path)), path


def _count_lean_reads(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = skeletons.read_lean

    def counted(path, first, handle):
        seen.append(path)
        return real(path, first, handle)

    monkeypatch.setattr(extract_module, "read_lean", counted)
    return seen


@pytest.mark.parametrize("workers", [1, 2])
def test_a_scan_reading_small_files_whole_gives_the_tables_of_the_lean_scan(tmp_path, monkeypatch, workers):
    folder, paths = _files(tmp_path)
    seen = _count_lean_reads(monkeypatch)
    whole = Corpus.scan([folder], workers=1, cache=False)
    assert seen == []  # (every file is small: each was parsed once)
    monkeypatch.setattr(batches, "LEAN_MIN_BYTES", 0)
    monkeypatch.setattr(batches, "POOL_MIN_BYTES", 0)  # (the pool too, when asked for)
    lean = Corpus.scan([folder], workers=workers, cache=False)
    if workers == 1:
        assert len(seen) == len(paths)  # (the lean path really ran)
    for name in TABLE_NAMES:
        assert lean.tables[name].equals(whole.tables[name]), name
    assert lean.errors == whole.errors


def test_the_threshold_picks_the_read_by_size(tmp_path, monkeypatch):
    folder, paths = _files(tmp_path)
    seen = _count_lean_reads(monkeypatch)
    sizes = sorted(p.stat().st_size for p in paths)
    limit = sizes[len(sizes) // 2]
    monkeypatch.setattr(batches, "LEAN_MIN_BYTES", limit)
    mixed = Corpus.scan([folder], workers=1, cache=False)
    assert sorted(seen) == sorted(str(p) for p in paths if p.stat().st_size >= limit)
    monkeypatch.setattr(batches, "LEAN_MIN_BYTES", 1 << 62)
    whole = Corpus.scan([folder], workers=1, cache=False)
    for name in TABLE_NAMES:
        assert mixed.tables[name].equals(whole.tables[name]), name
    assert json.dumps(mixed.errors) == json.dumps(whole.errors)
