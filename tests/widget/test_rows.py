"""RowState: full layouts match the engine's navigation rows, and every live delta leaves the
rows exactly as a fresh layout of the grown session would."""

from __future__ import annotations

import random

import orjson
import pytest
from helpers import SEED_SECTION_14, Clock, Ids, asst_msg, tool_result, user_msg

from pi_lab.session import SessionManager
from pi_lab.session.flatten import navigation_rows
from pi_lab.view.columns import TOKENS_UNKNOWN, decode_structure
from pi_lab.view.kinds import FLAG, KIND
from pi_lab.view.rows import RowState

VIEWS = [
    {"filter_mode": "default"},
    {"filter_mode": "no-tools"},
    {"filter_mode": "user-only"},
    {"filter_mode": "all"},
    {"filter_mode": "labeled-only"},
    {"filter_mode": "default", "search": "user"},
]


def seed_session() -> SessionManager:
    entries = [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]
    return SessionManager.in_memory(entries=entries, uuid_factory=Ids(), clock=Clock())


def resolve(table: list[list[int]], gutter_id: int) -> tuple:
    """A gutter id as its list of (position, show) pairs (ids depend on encounter order)."""
    out = []
    while gutter_id > 0:
        parent, position, show = table[gutter_id]
        out.append((position, show))
        gutter_id = parent
    return tuple(reversed(out))


def table_of(state: RowState) -> list[list[int]]:
    g = state.gutters
    return [[g.parent[i], g.position[i], g.show[i]] for i in range(len(g))]


def canonical(rows: list[list[int]], table: list[list[int]]) -> list[list]:
    return [[*values[:6], resolve(table, values[6])] for values in rows]


def snapshot(state: RowState) -> tuple:
    cols = state.columns
    rows = [cols.values(r) for r in range(len(cols))]
    return (
        canonical(rows, table_of(state)),
        [state.row_text(r) for r in range(len(state.rows))],
        state.leaf_row,
    )


def apply_delta(rows: list[list[int]], texts: list[dict], message: dict) -> None:
    """What the browser does with a delta, on plain lists."""
    for op in message["ops"]:
        r = op["row"]
        if op["op"] == "flags":
            rows[r][3] = op["flags"]
        elif op["op"] == "insert":
            for values in rows[r:]:
                if values[1] >= r:
                    values[1] += 1
            rows.insert(r, list(op["values"]))
            texts.insert(r, op["text"])
        elif op["op"] == "replace":
            rows[r] = list(op["values"])
            texts[r] = op["text"]
        elif op["op"] == "remove":
            del rows[r]
            del texts[r]
            for values in rows[r:]:
                if values[1] > r:
                    values[1] -= 1
        elif op["op"] == "text":
            texts[r] = op["text"]


def test_seed_rows_match_navigation_and_mark_the_compaction():
    sm = seed_session()
    state = RowState(sm)
    nav = navigation_rows(sm)
    assert [r.entry_id for r in state.rows] == [r.entry_id for r in nav]
    assert state.columns.parent == [r.parent for r in nav]
    assert state.columns.indent == [r.indent for r in nav]
    by_id = dict(zip(state.ids, state.columns.flags))
    # C1 keeps U4 onwards: U1..A5 on the branch were summarised away, U4 is the first kept.
    for gone in ("U1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5"):
        assert by_id[gone] & FLAG["out_of_context"], gone
    assert by_id["U4"] & FLAG["first_kept"]
    assert not by_id["A6"] & FLAG["out_of_context"]
    # The JWT branch is not on the active path and is not marked as summarised.
    assert not by_id["U2"] & (FLAG["on_active_path"] | FLAG["out_of_context"])
    assert by_id["C1"] & FLAG["is_leaf"]
    kinds = dict(zip(state.ids, state.columns.kind))
    assert kinds["BS1"] == KIND["branch_summary"] and kinds["C1"] == KIND["compaction"]
    assert kinds["T1"] == KIND["tool_result"]


def test_structure_blob_round_trips():
    state = RowState(seed_session())
    header, cols = decode_structure(state.structure(selected_row=3))
    # Before any text was asked for, the tokens column carries the sentinel (issue 11) or an
    # estimate already made; every other column is the state's.
    assert all(sent in (TOKENS_UNKNOWN, real) for sent, real in zip(cols["tokens"], state.columns.tokens))
    state.texts(0, len(state.rows))  # every row's text (and estimate) asked for
    header, cols = decode_structure(state.structure(selected_row=3))
    assert header["row_count"] == len(state.rows) == len(cols["entry"])
    assert header["selected_row"] == 3 and header["leaf_id"] == "C1"
    for name in ("entry", "parent", "indent", "flags", "kind", "tokens", "gutter"):
        assert cols[name] == getattr(state.columns, name)
    assert cols["gutter_parent"] == state.gutters.parent


def _random_entry(sm: SessionManager, rng: random.Random, step: int) -> None:
    choice = rng.randrange(10)
    if choice == 0:
        sm.append_message(user_msg(f"question {step} about user things"))
    elif choice == 1:
        sm.append_message(asst_msg(f"answer {step}"))
    elif choice == 2:
        call = {"id": f"call-{step}", "name": "bash", "arguments": {"command": f"ls {step}"}}
        sm.append_message(asst_msg(None, tool_calls=[call], stop="toolUse"))
    elif choice == 3:
        sm.append_message(tool_result(f"call-{step - 1}", "bash", "out"))
    elif choice == 4:
        sm.append_model_change("anthropic", f"m{step}")
    elif choice == 5:
        target = rng.choice([e["id"] for e in sm.get_branch()])
        sm.append_label_change(target, rng.choice([None, f"L{step}"]))
    elif choice == 6:
        sm.append_custom_message_entry("note", f"custom {step}", True)
    elif choice == 7:
        sm.append_thinking_level_change(rng.choice(["low", "high"]))
    elif choice == 8:
        sm.append_message(asst_msg(None, stop="error", error="boom"))
    else:
        sm.append_message({"role": "bashExecution", "command": f"echo {step}", "output": "x", "exitCode": 0,
                           "cancelled": False, "truncated": False, "timestamp": step})


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: "+".join(str(x) for x in v.values()))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_delta_equals_a_fresh_layout(view, seed):
    rng = random.Random(seed)
    sm = seed_session()
    if seed == 2:
        sm.branch("A2")  # start below a branch point
    state = RowState(sm, **view)
    table = table_of(state)
    rows = [state.columns.values(r) for r in range(len(state.rows))]
    texts = [state.row_text(r) for r in range(len(state.rows))]
    deltas = 0
    for step in range(60):
        _random_entry(sm, rng, step)
        result = state.sync()
        fresh = RowState(sm, **view)
        if result.kind == "delta":
            deltas += 1
            message = result.delta.message()
            assert message["from"] + 1 == message["to"]
            assert message["gutter_base"] == len(table)
            table.extend(message["gutters"])
            apply_delta(rows, texts, message)
            assert len(orjson.dumps(message)) < 1500
        else:
            assert result.kind == "layout"
            table = table_of(state)
            rows = [state.columns.values(r) for r in range(len(state.rows))]
            texts = [state.row_text(r) for r in range(len(state.rows))]
        expected_rows, expected_texts, expected_leaf = snapshot(fresh)
        # Token estimates and entry positions are per entry, so every column must agree.
        assert canonical(rows, table) == expected_rows, (step, view)
        assert texts == expected_texts
        assert state.leaf_row == expected_leaf
        assert snapshot(state)[0] == expected_rows
    assert deltas > 20  # the live path is the common one


def test_new_branch_point_lays_out_again():
    sm = seed_session()
    state = RowState(sm)
    sm.branch("A6")  # A6 already has a child (C1): the next entry makes a branch point
    sm.append_message(user_msg("other way"))
    assert state.sync().kind == "layout"
    assert snapshot(state) == snapshot(RowState(sm))


def test_folded_ancestor_hides_new_entries():
    sm = seed_session()
    state = RowState(sm, folded={"BS1"})
    before = len(state.rows)
    sm.append_message(user_msg("hidden by the fold"))
    result = state.sync()
    assert result.kind == "delta"
    assert len(state.rows) == before
    assert snapshot(state) == snapshot(RowState(sm, folded={"BS1"}))


def test_a_row_of_an_unknown_type_carries_its_raw_type_also_in_a_delta():
    entries = [orjson.loads(line) for line in SEED_SECTION_14.splitlines() if line.strip()]
    entries.append({"type": "future_thing", "id": "F1", "parentId": "C1", "timestamp": "2026-07-29T09:06:00Z"})
    sm = SessionManager.in_memory(entries=entries)
    rows = RowState(sm, filter_mode="all")
    row = rows.ids.index("F1")
    assert rows.row_text(row)["text"] == "" and rows.row_text(row)["type"] == "future_thing"
    assert "type" not in rows.row_text(rows.ids.index("U1"))  # rows with text need no type
    sm.add_loaded_entries([{"type": "later_thing", "id": "F2", "parentId": "F1", "timestamp": "2026-07-29T09:07:00Z"}])
    result = rows.sync()
    inserted = [op for op in result.delta.ops if op["op"] == "insert"]
    assert [op["text"]["type"] for op in inserted] == ["later_thing"]
