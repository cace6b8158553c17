"""Session directories, discovery, continue-recent and listing (session-format.md §1, §10)."""

from __future__ import annotations

import os
import time

import pytest
from helpers import Clock, Ids, asst_msg, user_msg

from pi_lab.session import SessionManager
from pi_lab.session.paths import default_session_dir, find_most_recent_session, session_dir_name


@pytest.fixture(autouse=True)
def agent_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    return tmp_path / "agent"


def test_project_directory_name():
    assert session_dir_name("/home/ann/proj") == "--home-ann-proj--"
    assert session_dir_name("/home/ann/a:b") == "--home-ann-a-b--"


def test_default_dir_is_created_under_the_agent_dir(agent_dir):
    directory = default_session_dir("/home/ann/proj")
    assert directory == str(agent_dir / "sessions" / "--home-ann-proj--") and os.path.isdir(directory)
    sm = SessionManager.create("/home/ann/proj")
    assert os.path.dirname(sm.session_file) == directory


def started(cwd, directory=None, text="hello"):
    sm = SessionManager.create(cwd, directory)
    sm.append_message(user_msg(text))
    sm.append_message(asst_msg("hi"))
    return sm


def test_most_recent_skips_invalid_and_foreign_files(tmp_path):
    directory = tmp_path / "d"
    assert find_most_recent_session(str(directory)) is None
    directory.mkdir()
    (directory / "note.txt").write_text("x")
    older = started("/p", directory)
    time.sleep(0.02)
    (directory / "broken.jsonl").write_text('{"type":"message"}\n')
    (directory / "huge.jsonl").write_text("x" * (1024 * 1024 + 1))
    assert find_most_recent_session(str(directory)) == older.session_file
    time.sleep(0.02)
    newer = started("/q", directory)
    assert find_most_recent_session(str(directory)) == newer.session_file
    assert find_most_recent_session(str(directory), "/p") == older.session_file


def test_flat_shared_directory_filters_by_cwd(tmp_path):
    shared = tmp_path / "shared-dir"
    a = started("/project-a", shared, "from a")
    time.sleep(0.02)
    b = started("/project-b", shared, "from b")
    assert [i.path for i in SessionManager.list("/project-a", shared)] == [a.session_file]
    assert {i.path for i in SessionManager.list_all(shared)} == {a.session_file, b.session_file}
    assert SessionManager.continue_recent("/project-a", shared).session_file == a.session_file


def test_continue_recent_starts_new_when_nothing_found(tmp_path):
    sm = SessionManager.continue_recent("/nothing/here")
    assert sm.entries == [] and not os.path.exists(sm.session_file)


def test_session_info_fields(tmp_path):
    sm = SessionManager.create("/p", tmp_path, uuid_factory=Ids(), clock=Clock())
    sm.append_message({"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "ask"}], "timestamp": 1_800_000_000_000})
    sm.append_message(asst_msg("answer", ts=1_800_000_005_000))
    sm.append_session_info("  Named  ")
    (info,) = SessionManager.list("/p", tmp_path)
    assert info.id == sm.session_id and info.cwd == "/p" and info.name == "Named"
    assert info.message_count == 2 and info.first_message == "first ask"
    assert info.all_messages_text == "first ask answer"
    assert int(info.modified.timestamp() * 1000) == 1_800_000_005_000


def test_session_without_messages_is_listed_with_placeholder(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n')
    (info,) = SessionManager.list_all(tmp_path)
    assert info.first_message == "(no messages)" and info.message_count == 0


# ------------------------------------------------------------------ temporary files (issue 21)

_STALLED_FIRST_WRITE = """
import os, sys, time
from pi_lab.session import SessionManager, storage

def stall(fd):  # the temporary file is written: say so and wait to be killed
    print("written", flush=True)
    time.sleep(120)

storage.os.fsync = stall
sm = SessionManager.create("/p", sys.argv[1])
sm.append_message({"role": "user", "content": "x" * 100000, "timestamp": 1})
sm.append_message({"role": "assistant", "content": [], "timestamp": 2})
"""


def test_a_killed_first_write_leaves_a_temp_file_the_next_write_in_the_folder_removes(tmp_path):
    """A first write killed with -9 left `.<name>.<pid>.<hex>.tmp` (60 MB seen) that survived
    every later session in the folder: each write cleaned only its own name's leftovers."""
    import subprocess
    import sys

    folder = tmp_path / "sessions"
    folder.mkdir()
    child = subprocess.Popen([sys.executable, "-c", _STALLED_FIRST_WRITE, str(folder)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline() == "written\n"
    finally:
        child.kill()
        child.wait()
    (leftover,) = os.listdir(folder)
    assert leftover.startswith(".") and leftover.endswith(f".jsonl.{child.pid}.{leftover.split('.')[-2]}.tmp")
    assert SessionManager.list_all(folder) == []  # never listed as a session
    # A temp file of a live process (it may still become its file) and a stranger's file stay.
    live = f".2026-01-01T00-00-00-000Z_live.jsonl.{os.getpid()}.0123abcd.tmp"
    (folder / live).write_bytes(b"{}")
    (folder / f".notes.txt.{child.pid}.0123abcd.tmp").write_bytes(b"mine")
    sm = started("/p", folder)
    assert sorted(os.listdir(folder)) == sorted([live, f".notes.txt.{child.pid}.0123abcd.tmp",
                                                 os.path.basename(sm.session_file)])
    assert [info.path for info in SessionManager.list_all(folder)] == [sm.session_file]
