"""Paths and trees over entries linked by ``parentId``. Every walk is iterative.

pi recurses over the tree in places and has no cycle guard; a hand-edited file with a
``parentId`` cycle would loop forever there. Here a walk stops at the first id it has
already seen, and :func:`find_cycles` reports such ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import repeat
from typing import Any

from pi_lab.session._gc import collector_paused
from pi_lab.session.bodies import LazyEntry
from pi_lab.session.entries import Entry
from pi_lab.session.ids import parse_iso_ms

__all__ = ["BranchPath", "TreeNode", "get_branch", "build_session_path", "get_tree", "find_cycles", "UNSET"]



class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Marks an argument that was not given (pi distinguishes ``undefined`` from ``null``)."""


class BranchPath(list[Entry]):
    """A root-to-leaf path as the engine computed it (a plain list in every other respect).

    Handing it back to a pure function (``prepare_compaction(sm.get_branch(), …)``) lets the
    function skip re-checking that the list is a chain; the mark is honoured only while the
    list still ends with the entry it was computed for.
    """

    __slots__ = ("leaf",)

    def __init__(self, entries: Iterable[Entry] = ()):
        super().__init__(entries)
        self.leaf = self[-1] if self else None

    def is_intact(self) -> bool:
        return bool(self) and self[-1] is self.leaf


class TreeNode:
    """One entry of :func:`get_tree`: its entry, children (by timestamp) and label.

    The node holds what the manager holds for the entry: the dict, or for a lazily read
    file the entry's skeleton (:mod:`pi_lab.session.bodies`), whose body ``entry`` parses on
    first use; the tree itself is built from skeletons without parsing any body.
    """

    __slots__ = ("_entry", "children", "label", "label_timestamp")

    def __init__(self, entry: Entry, children: list[TreeNode] | None = None, label: str | None = None,
                 label_timestamp: str | None = None):
        self._entry = entry
        self.children = [] if children is None else children
        self.label = label
        self.label_timestamp = label_timestamp

    @property
    def entry(self) -> Entry:
        entry = self._entry
        return entry if type(entry) is not LazyEntry else entry.resolve()

    @entry.setter
    def entry(self, value: Entry) -> None:
        self._entry = value

    def __repr__(self) -> str:
        return f"TreeNode({self._entry.get('type')} {self._entry.get('id')!r}, {len(self.children)} children)"


def get_branch(by_id: Mapping[str, Entry], from_id: str | None) -> list[Entry]:
    """Root-first path ending at ``from_id``; empty when the id is empty or unknown."""
    # Only string ids are keys; any other value (a list, an object) matches nothing, as a
    # JavaScript Map keyed by ids finds nothing for it.
    if not from_id or (type(from_id) is not str and not isinstance(from_id, str)):
        return []
    get = by_id.get
    entry = get(from_id)
    path: list[Entry] = []
    append = path.append
    limit = len(by_id)
    while entry is not None:
        append(entry)
        parent_id = entry.get("parentId")
        if not parent_id or type(parent_id) is not str:
            break
        entry = get(parent_id)
        if len(path) > limit:
            return _guarded_branch(by_id, from_id)  # longer than the session: a cycle
    path.reverse()
    return path


def _guarded_branch(by_id: Mapping[str, Entry], from_id: str) -> list[Entry]:
    """The walk for hand-edited files with a parentId cycle: stop at the first repeat."""
    # The ids looked up, not the objects found: a lazy session's index may parse an entry
    # again on each lookup (pi_lab.session.bodies), and one key is always one entry.
    entry = by_id.get(from_id)
    path: list[Entry] = []
    seen = {from_id}
    while entry is not None:
        path.append(entry)
        parent_id = entry.get("parentId")
        if not parent_id or type(parent_id) is not str or parent_id in seen:
            break
        seen.add(parent_id)
        entry = by_id.get(parent_id)
    path.reverse()
    return path


def build_session_path(entries: list[Entry], leaf_id: Any = UNSET, by_id: Mapping[str, Entry] | None = None) -> list[Entry]:
    """The path the pure projection functions work on (tree-and-context.md §3.2).

    ``leaf_id`` ``None`` gives an empty path; unset, empty or unknown falls back to the last
    entry in the list.
    """
    if leaf_id is None:
        return []
    if by_id is None:
        if type(entries) is BranchPath and entries.is_intact() and not (isinstance(leaf_id, str) and leaf_id):
            return list(entries)
        if not (isinstance(leaf_id, str) and leaf_id) and entries:
            chain = _chain_ending_the_list(entries)
            if chain is not None:
                return chain
        by_id = index_by_id(entries)
    if isinstance(leaf_id, str) and leaf_id and by_id.get(leaf_id) is not None:
        return get_branch(by_id, leaf_id)
    if not entries:
        return []
    start = entries[-1]
    start_id = start.get("id")
    if type(start_id) is str and by_id.get(start_id) is start:
        return get_branch(by_id, start_id)
    # The last entry may carry no id (unmigrated data) or a duplicated one: walk from it.
    path = [start]
    parent_id = start.get("parentId")
    rest = get_branch(by_id, parent_id) if parent_id else []
    return rest + path


def _chain_ending_the_list(entries: list[Entry]) -> list[Entry] | None:
    """The list itself when it already is a root-to-leaf path (the usual input: a branch
    handed back in); ``None`` means "use the general walk".

    The checks run as C-level list operations: ids unique, the first entry a root, and every
    other entry's parent the entry just before it.
    """
    try:
        ids = list(map(dict.get, entries, repeat("id")))
        parents = list(map(dict.get, entries, repeat("parentId")))
    except TypeError:
        return None
    if parents[0] or type(ids[-1]) is not str or not ids[-1]:
        return None
    if parents[1:] != ids[:-1]:
        return None
    # Only string ids link (pi's Map never matches two equal-looking objects); checked at C
    # level before the ids are hashed.
    if set(map(type, ids)) != {str} or len(set(ids)) != len(ids):
        return None
    return list(entries)


def index_by_id(entries: Iterable[Entry]) -> dict[str, Entry]:
    by_id: dict[str, Entry] = {}
    for entry in entries:
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            by_id[entry_id] = entry
    return by_id


def _sort_key(entry: Entry) -> float:
    ms = parse_iso_ms(entry.get("timestamp"))
    # Array.prototype.sort with a NaN comparison result keeps the pair's order; placing
    # unparsable timestamps first is the closest total order.
    return float("-inf") if ms != ms else ms


def get_tree(
    entries: list[Entry],
    by_id: Mapping[str, Entry] | None = None,
    labels: Mapping[str, str] | None = None,
    label_timestamps: Mapping[str, str] | None = None,
) -> list[TreeNode]:
    """One node per entry; roots in file order, children sorted by timestamp (stable).

    A root is an entry whose parent is null, itself, or unknown. An entry on a parentId
    cycle (hand-edited files only) becomes a root too, so every entry stays reachable.
    """
    return build_tree(entries, by_id, labels, label_timestamps)[0]


def attach_node(roots: list[TreeNode], nodes: dict[str, TreeNode], node: TreeNode) -> None:
    """Add one appended entry's node to a built tree (its parent is already there)."""
    entry = node._entry
    parent_id = entry.get("parentId")
    parent = nodes.get(parent_id) if type(parent_id) is str and parent_id != entry.get("id") else None
    if parent is None:
        roots.append(node)
    else:
        children = parent.children
        key = _sort_key(entry)
        # Appends are normally the newest sibling; otherwise keep the stable timestamp order.
        position = len(children)
        while position > 0 and _sort_key(children[position - 1]._entry) > key:
            position -= 1
        children.insert(position, node)
    entry_id = entry.get("id")
    if type(entry_id) is str:
        nodes[entry_id] = node


def build_tree(
    entries: list[Entry],
    by_id: Mapping[str, Entry] | None = None,
    labels: Mapping[str, str] | None = None,
    label_timestamps: Mapping[str, str] | None = None,
) -> tuple[list[TreeNode], dict[str, TreeNode]]:
    """:func:`get_tree` plus the node of each id (for keeping the tree up to date)."""
    labels = labels or {}
    label_timestamps = label_timestamps or {}
    with collector_paused(len(entries)):
        built = _build_tree_in_file_order(entries, labels, label_timestamps)
        if built is not None:
            return built
        nodes: dict[str, TreeNode] = {}
        position: dict[str, int] = {}
        ordered: list[TreeNode] = []
        for i, entry in enumerate(entries):
            node = TreeNode(entry)
            entry_id = entry.get("id")
            if type(entry_id) is str:
                label = labels.get(entry_id) if labels else None
                if label is not None:
                    node.label = label
                    node.label_timestamp = label_timestamps.get(entry_id)
                nodes[entry_id] = node
                position[entry_id] = i
            ordered.append(node)
        roots: list[TreeNode] = []
        late_parent = False  # a parent written after its child: only then can there be a cycle
        for i, node in enumerate(ordered):
            entry = node._entry
            parent_id = entry.get("parentId")
            if type(parent_id) is not str or (parent := nodes.get(parent_id)) is None or parent_id == entry.get("id"):
                roots.append(node)
                continue
            if position[parent_id] > i:
                late_parent = True
            parent.children.append(node)
        if late_parent:
            cyclic = find_cycles(by_id if by_id is not None else index_by_id(entries))
            if cyclic:
                for node in ordered:
                    node_id = node._entry.get("id")
                    if type(node_id) is str and node_id in cyclic:
                        parent_id = node._entry.get("parentId")
                        parent = nodes.get(parent_id) if type(parent_id) is str else None
                        if parent is not None and node in parent.children:
                            parent.children.remove(node)
                        roots.append(node)
                roots.sort(key=lambda n: _file_position(n, position))
        for node in ordered:
            if len(node.children) > 1:
                node.children.sort(key=_child_sort_key)
    return roots, nodes


def _file_position(node: TreeNode, position: Mapping[str, int]) -> int:
    """Where a node's entry is in the file (-1 for an entry without a string id)."""
    node_id = node._entry.get("id")
    return position.get(node_id, -1) if type(node_id) is str else -1


def _build_tree_in_file_order(
    entries: list[Entry], labels: Mapping[str, str], label_timestamps: Mapping[str, str]
) -> tuple[list[TreeNode], dict[str, TreeNode]] | None:
    """One pass for the usual file, where every parent is written before its children and
    ids are unique; ``None`` (use the general build) when a file breaks either rule."""
    nodes: dict[str, TreeNode] = {}
    roots: list[TreeNode] = []
    orphans = False
    branching: list[TreeNode] = []
    for entry in entries:
        node = TreeNode(entry)
        entry_id = entry.get("id")
        if type(entry_id) is str:
            if entry_id in nodes:
                return None  # a duplicate id: the later entry owns the id
            if labels:
                label = labels.get(entry_id)
                if label is not None:
                    node.label = label
                    node.label_timestamp = label_timestamps.get(entry_id)
            nodes[entry_id] = node
        parent_id = entry.get("parentId")
        if not parent_id or parent_id == entry_id:
            roots.append(node)
            continue
        parent = nodes.get(parent_id) if type(parent_id) is str else None
        if hang_node(node, parent, roots, branching):
            orphans = True
    return (roots, nodes) if finish_one_pass(roots, nodes, orphans, branching) else None


def hang_node(node: TreeNode, parent: TreeNode | None, roots: list[TreeNode], branching: list[TreeNode]) -> bool:
    """Place one node of a one-pass tree build (lines in file order) under its parent, or
    among the roots when no parent was found; ``True`` in that case: an orphan, whose parent
    is unknown or written later (:func:`finish_one_pass` tells). A parent's second child
    puts it in ``branching`` (its children are sorted at the end)."""
    if parent is None:
        roots.append(node)
        return True
    children = parent.children
    children.append(node)
    if len(children) == 2:
        branching.append(parent)
    return False


def finish_one_pass(roots: list[TreeNode], nodes: Mapping[str, TreeNode], orphans: bool,
                    branching: list[TreeNode]) -> bool:
    """The end of a one-pass tree build (children appended in file order): ``False`` when a
    root's parent was written after it (``orphans`` says a root had an unknown parent), which
    only the general build orders; else each parent of several children (``branching``) gets
    them sorted by timestamp."""
    if orphans and any(_late_parent(r._entry, nodes) for r in roots):
        return False
    for parent in branching:
        parent.children.sort(key=_child_sort_key)
    return True


def _late_parent(entry: Entry, nodes: Mapping[str, TreeNode]) -> bool:
    parent_id = entry.get("parentId")
    return type(parent_id) is str and parent_id in nodes and parent_id != entry.get("id")


def _child_sort_key(node: TreeNode) -> float:
    return _sort_key(node._entry)


def find_cycles(by_id: Mapping[str, Entry]) -> set[str]:
    """Ids of entries whose ``parentId`` chain loops back on itself (pi would hang there).

    The entry of each cycle that appears first in index order is returned so that treating
    it as a root breaks the loop; an empty set for every well-formed file.
    """
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = finished
    breakers: set[str] = set()
    for start in by_id:
        if start in state:
            continue
        walk: list[str] = []
        current: str | None = start
        while current is not None and current in by_id and current not in state:
            state[current] = 1
            walk.append(current)
            parent = by_id[current].get("parentId")
            current = parent if isinstance(parent, str) and parent else None
        if current is not None and state.get(current) == 1:
            # The walk re-entered itself: the loop runs from `current` to the walk's end.
            loop = walk[walk.index(current):]
            order = {key: i for i, key in enumerate(by_id)}
            breakers.add(min(loop, key=order.__getitem__))
        for key in walk:
            state[key] = 2
    return breakers
