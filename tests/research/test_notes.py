"""The notes store: beside the sessions, append-only, safe under kill -9 and two writers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pi_lab import SessionManager
from pi_lab.data import recorded_session
from pi_lab.research import NoteStore, NoteStoreError


@pytest.fixture
def session(tmp_path):
    path = shutil.copy(recorded_session().path, tmp_path / "tiny.jsonl")
    return SessionManager.open(path, read_only=True)


def _bytes(path) -> bytes:
    return open(path, "rb").read()


def test_add_edit_remove_and_the_session_file_is_untouched(tmp_path, session):
    before = _bytes(session.session_file)
    store = NoteStore(tmp_path / "notes.jsonl")
    entry = session.get_branch()[5]["id"]
    note = store.add(session, entry, "claims the tests pass without running them", tag="unverified-claim",
                     author="ada")
    assert (note.session_id, note.entry_id, note.tag, note.author, note.scope) == \
        (session.session_id, entry, "unverified-claim", "ada", "entry")
    assert note.session_file == session.session_file
    store.edit(note.id, text="claims the tests pass; never ran pytest", tag="claim")
    second = store.add(session, entry, "second look", tag="claim")
    assert [n.text for n in store.notes(session.session_id)] == ["claims the tests pass; never ran pytest", "second look"]
    store.remove(second.id)
    assert [n.id for n in store.notes()] == [note.id]
    assert store.tags() == ["claim"]
    assert _bytes(session.session_file) == before
    # the file is plain JSON Lines, one operation a line, readable without pi_lab
    ops = [json.loads(line)["op"] for line in open(tmp_path / "notes.jsonl")]
    assert ops == ["add", "edit", "add", "remove"]


def test_range_and_branch_scopes_and_unknown_entries(tmp_path, session):
    store = NoteStore(tmp_path / "n.jsonl")
    ids = [e["id"] for e in session.get_branch()]
    ranged = store.add(session, ids[3], "the JWT detour", end_entry_id=ids[9])
    assert ranged.scope == "range" and ranged.end_entry_id == ids[9]
    branch = store.add(session, ids[-1], "the whole route", scope="branch")
    assert branch.scope == "branch"
    assert [n.id for n in store.notes(entry_id=ids[9])] == [ranged.id]
    with pytest.raises(NoteStoreError, match="not in session"):
        store.add(session, "nope", "x")
    with pytest.raises(NoteStoreError, match="scope"):
        store.add(session, ids[0], "x", scope="galaxy")


def test_reading_a_missing_store_creates_nothing(tmp_path):
    store = NoteStore(tmp_path / "none.jsonl")
    assert store.notes() == []
    assert store.table().num_rows == 0
    assert not (tmp_path / "none.jsonl").exists()


def test_table_columns(tmp_path, session):
    store = NoteStore(tmp_path / "n.jsonl")
    store.add(session, session.leaf_id, "end", tag="t", author="me")
    table = store.table()
    assert table.column_names[:4] == ["id", "session_id", "session_file", "entry_id"]
    row = table.to_pylist()[0]
    assert (row["note"], row["tag"], row["author"], row["source"], row["agent"]) == ("end", "t", "me", "person", "pi")


def test_a_torn_last_line_is_skipped_and_the_next_write_starts_a_fresh_line(tmp_path, session):
    path = tmp_path / "n.jsonl"
    store = NoteStore(path)
    kept = store.add(session, session.leaf_id, "kept")
    with open(path, "ab") as handle:
        handle.write(b'{"v": 1, "op": "add", "id": "torn", "at": "x", "note": {"session_id": "s", "entr')
    assert [n.id for n in store.notes()] == [kept.id]
    assert store.skipped_lines == [2]
    after = store.add(session, session.leaf_id, "after the tear")
    assert [n.id for n in store.notes()] == [kept.id, after.id]
    assert store.skipped_lines == [2]


def test_symlink_and_fifo_are_refused(tmp_path, session):
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(b"")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(NoteStoreError, match="symbolic link"):
        NoteStore(link).add(session, session.leaf_id, "x")
    assert target.read_bytes() == b""
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NoteStoreError, match="not a regular file"):
        NoteStore(fifo).notes()
    with pytest.raises(NoteStoreError, match="not a regular file"):
        NoteStore(fifo).add(session, session.leaf_id, "x")


_WRITER = textwrap.dedent("""
    import sys
    from pi_lab.research import NoteStore
    store = NoteStore(sys.argv[1])
    name, count = sys.argv[2], int(sys.argv[3])
    for i in range(count):
        store.add("session-" + name, f"{name}-{i}", "x" * 3000 + f" note {i} of writer {name}", tag=name)
    print("done", flush=True)
""")


def test_two_writers_lose_and_tear_nothing(tmp_path):
    path = tmp_path / "n.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name, "150"], stdout=subprocess.PIPE)
             for name in ("a", "b")]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    store = NoteStore(path)
    notes = store.notes()
    assert store.skipped_lines == []
    assert sorted(n.entry_id for n in notes if n.tag == "a") == sorted(f"a-{i}" for i in range(150))
    assert sorted(n.entry_id for n in notes if n.tag == "b") == sorted(f"b-{i}" for i in range(150))


def test_kill_minus_9_during_writes_loses_only_the_unfinished_note(tmp_path):
    path = tmp_path / "n.jsonl"
    for round_ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"k{round_}", "100000"],
                                stdout=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while (not path.exists() or path.stat().st_size < (round_ + 1) * 200_000) and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    store = NoteStore(path)
    notes = store.notes()
    # every complete line is a note; at most one torn line per kill
    assert len(store.skipped_lines) <= 5
    complete_lines = sum(1 for line in open(path, "rb").read().split(b"\n")[:-1] if line.strip().startswith(b"{")
                         and line.strip().endswith(b"}"))
    assert len(notes) == complete_lines
    # a writer after the kills still writes readable notes
    fresh = store.add("s", "e", "after the kills")
    assert store.get(fresh.id).text == "after the kills"
    for k in range(5):
        ids = [int(n.entry_id.split("-")[1]) for n in notes if n.tag == f"k{k}"]
        assert ids == list(range(len(ids)))  # no gap: only the last, unfinished note is missing
