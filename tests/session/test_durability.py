"""Interrupted writes and following a file that another process appends to."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from helpers import Clock, Ids, asst_msg, user_msg

from pi_lab.session import SessionManager
from pi_lab.session.errors import UnfinishedLineError


def make_session(tmp_path, n=5):
    sm = SessionManager.create("/repo", tmp_path, uuid_factory=Ids(), clock=Clock())
    for i in range(n):
        sm.append_message(user_msg(f"question {i}"))
        sm.append_message(asst_msg(f"answer {i}"))
    return sm


def test_torn_last_line_never_corrupts_earlier_lines(tmp_path):
    sm = make_session(tmp_path)
    path = sm.session_file
    complete = open(path, "rb").read()
    last_line_start = complete.rstrip(b"\n").rfind(b"\n") + 1
    for cut in range(last_line_start + 1, len(complete) - 1, 7):
        torn = tmp_path / f"torn-{cut}.jsonl"
        torn.write_bytes(complete[:cut])
        reopened = SessionManager.open(torn)
        assert len(reopened.entries) == len(sm.entries) - 1
        assert reopened.entries == sm.entries[:-1]
        assert open(torn, "rb").read() == complete[:cut]  # its writer may still finish it
        with pytest.raises(UnfinishedLineError, match="end_unfinished_line"):
            reopened.append_message(user_msg("too early"))
        assert reopened.end_unfinished_line()  # the user knows its writer is gone
        assert reopened.skipped_lines == [len(complete[:last_line_start].splitlines()) + 1]
        new_id = reopened.append_message(user_msg("after the crash"))
        again = SessionManager.open(torn)
        assert again.entries[:-1] == sm.entries[:-1] and again.leaf_id == new_id
        assert again.get_entry(new_id)["parentId"] == sm.entries[-2]["id"]


WRITER = textwrap.dedent(
    """
    import sys
    from pi_lab.session import SessionManager
    sm = SessionManager.open(sys.argv[1])
    big = "x" * 4_000_000
    print("ready", flush=True)
    i = 0
    while True:
        sm.append_message({"role": "user", "content": big if i % 3 == 0 else f"line {i}", "timestamp": i})
        i += 1
    """
)


def test_killed_writer_leaves_a_readable_file(tmp_path):
    sm = make_session(tmp_path, 1)
    proc = subprocess.Popen([sys.executable, "-c", WRITER, sm.session_file], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    time.sleep(0.4)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    reopened = SessionManager.open(sm.session_file)
    assert reopened.entries[:2] == sm.entries
    assert len(reopened.entries) > 2
    for entry in reopened.entries[2:]:
        assert entry["message"]["role"] == "user"
    if not open(sm.session_file, "rb").read().endswith(b"\n"):  # killed inside a line
        with pytest.raises(UnfinishedLineError):  # a slow writer looks the same: not ended unasked
            reopened.append_message(asst_msg("too early"))
        assert reopened.end_unfinished_line()
    reopened.append_message(asst_msg("still works"))
    final = SessionManager.open(sm.session_file)
    assert final.entries[-1]["message"]["content"][0]["text"] == "still works"
    assert open(sm.session_file, "rb").read().endswith(b"\n")


def test_refresh_reads_only_new_complete_lines(tmp_path):
    writer = make_session(tmp_path, 1)
    reader = SessionManager.open(writer.session_file)
    assert reader.refresh() == []
    new_id = writer.append_message(user_msg("live"))
    added = reader.refresh()
    assert [e["id"] for e in added] == [new_id] and reader.leaf_id == new_id
    # a half-written line is left for later
    line = json.dumps({"type": "message", "id": "zz", "parentId": new_id, "timestamp": "2026-07-29T10:00:00.000Z",
                       "message": {"role": "assistant", "content": [], "timestamp": 9}}).encode()
    with open(writer.session_file, "ab") as handle:
        handle.write(line[:20])
    assert reader.refresh() == []
    with open(writer.session_file, "ab") as handle:
        handle.write(line[20:] + b"\n")
    assert [e["id"] for e in reader.refresh()] == ["zz"]
    assert reader.entries == SessionManager.open(writer.session_file).entries


def test_refresh_after_own_appends_reads_nothing_twice(tmp_path):
    sm = make_session(tmp_path, 1)
    sm.append_message(user_msg("mine"))
    assert sm.refresh() == []
    assert len(sm.entries) == 3


def test_refresh_refuses_a_file_that_shrank(tmp_path):
    sm = make_session(tmp_path, 2)
    with open(sm.session_file, "r+b") as handle:
        handle.truncate(10)
    try:
        sm.refresh()
    except ValueError as error:
        assert "shrank" in str(error)
    else:
        raise AssertionError("expected an error")
    assert os.path.getsize(sm.session_file) == 10


def test_refresh_keeps_the_tree_current(tmp_path):
    writer = make_session(tmp_path, 2)
    reader = SessionManager.open(writer.session_file)
    before = reader.get_tree()
    first_user = writer.entries[0]["id"]
    writer.branch(first_user)
    new_id = writer.append_message(asst_msg("another answer"))
    writer.append_label_change(first_user, "start")
    reader.refresh()
    fresh = SessionManager.open(writer.session_file)

    def shape(roots):
        out, stack = [], [(n, None) for n in reversed(roots)]
        while stack:
            node, parent = stack.pop()
            out.append((node.entry["id"], parent, node.label))
            stack.extend((c, node.entry["id"]) for c in reversed(node.children))
        return out

    assert shape(reader.get_tree()) == shape(fresh.get_tree())
    assert any(e[0] == new_id for e in shape(reader.get_tree())) and len(before) == 1
    assert reader.get_tree()[0].label == "start"
