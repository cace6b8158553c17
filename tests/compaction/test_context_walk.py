"""ContextWalk (the incremental projection the timeline and the corpus extractor walk with)
equals the engine's projection and pi's estimates at every node of a whole tree, entered and
left depth-first; its shortcut for a context_edit equals rebuilding the context."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import MappingProxyType

import pytest

from pi_lab.compaction.context_walk import ContextWalk, MeasureCache, call_usage, rebuild
from pi_lab.compaction.tokens import (
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
    usage_anchor,
)
from pi_lab.session.projection import context_entries_of_path, project_path
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


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_node_of_a_tree_entered_and_left_equals_the_engine(seed, lazy):
    sm = _generated(1500, seed)
    walk = ContextWalk(lazy=lazy)
    checked = 0
    # Depth-first over the whole tree: ("enter", node) and ("leave", None) steps, no recursion.
    steps = [("enter", root) for root in reversed(sm.get_tree())]
    while steps:
        action, node = steps.pop()
        if action == "leave":
            walk.leave()
            continue
        entry = node.entry
        message = entry.get("message") if entry.get("type") == "message" else None
        usage = usage_anchor(message)
        assert walk.enter(entry) == (calculate_context_tokens(usage) if usage is not None else None)
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
        before = rebuild(context_entries_of_path(path), cache)
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


def test_a_lazy_walk_estimates_an_anchor_only_for_a_sum_over_the_whole_context(monkeypatch):
    """Lazy: the anchored estimate never needs the anchors' own estimates; the unanchored one
    and the plain sum take each anchor still in the context once (also across compactions,
    edits, leave and enter again)."""
    import pi_lab.compaction.context_walk as walk_module

    sm = _generated(1500, 6)
    counted: dict[int, int] = {}
    real = walk_module.estimate_tokens

    def counting(message):
        if message.get("role") == "assistant":
            counted[id(message)] = counted.get(id(message), 0) + 1
        return real(message)

    monkeypatch.setattr(walk_module, "estimate_tokens", counting)
    walk = ContextWalk(lazy=True)
    branch = sm.get_branch()
    anchored = 0
    for entry in branch:
        walk.enter(entry)
        if walk.trusted_anchor() is not None:
            before = dict(counted)
            assert walk.projected() == walk.context.estimate
            assert counted == before  # no estimate taken for the anchored estimate
            anchored += 1
    assert anchored > 100
    calls = sum(1 for e in branch if usage_anchor(e.get("message") if e.get("type") == "message" else None))
    assert 0 < len(counted) < calls  # the anchors before the last compaction's kept region: never
    # the plain sum measures what is still pending; leaving and entering again measures nothing
    assert walk.context.plain_tokens == sum(estimate_tokens(m) for m in project_path(branch).messages)
    before = dict(counted)
    for _ in range(40):
        walk.leave()
    for entry in branch[-40:]:
        walk.enter(entry)
        _check(walk)
    assert all(n == 1 for n in counted.values()) and counted.keys() >= before.keys()


def test_a_lazy_context_edit_re_sums_as_a_rebuild():
    sm = _generated(1500, 3)
    cache = MeasureCache()
    edits = 0
    for entry in sm.entries:
        if entry.get("type") != "context_edit":
            continue
        path = sm.get_branch(entry["parentId"])
        before = rebuild(context_entries_of_path(path), cache, lazy=True)
        shortcut = before.with_edit(entry, cache)
        full = rebuild(before.entries + [entry], MeasureCache(), lazy=True)
        eager = rebuild(before.entries + [entry], MeasureCache())
        assert shortcut.entries == full.entries == eager.entries
        for ctx in (shortcut, full):
            assert (ctx.message_count, ctx.plain_tokens, ctx.estimate, ctx.unanchored_estimate()) == (
                eager.message_count, eager.plain_tokens, eager.estimate, eager.unanchored_estimate())
            assert ctx.anchor_entry() is eager.anchor_entry()
        edits += 1
    assert edits > 5


def _call(usage, stop="stop", role="assistant"):
    return {"role": role, "content": [], "stopReason": stop, "usage": usage}


@pytest.mark.parametrize("message", [
    _call({"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3}),
    _call({"totalTokens": 50}),
    _call({"totalTokens": 50}, stop="aborted"),
    _call({"totalTokens": 50}, stop="error"),
    _call({"totalTokens": 50}, role="user"),
    _call({"totalTokens": 0, "input": 4, "output": 1, "cacheRead": 0, "cacheWrite": 0}),
    _call({"totalTokens": 0, "input": 4}),  # a missing counter: NaN, never an anchor
    _call({"totalTokens": -5}),
    _call({"totalTokens": True, "input": 1, "output": 1, "cacheRead": 1, "cacheWrite": 1}),
    _call({"totalTokens": 2.5}),
    _call({"totalTokens": float("nan"), "input": 1, "output": 0, "cacheRead": 0, "cacheWrite": 0}),
    _call({"totalTokens": 10**400}),  # past the float range: Infinity, as JavaScript reads it
    _call({"totalTokens": "12"}),
    _call({}),
    _call(None),
    _call([1, 2]),
    {"role": "assistant", "content": [], "usage": {"totalTokens": 7}},  # no stop reason
    MappingProxyType({"role": "assistant", "content": [], "usage": {"totalTokens": 9}}),  # another mapping
    "not a message",
    None,
])
def test_call_usage_is_the_usage_anchor_rule(message):
    usage = usage_anchor(message)
    expected = calculate_context_tokens(usage) if usage is not None else None
    found = call_usage(message)
    assert found == expected and found.__class__ is expected.__class__


def test_call_usage_of_every_generated_message():
    for seed in (1, 2):
        for entry in _generated(1500, seed).entries:
            message = entry.get("message")
            usage = usage_anchor(message)
            assert call_usage(message) == (calculate_context_tokens(usage) if usage is not None else None)


def test_a_context_edit_finds_its_target_among_entries_that_are_no_dicts():
    """The target is searched at C speed over dict entries; any other mapping takes the plain
    loop and finds the same first entry."""
    from types import MappingProxyType

    sm = _generated(1500, 3)
    cache = MeasureCache()
    checked = 0
    for entry in sm.entries:
        if entry.get("type") != "context_edit" or not isinstance(entry.get("targetId"), str):
            continue
        path = sm.get_branch(entry["parentId"])
        before = rebuild(context_entries_of_path(path), cache)
        proxies = rebuild([MappingProxyType(e) for e in before.entries], MeasureCache())
        shortcut = before.with_edit(entry, cache)
        proxied = proxies.with_edit(entry, MeasureCache())
        assert [dict(e) for e in proxied.entries] == shortcut.entries
        assert proxied.counts == shortcut.counts and proxied.totals == shortcut.totals
        checked += 1
    assert checked > 5
