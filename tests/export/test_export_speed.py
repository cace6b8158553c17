"""Exporting is fast with the same output: the children of every entry come from one index
(the manager's get_children scans the whole session), and the detail's raw JSON is indented
in native code whenever that gives Python's text exactly."""

from __future__ import annotations

import datetime
import decimal
import json
import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import copy_fixture, fixture_files, generated_session, write_session  # noqa: E402

from pi_lab.export.data import _IndexedChildren, export_data  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.view.detail import _pretty, _pretty_walk  # noqa: E402


def _sessions(tmp_path: Path) -> list[SessionManager]:
    paths = [copy_fixture(p, tmp_path) for p in fixture_files()]
    entries = generated_session(7, 300)
    # An id written twice: the manager keeps the first position and the last entry.
    twin = dict(entries[5], parentId=entries[9]["id"])
    odd = {"type": "message", "id": "odd", "parentId": ["not", "an", "id"], "timestamp": "2026-01-01T00:00:09Z",
           "message": {"role": "user", "content": "x"}}
    paths.append(write_session(entries + [twin, odd], tmp_path / "generated.jsonl"))
    return [SessionManager.open(str(p), read_only=True) for p in paths]


def test_children_index_lists_what_the_manager_lists(tmp_path):
    for sm in _sessions(tmp_path):
        indexed = _IndexedChildren(sm)
        for entry in sm.entries + [{"id": None}, {"id": "missing"}]:
            assert indexed.get_children(entry.get("id")) == sm.get_children(entry.get("id"))
        assert indexed.session_id == sm.session_id  # everything else is the manager's


def test_export_does_not_scan_the_session_per_entry(tmp_path):
    path = write_session(generated_session(3, 400), tmp_path / "s.jsonl")
    sm = SessionManager.open(str(path), read_only=True)
    calls = []
    original = sm.get_children
    sm.get_children = lambda parent_id: calls.append(parent_id) or original(parent_id)
    export_data(sm)
    assert len(calls) <= 1, f"get_children scanned the session {len(calls)} times"


def _tricky() -> list:
    deep: list = []
    at = deep
    for _ in range(1500):
        at.append([])
        at = at[0]
    loop: list = [1]
    loop.append(loop)
    return [
        None, True, 0, -0.0, 1e-05, 1e16, 1e300, 5e-324, 0.1, 123456789.125, 2**63, 2**70, -(2**80),
        float("nan"), float("inf"), "", "\x00\x1f\x7f\u2028\ufeff\"\\/\t\n", "\ud800 lone", {"\udc00": 1},
        {1: 2, True: 3, None: 4, 1.5: 5}, {(1, 2): 3}, (1, [2, ()]), {"a": {}, "b": [], "c": [{}]},
        datetime.datetime(2024, 1, 2, 3, 4, 5), decimal.Decimal("1.50"), b"bytes", {"s": {1, 2}},
        {"nested": {"x": [1, 2.5, "t", None, {"y": "ü日本🎉"}]}}, deep, loop, object(),
    ]


def test_pretty_is_json_dumps_indent_2(tmp_path):
    values = _tricky()
    for path in fixture_files():
        values += [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip().startswith(b"{")]
    values += generated_session(11, 200)
    for value in values:
        fast = _pretty(value)
        assert fast == _pretty_walk(value), repr(value)[:80]
        try:
            expected = json.dumps(value, ensure_ascii=False, indent=2, default=str)
        except (TypeError, ValueError, RecursionError):
            continue
        assert fast == expected, repr(value)[:80]


def test_pretty_takes_the_native_path_when_it_gives_the_walks_text(monkeypatch):
    """No timing (performance lives in bench/): the detail's indented JSON of an ordinary entry
    comes from orjson without the Python walk, and equals what the walk writes."""
    entry = {"type": "message", "id": "a", "parentId": None, "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "toolResult", "content": [{"type": "text", "text": f"line {k} " * 8}
                                                          for k in range(3000)],
                         "details": {"files": [{"path": f"/r/{k}", "size": k, "ok": k % 2 == 0} for k in range(3000)]}}}
    expected = _pretty_walk(entry)
    import pi_lab.view.detail as detail

    def no_walk(*args, **kwargs):
        raise AssertionError("the Python walk ran for an entry orjson writes exactly")

    monkeypatch.setattr(detail, "_pretty_walk", no_walk)
    assert _pretty(entry) == expected


@pytest.mark.parametrize("seed", [5])
def test_export_detail_unchanged_by_the_index(tmp_path, seed):
    """The records of an export equal what the plain view (no index) gives."""
    from pi_lab.view.payload import SessionView, entry_payload

    path = write_session(generated_session(seed, 250), tmp_path / "s.jsonl")
    sm = SessionManager.open(str(path), read_only=True)
    plain = SessionView.open(sm)
    import dataclasses

    indexed = dataclasses.replace(plain, sm=_IndexedChildren(sm))
    for entry in sm.entries:
        for full in (False, True):
            assert entry_payload(indexed, entry["id"], full) == entry_payload(plain, entry["id"], full)


def test_messages_of_stops_at_rows_already_known():
    """A deep session rebuilt a compaction's base rows from the root each time (O(depth) per
    compaction: most of the time of exporting the 100k session)."""
    from pi_lab.export.context import context_records, messages_of
    from pi_lab.view.rows import RowState

    entries = generated_session(13, 400)
    sm = SessionManager.open(str(write_session(entries, Path(__import__("tempfile").mkdtemp()) / "s.jsonl")),
                             read_only=True)
    flat = RowState(sm).flat
    records = context_records(flat.entries, flat.parents)

    class Counting(list):
        reads = 0

        def __getitem__(self, k):
            Counting.reads += 1
            return list.__getitem__(self, k)

    counted = Counting(records)
    deepest = max(range(len(records)), key=lambda i: len(messages_of(records, i)))
    chain = []
    at = deepest
    while at >= 0:
        chain.append(at)
        at = records[at]["b"]
    middle = chain[len(chain) // 2]
    known = {middle: messages_of(records, middle)}
    assert messages_of(counted, deepest, known) == messages_of(records, deepest)
    Counting.reads = 0
    messages_of(counted, deepest, known)
    assert Counting.reads == len(chain) // 2
