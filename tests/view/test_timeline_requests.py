"""The read requests of the timeline strip and the composition bar (view.timeline_requests).

They are what the notebook widget and the JupyterLab server answer, so they go through
``payload.read_request`` here, as both hosts call it.
"""

from __future__ import annotations

import pytest

from pi_lab.view import context_composition, context_timeline
from pi_lab.view.context import context_at
from pi_lab.view.payload import READ_OPS, RequestError, SessionView, ViewSettings, read_request
from view.view_sessions import FIXTURE_NAMES, fixture_session, generated_session, needs_fixtures


def view_of(sm, **settings):
    return SessionView.open(sm, ViewSettings(**settings) if settings else None)


def rebuilt_rows(reply):
    """The timeline rows again, from the columns of the reply (the strip's view of them)."""
    calls = reply["calls"]
    rows = []
    markers = iter(sorted(reply["markers"], key=lambda m: m["call"] + (0.5 if m["kind"] == "overflow" else 0)))
    pending = next(markers, None)
    for i, entry_id in enumerate(calls["id"]):
        while pending is not None and pending["kind"] != "overflow" and pending["call"] <= i:
            rows.append({k: v for k, v in pending.items() if k != "call"})
            pending = next(markers, None)
        effective = calls["compaction"][i]
        rows.append({
            "kind": "call", "entry_id": entry_id, "measured": calls["measured"][i], "estimated": calls["estimated"][i],
            "window": calls["window"][i], "model": reply["models"][calls["model"][i]],
            "compaction_id": reply["markers"][effective]["entry_id"] if effective >= 0 else None,
        })
        while pending is not None and pending["kind"] == "overflow" and pending["call"] == i:
            rows.append({k: v for k, v in pending.items() if k != "call"})
            pending = next(markers, None)
    while pending is not None:
        rows.append({k: v for k, v in pending.items() if k != "call"})
        pending = next(markers, None)
    return rows


def comparable(rows):
    keep = ("kind", "entry_id", "measured", "estimated", "window", "model", "compaction_id", "tokens_before",
            "first_kept_id", "from_id", "empty", "error")
    return [{k: r.get(k) for k in keep} for r in rows]


def test_requests_are_registered_for_both_hosts():
    assert {"timeline", "timeline_at", "composition"} <= set(READ_OPS)


def test_seed_timeline_columns(seed):
    reply = read_request(view_of(seed, reserve_tokens=1000, keep_recent_tokens=500), "timeline", {})
    assert reply["leaf_id"] == "C1"
    assert reply["calls"]["id"] == ["A1", "A2", "A4", "A5", "A6"]
    assert reply["call_count"] == 5 and reply["measured_count"] == 0  # the seed has no usage
    assert [(m["kind"], m["entry_id"], m["call"]) for m in reply["markers"]] == [("branch_summary", "BS1", 2),
                                                                                  ("compaction", "C1", 5)]
    assert reply["markers"][1]["tokens_before"] == 115000
    assert (reply["reserve_tokens"], reply["keep_recent_tokens"]) == (1000, 500)
    assert comparable(rebuilt_rows(reply)) == comparable(context_timeline(seed))


def test_jwt_leaf_timeline(seed):
    reply = read_request(view_of(seed), "timeline", {"leaf_id": "A3"})
    assert reply["leaf_id"] == "A3" and reply["calls"]["id"] == ["A1", "A2", "A3"] and reply["markers"] == []


@pytest.mark.parametrize("seed_number", [1, 3])
def test_generated_columns_equal_the_rows(seed_number):
    sm = generated_session(3000, seed_number)
    reply = read_request(view_of(sm), "timeline", {"leaf_id": None})
    rows = context_timeline(sm)
    assert comparable(rebuilt_rows(reply)) == comparable(rows)
    kinds = {m["kind"] for m in reply["markers"]}
    assert {"compaction", "branch_summary"} <= kinds
    # a call after a compaction names the marker of the compaction in effect
    effective = [reply["markers"][k]["kind"] for k in reply["calls"]["compaction"] if k >= 0]
    assert effective and set(effective) == {"compaction"}


@needs_fixtures()
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_real_fixture_columns(name, tmp_path):
    sm = fixture_session(name, tmp_path)
    reply = read_request(view_of(sm), "timeline", {})
    assert comparable(rebuilt_rows(reply)) == comparable(context_timeline(sm))


def test_timeline_at_maps_any_entry_to_its_call(seed):
    view = view_of(seed)
    at = lambda entry, leaf=None: read_request(view, "timeline_at", {"id": entry, "leaf_id": leaf})  # noqa: E731
    assert at("U1") == {"id": "U1", "on_branch": True, "call_id": None}  # before every call
    assert at("T1")["call_id"] == "A1"
    assert at("A2")["call_id"] == "A2"
    assert at("BS1")["call_id"] == "A2"  # the summary sits after A2 on the cookie branch
    assert at("C1")["call_id"] == "A6"
    assert at("A3") == {"id": "A3", "on_branch": False, "call_id": None}  # the JWT branch is not current
    assert at("A3", "A3")["call_id"] == "A3"
    assert at("U2B", "A3")["on_branch"] is False


# The refusals a viewer shows as they are: in its words, never the view function's argument
# names (leaf_id, entry_id) or Python types (int, dict).
@pytest.mark.parametrize("op, args, message", [
    ("timeline", {"leaf_id": "nope"}, "entry nope is not in this session"),
    ("timeline", {"leaf_id": ["A1"]}, "an entry id is text, not a list"),
    ("timeline", {"leaf_id": 5}, "an entry id is text, not a number"),
    ("timeline_at", {"id": "nope"}, "entry nope is not in this session"),
    ("timeline_at", {}, "an entry id is text, not null"),
    ("timeline_at", {"id": "A1", "leaf_id": {"x": 1}}, "an entry id is text, not an object"),
    ("composition", {"id": "nope"}, "entry nope is not in this session"),
    ("composition", {"id": 3}, "an entry id is text, not a number"),
    ("composition", {}, "an entry id is text, not null"),
    ("composition", {"id": ""}, "no entry was named"),
])
def test_bad_arguments_are_request_errors(seed, op, args, message):
    # A RequestError is what both hosts answer as a message; anything else would be a
    # traceback in the kernel (the widget) or a 500 (the server).
    with pytest.raises(RequestError) as caught:
        read_request(view_of(seed), op, args)
    assert str(caught.value) == message


def test_arguments_that_are_not_an_object(seed):
    for op in ("timeline", "timeline_at", "composition"):
        with pytest.raises(RequestError, match="must be an object"):
            READ_OPS[op](view_of(seed), ["id"])


def test_empty_session_has_an_empty_timeline():
    from pi_lab.session import SessionManager

    sm = SessionManager.in_memory("/repo")
    reply = read_request(view_of(sm), "timeline", {})
    assert reply["call_count"] == 0 and reply["calls"]["id"] == [] and reply["markers"] == []


def test_composition_request_and_its_message_indexes(seed):
    reply = read_request(view_of(seed), "composition", {"id": "A2"})
    assert reply["at"] == "A2" and reply["parts"] == context_composition(seed, "A2")
    assert reply["total"] == sum(p["tokens"] for p in reply["parts"])


@pytest.mark.parametrize("seed_number", [1, 2])
def test_part_indexes_count_the_listed_messages_that_are_not_omitted(seed_number):
    # The bar filters the "what the model sees" list by these indexes: the k-th listed
    # message that is not an omitted placeholder is projected message k (projection.ts).
    sm = generated_session(2500, seed_number)
    path = sm.get_branch()
    for entry in path[:: max(1, len(path) // 30)] + path[-1:]:
        listed = [m for m in context_at(sm.get_branch(entry["id"]))["messages"] if not m.get("omitted")]
        projected = sm.build_session_context(entry["id"]).messages
        assert [m["role"] for m in listed] == [m.get("role") for m in projected]
        for part in context_composition(sm, entry["id"]):
            assert all(0 <= i < len(listed) for i in part["indexes"])


# ---------------------------------------------------------------------------------------------
# the walk kept between requests (a live session grows along its branch)


def test_a_walk_continued_equals_a_fresh_walk():
    from pi_lab.view.timeline import TimelineWalk

    sm = generated_session(3000, 2)
    path = sm.get_branch()
    kinds = [e.get("type") for e in path]
    # cut right before and right after compactions and context edits, and at a few other places
    cuts = {1, len(path) // 3, len(path) - 1}
    for i, kind in enumerate(kinds):
        if kind in ("compaction", "context_edit", "branch_summary"):
            cuts.update({i, i + 1})
    fresh = TimelineWalk(path).rows
    assert fresh == context_timeline(sm)
    for cut in sorted(cuts)[:40]:
        walk = TimelineWalk(path[:cut])
        assert walk.extend(path)
        assert walk.rows == fresh, cut


def test_a_walk_refuses_a_path_that_does_not_continue_it(seed):
    from pi_lab.view.timeline import TimelineWalk

    walk = TimelineWalk(seed.get_branch("A3"))
    rows = list(walk.rows)
    assert not walk.extend(seed.get_branch("C1"))  # the cookie branch: same start, then apart
    assert not walk.extend(seed.get_branch("A2"))  # shorter
    assert walk.rows == rows


def test_live_appends_and_leaf_moves_answer_like_a_fresh_timeline():
    import json

    from helpers import SEED_SECTION_14

    from pi_lab.session import SessionManager
    from pi_lab.view.timeline_requests import _CACHE

    lines = [json.loads(line) for line in SEED_SECTION_14.splitlines() if line.strip()]
    sm = SessionManager.in_memory("/repo", entries=lines)
    view = view_of(sm)

    def check():
        reply = read_request(view, "timeline", {})
        assert comparable(rebuilt_rows(reply)) == comparable(context_timeline(sm))
        return reply

    check()
    walk = _CACHE[sm].walk
    usage = {"input": 900, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1000,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    sm.append_message({"role": "user", "content": "再检查一次 🔍", "timestamp": 7})
    check()
    failed = sm.append_message({"role": "assistant", "content": [], "stopReason": "error", "timestamp": 8,
                                "errorMessage": "prompt is too long: 210000 tokens > 200000 maximum"})
    assert [m["kind"] for m in check()["markers"]][-1] == "overflow"
    sm.append_context_edit(failed, None)
    sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "好的 ✅"}], "stopReason": "stop",
                       "usage": usage, "model": "claude-sonnet-4-5", "provider": "anthropic", "timestamp": 9})
    reply = check()
    assert reply["measured_count"] == 1 and reply["calls"]["measured"][-1] == 1000
    assert _CACHE[sm].walk is walk  # every answer so far continued the first walk
    first_kept = sm.get_branch()[-2]["id"]
    sm.append_compaction("短的总结", first_kept, 1000)
    sm.append_message({"role": "user", "content": "after", "timestamp": 10})
    sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop",
                       "timestamp": 11})
    reply = check()
    assert reply["calls"]["compaction"][-1] == len(reply["markers"]) - 1  # in effect: the new compaction
    assert _CACHE[sm].walk is walk
    tip = sm.leaf_id
    sm.branch("A3")  # another branch: a new walk
    assert check()["calls"]["id"] == ["A1", "A2", "A3"]
    assert _CACHE[sm].walk is not walk
    sm.branch(tip)
    check()
    # asking for a leaf explicitly works the same way, without moving the session's leaf
    assert read_request(view, "timeline", {"leaf_id": "A3"})["calls"]["id"] == ["A1", "A2", "A3"]
    assert sm.leaf_id == tip


def test_since_sends_only_what_a_growing_branch_added():
    import json

    from helpers import SEED_SECTION_14

    from pi_lab.session import SessionManager

    sm = SessionManager.in_memory("/repo", entries=[json.loads(x) for x in SEED_SECTION_14.splitlines() if x.strip()])
    view = view_of(sm)
    first = read_request(view, "timeline", {})
    assert "append" not in first and first["serial"] is not None
    sm.append_message({"role": "user", "content": "再检查一次 🔍", "timestamp": 7})
    sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "好的 ✅"}], "stopReason": "stop",
                       "timestamp": 8})
    since = {"serial": first["serial"], "calls": first["call_count"], "markers": len(first["markers"])}
    delta = read_request(view, "timeline", {"since": since})
    assert delta["append"] is True and (delta["calls_from"], delta["markers_from"]) == (5, 2)
    assert delta["calls"]["id"] == [sm.leaf_id] and delta["markers"] == [] and delta["call_count"] == 6
    # the earlier answer plus the delta is the whole answer
    whole = read_request(view, "timeline", {})
    for key in whole["calls"]:
        assert first["calls"][key] + delta["calls"][key] == whole["calls"][key]
    # another branch is a new walk: an old serial gets everything, as does a malformed since
    sm.branch("A3")
    other = read_request(view, "timeline", {"since": since})
    assert "append" not in other and other["calls"]["id"] == ["A1", "A2", "A3"] and other["serial"] != first["serial"]
    for bad in ({"serial": other["serial"], "calls": 99, "markers": 0}, {"serial": "x", "calls": 1, "markers": 0},
                {"serial": other["serial"], "calls": -1, "markers": 0}, [1, 2], "since"):
        reply = read_request(view, "timeline", {"since": bad})
        assert "append" not in reply and reply["calls"]["id"] == ["A1", "A2", "A3"], bad


def test_threads_asking_at_once_share_one_walk_safely():
    # The server answers from worker threads; an export may snapshot the timeline off the loop.
    # Several threads continuing the same kept walk at once must each get the fresh answer.
    import threading

    sm = generated_session(4000, 3)
    view = view_of(sm)
    path = sm.get_branch()
    early = next(e["id"] for e in path[len(path) // 10:] if isinstance(e.get("id"), str))
    expected = comparable(context_timeline(sm))
    for _ in range(3):
        read_request(view, "timeline", {"leaf_id": early})  # the kept walk: a short prefix
        barrier = threading.Barrier(4)
        answers: list = []

        def ask():
            barrier.wait()
            answers.append(read_request(view, "timeline", {}))

        threads = [threading.Thread(target=ask) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(answers) == 4
        for reply in answers:
            assert comparable(rebuilt_rows(reply)) == expected
