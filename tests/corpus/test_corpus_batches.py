"""One file's tables built a batch of rows at a time equal the tables built whole, and the
extractor lets go of the file's bytes before it walks the entries."""

from __future__ import annotations

import tracemalloc

import pytest
from corpus_builders import build_corpus, write_session
from helpers import asst_msg, header, msg, usage, user_msg

import pi_lab.corpus.extract as extract_module
from pi_lab.corpus.extract import extract_file
from pi_lab.corpus.schema import TABLE_NAMES
from pi_lab.corpus.tables import columns_to_tables


def _linear(path, n: int):
    lines = [header("lin", cwd="/p")]
    parent = None
    for i in range(n):
        m = user_msg(f"step {i}") if i % 2 == 0 else asst_msg(f"done {i}", model="claude-sonnet-4-5", use=usage(10 + i, 3))
        lines.append(msg(f"e{i}", parent, m, i + 1))
        parent = f"e{i}"
    return write_session(path, lines)


@pytest.mark.parametrize("batch", [1, 3, 1000])
def test_batched_tables_equal_the_whole_tables(tmp_path, batch):
    files = list(build_corpus(tmp_path / "s").values()) + [_linear(tmp_path / "lin.jsonl", 41)]
    for path in files:
        whole = columns_to_tables(extract_file(path))
        parts = extract_module.extract_tables(path, batch_rows=batch)
        assert list(parts) == list(TABLE_NAMES)
        for name in TABLE_NAMES:
            assert parts[name].schema == whole[name].schema, (path, name)
            assert parts[name].equals(whole[name]), (path, name, batch)
    # the batching path really ran in pieces
    if batch == 1:
        assert extract_module.extract_tables(files[-1], batch_rows=batch)["entries"].column("entry_id").num_chunks == 41


def test_a_file_that_holds_no_session_raises_the_same(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(extract_module.FileUnreadable) as whole:
        extract_file(path)
    with pytest.raises(extract_module.FileUnreadable) as parts:
        extract_module.extract_tables(path)
    assert str(whole.value) == str(parts.value)


def test_the_file_bytes_are_let_go_before_the_walk(tmp_path, monkeypatch):
    """The bytes read from the file were held (by extract_file, then extract_bytes) through
    the whole walk and the columns: on a 1M-entry session, 319 MB more at the peak."""
    path = _linear(tmp_path / "lin.jsonl", 400)
    size = path.stat().st_size
    seen: list[int] = []
    real_run = extract_module._Extractor.run

    def run(self):
        snapshot = tracemalloc.take_snapshot()
        # the largest block still alive that the extractor's module allocated (the read)
        blocks = [s.size for s in snapshot.statistics("lineno")
                  if s.traceback[0].filename == extract_module.__file__]
        seen.append(max(blocks, default=0))
        return real_run(self)

    monkeypatch.setattr(extract_module._Extractor, "run", run)
    tracemalloc.start()
    try:
        extract_file(path)
    finally:
        tracemalloc.stop()
    assert seen and seen[0] < size, (seen, size)


def test_a_scan_reads_large_files_in_batches_and_gets_the_same_tables(tmp_path, monkeypatch):
    """Files past ``LARGE_FILE_BYTES`` go through extract_tables (a batch of rows at a time)
    inside Corpus.scan: the finished tables, forks' copies included, are the same."""
    import pi_lab.corpus.batches as corpus_module
    from pi_lab.corpus import Corpus

    build_corpus(tmp_path / "s")
    _linear(tmp_path / "s" / "lin.jsonl", 41)
    whole = Corpus.scan([tmp_path / "s"], workers=1, cache=False)
    seen = []
    monkeypatch.setattr(corpus_module, "LARGE_FILE_BYTES", 2000)
    monkeypatch.setattr(corpus_module, "_large_file_tables", lambda path: seen.append(path) or extract_module.extract_tables(path))
    batched = Corpus.scan([tmp_path / "s"], workers=1, cache=False)
    assert seen and len(seen) < len(whole.files)  # some files large, some not
    for name in TABLE_NAMES:
        assert batched.tables[name].equals(whole.tables[name]), name


def test_the_walk_lets_go_of_each_message_body_once_it_has_its_rows(tmp_path, monkeypatch):
    """Issue 21: the walk held every parsed entry of a linear path to the end (about 1.4 KB an
    entry at a million). Once entered, a message entry keeps only what a later compaction or
    edit reads (role, and an assistant's stop reason and model); an entry a context_edit names
    keeps its body (its edited messages are projected from it). The rows stay the same."""
    files = build_corpus(tmp_path / "s")
    seen: dict[str, list] = {}
    real_parts = extract_module._Extractor._parts

    def parts(self, size):
        seen[self.path] = list(self.entries)
        return real_parts(self, size)

    monkeypatch.setattr(extract_module._Extractor, "_parts", parts)
    for path in [*files.values(), _linear(tmp_path / "lin.jsonl", 41)]:
        extract_file(path)
    linear = seen[str(tmp_path / "lin.jsonl")]
    assert all(set(e["message"]) <= {"role", "stopReason", "model"} for e in linear)
    edited = {e.get("targetId") for e in seen[str(files["O"])] if e.get("type") == "context_edit"}
    kept = [e for e in seen[str(files["O"])] if e.get("id") in edited]
    assert kept and all("content" in e["message"] for e in kept)
