"""The rows' columns are written straight from the layout (issue 11) and say exactly what the
rows say.

``RowState.layout`` used to build one ``NavRow`` per visible row and then read every column
back from those rows; it now fills the columns from ``visible_layout``'s own columns and makes
a row only when it is read. The reference below is that former implementation (the columns
read from ``visible_rows``' rows, whose rules the navigation tests pin against pi): on real
pi files and generated sessions, in every filter mode, with searches and folds, and after
live appends, the structure blob, the row texts, the gauge and every row field are the same.
"""

from __future__ import annotations

import pytest

from view.view_sessions import FIXTURE_NAMES, fixture_session, generated_session, needs_fixtures, seed_session

from pi_lab.session.flatten import RowLayout, visible_rows
from pi_lab.view.columns import GutterTable, RowColumns, decode_structure
from pi_lab.view.context import facts_tokens
from pi_lab.view.kinds import FLAG, KIND
from pi_lab.view.payload import SessionView, structure_payload
from pi_lab.view.rows import RowList, RowState

MODES = ("default", "no-tools", "user-only", "labeled-only", "all")


def _reference_columns(state: RowState) -> tuple[list, RowColumns, GutterTable]:
    """The former ``RowState.layout``: rows first, then each column read from the rows."""
    rows = visible_rows(state.flat, filter_mode=state.filter_mode, search=state.search, folded=state.folded,
                        leaf_id=state.leaf_id, home=state.home, with_text=False)
    cols = RowColumns()
    gutters = GutterTable()
    marks = state.marks
    for row in rows:
        entry_id = row.entry_id
        is_str = isinstance(entry_id, str)
        cols.entry.append(state.entry_pos.get(entry_id, 0) if is_str else 0)
        cols.parent.append(row.parent)
        cols.indent.append(min(row.indent, 0xFFFF))
        found = state.flat.facts[row.index]
        f = FLAG["on_active_path"] if row.on_active_path else 0
        if row.label:
            f |= FLAG["has_label"]
        if is_str:
            if entry_id in marks.out_of_context:
                f |= FLAG["out_of_context"]
            if entry_id == marks.first_kept_id:
                f |= FLAG["first_kept"]
            if entry_id in marks.omitted:
                f |= FLAG["omitted"]
            if entry_id in marks.replaced:
                f |= FLAG["replaced"]
        if found.error:
            f |= FLAG["error"]
        for name in ("show_connector", "is_last", "is_leaf", "foldable", "folded", "is_virtual_root_child"):
            if getattr(row, name):
                f |= FLAG[name]
        if row.child_count > 0:
            f |= FLAG["has_children"]
        cols.flags.append(f)
        cols.kind.append(KIND[found.kind])
        cols.tokens.append(min(facts_tokens(found), 0xFFFFFFFF))
        cols.gutter.append(gutters.id_of(row.gutters))
    return rows, cols, gutters


def _assert_same_as_reference(state: RowState) -> None:
    rows, cols, gutters = _reference_columns(state)
    for name in ("entry", "parent", "indent", "flags", "kind", "tokens", "gutter"):
        assert getattr(state.columns, name) == getattr(cols, name), name
    assert (state.gutters.parent, state.gutters.position, state.gutters.show) == (gutters.parent, gutters.position, gutters.show)
    assert state.ids == [row.entry_id for row in rows]
    assert state.multiple_roots == (sum(1 for row in rows if row.parent < 0) > 1)
    row_of = {entry_id: r for r, entry_id in enumerate(state.ids) if isinstance(entry_id, str)}  # the last row of an id
    leaf = state.leaf_id
    assert state.leaf_row == (row_of.get(leaf, -1) if isinstance(leaf, str) else -1)
    if state.leaf_row >= 0:
        assert state.anchor_row == state.leaf_row
    assert state.rows == rows and rows == state.rows  # every field of every row, texts included
    eager = visible_rows(state.flat, filter_mode=state.filter_mode, search=state.search, folded=state.folded,
                         leaf_id=state.leaf_id, home=state.home)
    assert [state.row_text(r)["text"] for r in range(len(state.rows))] == [row.text for row in eager]


def _sessions(tmp_path):
    yield "seed", seed_session()
    for name in FIXTURE_NAMES:
        yield name, fixture_session(name, tmp_path)
    for seed in (1, 4):
        yield f"generated-{seed}", generated_session(2500, seed)


@needs_fixtures()
@pytest.mark.parametrize("mode", MODES)
def test_columns_equal_the_rows_they_describe(tmp_path, mode):
    for name, sm in _sessions(tmp_path):
        for search in ("", "read", "the a"):
            state = RowState(sm, filter_mode=mode, search=search)
            _assert_same_as_reference(state)


@needs_fixtures()
def test_columns_with_folds_equal_the_rows(tmp_path):
    for name, sm in _sessions(tmp_path):
        state = RowState(sm)
        foldable = [state.ids[r] for r, row in enumerate(state.rows) if row.foldable]
        for folds in (foldable[:1], foldable[1:4], foldable):
            state.set_view(folded=folds)
            _assert_same_as_reference(state)


def test_no_row_object_is_made_until_a_row_is_read():
    state = RowState(generated_session(2000, 2))
    assert isinstance(state.rows, RowList)
    assert not any(isinstance(item, object) and not isinstance(item, int) for item in state.rows._items)
    first = state.texts(0, 3)
    assert [r for r, item in enumerate(state.rows._items) if not isinstance(item, int)] == [0, 1, 2]
    assert first == [state.row_text(r) for r in range(3)]
    assert state.rows[-1] == state.rows[len(state.rows) - 1] and state.rows[1:3] == [state.rows[1], state.rows[2]]
    with pytest.raises(IndexError):
        state.rows[len(state.rows)]


def test_live_appends_keep_rows_and_columns_in_step():
    """Appends edit the row list in place (insert, replace, delete); a full layout of the
    grown session then gives the same texts and columns (the columns are what a delta keeps
    current; a row object made by an append keeps the fields it was made with)."""
    from pi_lab.session import SessionManager

    sm = SessionManager.in_memory()
    view = SessionView.open(sm)
    for n in range(12):
        if n % 3 == 2:
            sm.append_message({"role": "assistant", "content": [{"type": "toolCall", "id": f"c{n}", "name": "read",
                                                                  "arguments": {"path": f"/f{n}"}}],
                               "stopReason": "toolUse", "timestamp": n})
        elif n % 2:
            sm.append_message({"role": "assistant", "content": [{"type": "text", "text": f"reply {n}"}],
                               "stopReason": "stop", "timestamp": n})
        else:
            sm.append_message({"role": "user", "content": f"question {n}", "timestamp": n})
        view.rows.sync()
    assert [row.entry_id for row in view.rows.rows] == view.rows.ids
    live_texts = view.rows.texts(0, len(view.rows.rows))
    # After every row's text was asked for (the structure carries the estimates made so far).
    live_header, live_columns = decode_structure(structure_payload(view))
    fresh = SessionView.open(sm)
    assert [row.entry_id for row in fresh.rows.rows] == view.rows.ids
    assert fresh.rows.texts(0, len(fresh.rows.rows)) == live_texts
    assert fresh.rows.columns == view.rows.columns
    header, columns = decode_structure(structure_payload(fresh))
    assert columns == live_columns
    assert {k: v for k, v in header.items() if k != "version"} == {k: v for k, v in live_header.items() if k != "version"}
    _assert_same_as_reference(fresh.rows)


def test_a_row_made_while_another_thread_inserts_lands_in_its_own_slot(monkeypatch):
    """The widget reads rows on the loop while a queued sync may insert rows on a worker
    thread. An insert that comes while a row is being made must not put that row in the slot
    the insert moved another row into."""
    import threading

    state = RowState(generated_session(400, 2))
    rows = state.rows
    layout = rows._layout
    expected = [layout.lazy_row(r) for r in range(6)]
    inserted = expected[0]  # any row object; only its position matters
    real = RowLayout.lazy_row
    worker: list[threading.Thread] = []

    def slow_lazy_row(self, r):
        if not worker:  # the first row made: another thread inserts a row at the top meanwhile
            worker.append(threading.Thread(target=rows.insert, args=(0, inserted)))
            worker[0].start()
            worker[0].join(0.2)
        return real(self, r)

    monkeypatch.setattr(RowLayout, "lazy_row", slow_lazy_row)
    made = rows[3]
    worker[0].join()
    assert made == expected[3]
    assert rows[0] is inserted and rows[4] is made  # the made row moved down with its slot
    assert [rows[p] for p in (1, 2, 3, 5)] == [expected[0], expected[1], expected[2], expected[4]]
