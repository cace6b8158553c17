"""The read path counts lines once and parses each chunk in place (issue 11).

A chunked read must give exactly what one parse of the whole file gives: the same entries,
the same skipped line numbers, the same line count (which later reads continue from) and the
same tail, whatever the chunk size and wherever a boundary falls (inside a line, on a
newline, inside a multi-byte character, inside a line longer than several chunks).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_lab.session import storage
from pi_lab.session.storage import load_entries_from_file, parse_lines

HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'


def _user(n: int, text: str) -> str:
    return ('{"type":"message","id":"u%d","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z",'
            '"message":{"role":"user","content":%s,"timestamp":1}}') % (n, '"' + text + '"')


def test_parse_lines_counts_the_lines_it_walked():
    data = b"\n".join([HEADER.encode(), b"", b"{bad", _user(1, "x").encode()]) + b"\n"
    result = parse_lines(data)
    assert result.lines == data.count(b"\n") == 4
    assert result.skipped_lines == [3]
    partial = parse_lines(data + b'{"type":"x"', complete_only=True)
    assert partial.lines == 4 and partial.consumed_bytes == len(data)
    # Line numbers continue from the first one given.
    assert parse_lines(b"{bad\n{bad\n", 10).skipped_lines == [10, 11]


_LINES = st.lists(
    st.one_of(
        st.builds(_user, st.integers(0, 50), st.text(st.sampled_from("ab é😀\\t"), max_size=40).map(
            lambda s: s.replace("\\", "\\\\"))),
        st.just(""),
        st.just("{broken"),
        st.just("[1]"),
        st.just("   "),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_LINES, chunk=st.integers(1, 300), final_newline=st.booleans())
def test_chunked_read_equals_one_parse(tmp_path_factory, lines, chunk, final_newline):
    text = "\n".join([HEADER, *lines]) + ("\n" if final_newline else "")
    data = text.encode("utf-8")
    path = tmp_path_factory.mktemp("read") / "s.jsonl"
    path.write_bytes(data)
    whole = parse_lines(data)
    old = storage.READ_CHUNK
    storage.READ_CHUNK = chunk
    try:
        loaded = load_entries_from_file(path, repair=False)
    finally:
        storage.READ_CHUNK = old
    assert loaded.entries == whole.entries
    assert loaded.skipped_lines == whole.skipped_lines
    last = data.rfind(b"\n") + 1
    assert loaded.tail_start == (len(data) if final_newline or last == len(data) else last)
    assert loaded.lines == data.count(b"\n", 0, loaded.tail_start)
    assert loaded.size == len(data) == os.path.getsize(path)


@pytest.mark.parametrize("chunk", [3, 17, 4096])
def test_refresh_continues_line_numbers_after_a_chunked_open(tmp_path, monkeypatch, chunk):
    from pi_lab.session import SessionManager

    path = tmp_path / "s.jsonl"
    path.write_text(HEADER + "\n{bad\n" + _user(1, "é" * 50) + "\n")
    monkeypatch.setattr(storage, "READ_CHUNK", chunk)
    sm = SessionManager.open(path, read_only=True)
    assert sm.skipped_lines == [2]
    with open(path, "a") as handle:
        handle.write("{also bad\n" + _user(2, "y") + "\n")
    sm.refresh()
    assert sm.skipped_lines == [2, 4]
    assert [e["id"] for e in sm.entries] == ["u1", "u2"]
