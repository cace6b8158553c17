"""The corpus scan on fields pi accepts but Arrow cannot hold as they are (issue #15).

Lone surrogates (a ``"\\ud800"`` escape in the JSON, or a file name that is not UTF-8) are
stored as their escape, so distinct values stay distinct and the join keys agree across
tables; integers outside int64 are null; counters past the float range are infinite (as
JavaScript reads them); a label whose target is not a string labels nothing, as in pi.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from pi_lab.cli import main
from pi_lab.corpus import Corpus

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}


def _ts(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}.000Z"


def user(entry_id: Any, parent: Any, second: int = 1) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": _ts(second),
            "message": {"role": "user", "content": "hi", "timestamp": 1}}


def assistant(entry_id: Any, parent: Any, second: int = 2, **usage: Any) -> dict[str, Any]:
    counts = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, **usage}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": _ts(second),
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p",
                        "model": "m", "usage": counts, "stopReason": "stop", "timestamp": 2}}


def session_text(*entries: dict[str, Any], header: dict[str, Any] | None = None) -> bytes:
    # json.dumps writes a lone surrogate as a \ud800 escape, as pi's JSON.stringify does.
    return "".join(json.dumps(e) + "\n" for e in (header or HEADER, *entries)).encode()


def scan_one(tmp_path: Path, data: bytes) -> Corpus:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    corpus = Corpus.scan([path], workers=1, cache=False)
    assert corpus.errors == []
    return corpus


def column(table: Any, name: str) -> list[Any]:
    return table.column(name).to_pylist()


def test_lone_surrogates_are_escaped_distinct_and_join_across_tables(tmp_path):
    call = assistant("\ud801", "\ud800")
    call["message"]["content"] = [{"type": "toolCall", "id": "c\udc00", "name": "read\ud800", "arguments": {"p": "\ud800"}}]
    call["message"]["model"] = "m\ud800"
    call["message"]["stopReason"] = "toolUse"
    result = {"type": "message", "id": "\ud802", "parentId": "\ud801", "timestamp": _ts(3),
              "message": {"role": "toolResult", "toolCallId": "c\udc00", "toolName": "read\ud800",
                          "content": [{"type": "text", "text": "x\ud800"}], "isError": False, "timestamp": 3}}
    failed = assistant("\udfff", "\ud802", 4)
    failed["message"]["stopReason"] = "error"
    failed["message"]["errorMessage"] = "bad \ud800"
    compaction = {"type": "compaction", "id": "k\ud800", "parentId": "\udfff", "timestamp": _ts(5), "summary": "s",
                  "firstKeptEntryId": "\ud802", "tokensBefore": 10, "details": {"readFiles": ["f\ud800", "g"]}}
    label = {"type": "label", "id": "l1", "parentId": "k\ud800", "timestamp": _ts(6), "targetId": "\ud801",
             "label": "keep\ud800"}
    header = {**HEADER, "id": "s\ud800", "cwd": "/p\ud800"}
    corpus = scan_one(tmp_path, session_text(user("\ud800", None), call, result, failed, compaction, label,
                                             header=header))

    ids = column(corpus.entries, "entry_id")
    assert ids == ["\\ud800", "\\ud801", "\\ud802", "\\udfff", "k\\ud800", "l1"]  # the file's own escapes
    assert column(corpus.entries, "parent_id") == [None, "\\ud800", "\\ud801", "\\ud802", "\\udfff", "k\\ud800"]
    assert column(corpus.entries, "label")[1] == "keep\\ud800"
    assert column(corpus.sessions, "session_id") == ["s\\ud800"]
    assert column(corpus.sessions, "cwd") == ["/p\\ud800"]
    assert column(corpus.sessions, "models") == [["m", "m\\ud800"]]
    assert set(column(corpus.entries, "session_id")) == {"s\\ud800"}
    assert column(corpus.messages, "entry_id") == ["\\ud800", "\\ud801", "\\ud802", "\\udfff"]
    assert column(corpus.messages, "error_message")[3] == "bad \\ud800"
    assert column(corpus.messages, "tool_name")[2] == "read\\ud800"
    assert column(corpus.model_calls, "parent_id") == ["\\ud800", "\\ud802"]
    assert column(corpus.tool_calls, "tool_call_id") == ["c\\udc00"]
    assert column(corpus.tool_calls, "result_entry_id") == ["\\ud802"]
    assert column(corpus.tool_calls, "tool_name") == ["read\\ud800"]
    assert column(corpus.compactions, "entry_id") == ["k\\ud800"]
    assert column(corpus.compactions, "first_kept_entry_id") == ["\\ud802"]
    assert column(corpus.compactions, "read_files") == [["f\\ud800", "g"]]
    # The keys join: every message and call finds its entry row.
    joined = corpus.sql("select count(*) as n from messages m join entries e using (session_id, entry_id)")
    assert joined.column("n").to_pylist() == [4]
    calls = corpus.sql("select count(*) as n from model_calls c join sessions s using (session_id)")
    assert calls.column("n").to_pylist() == [2]


def test_file_names_not_utf8_are_read_and_served_from_the_cache(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    for raw in (b"\xff.jsonl", b"\xfe.jsonl"):
        (Path(os.fsdecode(os.fsencode(str(folder)) + b"/" + raw))).write_bytes(session_text(user("u1", None)))
    cache = tmp_path / "cache"
    for round_ in ("read", "cached"):
        corpus = Corpus.scan([folder], workers=1, cache=cache)
        assert corpus.errors == []
        assert corpus.stats["cached"] == (2 if round_ == "cached" else 0)
        files = column(corpus.sessions, "file")
        assert sorted(os.path.basename(f) for f in files) == ["\\udcfe.jsonl", "\\udcff.jsonl"]
        assert set(column(corpus.entries, "file")) == set(files)
        assert sorted(corpus.files) == sorted(os.path.join(str(folder), n) for n in ("\udcfe.jsonl", "\udcff.jsonl"))
    # One file changed: the other's rows are kept from the cache, the changed one read again.
    changed = Path(os.fsdecode(os.fsencode(str(folder)) + b"/\xfe.jsonl"))
    changed.write_bytes(session_text(user("u1", None), user("u2", "u1")))
    corpus = Corpus.scan([folder], workers=1, cache=cache)
    assert corpus.errors == [] and corpus.stats["cached"] == 1
    assert sorted(column(corpus.sessions, "entries")) == [1, 2]


def test_header_version_outside_int64_is_null(tmp_path):
    for version in (2**63, 2**64 - 1):  # (past 2**64 the JSON reader gives a float, which is not a version)
        data = session_text(user("u1", None)).replace(b'"version": 3', b'"version": %d' % version)
        corpus = scan_one(tmp_path, data)
        assert column(corpus.sessions, "version") == [None]
        assert column(corpus.sessions, "entries") == [1]


def test_usage_counters_past_the_float_range_are_infinite(tmp_path):
    big = 10**400  # Python's JSON reader keeps the integer; JavaScript reads Infinity
    call = assistant("a1", "u1", input=big)
    call["message"]["usage"]["cost"] = {"total": big}
    compaction = {"type": "compaction", "id": "k1", "parentId": "a1", "timestamp": _ts(3), "summary": "s",
                  "firstKeptEntryId": "u1", "tokensBefore": -big}
    corpus = scan_one(tmp_path, session_text(user("u1", None), call, compaction))
    assert column(corpus.model_calls, "input") == [math.inf]
    assert column(corpus.model_calls, "cost") == [math.inf]
    assert column(corpus.messages, "input")[1] == math.inf
    assert column(corpus.sessions, "cost") == [math.inf]
    assert column(corpus.compactions, "tokens_before") == [-math.inf]


def test_a_label_whose_target_is_not_a_string_labels_nothing(tmp_path):
    def label(entry_id: str, parent: str, target: Any, text: Any) -> dict[str, Any]:
        return {"type": "label", "id": entry_id, "parentId": parent, "timestamp": _ts(3), "targetId": target,
                "label": text}

    corpus = scan_one(tmp_path, session_text(
        user("u1", None), user("u2", "u1"),
        label("l1", "u2", ["u1"], "a"), label("l2", "l1", {"id": "u1"}, "b"), label("l3", "l2", 5, "c"),
        label("l4", "l3", None, "d"),
        label("l5", "l4", "u1", 5), label("l6", "l5", "u2", ["x", {"y": True}]),  # pi labels with any truthy value
    ))
    assert column(corpus.sessions, "labels") == [2]
    assert column(corpus.entries, "label")[:2] == ["5", '["x",{"y":true}]']
    assert column(corpus.entries, "label")[2:] == [None] * 6


def test_a_header_whose_type_is_nested_deep_is_named_briefly(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(('{"type":' + "[" * 3000 + '"x"' + "]" * 3000 + ',"id":"s1","version":3}\n').encode())
    corpus = Corpus.scan([path], workers=1, cache=False)
    [(_, reason)] = corpus.errors
    assert reason.startswith("first entry is not a session header (type [[[")
    assert len(reason) < 200


def test_cli_prints_one_line_per_skipped_file(tmp_path, capsys):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "ok.jsonl").write_bytes(session_text(user("u1", None)))
    (folder / "two\nlines.jsonl").write_bytes(b"not json\n")
    (folder / "back\rto start.jsonl").write_bytes(b"")
    (Path(os.fsdecode(os.fsencode(str(folder)) + b"/\xff\x1b[2J.jsonl"))).write_bytes(b"{}\n")
    assert main(["usage", str(folder), "--workers", "1", "--no-cache"]) == 0
    lines = capsys.readouterr().err.splitlines()
    skipped = [line for line in lines if line.startswith("pi-lab: skipped ")]
    assert len(skipped) == 3 and len(lines) == 3, lines
    assert any("two lines.jsonl: " in line for line in skipped)
    assert any("back to start.jsonl: " in line for line in skipped)
    assert any("\\udcff [2J.jsonl: " in line for line in skipped)  # no escape sequence reaches the terminal
    assert all(ch >= " " for line in lines for ch in line)


@pytest.mark.slow
def test_ray_reads_the_same_escaped_rows(tmp_path):
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    from pi_lab.corpus import TABLE_NAMES
    from pi_lab.corpus.ray import read_sessions

    folder = tmp_path / "sessions"
    folder.mkdir()
    odd = session_text(user("\ud800", None), assistant("\udbff", "\ud800"), header={**HEADER, "id": "s\ud800"})
    Path(os.fsdecode(os.fsencode(str(folder)) + b"/\xff.jsonl")).write_bytes(odd)
    (folder / "plain.jsonl").write_bytes(session_text(user("\ud800", None)))
    expected = Corpus.scan([folder], workers=1, cache=False)
    assert expected.errors == []
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        datasets = read_sessions(folder, files_per_task=1)
        assert datasets.errors == []
        for name in TABLE_NAMES:
            rows = [row for part in ray.get(datasets[name].to_arrow_refs()) for row in part.to_pylist()]
            want = getattr(expected, name).to_pylist()
            assert sorted(map(repr, rows)) == sorted(map(repr, want)), name
    finally:
        ray.shutdown()
    assert sorted(os.path.basename(f) for f in column(expected.sessions, "file")) == ["\\udcff.jsonl", "plain.jsonl"]


def test_a_parent_cycle_of_compactions_is_read(tmp_path):
    """Entries on a parentId cycle are walked with their context computed from scratch; two
    compactions on the cycle, one the other's parent, used to end the walk with an IndexError
    (an "internal error" for the whole file)."""

    def compaction(entry_id: str, parent: str, second: int) -> dict[str, Any]:
        return {"type": "compaction", "id": entry_id, "parentId": parent, "timestamp": _ts(second),
                "summary": "s", "firstKeptEntryId": "u1", "tokensBefore": 10}

    corpus = scan_one(tmp_path, session_text(
        user("u1", None), assistant("a1", "u1"),
        compaction("c1", "c2", 3), compaction("c2", "c1", 4), assistant("a2", "c2", 5),
    ))
    assert sorted(column(corpus.compactions, "entry_id")) == ["c1", "c2"]
    assert column(corpus.model_calls, "entry_id") == ["a1", "a2"]
