"""Issue 15 at the engine: a field of an odd type (a list or an object where pi writes a
string) or a deep value never raises a built-in error.

pi keys its maps by value and compares with ``===``: an object ``parentId`` matches no id, so
its entry is a root; a list ``role`` is no known role; a list ``type`` is an unknown entry.
"""

from __future__ import annotations

import pytest

from pi_lab.compaction import find_cut_point
from pi_lab.session import SessionManager
from pi_lab.session._text import content_preview
from pi_lab.session.flatten import flatten_tree, navigation_rows, visible_rows
from pi_lab.session.projection import build_session_context, project_with_edit
from pi_lab.session.tree import build_session_path, get_branch, get_tree, index_by_id

T = "2026-01-01T00:00:0{}.000Z"
HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": T.format(0), "cwd": "/repo"}


def _user(entry_id, parent, text="hi", **extra):
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": T.format(1),
            "message": {"role": "user", "content": text}, **extra}


ODD = [["a"], {"id": "a"}, [], {}, [["a"]]]


@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_odd_parent_id_is_a_root(odd):
    entries = [_user("a", None), _user("b", odd), _user("c", "b")]
    roots = get_tree(entries)
    assert [r.entry["id"] for r in roots] == ["a", "b"]  # b's parent matches nothing
    assert [e["id"] for e in get_branch(index_by_id(entries), "c")] == ["b", "c"]
    assert get_branch(index_by_id(entries), odd) == []
    assert [e["id"] for e in build_session_path(entries)] == ["b", "c"]
    sm = SessionManager.in_memory("/repo", entries=[HEADER, *entries])
    assert [e["id"] for e in sm.get_branch()] == ["b", "c"]
    assert len(navigation_rows(sm, filter_mode="all")) == 3


@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_odd_ids_never_link(odd):
    # equal-looking objects are different keys in JavaScript: no chain through them
    entries = [{**_user("x", None), "id": odd}, {**_user("y", odd), "id": odd}]
    assert len(get_tree(entries)) == 2
    assert [e["message"]["content"] for e in build_session_path(entries)] == ["hi"]
    sm = SessionManager.in_memory("/repo", entries=[HEADER, *entries])
    build_session_context(sm.get_entries())
    flatten_tree(sm.get_tree(), sm.leaf_id)


@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_odd_type_is_an_unknown_entry(odd):
    entries = [_user("a", None), {"type": odd, "id": "b", "parentId": "a", "timestamp": T.format(2)}]
    flat = flatten_tree(get_tree(entries), "b")
    rows = visible_rows(flat, filter_mode="all")
    assert len(rows) == 2
    assert len(visible_rows(flat, filter_mode="default")) == 2  # an unknown entry shows in `default`


@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_odd_role(odd):
    entries = [_user("a", None), {"type": "message", "id": "b", "parentId": "a", "timestamp": T.format(2),
                                  "message": {"role": odd, "content": None}}]
    context = build_session_context(entries)
    assert context.messages[-1]["role"] == odd  # kept as it is, content not filled in
    edit = {"type": "context_edit", "id": "e", "targetId": "b", "replacement": {"content": "new"}}
    target = {**entries[1], "message": {"role": odd, "content": "x"}}
    assert project_with_edit(target, edit) == [{"role": odd, "content": "x"}]  # not an editable role
    # an odd role is never a cut point (pi's switch on the role finds no case)
    result = find_cut_point(entries, 0, 2, 0)
    assert result.first_kept_entry_index in (0, 1)


def test_deep_values_in_tree_rows_and_previews():
    deep: list = ["x"]
    for _ in range(3000):
        deep = [deep]
    entries = [
        _user("a", None),
        {"type": "message", "id": "b", "parentId": "a", "timestamp": T.format(2),
         "message": {"role": "assistant", "stopReason": "stop",
                     "content": [{"type": "toolCall", "id": "t", "name": deep, "arguments": {"p": deep}},
                                 {"type": deep}]}},
        {"type": "message", "id": "c", "parentId": "b", "timestamp": T.format(3),
         "message": {"role": "toolResult", "toolCallId": "t", "toolName": deep, "content": deep}},
    ]
    flat = flatten_tree(get_tree(entries), "c")
    for mode in ("default", "all"):
        for row in visible_rows(flat, filter_mode=mode):
            flat.display_text(row.index, "/home")
            flat.search_text(row.index)
    preview = content_preview(entries[1]["message"]["content"])
    assert preview.startswith('→ [[[[') and preview.endswith("[" + "[" * 3000 + '"x"' + "]" * 3001 + "]")


def test_engine_errors_are_pi_lab_errors(tmp_path):
    from pi_lab.errors import PiLabError
    from pi_lab.session.manager import EntryNotFound, SessionNotFound

    sm = SessionManager.in_memory("/repo", entries=[HEADER, _user("a", None)])
    with pytest.raises(EntryNotFound) as caught:
        sm.create_branched_session("")  # a file whose last id is "" (pi: "Entry  not found")
    assert isinstance(caught.value, PiLabError) and isinstance(caught.value, KeyError)
    with pytest.raises(SessionNotFound) as missing:
        SessionManager.open(tmp_path / "none.jsonl", read_only=True)
    assert isinstance(missing.value, PiLabError) and isinstance(missing.value, FileNotFoundError)
