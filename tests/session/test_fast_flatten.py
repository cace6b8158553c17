"""A viewer hands ``flatten_tree`` the tree path of its leaf (issue 11), which skips the walk
of the whole tree that finds the nodes carrying the leaf's id. The flattening must be the
one that walk gives: at many leaves of generated sessions, and when the leaf's id is also
carried by another node (a duplicated id in a hand-edited file)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from pi_lab.session.flatten import FactTable, flatten_tree
from pi_lab.session.readonly import session_from_bytes
from pi_lab.session.tree import TreeNode

REPO = Path(__file__).resolve().parents[2]


def _generated(entries: int, seed: int):
    name = "bench_generate"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, REPO / "bench" / "generate.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    lines, _ = module.generate(entries, seed)
    return session_from_bytes(("\n".join(lines) + "\n").encode("utf-8"), f"gen-{seed}.jsonl")


def _path_of(roots, leaf_id):
    """Root-to-node path of the first node carrying ``leaf_id`` (iterative)."""
    stack = [(root, (root,)) for root in reversed(roots)]
    while stack:
        node, path = stack.pop()
        if node.entry.get("id") == leaf_id:
            return list(path)
        for child in reversed(node.children):
            stack.append((child, path + (child,)))
    return None


def _same(a, b):
    assert len(a.entries) == len(b.entries) and all(x is y for x, y in zip(a.entries, b.entries))
    assert a.ids == b.ids and a.parents == b.parents and a.on_active_path == b.on_active_path
    assert a.labels == b.labels and a.label_timestamps == b.label_timestamps
    assert a._categories == b._categories and a.index_of == b.index_of
    assert list(a.tool_calls) == list(b.tool_calls) and a._result_calls.keys() == b._result_calls.keys()


@pytest.mark.parametrize("seed", [1, 5])
def test_the_leaf_path_gives_the_same_flattening(seed):
    sm = _generated(2500, seed)
    roots = sm.get_tree()
    leaves = [e["id"] for e in sm.entries[:: max(1, len(sm.entries) // 40)]] + [sm.leaf_id]
    for leaf in leaves:
        path = _path_of(roots, leaf)
        assert path is not None
        _same(flatten_tree(roots, leaf, facts=FactTable(), leaf_path=path), flatten_tree(roots, leaf))


def _entry(entry_id, parent, text):
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1}}


def test_a_leaf_id_on_two_nodes_takes_the_whole_walk():
    # Two subtrees, each holding a node with the id "x": the walk puts both paths first.
    a, b = TreeNode(_entry("a", None, "a")), TreeNode(_entry("b", None, "b"))
    x1, x2 = TreeNode(_entry("x", "a", "x one")), TreeNode(_entry("x", "b", "x two"))
    a.children.append(TreeNode(_entry("a2", "a", "sibling first")))
    a.children.append(x1)
    b.children.append(TreeNode(_entry("b2", "b", "sibling first")))
    b.children.append(x2)
    roots = [a, b]
    expected = flatten_tree(roots, "x")
    assert expected.ids[:2] == ["a", "x"] and expected.ids[3:5] == ["b", "x"]  # both paths first
    _same(flatten_tree(roots, "x", leaf_path=[b, x2]), expected)
    _same(flatten_tree(roots, "x", leaf_path=[a, x1]), expected)


def test_a_path_that_does_not_end_at_the_leaf_is_ignored():
    sm = _generated(600, 2)
    roots = sm.get_tree()
    wrong = _path_of(roots, sm.entries[10]["id"])
    _same(flatten_tree(roots, sm.leaf_id, leaf_path=wrong), flatten_tree(roots, sm.leaf_id))


class _Named(str):
    pass


@pytest.mark.parametrize("ids", [
    ["a", "b", "a", "c"],  # a duplicated id: its last position
    ["a", ["list"], 7, None, "b", {"x": 1}, "a"],  # odd ids are left out
    ["a", _Named("b"), "c"],  # a str subclass is a string id too
    [],
])
def test_string_positions_are_the_positions_of_string_ids(ids):
    from pi_lab.session.flatten import string_positions

    expected = {}
    for i, entry_id in enumerate(ids):
        if isinstance(entry_id, str):
            expected[entry_id] = i
    got = string_positions(ids)
    assert got == expected and list(got) == list(expected)
