"""find: entries whose text, tool arguments or tool results match, without a model."""

from __future__ import annotations

import shutil

import pytest

from pi_lab import SessionManager
from pi_lab.data import recorded_session
from pi_lab.research import NoteStore
from pi_lab.research.find import FindError, find_entries, findings_as_notes


@pytest.fixture
def sessions(tmp_path):
    path = shutil.copy(recorded_session().path, tmp_path / "tiny.jsonl")
    return [(str(path), SessionManager.open(path, read_only=True))]


def _roles(table):
    return set(table.column("role").to_pylist())


def test_each_field_finds_its_own_entries(sessions):
    sm = sessions[0][1]
    calls = [b for e in sm.get_entries() if e["type"] == "message" and e["message"]["role"] == "assistant"
             for b in e["message"]["content"] if b.get("type") == "toolCall"]
    path_arg = next(b["arguments"]["path"] for b in calls if "path" in b.get("arguments", {}))
    args = find_entries(sessions, path_arg, in_="tool_args")
    assert args.num_rows > 0 and _roles(args) == {"assistant"}
    results = find_entries(sessions, "def ", in_="tool_results")
    assert results.num_rows > 0 and _roles(results) == {"toolResult"}
    text = find_entries(sessions, "jwt", in_="text")
    assert text.num_rows > 0 and "toolResult" not in _roles(text)
    assert all("jwt" in s.lower() for s in text.column("snippet").to_pylist())


def test_case_regex_and_errors(sessions):
    assert find_entries(sessions, "JWT", case=True).num_rows <= find_entries(sessions, "JWT").num_rows
    assert find_entries(sessions, r"auth\.\w+", regex=True, in_="tool_args").num_rows > 0
    assert find_entries(sessions, r"auth\.\w+", in_="tool_args").num_rows == 0  # plain text: no regex
    with pytest.raises(FindError, match="in_"):
        find_entries(sessions, "x", in_="everywhere")
    with pytest.raises(FindError, match="regular expression"):
        find_entries(sessions, "(", regex=True)


def test_matches_become_notes(sessions, tmp_path):
    table = find_entries(sessions, "jwt")
    store = NoteStore(tmp_path / "notes.jsonl")
    ids = store.add_many(findings_as_notes(table, tag="jwt", pattern="jwt"))
    assert len(ids) == table.num_rows
    notes = store.notes()
    assert {n.entry_id for n in notes} == set(table.column("entry_id").to_pylist())
    assert all(n.source == "find: jwt" and n.tag == "jwt" for n in notes)
