"""The engine's change feed (sm.changes_since) and the one file follower (FileTail)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers import cpu_growth

from pi_lab.session import SessionManager
from pi_lab.session.changes import ChangeCursor, Changes
from pi_lab.session.tail import FileReplaced, FileTail

USER = {"role": "user", "content": "hi", "timestamp": 1}
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop", "timestamp": 2}


def _persisted(tmp_path) -> SessionManager:
    sm = SessionManager.create(tmp_path, session_dir=tmp_path)
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    return sm


def _line(entry_id: str, parent: str | None, **fields) -> bytes:
    entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:09.000Z",
             "message": USER, **fields}
    return (json.dumps(entry, separators=(",", ":")) + "\n").encode()


def test_nothing_changed():
    sm = SessionManager.in_memory("/repo")
    cursor = sm.change_cursor
    changes = sm.changes_since(cursor)
    assert isinstance(changes, Changes) and isinstance(changes.cursor, ChangeCursor)
    assert changes == Changes(cursor, leaf_id=sm.leaf_id)
    assert changes.cursor == cursor


def test_own_appends_leaf_and_labels():
    sm = SessionManager.in_memory("/repo")
    start = sm.change_cursor
    first = sm.append_message(USER)
    second = sm.append_message(ASSISTANT)
    label = sm.append_label_change(first, "here")
    changes = sm.changes_since(start)
    assert [e["id"] for e in changes.appended] == [first, second, label]
    assert changes.leaf_moved and changes.leaf_id == label == sm.leaf_id
    assert changes.labels_changed == (first,)
    assert not changes.rebuilt
    # from the new cursor: only what comes after it
    sm.branch(first)
    later = sm.changes_since(changes.cursor)
    assert later.appended == () and later.leaf_moved and later.leaf_id == first
    assert sm.changes_since(later.cursor).leaf_moved is False
    sm.append_label_change(first, None)
    sm.append_label_change(second, "b")
    sm.append_label_change(first, "again")
    assert sm.changes_since(later.cursor).labels_changed == (first, second)


def test_new_session_is_a_rebuild():
    sm = SessionManager.in_memory("/repo")
    sm.append_message(USER)
    cursor = sm.change_cursor
    sm.new_session()
    changes = sm.changes_since(cursor)
    assert changes.rebuilt and changes.appended == ()
    assert not sm.changes_since(changes.cursor).rebuilt


def test_a_cursor_of_another_manager_is_a_rebuild():
    a = SessionManager.in_memory("/repo")
    b = SessionManager.in_memory("/repo")
    assert b.changes_since(a.change_cursor).rebuilt
    assert b.changes_since("not a cursor").rebuilt  # type: ignore[arg-type]


def test_refresh_reports_the_other_writers_lines(tmp_path):
    sm = _persisted(tmp_path)
    path = sm.session_file
    cursor = sm.change_cursor
    leaf = sm.leaf_id
    with open(path, "ab") as handle:
        handle.write(_line("ext00001", leaf) + _line("ext00002", "ext00001")[:-5])
    # the reader's own manager is pinned (it appended): open a follower of the file
    reader = SessionManager.open(path, read_only=True)
    reader_cursor = reader.change_cursor
    added = sm.refresh()
    changes = sm.changes_since(cursor)
    assert [e["id"] for e in added] == ["ext00001"] == [e["id"] for e in changes.appended]
    assert not changes.leaf_moved  # pinned by its own appends
    with open(path, "ab") as handle:
        handle.write(_line("ext00002", "ext00001")[-5:])
    assert [e["id"] for e in sm.changes_since(changes.cursor).appended] == []  # before refresh
    sm.refresh()
    assert [e["id"] for e in sm.changes_since(changes.cursor).appended] == ["ext00002"]
    reader.refresh()
    following = reader.changes_since(reader_cursor)
    assert [e["id"] for e in following.appended] == ["ext00002"] and not following.rebuilt
    assert following.leaf_id == reader.leaf_id == "ext00002"


def test_changes_cost_is_the_changes_not_the_session():
    """One append asked about in a session 4x longer costs about the same (a cost that followed
    the session would grow 4x)."""

    def grown_session(length: int):
        entries = [{"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}]
        parent = None
        for i in range(length):
            entries.append({"type": "message", "id": f"{i:08x}", "parentId": parent,
                            "timestamp": "2026-01-01T00:00:01.000Z", "message": USER})
            parent = f"{i:08x}"
        sm = SessionManager.in_memory("/repo", entries=entries)
        cursor = sm.change_cursor
        sm.append_message(USER)
        return sm, cursor

    sessions = {n: grown_session(n) for n in (50_000, 200_000)}
    sm, cursor = sessions[200_000]
    assert len(sm.changes_since(cursor).appended) == 1

    def ask(n: int) -> None:
        sm, cursor = sessions[n]
        for _ in range(10_000):
            sm.changes_since(cursor)

    assert cpu_growth(ask, 50_000, 200_000) < 2.5


# --------------------------------------------------------------------------- FileTail


def test_file_tail_complete_lines_and_partial(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb")
    tail = FileTail(str(path))
    chunk = tail.read()
    assert (chunk.start, chunk.data, chunk.size) == (0, b"a\nb", 3)
    assert chunk.complete == b"a\n" and chunk.partial == b"b"
    tail.advance(len(chunk.complete))
    with open(path, "ab") as handle:
        handle.write(b"c\nd\n")
    chunk = tail.read()
    assert chunk.start == 2 and chunk.complete == b"bc\nd\n" and chunk.partial == b""
    tail.advance(len(chunk.complete))
    assert tail.read().data == b""


def test_file_tail_detects_shrink_and_replace(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\n")
    st = os.stat(path)
    tail = FileTail(str(path), offset=4, size=4, identity=(st.st_dev, st.st_ino))
    with open(path, "r+b") as handle:
        handle.truncate(2)
    with pytest.raises(FileReplaced, match="shrank from 4 to 2 bytes"):
        tail.read()
    other = tmp_path / "g.jsonl"
    other.write_bytes(b"a\nb\nc\n")
    shutil.move(str(other), str(path))
    with pytest.raises(ValueError, match="was replaced by another file"):
        tail.read()


def test_refresh_raises_on_a_replaced_file(tmp_path):
    sm = _persisted(tmp_path)
    replacement = tmp_path / "other"
    replacement.write_bytes(open(sm.session_file, "rb").read() + _line("x0000001", None))
    os.replace(replacement, sm.session_file)
    with pytest.raises(FileReplaced):
        sm.refresh()
