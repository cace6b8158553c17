"""The export holds nothing per entry past its use: its chunks are made as the page takes them,
and the context records are not kept to the end. The parts are the bytes they were."""

from __future__ import annotations

import gc
import inspect
import sys
import tracemalloc
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import copy_fixture, fixture_files, generated_session, write_session  # noqa: E402
from helpers import SEED_SECTION_14  # noqa: E402

import pi_lab.export.data as data  # noqa: E402
import pi_lab.export.html as html  # noqa: E402
from pi_lab.export.context import context_records, iter_context_records, messages_of  # noqa: E402
from pi_lab.export.views import FlatNames, projected_pairs, row_extras  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.session.flatten import flatten_tree  # noqa: E402
from pi_lab.view.context import context_at  # noqa: E402


def _linear(n: int) -> list[dict]:
    entries = [{"type": "session", "version": 3, "id": "lin", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}]
    parent = None
    for i in range(n):
        message = {"role": "user", "content": f"step {i}", "timestamp": i}
        entries.append({"type": "message", "id": f"e{i:05d}", "parentId": parent,
                        "timestamp": "2026-01-01T00:00:01.000Z", "message": message})
        parent = f"e{i:05d}"
    return entries


def _sessions(tmp_path: Path) -> list[SessionManager]:
    seed = [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]
    sources = [seed, *(generated_session(s, 220) for s in (20, 23, 27))]
    paths = [write_session(entries, tmp_path / f"s{n}.jsonl") for n, entries in enumerate(sources)]
    paths += [copy_fixture(p, tmp_path) for p in fixture_files()[:3]]
    return [SessionManager.open(str(p), read_only=True) for p in paths]


def test_a_rewriting_record_is_diffed_against_the_rows_the_page_rebuilds(tmp_path):
    """A compaction, context edit, branch summary or system message is sent as a diff of its
    parent's rows. Those rows are now projected again from the parent's path instead of
    rebuilt from every record kept so far: they must be exactly the rows the page rebuilds
    (messages_of), or the diff, and so the bytes of the export, would change."""
    checked = 0
    for sm in _sessions(tmp_path):
        flat = flatten_tree(sm.get_tree(), sm.leaf_id)
        records = context_records(flat.entries, flat.parents)
        flat_of = {id(entry): i for i, entry in enumerate(flat.entries)}
        names = FlatNames(flat.ids)
        for i, record in enumerate(records):
            if "d" not in record:
                continue
            path, k = [], record["b"]
            while k >= 0:
                path.append(flat.entries[k])
                k = flat.parents[k]
            path.reverse()
            again = row_extras(context_at(path)["messages"], projected_pairs(path), flat_of, names)
            assert messages_of(records, record["b"], extras=True) == again, (sm.session_file, i)
            checked += 1
    assert checked > 10


def test_the_records_of_a_linear_session_are_not_kept(tmp_path):
    """Each record was appended to a list the walk kept to the end (a linear session of a
    million entries held a million records and their rows)."""
    sm = SessionManager.open(str(write_session(_linear(3000), tmp_path / "lin.jsonl")), read_only=True)
    flat = flatten_tree(sm.get_tree(), sm.leaf_id)
    gc.collect()
    most = 0
    for n, record in enumerate(iter_context_records(flat.entries, flat.parents)):
        if n % 500 == 499:
            alive = sum(1 for o in gc.get_objects() if type(o) is dict and "b" in o and "s" in o)
            most = max(most, alive)
    assert n == 2999
    assert most < 10, most


def test_chunks_are_compressed_one_at_a_time(tmp_path, monkeypatch):
    """render_html compresses each chunk as export_data makes it: no two chunks' JSON (ten
    times the page's size together) are alive at once."""
    sm = SessionManager.open(str(write_session(generated_session(5, 2500), tmp_path / "g.jsonl")), read_only=True)
    alive: list[int] = []
    real_pack7 = html.pack7
    # The chunks' JSON is made by data._dumps: the blocks allocated on its lines.
    lines, first = inspect.getsourcelines(data._dumps)
    writer = [tracemalloc.Filter(True, data.__file__, lineno=first + k) for k in range(len(lines))]

    def pack7(part: bytes) -> str:
        if part[:1] == b"{":  # a chunk (the main part starts with its magic)
            snapshot = tracemalloc.take_snapshot().filter_traces(writer)
            alive.append(sum(1 for trace in snapshot.traces if trace.size >= 10_000))
        return real_pack7(part)

    monkeypatch.setattr(html, "pack7", pack7)
    tracemalloc.start()
    try:
        page = html.render_html(sm)
    finally:
        tracemalloc.stop()
    assert len(alive) >= 3 and max(alive) <= 1, alive
    assert 'id="pi-chunks"' in page


def test_streamed_and_listed_chunks_are_the_same_bytes(tmp_path):
    sm = SessionManager.open(str(write_session(generated_session(5, 2500), tmp_path / "g.jsonl")), read_only=True)
    main, streamed = data.export_data(sm)
    taken = list(streamed)
    again_main, listed = data.export_data(sm)
    assert again_main == main
    assert len(listed) == len(taken) == 3
    assert listed[0] == taken[0] and listed[-1] == taken[-1] and listed == taken  # (made into a list)
    assert list(listed) == taken  # iterated after indexing: the list kept
    with pytest.raises(RuntimeError):
        list(streamed)  # a stream is taken once
