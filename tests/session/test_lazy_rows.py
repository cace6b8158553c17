"""Rows and gauge do only the work that is shown (issue 11): a row's text is made when its
range is asked for, and the gauge's compaction pass is not repeated for the same branch.

Each laziness must be invisible: the texts equal the eager ones, the compactions equal a
fresh computation, and a caller editing what it got changes nothing for the next caller.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from pi_lab.session.flatten import flatten_tree, navigation_rows, visible_rows
from pi_lab.session.readonly import session_from_bytes
from pi_lab.view import gauge as gauge_module
from pi_lab.view.rows import RowState

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


@pytest.fixture(scope="module")
def session():
    return _generated(1500, 3)


def test_rows_are_laid_out_without_text_and_read_the_same_text(session):
    from pi_lab.session.flatten import _TEXT_SLOT

    state = RowState(session, home="/home/user")
    assert state.rows and all(_TEXT_SLOT.__get__(row) is None for row in state.rows)  # none made yet
    assert state.texts(0, 5) == [state.row_text(r) for r in range(5)]
    made = [r for r, row in enumerate(state.rows) if _TEXT_SLOT.__get__(row) is not None]
    assert made == [0, 1, 2, 3, 4]  # only the rows asked for
    eager = navigation_rows(session, home="/home/user")
    assert [state.row_text(r)["text"] for r in range(len(state.rows))] == [row.text for row in eager]
    assert state.rows == eager and eager == state.rows  # the same rows in every field
    for row in (state.rows[0], eager[0]):  # hashing behaves alike (the entry dict is unhashable)
        with pytest.raises(TypeError):
            hash(row)
    from dataclasses import replace

    assert replace(state.rows[3], label="x").text == eager[3].text


@pytest.mark.parametrize("mode", ["default", "all", "no-tools", "user-only"])
def test_visible_rows_without_text_differ_only_in_text(session, mode):
    flat = flatten_tree(session.get_tree(), session.leaf_id)
    lazy = visible_rows(flat, filter_mode=mode, home="/h", with_text=False)
    fresh = flatten_tree(session.get_tree(), session.leaf_id)
    eager = visible_rows(fresh, filter_mode=mode, home="/h")
    assert len(lazy) == len(eager)
    assert lazy == eager
    assert [row.text for row in lazy] == [row.text for row in eager]
    assert repr(lazy[0]) == repr(eager[0])


def test_rows_after_an_append_keep_their_texts(session):
    sm = _generated(300, 5)
    state = RowState(sm, home="/h")
    before = [state.row_text(r)["text"] for r in range(len(state.rows))]
    sm.add_loaded_entries([{"type": "message", "id": "zz-new", "parentId": sm.leaf_id,
                            "timestamp": "2030-01-01T00:00:00.000Z",
                            "message": {"role": "user", "content": "fresh prompt", "timestamp": 1}}])
    state.sync()
    after = [state.row_text(r)["text"] for r in range(len(state.rows))]
    assert [t for t in after if "fresh prompt" in t] == ["user: fresh prompt"]
    assert [t for t in after if "fresh prompt" not in t] == before
    assert after == [row.text for row in navigation_rows(sm, home="/h")]


def test_the_compaction_pass_runs_once_per_branch(session, monkeypatch):
    branch = session.get_branch()
    assert any(e.get("type") == "compaction" for e in branch)
    gauge_module._last_compactions = None
    calls = []
    real = gauge_module._kept_tokens
    monkeypatch.setattr(gauge_module, "_kept_tokens", lambda *a: calls.append(1) or real(*a))
    first = gauge_module.compactions_on_branch(branch)
    passes = len(calls)
    assert passes >= len(branch)
    first[0]["after"] = -1  # a caller editing its copy
    again = gauge_module.compactions_on_branch(session.get_branch())
    assert len(calls) == passes  # same entries in the same order: no second pass
    assert again[0]["after"] != -1
    gauge_module._last_compactions = None
    assert again == gauge_module.compactions_on_branch(branch)
    # A different branch (a prefix of it) is computed afresh.
    cut = next(i for i, e in enumerate(branch) if e.get("type") == "compaction") + 1
    gauge_module._last_compactions = None
    expected = gauge_module.compactions_on_branch(branch[:cut])
    gauge_module.compactions_on_branch(branch)
    assert gauge_module.compactions_on_branch(branch[:cut]) == expected
