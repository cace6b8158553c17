"""The Compare pane's read requests: context_diff, context_search, compare_branches.

They answer through ``payload.read_request`` (the notebook widget and the Lab server alike): the
Python functions' results, cut to a limit with full counts, each listed entry with its kind and a
preview; every bad pick is a RequestError whose text the pane shows.
"""

from __future__ import annotations

import pytest

from helpers import SEED_SECTION_14, asst_msg, header, msg, user_msg

from pi_lab.errors import PiLabError
from pi_lab.session import SessionManager
from pi_lab.view import compare_branches, context_diff, context_search
from pi_lab.view.compare_requests import DEFAULT_LIMIT, MAX_LIMIT
from pi_lab.view.payload import RequestError, SessionView, read_request
from view.view_sessions import fixture_session, generated_session, needs_fixtures, seed_session

OPS = ("context_diff", "context_search", "compare_branches")


def seed_view() -> SessionView:
    return SessionView.open(seed_session())


def ask(view, op, **args):
    if op == "context_search":
        args.setdefault("query", "auth")
    return read_request(view, op, args)


def ids(rows, key="source_id"):
    return [r[key] for r in rows]


# ------------------------------------------------------------------ the seed's worked example


def test_seed_jwt_against_cookie_diff():
    answer = ask(seed_view(), "context_diff", a="A3", b="A4")
    assert ids(answer["both"]) == ["U1", "A1", "T1", "A2"]
    assert ids(answer["only_a"]) == ["U2", "A3"]
    assert ids(answer["only_b"]) == ["BS1", "U2B", "A4"]
    assert answer["only_b"][0]["preview"] == "离开的 JWT 路径已完成认证改造。"
    assert answer["only_a"][0]["preview"] == "改成 JWT"
    assert answer["counts"] == {"both": 4, "only_a": 2, "only_b": 3}
    assert answer["group_tokens"]["only_a"] == sum(r["tokens"] for r in answer["only_a"])
    assert answer["tokens_a"] == answer["group_tokens"]["both"] + answer["group_tokens"]["only_a"]
    assert answer["nodes"]["a"] == {"id": "A3", "kind": "assistant", "text": "assistant: JWT 方案已完成",
                                    "is_leaf": False, "is_tip": True}
    assert answer["nodes"]["b"]["is_tip"] is False  # U3 follows A4
    # the Python function's fields are all there, with the same values where nothing is cut
    plain = context_diff(seed_session(), "A3", "A4")
    for key in ("tokens_a", "tokens_b", "delta", "context_a", "context_b", "replaced", "notes"):
        assert answer[key] == plain[key], key
    assert [{k: v for k, v in r.items() if k != "preview"} for r in answer["only_b"]] == plain["only_b"]


def test_seed_before_and_after_c1_lists_what_the_summary_replaced():
    answer = ask(seed_view(), "context_diff", a="A6", b="C1")
    summarized = ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5"]
    assert ids(answer["both"]) == ["U4", "A6"]  # kept
    [replaced] = answer["replaced"]
    assert (replaced["side"], replaced["compaction_id"], replaced["source_ids"]) == ("b", "C1", summarized)
    assert ids(replaced["rows"]) == summarized and replaced["count"] == 9
    assert replaced["rows"][1]["preview"] == '→ read({"path":"auth.ts"})'
    assert replaced["tokens"] == sum(r["tokens"] for r in replaced["rows"])
    assert answer["delta"] < 0


def test_seed_search_answers_per_side():
    found = ask(seed_view(), "context_search", a="A6", b="C1", query="AUTH.TS")
    assert (found["in_a"], found["in_b"]) == (True, False)
    assert ids(found["a"]) == ["A1"] and found["a_hits"] == 1 and found["a_count"] == 1
    assert found["b"] == [] and found["b_hits"] == found["b_count"] == 0
    plain = context_search(seed_session(), "A6", "C1", "AUTH.TS")
    assert found["a"] == plain["a"]
    both = ask(seed_view(), "context_search", a="A3", b="A4", query="认证")
    assert both["in_a"] and both["in_b"] and both["a_count"] >= 2  # U1 and A2 on both sides


def test_seed_branches():
    answer = ask(seed_view(), "compare_branches", a="A3", b="A4")
    assert answer["common_ancestor"] == "A2" and answer["nodes"]["common"]["text"] == "assistant: 认证逻辑已定位"
    assert answer["a"] == ["U2", "A3"] and answer["b"] == ["BS1", "U2B", "A4"]
    assert ids(answer["b_rows"], "id") == ["BS1", "U2B", "A4"]
    assert [r["kind"] for r in answer["b_rows"]] == ["branch_summary", "user", "assistant"]
    assert answer["a_rows"][0]["text"] == "user: 改成 JWT"
    assert (answer["a_count"], answer["b_count"]) == (2, 3)
    assert [(s["entry_id"], s["on_side"], s["summary"]) for s in answer["summaries"]] == [("BS1", "b", "离开的 JWT 路径已完成认证改造。")]
    assert sum("no recorded usage" in note for note in answer["notes"]) == 2
    plain = compare_branches(seed_session(), "A3", "A4")
    assert answer["a_stats"] == plain["a_stats"] and answer["b_stats"] == plain["b_stats"]


# ------------------------------------------------------------------ bad picks


@pytest.mark.parametrize("op", OPS)
def test_missing_non_string_unknown_and_same_picks_are_refused_clearly(op):
    view = seed_view()
    cases = [
        ({"b": "A4"}, "pick A first"),
        ({"a": "A3"}, "pick B first"),
        ({"a": "", "b": "A4"}, "pick A first"),
        ({"a": 5, "b": "A4"}, "A must be an entry id (a string), not a number"),
        ({"a": "A3", "b": ["A4"]}, "B must be an entry id (a string), not a list"),
        ({"a": "A3", "b": {"id": "A4"}}, "not an object"),
        ({"a": "nope", "b": "A4"}, "A: entry nope is not in this session"),
        ({"a": "A3", "b": "A3"}, "A and B are the same entry (A3)"),
        ({"a": "A3", "b": "A4", "limit": 0}, "limit must be a positive whole number"),
        ({"a": "A3", "b": "A4", "limit": "9"}, "limit must be a positive whole number"),
        ({"a": "A3", "b": "A4", "limit": True}, "limit must be a positive whole number"),
    ]
    for args, message in cases:
        if op == "context_search":
            args = {"query": "x", **args}
        with pytest.raises(RequestError) as caught:
            read_request(view, op, args)
        assert message in str(caught.value), (args, str(caught.value))
        assert isinstance(caught.value, PiLabError) and not isinstance(caught.value, (KeyError, TypeError))


def test_arguments_that_are_not_an_object():
    with pytest.raises(RequestError, match="must be an object"):
        read_request(seed_view(), "context_diff", ["A3", "A4"])  # type: ignore[arg-type]


@pytest.mark.parametrize("query", [None, "", "   ", 3, ["auth"]])
def test_search_needs_text(query):
    with pytest.raises(RequestError, match="type the text to look for"):
        read_request(seed_view(), "context_search", {"a": "A3", "b": "A4", "query": query})


def orphan_view() -> SessionView:
    entries = [
        msg("u1", None, user_msg("first root")),
        msg("a1", "u1", asst_msg("one")),
        msg("u2", None, user_msg("second root")),  # an orphan tree
        msg("a2", "u2", asst_msg("two")),
    ]
    return SessionView.open(SessionManager.in_memory("/repo", entries=[header(), *entries]))


def test_unrelated_roots_and_no_usage_are_said_in_notes():
    view = orphan_view()
    diff = ask(view, "context_diff", a="a1", b="a2")
    assert diff["both"] == [] and "unrelated roots" in diff["notes"][0]
    branches = ask(view, "compare_branches", a="a1", b="a2")
    assert branches["common_ancestor"] is None and branches["nodes"]["common"] is None
    assert "unrelated roots" in branches["notes"][0]
    found = ask(view, "context_search", a="a1", b="a2", query="root")
    assert ids(found["a"]) == ["u1"] and ids(found["b"]) == ["u2"]


# ------------------------------------------------------------------ large sessions: limits


def test_long_lists_are_cut_with_full_counts():
    sm = generated_session(2500, 3)
    view = SessionView.open(sm)
    first = sm.get_branch()[1]["id"]
    leaf = sm.leaf_id
    full = context_diff(sm, first, leaf)
    big = max(("both", "only_a", "only_b"), key=lambda g: len(full[g]))
    assert len(full[big]) > 5
    cut = ask(view, "context_diff", a=first, b=leaf, limit=5)
    assert len(cut[big]) == 5 and cut["counts"][big] == len(full[big])
    assert cut["group_tokens"][big] == sum(r["tokens"] for r in full[big])
    assert ids(cut[big]) == ids(full[big][:5])
    more = ask(view, "context_diff", a=first, b=leaf, limit=10)
    assert ids(more[big]) == ids(full[big][:10])
    huge = ask(view, "context_diff", a=first, b=leaf, limit=10**9)
    assert huge["limit"] == MAX_LIMIT and ask(view, "context_diff", a=first, b=leaf)["limit"] == DEFAULT_LIMIT

    branches = compare_branches(sm, first, leaf)
    answer = ask(view, "compare_branches", a=first, b=leaf, limit=7)
    assert answer["b_count"] == len(branches["b"]) > 7
    assert answer["b"] == branches["b"][:7] and ids(answer["b_rows"], "id") == branches["b"][:7]
    assert all(len(r["text"]) <= 120 for r in answer["b_rows"])


@needs_fixtures()
def test_real_fixture_leaves(tmp_path):
    sm = fixture_session("public-twkrash-branching.jsonl", tmp_path)
    view = SessionView.open(sm)
    tips = [e["id"] for e in sm.entries if isinstance(e.get("id"), str) and not sm.get_children(e["id"])]
    assert len(tips) >= 2
    for a in tips:
        for b in tips:
            if a == b:
                continue
            diff = ask(view, "context_diff", a=a, b=b)
            plain = context_diff(sm, a, b)
            assert diff["counts"] == {g: len(plain[g]) for g in ("both", "only_a", "only_b")}
            branches = ask(view, "compare_branches", a=a, b=b)
            assert branches["common_ancestor"] == compare_branches(sm, a, b)["common_ancestor"]
            assert branches["nodes"]["a"]["is_tip"] and branches["nodes"]["b"]["is_tip"]


@needs_fixtures()
def test_before_compaction_fixture_replaced_rows(tmp_path):
    sm = fixture_session("before-compaction.jsonl", tmp_path)
    path = sm.get_branch()
    at = [i for i, e in enumerate(path) if e["type"] == "compaction"][-1]
    answer = ask(SessionView.open(sm), "context_diff", a=path[at - 1]["id"], b=path[at]["id"])
    replaced = next(r for r in answer["replaced"] if r["side"] == "b")
    assert replaced["count"] == len(replaced["source_ids"]) > 0
    # listed in the order the other side's context holds them (the older checkpoint's summary
    # opens A's context but comes after the entries it kept on the path)
    wanted = set(replaced["source_ids"])
    assert len(replaced["rows"]) == min(DEFAULT_LIMIT, len(wanted))
    assert ids(replaced["rows"]) == [r["source_id"] for r in answer["only_a"] if r["source_id"] in wanted][:DEFAULT_LIMIT]
    assert all(r["role"] and isinstance(r["preview"], str) for r in replaced["rows"])


# ------------------------------------------------------------------ through the notebook widget


def test_the_widget_answers_and_refuses_them(tmp_path):
    from pi_lab.widget import SessionWidget

    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    widget = SessionWidget(str(path))
    sent: list[dict] = []
    widget._send = lambda m, buffers=None: sent.append(m.get("content", {}))

    def call(op, **args):
        widget._on_msg(widget, {"kind": "request", "id": 1, "op": op, "args": args}, [])
        return [m for m in sent if m.get("kind") == "response"][-1]

    ok = call("compare_branches", a="A3", b="A4")
    assert ok["ok"] and ok["result"]["common_ancestor"] == "A2"
    assert call("context_diff", a="A6", b="C1")["result"]["replaced"][0]["compaction_id"] == "C1"
    refused = call("context_diff", a="A3", b="A3")
    assert refused["ok"] is False and "same entry" in refused["error"]
    refused = call("context_search", a="A3", b="gone", query="x")
    assert refused["ok"] is False and "B: entry gone is not in this session" in refused["error"]
    widget.close()


def test_a_single_pick_is_named():
    view = seed_view()
    assert read_request(view, "compare_node", {"id": "C1", "side": "b"}) == {
        "id": "C1", "kind": "compaction", "text": "[compaction: 115k tokens]", "is_leaf": True, "is_tip": True}
    assert read_request(view, "compare_node", {"id": "U1"})["text"] == "user: 检查认证实现"
    with pytest.raises(RequestError, match="B: entry zz is not in this session"):
        read_request(view, "compare_node", {"id": "zz", "side": "b"})
    with pytest.raises(RequestError, match="pick A first"):
        read_request(view, "compare_node", {})
    with pytest.raises(RequestError, match="side must be"):
        read_request(view, "compare_node", {"id": "U1", "side": "c"})


def test_an_entry_of_an_unknown_type_is_named_by_its_type():
    entries = [
        msg("u1", None, user_msg("hi")),
        {"type": "future_entry", "id": "f1", "parentId": "u1", "timestamp": "2026-01-01T00:00:01.000Z"},
        {"type": ["odd"], "id": "f2", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z"},
    ]
    view = SessionView.open(SessionManager.in_memory("/repo", entries=[header(), *entries]))
    assert read_request(view, "compare_node", {"id": "f1"})["text"] == "[entry of an unknown type: future_entry]"
    answer = ask(view, "compare_branches", a="f1", b="f2")
    assert [(r["id"], r["kind"], r["text"]) for r in answer["a_rows"] + answer["b_rows"]] == [
        ("f1", "unknown", "[entry of an unknown type: future_entry]"), ("f2", "unknown", "[entry of an unknown type]")]


def test_a_tip_stops_being_one_when_an_entry_is_appended_under_it():
    sm = SessionManager.in_memory("/repo", entries=[header(), msg("u1", None, user_msg("hi")), msg("a1", "u1", asst_msg("ok"))])
    view = SessionView.open(sm)
    assert read_request(view, "compare_node", {"id": "a1"})["is_tip"] is True
    assert read_request(view, "compare_node", {"id": "u1"})["is_tip"] is False
    sm.append_message(user_msg("more"))  # under the leaf a1
    assert read_request(view, "compare_node", {"id": "a1"})["is_tip"] is False
    leaf = sm.leaf_id
    assert read_request(view, "compare_node", {"id": leaf})["is_tip"] is True
