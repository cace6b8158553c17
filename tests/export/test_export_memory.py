"""What an export keeps per entry while it writes its chunks (bench/memory_bench.py: a
million entries). Structural facts, no timings: each was a per-entry map or list before."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import generated_session, write_session  # noqa: E402

from pi_lab.export.context import iter_context_records  # noqa: E402
from pi_lab.export.data import _IndexedChildren  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.session.flatten import flatten_tree  # noqa: E402


def _linear(count: int) -> list[dict]:
    entries: list[dict] = [{"type": "session", "version": 3, "id": "L", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/r"}]
    parent = None
    for n in range(count):
        role = "user" if n % 2 == 0 else "assistant"
        content = f"step {n}" if role == "user" else [{"type": "text", "text": f"done {n}"}]
        entries.append({"type": "message", "id": f"m{n}", "parentId": parent, "timestamp": "2026-01-01T00:00:01Z",
                        "message": {"role": role, "content": content, "timestamp": n}})
        parent = f"m{n}"
    return entries


def test_the_context_walk_keeps_no_map_of_every_entry(tmp_path):
    """The walk mapped every entry's object and every id to its flat index (two dicts of the
    whole session, 0.15 KB an entry, to the end of the export). A dict of plain ints and
    strings is not tracked by the collector, so the walk's own variables are looked at."""
    count = 3000
    sm = SessionManager.open(str(write_session(_linear(count), tmp_path / "lin.jsonl")), read_only=True)
    flat = flatten_tree(sm.get_tree(), sm.leaf_id)
    walk = iter_context_records(flat.entries, flat.parents)
    held: dict[str, int] = {}
    for n, _record in enumerate(walk):
        if n == count // 2:
            frame = walk.gi_frame
            assert frame is not None
            held = {name: len(value) for name, value in frame.f_locals.items()
                    if isinstance(value, dict) and len(value) >= count // 2}
    assert n == count - 1
    assert held == {}


def test_the_children_index_keeps_no_list_per_parent(tmp_path):
    """The index of children held a list per parent in a dict (0.14 KB an entry); it answers
    as the manager does (tests/export/test_export_speed.py) from arrays over file positions."""
    count = 3000
    sm = SessionManager.open(str(write_session(generated_session(4, count), tmp_path / "g.jsonl")), read_only=True)
    gc.collect()
    lists_before = sum(1 for o in gc.get_objects() if type(o) is list)
    indexed = _IndexedChildren(sm)
    gc.collect()
    made = sum(1 for o in gc.get_objects() if type(o) is list) - lists_before
    assert made < count // 10, made
    entry = sm.entries[count // 2]
    assert indexed.get_children(entry["id"]) == sm.get_children(entry["id"])


def test_the_timeline_is_walked_before_the_rows_are_laid_out(tmp_path, monkeypatch):
    """The timeline's walk (about 0.5 KB an entry for a moment) was made after the rows and the
    header's per-entry texts, so its memory came on top of theirs; walked first, they reuse it."""
    import pi_lab.export.data as data
    from pi_lab.view.requests import READ_OPS

    order: list[str] = []
    real_open = data.SessionView.open.__func__  # type: ignore[attr-defined]  (a classmethod's function)
    real_timeline = READ_OPS["timeline"]
    monkeypatch.setattr(data.SessionView, "open", classmethod(
        lambda cls, *args, **kwargs: order.append("rows") or real_open(cls, *args, **kwargs)))
    monkeypatch.setitem(READ_OPS, "timeline", lambda view, args: order.append("timeline") or real_timeline(view, args))
    sm = SessionManager.open(str(write_session(generated_session(6, 200), tmp_path / "g.jsonl")), read_only=True)
    data.export_data(sm)
    assert order[:2] == ["timeline", "rows"], order


def test_the_ids_with_children_are_not_kept_for_the_session(tmp_path):
    """The header's fact bits ask which ids have children; the view's per-manager cache kept
    that set (a million ids, about 50 MB) to the end of the export."""
    from pi_lab.export.data import export_data
    from pi_lab.view import compare_requests

    sm = SessionManager.open(str(write_session(generated_session(6, 200), tmp_path / "g.jsonl")), read_only=True)
    export_data(sm)
    assert compare_requests._PARENTS.get(sm) is None


def test_the_packed_chunks_wait_as_utf8(tmp_path):
    """The packed chunks wait for the header and the script to be written. As text, a part
    holding any of the escaped characters (U+0100..U+0102, nearly every part) takes two bytes
    a character: about 150 MB for a million entries where UTF-8 takes 80."""
    from pi_lab.export import html

    sm = SessionManager.open(str(write_session(generated_session(6, 2500), tmp_path / "g.jsonl")), read_only=True)
    pieces = html.page_pieces(sm)
    first = next(pieces)
    assert first.startswith("<!DOCTYPE html>")
    frame = pieces.gi_frame
    assert frame is not None
    waiting = frame.f_locals["encoded"]
    assert len(waiting) >= 2 and all(type(part) is bytes for part in waiting)
    rest = "".join(pieces)
    assert first + rest == html.render_html(sm)
