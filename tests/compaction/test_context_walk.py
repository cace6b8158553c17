"""ContextWalk (the incremental projection the timeline and the corpus extractor walk with)
equals the engine's projection and pi's estimates at every node of a whole tree, entered and
left depth-first; its shortcut for a context_edit equals rebuilding the context."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from pi_lab.compaction.context_walk import ContextWalk, MeasureCache, rebuild
from pi_lab.compaction.tokens import estimate_context_tokens, estimate_projected_context_tokens, estimate_tokens
from pi_lab.session.projection import _context_entries_of_path, project_path
from pi_lab.session.readonly import session_from_bytes

REPO = Path(__file__).resolve().parents[2]


def _generated(entries: int, seed: int):
    spec = importlib.util.spec_from_file_location("bench_generate", REPO / "bench" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_generate", module)
    spec.loader.exec_module(module)
    lines, _ = module.generate(entries, seed)
    return session_from_bytes(("\n".join(lines) + "\n").encode("utf-8"), f"gen-{seed}.jsonl")


def _check(walk: ContextWalk) -> None:
    path = walk.path
    projection = project_path(path)
    messages = projection.messages
    ctx = walk.context
    assert ctx.message_count == len(messages)
    assert ctx.plain_tokens == sum(estimate_tokens(m) for m in messages)
    assert ctx.estimate == estimate_context_tokens(messages).tokens
    assert walk.projected() == estimate_projected_context_tokens(projection, path).tokens
    compactions = [e for e in path if e.get("type") == "compaction"]
    assert walk.compaction_id == (compactions[-1]["id"] if compactions else None)


@pytest.mark.parametrize("seed", [1, 2])
def test_every_node_of_a_tree_entered_and_left_equals_the_engine(seed):
    sm = _generated(1500, seed)
    walk = ContextWalk()
    checked = 0
    # Depth-first over the whole tree: ("enter", node) and ("leave", None) steps, no recursion.
    steps = [("enter", root) for root in reversed(sm.get_tree())]
    while steps:
        action, node = steps.pop()
        if action == "leave":
            walk.leave()
            continue
        walk.enter(node.entry)
        _check(walk)
        checked += 1
        steps.append(("leave", None))
        steps.extend(("enter", child) for child in reversed(node.children))
    assert checked == len(sm.entries) and walk.path == []
    kinds = {e.get("type") for e in sm.entries}
    assert {"compaction", "context_edit", "branch_summary"} <= kinds


def test_a_context_edit_re_sums_from_its_target_as_a_rebuild_does():
    sm = _generated(1500, 3)
    cache = MeasureCache()
    edits = 0
    for entry in sm.entries:
        if entry.get("type") != "context_edit":
            continue
        path = sm.get_branch(entry["parentId"])
        before = rebuild(_context_entries_of_path(path), cache)
        shortcut = before.with_edit(entry, cache)
        full = rebuild(before.entries + [entry], cache)
        assert shortcut.entries == full.entries
        assert shortcut.sums == full.sums
        assert shortcut.edits == full.edits
        edits += 1
    assert edits > 5


def test_leave_restores_the_context_a_compaction_replaced():
    sm = _generated(1500, 4)
    compaction = next(e for e in sm.entries if e.get("type") == "compaction")
    walk = ContextWalk()
    for entry in sm.get_branch(compaction["parentId"]):
        walk.enter(entry)
    before = (walk.context, walk.projected(), walk.compaction_id, walk.invalidated_at)
    walk.enter(compaction)
    assert walk.compaction_id == compaction["id"]
    walk.leave()
    assert (walk.context, walk.projected(), walk.compaction_id, walk.invalidated_at) == before


def test_anchored_splits_the_trusted_estimate():
    sm = _generated(1500, 5)
    walk = ContextWalk()
    trusted = untrusted = 0
    for entry in sm.get_branch():
        walk.enter(entry)
        parts = walk.anchored()
        if parts is None:
            assert walk.trusted_anchor() is None
            untrusted += 1
        else:
            assert parts[0] + parts[1] == walk.projected() == walk.context.estimate
            trusted += 1
    assert trusted > 100 and untrusted > 5
