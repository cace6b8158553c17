"""The JupyterLab viewer's backend reads a session with the engine's chunked reader (issue 11):
the file is never held as one bytes object beside its entries, and its bytes are hashed only
for a format whose ids must be made. What it loads is what ``session_from_bytes`` of the
whole file gives: entries, skipped lines, stable ids of an old format, and the store's own
book-keeping (head, consumed bytes, unterminated tail, line count, size)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from view.view_sessions import FIXTURE_NAMES, FIXTURES, _generator

from pi_lab.server import store as store_module
from pi_lab.server.store import SessionStore
from pi_lab.session import storage
from pi_lab.session.readonly import session_from_bytes


def _expected(data: bytes, name: str):
    sm = session_from_bytes(data, name)
    consumed = data.rfind(b"\n") + 1
    tail = data[consumed:]
    return sm, {"head": data[:4096], "consumed": consumed, "tail": tail, "size": len(data),
                "lines": data.count(b"\n", 0, consumed), "tail_taken": bool(store_module._tail_entry(tail))}


def _check(path: Path) -> None:
    data = path.read_bytes()
    expected_sm, facts = _expected(data, path.name)
    loaded = SessionStore().get(str(path))
    got = {"head": loaded.head, "consumed": loaded.consumed, "tail": loaded.tail, "size": loaded.stamp.size,
           "lines": loaded.lines, "tail_taken": loaded.tail_taken}
    assert got == facts
    sm = loaded.sm
    assert sm.entries == expected_sm.entries  # migrated ids of an old format included
    assert sm.header == expected_sm.header and sm.leaf_id == expected_sm.leaf_id
    assert sm.skipped_lines == expected_sm.skipped_lines


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixtures_load_as_from_their_bytes(tmp_path, name):
    copy = tmp_path / name
    shutil.copyfile(FIXTURES / name, copy)
    _check(copy)


def test_odd_files_load_as_from_their_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "READ_CHUNK", 4096)  # many chunk boundaries, lines cut by them
    lines, _ = _generator().generate(300, 3)
    body = ("\n".join(lines) + "\n").encode("utf-8")
    cases = {
        "plain.jsonl": body,
        "bad-lines.jsonl": body.replace(b"\n", b"\nnot json\n\n", 3) + b"0\n[1]\n",
        "whole-tail.jsonl": body + lines[-1].replace('"id":"', '"id":"t', 1).encode(),  # an object without its newline
        "torn-tail.jsonl": body + b'{"type":"message","id":"half',
        "crlf.jsonl": body.replace(b"\n", b"\r\n"),
    }
    if FIXTURE_NAMES:
        v1 = FIXTURES / "public-whamp-v1-linear.jsonl"
        if v1.exists():  # format 1: ids are made from the file's bytes
            cases["v1.jsonl"] = v1.read_bytes()
            cases["v1-torn.jsonl"] = v1.read_bytes() + b'{"type":"mess'
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        _check(path)


def test_the_file_is_read_in_chunks_and_a_v3_file_is_not_hashed(tmp_path, monkeypatch):
    lines, _ = _generator().generate(1500, 2)
    path = tmp_path / "s.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    assert path.stat().st_size > 2 * 1024 * 1024
    monkeypatch.setattr(storage, "READ_CHUNK", 256 * 1024)
    reads: list[int] = []

    class Counting(io.FileIO):
        def readinto(self, buffer):
            n = super().readinto(buffer)
            reads.append(n or 0)
            return n

        def readall(self):
            data = super().readall()
            reads.append(len(data))
            return data

    def counting_open(file, mode="r", *args, **kwargs):
        assert mode == "rb"
        return io.BufferedReader(Counting(file, "r"))

    import hashlib

    hashed: list[int] = []
    real_sha256 = hashlib.sha256
    monkeypatch.setattr(store_module, "open", counting_open, raising=False)
    monkeypatch.setattr(hashlib, "sha256", lambda *a: hashed.append(len(a[0]) if a else 0) or real_sha256(*a))
    loaded = SessionStore().get(str(path))
    assert loaded.sm.get_entry_count() == len(lines) - 1
    assert reads and max(reads) <= 1024 * 1024  # the first-line scan reads 1 MiB; the rest in chunks
    assert not hashed
