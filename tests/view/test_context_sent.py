"""A selected user message shows the context the model received with it (issue 22).

"What the model sees" at a user message is pi's projection with the leaf on that message: the
context before it on its branch, then the message itself. The pane (src_frontend/core/
projection.ts ``sentWith``) titles it "The context sent with this message" when the last
projected row of the answer is the selected user message, and that rule is read from the rows
every host sends alike: the kernel's ``context_at`` (the widget, the JupyterLab viewer) and the
export's records (pi_lab/export/context.py). These tests hold the rows to it: at every user
message the last projected row is that message, and at no other entry does the last row name
a user message as the selected entry.
"""

from __future__ import annotations

import pytest

from pi_lab.export.context import context_records, messages_of
from pi_lab.session.flatten import flatten_tree
from pi_lab.view.context import context_at
from view.view_sessions import FIXTURE_NAMES, fixture_session, generated_session, needs_fixtures, seed_session


def sent_with(result: dict) -> bool:
    """projection.ts ``sentWith``: the last projected (not omitted) row is the selected entry,
    a user message."""
    for row in reversed(result["messages"]):
        if not row.get("omitted"):
            return row["role"] == "user" and row["source_id"] == result["at"]
    return False


def is_user_message(entry) -> bool:
    message = entry.get("message") if entry.get("type") == "message" else None
    return isinstance(message, dict) and message.get("role") == "user"


def check(sm, limit: int | None = None) -> int:
    entries = [e for e in sm.get_entries() if isinstance(e.get("id"), str)]
    if limit is not None and len(entries) > limit:
        step = len(entries) // limit
        users = [e for e in entries if is_user_message(e)]
        entries = entries[::step] + users[:limit]
    users = 0
    for entry in entries:
        result = context_at(sm.get_branch(entry["id"]))
        assert sent_with(result) == is_user_message(entry), entry["id"]
        if is_user_message(entry):
            users += 1
            # the message itself is in what the model sees, last (pi's projection, unchanged)
            rows = [r for r in result["messages"] if not r.get("omitted")]
            assert rows[-1]["source_id"] == entry["id"]
            # and before it, exactly the context at its parent (what the model saw before it)
            parent = entry.get("parentId")
            if isinstance(parent, str) and sm.get_entry(parent) is not None:
                before = context_at(sm.get_branch(parent))["messages"]
                assert result["messages"][:len(before)] == before, entry["id"]
    return users


def test_seed_user_messages():
    sm = seed_session()
    assert check(sm) == 5  # U1, U2 (the JWT branch), U2B, U3, U4
    result = context_at(sm.get_branch("U3"))
    assert [r["source_id"] for r in result["messages"]] == ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4", "U3"]


@needs_fixtures()
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_user_messages(name, tmp_path):
    sm = fixture_session(name, tmp_path)
    check(sm, 60)


def test_generated_user_messages():
    for seed in (3, 4):
        assert check(generated_session(400, seed), 60) > 0


def test_the_export_sends_the_same_rows():
    """The export page reads its rows from the records (staticTransport.ts does as messages_of):
    at a user message they end with it too, so the page titles it as the kernel's hosts do."""
    for sm in (seed_session(), generated_session(400, 6)):
        flat = flatten_tree(sm.get_tree(), sm.leaf_id)
        records = context_records(flat.entries, flat.parents)
        seen = 0
        for i, entry in enumerate(flat.entries):
            if not isinstance(entry.get("id"), str):
                continue
            rows = messages_of(records, i)
            assert sent_with({"messages": rows, "at": entry["id"]}) == is_user_message(entry), entry["id"]
            seen += is_user_message(entry)
        assert seen > 0
