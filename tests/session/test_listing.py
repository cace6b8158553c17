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
