"""context_timeline: its one forward walk equals pi's projected estimate at every call."""

from __future__ import annotations

import pytest
from helpers import asst_msg, cpu_growth, entry, header, msg, tool_result, usage, user_msg
from view.view_sessions import FIXTURE_NAMES, fixture_session, generated_session, needs_fixtures

from pi_lab.compaction.tokens import calculate_context_tokens, estimate_projected_context_tokens, usage_anchor
from pi_lab.llm.errors import is_context_overflow
from pi_lab.session import SessionManager
from pi_lab.session.projection import project_path
from pi_lab.view import context_diff, context_timeline


def engine_estimate(path, index):
    """What the engine estimates for a call at path[index]: the projection at its parent."""
    head = list(path[:index])
    return int(estimate_projected_context_tokens(project_path(head), head).tokens)


def assert_equal_to_engine(sm, leaf_id=None):
    leaf_id = leaf_id or sm.leaf_id
    rows = context_timeline(sm, leaf_id)
    path = sm.get_branch(leaf_id)
    position = {e["id"]: i for i, e in enumerate(path)}
    calls = [r for r in rows if r["kind"] == "call"]
    assistants = [e for e in path if e.get("type") == "message" and e["message"].get("role") == "assistant"]
    assert [r["entry_id"] for r in calls] == [e["id"] for e in assistants]
    for row in calls:
        i = position[row["entry_id"]]
        assert row["estimated"] == engine_estimate(path, i), row
        anchor = usage_anchor(path[i]["message"])
        assert row["measured"] == (int(calculate_context_tokens(anchor)) if anchor is not None else None)
    for row in rows:
        if row["kind"] in ("compaction", "branch_summary"):
            i = position[row["entry_id"]]
            assert row["estimated"] == engine_estimate(path, i + 1), row
    overflows = [r["entry_id"] for r in rows if r["kind"] == "overflow"]
    assert overflows == [r["entry_id"] for r in calls
                         if is_context_overflow(path[position[r["entry_id"]]]["message"], r["window"])]
    return rows


@needs_fixtures()
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_call_of_the_real_fixtures(name, tmp_path):
    sm = fixture_session(name, tmp_path)
    rows = assert_equal_to_engine(sm)
    if name == "before-compaction.jsonl":
        kinds = [r["kind"] for r in rows]
        assert kinds.count("compaction") == 2 and kinds.count("call") == 484
        assert any(r["measured"] for r in rows if r["kind"] == "call")


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_every_call_of_generated_sessions(seed):
    # compactions with systemMessage snapshots, context edits dropping failed attempts,
    # overflow errors, branch summaries, system deltas, bash executions
    sm = generated_session(2500, seed)
    rows = assert_equal_to_engine(sm)
    kinds = {r["kind"] for r in rows}
    assert {"call", "compaction", "overflow"} <= kinds
    # other leaves too: the tip of every abandoned branch that a branch summary points to
    tips = [e["fromId"] for e in sm.entries if e.get("type") == "branch_summary" and sm.get_entry(e.get("fromId") or "")]
    for tip in tips[:3]:
        assert_equal_to_engine(sm, tip)


def _session(entries):
    sm = SessionManager.in_memory("/repo", entries=[header(), *entries])
    return sm


def a(text, tokens, **kw):
    return asst_msg(text, use=usage(inp=tokens, out=0), **kw)


def test_edits_system_messages_and_odd_compactions():
    big = "x" * 4000
    system = {"role": "system", "content": "you are pi", "sections": {"tools": "read, bash"},
              "toolsAdded": [{"name": "read"}], "timestamp": 1}
    delta = {"role": "system", "content": "", "sections": {"tools": None, "style": "terse"}, "timestamp": 2}
    entries = [
        msg("s1", None, system),
        msg("u1", "s1", user_msg("hello " + big)),
        msg("a1", "u1", a("hi", 5000)),
        # an edit that names an entry not written yet: applied when it arrives
        entry("context_edit", "e0", "a1", targetId="u2", replacement={"content": "short"}),
        msg("u2", "e0", user_msg("long " + big)),
        msg("a2", "u2", a("ok", 6000, tool_calls=[{"id": "c1", "name": "read", "arguments": {"path": "a.py"}}])),
        msg("t1", "a2", tool_result("c1", "read", big)),
        msg("s2", "t1", delta),
        # replace the assistant's content: its usage survives, but is older than the edit
        entry("context_edit", "e1", "s2", targetId="a2", replacement={"content": "edited"}),
        msg("a3", "e1", a("after", 0)),  # zero usage: never an anchor
        msg("a4", "a3", asst_msg("boom", stop="error", error="prompt is too long: 300000 tokens > 200000 maximum",
                                 model="claude-sonnet-4-5", use=usage(0, 0))),
        entry("context_edit", "e2", "a4", targetId="a4", replacement=None),
        entry("context_edit", "e3", "e2", targetId="s2", replacement=None),  # drop the system delta
        msg("a5", "e3", a("retry", 7000, model="claude-sonnet-4-5")),
        msg("u3", "a5", user_msg("more")),
        # keeps nothing: firstKeptEntryId is the compaction's own id
        entry("compaction", "c1", "u3", summary="summary one", firstKeptEntryId="c1", tokensBefore=9000,
              systemMessage={"role": "system", "content": "snapshot", "timestamp": 3}),
        msg("u4", "c1", user_msg("next")),
        msg("a6", "u4", a("fine", 300)),
        msg("u5", "a6", user_msg("go on")),
        msg("a7", "u5", a("sure", 400)),
        # keeps from u4, which holds the older compaction's tail: c1 inside the kept region is silent
        entry("compaction", "c2", "a7", summary="summary two", firstKeptEntryId="u4", tokensBefore=800),
        msg("a8", "c2", a("x", 0)),
        entry("context_edit", "e4", "a8", targetId="a6", replacement={"content": "z" * 100}),
        msg("a9", "e4", a("y", 0)),
        entry("compaction", "c3", "a9", summary="three", firstKeptEntryId=12345, tokensBefore=1),  # not an id: nothing kept
        msg("a10", "c3", a("z", 0)),
        entry("compaction", "c4", "a10", summary="four", firstKeptEntryId="nope", tokensBefore=1),
        msg("a11", "c4", {**a("w", 0), "content": None}),
    ]
    sm = _session(entries)
    rows = assert_equal_to_engine(sm, "a11")
    by_id = {(r["kind"], r["entry_id"]): r for r in rows}
    assert by_id[("call", "a1")]["estimated_from"] is None  # nothing measured before a1
    assert by_id[("call", "a2")]["estimated_from"] is None  # the edit e0 came after a1's usage
    assert by_id[("call", "a3")]["estimated_from"] is None  # e1 came after a2: usage untrusted
    assert by_id[("call", "a7")]["estimated_from"] == "a6"  # measured after the compaction c1
    assert by_id[("call", "a3")]["measured"] is None  # zero usage
    assert by_id[("overflow", "a4")]["window"] == 200_000
    assert by_id[("call", "a5")]["compaction_id"] is None
    assert by_id[("call", "a6")]["compaction_id"] == "c1"
    assert by_id[("call", "a8")]["compaction_id"] == "c2"
    assert by_id[("compaction", "c1")]["tokens_before"] == 9000


def test_measured_follows_pi_usage_rules():
    entries = [
        msg("u1", None, user_msg("hi")),
        msg("a1", "u1", asst_msg("ok", use=usage(100, 50))),
        msg("a2", "a1", asst_msg("stop", stop="aborted", use=usage(100, 50))),
        msg("a3", "a2", asst_msg("zero", use=usage(0, 0))),
        msg("a4", "a3", asst_msg("total", use={**usage(1, 1), "totalTokens": 999})),
        msg("a5", "a4", {**asst_msg("none"), "usage": None}),
    ]
    rows = assert_equal_to_engine(_session(entries), "a5")
    assert [r["measured"] for r in rows] == [150, None, None, 999, None]
    assert rows[1]["estimated"] == 150 + 0  # a1's usage; nothing came after it
    assert rows[4]["estimated_from"] == "a4"


def test_float_and_infinite_usage_reach_the_rows_as_whole_numbers():
    """A counter that is no integer (a float, one past the float range) takes whole_tokens;
    an integer is its own whole number."""
    from pi_lab.compaction.tokens import JS_SAFE_MAX, whole_tokens

    floating = {"input": 100.5, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    entries = [
        msg("u1", None, user_msg("hi")),
        msg("a1", "u1", asst_msg("ok", use=floating)),
        msg("u2", "a1", user_msg("again")),
        msg("a2", "u2", asst_msg("ok", use={**usage(1, 1), "totalTokens": 10**400})),
        msg("u3", "a2", user_msg("more")),
        msg("a3", "u3", asst_msg("ok", use=usage(7, 3))),
    ]
    sm = _session(entries)
    rows = context_timeline(sm, "a3")
    path = sm.get_branch("a3")
    assert [r["measured"] for r in rows] == [100, JS_SAFE_MAX, 10]
    for row, index in zip(rows, (1, 3, 5)):
        head = path[:index]
        assert row["estimated"] == whole_tokens(estimate_projected_context_tokens(project_path(head), head).tokens)
    assert rows[1]["estimated"] == 100 + 2  # 100.5 + the estimate of "again", cut to a whole number
    assert rows[2]["estimated"] == JS_SAFE_MAX
    assert all(r["measured"].__class__ is int and r["estimated"].__class__ is int for r in rows)


def test_window_from_the_catalog():
    entries = [
        msg("u1", None, user_msg("hi")),
        msg("a1", "u1", asst_msg("ok", model="gpt-4o-2024-08-06")),
        msg("a2", "a1", asst_msg("ok", model="some-local-model")),
        msg("a3", "a2", {**asst_msg("ok"), "model": ["not", "a", "string"]}),
    ]
    rows = context_timeline(_session(entries), "a3")
    assert [(r["window"], r["model"]) for r in rows] == [(128_000, "gpt-4o-2024-08-06"), (None, "some-local-model"), (None, None)]


def test_silent_overflow_by_usage_is_marked():
    entries = [
        msg("u1", None, user_msg("hi")),
        msg("a1", "u1", asst_msg("cut", model="gpt-4o", use=usage(inp=130_000, out=10))),
    ]
    rows = context_timeline(_session(entries), "a1")
    assert [r["kind"] for r in rows] == ["call", "overflow"]


def test_empty_and_reset_leaf():
    sm = SessionManager.in_memory("/repo")
    assert context_timeline(sm) == []
    sm.append_message(user_msg("hi"))
    sm.reset_leaf()
    assert context_timeline(sm) == []


def test_edits_of_system_messages_before_and_after_a_compaction():
    system = {"role": "system", "content": "base prompt " * 20, "timestamp": 1}
    delta = {"role": "system", "content": "delta " * 30, "sections": {"s": "v" * 50}, "timestamp": 2}
    entries = [
        msg("s1", None, system),
        msg("u1", "s1", user_msg("one")),
        msg("a1", "u1", a("r1", 100)),
        # omit s2 before it is written, then bring it back: its system text returns
        entry("context_edit", "e1", "a1", targetId="s2", replacement=None),
        msg("s2", "e1", delta),
        msg("a2", "s2", a("r2", 0)),
        entry("context_edit", "e2", "a2", targetId="s2", replacement={"content": "ignored for system"}),
        msg("a3", "e2", a("r3", 0)),
        msg("u2", "a3", user_msg("two")),
        msg("s3", "u2", {**delta, "content": "kept delta " * 10}),
        msg("a4", "s3", a("r4", 0)),
        # keeps from u2: s3 lies in the kept region and is dropped (the snapshot carries it)
        entry("compaction", "c1", "a4", summary="sum", firstKeptEntryId="u2", tokensBefore=10,
              systemMessage={"role": "system", "content": "snap", "timestamp": 3}),
        msg("a5", "c1", a("r5", 0)),
        # an edit naming the dropped system delta must not bring it back
        entry("context_edit", "e3", "a5", targetId="s3", replacement={"content": "x"}),
        msg("a6", "e3", a("r6", 0)),
    ]
    assert_equal_to_engine(_session(entries), "a6")


def test_one_forward_walk_not_a_projection_per_call(monkeypatch):
    """The timeline never projects from scratch: each message is estimated about once."""
    import pi_lab.compaction.context_walk as timeline  # the walk the timeline runs
    import pi_lab.session.projection as projection

    sm = generated_session(3000, 5)
    path = sm.get_branch()
    messages = sum(len(projection.entry_to_messages(e)) for e in path)
    calls = {"estimate": 0}
    real = timeline.estimate_tokens

    def counting(message):
        calls["estimate"] += 1
        return real(message)

    def no_projection(*args, **kwargs):
        raise AssertionError("context_timeline must not project a whole path")

    monkeypatch.setattr(timeline, "estimate_tokens", counting)
    monkeypatch.setattr(projection, "project_path", no_projection)
    monkeypatch.setattr(projection, "build_session_projection", no_projection)
    rows = context_timeline(sm)
    assert sum(1 for r in rows if r["kind"] == "call") > 500
    # kept regions are estimated again after each compaction, edited targets twice
    assert calls["estimate"] <= 1.3 * messages


def test_trusted_usage_leaves_its_assistant_messages_unestimated(monkeypatch):
    """A call's estimate starts from the last trusted usage, which needs no estimate of the
    assistant messages carrying usage; they are estimated only once no usage is trusted (here
    after the context edit), each once."""
    import pi_lab.compaction.context_walk as walk_module

    estimated: list[str] = []
    real = walk_module.estimate_tokens

    def counting(message):
        if message.get("role") == "assistant":
            estimated.append(message["content"][0]["text"])
        return real(message)

    monkeypatch.setattr(walk_module, "estimate_tokens", counting)
    entries, parent = [], None
    for turn in range(30):
        call = {"id": f"c{turn}", "name": "read", "arguments": {"path": f"f{turn}.py"}}
        entries += [
            msg(f"u{turn}", parent, user_msg(f"step {turn}")),
            msg(f"a{turn}", f"u{turn}", a(f"reply {turn}", 1000 + turn, tool_calls=[call])),
            msg(f"t{turn}", f"a{turn}", tool_result(f"c{turn}", "read", "x" * turn)),
        ]
        parent = f"t{turn}"
    sm = _session(entries)
    assert_equal_to_engine(sm, "t29")
    estimated.clear()
    rows = context_timeline(sm, "t29")
    assert len(rows) == 30 and all(r["estimated_from"] for r in rows[1:])
    assert estimated == []  # every estimate after the first call starts from a measured usage
    # an edit of the first user message: no usage is trusted until the next call's arrives
    sm = _session(entries + [
        entry("context_edit", "e1", "t29", targetId="u0", replacement={"content": "short"}),
        msg("u30", "e1", user_msg("again")),
        msg("a30", "u30", a("reply 30", 5000)),
        msg("u31", "a30", user_msg("more")),
        msg("a31", "u31", a("reply 31", 6000)),
    ])
    assert_equal_to_engine(sm, "a31")
    estimated.clear()
    rows = context_timeline(sm, "a31")
    assert rows[-2]["estimated_from"] is None and rows[-1]["estimated_from"] == "a30"
    assert sorted(estimated) == sorted(f"reply {turn}" for turn in range(30))


def test_the_timeline_and_the_diff_grow_linearly_with_the_session():
    """The timeline walks each entry once and the diff two paths once: 4x the entries, about 4x
    the CPU (quadratic would be 16x). Their speed at 100k entries is measured in
    tests/view/bench_views.py, not here."""
    sessions = {n: generated_session(n, 1) for n in (12_000, 48_000)}

    def tips(sm):
        found = [e["fromId"] for e in sm.entries if e.get("type") == "branch_summary" and sm.get_entry(e.get("fromId") or "")]
        return max(found, key=lambda t: len(sm.get_branch(t)))

    others = {n: tips(sm) for n, sm in sessions.items()}
    assert len(context_timeline(sessions[48_000])) > 10_000
    assert cpu_growth(lambda n: context_timeline(sessions[n]), 12_000, 48_000) < 8
    assert cpu_growth(lambda n: context_diff(sessions[n], others[n], sessions[n].leaf_id), 12_000, 48_000) < 8


def test_the_walk_copy_export_resumes_is_exact_in_pre_order_and_refuses_other_use():
    """view.timeline.SharedContextWalk (what pi_lab/export/context.py copies at branch points) is
    a view of the one ContextWalk: a copy resumed inside its subtree answers for its own path,
    a copy resumed after the walk left it raises instead of answering for another path."""
    import copy

    from pi_lab.view.timeline import SharedContextWalk

    sm = generated_session(1500, 2)
    path = sm.get_branch()
    mid = len(path) // 2
    walk = SharedContextWalk([])
    for i, e in enumerate(path[:mid]):
        walk.add(i, e)
    twin = copy.copy(walk)  # a branch point at path[mid - 1]
    for i, e in enumerate(path[mid:], start=mid):
        walk.add(i, e)
    assert walk.estimate()[0] == engine_estimate(path, len(path))
    # the sibling branch resumes at the branch point: its estimate is the prefix's
    assert twin.estimate()[0] == engine_estimate(path, mid)
    twin.add(mid, path[mid])
    assert twin.estimate()[0] == engine_estimate(path, mid + 1)
    # the first walk's path was left by the twin: it is no longer answered for
    with pytest.raises(RuntimeError):
        walk.estimate()
