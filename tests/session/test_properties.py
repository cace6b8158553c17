"""Random sequences of operations: the file always reopens to the same session."""

from __future__ import annotations

import json

from helpers import Clock, Ids
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_lab.session import SessionManager
from pi_lab.session._json import dumps

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("user"), TEXT),
        st.tuples(st.just("assistant"), TEXT),
        st.tuples(st.just("branch"), st.integers(min_value=0)),
        st.tuples(st.just("reset"), st.none()),
        st.tuples(st.just("label"), st.tuples(st.integers(min_value=0), TEXT)),
        st.tuples(st.just("compact"), st.integers(min_value=0)),
        st.tuples(st.just("edit"), st.tuples(st.integers(min_value=0), st.booleans())),
        st.tuples(st.just("summary"), st.integers(min_value=0)),
        st.tuples(st.just("name"), TEXT),
        st.tuples(st.just("custom"), st.dictionaries(TEXT, st.integers() | st.floats(allow_nan=False, allow_infinity=False), max_size=3)),
    ),
    min_size=1,
    max_size=30,
)


def tree_shape(sm):
    out = []
    stack = [(n, None) for n in reversed(sm.get_tree())]
    while stack:
        node, parent = stack.pop()
        out.append((node.entry["id"], parent, node.label, node.label_timestamp))
        stack.extend((c, node.entry["id"]) for c in reversed(node.children))
    return out


def apply(sm, op, arg):
    ids = [e["id"] for e in sm.entries]
    if op == "user":
        sm.append_message({"role": "user", "content": arg, "timestamp": 1})
    elif op == "assistant":
        sm.append_message({"role": "assistant", "content": [{"type": "text", "text": arg}], "provider": "p",
                           "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                                   "totalTokens": 2}, "stopReason": "stop", "timestamp": 2})
    elif op == "branch" and ids:
        sm.branch(ids[arg % len(ids)])
        return False
    elif op == "reset":
        sm.reset_leaf()
        return False
    elif op == "label" and ids:
        index, text = arg
        sm.append_label_change(ids[index % len(ids)], text or None)
    elif op == "compact":
        branch = sm.get_branch()
        kept = branch[arg % len(branch)]["id"] if branch else None
        sm.append_compaction("summary", kept, 100)
    elif op == "edit":
        index, omit = arg
        editable = [e for e in sm.get_branch() if e["type"] == "message" and e["message"]["role"] in ("user", "assistant")]
        if not editable:
            return None
        sm.append_context_edit(editable[index % len(editable)]["id"], None if omit else {"content": "replaced"})
    elif op == "summary":
        target = ids[arg % len(ids)] if ids else None
        sm.branch_with_summary(target, "went back")
    elif op == "name":
        sm.append_session_info(arg)
    elif op == "custom":
        sm.append_custom_entry("state", arg)
    else:
        return None
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_reopen_gives_the_same_session(tmp_path_factory, ops):
    directory = tmp_path_factory.mktemp("prop")
    sm = SessionManager.create("/repo", directory, uuid_factory=Ids(), clock=Clock())
    last_was_append = False
    for op, arg in ops:
        result = apply(sm, op, arg)
        if result is not None:
            last_was_append = result
        if not sm.flushed:
            continue
        with open(sm.session_file, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        assert lines[-1] == ""
        parsed = [json.loads(line) for line in lines[:-1]]
        assert parsed[0]["type"] == "session"
        reopened = SessionManager.open(sm.session_file)
        # compared as JavaScript numbers: 3.46e16 is written and read back as an integer
        assert dumps(reopened.entries) == dumps(sm.entries)
        assert tree_shape(reopened) == tree_shape(sm)
        assert reopened.session_name == sm.session_name
        if last_was_append:
            assert reopened.leaf_id == sm.leaf_id
            assert dumps(reopened.build_session_context().messages) == dumps(sm.build_session_context().messages)
