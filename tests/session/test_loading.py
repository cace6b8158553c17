"""Reading files: line rules, header validation, repair, migration (session-format.md §7–§9)."""

from __future__ import annotations

import json
import os

import pytest
from helpers import roles

from pi_lab.session import InvalidSessionFile, SessionManager, load_entries_from_file

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
USER = '{"type":"message","id":"u","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}'


def write(tmp_path, text, name="s.jsonl", mode="w"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def test_missing_file_loads_nothing(tmp_path):
    assert load_entries_from_file(tmp_path / "nope.jsonl").entries == []


@pytest.mark.parametrize("content", ["", "not json\n", USER + "\n"])
def test_files_without_header_load_nothing(tmp_path, content):
    assert load_entries_from_file(write(tmp_path, content)).entries == []


def test_header_and_message(tmp_path):
    result = load_entries_from_file(write(tmp_path, HEADER + "\n" + USER + "\n"))
    assert [e["type"] for e in result.entries] == ["session", "message"]


def test_garbage_lines_are_skipped_and_counted(tmp_path):
    # Unparsable lines are skipped and counted. Lines that parse to a truthy JSON value that
    # is not an object ([1,2], 42) are entries in pi 1.6.0 (tests/differential case
    # non_object_lines.jsonl): without id or type, and the last one becomes the leaf.
    path = write(tmp_path, HEADER + "\n{broken\n[1,2]\n\n   \n" + USER + "\n42\n")
    sm = SessionManager.open(path)
    assert [e.get("id") for e in sm.entries] == [None, "u", None]
    assert [getattr(e, "value", e) for e in sm.entries if e.get("id") is None] == [[1, 2], 42]
    assert sm.skipped_lines == [2]
    assert sm.leaf_id is None and sm.build_session_context().messages == []


def test_falsy_json_lines_are_dropped_as_pi_drops_them(tmp_path):
    path = write(tmp_path, HEADER + "\n0\nfalse\nnull\n\"\"\n" + USER + "\n")
    sm = SessionManager.open(path)
    assert [e["id"] for e in sm.entries] == ["u"] and sm.leaf_id == "u"
    assert sm.skipped_lines == [2, 3, 4, 5]


def test_crlf_lines_parse(tmp_path):
    sm = SessionManager.open(write(tmp_path, HEADER + "\r\n" + USER + "\r\n"))
    assert roles(sm.build_session_context().messages) == ["user"]


def test_nan_and_infinity_are_not_json(tmp_path):
    bad = USER.replace('"timestamp":1}', '"timestamp":NaN}')
    sm = SessionManager.open(write(tmp_path, HEADER + "\n" + bad + "\n"))
    assert sm.entries == [] and sm.skipped_lines == [2]


def test_leading_blank_and_malformed_lines_before_header(tmp_path):
    sm = SessionManager.open(write(tmp_path, "\n\n{oops\n" + HEADER + "\n" + USER + "\n"))
    assert sm.session_id == "s" and sm.cwd == "/p"


def test_long_header_line(tmp_path):
    long_id = "a" * 8192
    header = HEADER.replace('"id":"s"', f'"id":"{long_id}"')
    sm = SessionManager.open(write(tmp_path, header + "\n" + USER + "\n"))
    assert sm.session_id == long_id and sm.cwd == "/p"


def test_header_beyond_discovery_scan_still_opens(tmp_path):
    padding = "x" * (1024 * 1024 + 10)
    header = HEADER.replace('"cwd":"/p"', f'"cwd":"/p","pad":"{padding}"')
    path = write(tmp_path, header + "\n" + USER + "\n")
    assert SessionManager.open(path).cwd == "/p"
    assert SessionManager.open(path, cwd_override="/other").cwd == "/other"


def test_huge_runs_of_newlines(tmp_path):
    path = write(tmp_path, HEADER + "\n" + "\n" * 3_000_000 + USER.replace('"content":"hi"', '"content":"hi"') + "\n")
    sm = SessionManager.open(path)
    assert sm.build_session_context().messages == [{"role": "user", "content": "hi", "timestamp": 1}]


def test_invalid_file_raises_and_is_untouched(tmp_path):
    path = write(tmp_path, '{"type":"title","text":"x"}\nline two no newline')
    before = path.read_bytes()
    with pytest.raises(InvalidSessionFile) as info:
        SessionManager.open(path)
    assert str(info.value).startswith(f"Session file is not a valid pi session: {path}")
    assert path.read_bytes() == before


def test_byte_order_mark_makes_the_header_unreadable(tmp_path):
    path = write(tmp_path, ("\ufeff" + HEADER + "\n" + USER + "\n").encode("utf-8"))
    with pytest.raises(InvalidSessionFile, match="byte order mark"):
        SessionManager.open(path)


def test_empty_file_becomes_a_fresh_header(tmp_path):
    path = write(tmp_path, "")
    sm = SessionManager.open(path)
    content = path.read_text().splitlines()
    assert len(content) == 1 and json.loads(content[0])["id"] == sm.session_id
    assert sm.session_file == str(path)
    assert SessionManager.open(path).session_id == sm.session_id


def test_missing_trailing_newline_is_added_once_when_asked(tmp_path):
    """pi ends an unterminated last line with a newline on open; pi_lab never writes after
    another writer's unfinished line unless told to (issue 21): end_unfinished_line()."""
    path = write(tmp_path, HEADER + "\n" + USER)
    sm = SessionManager.open(path)
    assert path.read_text() == HEADER + "\n" + USER and sm.leaf_id == "u"  # parsed as pi parses it
    assert sm.end_unfinished_line() is True
    assert path.read_text() == HEADER + "\n" + USER + "\n"
    assert sm.end_unfinished_line() is False and [e["id"] for e in sm.entries] == ["u"]
    SessionManager.open(path).end_unfinished_line()
    assert path.read_text() == HEADER + "\n" + USER + "\n"


def test_unparsable_last_line_gets_a_newline_when_asked(tmp_path):
    path = write(tmp_path, HEADER + "\n" + USER + "\n{half a li")
    sm = SessionManager.open(path)
    assert path.read_text().endswith("{half a li") and len(sm.entries) == 1 and sm.skipped_lines == []
    assert sm.end_unfinished_line() and path.read_text().endswith("{half a li\n") and sm.skipped_lines == [3]
    sm.append_message({"role": "assistant", "content": [], "timestamp": 2})
    reopened = SessionManager.open(path)
    assert [e["type"] for e in reopened.entries] == ["message", "message"]


def test_invalid_utf8_bytes_decode_to_replacement_character(tmp_path):
    raw = HEADER.encode() + b"\n" + USER.encode().replace(b'"hi"', b'"h\xffi"') + b"\n"
    sm = SessionManager.open(write(tmp_path, raw))
    assert sm.entries[0]["message"]["content"] == "h\ufffdi"


def test_second_header_is_ignored_by_entry_apis(tmp_path):
    second = HEADER.replace('"id":"s"', '"id":"other"')
    sm = SessionManager.open(write(tmp_path, HEADER + "\n" + USER + "\n" + second + "\n"))
    assert sm.session_id == "s" and sm.header["id"] == "s"
    assert [e["type"] for e in sm.entries] == ["message"] and sm.leaf_id == "u"


def test_unknown_entry_types_are_kept_as_tree_nodes(tmp_path):
    future = '{"type":"future_entry","id":"f","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","secret":1}'
    sm = SessionManager.open(write(tmp_path, HEADER + "\n" + USER + "\n" + future + "\n"))
    assert sm.leaf_id == "f" and sm.get_entry("f")["secret"] == 1
    assert roles(sm.build_session_context().messages) == ["user"]
    next_id = sm.append_message({"role": "user", "content": "again", "timestamp": 3})
    assert sm.get_entry(next_id)["parentId"] == "f"


def test_duplicate_ids_later_value_wins(tmp_path):
    dup = USER.replace('"hi"', '"second"')
    sm = SessionManager.open(write(tmp_path, HEADER + "\n" + USER + "\n" + dup + "\n"))
    assert sm.get_entry("u")["message"]["content"] == "second"
    assert len(sm.entries) == 2 and sm.get_entry_count() == 1


def test_orphans_become_roots(tmp_path):
    orphan = USER.replace('"id":"u","parentId":null', '"id":"o","parentId":"ghost"')
    sm = SessionManager.open(write(tmp_path, HEADER + "\n" + USER + "\n" + orphan + "\n"))
    assert [n.entry["id"] for n in sm.get_tree()] == ["u", "o"]
    assert [e["id"] for e in sm.get_branch()] == ["o"]


def test_parent_cycle_is_reported_not_looped(tmp_path):
    a = '{"type":"message","id":"a","parentId":"b","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}'
    b = '{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"b","timestamp":2}}'
    sm = SessionManager.open(write(tmp_path, HEADER + "\n" + a + "\n" + b + "\n"))
    assert sm.find_cycles() == {"a"}
    assert [e["id"] for e in sm.get_branch()] == ["a", "b"]
    roots = sm.get_tree()
    assert [r.entry["id"] for r in roots] == ["a"] and roots[0].children[0].entry["id"] == "b"
    assert len(sm.build_session_context().messages) == 2


V1 = (
    '{"type":"session","id":"v1","timestamp":"2025-12-01T10:00:00.000Z","cwd":"/legacy"}\n'
    '{"type":"message","timestamp":"2025-12-01T10:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}\n'
    '{"type":"message","timestamp":"2025-12-01T10:00:02.000Z","message":{"role":"assistant","content":[],"timestamp":2}}\n'
    '{"type":"compaction","timestamp":"2025-12-01T10:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}\n'
    '{"type":"message","timestamp":"2025-12-01T10:00:04.000Z","message":{"role":"hookMessage","customType":"x","content":"h","display":true,"timestamp":4}}\n'
)


def test_v1_migration_links_entries_and_resolves_kept_index(tmp_path):
    path = write(tmp_path, V1)
    sm = SessionManager.open(path, uuid_factory=iter(f"{i:08x}-x" for i in range(1, 99)).__next__)
    assert sm.header["version"] == 3
    ids = [e["id"] for e in sm.entries]
    assert ids == ["00000001", "00000002", "00000003", "00000004"]
    assert [e["parentId"] for e in sm.entries] == [None, "00000001", "00000002", "00000003"]
    compaction = sm.entries[2]
    assert compaction["firstKeptEntryId"] == "00000002" and "firstKeptEntryIndex" not in compaction
    assert sm.entries[3]["message"]["role"] == "custom"
    rewritten = [json.loads(x) for x in path.read_text().splitlines()]
    assert rewritten[0] == {"type": "session", "id": "v1", "timestamp": "2025-12-01T10:00:00.000Z", "cwd": "/legacy", "version": 3}
    assert list(rewritten[1]) == ["type", "timestamp", "message", "id", "parentId"]
    assert roles(sm.build_session_context().messages) == ["compactionSummary", "assistant", "custom"]


def test_v2_ids_are_kept(tmp_path):
    v2 = (
        '{"type":"session","version":2,"id":"v2","timestamp":"2025-12-01T10:00:00.000Z","cwd":"/p"}\n'
        '{"type":"message","id":"abc12345","parentId":null,"timestamp":"2025-12-01T10:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}\n'
        '{"type":"message","id":"def67890","parentId":"abc12345","timestamp":"2025-12-01T10:00:02.000Z","message":{"role":"hookMessage","content":"b","timestamp":2}}\n'
    )
    sm = SessionManager.open(write(tmp_path, v2))
    assert [(e["id"], e["parentId"]) for e in sm.entries] == [("abc12345", None), ("def67890", "abc12345")]
    assert sm.entries[1]["message"]["role"] == "custom"


def test_newer_versions_are_accepted_as_they_are(tmp_path):
    path = write(tmp_path, HEADER.replace('"version":3', '"version":4') + "\n" + USER + "\n")
    before = path.read_bytes()
    assert SessionManager.open(path).header["version"] == 4
    assert path.read_bytes() == before


def test_open_missing_file_keeps_path_and_writes_lazily(tmp_path):
    path = tmp_path / "later.jsonl"
    sm = SessionManager.open(path)
    assert sm.session_file == str(path) and not path.exists()
    sm.append_message({"role": "user", "content": "x", "timestamp": 1})
    assert path.exists()
    assert os.path.dirname(sm.session_file) == str(tmp_path)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_chunked_reading_gives_the_same_result(tmp_path, monkeypatch, chunk):
    from pi_lab.session import storage

    text = "\n" + HEADER + "\n{broken\n\n" + USER + "\r\n" + USER.replace('"hi"', '"héllo 😀"') + "\n[1]\n" + USER
    path = write(tmp_path, text)
    monkeypatch.setattr(storage, "READ_CHUNK", chunk)
    result = load_entries_from_file(path)
    # "[1]" is an entry, as in pi (a truthy value that is not an object: no type).
    assert [e.get("type") for e in result.entries] == ["session", "message", "message", None, "message"]
    assert result.entries[3].value == [1]
    assert result.entries[2]["message"]["content"] == "héllo 😀"
    assert result.skipped_lines == [3]
    assert path.read_bytes() == (text + "\n").encode("utf-8")  # the tail was repaired once
    assert result.consumed_bytes == len((text + "\n").encode("utf-8"))
