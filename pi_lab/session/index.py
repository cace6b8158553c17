"""The lookups SessionManager keeps over its lines: entries by id, the leaf, the labels.

pi rebuilds them from every line in file order (session-format.md §9); these functions do
that over plain dicts so the manager only swaps the results in.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pi_lab.session.appends import is_user_or_assistant
from pi_lab.session.bodies import LazyEntry
from pi_lab.session.entries import Entry
from pi_lab.session.tree import UNSET, TreeNode, finish_one_pass, get_branch, hang_node


def apply_label(labels: dict[str, str], stamps: dict[str, Any], entry: Entry) -> None:
    """Set (or, with an empty label, clear) the label a ``label`` entry names."""
    target = entry.get("targetId")
    if type(target) is not str:
        return  # pi's label map would hold it under a key no string id ever finds
    if entry.get("label"):
        labels[target] = entry["label"]
        stamps[target] = entry.get("timestamp")
    else:
        labels.pop(target, None)
        stamps.pop(target, None)


def index_lines(
    file_entries: list[Entry],
) -> tuple[dict[str, Entry], Any, bool, dict[str, str], dict[str, Any]]:
    """(entries by id, leaf id, whether there is a user or assistant message, labels, their
    timestamps) of a session's lines, header included."""
    by_id: dict[str, Entry] = {}
    labels: dict[str, str] = {}
    stamps: dict[str, Any] = {}
    labels_seen = False
    leaf: Any = None
    for entry in file_entries:
        kind = entry.get("type")
        if kind == "session":
            continue
        entry_id = entry.get("id")
        if type(entry_id) is str:
            by_id[entry_id] = entry
            leaf = entry_id
        else:
            leaf = UNSET  # pi sets the leaf to the line's id even when it has none
        if kind == "label":
            labels_seen = True
    has_conversation = any(is_user_or_assistant(e) for e in file_entries)
    if labels_seen:
        for entry in file_entries:
            if entry.get("type") == "label":
                apply_label(labels, stamps, entry)
    return by_id, leaf, has_conversation, labels, stamps


class IndexedLines(NamedTuple):
    """Everything :func:`index_lines`, the entry list and ``build_tree`` give for a file,
    made by :func:`index_and_tree` in one walk."""

    entries: list[Entry]  # the lines without the header
    by_id: dict[str, Entry]
    leaf: Any
    has_conversation: bool
    labels: dict[str, str]
    label_timestamps: dict[str, Any]
    roots: list[TreeNode]
    nodes: dict[str, TreeNode]
    chain_from: int  # from this place on, each entry is the child of the one before it

    def branch(self) -> list[Entry]:
        """``get_branch(by_id, leaf)`` (the leaf is the last entry): the file's last run of
        lines that each continue the line before is the end of the branch as it stands,
        and only the part above it is walked by id (a 1,000,000-line chain spent 1.0 s in
        that walk's lookups; the usual session's last run is its latest turns)."""
        entries = self.entries
        if not entries:
            return []
        start = entries[self.chain_from]
        fields = start.skeleton if type(start) is LazyEntry else start
        parent_id = fields.get("parentId")
        above = get_branch(self.by_id, parent_id) if parent_id and parent_id != fields.get("id") else []
        return above + entries[self.chain_from:]


def index_and_tree(file_entries: list[Entry]) -> IndexedLines | None:
    """The lookups, the entry list and the tree of a freshly loaded file in one walk over
    its lines (each walk over 100,000 scattered dicts costs tens of milliseconds in memory
    traffic alone; the separate index, list and tree walks were three).

    Only for the file pi writes: one header, first; a unique string id on every other line;
    every parent written before its children. ``None`` for anything else, and the caller
    takes the general path (``index_lines`` + ``build_tree``), which gives the same result
    for the usual file (tests/session/test_lazy_index.py compares both). The lines may be
    skeletons of a lazy load (:mod:`pi_lab.session.bodies`): no body is parsed here.
    """
    if not file_entries or file_entries[0].get("type") != "session":
        return None
    by_id: dict[str, Entry] = {}
    nodes: dict[str, TreeNode] = {}
    roots: list[TreeNode] = []
    branching: list[TreeNode] = []
    label_lines: list[Entry] = []
    orphans = False
    entries = file_entries[1:]
    chain_from = 0
    place = -1
    previous: Any = None
    previous_node: TreeNode | None = None
    for entry in entries:
        place += 1
        # A skeleton answers type, id and parentId from its own dict.
        fields = entry.skeleton if type(entry) is LazyEntry else entry
        kind = fields.get("type")
        entry_id = fields.get("id")
        if kind == "session" or type(entry_id) is not str or entry_id in nodes:
            return None  # a second header, an odd or duplicated id: the general path
        if kind == "label":
            label_lines.append(entry)
        node = TreeNode(entry)
        nodes[entry_id] = node
        by_id[entry_id] = entry
        parent_id = fields.get("parentId")
        if previous and parent_id == previous:
            # The usual line: the child of the line before it, whose node is at hand (no
            # lookup in an index of every id: most of a file is such runs).
            parent = previous_node
        else:
            chain_from = place  # this line does not continue the one before it
            if not parent_id or parent_id == entry_id:
                roots.append(node)
                previous, previous_node = entry_id, node
                continue
            parent = nodes.get(parent_id) if type(parent_id) is str else None
        previous, previous_node = entry_id, node
        if hang_node(node, parent, roots, branching):
            orphans = True
    if not finish_one_pass(roots, nodes, orphans, branching):
        return None  # a parent written after its child: the general build orders that case
    labels: dict[str, str] = {}
    stamps: dict[str, Any] = {}
    for entry in label_lines:
        apply_label(labels, stamps, entry)
    for target, label in labels.items():
        node = nodes.get(target)
        if node is not None:
            node.label = label
            node.label_timestamp = stamps.get(target)
    has_conversation = any(is_user_or_assistant(e) for e in entries)
    leaf = entries[-1]["id"] if entries else None
    return IndexedLines(entries, by_id, leaf, has_conversation, labels, stamps, roots, nodes, chain_from)


def last_line_path(path: list[Any] | None, fused: IndexedLines | None) -> list[Any] | None:
    """The leaf's branch as a lazy load's reader followed it (``BodyFile.last_path``), when it
    is the one ``get_branch`` walks: the file took the one-walk path (unique ids, parents
    first) and the path ends at the leaf (the last line went through the reader's path, not
    an unfinished tail parsed apart)."""
    if not path or fused is None or not isinstance(fused.leaf, str):
        return None
    if path[-1] is not fused.by_id.get(fused.leaf):
        return None
    # The walk stops at an entry whose parent is not indexed; so must the path (the reader
    # links each line to the line before it on the path, or starts a path at a root).
    parent = path[0].get("parentId")
    if parent and type(parent) is str and parent in fused.by_id and parent != path[0].get("id"):
        return None
    return path
