"""The read requests behind the viewer's navigation aids (pi_lab/view/payload.py, rows.py,
kinds.py): the gauge at a leaf moved in a read-only view, ``locate`` by an id's start, why a
row matched a search, and the one name of an entry of an unknown type."""

from __future__ import annotations

import pytest

from helpers import asst_msg, entry, header, msg, tool_result, user_msg

from pi_lab.session import SessionManager
from pi_lab.view.gauge import gauge
from pi_lab.view.kinds import unknown_entry_text
from pi_lab.view.payload import RequestError, SessionView, read_request
from pi_lab.view.rows import search_hit


def session() -> SessionManager:
    call = asst_msg(None, tool_calls=[{"id": "c1", "name": "read", "arguments": {"path": "cfg.toml"}}], stop="toolUse")
    entries = [
        msg("aa01", None, user_msg("read the config please"), 1),
        msg("aa02", "aa01", call, 2),
        msg("bb03", "aa02", tool_result("c1", "read", "name = 'x'\nanimal = 'zebra'\n"), 3),
        msg("bb04", "bb03", asst_msg("It names an animal."), 4),
        msg("cc05", "aa01", asst_msg("another branch"), 5),
        entry("future_entry", "dd06", "bb04", 6),
    ]
    return SessionManager.in_memory("/repo", entries=[header(), *entries])


def test_the_gauge_at_another_leaf_is_that_branch_s_and_moves_nothing():
    sm = session()
    view = SessionView.open(sm)
    at_leaf = read_request(view, "gauge", {})
    moved = read_request(view, "gauge", {"leaf_id": "cc05"})
    assert at_leaf["leaf_id"] == sm.leaf_id == "dd06"
    assert moved["leaf_id"] == "cc05" and moved["message_count"] == 2
    assert moved == gauge(sm.get_branch("cc05"), context_window=view.settings.context_window,
                          settings=view.settings.compaction())
    assert moved != at_leaf
    assert sm.leaf_id == "dd06" and read_request(view, "gauge", {"leaf_id": "dd06"}) == at_leaf
    with pytest.raises(RequestError, match="Entry nope not found"):
        read_request(view, "gauge", {"leaf_id": "nope"})


def test_locate_by_the_start_of_an_id():
    view = SessionView.open(session())
    found = read_request(view, "locate", {"id": "bb03", "prefix": True})
    assert found["found"] == "bb03" and found["id"] == "bb03" and found["row"] >= 0
    assert read_request(view, "locate", {"id": "cc", "prefix": True})["found"] == "cc05"
    several = read_request(view, "locate", {"id": "bb", "prefix": True})
    assert several["matches"] == ["bb03", "bb04"] and "found" not in several and several["row"] == -1
    none = read_request(view, "locate", {"id": "zz", "prefix": True})
    assert none["matches"] == [] and none["row"] == -1
    # Without `prefix`, an id is an id (as before).
    assert read_request(view, "locate", {"id": "bb"})["row"] == -1


def test_a_row_that_matched_in_text_it_does_not_show_says_where():
    view = SessionView.open(session(), search="zebra")
    rows = {r["id"]: r for r in read_request(view, "rows", {"start": 0, "end": 50})["rows"]}
    assert rows["bb03"]["text"] == "[read: cfg.toml]"
    assert rows["bb03"]["hit"] == "…' animal = 'zebra'"  # 12 characters before the word, the text after it
    # A row that shows every word needs no reason; without a search no row carries one.
    assert search_hit("config", {"type": "message", "message": user_msg("read the config please")}, None,
                      "user: read the config please") is None
    plain = read_request(SessionView.open(session()), "rows", {"start": 0, "end": 50})["rows"]
    assert not any("hit" in r for r in plain)


def test_long_text_around_a_hit_is_cut_on_both_sides():
    text = "a " * 40 + "needle" + " b" * 40
    hit = search_hit("needle", {"type": "message", "message": user_msg(text)}, None, "user: a a a")
    assert hit is not None and hit.startswith("…") and hit.endswith("…") and "needle" in hit and len(hit) < 80


def test_an_entry_of_an_unknown_type_has_one_name():
    assert unknown_entry_text("future_entry") == "[entry of an unknown type: future_entry]"
    assert unknown_entry_text(None) == unknown_entry_text("") == "[entry of an unknown type]"
