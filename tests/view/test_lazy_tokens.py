"""Issue 11: the rows' token estimates are made for the rows somebody looks at.

The structure blob's ``tokens`` column carries ``TOKENS_UNKNOWN`` for a row whose entry is
not estimated yet; the ``rows`` reply carries each row's estimate next to its text, layouts
made later (filter, search, folds) reuse the estimates made, and deltas carry real ones.
"""

from __future__ import annotations

from collections import Counter

import pytest
from helpers import asst_msg, user_msg

import pi_lab.view.context as context_module
from pi_lab.compaction import estimate_tokens
from pi_lab.session.projection import entry_to_messages
from pi_lab.view.columns import TOKENS_MAX, TOKENS_UNKNOWN, TokenColumn, decode_structure, encode_structure
from pi_lab.view.columns import GutterTable, RowColumns
from pi_lab.view.payload import SessionView, read_request, rows_payload, structure_payload
from view.view_sessions import generated_session


def reference_tokens(entry) -> int:
    """pi's estimate of an entry's messages, message by message (no fact table)."""
    return min(int(sum(estimate_tokens(m) for m in entry_to_messages(dict(entry)))), TOKENS_MAX)


@pytest.fixture
def counted(monkeypatch):
    """Counts of ``entry_tokens`` calls by entry id (the one place the views estimate an entry)."""
    calls: Counter = Counter()
    real = context_module.entry_tokens

    def counting(entry):
        calls[entry.get("id")] += 1
        return real(entry)

    monkeypatch.setattr(context_module, "entry_tokens", counting)
    return calls


def test_display_estimates_only_the_rows_of_the_first_text_request(counted):
    sm = generated_session(2500, 1)
    view = SessionView.open(sm)
    at_open = set(counted)  # what the gauge needed (few or none), never a row walk
    blob = structure_payload(view)
    assert set(counted) == at_open, "the structure made estimates"
    header, cols = decode_structure(blob)
    rows = view.rows
    assert len(rows.rows) > 1000
    unknown = [r for r, t in enumerate(cols["tokens"]) if t == TOKENS_UNKNOWN]
    # Every row is unknown but those of entries the gauge estimated (sent as they are).
    assert len(unknown) >= len(rows.rows) - len(at_open)
    for r, t in enumerate(cols["tokens"]):
        if t != TOKENS_UNKNOWN:
            assert rows.ids[r] in at_open and t == reference_tokens(rows.rows[r].entry)

    start = max(0, header["anchor_row"] - 50)
    reply = rows_payload(view, start, start + 100)
    asked = {rows.ids[r] for r in range(start, min(start + 100, len(rows.rows)))}
    assert set(counted) - at_open <= asked  # nothing outside the request
    assert set(counted) | at_open >= asked
    assert max(counted.values()) == 1  # each entry once
    for i, text in enumerate(reply["rows"]):
        assert text["tokens"] == reference_tokens(rows.rows[start + i].entry)
    # The next structure carries them; rows nobody asked for still carry the sentinel.
    _, again = decode_structure(structure_payload(view))
    for r, t in enumerate(again["tokens"]):
        if start <= r < start + 100:
            assert t == reference_tokens(rows.rows[r].entry)
        elif rows.ids[r] not in at_open:
            assert t == TOKENS_UNKNOWN


def test_every_row_estimate_equals_the_eager_value():
    sm = generated_session(1200, 4)
    view = SessionView.open(sm)
    rows = view.rows
    for start in range(0, len(rows.rows), 200):
        reply = read_request(view, "rows", {"start": start, "end": start + 200})
        for i, text in enumerate(reply["rows"]):
            assert text["tokens"] == reference_tokens(rows.rows[start + i].entry)
    # Python readers of the column get the eager values whatever was asked for.
    fresh = SessionView.open(sm)
    assert list(fresh.rows.columns.tokens) == [reference_tokens(r.entry) for r in fresh.rows.rows]


def test_a_filter_change_after_some_texts_keeps_their_estimates(counted):
    sm = generated_session(1500, 1)
    view = SessionView.open(sm)
    rows = view.rows
    rows_payload(view, 0, 60)
    fetched = {rows.ids[r] for r in range(60)}
    made = Counter(counted)
    for mode, search in (("all", ""), ("default", "the"), ("no-tools", "")):
        rows.set_view(filter_mode=mode, search=search)
        assert counted == made, f"the layout for {mode!r} estimated again"
        _, cols = decode_structure(structure_payload(view))
        kept = 0
        for r, t in enumerate(cols["tokens"]):
            if rows.ids[r] in fetched:
                assert t == reference_tokens(rows.rows[r].entry)
                kept += 1
            elif rows.ids[r] not in made:
                assert t == TOKENS_UNKNOWN
        assert kept  # some fetched rows are visible in each of these views
    rows.set_view(filter_mode="default", search="", folded=[rows.ids[0]])
    assert counted == made


def test_live_appends_carry_their_estimates_at_once():
    sm = generated_session(300, 2)
    view = SessionView.open(sm)
    rows = view.rows
    for n in range(6):
        entry_id = sm.append_message(user_msg(f"live question {n} " * (n + 1)) if n % 2 == 0
                                     else asst_msg(f"live answer {n} " * (3 * n)))
        result = rows.sync()
        assert result.kind == "delta"
        inserted = [op for op in result.delta.ops if op["op"] in ("insert", "replace")]
        assert inserted
        for op in inserted:
            expected = reference_tokens(sm.get_entry(op["text"]["id"]))
            assert expected > 0
            assert op["values"][5] == expected and op["values"][5] != TOKENS_UNKNOWN
            assert op["text"]["tokens"] == expected
        assert rows.ids[rows.leaf_row] == entry_id
    _, cols = decode_structure(structure_payload(view))
    assert cols["tokens"][rows.leaf_row] == reference_tokens(sm.get_entry(rows.leaf_id))


class _Facts:
    def __init__(self, tokens: int = -1):
        self.tokens = tokens


def test_token_column_reads_real_values_and_sends_the_sentinel():
    estimates = []

    def estimate(facts):
        estimates.append(facts)
        facts.tokens = 10 * len(estimates)
        return facts.tokens

    made_elsewhere = _Facts(42)  # e.g. the gauge estimated this entry after the layout
    facts = [_Facts(), made_elsewhere, _Facts(), _Facts()]
    column = TokenColumn([5, TOKENS_UNKNOWN, TOKENS_UNKNOWN, TOKENS_UNKNOWN], facts, estimate)
    assert column.wire() == [5, 42, TOKENS_UNKNOWN, TOKENS_UNKNOWN] and estimates == []
    assert column[2] == 10 and column[-1] == 20 and column[1] == 42
    assert column.wire() == [5, 42, 10, 20]
    with pytest.raises(IndexError):
        column[4]
    column.insert(0, 2**40)  # a real value is capped below the sentinel
    assert column.wire()[0] == TOKENS_MAX
    del column[0]
    column[0] = 7
    assert list(column) == [7, 42, 10, 20] and column == [7, 42, 10, 20] and column[1:3] == [42, 10]
    # The blob carries the wire values.
    cols = RowColumns(entry=[0, 1], parent=[-1, 0], indent=[0, 0], flags=[0, 0], kind=[1, 2],
                      tokens=TokenColumn([3, TOKENS_UNKNOWN], [None, _Facts()], estimate), gutter=[0, 0])
    _, decoded = decode_structure(encode_structure(cols, GutterTable(), {"version": 1}))
    assert decoded["tokens"] == [3, TOKENS_UNKNOWN]
