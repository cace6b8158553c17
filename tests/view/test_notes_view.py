"""Notes in the viewers (issue 26): the notes payload, the note requests, the note filter's rows."""

from __future__ import annotations

import hashlib
import json

import pytest
from helpers import asst_msg, header, msg, user_msg
from shared_fixtures import FIXTURES_DIR, FIXTURES_PRESENT, NO_FIXTURES
from view.view_sessions import generated_session

from pi_lab.research.notes import NoteStore
from pi_lab.session import SessionManager
from pi_lab.session.readonly import session_from_bytes
from pi_lab.view.contract import MAX_NOTE_TAG_CHARS, MAX_NOTE_TEXT_CHARS, NOTE_OP_NAMES
from pi_lab.view.notes import STATIC_REFUSAL, kept_entry_ids, note_filter_arg, note_request, notes_payload
from pi_lab.view.requests import RequestError
from pi_lab.view.rows import RowState


def branched():
    """u1 → a1 → u2 → a2 → u3 → a3 (leaf), and a1 → u2b → a2b."""
    entries = [msg("u1", None, user_msg("start"), 1), msg("a1", "u1", asst_msg("one"), 2),
               msg("u2", "a1", user_msg("two"), 3), msg("a2", "u2", asst_msg("two done"), 4),
               msg("u2b", "a1", user_msg("other way"), 5), msg("a2b", "u2b", asst_msg("other done"), 6),
               msg("u3", "a2", user_msg("three"), 7), msg("a3", "u3", asst_msg("three done"), 8)]
    sm = SessionManager.in_memory("/repo", entries=[header(), *entries])
    sm.branch("a3")
    return sm


def shape(rows: RowState) -> list[tuple[str, int]]:
    return [(rows.ids[r], rows.columns.parent[r]) for r in range(len(rows.ids))]


def filtered(store, sm, note_filter, **view):
    return RowState(sm, note_filter=note_filter, note_keep=kept_entry_ids(store, sm, note_filter), **view)


def test_contract_names_the_four_requests():
    assert NOTE_OP_NAMES == ("notes", "note_add", "note_edit", "note_remove")


def test_payload_and_requests(tmp_path):
    sm = branched()
    store = NoteStore(tmp_path / "notes.jsonl")
    empty = note_request(store, sm, "notes", {})
    assert empty == {"notes": [], "tags": [], "store": store.path, "writable": True, "version": 0}
    added = note_request(store, sm, "note_add", {"entry_id": "a1", "text": "claims tests pass", "tag": " claim "})
    [note] = added["notes"]
    assert {k: note[k] for k in ("entry_id", "end_entry_id", "scope", "tag", "text", "source", "question",
                                 "missing")} == {
        "entry_id": "a1", "end_entry_id": None, "scope": "entry", "tag": "claim", "text": "claims tests pass",
        "source": "person", "question": None, "missing": False}
    assert note["created"] == note["updated"] and note["created"].endswith("Z")
    assert added["tags"] == ["claim"] and added["version"] != 0
    ranged = note_request(store, sm, "note_add", {"entry_id": "u2", "end_entry_id": "a3", "tag": "detour"})
    assert ranged["notes"][1]["scope"] == "range" and ranged["version"] != added["version"]
    edited = note_request(store, sm, "note_edit", {"id": note["id"], "text": "never ran pytest"})
    assert [n["text"] for n in edited["notes"]] == ["never ran pytest", ""]
    assert edited["notes"][0]["updated"] >= edited["notes"][0]["created"]
    removed = note_request(store, sm, "note_remove", {"id": note["id"]})
    assert [n["tag"] for n in removed["notes"]] == ["detour"] and removed["tags"] == ["detour"]
    # a note of another session is not shown, and cannot be edited from this one
    other = SessionManager.in_memory("/repo", entries=[header("S2"), msg("u1", None, user_msg("x"))])
    foreign = note_request(store, other, "note_add", {"entry_id": "u1", "text": "elsewhere"})["notes"][0]
    assert [n["id"] for n in note_request(store, sm, "notes")["notes"]] == [removed["notes"][0]["id"]]
    with pytest.raises(RequestError, match="no note"):
        note_request(store, sm, "note_remove", {"id": foreign["id"]})


def test_a_note_on_an_entry_this_session_lacks_is_flagged_missing(tmp_path):
    sm = branched()
    store = NoteStore(tmp_path / "n.jsonl")
    store.add_many([{"session_id": sm.session_id, "entry_id": "gone", "text": "from an older copy"}])
    [note] = notes_payload(store, sm)["notes"]
    assert note["missing"] is True
    assert kept_entry_ids(store, sm, "noted") == frozenset()


BAD = [
    ("note_add", {"entry_id": 5, "text": "x"}, "entry_id must be an entry id"),
    ("note_add", {"entry_id": "nope", "text": "x"}, "not in this session"),
    ("note_add", {"entry_id": "a1"}, "needs a text or a tag"),
    ("note_add", {"entry_id": "a1", "text": "  ", "tag": ""}, "needs a text or a tag"),
    ("note_add", {"entry_id": "a1", "text": ["x"]}, "text must be a string, not a list"),
    ("note_add", {"entry_id": "a1", "tag": {"a": 1}}, "tag must be a string, not an object"),
    ("note_add", {"entry_id": "a1", "text": "x" * (MAX_NOTE_TEXT_CHARS + 1)}, "at most 20,000"),
    ("note_add", {"entry_id": "a1", "tag": "t" * (MAX_NOTE_TAG_CHARS + 1)}, "at most 100"),
    ("note_add", {"entry_id": "a1", "tag": "two\nlines"}, "one line"),
    ("note_add", {"entry_id": "a1", "text": "x", "scope": "forest"}, "scope must be one of"),
    ("note_add", {"entry_id": "a1", "text": "x", "scope": 3}, "scope must be one of"),
    ("note_add", {"entry_id": "a1", "text": "x", "scope": "range"}, "needs end_entry_id"),
    ("note_add", {"entry_id": "a1", "text": "x", "end_entry_id": True}, "end_entry_id must be an entry id"),
    ("note_add", {"entry_id": "a3", "text": "x", "end_entry_id": "a2b"}, "one path"),
    ("note_add", None, "entry_id must be"),
    ("note_add", [1], "arguments must be an object"),
    ("note_edit", {"id": 1}, "id must be a note id"),
    ("note_edit", {"id": "unknown", "text": "x"}, "no note"),
    ("note_remove", {}, "id must be a note id"),
    ("note_frob", {}, "unknown note request"),
    (7, {}, "request name must be a string"),
]


@pytest.mark.parametrize("op,args,reason", BAD, ids=[f"{i}-{case[2]}" for i, case in enumerate(BAD)])
def test_bad_requests_are_one_line_refusals(tmp_path, op, args, reason):
    sm = branched()
    store = NoteStore(tmp_path / "n.jsonl")
    with pytest.raises(RequestError, match=reason) as caught:
        note_request(store, sm, op, args)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "n.jsonl").exists()  # nothing written


def test_edit_refuses_to_empty_a_note_and_a_read_only_store_refuses_writes(tmp_path):
    sm = branched()
    store = NoteStore(tmp_path / "n.jsonl")
    note = note_request(store, sm, "note_add", {"entry_id": "a1", "text": "x"})["notes"][0]
    with pytest.raises(RequestError, match="remove the note instead"):
        note_request(store, sm, "note_edit", {"id": note["id"], "text": ""})
    with pytest.raises(RequestError, match="needs a text or a tag to change"):
        note_request(store, sm, "note_edit", {"id": note["id"]})
    with pytest.raises(RequestError, match="cannot be written"):
        note_request(store, sm, "note_add", {"entry_id": "a1", "text": "y"}, writable=False)
    assert note_request(store, sm, "notes", writable=False)["writable"] is False
    assert "static export" in STATIC_REFUSAL


def test_note_filter_argument():
    assert note_filter_arg(None) == "" and note_filter_arg("noted") == "noted"
    assert note_filter_arg("tag: claim ") == "tag:claim"
    for bad, reason in ((3, "must be a string"), ("tag:", "must name a tag"), ("labels", "must be"),
                        ("tag:a\nb", "one line")):
        with pytest.raises(RequestError, match=reason):
            note_filter_arg(bad)


def test_note_filter_rows_on_a_built_branched_session(tmp_path):
    sm = branched()
    store = NoteStore(tmp_path / "n.jsonl")
    store.add(sm, "a1", "x one", tag="x")
    store.add(sm, "a2b", "y one", tag="y")
    store.add(sm, "u3", "the end", tag="x", end_entry_id="a3")  # a range: u3 and a3
    # Kept entries re-attach to their nearest kept ancestor: a1 becomes a branch point with the
    # active branch (u3, a3) first, then a2b.
    assert shape(filtered(store, sm, "noted")) == [("a1", -1), ("u3", 0), ("a3", 1), ("a2b", 0)]
    assert shape(filtered(store, sm, "tag:x")) == [("a1", -1), ("u3", 0), ("a3", 1)]
    assert shape(filtered(store, sm, "tag:y")) == [("a2b", -1)]
    assert shape(filtered(store, sm, "tag:none")) == []
    # combined with the filter mode and the search, as each narrows the other
    assert shape(filtered(store, sm, "noted", filter_mode="user-only")) == [("u3", -1)]
    assert shape(filtered(store, sm, "noted", search="done")) == [("a3", -1), ("a2b", -1)]
    # a branch note covers the path from the root
    store.add(sm, "a2", "this branch", tag="b", scope="branch")
    assert shape(filtered(store, sm, "tag:b")) == [("u1", -1), ("a1", 0), ("u2", 1), ("a2", 2)]
    # the structure says which note filter it was laid out with
    rows = filtered(store, sm, "tag:b")
    assert rows.structure().find(b'"note_filter":"tag:b"') > 0
    rows.set_view(note_filter="", note_keep=None)
    assert len(rows.ids) == 8


@pytest.mark.skipif(not FIXTURES_PRESENT, reason=NO_FIXTURES)
def test_note_filter_rows_on_the_real_branched_fixture(tmp_path):
    copy = tmp_path / "branching.jsonl"
    copy.write_bytes((FIXTURES_DIR / "public-twkrash-branching.jsonl").read_bytes())
    before = hashlib.sha256(copy.read_bytes()).hexdigest()
    sm = SessionManager.open(copy, read_only=True)
    # e1 user → e2 model_change → { e3 tool call → e4 tool result → e5 compaction → e6 reply,
    #                                e7 tool call → e8 future_entry (the leaf) }
    assert sm.leaf_id == "e8"
    store = NoteStore(tmp_path / "notes.jsonl")
    store.add(sm, "e8", "what is this entry", tag="x")
    store.add(sm, "e3", "read before compaction", tag="y", end_entry_id="e5")  # e3, e4, e5
    store.add(sm, "e1", "the ask")
    # e3 (a tool call that is not the leaf) and e2 (a setting) stay hidden in the default mode.
    assert shape(filtered(store, sm, "noted")) == [("e1", -1), ("e8", 0), ("e4", 0), ("e5", 2)]
    assert shape(filtered(store, sm, "tag:x")) == [("e8", -1)]
    assert shape(filtered(store, sm, "tag:y")) == [("e4", -1), ("e5", 0)]
    assert shape(filtered(store, sm, "tag:y", filter_mode="no-tools")) == [("e5", -1)]
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == before


def _reference(sm, kept, filter_mode="default"):
    """The note filter's rows made the slow, obvious way: the unfiltered "all" view's order, and
    for each kept row the nearest kept ancestor by walking parentId."""
    every = RowState(sm, filter_mode="all")
    shown_by_mode = set(RowState(sm, filter_mode=filter_mode).ids)
    full_order = [e for e in every.flat.ids]
    visible = [i for i in full_order if i in kept and i in shown_by_mode]
    row_of = {entry_id: r for r, entry_id in enumerate(visible)}
    out = []
    for entry_id in visible:
        parent = sm.get_entry(entry_id).get("parentId")
        while parent is not None and parent not in row_of:
            parent = sm.get_entry(parent).get("parentId")
        out.append((entry_id, row_of[parent] if parent is not None else -1))
    return out


@pytest.mark.parametrize("seed", [3, 11])
def test_note_filter_rows_on_generated_sessions(tmp_path, seed):
    sm = generated_session(400, seed)
    ids = [e["id"] for e in sm.get_entries()]
    store = NoteStore(tmp_path / "n.jsonl")
    for k, entry_id in enumerate(ids[::17]):
        store.add(sm, entry_id, f"note {k}", tag="x" if k % 3 else "y")
    branch = [e["id"] for e in sm.get_branch()]
    store.add(sm, branch[len(branch) // 3], "a stretch", tag="y", end_entry_id=branch[len(branch) // 2])
    for note_filter in ("noted", "tag:x", "tag:y"):
        kept = kept_entry_ids(store, sm, note_filter)
        assert kept
        for mode in ("default", "all", "user-only"):
            assert shape(filtered(store, sm, note_filter, filter_mode=mode)) == _reference(sm, kept, mode)


def test_the_note_filter_lays_rows_out_as_labeled_only_does(tmp_path):
    # The same entries labelled and seen "labeled-only", or noted and seen "all" with the note
    # filter: the same rows, the same tree shape.
    sm = generated_session(300, 5)
    chosen = [e["id"] for e in sm.get_entries()][1::9]
    lines = [json.dumps(e) for e in [sm.header, *sm.get_entries()]]
    leaf = sm.leaf_id
    for k, target in enumerate(chosen):
        lines.append(json.dumps({"type": "label", "id": f"lbl{k:04d}", "parentId": leaf, "targetId": target,
                                 "label": "l", "timestamp": "2026-01-01T00:00:00.000Z"}))
        leaf = f"lbl{k:04d}"
    labelled = session_from_bytes(("\n".join(lines) + "\n").encode(), "labelled.jsonl")
    store = NoteStore(tmp_path / "n.jsonl")
    for target in chosen:
        store.add(labelled, target, "n")
    by_label = RowState(labelled, filter_mode="labeled-only")
    by_note = filtered(store, labelled, "noted", filter_mode="all")
    assert by_note.ids == by_label.ids and by_note.columns.parent == by_label.columns.parent
    assert by_note.columns.indent == by_label.columns.indent
    assert by_note.columns.gutter == by_label.columns.gutter
