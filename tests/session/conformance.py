"""Every query of the conformance contract of a SessionManager, as one comparable value.

Tests that hold two ways of loading a session to the same answers (the one-walk index and the
general path, lazy and eager bodies) compare ``answers`` of both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_lab.session import SessionManager


def tree_rows(roots: list[Any], key: Callable[[Any], Any] = lambda entry: entry) -> list[tuple[Any, ...]]:
    """The tree in pre-order, iteratively: (key of the entry, parent row, label, label time,
    children), the parent as the row number it has here."""
    rows, stack = [], [(node, -1) for node in reversed(roots)]
    while stack:
        node, parent = stack.pop()
        rows.append((key(node.entry), parent, node.label, node.label_timestamp, len(node.children)))
        here = len(rows) - 1
        stack.extend((child, here) for child in reversed(node.children))
    return rows


def answers(sm: SessionManager) -> dict:
    """Every query of the conformance contract, at every entry."""
    ids = [e.get("id") for e in sm.entries if isinstance(e.get("id"), str)]
    context = sm.build_session_context()
    projection = sm.build_session_projection()
    return {
        "entries": sm.get_entries(),
        "entries_property": sm.entries,
        "file_entries": sm.file_entries,
        "header": sm.get_header(),
        "entry": {i: sm.get_entry(i) for i in ids},
        "leaf": sm.leaf_id,
        "leaf_entry": sm.get_leaf_entry(),
        "count": sm.get_entry_count(),
        "tree": tree_rows(sm.get_tree()),
        "branch": sm.get_branch(),
        "branches": {i: sm.get_branch(i) for i in ids},
        "children": {i: sm.get_children(i) for i in [None, *ids]},
        "labels": (sm.labels, list(sm.labels), {i: (sm.get_label(i), sm.get_label_timestamp(i)) for i in ids}),
        "name": sm.get_session_name(),
        "context": (context.messages, context.thinking_level, context.model),
        "projection": ([(p.source, p.messages) for p in projection.entries], projection.messages),
        "context_entries": sm.build_context_entries(),
        "contexts": {i: sm.build_session_context(i).messages for i in ids},
        "context_entries_at": {i: sm.build_context_entries(i) for i in ids},
        "none_leaf": sm.build_session_context(None).messages,
        "cycles": sm.find_cycles(),
        "skipped": sm.skipped_lines,
    }
