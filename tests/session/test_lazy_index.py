"""Opening a file builds the index, the entry list and the tree in one walk (issue 11);
every query of the conformance contract must answer exactly as the general path does.

Random sessions mix the usual file (the one-walk path) with every case it hands over to the
general path: duplicated ids, a parent written after its child, unknown parents, ids that are
not strings, a second header, labels set and cleared, parentId cycles.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_lab.session import SessionManager
from pi_lab.session import index as index_module
from pi_lab.session import manager as manager_module
from pi_lab.session.index import index_and_tree, index_lines
from pi_lab.session.tree import build_tree
from session.conformance import answers, tree_rows

HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
IDS = [f"e{i}" for i in range(12)]


@st.composite
def sessions(draw):
    count = draw(st.integers(0, 14))
    unusual = draw(st.booleans())
    lines = [HEADER]
    written: list[str] = []
    for n in range(count):
        if unusual:
            entry_id = draw(st.sampled_from(IDS + [None, 7]))
            parent = draw(st.sampled_from([None, "nope", *IDS]))
        else:
            entry_id = f"x{n}"
            parent = draw(st.sampled_from([None, *written])) if written else None
        stamp = f"2025-01-01T00:00:{draw(st.integers(0, 59)):02d}.000Z"
        kind = draw(st.sampled_from(["user", "assistant", "label", "model_change", "session_info", "compaction",
                                     "custom", "header"] if unusual else
                                    ["user", "assistant", "label", "model_change", "session_info"]))
        entry: dict = {"id": entry_id, "parentId": parent, "timestamp": stamp}
        if kind in ("user", "assistant"):
            entry = {"type": "message", **entry, "message": {"role": kind, "content": f"{kind} {n}", "timestamp": n}}
            if kind == "assistant":
                entry["message"].update(provider="p", model=f"m{n % 3}", usage={"input": n, "output": 1})
        elif kind == "label":
            target = draw(st.sampled_from(written or IDS))
            entry = {"type": "label", **entry, "targetId": target}
            if draw(st.booleans()):
                entry["label"] = draw(st.sampled_from(["", "one", "two"]))
        elif kind == "model_change":
            entry = {"type": "model_change", **entry, "provider": "p", "modelId": f"m{n}"}
        elif kind == "session_info":
            entry = {"type": "session_info", **entry, "name": f" name {n} "}
        elif kind == "compaction" and written:
            entry = {"type": "compaction", **entry, "summary": "s", "firstKeptEntryId": draw(st.sampled_from(written)),
                     "tokensBefore": 10}
        elif kind == "header":
            entry = dict(HEADER, id=f"h{n}")
        else:
            entry = {"type": "custom", **entry, "customType": "c"}
        if entry.get("type") != "session" and isinstance(entry_id, str):
            written.append(entry_id)
        lines.append(entry)
    return lines


def _write(tmp_path_factory, lines) -> str:
    path = tmp_path_factory.mktemp("idx") / "s.jsonl"
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    return str(path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=sessions())
def test_one_walk_answers_every_query_as_the_general_path(tmp_path_factory, lines):
    path = _write(tmp_path_factory, lines)
    fast = SessionManager.open(path, read_only=True)
    original = manager_module.index_and_tree
    manager_module.index_and_tree = lambda entries: None  # force index_lines + build_tree
    try:
        general = SessionManager.open(path, read_only=True)
    finally:
        manager_module.index_and_tree = original
    assert answers(fast) == answers(general)
    assert list(fast._by_id) == list(general._by_id)  # same insertion order too


@settings(max_examples=200, deadline=None)
@given(lines=sessions())
def test_index_and_tree_equals_index_lines_and_build_tree(lines):
    fused = index_and_tree(lines)
    by_id, leaf, conversation, labels, stamps = index_lines(lines)
    if fused is None:
        return
    entries = [e for e in lines if e.get("type") != "session"]
    roots, nodes = build_tree(entries, by_id, labels, stamps)
    assert [id(e) for e in fused.entries] == [id(e) for e in entries]
    assert list(fused.by_id.items()) == list(by_id.items())
    assert (fused.leaf, fused.has_conversation) == (leaf, conversation)
    assert list(fused.labels.items()) == list(labels.items())
    assert list(fused.label_timestamps.items()) == list(stamps.items())
    assert tree_rows(fused.roots, key=id) == tree_rows(roots, key=id)
    assert {k: id(v.entry) for k, v in fused.nodes.items()} == {k: id(v.entry) for k, v in nodes.items()}


@pytest.mark.parametrize("lines, reason", [
    ([HEADER, {"type": "message", "id": "a", "parentId": "b"}, {"type": "message", "id": "b", "parentId": None}],
     "a parent written after its child"),
    ([HEADER, {"type": "message", "id": "a", "parentId": None}, {"type": "message", "id": "a", "parentId": None}],
     "a duplicated id"),
    ([HEADER, {"type": "message", "id": ["a"], "parentId": None}], "an id that is not a string"),
    ([HEADER, {"type": "message", "id": "a", "parentId": None}, dict(HEADER, id="h2")], "a second header"),
    ([{"type": "message", "id": "a", "parentId": None}], "no header first"),
])
def test_unusual_files_take_the_general_path(lines, reason):
    assert index_and_tree(lines) is None, reason


def test_the_usual_file_takes_the_one_walk(tmp_path):
    lines = [HEADER, {"type": "message", "id": "a", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
                      "message": {"role": "user", "content": "hi", "timestamp": 1}},
             {"type": "label", "id": "l", "parentId": "a", "timestamp": "2025-01-01T00:00:02.000Z",
              "targetId": "a", "label": "first"}]
    fused = index_and_tree(lines)
    assert fused is not None and fused.leaf == "l" and fused.has_conversation
    assert fused.roots[0].label == "first" and fused.nodes["l"].entry is lines[2]
    assert index_module.IndexedLines is type(fused)


def _chain(count: int, start: int = 0, parent=None) -> list[dict]:
    lines = []
    for n in range(start, start + count):
        lines.append({"type": "message", "id": f"c{n}", "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z",
                      "message": {"role": "user", "content": f"u{n}", "timestamp": n}})
        parent = f"c{n}"
    return lines


@settings(max_examples=300, deadline=None)
@given(lines=sessions())
def test_the_branch_from_the_last_run_of_lines_is_the_walked_branch(lines):
    # index_and_tree's branch() walks by id only above the file's last run of lines that each
    # continue the line before (issue 28); it must be get_branch's answer for the leaf.
    fused = index_and_tree(lines)
    if fused is None:
        return
    from pi_lab.session.tree import get_branch

    expected = get_branch(fused.by_id, fused.leaf) if isinstance(fused.leaf, str) else []
    assert [id(e) for e in fused.branch()] == [id(e) for e in expected]


@pytest.mark.parametrize("shape", ["linear", "branch then run", "new root", "self parent", "unknown parent", "empty id"])
def test_the_branch_of_chains(shape):
    from pi_lab.session.tree import get_branch

    lines = [HEADER, *_chain(50)]
    if shape == "branch then run":
        lines += _chain(20, 100, parent="c10")  # leaves c11..c49 behind
    elif shape == "new root":
        lines += _chain(5, 200)
    elif shape == "self parent":
        lines += [dict(_chain(1, 300)[0], parentId="c300"), *_chain(3, 301, parent="c300")]
    elif shape == "unknown parent":
        lines += _chain(4, 400, parent="nowhere")
    elif shape == "empty id":
        # An empty id is a string id; a line naming it as parent is a root (pi: !parentId).
        lines += [dict(_chain(1, 500, parent="c49")[0], id=""), *_chain(3, 501, parent="")]
    fused = index_and_tree(lines)
    assert fused is not None
    expected = get_branch(fused.by_id, fused.leaf)
    assert [id(e) for e in fused.branch()] == [id(e) for e in expected]
    sm = SessionManager.in_memory(entries=lines)
    assert [e["id"] for e in sm.get_branch()] == [e["id"] for e in expected]
