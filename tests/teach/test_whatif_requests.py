"""The what-if panel's read requests (pi_lab/view/whatif.py), answered through the view's
READ_OPS as the widget and the Lab viewer answer them."""

from __future__ import annotations

import shutil

import pytest

import pi_lab
from pi_lab.data import recorded_session
from pi_lab.session import SessionManager
from pi_lab.view import whatif
from pi_lab.view.context import context_at
from pi_lab.view.payload import READ_OPS, RequestError, SessionView, ViewSettings, read_request


def _view(tmp_path):
    rec = recorded_session()
    path = shutil.copy(rec.path, tmp_path / "tiny-auth.jsonl")
    return rec, path, SessionView.open(SessionManager.open(str(path), read_only=True))


SMALL = {"context_window": 3000, "reserve_tokens": 1500, "keep_recent_tokens": 300}


def test_the_requests_are_read_ops():
    assert {"what_if", "what_if_compaction", "what_if_context"} <= set(READ_OPS)


def test_what_if_is_the_replay_as_columns(tmp_path):
    _, path, view = _view(tmp_path)
    answer = read_request(view, "what_if", SMALL)
    result = pi_lab.replay(path, **SMALL)
    assert answer["calls"]["id"] == [c["entry_id"] for c in result.calls]
    assert answer["calls"]["tokens"] == [c["context_tokens"] for c in result.calls]
    assert [c["id"] for c in answer["compactions"]] == [c["id"] for c in result.compactions]
    assert answer["threshold"] == 1500
    assert answer["compactions"], "these settings must compact for the test to mean something"
    for k, marker in enumerate(answer["compactions"]):
        # the first call after the compaction is the first one it is in force for
        call = marker["call"]
        if call < len(answer["calls"]["id"]):
            assert answer["calls"]["compaction"][call] == k
            assert call == 0 or answer["calls"]["compaction"][call - 1] != k


def test_at_the_sessions_own_settings_the_compactions_are_the_real_ones(tmp_path):
    rec, _, view = _view(tmp_path)
    own = {"context_window": rec.context_window, "reserve_tokens": rec.reserve_tokens,
           "keep_recent_tokens": rec.keep_recent_tokens}
    answer = read_request(view, "what_if", own)
    real = [e["id"] for e in view.sm.get_branch() if e["type"] == "compaction"]
    assert [c["real_entry_id"] for c in answer["compactions"]] == real
    detail = read_request(view, "what_if_compaction", {**own, "id": real[0]})
    assert detail["real_entry_id"] == real[0]
    assert detail["summary"] == view.sm.get_entry(real[0])["summary"]


def test_compaction_detail_lists_entries_with_their_row_text(tmp_path):
    _, path, view = _view(tmp_path)
    answer = read_request(view, "what_if", SMALL)
    first = answer["compactions"][0]
    detail = read_request(view, "what_if_compaction", {**SMALL, "id": first["id"]})
    record = pi_lab.replay(path, **SMALL).compactions[0]
    assert [e["id"] for e in detail["summarized"]] == record["summarized_entry_ids"]
    assert [e["id"] for e in detail["kept"]] == record["kept_entry_ids"]
    assert all(e["text"] for e in detail["summarized"] + detail["kept"])
    assert detail["summary"] == record["summary"] and detail["summary"]
    assert detail["is_split_turn"] == record["is_split_turn"]
    with pytest.raises(RequestError, match="no hypothetical compaction 'nope', and no entry"):
        read_request(view, "what_if_compaction", {**SMALL, "id": "nope"})
    # an entry of the branch names the compaction in force at it
    calls = answer["calls"]
    k = calls["compaction"][-1]
    assert read_request(view, "what_if_compaction", {**SMALL, "id": calls["id"][-1]})["id"] == answer["compactions"][k]["id"]
    assert read_request(view, "what_if_compaction", {**SMALL, "id": calls["id"][0]}) == {"id": None}


def test_context_is_the_hypothetical_projection_beside_the_real_one(tmp_path):
    _, path, view = _view(tmp_path)
    result = pi_lab.replay(path, **SMALL)
    last = result.calls[-1]["entry_id"]
    answer = read_request(view, "what_if_context", {**SMALL, "id": last})
    end = next(i + 1 for i, e in enumerate(result.path) if e.get("id") == last)
    assert answer["hypothetical"] == context_at(result.path[:end])
    assert answer["real"]["messages"] == context_at(view.sm.get_branch(last))["messages"]
    assert answer["hypothetical"]["compaction_id"] == result.calls[-1]["compaction_id"]


@pytest.mark.parametrize("args,text", [
    ({**SMALL, "context_window": "big"}, "context window must be a whole number"),
    ({**SMALL, "reserve_tokens": None}, "reserve tokens must be a whole number"),
    ({**SMALL, "context_window": -5}, "context_window must be a positive"),
    ({**SMALL, "leaf_id": "nope"}, "nope"),
])
def test_bad_settings_are_refused_in_words(tmp_path, args, text):
    _, _, view = _view(tmp_path)
    with pytest.raises(RequestError, match=text):
        read_request(view, "what_if", args)


def test_a_branch_past_the_bound_is_refused_with_a_clear_message(tmp_path, monkeypatch):
    _, _, view = _view(tmp_path)
    monkeypatch.setattr(whatif, "MAX_CALLS", 2)
    with pytest.raises(RequestError, match="replays at most 2 in the viewer"):
        read_request(view, "what_if", SMALL)


def test_the_replay_is_reused_until_the_settings_change(tmp_path, monkeypatch):
    _, _, view = _view(tmp_path)
    runs = []
    real_replay = whatif.replay
    monkeypatch.setattr(whatif, "replay", lambda *a, **k: runs.append(k) or real_replay(*a, **k))
    answer = read_request(view, "what_if", SMALL)
    read_request(view, "what_if_compaction", {**SMALL, "id": answer["compactions"][0]["id"]})
    read_request(view, "what_if_context", {**SMALL, "id": answer["calls"]["id"][0]})
    assert len(runs) == 1
    read_request(view, "what_if", {**SMALL, "keep_recent_tokens": 700})
    assert len(runs) == 2


def test_absent_settings_and_ids_are_the_viewers_own(tmp_path):
    # The hosts' request checks (tests/server/test_bad_requests.py) send a request with only the
    # common fields: it is answered, with the view's settings, the last compaction, the leaf.
    _, path, _ = _view(tmp_path)
    view = SessionView.open(SessionManager.open(str(path), read_only=True), ViewSettings(**SMALL))
    assert read_request(view, "what_if", {}) == read_request(view, "what_if", SMALL)
    last = read_request(view, "what_if", SMALL)["compactions"][-1]["id"]
    assert read_request(view, "what_if_compaction", {})["id"] == last
    assert read_request(view, "what_if_context", {}) == read_request(view, "what_if_context",
                                                                      {**SMALL, "id": view.sm.leaf_id})
    none = {"context_window": 1_000_000, "reserve_tokens": 1000, "keep_recent_tokens": 100}
    assert read_request(view, "what_if_compaction", none) == {"id": None}
