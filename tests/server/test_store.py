"""The cache behind the viewer API: eviction, shared layouts and their delta history."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pi_lab.server.store import SessionStore, view_key

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}


def write(path: Path, count: int, sid: str = "s") -> Path:
    lines = [{**HEADER, "id": sid}]
    parent = None
    for i in range(count):
        lines.append({"type": "message", "id": f"e{i}", "parentId": parent, "timestamp": f"2026-01-01T00:00:{i % 60:02d}.000Z",
                      "message": {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}" if i % 2 == 0
                                  else [{"type": "text", "text": f"reply {i}"}]}})
        parent = f"e{i}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def append(path: Path, entry_id: str, parent: str, text: str) -> None:
    with open(path, "a") as handle:
        handle.write(json.dumps({"type": "message", "id": entry_id, "parentId": parent,
                                 "timestamp": "2026-01-01T00:01:00.000Z",
                                 "message": {"role": "user", "content": text}}) + "\n")


def test_sessions_beyond_the_byte_budget_are_dropped_oldest_first(tmp_path):
    paths = [str(write(tmp_path / f"{n}.jsonl", 40, sid=n)) for n in "abc"]
    size = Path(paths[0]).stat().st_size
    store = SessionStore(cache_bytes=size * 2 + 10)
    for path in paths:
        store.get(path)
    assert store.cached_paths() == paths[1:]
    store.get(paths[1])  # used again: now the newest
    store.get(paths[0])
    assert store.cached_paths() == [paths[1], paths[0]]


def test_the_session_being_read_is_kept_even_when_it_alone_is_too_big(tmp_path):
    path = str(write(tmp_path / "big.jsonl", 50))
    store = SessionStore(cache_bytes=10)
    assert store.get(path).sm.get_entry_count() == 50
    assert store.cached_paths() == [path]


def test_at_most_max_views_layouts_are_kept(tmp_path):
    store = SessionStore(max_views=2)
    loaded = store.get(str(write(tmp_path / "s.jsonl", 10)))
    for mode in ("default", "user-only", "all"):
        store.view(loaded, view_key(mode))
    assert list(loaded.views) == [view_key("user-only"), view_key("all")]


def test_layout_versions_never_repeat(tmp_path):
    store = SessionStore(max_views=1)
    loaded = store.get(str(write(tmp_path / "s.jsonl", 10)))
    seen = set()
    for mode in ("default", "user-only", "default", "user-only"):
        version = store.view(loaded, view_key(mode)).version
        assert version not in seen
        seen.add(version)


def test_a_layout_keeps_the_deltas_a_late_viewer_needs(tmp_path):
    path = write(tmp_path / "s.jsonl", 6)
    store = SessionStore()
    loaded = store.get(str(path))
    shared = store.view(loaded, view_key())
    start = shared.version
    parent = "e5"
    for i in range(3):
        append(path, f"n{i}", parent, f"new {i}")
        parent = f"n{i}"
        store.get(str(path))
        store.view(loaded, view_key())
    chain = shared.deltas_since(start)
    assert [d["from"] for d in chain] == [start, start + 1, start + 2]
    assert chain[-1]["to"] == shared.version
    assert shared.deltas_since(shared.version) == []
    assert shared.deltas_since(start - 1) is None  # unknown: the viewer needs the whole structure


def test_the_gauge_moves_forward_with_appends_and_equals_a_fresh_one(tmp_path):
    from pi_lab.view.payload import ViewSettings, gauge_payload

    path = write(tmp_path / "s.jsonl", 6)
    store = SessionStore()
    loaded = store.get(str(path))
    shared = store.view(loaded, view_key())
    settings = ViewSettings(context_window=50_000)
    store.gauge(loaded, shared, settings)
    append(path, "n0", "e5", "one more question " * 20)
    store.get(str(path))
    store.view(loaded, view_key())
    moved = store.gauge(loaded, shared, settings)
    fresh = gauge_payload(loaded.sm, settings)
    assert moved["leaf_id"] == "n0"
    assert (moved["tokens"], moved["estimated"], moved["message_count"]) == (fresh["tokens"], fresh["estimated"], fresh["message_count"])


def test_concurrent_first_reads_parse_the_file_once(tmp_path):
    path = str(write(tmp_path / "s.jsonl", 200))
    store = SessionStore()
    results = []
    threads = [threading.Thread(target=lambda: results.append(store.get(path))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(r) for r in results}) == 1


def test_session_info_names_the_recorded_model_and_nothing_answering(tmp_path, fixture_copy):
    store = SessionStore()
    loaded = store.get(str(fixture_copy("before-compaction.jsonl")))
    info = store.session_info(loaded)
    assert info["model"] and "/" in info["model"] and info["answering_model"] is None and info["read_only"] is True


def test_session_info_lists_the_write_actions_it_refuses(fixture_copy):
    from pi_lab.view.actions import ACTIONS

    store = SessionStore()
    info = store.session_info(store.get(str(fixture_copy("before-compaction.jsonl"))))
    assert info["write_actions"] == sorted(ACTIONS)


def test_a_file_that_is_not_a_session_is_a_pi_lab_error(tmp_path):
    # The message is the user's to read (the handler answers 422 with it), not a bug.
    import pytest

    from pi_lab.errors import PiLabError

    path = tmp_path / "odd.jsonl"
    path.write_text('{"type": -1, "id": "x"}\n')
    with pytest.raises(PiLabError, match="not a pi session header"):
        SessionStore().get(str(path))
