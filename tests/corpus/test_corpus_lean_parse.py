"""The lean read (pi_lab.corpus.skeletons: skeletons, bodies read back as the walk enters them;
compact measures, pi_lab.corpus.measures) gives the rows of the whole-bytes read with plain ones, value for value and type for type, on sessions with
branches, compactions, context edits, branch summaries, forks, cycles, broken and unfinished
lines, lone surrogates and invalid UTF-8, whole and a few rows at a time."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from corpus_builders import MODEL, a, build_corpus, overflow_entries, parent_entries, write_session
from helpers import asst_msg, entry, header, msg, tool_result, usage, user_msg

import pi_lab.corpus.extract as extract_module
import pi_lab.corpus.skeletons as skeletons
from pi_lab.corpus.schema import TABLE_NAMES
from pi_lab.corpus.tables import columns_to_tables


def _whole(path: Path) -> dict[str, dict[str, list[Any]]]:
    """The rows of the whole-bytes read (every line parsed at once) with the walk's measures
    in a plain dict: the reference."""
    compact = extract_module.CompactMeasures
    extract_module.CompactMeasures = dict  # type: ignore[misc]
    try:
        return extract_module._prepare(path.read_bytes(), str(path)).columns()
    finally:
        extract_module.CompactMeasures = compact  # type: ignore[misc]


def _same(path: Path) -> None:
    want = _whole(path)
    # the skeleton path really ran (a current pi file with message lines)
    got = extract_module.extract_file(path)
    assert repr(got) == repr(want), path  # (repr: 1 and 1.0, True and 1 differ; nan equals nan)
    tables = columns_to_tables(want)
    for batch in (1, 4):
        parts = extract_module.extract_tables(path, batch_rows=batch)
        for name in TABLE_NAMES:
            assert parts[name].equals(tables[name]), (path, name, batch)


def _random_lines(seed: int, n: int) -> list[str]:
    """A random pi session: a tree of user, assistant (with tool calls) and tool result
    messages, compactions, context edits (before and after their targets, null and
    replacements), branch summaries, labels, custom and system messages, odd values."""
    rng = random.Random(seed)
    lines = [json.dumps(header(f"R{seed}"))]
    ids: list[str] = []
    for k in range(n):
        parent = rng.choice(ids[-6:]) if ids and rng.random() < 0.25 else (ids[-1] if ids else None)
        eid = f"r{k}"
        roll = rng.random()
        if roll < 0.3:
            line = msg(eid, parent, user_msg(rng.choice(["hi", "x" * rng.randint(0, 90), [{"type": "text", "text": "é😀"}]])), k)
        elif roll < 0.55:
            calls = [{"id": f"c{k}", "name": "read", "arguments": {"p": "x" * rng.randint(0, 5)}}] if rng.random() < 0.5 else None
            line = msg(eid, parent, a("ok" * rng.randint(0, 5), usage(rng.randint(0, 5000), 3, rng.randint(0, 9)),
                                      tool_calls=calls, stop=rng.choice(["stop", "toolUse", "error", "length"])), k)
        elif roll < 0.65:
            line = msg(eid, parent, tool_result(f"c{k - 1}", "read", "r" * rng.randint(0, 30), is_error=rng.random() < 0.2), k)
        elif roll < 0.72:
            target = rng.choice(ids) if ids and rng.random() < 0.8 else f"r{k + 2}"  # (an edit before its target too)
            replacement = None if rng.random() < 0.5 else {"content": "edited " * rng.randint(1, 4)}
            line = entry("context_edit", eid, parent, k, targetId=target, replacement=replacement)
        elif roll < 0.77:
            kept = rng.choice(ids) if ids else None
            line = entry("compaction", eid, parent, k, summary="S" * rng.randint(0, 40), firstKeptEntryId=kept,
                         tokensBefore=rng.randint(0, 300000), fromHook=rng.random() < 0.3)
        elif roll < 0.81:
            line = entry("branch_summary", eid, parent, k, fromId=rng.choice(ids) if ids else None, summary="b" * rng.randint(0, 9))
        elif roll < 0.84:
            line = entry("label", eid, parent, k, targetId=rng.choice(ids) if ids else "none", label=rng.choice(["x", "", None]))
        elif roll < 0.87:
            line = msg(eid, parent, {"role": rng.choice(["system", "custom", "bashExecution"]), "content": "sys", "timestamp": 1}, k)
        elif roll < 0.9:
            line = entry("custom_message", eid, parent, k, customType="note", content="c", display=True)
        elif roll < 0.93:  # the same id again (the last one wins the index)
            line = msg(rng.choice(ids) if ids else eid, parent, user_msg("again"), k)
        else:
            line = msg(eid, parent, asst_msg(None, model=MODEL, use=usage(0, 0), stop="error", error="overloaded"), k)
        ids.append(eid)
        lines.append(json.dumps(line, ensure_ascii=rng.random() < 0.5))
    return lines


def _write(path: Path, lines: list[str], end: str = "\n") -> Path:
    path.write_bytes(("\n".join(lines) + end).encode("utf-8"))
    return path


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_read_lean_give_the_same_rows(tmp_path, seed):
    _same(_write(tmp_path / f"r{seed}.jsonl", _random_lines(seed, 120)))


def test_the_corpus_builders_sessions_give_the_same_rows(tmp_path):
    for path in build_corpus(tmp_path / "c").values():
        _same(path)
    _same(write_session(tmp_path / "p.jsonl", [header("P"), *parent_entries(), *overflow_entries()]))


def test_hostile_lines_give_the_same_rows(tmp_path):
    """Broken lines, a lone surrogate escape (orjson refuses it: the line is kept whole),
    invalid UTF-8, a byte order mark inside, a second header, a non-object line, an id that is
    a list, a blank line, and an unfinished last line (and one that parses)."""
    lines = [json.dumps(header("H"))]
    body = _random_lines(11, 60)[1:]
    lines += body[:20]
    lines.append('{"type":"message","id":"s1","parentId":"r19","timestamp":"2026-01-01T00:00:00.000Z",'
                 '"message":{"role":"user","content":"\\ud83d lone","timestamp":1}}')
    raw = ('{"type":"message","id":"b1","parentId":"s1","timestamp":"2026-01-01T00:00:01.000Z",'
           '"message":{"role":"user","content":"bad \xff byte","timestamp":1}}')
    lines += ["not json", "", "7", "null", json.dumps(header("H2")), "\ufeff" + body[20]]
    odd_id, odd_parent = msg("x", "r5", user_msg("list id"), 3), msg("w1", "r5", user_msg("list parent"), 3)
    odd_id["id"], odd_parent["parentId"] = ["x"], ["r5"]
    lines += [json.dumps(odd_id), json.dumps(odd_parent)]
    lines += body[21:]
    data = ("\n".join(lines) + "\n").encode("utf-8").replace(b"\\u00ff", b"\xff")
    data += raw.encode("latin-1") + b"\n"
    path = tmp_path / "h.jsonl"
    for tail in (b"", b'{"type":"message","id":"t', b'{"type":"message","id":"t9","parentId":"b1","message":{"role":"user","content":"x"}}'):
        path.write_bytes(data + tail)
        _same(path)


def test_cycles_and_lines_past_a_block_give_the_same_rows(tmp_path, monkeypatch):
    """A parentId cycle (its entries are walked from a path computed from scratch: every body
    is read back first), and blocks and a read-back window smaller than a line."""
    lines = _random_lines(5, 40)
    lines.append(json.dumps(msg("cy1", "cy2", user_msg("loop"), 50)))
    lines.append(json.dumps(msg("cy2", "cy1", a("loop", usage(5, 5)), 51)))
    _same(_write(tmp_path / "cycle.jsonl", lines))
    monkeypatch.setattr(skeletons, "_BLOCK", 64)
    monkeypatch.setattr(skeletons, "_WINDOW", 100)
    _same(_write(tmp_path / "small.jsonl", _random_lines(7, 80)))


def test_the_lean_read_keeps_skeletons_and_reads_every_body_back(tmp_path, monkeypatch):
    """Message lines of the slimmed roles are skeletons until the walk enters them."""
    path = _write(tmp_path / "s.jsonl", _random_lines(3, 50))
    with open(path, "rb") as handle:
        lean = skeletons.read_lean(str(path), handle.read(1000), handle)
    assert lean is not None and lean.bodies is not None
    kept = [e for e in lean.entries if e.get("type") == "message" and "message" not in e]
    assert len(kept) > 20 and all(set(e) <= {"type", "id", "parentId"} for e in kept)
    restored: list[int] = []
    real = skeletons.BodyReader.restore

    def restore(self, i, entry):
        restored.append(i)
        return real(self, i, entry)

    monkeypatch.setattr(skeletons.BodyReader, "restore", restore)
    lean.bodies.close()
    extract_module.extract_file(path)
    assert len(set(restored)) == len(kept)


def test_a_file_rewritten_during_the_walk_is_read_again_whole(tmp_path, monkeypatch):
    """The lean read notices a line that no longer holds its entry; extract_file and
    extract_tables then read the file again, whole (the rows of what it holds now)."""
    path = _write(tmp_path / "w.jsonl", _random_lines(2, 30))
    extractor = extract_module._read(path)
    rewritten = path.read_bytes().replace(b'"id": "r', b'"id": "q')
    path.write_bytes(rewritten)
    with pytest.raises(skeletons.FileChanged):
        extractor.columns()
    want = _whole(path)
    real = skeletons.BodyReader.read

    def read_after_a_rewrite(self, i, entry):
        path.write_bytes(rewritten)
        return real(self, i, entry)

    monkeypatch.setattr(skeletons.BodyReader, "read", read_after_a_rewrite)
    original = rewritten.replace(b'"id": "q', b'"id": "r')
    path.write_bytes(original)  # (as it was when the lean read began)
    assert repr(extract_module.extract_file(path)) == repr(want)
    path.write_bytes(original)
    tables = extract_module.extract_tables(path, batch_rows=5)
    assert all(tables[name].equals(t) for name, t in columns_to_tables(want).items())


def test_compact_measures_read_back_equal():
    from pi_lab.corpus.measures import CompactMeasures

    shapes = [(1, 5, None, 0, None), (1, 300, (1200, 300), 0, None), (1, 7, (10.5, 7), 0, None),
              (2, 9, (40, 9), 0, None), (1, 4, None, 4, [{"role": "system"}]), (0, 0, None, 0, None),
              (1, 5.0, None, 0, None), (1, 2, (3, 2), 0.0, None)]
    plain: dict[int, Any] = {}
    compact = CompactMeasures()
    for k, shape in enumerate(shapes):
        plain[k] = compact[k] = shape
    for k in range(len(shapes)):
        assert repr(compact[k]) == repr(compact.get(k)) == repr(plain[k])
        assert k in compact
    assert compact.get(99) is None and compact.get(99, 1) == 1
