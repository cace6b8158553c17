"""Per-entry view facts (filter category, kind, error flag, tool calls, token estimate) are
decided once per entry object and shared by the flattening, the rows and the gauge; every
output equals the one the general rules give without the shared facts.

The references below are built from the rules the facts replace: ``flatten._category``,
``entries.display_kind`` (``kinds.entry_kind``), ``entries.is_error_entry``
(``rows.entry_flags``), ``context.entry_tokens`` and the gauge's own ``_kept_tokens``.
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path
from types import MappingProxyType

import orjson
import pytest
from helpers import SEED_SECTION_14, Clock, Ids, asst_msg, tool_result, user_msg

import pi_lab.session.flatten as flatten_module
import pi_lab.view.context as context_module
import pi_lab.view.gauge as gauge_module
from pi_lab.session import SessionManager
from pi_lab.session.entries import display_kind, is_error_entry
from pi_lab.session.flatten import FactTable, entry_facts, flatten_tree, visible_rows
from pi_lab.session.readonly import session_from_bytes
from pi_lab.compaction import estimate_tokens
from pi_lab.session.projection import entry_to_messages
from pi_lab.view.gauge import compactions_on_branch, gauge
from pi_lab.view.kinds import FLAG, entry_kind
from pi_lab.view.payload import SessionView
from pi_lab.view.rows import RowState, entry_flags

from view.view_sessions import FIXTURE_NAMES, fixture_session, generated_session, needs_fixtures, seed_session

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
import fieldfuzz  # noqa: E402

VIEWS = [
    {"filter_mode": "default"},
    {"filter_mode": "no-tools"},
    {"filter_mode": "user-only"},
    {"filter_mode": "all"},
    {"filter_mode": "labeled-only"},
    {"filter_mode": "default", "search": "a"},
]

_LAYOUT_BITS = {
    "show_connector": "show_connector", "is_last": "is_last", "is_leaf": "is_leaf", "foldable": "foldable",
    "folded": "folded", "is_virtual_root_child": "is_virtual_root_child",
}


# ---------------------------------------------------------------------------------------------
# References: the general rules, one entry at a time


def reference_facts(entry):
    calls: dict = {}
    category = flatten_module._category(entry, calls)
    return category, display_kind(entry), is_error_entry(entry), list(calls.items())


def reference_tokens(entry) -> int:
    """pi's estimate of the messages an entry contributes, message by message."""
    return int(sum(estimate_tokens(m) for m in entry_to_messages(dict(entry))))


def facts_tuple(found):
    return found.category, found.kind, found.error, list(found.calls or ())


def reference_columns(state: RowState) -> dict[str, list[int]]:
    """kind, flags and tokens of every row of ``state``, from the rules without shared facts."""
    kinds, flags, tokens = [], [], []
    for row in state.rows:
        f = entry_flags(state.marks, row.entry, row.entry_id, label=row.label, on_active_path=row.on_active_path)
        for attr, bit in _LAYOUT_BITS.items():
            if getattr(row, attr):
                f |= FLAG[bit]
        if row.child_count > 0:
            f |= FLAG["has_children"]
        flags.append(f)
        kinds.append(entry_kind(row.entry))
        tokens.append(min(reference_tokens(row.entry), 0xFFFFFFFF))
    return {"kind": kinds, "flags": flags, "tokens": tokens}


def uncached_gauge(branch, **kwargs):
    """The gauge with every estimate made again (no fact table anywhere)."""
    saved_shared, saved_last = gauge_module.shared_facts, gauge_module._last_compactions
    gauge_module.shared_facts = lambda: None
    gauge_module._last_compactions = None
    try:
        return gauge(branch, **kwargs)
    finally:
        gauge_module.shared_facts = saved_shared
        gauge_module._last_compactions = saved_last


def check_state(state: RowState, *, after_delta: bool = False) -> None:
    ref = reference_columns(state)
    # After a delta the columns are the truth (a row object keeps the layout bits it was made
    # with); its flags are compared with a fresh layout by the caller.
    for name in ("kind", "tokens") if after_delta else ("kind", "flags", "tokens"):
        assert list(getattr(state.columns, name)) == ref[name], name
    # The flattening's categories and tool calls equal the general rule's (after a delta the
    # view's flattening is stale: it is made again at the next layout, with the same table).
    fresh = flatten_tree(state.roots, state.leaf_id)
    again = flatten_tree(state.roots, state.leaf_id, facts=state.facts)
    flat = again if after_delta else state.flat
    calls: dict = {}
    assert flat._categories == [flatten_module._category(e, calls) for e in flat.entries]
    assert list(flat.tool_calls.items()) == list(calls.items())
    # Flattening again with the same table and with none give the same rows, texts included.
    for other in (fresh, again):
        assert other._categories == flat._categories
        assert list(other.tool_calls.items()) == list(flat.tool_calls.items())
        assert other._result_calls == flat._result_calls
    kwargs = dict(filter_mode=state.filter_mode, search=state.search, folded=state.folded, leaf_id=state.leaf_id,
                  home=state.home)
    assert visible_rows(again, **kwargs) == visible_rows(fresh, **kwargs)
    # The gauge's compaction list with the rows' estimates equals the one estimated afresh.
    branch = state.sm.get_branch()
    gauge_module._last_compactions = None
    assert compactions_on_branch(branch, facts=state.facts) == gauge_module._compactions_on_branch(list(branch))
    gauge_module._last_compactions = None
    assert gauge(branch, context_window=200_000, facts=state.facts) == uncached_gauge(branch, context_window=200_000)


def check_session(sm, views=VIEWS) -> None:
    for entry in sm.entries:
        assert facts_tuple(entry_facts(entry)) == reference_facts(entry)
        assert context_module.entry_tokens(entry) == reference_tokens(entry)
    for view in views:
        check_state(RowState(sm, **view))


# ---------------------------------------------------------------------------------------------
# Equality on real, generated and odd sessions


def test_seed_session_facts_equal_the_rules():
    check_session(seed_session())


@needs_fixtures()
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_facts_equal_the_rules(name, tmp_path):
    check_session(fixture_session(name, tmp_path), VIEWS[:1] + VIEWS[3:4])


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_session_facts_equal_the_rules(seed):
    sm = generated_session(1500, seed)
    kinds = Counter(entry_facts(e).kind for e in sm.entries)
    assert kinds["tool_call"] and kinds["assistant"] and kinds["assistant_error"] and kinds["compaction"]
    check_session(sm, VIEWS[:2] + VIEWS[3:4])


def test_mutated_fields_get_the_facts_the_rules_give(tmp_path):
    rng = random.Random(11)
    bases = list(fieldfuzz.base_sessions(generated=2))
    checked = 0
    for step in range(120):
        name, lines = bases[step % len(bases)]
        data, mutation = fieldfuzz.mutate(lines, rng)
        for line in data.splitlines():
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                assert facts_tuple(entry_facts(entry)) == reference_facts(entry), (name, mutation.describe())
                try:
                    expected = reference_tokens(entry)
                except Exception as error:  # the estimate refuses the same odd values either way
                    with pytest.raises(type(error)):
                        context_module.entry_tokens(entry)
                else:
                    assert context_module.entry_tokens(entry) == expected, (name, mutation.describe())
                checked += 1
        try:
            sm = session_from_bytes(data, tmp_path / f"m{step}.jsonl")
        except Exception:  # a header the engine refuses: nothing to lay out
            continue
        state = RowState(sm, filter_mode="all" if step % 2 else "default")
        check_state(state)
    assert checked > 1000


ODD_ASSISTANTS = [
    {"role": "assistant", "content": None, "stopReason": "stop"},
    {"role": "assistant", "content": 5, "stopReason": "error"},
    {"role": "assistant", "content": {"type": "text", "text": "x"}},
    {"role": "assistant", "content": "  \ufeff ", "stopReason": "length"},
    {"role": "assistant", "content": "\x1c", "stopReason": "stop"},
    {"role": "assistant", "content": [" text", {"type": "text", "text": "\u3000"}], "errorMessage": float("nan")},
    {"role": "assistant", "content": [{"type": "text", "text": "\x85"}], "stopReason": ["error"]},
    {"role": "assistant", "content": [{"type": ["text"], "text": "x"}, {"type": "thinking"}], "stopReason": 0},
    {"role": "assistant", "content": [{"type": "toolCall", "id": True, "name": "a"},
                                      {"type": "toolCall", "id": 1.0, "name": "b", "arguments": {}},
                                      {"type": "toolCall", "id": 1, "name": "c"}], "stopReason": "toolUse"},
    {"role": "assistant", "content": [{"type": "toolCall", "id": [1]}], "stopReason": "aborted"},
    {"role": "assistant", "content": [MappingProxyType({"type": "text", "text": "seen"})]},
    {"role": "assistant", "content": [type("D", (dict,), {})(type="toolCall", id="c9", name="x")]},
]


@pytest.mark.parametrize("message", ODD_ASSISTANTS, ids=range(len(ODD_ASSISTANTS)))
def test_odd_assistant_messages_get_the_facts_the_rules_give(message):
    entry = {"type": "message", "id": "a", "parentId": None, "timestamp": "x", "message": message}
    assert facts_tuple(entry_facts(entry)) == reference_facts(entry)
    # The same entry as another mapping type, and with a dict subclass as its message.
    assert facts_tuple(entry_facts(MappingProxyType(entry))) == reference_facts(MappingProxyType(entry))
    odd = {**entry, "message": type("M", (dict,), {})(message)}
    assert facts_tuple(entry_facts(odd)) == reference_facts(odd)


# ---------------------------------------------------------------------------------------------
# Live appends


def _append(sm: SessionManager, rng: random.Random, step: int) -> None:
    choice = rng.randrange(8)
    if choice == 0:
        sm.append_message(user_msg(f"question {step}"))
    elif choice == 1:
        sm.append_message(asst_msg(f"answer {step}"))
    elif choice == 2:
        call = {"id": f"call-{step}", "name": "bash", "arguments": {"command": f"ls {step} 检查"}}
        sm.append_message(asst_msg(None, tool_calls=[call], stop="toolUse"))
    elif choice == 3:
        sm.append_message(tool_result(f"call-{step - 1}", "bash", "out 🙂", is_error=step % 2 == 0))
    elif choice == 4:
        sm.append_message(asst_msg(None, stop="error", error="boom"))
    elif choice == 5:
        target = rng.choice([e["id"] for e in sm.get_branch()])
        sm.append_label_change(target, f"L{step}")
    elif choice == 6:
        sm.branch(rng.choice([e["id"] for e in sm.get_branch()]))
        sm.append_message(user_msg(f"elsewhere {step}"))
    else:
        sm.append_compaction("summary", sm.get_branch()[-1]["id"], 1234)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_live_appends_keep_the_facts_equal_to_the_rules(seed):
    entries = [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]
    sm = SessionManager.in_memory(entries=entries, uuid_factory=Ids(), clock=Clock())
    rng = random.Random(seed)
    state = RowState(sm, filter_mode="all" if seed == 2 else "default")
    table = state.facts
    for step in range(30):
        before = len(table)
        _append(sm, rng, step)
        result = state.sync()
        assert state.facts is table  # an append never starts a new table
        # Only the new entries (and, for a leaf moved by a new branch, nothing else) gain facts.
        assert len(table) <= before + len(result.new_entries) + 1
        check_state(state, after_delta=result.kind == "delta")
        fresh = RowState(sm, filter_mode=state.filter_mode)
        check_state(fresh)
        for name in ("entry", "kind", "flags", "tokens"):
            assert list(getattr(state.columns, name)) == list(getattr(fresh.columns, name)), name


def test_a_reload_starts_a_new_table():
    state = RowState(seed_session())
    first = state.facts
    state.reload()
    assert state.facts is not first and len(state.facts) == len(first)


# ---------------------------------------------------------------------------------------------
# Each fact is computed once


def test_opening_a_view_decides_each_entrys_facts_and_estimate_once(monkeypatch):
    sm = generated_session(800, 4)
    decided: Counter = Counter()
    estimated: Counter = Counter()
    kept_unedited: list = []
    real_facts, real_tokens, real_kept = flatten_module.entry_facts, context_module.entry_tokens, gauge_module._kept_tokens

    def counting_facts(entry):
        decided[id(entry)] += 1
        return real_facts(entry)

    def counting_tokens(entry):
        estimated[id(entry)] += 1
        return real_tokens(entry)

    def counting_kept(entry, edit=None):
        if edit is None:
            kept_unedited.append(entry)
        return real_kept(entry, edit)

    monkeypatch.setattr(flatten_module, "entry_facts", counting_facts)
    monkeypatch.setattr(context_module, "entry_tokens", counting_tokens)
    monkeypatch.setattr(gauge_module, "_kept_tokens", counting_kept)
    gauge_module._last_compactions = None
    view = SessionView.open(sm)
    assert view.gauge["compactions"]  # the gauge's pass ran over the branch
    # The leaf moves and the filter changes: the same entries, nothing decided again.
    view.rows.set_view(filter_mode="all")
    sm.branch(sm.get_branch()[len(sm.get_branch()) // 2]["id"])
    view.rows.sync()
    gauge_module._last_compactions = None
    view.refresh_gauge()
    assert decided and max(decided.values()) == 1
    # Rows estimate an entry only when its text is asked for (issue 11): none may be made twice.
    assert not estimated or max(estimated.values()) == 1
    view.rows.texts(0, len(view.rows.rows))
    view.refresh_gauge()
    assert estimated and max(estimated.values()) == 1
    assert kept_unedited == []  # the gauge took every unedited estimate from the facts


# ---------------------------------------------------------------------------------------------
# Rows without text are made by setting their slots: the same objects as the dataclass makes


def test_rows_without_text_are_the_rows_the_dataclass_makes():
    sm = generated_session(600, 5)
    for mode in ("default", "all"):
        flat = flatten_tree(sm.get_tree(), sm.leaf_id)
        lazy = visible_rows(flat, filter_mode=mode, with_text=False, home="/home/u")
        text_slot = flatten_module._TEXT_SLOT
        for row in lazy:
            assert type(row) is flatten_module._LazyTextRow
            assert text_slot.__get__(row) is None and row._flat is flat and row._home == "/home/u"
            values = [getattr(row, name) for name in flatten_module.NavRow.__dataclass_fields__ if name != "text"]
            made = flatten_module._LazyTextRow(*values[:15], None, *values[15:])
            object.__setattr__(made, "_flat", flat)
            object.__setattr__(made, "_home", "/home/u")
            assert made == row and repr(made) == repr(row)
        eager = visible_rows(flatten_tree(sm.get_tree(), sm.leaf_id), filter_mode=mode, home="/home/u")
        assert lazy == eager
        # The texts are now made: rows laid out again carry them and no text source.
        again = visible_rows(flat, filter_mode=mode, with_text=False, home="/home/u")
        assert again == eager
        assert all(text_slot.__get__(row) is not None and not hasattr(row, "_flat") for row in again)
