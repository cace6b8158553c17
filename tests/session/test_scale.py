"""Deep and wide trees: no recursion anywhere (DESIGN.md: never recursive, never nested)."""

from __future__ import annotations

import sys

from pi_lab.session import SessionManager, build_session_context

N = 1_000_000


def linear_entries(n):
    entries = [{"type": "session", "version": 3, "id": "deep", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}]
    parent = None
    for i in range(n):
        entry_id = f"{i:08x}"
        role = "user" if i % 2 == 0 else "assistant"
        message = {"role": role, "content": "x" if role == "user" else [{"type": "text", "text": "y"}], "timestamp": i}
        entries.append({"type": "message", "id": entry_id, "parentId": parent,
                        "timestamp": "2026-01-01T00:00:01.000Z", "message": message})
        parent = entry_id
    return entries


def test_million_entry_chain_loads_projects_and_builds_a_tree():
    assert sys.getrecursionlimit() < N
    sm = SessionManager.in_memory(entries=linear_entries(N))
    assert sm.leaf_id == f"{N - 1:08x}"
    assert len(sm.get_branch()) == N
    assert len(build_session_context(sm.entries[: N // 10]).messages) == N // 10
    assert len(sm.build_session_context().messages) == N
    (root,) = sm.get_tree()
    depth = 0
    node = root
    while node.children:
        node = node.children[0]
        depth += 1
    assert depth == N - 1
