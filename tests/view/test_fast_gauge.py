"""The gauge's list of compactions estimates a kept range only when its "after" needs it
(issue 11): a compaction followed by a measured usage before the next one (the usual case)
takes that usage, so the pass over a 48,000-entry branch estimates nothing. The answers are
those of the reprojection oracle of tests/widget/test_payload.py, duplicated ids included."""

from __future__ import annotations

import pytest

from view.view_sessions import generated_session

from pi_lab.session.flatten import FactTable
from pi_lab.view import gauge as gauge_module

from helpers import asst_msg, usage
from widget.test_payload import _compactions_by_reprojection, _tricky_branch


def _estimated_entries(table: FactTable, branch) -> int:
    return sum(1 for entry in branch if table.of(entry).tokens >= 0)


def test_measured_compactions_estimate_no_entry():
    sm = generated_session(6000, 1)
    branch = sm.get_branch()
    table = FactTable()
    found = gauge_module._compactions_on_branch(branch, table)
    assert found and all(c["after_kind"] == "measured" for c in found)
    assert _estimated_entries(table, branch) == 0
    assert [(c["id"], c["after"], c["after_kind"]) for c in found] == _compactions_by_reprojection(branch)


def test_an_unmeasured_compaction_estimates_up_to_itself_only():
    sm = generated_session(6000, 1)
    branch = list(sm.get_branch())
    cut = [i for i, e in enumerate(branch) if e.get("type") == "compaction"][1]
    head = branch[: cut + 1]  # the leaf right on the second compaction: its "after" is estimated
    table = FactTable()
    found = gauge_module._compactions_on_branch(head, table)
    assert found[-1]["after_kind"] == "estimated"
    assert [(c["id"], c["after"], c["after_kind"]) for c in found] == _compactions_by_reprojection(head)
    assert 0 < _estimated_entries(table, head) <= cut


def _chain(entries):
    parent = None
    out = []
    for n, entry in enumerate(entries):
        entry = {"id": entry.pop("id", f"e{n}"), "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z", **entry}
        out.append(entry)
        parent = entry["id"]
    return out


@pytest.mark.parametrize("table", [True, False], ids=["lazy", "eager"])
@pytest.mark.parametrize("duplicate", ["first", "edited", "compaction"])
def test_a_later_duplicate_id_does_not_change_an_earlier_estimate(duplicate, table):
    """The estimate reads the ids as they were at the compaction; an entry written later with
    one of those ids (odd file data) must not move the kept range or an edit's target."""
    branch = _chain([
        {"id": "first", "type": "message", "message": {"role": "user", "content": "question " * 40, "timestamp": 1}},
        {"id": "edited", "type": "message", "message": asst_msg("answer " * 80)},
        {"type": "context_edit", "targetId": "edited", "replacement": {"content": "short"}},
        {"id": "compaction", "type": "compaction", "summary": "sum", "firstKeptEntryId": "first", "tokensBefore": 900},
        {"type": "message", "message": {"role": "user", "content": "more " * 50, "timestamp": 3}},
        {"id": duplicate, "type": "message", "message": {"role": "user", "content": "dup " * 70, "timestamp": 4}},
        {"type": "compaction", "summary": "two", "firstKeptEntryId": duplicate, "tokensBefore": 800},
        {"type": "message", "message": asst_msg("measured", use=usage(1234))},
    ])
    found = gauge_module._compactions_on_branch(branch, FactTable() if table else None)
    got = [(c["id"], c["after"], c["after_kind"]) for c in found]
    assert got == _compactions_by_reprojection(branch)
    assert [kind for *_, kind in got] == ["estimated", "measured"]


def test_the_tricky_branch_still_equals_the_reprojection():
    branch = _tricky_branch()
    got = [(c["id"], c["after"], c["after_kind"]) for c in gauge_module._compactions_on_branch(branch, FactTable())]
    assert got == _compactions_by_reprojection(branch)
