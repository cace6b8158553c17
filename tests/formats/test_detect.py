"""open_session and format detection: by content, never by name; nothing written."""

from __future__ import annotations

import os

import orjson
import pytest

import pi_lab
from pi_lab.formats import UnknownSessionFormat, detect_format
from pi_lab.session.protocol import ReadableSession

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
MESSAGE = {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
           "message": {"role": "user", "content": "hi", "timestamp": 1}}


def _write(path, lines: list[bytes]) -> str:
    path.write_bytes(b"".join(lines))
    return str(path)


def test_pi_file_with_any_name_is_recognised_and_opened_read_only(tmp_path):
    path = _write(tmp_path / "renamed.txt", [orjson.dumps(HEADER) + b"\n", orjson.dumps(MESSAGE) + b"\n"])
    before = os.stat(path)
    session = pi_lab.open_session(path)
    assert session.agent == "pi"
    assert isinstance(session, ReadableSession)
    assert session.read_only
    assert session.leaf_id == "a1"
    assert [e["id"] for e in session.get_branch()] == ["a1"]
    assert session.build_session_context().messages[0]["content"] == "hi"
    after = os.stat(path)
    assert (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns)


@pytest.mark.parametrize("prefix", [b"\n", b"   \n", b"\r\n", b"not json\n"])
def test_pi_header_after_lines_pi_skips(tmp_path, prefix):
    path = _write(tmp_path / "s.jsonl", [prefix, orjson.dumps(HEADER) + b"\n"])
    assert detect_format(path) == "pi"


def test_claude_code_lines_are_recognised(tmp_path):
    lines = [
        orjson.dumps({"type": "summary", "summary": "x", "leafUuid": "u0"}) + b"\n",
        orjson.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
                      "message": {"role": "user", "content": "hi"}}) + b"\n",
    ]
    assert detect_format(_write(tmp_path / "c.jsonl", lines)) == "claude-code"


def test_codex_rollout_is_recognised(tmp_path):
    line = {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "x", "cwd": "/p"}}
    assert detect_format(_write(tmp_path / "rollout.jsonl", [orjson.dumps(line) + b"\n"])) == "codex"


def test_other_jsonl_is_refused_with_a_clear_error(tmp_path):
    path = _write(tmp_path / "data.jsonl", [b'{"a": 1}\n', b'{"a": 2}\n'])
    with pytest.raises(UnknownSessionFormat, match="not a session file"):
        pi_lab.open_session(path)


def test_a_fifo_is_refused_without_being_opened(tmp_path):
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(UnknownSessionFormat, match="not a regular file"):
        detect_format(fifo)


def test_first_lines_with_lone_surrogates_or_deep_nesting_are_read_as_pi_reads_them(tmp_path):
    header = orjson.dumps(HEADER)[:-1] + b',"note":"\\ud83d"}'
    assert detect_format(_write(tmp_path / "surrogate.jsonl", [header + b"\n"])) == "pi"
    deep = b'{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":' + b"[" * 1500 + b"]" * 1500 + b"}}"
    assert detect_format(_write(tmp_path / "deep.jsonl", [deep + b"\n"])) == "claude-code"


def test_a_type_of_another_json_kind_is_no_error(tmp_path):
    # pi opens a file only when its first JSON object is a header: a later header does not count
    lines = [b'{"type": ["session"], "id": "x"}\n', orjson.dumps(HEADER) + b"\n"]
    with pytest.raises(UnknownSessionFormat):
        detect_format(_write(tmp_path / "odd.jsonl", lines))
