"""Data safety: read-only opening, the second-writer guard, following a file another process
appends to, non-regular files, and lines nested deeper than orjson handles."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import Clock, Ids, asst_msg, user_msg

from pi_lab.errors import ConcurrentWriteError, NotARegularFile, PiLabError, ReadOnlySession
from pi_lab.session import InvalidSessionFile, SessionManager, load_entries_from_file, storage
from pi_lab.session._json import dumps
from pi_lab.session.errors import UnfinishedLineError
from pi_lab.session.paths import find_most_recent_session, list_sessions, session_info
from pi_lab.session.readonly import session_from_bytes
from pi_lab.session.storage import check_regular_file, read_session_header

V1 = (
    '{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/repo"}\n'
    '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'
    '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"timestamp":2}}\n'
)


def make_session(tmp_path, n=2):
    sm = SessionManager.create("/repo", tmp_path, uuid_factory=Ids(), clock=Clock())
    for i in range(n):
        sm.append_message(user_msg(f"question {i}"))
        sm.append_message(asst_msg(f"answer {i}"))
    return sm


def foreign_line(entry_id: str, parent: str | None, text: str = "from pi") -> bytes:
    """A line as another process (pi) writes it."""
    entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2025-12-01T10:00:00.000Z",
             "message": {"role": "user", "content": text, "timestamp": 5}}
    return dumps(entry) + b"\n"


def append_raw(path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ errors


def test_error_classes_follow_the_contract():
    assert issubclass(InvalidSessionFile, PiLabError) and issubclass(InvalidSessionFile, ValueError)
    for cls in (ReadOnlySession, ConcurrentWriteError, NotARegularFile):
        assert issubclass(cls, PiLabError)


# ------------------------------------------------------------------ read-only


def test_read_only_open_never_writes_a_v1_file_and_gives_stable_ids(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(V1)
    before = os.stat(path)
    first = SessionManager.open(path, read_only=True)
    second = SessionManager.open(path, read_only=True)
    assert path.read_text() == V1 and os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert first.read_only and first.header["version"] == 3
    assert [e["id"] for e in first.entries] == [e["id"] for e in second.entries]
    # The same ids as the server's reader of the same bytes (one rule, shared code).
    assert [e["id"] for e in first.entries] == [e["id"] for e in session_from_bytes(path.read_bytes()).entries]
    assert first.session_file == str(path)


def test_read_only_appends_raise_and_leaf_moves_still_work(tmp_path):
    sm = make_session(tmp_path)
    data = open(sm.session_file, "rb").read()
    ro = SessionManager.open(sm.session_file, read_only=True)
    first = ro.entries[0]["id"]
    ro.branch(first)
    assert ro.leaf_id == first
    ro.reset_leaf()
    assert ro.leaf_id is None
    for call in (lambda: ro.append_message(user_msg("x")), lambda: ro.append_session_info("n"),
                 lambda: ro.append_label_change(first, "l"), lambda: ro.branch_with_summary(first, "s")):
        with pytest.raises(ReadOnlySession) as caught:
            call()
        assert sm.session_file in str(caught.value) and "make_writable" in str(caught.value)
    assert ro.leaf_id is None and len(ro.entries) == len(sm.entries)
    assert open(sm.session_file, "rb").read() == data


def test_create_branched_session_from_a_read_only_v1_file_leaves_it_untouched(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(V1)
    ro = SessionManager.open(path, read_only=True)
    ids = [e["id"] for e in ro.entries]
    new_file = ro.create_branched_session(ids[-1])
    assert path.read_text() == V1
    assert not ro.read_only and ro.session_file == new_file
    branched = SessionManager.open(new_file)
    assert [e["id"] for e in branched.entries] == ids and branched.header["parentSession"] == str(path)
    ro.append_message(user_msg("on the copy"))
    assert SessionManager.open(new_file).leaf_id == ro.leaf_id


def test_write_plan_and_make_writable_rewrite_a_v1_file_atomically(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(V1)
    ro = SessionManager.open(path, read_only=True)
    assert ro.write_plan() == f"Rewrite {path} in format v3 (it is v1), then append"
    ids = [e["id"] for e in ro.entries]
    inode = os.stat(path).st_ino
    ro.make_writable()
    assert not ro.read_only
    assert os.stat(path).st_ino != inode  # replaced by rename, never truncated in place
    reopened = SessionManager.open(path)
    assert [e["id"] for e in reopened.entries] == ids and reopened.header["version"] == 3
    new = ro.append_message(user_msg("now writable"))
    assert SessionManager.open(path).leaf_id == new


def test_write_plan_for_a_current_file_is_a_plain_append(tmp_path):
    sm = make_session(tmp_path)
    ro = SessionManager.open(sm.session_file, read_only=True)
    assert ro.write_plan() == f"Append new entries to {sm.session_file}"
    ro.make_writable()
    ro.append_message(user_msg("more"))
    assert len(SessionManager.open(sm.session_file).entries) == len(sm.entries) + 1


def test_read_only_open_never_repairs_and_refresh_does_not_duplicate_the_last_line(tmp_path):
    sm = make_session(tmp_path)
    line = foreign_line("f1", sm.leaf_id)
    append_raw(sm.session_file, line[:-1])  # a writer is in the middle of it (no newline yet)
    data = open(sm.session_file, "rb").read()
    ro = SessionManager.open(sm.session_file, read_only=True)
    assert open(sm.session_file, "rb").read() == data  # no newline added
    assert ro.leaf_id == "f1"  # pi parses the unterminated line
    assert ro.write_plan().startswith(f"End the unfinished last line of {sm.session_file}")
    assert ro.refresh() == []
    append_raw(sm.session_file, b"\n" + foreign_line("f2", "f1"))
    assert [e["id"] for e in ro.refresh()] == ["f2"]
    assert [e["id"] for e in ro.entries].count("f1") == 1


def test_read_only_open_of_missing_empty_or_invalid_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        SessionManager.open(tmp_path / "missing.jsonl", read_only=True)
    assert not (tmp_path / "missing.jsonl").exists()
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(InvalidSessionFile, match="empty"):
        SessionManager.open(empty, read_only=True)
    assert empty.read_bytes() == b""  # a writable open would have written a header
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"message"}\n')
    with pytest.raises(InvalidSessionFile):
        SessionManager.open(bad, read_only=True)


def test_read_only_follows_a_live_file(tmp_path):
    writer = make_session(tmp_path, 1)
    ro = SessionManager.open(writer.session_file, read_only=True)
    new = writer.append_message(user_msg("live"))
    assert [e["id"] for e in ro.refresh()] == [new] and ro.leaf_id == new


# ------------------------------------------------------------------ the second-writer guard


def test_guard_picks_up_the_other_writers_lines_then_refuses(tmp_path):
    sm = make_session(tmp_path)
    leaf = sm.leaf_id
    extra = foreign_line("p1", leaf) + foreign_line("p2", "p1")
    append_raw(sm.session_file, extra)
    with pytest.raises(ConcurrentWriteError) as caught:
        sm.append_message(user_msg("mine"))
    error = caught.value
    assert [e["id"] for e in error.new_entries] == ["p1", "p2"]
    assert sm.session_file in str(error) and f"grew by {len(extra)} bytes" in str(error)
    # Nothing of ours was added; own appends pinned the leaf, so it stays on our branch.
    assert sm.get_entry("p2") is not None and sm.leaf_id == leaf
    on_disk = SessionManager.open(sm.session_file)
    assert [e["id"] for e in on_disk.entries] == [e["id"] for e in sm.entries]
    # A retry goes through; following the file again puts it after their lines.
    sm.leaf_pinned = False
    assert sm.leaf_id == "p2"
    mine = sm.append_message(user_msg("mine"))
    assert SessionManager.open(sm.session_file).get_entry(mine)["parentId"] == "p2"


def test_allow_concurrent_writes_appends_after_the_other_lines(tmp_path):
    sm = make_session(tmp_path)
    leaf = sm.leaf_id
    sm.allow_concurrent_writes = True
    append_raw(sm.session_file, foreign_line("p1", leaf))
    mine = sm.append_message(user_msg("mine"))
    reopened = SessionManager.open(sm.session_file)
    assert [e["id"] for e in reopened.entries][-2:] == ["p1", mine]
    # The append continues the user's branch: the other writer's line did not move the leaf.
    assert reopened.get_entry(mine)["parentId"] == leaf and sm.leaf_id == mine


def test_guard_refuses_a_shrunk_replaced_or_deleted_file(tmp_path):
    sm = make_session(tmp_path)
    with open(sm.session_file, "r+b") as handle:
        handle.truncate(os.path.getsize(sm.session_file) - 3)
    with pytest.raises(ConcurrentWriteError, match="shrank by 3 bytes"):
        sm.append_message(user_msg("x"))
    sm2 = make_session(tmp_path / "b")
    copy = sm2.session_file + ".copy"
    shutil.copyfile(sm2.session_file, copy)
    os.replace(copy, sm2.session_file)
    with pytest.raises(ConcurrentWriteError, match="replaced"):
        sm2.append_message(user_msg("x"))
    os.unlink(sm2.session_file)
    with pytest.raises(ConcurrentWriteError, match="deleted"):
        sm2.append_message(user_msg("x"))
    assert not os.path.exists(sm2.session_file)


def test_guard_never_joins_a_line_another_writer_is_still_writing(tmp_path):
    sm = make_session(tmp_path)
    sm.allow_concurrent_writes = True
    line = foreign_line("p1", sm.leaf_id)
    append_raw(sm.session_file, line[:20])
    original_sleep = storage.time.sleep

    def writer_continues(seconds):  # the other writer adds bytes while pi_lab waits
        if os.path.getsize(sm.session_file) == size_before:
            append_raw(sm.session_file, line[20:40])
        original_sleep(seconds)

    size_before = os.path.getsize(sm.session_file)

    storage.time.sleep = writer_continues
    try:
        with pytest.raises(ConcurrentWriteError, match="middle of a line"):
            sm.append_message(user_msg("mine"))
    finally:
        storage.time.sleep = original_sleep
    append_raw(sm.session_file, line[40:])
    mine = sm.append_message(user_msg("mine"))
    lines = open(sm.session_file, "rb").read().splitlines()
    assert lines[-2] == line[:-1] and json.loads(lines[-1])["id"] == mine


@pytest.mark.parametrize("allow", [False, True])
def test_an_unfinished_line_is_never_ended_by_an_append_whatever_its_age(tmp_path, allow):
    """Issue 21: the guard ended a line unchanged for 2 s and appended after it (its writer,
    only slow, then lost its entry). Now only the user's explicit call ends it."""
    sm = make_session(tmp_path)
    leaf = sm.leaf_id
    sm.allow_concurrent_writes = allow
    append_raw(sm.session_file, b'{"type":"message","id":"cut')
    for _ in range(2):
        with pytest.raises(UnfinishedLineError, match=r"middle of a line \(27 bytes.*sm.end_unfinished_line\(\)") as raised:
            sm.append_message(user_msg("refused"))
        assert isinstance(raised.value, ConcurrentWriteError) and raised.value.pending == 27
    assert open(sm.session_file, "rb").read().endswith(b'"id":"cut')
    assert sm.end_unfinished_line() is True  # the user: its writer is gone
    mine = sm.append_message(user_msg("mine"))
    assert sm.leaf_id == mine and sm.get_entry(mine)["parentId"] == leaf
    assert open(sm.session_file, "rb").read().endswith(b'"id":"cut\n' + dumps(sm.get_entry(mine)) + b"\n")


_SLOW_WRITER = textwrap.dedent(
    """
    import os, sys
    line = sys.argv[2].encode() + b"\\n"
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    os.write(fd, line[:40])
    print("half", flush=True)
    sys.stdin.readline()  # paused (a slow disk, a stopped process) until told to go on
    os.write(fd, line[40:])
    os.close(fd)
    """
)


def test_an_old_format_with_an_unfinished_line_is_not_rewritten_on_open(tmp_path):
    """Migrating on open rewrites the file, which would end (or drop) another writer's
    unfinished line: refused, saying how to do it on purpose."""
    path = tmp_path / "old.jsonl"
    data = V1.encode() + b'{"type":"message","timest'
    path.write_bytes(data)
    with pytest.raises(UnfinishedLineError, match=r"read_only=True.*make_writable\(\)"):
        SessionManager.open(path)
    assert path.read_bytes() == data
    ro = SessionManager.open(path, read_only=True)
    ro.make_writable()
    assert path.read_bytes().endswith(b"\n") and SessionManager.open(path).header["version"] == 3


def test_a_slow_writer_in_another_process_keeps_its_line(tmp_path):
    """Issue 21: a writer that writes 40 bytes of a line, pauses 3 s and finishes it lost that
    entry (`skipped_lines` [4, 6]): pi_lab ended the line after 2 s and appended its own."""
    sm = make_session(tmp_path)
    leaf = sm.leaf_id
    theirs = foreign_line("p1", leaf).rstrip(b"\n").decode()
    writer = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, sm.session_file, theirs],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "half\n"
        before = open(sm.session_file, "rb").read()
        with pytest.raises(ConcurrentWriteError):  # (UnfinishedLineError; before issue 21, "grew by 40 bytes")
            sm.append_message(user_msg("mine"))
        time.sleep(2.5)  # older than the 2 s after which the line used to be ended
        with pytest.raises(UnfinishedLineError):
            sm.append_message(user_msg("mine"))
        other = SessionManager.open(sm.session_file)  # a writable open leaves it too (pi would not)
        with pytest.raises(UnfinishedLineError):
            other.append_message(user_msg("also refused"))
        assert open(sm.session_file, "rb").read() == before
        writer.stdin.write("go on\n")
        writer.stdin.flush()
        assert writer.wait(timeout=60) == 0
    finally:
        writer.kill()
        writer.wait()
    with pytest.raises(ConcurrentWriteError, match="grew by") as raised:  # their line is read in first
        sm.append_message(user_msg("mine"))
    assert [e["id"] for e in raised.value.new_entries] == ["p1"]
    mine = sm.append_message(user_msg("mine"))
    reopened = SessionManager.open(sm.session_file)
    assert reopened.skipped_lines == [] and [e["id"] for e in reopened.entries][-2:] == ["p1", mine]
    assert reopened.get_entry("p1") == json.loads(theirs)
    assert [e["id"] for e in other.refresh()] == ["p1", mine]


def test_an_append_with_nothing_new_costs_one_fstat_and_no_read(tmp_path, monkeypatch):
    sm = make_session(tmp_path)
    calls = {"fstat": 0, "stat": 0, "read": 0}
    real_fstat, real_stat, real_read = os.fstat, os.stat, os.read

    def counting(name, real):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(os, "fstat", counting("fstat", real_fstat))
    monkeypatch.setattr(os, "stat", counting("stat", real_stat))
    monkeypatch.setattr(os, "read", counting("read", real_read))
    sm.append_message(user_msg("one more"))
    assert calls == {"fstat": 1, "stat": 0, "read": 0}


SECOND_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from pi_lab.session._json import dumps
    path, count = sys.argv[1], int(sys.argv[2])
    print("ready", flush=True)
    for i in range(count):
        line = dumps({"type": "custom", "customType": "other", "data": {"i": i, "pad": "y" * (i % 700)},
                      "id": f"other{i:04d}", "parentId": None, "timestamp": "2025-12-01T10:00:00.000Z"}) + b"\\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, line)  # one write per line, as pi's appendFileSync
        os.close(fd)
        if i % 7 == 0:
            time.sleep(0.0005)
    """
)


@pytest.mark.parametrize("allow", [True, False])
def test_a_real_second_process_loses_no_line_of_either_writer(tmp_path, allow):
    sm = make_session(tmp_path, 1)
    sm.allow_concurrent_writes = allow
    other = 400
    proc = subprocess.Popen([sys.executable, "-c", SECOND_WRITER, sm.session_file, str(other)],
                            stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    mine: list[str] = []
    refused = 0
    while proc.poll() is None or len(mine) < 200:
        try:
            mine.append(sm.append_custom_entry("mine", {"n": len(mine), "pad": "x" * (len(mine) % 500)}))
        except ConcurrentWriteError:
            refused += 1
        if len(mine) >= 2000:
            break
    assert proc.wait(timeout=60) == 0
    sm.refresh()
    lines = open(sm.session_file, "rb").read().split(b"\n")
    assert lines[-1] == b""
    parsed = [json.loads(line) for line in lines[:-1]]  # every line whole
    ids = [e.get("id") for e in parsed[1:]]
    assert sorted(i for i in ids if i.startswith("other")) == [f"other{i:04d}" for i in range(other)]
    assert [i for i in ids if i in set(mine)] == mine
    assert len(ids) == other + len(mine) + 2
    assert [e.get("id") for e in sm.file_entries[1:]] == ids  # memory matches the file, in its order
    if not allow:
        assert refused > 0


def test_refresh_after_own_append_returns_what_another_process_wrote_before_it(tmp_path, monkeypatch):
    sm = make_session(tmp_path)
    leaf = sm.leaf_id
    real = storage.append_bytes
    from pi_lab.session import file_sync as manager_module  # the guard and appends live there

    def other_writer_first(fd, payload):  # the other process writes between check and write
        append_raw(sm.session_file, foreign_line("p1", leaf))
        monkeypatch.setattr(manager_module, "append_bytes", real)
        return real(fd, payload)

    monkeypatch.setattr(manager_module, "append_bytes", other_writer_first)
    mine = sm.append_message(user_msg("mine"))
    assert [e["id"] for e in sm.refresh()] == ["p1"]
    assert sm.leaf_id == mine  # an own append pinned the leaf
    assert sm.refresh() == []
    # Memory is in file order: their line, then ours.
    assert [e["id"] for e in sm.entries] == [e["id"] for e in SessionManager.open(sm.session_file).entries]
    assert [e["id"] for e in sm.entries][-2:] == ["p1", mine]
    # The guard now sees the file as pi_lab left it: the next append is the fast path.
    sm.append_message(user_msg("again"))


# ------------------------------------------------------------------ the leaf while following


def test_the_leaf_follows_the_file_until_the_user_moves_it(tmp_path):
    writer = make_session(tmp_path)
    reader = SessionManager.open(writer.session_file)
    assert not reader.leaf_pinned
    a = writer.append_message(user_msg("a"))
    reader.refresh()
    assert reader.leaf_id == a
    first = reader.entries[0]["id"]
    reader.branch(first)
    assert reader.leaf_pinned
    writer.append_message(user_msg("b"))
    reader.refresh()
    assert reader.leaf_id == first
    reader.reset_leaf()
    writer.append_message(user_msg("c"))
    reader.refresh()
    assert reader.leaf_id is None
    reader.leaf_pinned = False
    assert reader.leaf_id == writer.leaf_id


def test_own_append_pins_the_leaf(tmp_path):
    writer = make_session(tmp_path)
    reader = SessionManager.open(writer.session_file)
    reader.allow_concurrent_writes = True
    mine = reader.append_message(user_msg("mine"))
    writer.allow_concurrent_writes = True
    writer.append_message(user_msg("theirs"))
    reader.refresh()
    assert reader.leaf_id == mine and reader.leaf_pinned


# ------------------------------------------------------------------ tail repair


def test_a_growing_last_line_is_left_to_its_writer_on_open(tmp_path):
    sm = make_session(tmp_path)
    line = foreign_line("p1", sm.leaf_id)
    append_raw(sm.session_file, line[:30])
    size = os.path.getsize(sm.session_file)
    reopened = SessionManager.open(sm.session_file)
    assert os.path.getsize(sm.session_file) == size  # no newline inside the line
    assert reopened.skipped_lines == []
    append_raw(sm.session_file, line[30:])
    assert [e["id"] for e in reopened.refresh()] == ["p1"] and reopened.skipped_lines == []


def test_a_writable_open_never_ends_an_unfinished_last_line(tmp_path):
    """pi ends it on open (and on the source of a fork); pi_lab leaves it to its writer
    (issue 21) until the user asks."""
    sm = make_session(tmp_path)
    append_raw(sm.session_file, b'{"type":"mess')
    fork = SessionManager.fork_from(sm.session_file, "/elsewhere", tmp_path / "forks")
    assert [e["id"] for e in fork.entries] == [e["id"] for e in sm.entries]
    reopened = SessionManager.open(sm.session_file)
    assert open(sm.session_file, "rb").read().endswith(b'{"type":"mess')
    assert reopened.end_unfinished_line() and open(sm.session_file, "rb").read().endswith(b'{"type":"mess\n')


# ------------------------------------------------------------------ non-regular files


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "2025-01-01T00-00-00-000Z_fifo.jsonl"
    os.mkfifo(path)

    def alarm(signum, frame):
        raise TimeoutError("blocked on a FIFO")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(5)
    yield path
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_a_fifo_is_never_opened_for_reading(fifo):
    with pytest.raises(NotARegularFile, match="FIFO"):
        check_regular_file(fifo)
    with pytest.raises(NotARegularFile, match="not a regular file"):
        SessionManager.open(fifo, read_only=True)
    with pytest.raises(NotARegularFile):
        SessionManager.open(fifo)
    with pytest.raises(NotARegularFile):
        load_entries_from_file(fifo)
    assert read_session_header(fifo) is None
    assert session_info(str(fifo)) is None


def test_listings_skip_a_fifo_and_a_folder_named_like_a_session(fifo, tmp_path):
    (tmp_path / "dir.jsonl").mkdir()
    real = make_session(tmp_path / "sub")
    shutil.copy(real.session_file, tmp_path)
    assert find_most_recent_session(str(tmp_path)) == str(tmp_path / os.path.basename(real.session_file))
    assert [i.path for i in list_sessions(str(tmp_path))] == [str(tmp_path / os.path.basename(real.session_file))]
    with pytest.raises(NotARegularFile, match="directory"):
        SessionManager.open(tmp_path / "dir.jsonl", read_only=True)


# ------------------------------------------------------------------ deep nesting


def nested(depth: int):
    value = {"leaf": [1.5, "s\u00e9", None, 10**30]}
    for i in range(depth):
        value = {"k": [value, i]} if i % 2 else {"k": value}
    return value


def deep_session_file(tmp_path, depth=3000) -> Path:
    sm = SessionManager.create("/repo", tmp_path / "src", uuid_factory=Ids(), clock=Clock())
    sm.append_message(user_msg("deep"))
    sm.append_custom_entry("deep", nested(depth))
    sm.append_message(asst_msg("after"))
    return Path(sm.session_file)


def test_a_3000_level_entry_is_written_read_forked_and_branched_byte_exact(tmp_path):
    source = deep_session_file(tmp_path)
    deep_line = source.read_bytes().split(b"\n")[2]
    assert deep_line.count(b'{"k":') == 3000
    sm = SessionManager.open(source)
    assert len(sm.entries) == 3
    forked = SessionManager.fork_from(source, "/repo", tmp_path / "fork")
    assert open(forked.session_file, "rb").read().split(b"\n")[2] == deep_line
    leaf = sm.leaf_id
    path = sm.create_branched_session(leaf)
    assert open(path, "rb").read().split(b"\n")[2] == deep_line
    assert SessionManager.open(path, read_only=True).get_entry(sm.entries[1]["id"]) is not None


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_deep_writer_gives_the_bytes_of_json_stringify(tmp_path):
    value = nested(3000)
    value["odd"] = [1e21, 1e-7, -0.0, 0.1 + 0.2, 2**64, "\ud800", "\u2028\x01\"\\"]
    ours = dumps(value)
    text = ours.decode("utf-8", "surrogatepass")
    (tmp_path / "in.json").write_text(text, encoding="utf-8", errors="surrogatepass")
    # Node's recursive JSON.stringify needs a larger stack for this depth (pi's own limit
    # is its stack: about 4,000 levels); the comparison is about bytes, not about that limit.
    out = subprocess.run(["node", "--stack-size=60000", "-e", "const fs=require('fs');process.stdout.write(JSON.stringify("
                          "JSON.parse(fs.readFileSync(process.argv[1],'utf8'))))", str(tmp_path / "in.json")],
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout == ours


# ------------------------------------------------------------------ create_branched_session failures


def test_a_failed_create_branched_session_leaves_the_manager_as_it_was(tmp_path, monkeypatch):
    sm = make_session(tmp_path)
    before = (sm.session_file, sm.session_id, sm.leaf_id, [e["id"] for e in sm.entries], sm.header)
    listing = sorted(os.listdir(tmp_path))

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        sm.create_branched_session(sm.entries[1]["id"])
    assert (sm.session_file, sm.session_id, sm.leaf_id, [e["id"] for e in sm.entries], sm.header) == before
    assert sorted(os.listdir(tmp_path)) == listing  # no half file, no temp file left
    monkeypatch.undo()
    sm.append_message(user_msg("still the old file"))
    assert SessionManager.open(before[0]).leaf_id == sm.leaf_id


def test_an_unwritable_entry_fails_create_branched_session_before_anything_changes(tmp_path):
    sm = make_session(tmp_path)
    data = {"value": 1}
    entry_id = sm.append_custom_entry("state", data)
    data["later"] = {1, 2}  # the caller changed the object after the append: no longer JSON
    before = (sm.session_file, sm.session_id, sm.leaf_id, len(sm.entries))
    listing = sorted(os.listdir(tmp_path))
    with pytest.raises(TypeError, match="set"):
        sm.create_branched_session(entry_id)
    assert (sm.session_file, sm.session_id, sm.leaf_id, len(sm.entries)) == before
    assert sorted(os.listdir(tmp_path)) == listing


def test_a_temp_file_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    path = tmp_path / "old.jsonl"
    path.write_text(V1)
    leftover = tmp_path / f".old.jsonl.{pid}.abcd1234.tmp"
    leftover.write_bytes(b'{"type":"sess')
    alive = tmp_path / f".old.jsonl.{os.getpid()}.abcd1234.tmp"  # a live writer's: kept
    alive.write_bytes(b"")
    SessionManager.open(path)  # migrates: a whole-file write
    assert not leftover.exists() and alive.exists()


def test_read_only_open_of_a_current_file_does_not_hash_it(tmp_path, monkeypatch):
    import hashlib

    sm = make_session(tmp_path)
    made = []
    real = hashlib.sha256
    monkeypatch.setattr(hashlib, "sha256", lambda *a: made.append(1) or real(*a))
    SessionManager.open(sm.session_file, read_only=True)
    assert made == []
