"""The /tree list: flattening, filters, search, folding, row layout and keys.

Spec: tree-and-context.md §13; upstream cases: test-catalogue.md "tree-selector.test.ts";
the worked example of §13.4 (catalogue §5 item 24).
"""

from __future__ import annotations

from datetime import datetime

import pytest
from helpers import SEED_SECTION_14, asst_msg, cpu_growth, entry, header, msg, tool_result, user_msg
from session.tree_navigator import NavEvent, TreeNavigator, fold_or_up, help_lines, unfold_or_down

from pi_lab.cli_render import render_row, render_rows, status_line, window_for_terminal, window_range
from pi_lab.session import SessionManager, get_tree
from pi_lab.session.display import (
    copy_text,
    display_text,
    format_label_time,
    format_tool_call,
    search_text,
    shorten_home,
)
from pi_lab.session.flatten import (
    FILTER_MODES,
    NavRow,
    flatten_tree,
    initial_selection,
    navigation_rows,
    visible_rows,
)

HOME = "/home/ada"


def session(*entries, leaf=None):
    sm = SessionManager.in_memory(entries=[header(), *entries])
    if leaf is not None:
        sm.branch(leaf)
    return sm


def rows_of(sm, **kw):
    kw.setdefault("home", HOME)
    return navigation_rows(sm, **kw)


def ids(rows):
    return [r.entry_id for r in rows]


def navigator(sm, **kw):
    kw.setdefault("home", HOME)
    return TreeNavigator.from_session(sm, **kw)


def lines(nav):
    return nav.render(all_rows=True)


def tool_call(call_id, name, **arguments):
    return {"id": call_id, "name": name, "arguments": arguments}


def tool_only(call_id="c1", name="read", **arguments):
    return asst_msg(None, tool_calls=[tool_call(call_id, name, **arguments)], stop="toolUse")


# ---------------------------------------------------------------------------------------------
# The worked example of §13.4


def worked_example():
    """The explainer's tree after its /tree step: U1 A1 T1 A2 {BS1 U2B A4 | U2 A3}, leaf A4."""
    return session(
        msg("U1", None, user_msg("检查认证实现"), 1),
        msg("A1", "U1", tool_only("call-1", "read", path="src/auth.ts", offset=10, limit=20), 2),
        msg("T1", "A1", tool_result("call-1", "read", "export function login() {}"), 3),
        msg("A2", "T1", asst_msg("认证逻辑在 login() 中"), 4),
        msg("U2", "A2", user_msg("改成 JWT"), 60),
        msg("A3", "U2", asst_msg("JWT 方案已完成"), 61),
        entry(
            "branch_summary",
            "BS1",
            "A2",
            120,
            fromId="A2",
            summary="The user explored a different conversation branch before returning here.\n"
            "Summary of that exploration:\n\nJWT\t已实现",
        ),
        msg("U2B", "BS1", user_msg("改成 session cookie"), 121),
        msg("A4", "U2B", asst_msg("cookie 方案已完成"), 122),
    )


WORKED_EXAMPLE = [
    "  • user: 检查认证实现",
    "  • [read: src/auth.ts:10-29]",
    "  • assistant: 认证逻辑在 login() 中",
    "  ├⊟ • [branch summary]: The user explored a different conversation branch before returning here."
    " Summary of that exploration:  JWT 已实现",
    "  │     • user: 改成 session cookie",
    "› │     • assistant: cookie 方案已完成",
    "  └⊟ user: 改成 JWT",
    "        assistant: JWT 方案已完成",
    "  (6/8)",
]


def test_worked_example_renders_exactly():
    nav = navigator(worked_example())
    assert nav.selected_id == "A4"
    assert lines(nav) == WORKED_EXAMPLE


def test_worked_example_with_the_pure_functions():
    sm = worked_example()
    flat = flatten_tree(sm.get_tree(), sm.leaf_id)
    rows = visible_rows(flat, home=HOME)
    selected = initial_selection(rows, flat, sm.leaf_id)
    out = [render_row(row, selected=i == selected) for i, row in enumerate(rows)]
    out.append(status_line(selected, rows))
    assert out == WORKED_EXAMPLE
    assert render_rows(rows, selected) == WORKED_EXAMPLE
    assert render_rows(rows, selected, window=5) == WORKED_EXAMPLE[3:8] + WORKED_EXAMPLE[-1:]
    assert "A1" not in ids(rows)  # the tool-call-only assistant
    assert ids(rows) == ["U1", "T1", "A2", "BS1", "U2B", "A4", "U2", "A3"]
    branch_children = [rows[3], rows[6]]
    assert all(r.foldable and r.connector for r in branch_children)
    assert [r.is_last for r in branch_children] == [False, True]
    assert rows[4].gutters == ((0, True),) and rows[7].gutters == ((0, False),)


def test_worked_example_user_only_view():
    nav = navigator(worked_example(), filter_mode="user-only")
    assert lines(nav) == [
        "  • user: 检查认证实现",
        "› ├─ • user: 改成 session cookie",  # the leaf A4 is hidden: its nearest visible ancestor
        "  └─ user: 改成 JWT",
        "  (2/3) [user]",
    ]


def test_full_tree_order_is_active_branch_first(tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    sm = SessionManager.open(path)
    # the file order puts U2 (09:01) before BS1 (09:02); the active branch still comes first
    assert [c.entry["id"] for c in sm.get_tree()[0].children[0].children[0].children[0].children] == ["U2", "BS1"]
    rows = rows_of(sm)
    assert ids(rows)[3:6] == ["BS1", "U2B", "A4"]
    assert ids(rows)[-2:] == ["U2", "A3"]
    nav = navigator(sm)
    assert nav.selected_row.text == "[compaction: 115k tokens]"
    assert lines(nav)[10] == "› │     • [compaction: 115k tokens]"
    assert lines(nav)[-1] == "  (11/13)"


# ---------------------------------------------------------------------------------------------
# Flattening


def test_linear_chain_does_not_drift_right():
    sm = session(*[msg(f"m{i}", f"m{i - 1}" if i else None, user_msg(f"t{i}"), i) for i in range(6)])
    rows = rows_of(sm)
    assert [r.indent for r in rows] == [0] * 6
    assert all(not r.connector and r.gutters == () for r in rows)
    assert all(r.on_active_path for r in rows)


def test_nested_branches_draw_gutters():
    sm = session(
        msg("A", None, user_msg("a"), 1),
        msg("B1", "A", asst_msg("b1"), 2),
        msg("C1", "B1", user_msg("c1"), 3),
        msg("D1", "C1", asst_msg("d1"), 4),
        msg("C2", "B1", user_msg("c2"), 5),
        msg("B2", "A", asst_msg("b2"), 6),
        msg("X", "B2", user_msg("x"), 7),
        leaf="C2",
    )
    assert lines(navigator(sm)) == [
        "  • user: a",
        "  ├⊟ • assistant: b1",
        "› │  ├─ • user: c2",
        "  │  └⊟ user: c1",
        "  │        assistant: d1",
        "  └⊟ assistant: b2",
        "        user: x",
        "  (3/7)",
    ]


def test_multiple_roots_are_children_of_an_invisible_root():
    sm = session(
        msg("u1", None, user_msg("one"), 1),
        msg("a1", "u1", asst_msg("first"), 2),
        msg("u2", None, user_msg("two"), 3),
        msg("a2", "u2", asst_msg("second"), 4),
        leaf="a1",
    )
    rows = rows_of(sm)
    assert [r.parent for r in rows] == [-1, 0, -1, 2]
    assert all(r.is_virtual_root_child for r in (rows[0], rows[2]))
    assert lines(navigator(sm)) == [
        "  • user: one",
        "›    • assistant: first",
        "  user: two",
        "     assistant: second",
        "  (2/4)",
    ]


def test_root_containing_the_leaf_is_listed_first():
    sm = session(
        msg("u1", None, user_msg("one"), 1),
        msg("u2", None, user_msg("two"), 2),
        msg("a2", "u2", asst_msg("second"), 3),
        leaf="a2",
    )
    assert ids(rows_of(sm)) == ["u2", "a2", "u1"]


def test_tool_call_map_covers_the_whole_tree():
    # the call is made on one branch and answered (in a hand-edited file) on another
    sm = session(
        msg("u1", None, user_msg("go"), 1),
        msg("a1", "u1", tool_only("call-x", "ls", path="/home/ada/src"), 2),
        msg("t1", "u1", tool_result("call-x", "ls", "files"), 3),
        leaf="t1",
    )
    assert [r.text for r in rows_of(sm)] == ["user: go", "[ls: ~/src]"]


def test_a_200000_entry_chain_flattens_without_recursion():
    n = 200_000
    entries = [msg(f"e{i}", f"e{i - 1}" if i else None, user_msg("x"), 1) for i in range(n)]
    roots = get_tree(entries)
    flat = flatten_tree(roots, f"e{n - 1}")
    assert len(flat) == n and flat.parents[-1] == n - 2
    assert all(flat.on_active_path[:: n // 10])
    rows = visible_rows(flat, home=HOME)
    assert len(rows) == n and rows[-1].indent == 0 and rows[-1].is_leaf
    assert initial_selection(rows, flat, f"e{n - 1}") == n - 1
    folded = visible_rows(flat, folded={"e0"}, home=HOME)
    assert ids(folded) == ["e0"]
    # and in time linear in the chain (a chain is where a walk that climbs to the root per
    # entry would be quadratic)
    quarter = get_tree(entries[: n // 4])
    trees = {n // 4: (quarter, f"e{n // 4 - 1}"), n: (roots, f"e{n - 1}")}
    assert cpu_growth(lambda size: flatten_tree(*trees[size]), n // 4, n) < 8


def test_parent_cycle_does_not_hang():
    sm = session(
        msg("a", "b", user_msg("a"), 1),
        msg("b", "a", user_msg("b"), 2),
        msg("c", "b", user_msg("c"), 3),
    )
    rows = rows_of(sm)
    assert sorted(ids(rows)) == ["a", "b", "c"]
    nav = navigator(sm)
    nav.handle_key("ctrl+left")
    nav.handle_key("ctrl+right")
    assert nav.rows


# ---------------------------------------------------------------------------------------------
# Filters (§13.2)


def every_kind():
    """A chain with one entry of each kind, leaf at the end (a plain assistant)."""
    items = [
        ("user", "message", {"message": user_msg("hello")}),
        ("model", "model_change", {"provider": "acme", "modelId": "alpha"}),
        ("think", "thinking_level_change", {"thinkingLevel": "high"}),
        ("toolonly", "message", {"message": tool_only("c1", "read", path="a.txt")}),
        ("result", "message", {"message": tool_result("c1", "read", "body")}),
        ("label", "label", {"targetId": "user", "label": "start"}),
        ("custom", "custom", {"customType": "state", "data": {}}),
        ("info", "session_info", {"name": "My session"}),
        ("edit", "context_edit", {"targetId": "result", "replacement": None}),
        ("usage", "usage", {"kind": "summary", "provider": "acme", "model": "alpha", "usage": {}}),
        ("cmsg", "custom_message", {"customType": "note", "content": "remember", "display": True}),
        ("bash", "message", {"message": {"role": "bashExecution", "command": "ls -la", "output": "x", "timestamp": 1}}),
        ("system", "message", {"message": {"role": "system", "content": "be brief", "timestamp": 1}}),
        ("compact", "compaction", {"summary": "s", "firstKeptEntryId": "user", "tokensBefore": 1000}),
        ("branch", "branch_summary", {"fromId": "user", "summary": "went elsewhere"}),
        ("future", "future_entry", {"secret": 1}),
        ("error", "message", {"message": asst_msg(None, stop="error", error="boom")}),
        ("answer", "message", {"message": asst_msg("done")}),
    ]
    out = []
    parent = None
    for i, (entry_id, kind, fields) in enumerate(items):
        out.append({**entry(kind, entry_id, parent, i + 1), **fields})
        parent = entry_id
    return SessionManager.in_memory(entries=[header(), *out])


def test_default_filter_hides_settings_usage_and_tool_only_assistants():
    rows = rows_of(every_kind())
    assert ids(rows) == ["user", "result", "cmsg", "bash", "system", "compact", "branch", "future", "error", "answer"]


def test_no_tools_filter_also_hides_tool_results():
    assert "result" not in ids(rows_of(every_kind(), filter_mode="no-tools"))
    assert len(rows_of(every_kind(), filter_mode="no-tools")) == 9


def test_user_only_filter():
    assert ids(rows_of(every_kind(), filter_mode="user-only")) == ["user"]


def test_all_filter_shows_everything_but_usage_and_tool_only_assistants():
    shown = ids(rows_of(every_kind(), filter_mode="all"))
    assert "usage" not in shown and "toolonly" not in shown
    assert len(shown) == 16
    assert {"model", "think", "label", "custom", "info", "edit"} <= set(shown)


def test_labeled_only_filter_shows_labelled_entries():
    sm = every_kind()
    assert ids(rows_of(sm, filter_mode="labeled-only")) == ["user"]
    assert rows_of(sm, filter_mode="labeled-only")[0].label == "start"


def test_labelled_usage_entry_stays_hidden():
    sm = every_kind()
    sm.append_label_change("usage", "cost")
    assert "usage" not in ids(rows_of(sm, filter_mode="labeled-only"))
    assert "usage" not in ids(rows_of(sm, filter_mode="all"))


def test_tool_call_only_assistant_is_visible_when_it_is_the_leaf():
    sm = session(msg("u", None, user_msg("go"), 1), msg("a", "u", tool_only(), 2))
    for mode in ("default", "no-tools", "all"):
        rows = rows_of(sm, filter_mode=mode)
        assert ids(rows) == ["u", "a"]
    assert rows[1].text == "assistant: (no content)" and rows[1].is_leaf
    sm.branch("u")
    assert ids(rows_of(sm, filter_mode="all")) == ["u"]


@pytest.mark.parametrize(
    ("stop", "visible"),
    [("stop", False), ("toolUse", False), (None, False), ("error", True), ("aborted", True), ("length", True)],
)
def test_text_less_assistant_visibility_depends_on_stop_reason(stop, visible):
    message = asst_msg(None, tool_calls=[tool_call("c", "read", path="x")], stop="stop")
    if stop is None:
        del message["stopReason"]
    else:
        message["stopReason"] = stop
    sm = session(msg("u", None, user_msg("go"), 1), msg("a", "u", message, 2), msg("v", "a", user_msg("next"), 3))
    assert ("a" in ids(rows_of(sm))) is visible


def test_whitespace_text_counts_as_no_text():
    message = asst_msg(" \n\t", tool_calls=[tool_call("c", "read", path="x")], stop="toolUse")
    sm = session(msg("u", None, user_msg("go"), 1), msg("a", "u", message, 2), msg("v", "a", user_msg("next"), 3))
    assert ids(rows_of(sm)) == ["u", "v"]


def test_hidden_entries_do_not_push_chains_right():
    sm = session(
        msg("u1", None, user_msg("one"), 1),
        entry("model_change", "m", "u1", 2, provider="p", modelId="x"),
        msg("a1", "m", asst_msg("reply"), 3),
        entry("thinking_level_change", "t", "a1", 4, thinkingLevel="low"),
        msg("u2", "t", user_msg("two"), 5),
    )
    rows = rows_of(sm)
    assert ids(rows) == ["u1", "a1", "u2"]
    assert [r.indent for r in rows] == [0, 0, 0]
    assert [r.parent for r in rows] == [-1, 0, 1]


def test_unknown_filter_mode_is_rejected():
    with pytest.raises(ValueError):
        rows_of(every_kind(), filter_mode="tools")


# ---------------------------------------------------------------------------------------------
# Search (§13.5)


def test_search_tokens_must_all_match():
    sm = every_kind()
    assert ids(rows_of(sm, search="user")) == ["user"]
    assert ids(rows_of(sm, search="HELLO user")) == ["user"]
    assert ids(rows_of(sm, search="hello nothing")) == []
    assert ids(rows_of(sm, search="  -la  ")) == ["bash"]  # the command of a bash execution
    assert ids(rows_of(sm, search="ls")) == ["bash", "branch"]  # substring: "e*ls*ewhere"


def test_a_label_matches_its_entry():
    assert ids(rows_of(every_kind(), search="start")) == ["user"]


def test_search_text_of_each_kind():
    assert search_text({"type": "message", "message": user_msg("Hi There")}, "Mark") == "mark user hi there"
    assert search_text({"type": "message", "message": tool_result("c", "read", "Body")}) == "toolresult body"
    bash = {"type": "message", "message": {"role": "bashExecution", "command": "make test"}}
    assert search_text(bash) == "bashexecution make test"
    assert search_text({"type": "custom_message", "customType": "Note", "content": "A"}) == "note a"
    blocks = [{"type": "text", "text": "x" * 150}, {"type": "text", "text": "y" * 100}]
    assert search_text({"type": "custom_message", "customType": "n", "content": blocks}) == "n " + "x" * 150 + "y" * 50
    assert search_text({"type": "compaction", "summary": "secret"}) == "compaction"
    assert search_text({"type": "branch_summary", "summary": "Went"}) == "branch summary went"
    assert search_text({"type": "session_info", "name": "Title"}) == "title title"
    assert search_text({"type": "session_info"}) == "title"
    assert search_text({"type": "model_change", "modelId": "GPT"}) == "model gpt"
    assert search_text({"type": "thinking_level_change", "thinkingLevel": "high"}) == "thinking high"
    assert search_text({"type": "custom", "customType": "State"}) == "custom state"
    assert search_text({"type": "context_edit", "targetId": "ab12", "replacement": None}) == "context edit omit ab12"
    edit = {"type": "context_edit", "targetId": "ab12", "replacement": {"content": "x"}}
    assert search_text(edit) == "context edit replace ab12"
    assert search_text({"type": "label", "label": "Keep"}) == "label keep"
    assert search_text({"type": "label"}) == "label "


def test_search_only_looks_at_the_first_200_units():
    text = "a" * 199 + "😀" + "needle"
    sm = session(msg("u", None, user_msg(text), 1))
    assert rows_of(sm, search="needle") == []


def test_search_rows_reattach_to_visible_ancestors():
    sm = session(
        msg("u1", None, user_msg("alpha"), 1),
        msg("a1", "u1", asst_msg("beta"), 2),
        msg("u2", "a1", user_msg("alpha again"), 3),
    )
    rows = rows_of(sm, search="alpha")
    assert ids(rows) == ["u1", "u2"]
    assert rows[1].parent == 0 and rows[1].indent == 0


# ---------------------------------------------------------------------------------------------
# Display text (§13.4)


def shown(message_or_entry, calls=None):
    item = message_or_entry if "type" in message_or_entry else {"type": "message", "message": message_or_entry}
    return display_text(item, calls or {}, HOME)


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("read", {"path": "/home/ada/src/a.py", "offset": 10, "limit": 20}, "[read: ~/src/a.py:10-29]"),
        ("read", {"path": "a.py", "offset": 5}, "[read: a.py:5]"),
        ("read", {"path": "a.py", "limit": 20}, "[read: a.py:1-20]"),
        ("read", {"path": "a.py", "offset": "7", "limit": "3"}, "[read: a.py:7-9]"),
        ("read", {"path": "a.py", "offset": None, "limit": None}, "[read: a.py]"),
        ("read", {"path": "a.py", "offset": "ten"}, "[read: a.py]"),
        ("read", {"path": "a.py", "offset": True, "limit": 4}, "[read: a.py:1-4]"),
        ("read", {"path": "a.py", "offset": 2.5}, "[read: a.py:2.5]"),
        ("read", {"file_path": "b.py"}, "[read: b.py]"),
        ("read", {}, "[read: ]"),
        ("write", {"path": "/home/ada/notes.md", "content": "x"}, "[write: ~/notes.md]"),
        ("edit", {"file_path": "/srv/app.py", "oldText": "a", "newText": "b"}, "[edit: /srv/app.py]"),
        ("bash", {"command": "npm test"}, "[bash: npm test]"),
        ("bash", {"command": "  echo\ta\nb  "}, "[bash: echo a b]"),
        ("bash", {"command": "x" * 51}, "[bash: " + "x" * 50 + "...]"),
        ("bash", {"command": "x" * 50}, "[bash: " + "x" * 50 + "]"),
        ("grep", {"pattern": "TODO", "path": "/home/ada/src"}, "[grep: /TODO/ in ~/src]"),
        ("grep", {"pattern": "TODO"}, "[grep: /TODO/ in .]"),
        ("find", {"pattern": "*.py", "path": "lib"}, "[find: *.py in lib]"),
        ("find", {"pattern": "*.py"}, "[find: *.py in .]"),
        ("ls", {"path": "/home/ada"}, "[ls: ~]"),
        ("ls", {}, "[ls: .]"),
        ("subagent", {"task": "x"}, '[subagent: {"task":"x"}]'),
        ("web", {"query": "q" * 40}, '[web: {"query":"' + "q" * 30 + "...]"),
        ("web", {"n": 1.0, "ok": True}, '[web: {"n":1,"ok":true}]'),
    ],
)
def test_tool_results_are_shown_as_their_calls(name, arguments, expected):
    assert format_tool_call(name, arguments, HOME) == expected
    result = tool_result("call-9", name, "output")
    assert shown(result, {"call-9": (name, arguments)}) == expected


def test_tool_result_without_a_known_call():
    assert shown(tool_result("nope", "grep", "x")) == "[grep]"
    unnamed = tool_result("nope", "grep", "x")
    del unnamed["toolName"]
    assert shown(unnamed) == "[tool]"


def test_home_shortening_uses_path_rules():
    assert shorten_home("/home/ada/x", "/home/ada") == "~/x"
    assert shorten_home("/home/ada", "/home/ada/") == "~"
    assert shorten_home("/home/adam/x", "/home/ada") == "/home/adam/x"
    assert shorten_home("relative/x", "/home/ada") == "relative/x"
    assert shorten_home("/home/ada/x", "") == "/home/ada/x"


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (12500, "13k"),  # Python's round(12.5) would give 12
        (11499, "11k"),
        (500, "1k"),
        (499, "0k"),
        (1500, "2k"),
        (2500, "3k"),
        (115000, "115k"),
        ("12500", "13k"),
    ],
)
def test_compaction_rounds_halves_up(tokens, expected):
    assert shown({"type": "compaction", "summary": "s", "tokensBefore": tokens}) == f"[compaction: {expected} tokens]"


def test_message_display_texts():
    assert shown(user_msg("  hi\nthere\t ")) == "user: hi there"
    blocks = [{"type": "text", "text": "a"}, {"type": "image", "data": ""}, {"type": "text", "text": "b"}]
    assert shown(user_msg(blocks)) == "user: ab"
    long = "x" * 199 + "😀" + "tail"
    assert shown(user_msg(long)) == "user: " + "x" * 199 + "\ud83d"  # 200 UTF-16 units, like slice()
    assert shown(asst_msg("answer")) == "assistant: answer"
    assert shown(asst_msg(None, stop="aborted")) == "assistant: (aborted)"
    error = "e" * 90 + "\nmore"
    assert shown(asst_msg(None, stop="error", error=error)) == "assistant: " + "e" * 80
    assert shown(asst_msg(None, stop="stop")) == "assistant: (no content)"
    assert shown({"role": "bashExecution", "command": "ls\n-la", "output": ""}) == "[bash]: ls -la"
    assert shown({"role": "system", "content": "x"}) == "[system]"
    assert shown({"role": "custom", "customType": "x", "content": "y"}) == "[custom]"


def test_entry_display_texts():
    assert shown({"type": "custom_message", "customType": "note", "content": "a\nb"}) == "[note]: a b"
    blocks = [{"type": "text", "text": "x" * 150}, {"type": "text", "text": "y" * 100}]
    assert shown({"type": "custom_message", "customType": "n", "content": blocks}) == "[n]: " + "x" * 150 + "y" * 100
    assert shown({"type": "branch_summary", "summary": "went\nelsewhere"}) == "[branch summary]: went elsewhere"
    assert shown({"type": "model_change", "provider": "p", "modelId": "m1"}) == "[model: m1]"
    assert shown({"type": "thinking_level_change", "thinkingLevel": "high"}) == "[thinking: high]"
    assert shown({"type": "custom", "customType": "state"}) == "[custom: state]"
    assert shown({"type": "context_edit", "targetId": "ab", "replacement": None}) == "[context omit: ab]"
    assert shown({"type": "context_edit", "targetId": "ab", "replacement": {"content": "x"}}) == "[context replace: ab]"
    assert shown({"type": "label", "targetId": "ab", "label": "keep"}) == "[label: keep]"
    assert shown({"type": "label", "targetId": "ab"}) == "[label: (cleared)]"
    assert shown({"type": "session_info", "name": "Work"}) == "[title: Work]"
    assert shown({"type": "session_info", "name": ""}) == "[title: empty]"
    assert shown({"type": "usage"}) == ""
    assert shown({"type": "something_new"}) == ""


def test_render_row_can_use_another_home():
    sm = session(
        msg("u", None, user_msg("go"), 1),
        msg("a", "u", tool_only("c", "read", path="/home/bob/x.py"), 2),
        msg("t", "a", tool_result("c", "read", "x"), 3),
    )
    row = rows_of(sm)[1]
    assert row.text == "[read: /home/bob/x.py]"
    assert render_row(row, home="/home/bob") == "  • [read: ~/x.py]"


# ---------------------------------------------------------------------------------------------
# Labels and label times


def labelled_root(label_time):
    label = {"type": "label", "id": "l1", "parentId": "a1", "timestamp": label_time, "targetId": "u1",
             "label": "checkpoint"}
    return session(msg("u1", None, user_msg("start"), 1), msg("a1", "u1", asst_msg("ok"), 2), label)


def test_label_and_label_time():
    stamp = datetime(2026, 3, 28, 14, 32).astimezone().isoformat()
    nav = navigator(labelled_root(stamp))
    assert lines(nav)[0] == "  • [checkpoint] user: start"
    nav.handle_key("T")
    now = datetime(2026, 6, 1, 9, 0)
    out = nav.render(all_rows=True, now=now)
    assert out[0] == "  • [checkpoint] 3/28 14:32 user: start"
    assert out[-1] == "  (2/2) [+label time]"
    nav.handle_key("shift+t")
    assert lines(nav)[-1] == "  (2/2)"


def test_label_time_formats():
    stamp = datetime(2026, 3, 28, 7, 5).astimezone().isoformat()
    assert format_label_time(stamp, now=datetime(2026, 3, 28, 23, 0)) == "07:05"
    assert format_label_time(stamp, now=datetime(2026, 12, 1)) == "3/28 07:05"
    assert format_label_time(stamp, now=datetime(2027, 1, 1)) == "26/3/28 07:05"


def test_labels_from_label_entries():
    sm = session(msg("u1", None, user_msg("start"), 1), msg("a1", "u1", asst_msg("ok"), 2))
    sm.append_label_change("a1", "done")
    sm.branch("a1")
    rows = rows_of(sm)
    assert [r.label for r in rows] == [None, "done"]
    assert rows[1].label_timestamp is not None
    assert render_row(rows[1]) == "  • [done] assistant: ok"


# ---------------------------------------------------------------------------------------------
# Selection (§13.6)


def model_change_leaf():
    """user-1 asst-1 {user-2 model_change(leaf) | user-3 asst-3}."""
    return session(
        msg("user-1", None, user_msg("one"), 1),
        msg("asst-1", "user-1", asst_msg("r1"), 2),
        msg("user-2", "asst-1", user_msg("two"), 3),
        entry("model_change", "mc", "user-2", 4, provider="p", modelId="m"),
        msg("user-3", "asst-1", user_msg("three"), 5),
        msg("asst-3", "user-3", asst_msg("r3"), 6),
        leaf="mc",
    )


@pytest.mark.parametrize("kind", ["model_change", "thinking_level_change"])
def test_hidden_leaf_selects_its_nearest_visible_ancestor(kind):
    sm = model_change_leaf()
    if kind == "thinking_level_change":
        sm.branch("user-2")
        sm.append_thinking_level_change("high")
    nav = navigator(sm)
    assert nav.selected_id == "user-2"
    assert nav.selected != len(nav.rows) - 1


def test_initial_selection_falls_back_to_the_last_row():
    sm = model_change_leaf()
    flat = flatten_tree(sm.get_tree(), sm.leaf_id)
    rows = visible_rows(flat, home=HOME)
    assert initial_selection(rows, flat, None) == len(rows) - 1
    assert initial_selection(rows, flat, "missing") == len(rows) - 1
    assert initial_selection([], flat, "user-2") == 0
    nav = TreeNavigator(flat, selected_id="asst-3", home=HOME)
    assert nav.selected_id == "asst-3"


def two_turns():
    return session(
        msg("user-1", None, user_msg("one"), 1),
        msg("asst-1", "user-1", asst_msg("r1"), 2),
        msg("user-2", "asst-1", user_msg("two"), 3),
        msg("asst-2", "user-2", asst_msg("r2"), 4),
    )


def test_filter_switch_keeps_the_nearest_visible_ancestor():
    nav = navigator(two_turns())
    assert nav.selected_id == "asst-2"
    nav.handle_key("ctrl+u")
    assert nav.filter_mode == "user-only" and nav.selected_id == "user-2"
    nav.handle_key("ctrl+d")
    assert nav.filter_mode == "default" and nav.selected_id == "user-2"


def test_empty_view_keeps_the_remembered_selection():
    nav = navigator(two_turns())
    nav.handle_key("ctrl+l")
    assert nav.rows == [] and nav.selected_row is None
    assert lines(nav) == ["  No entries found", "  (0/0) [labeled]"]
    nav.handle_key("ctrl+d")
    assert nav.selected_id == "asst-2"
    nav.handle_key("up")
    assert nav.selected_id == "user-2"
    nav.handle_key("ctrl+l")
    nav.handle_key("ctrl+l")  # toggled twice: back to default
    assert nav.filter_mode == "default" and nav.selected_id == "user-2"


def test_up_and_down_wrap_around():
    nav = navigator(two_turns())
    nav.handle_key("down")
    assert nav.selected_id == "user-1"
    nav.handle_key("up")
    assert nav.selected_id == "asst-2"


def test_page_moves_by_one_window_and_clamp():
    sm = session(*[msg(f"m{i}", f"m{i - 1}" if i else None, user_msg(f"t{i}"), i) for i in range(30)])
    nav = navigator(sm, window=window_for_terminal(20))
    assert nav.window == 10 and nav.selected == 29
    nav.handle_key("left")
    assert nav.selected == 19
    nav.handle_key("pageUp")
    nav.handle_key("page-up")
    assert nav.selected == 0
    nav.handle_key("right")
    assert nav.selected == 10
    nav.handle_key("pagedown")
    nav.handle_key("pageDown")
    assert nav.selected == 29
    assert len(nav.render()) == 11  # a window of rows plus the status line
    assert window_for_terminal(4) == 5
    assert window_range(0, 30, 10) == (0, 10) and window_range(15, 30, 10) == (10, 20)
    assert window_range(29, 30, 10) == (20, 30) and window_range(2, 3, 10) == (0, 3)


def test_ctrl_o_cycles_filters_both_ways():
    nav = navigator(two_turns())
    seen = []
    for _ in range(5):
        nav.handle_key("ctrl+o")
        seen.append(nav.filter_mode)
    assert seen == ["no-tools", "user-only", "labeled-only", "all", "default"]
    nav.handle_key("shift+ctrl+o")
    assert nav.filter_mode == "all"
    nav.handle_key("ctrl+shift+o")
    assert nav.filter_mode == "labeled-only"
    assert FILTER_MODES == ("default", "no-tools", "user-only", "labeled-only", "all")


def test_filter_toggles():
    nav = navigator(two_turns())
    for key, mode in (("ctrl+t", "no-tools"), ("ctrl+u", "user-only"), ("ctrl+l", "labeled-only"), ("ctrl+a", "all")):
        nav.handle_key(key)
        assert nav.filter_mode == mode
        assert nav.render(all_rows=True)[-1].endswith(
            {"no-tools": "[no-tools]", "user-only": "[user]", "labeled-only": "[labeled]", "all": "[all]"}[mode]
        )
        nav.handle_key(key)
        assert nav.filter_mode == "default"
    nav.handle_key("ctrl+a")
    nav.handle_key("ctrl+d")
    assert nav.filter_mode == "default"


def test_typing_searches_and_escape_clears_then_cancels():
    nav = navigator(two_turns())
    for ch in "two":
        assert nav.handle_key(ch) is None
    assert nav.search == "two" and ids(nav.rows) == ["user-2"]
    nav.handle_key("backspace")
    assert nav.search == "tw"
    nav.handle_key("\x01\x02")  # control characters are never typed into the search
    assert nav.search == "tw"
    assert nav.handle_key("escape") is None
    assert nav.search == "" and len(nav.rows) == 4
    assert nav.handle_key("escape") == NavEvent("cancel")


def test_enter_selects_and_shift_l_asks_for_a_label():
    nav = navigator(two_turns())
    assert nav.handle_key("enter") == NavEvent("select", "asst-2")
    assert nav.handle_key("L") == NavEvent("edit_label", "asst-2", None)
    nav.set_label("asst-2", "checkpoint", "2026-01-01T00:00:00.000Z")
    assert nav.selected_row.label == "checkpoint"
    assert nav.handle_key("shift+l") == NavEvent("edit_label", "asst-2", "checkpoint")
    assert ids(visible_rows(nav.flat, filter_mode="labeled-only", home=HOME)) == ["asst-2"]
    nav.set_label("asst-2", None)
    assert nav.selected_row.label is None


def test_label_edits_are_appended_to_the_session():
    sm = two_turns()
    nav = navigator(sm)
    nav.handle_key("up")
    event = nav.handle_key("shift+l")
    assert event == NavEvent("edit_label", "user-2", None)
    label_id = nav.apply_label(sm, event.entry_id, "  review  ")
    assert sm.get_label("user-2") == "review"
    assert sm.get_entry(label_id)["parentId"] == "asst-2"  # appended at the leaf
    assert nav.selected_row.label == "review"
    assert nav.selected_row.label_timestamp == sm.get_entry(label_id)["timestamp"]
    nav.apply_label(sm, "user-2", "   ")
    assert sm.get_label("user-2") is None and nav.selected_row.label is None


def test_ctrl_x_copies_the_full_text():
    long_text = "line one\n" + "word " * 100 + "\nline three"
    sm = session(msg("u", None, user_msg("q"), 1), msg("a", "u", asst_msg(long_text), 2))
    assert navigator(sm).handle_key("ctrl+x") == NavEvent("copy", "a", long_text)
    assert copy_text({"type": "message", "message": {"role": "bashExecution", "command": "ls"}}) == "ls"
    assert copy_text({"type": "message", "message": asst_msg(None, stop="error", error="boom")}) == "boom"
    assert copy_text({"type": "compaction", "summary": "sum"}) == "sum"
    assert copy_text({"type": "branch_summary", "summary": "bs"}) == "bs"
    assert copy_text({"type": "custom_message", "customType": "n", "content": [{"type": "text", "text": "c"}]}) == "c"
    assert copy_text({"type": "model_change", "modelId": "m"}) is None
    assert copy_text({"type": "message", "message": user_msg("   ")}) is None


def test_help_text_fits_narrow_widths():
    out = help_lines(30)
    text = "\n".join(out)
    for word in ("branch", "copy", "filters", "cycle", "label time"):
        assert word in text
    assert "..." not in text
    assert all(len(line) <= 30 for line in out)
    assert len(help_lines(200)) == 1


# ---------------------------------------------------------------------------------------------
# Folding (§13.6)


def branching():
    """user-1 asst-1 user-2 asst-2 {user-3a asst-3a user-4a asst-4a | user-3b asst-3b user-4b}."""
    chain_a = ["user-3a", "asst-3a", "user-4a", "asst-4a"]
    chain_b = ["user-3b", "asst-3b", "user-4b"]
    items = [
        msg("user-1", None, user_msg("1"), 1),
        msg("asst-1", "user-1", asst_msg("1"), 2),
        msg("user-2", "asst-1", user_msg("2"), 3),
        msg("asst-2", "user-2", asst_msg("2"), 4),
    ]
    for n, (chain_ids, start) in enumerate(((chain_a, 10), (chain_b, 20))):
        parent = "asst-2"
        for i, entry_id in enumerate(chain_ids):
            make = user_msg if entry_id.startswith("user") else asst_msg
            items.append(msg(entry_id, parent, make(entry_id), start + i))
            parent = entry_id
    return session(*items, leaf="asst-4a")


@pytest.mark.parametrize(("left", "right"), [("ctrl+left", "ctrl+right"), ("alt+left", "alt+right")])
def test_fold_and_branch_jumps(left, right):
    nav = navigator(branching())
    assert nav.selected_id == "asst-4a"
    nav.handle_key(left)
    assert nav.selected_id == "user-3a" and not nav.folded
    nav.handle_key(left)
    assert nav.selected_id == "user-3a" and nav.folded == {"user-3a"}
    assert ids(nav.rows) == ["user-1", "asst-1", "user-2", "asst-2", "user-3a", "user-3b", "asst-3b", "user-4b"]
    assert nav.render(all_rows=True)[4] == "› ├⊞ • user: user-3a"
    nav.handle_key("down")
    assert nav.selected_id == "user-3b"
    nav.handle_key("up")
    assert nav.selected_id == "user-3a"
    nav.handle_key(right)
    assert nav.selected_id == "user-3a" and not nav.folded
    nav.handle_key("down")
    assert nav.selected_id == "asst-3a"
    nav.handle_key(left)
    assert nav.selected_id == "user-3a"
    nav.handle_key(right)
    assert nav.selected_id == "asst-4a"


def test_folding_the_root():
    nav = navigator(branching())
    nav.handle_key("ctrl+left")
    nav.handle_key("ctrl+left")
    assert nav.folded == {"user-3a"}
    nav.handle_key("ctrl+left")  # on a folded segment start: up to the root
    assert nav.selected_id == "user-1"
    nav.handle_key("ctrl+left")
    assert nav.folded == {"user-3a", "user-1"} and ids(nav.rows) == ["user-1"]
    assert nav.render(all_rows=True) == ["› ⊞ • user: 1", "  (1/1)"]
    nav.handle_key("down")
    assert nav.selected_id == "user-1"
    nav.handle_key("ctrl+right")
    assert nav.folded == {"user-3a"}
    nav.handle_key("ctrl+right")
    assert nav.selected_id == "user-3a" and nav.selected_row.folded
    nav.handle_key("down")
    assert nav.selected_id == "user-3b"


def test_folds_on_the_inactive_branch():
    nav = navigator(branching())
    while nav.selected_id != "user-3b":
        nav.handle_key("down")
    nav.handle_key("ctrl+right")
    assert nav.selected_id == "user-4b"
    nav.handle_key("ctrl+left")
    assert nav.selected_id == "user-3b"
    nav.handle_key("ctrl+left")
    assert nav.folded == {"user-3b"}
    nav.handle_key("ctrl+left")
    assert nav.selected_id == "user-1"


def test_folding_with_two_roots():
    sm = session(
        msg("user-1", None, user_msg("1"), 1),
        msg("asst-1", "user-1", asst_msg("1"), 2),
        msg("user-2", None, user_msg("2"), 3),
        msg("asst-2", "user-2", asst_msg("2"), 4),
        leaf="asst-1",
    )
    nav = navigator(sm)
    nav.handle_key("ctrl+left")
    assert nav.selected_id == "user-1"
    nav.handle_key("ctrl+left")
    assert nav.folded == {"user-1"}
    assert nav.render(all_rows=True)[0] == "› ⊞ • user: 1"
    nav.handle_key("down")
    assert nav.selected_id == "user-2"
    nav.handle_key("ctrl+right")
    assert nav.selected_id == "asst-2"
    nav.handle_key("ctrl+left")
    assert nav.selected_id == "user-2"
    nav.handle_key("ctrl+left")
    assert nav.folded == {"user-1", "user-2"}
    nav.handle_key("ctrl+left")
    assert nav.selected_id == "user-2"


def test_folding_hides_descendants_through_hidden_entries():
    sm = session(
        msg("user-1", None, user_msg("1"), 1),
        msg("tool", "user-1", tool_only(), 2),
        msg("user-2", "tool", user_msg("2"), 3),
        msg("asst-2", "user-2", asst_msg("2"), 4),
        leaf="user-1",
    )
    nav = navigator(sm)
    assert ids(nav.rows) == ["user-1", "user-2", "asst-2"]
    nav.handle_key("ctrl+left")
    assert ids(nav.rows) == ["user-1"]
    nav.handle_key("down")
    assert nav.selected_id == "user-1"


def test_search_and_filter_changes_clear_folds():
    nav = navigator(branching())
    nav.folded.add("user-3a")
    nav.refresh()
    nav.handle_key("x")
    assert nav.folded == set()
    nav.handle_key("backspace")
    nav.folded.add("user-3a")
    nav.handle_key("ctrl+t")
    assert nav.folded == set()


def test_fold_functions_are_pure():
    sm = branching()
    flat = flatten_tree(sm.get_tree(), sm.leaf_id)
    rows = visible_rows(flat, home=HOME)
    selected = initial_selection(rows, flat, "asst-4a")
    folded, up = fold_or_up(rows, selected, frozenset())
    assert folded == frozenset() and rows[up].entry_id == "user-3a"
    folded, same = fold_or_up(rows, up, folded)
    assert folded == {"user-3a"} and same == up
    folded_rows = visible_rows(flat, folded=folded, home=HOME)
    assert folded_rows[up].folded and folded_rows[up].entry_id == "user-3a"
    folded, same = unfold_or_down(folded_rows, up, folded)
    assert folded == frozenset() and same == up
    assert not rows[0].foldable or rows[0].child_count > 0
    assert [r.entry_id for r in rows if r.foldable] == ["user-1", "user-3a", "user-3b"]


# ---------------------------------------------------------------------------------------------
# Rows as data


def test_rows_are_frozen_flat_records():
    row = rows_of(two_turns())[0]
    assert isinstance(row, NavRow)
    with pytest.raises(AttributeError):
        row.text = "x"
    assert not hasattr(row, "__dict__")
    assert (row.entry_id, row.index, row.parent, row.indent, row.is_leaf) == ("user-1", 0, -1, 0, False)


# ---------------------------------------------------------------------------------------------
# Real pi session files


REAL_FILES = [
    "before-compaction.jsonl",
    "large-session.jsonl",
    "public-dwsy-real-truncated.jsonl",
    "public-twkrash-branching.jsonl",
    "public-twkrash-uat.jsonl",
    "public-whamp-v1-linear.jsonl",
]


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_sessions_produce_sensible_rows(name, fixture_copy):
    sm = SessionManager.open(fixture_copy(name))
    nav = navigator(sm)
    assert nav.rows
    shown_ids = set(ids(nav.rows))
    expected = next(e["id"] for e in reversed(sm.get_branch()) if e["id"] in shown_ids)
    assert nav.selected_id == expected  # the leaf, or its nearest visible ancestor
    out = nav.render(all_rows=True)
    assert out[nav.selected].startswith("› ")
    assert out[-1] == f"  ({nav.selected + 1}/{len(nav.rows)})"
    assert all(row.on_active_path for row in nav.rows[: nav.selected + 1])
    assert not any(row.entry.get("type") == "usage" for row in nav.rows)
    for mode in FILTER_MODES:
        for row in rows_of(sm, filter_mode=mode):
            assert "\n" not in row.text and "\t" not in row.text


def test_real_branching_file_renders_exactly(fixture_copy):
    sm = SessionManager.open(fixture_copy("public-twkrash-branching.jsonl"))
    assert lines(navigator(sm)) == [
        "  • user: sanitized",
        "› ├─ • ",  # e8 is an entry type pi does not know: shown with empty text
        "  └⊟ [read: ]",
        "        [compaction: 0k tokens]",
        "        assistant: sanitized",
        "  (2/5)",
    ]
    sm.branch("e6")
    assert lines(navigator(sm)) == [
        "  • user: sanitized",
        "  ├⊟ • [read: ]",
        "  │     • [compaction: 0k tokens]",
        "› │     • assistant: sanitized",
        "  └─ ",
        "  (4/5)",
    ]


def test_real_v1_sessions_show_tool_calls(fixture_copy):
    sm = SessionManager.open(fixture_copy("large-session.jsonl"))
    texts = [row.text for row in rows_of(sm)]
    assert any(t.startswith("[bash: ") for t in texts)
    assert any(t.startswith("[read: ") for t in texts)
    assert not any(t.startswith("[bash]") and not t.startswith("[bash]: ") for t in texts)
    assert all(not t.startswith("[toolResult") for t in texts)
    before = SessionManager.open(fixture_copy("before-compaction.jsonl"))
    assert any(row.text.startswith("[compaction: ") for row in rows_of(before, filter_mode="all"))
