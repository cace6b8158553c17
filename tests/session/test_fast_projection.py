"""``project_path`` decides the usual message entry inline and finds the latest compaction,
settings and edits with list searches over the entries' types (issue 28: a 1,000,000-entry
branch took 4.3 s, now well under one). Every answer must be the one the general rules give:
one walk per question and ``project_with_edit`` for every entry, as before.

Inputs: random paths with every odd shape those rules look at (a message that is not an
object, null content, system messages before a compaction, edits that remove, replace or are
malformed, settings changes without their fields, ids that are not strings), every branch of
the real fixtures, and generated sessions with branches, compactions and context edits."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_fixtures import FIXTURES_DIR, FIXTURES_PRESENT, NO_FIXTURES
from view.view_sessions import generated_session as _generated  # the one generated-session helper

from pi_lab.session import SessionManager
from pi_lab.session import projection as P
from pi_lab.session.tree import BranchPath

REPO = Path(__file__).resolve().parents[2]


def general(path):
    """The projection by the general rules: a walk per question, ``project_with_edit`` per entry."""
    thinking_level, model = _walked_settings(path)
    context_entries = P.context_entries_of_path(list(path))  # no types: the walk back
    edits = P.context_edits(context_entries)
    projected, messages = [], []
    for i, entry in enumerate(context_entries):
        if i > 0 and entry.get("type") == "compaction":
            produced = []
        else:
            entry_id = entry.get("id")
            produced = P.project_with_edit(entry, edits.get(entry_id) if isinstance(entry_id, str) else None)
        projected.append((entry, produced))
        messages.extend(produced)
    return projected, messages, thinking_level, model


def _walked_settings(path):
    return P.get_context_settings(list(path))  # no types: the walk from the leaf


def check(path):
    projected, messages, thinking_level, model = general(path)
    for handed in (list(path), BranchPath(path)):
        fast = P.project_path(handed)
        assert (fast.thinking_level, fast.model) == (thinking_level, model)
        assert fast.messages == messages
        assert [id(m) for m in fast.messages] == [id(m) for m in messages] or _copies_only(fast.messages, messages)
        assert [(id(p.source), p.messages) for p in fast.entries] == [(id(e), produced) for e, produced in projected]
        bare = P.project_path(handed, sources=False)
        assert bare.entries == [] and bare.messages == messages
        assert (bare.thinking_level, bare.model) == (thinking_level, model)


def _copies_only(fast, slow):
    """Edited or defaulted messages are new dicts on both sides: equal, not the same object."""
    return all(a is b or (a == b and a is not None) for a, b in zip(fast, slow))


ODD_MESSAGES = [
    {"role": "user", "content": "hi", "timestamp": 1},
    {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p", "model": "m1"},
    {"role": "assistant", "content": None, "provider": "q"},
    {"role": "toolResult", "content": None, "toolCallId": "c"},
    {"role": "system", "content": None},
    {"role": "system", "content": "sys"},
    {"role": ["odd"], "content": None},
    {"role": "custom", "content": "x"},
    "not an object",
    None,
    ["a", "list"],
]


@st.composite
def paths(draw):
    count = draw(st.integers(0, 24))
    path = []
    for n in range(count):
        entry_id = draw(st.sampled_from([f"e{n}", f"e{n}", f"e{n}", 7, None, ["x"]]))
        kind = draw(st.sampled_from(["message"] * 6 + ["compaction", "context_edit", "thinking_level_change",
                                                       "model_change", "custom_message", "branch_summary",
                                                       "label", ["odd"], None]))
        entry = {"type": kind, "id": entry_id, "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z"}
        if kind == "message":
            message = draw(st.sampled_from(ODD_MESSAGES))
            entry["message"] = dict(message) if isinstance(message, dict) else message
        elif kind == "compaction":
            earlier = [e.get("id") for e in path] or ["none"]
            entry.update(summary="s", tokensBefore=5, firstKeptEntryId=draw(st.sampled_from(earlier + ["gone"])))
            if draw(st.booleans()):
                entry["systemMessage"] = {"role": "system", "content": "snap"}
        elif kind == "context_edit":
            earlier = [e.get("id") for e in path] or ["none"]
            entry["targetId"] = draw(st.sampled_from(earlier + [3]))
            entry["replacement"] = draw(st.sampled_from([None, {"content": "new"}, {"content": [{"type": "text",
                                                                                            "text": "n"}]},
                                                          {"nocontent": 1}, "odd"]))
        elif kind == "thinking_level_change":
            if draw(st.booleans()):
                entry["thinkingLevel"] = draw(st.sampled_from(["high", None, "low"]))
        elif kind == "model_change":
            if draw(st.booleans()):
                entry["provider"] = "p2"
            if draw(st.booleans()):
                entry["modelId"] = f"m{n}"
        elif kind == "custom_message":
            entry.update(customType="c", content=draw(st.sampled_from([None, "text"])), display=True)
        elif kind == "branch_summary":
            entry.update(summary=draw(st.sampled_from(["", "went there"])), fromId="e0")
        path.append(entry)
    return path


@settings(max_examples=400, deadline=None)
@given(path=paths())
def test_random_paths_project_as_the_general_rules(path):
    check(path)


def test_a_path_of_other_sequences_takes_the_walks():
    path = [{"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": "x"}}]
    assert P._kinds(tuple(path)) is None and P._kinds(path) == ["message"]

    class Mapped(dict):
        pass

    assert P._kinds([Mapped(path[0])]) == ["message"]
    assert P.project_path([Mapped(path[0])]).messages == [path[0]["message"]]




def _every_branch(sm: SessionManager, step: int = 1):
    ids = [e["id"] for e in sm.entries if isinstance(e.get("id"), str)][::step]
    for entry_id in ids + ([sm.leaf_id] if sm.leaf_id else []):
        yield sm.get_branch(entry_id)


@pytest.mark.parametrize("seed", [1, 3])
def test_generated_sessions_project_as_the_general_rules(seed):
    sm = _generated(3000, seed)
    for branch in _every_branch(sm, step=37):
        check(branch)
    context = sm.build_session_context()
    assert context.messages == general(sm.get_branch())[1]


@pytest.mark.skipif(not FIXTURES_PRESENT, reason=NO_FIXTURES)
def test_real_fixtures_project_as_the_general_rules(tmp_path):
    for source in sorted(FIXTURES_DIR.glob("*.jsonl")):
        copy = tmp_path / source.name
        copy.write_bytes(source.read_bytes())
        sm = SessionManager.open(copy, read_only=True, lazy=False)
        for branch in _every_branch(sm, step=max(1, len(sm.entries) // 200)):
            check(branch)
        assert sm.build_session_context().messages == sm.build_session_projection().messages
