"""Flattening and rows: the /tree list of pi's tree selector (tree-and-context.md §13.1–13.3).

* :func:`flatten_tree` walks the whole tree once per tree change (iteratively; a chain of a
  million entries is fine) and keeps flat columns: entries in display order, parent links,
  the active path, a code per entry for the filters, and every tool call by id.
* :func:`visible_rows` applies the filter mode, the search and the folds, re-attaches each
  kept row to its nearest visible ancestor and lays the visible forest out again
  (indentation, connectors, gutters). It is linear in the number of entries.

Rows are plain frozen records of scalars (:class:`NavRow`) so that they can be shipped as
columns. Nothing here writes a session. The text of a row is in :mod:`.display`; pi's
terminal lines for rows are drawn by :mod:`pi_lab.cli_render`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from pi_lab.session._gc import collector_paused
from pi_lab.session._js import JS_WHITESPACE
from pi_lab.session._js import js_truthy as _truthy
from pi_lab.session.display import ToolCall, default_home, display_text_with, search_text
from pi_lab.session.entries import SETTINGS_ENTRY_TYPES, Entry
from pi_lab.session.facts import (
    _CAT_OTHER,
    _CAT_SETTINGS,
    _CAT_TOOL_ONLY,
    _CAT_TOOL_RESULT,
    _CAT_USAGE,
    _CAT_USER,
    EntryFacts,
    FactTable,
    entry_facts,
)
from pi_lab.session.facts import _category as _category  # the rule the facts replace, for tests
from pi_lab.session.nav_row import _TEXT_SLOT as _TEXT_SLOT  # (a lazy row's text slot, read by tests)
from pi_lab.session.nav_row import NavRow, _lazy_row
from pi_lab.session.nav_row import _LazyTextRow as _LazyTextRow  # (read by tests)
from pi_lab.session.tree import UNSET, TreeNode
from pi_lab.view.contract import FILTER_MODES as _CONTRACT_FILTER_MODES

if TYPE_CHECKING:  # annotations only; typing has Unpack from 3.11
    from typing_extensions import Unpack

    from pi_lab.session.manager import SessionManager

__all__ = [
    "FILTER_MODES",
    "SETTINGS_ENTRY_TYPES",
    "EntryFacts",
    "FactTable",
    "FlatTree",
    "NavRow",
    "flatten_tree",
    "visible_rows",
    "visible_layout",
    "RowLayout",
    "LAYOUT_BITS",
    "navigation_rows",
    "search_tokens",
    "initial_selection",
]

# The five filter modes, in ``ctrl+o`` cycling order (shared with the front end).
FILTER_MODES = _CONTRACT_FILTER_MODES


_MODE_CATEGORIES = {
    "default": frozenset({_CAT_TOOL_ONLY, _CAT_TOOL_RESULT, _CAT_USER, _CAT_OTHER}),
    "no-tools": frozenset({_CAT_TOOL_ONLY, _CAT_USER, _CAT_OTHER}),
    "user-only": frozenset({_CAT_USER}),
    "all": frozenset({_CAT_TOOL_ONLY, _CAT_SETTINGS, _CAT_TOOL_RESULT, _CAT_USER, _CAT_OTHER}),
}


# ---------------------------------------------------------------------------------------------
# Flattening (§13.1)


class FlatTree:
    """The whole tree in display order (active branch first at every branch point).

    Columns, one item per entry: ``entries``, ``ids``, ``parents`` (index of the tree parent,
    -1 for roots), ``labels``, ``label_timestamps``, ``on_active_path`` and ``facts`` (the
    entry's :class:`EntryFacts`). ``index_of`` maps an
    id to its index (the last one for a duplicated id) and ``tool_calls`` maps every tool-call
    id of every assistant message in the tree to its :class:`ToolCall`.
    """

    __slots__ = (
        "entries",
        "ids",
        "parents",
        "labels",
        "label_timestamps",
        "on_active_path",
        "leaf_id",
        "tool_calls",
        "index_of",
        "facts",
        "_categories",
        "_result_calls",
        "_search_cache",
        "_display_cache",
    )

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.ids: list[Any] = []
        self.parents: list[int] = []
        self.labels: list[str | None] = []
        self.label_timestamps: list[str | None] = []
        self.on_active_path: list[bool] = []
        self.leaf_id: str | None = None
        self.tool_calls: dict[Any, ToolCall] = {}
        self.index_of: dict[str, int] = {}
        self.facts: list[EntryFacts] = []
        self._categories: list[int] = []  # filter codes (_CAT_*)
        self._result_calls: dict[int, ToolCall] = {}  # index of a tool result → its call
        self._search_cache: list[str | None] = []
        self._display_cache: dict[str, list[str | None]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"<FlatTree {len(self.entries)} entries, leaf {self.leaf_id!r}>"

    def tool_call_of(self, index: int) -> ToolCall | None:
        """The call a tool-result entry answers, when an assistant in the tree made it."""
        return self._result_calls.get(index)

    def search_text(self, index: int) -> str:
        cached = self._search_cache[index]
        if cached is None:
            cached = search_text(self.entries[index], self.labels[index])
            self._search_cache[index] = cached
        return cached

    def display_text(self, index: int, home: str) -> str:
        cache = self._display_cache.get(home)
        if cache is None:
            cache = self._display_cache[home] = [None] * len(self.entries)
        text = cache[index]
        if text is None:
            text = display_text_with(self.entries[index], self._result_calls.get(index), home)
            cache[index] = text
        return text

    def set_label(self, entry_id: str, label: str | None, label_timestamp: str | None = None) -> int | None:
        """Change the label shown for ``entry_id`` (after the caller appended a label entry).

        Returns the entry's index, or ``None`` when it is not in the tree.
        """
        index = self.index_of.get(entry_id)
        if index is None:
            return None
        self.labels[index] = label or None
        self.label_timestamps[index] = label_timestamp if label else None
        self._search_cache[index] = None
        return index


def string_positions(ids: Sequence[Any]) -> dict[str, int]:
    """Position of every string id in ``ids`` (the last one of a duplicated id); any other
    value (a list or a number from odd file data) is left out. When every id is a plain
    string (a file pi wrote) the map is built at C speed."""
    if set(map(type, ids)) <= {str}:
        return dict(zip(ids, range(len(ids))))
    return {entry_id: i for i, entry_id in enumerate(ids) if type(entry_id) is str or isinstance(entry_id, str)}


def flatten_tree(roots: Sequence[TreeNode], leaf_id: Any = None, *, facts: FactTable | None = None,
                 leaf_path: Sequence[TreeNode] | None = None) -> FlatTree:
    """Flatten ``roots`` (from ``get_tree``) in pi's display order; see §13.1.

    Roots and children that contain the leaf come first (the others keep their order), so
    the current path is one run from the top. Iterative: no depth limit. ``facts`` keeps each
    entry's :class:`EntryFacts` across flattenings of the same session (default: a new table).
    ``leaf_path``: the nodes from a root of ``roots`` down to the leaf's node, when the caller
    has them (a viewer walks its branch down the tree anyway); the walk of the whole tree that
    finds the nodes carrying the leaf's id is then skipped, unless the flattening shows the
    id on a second node (odd file data), when it is made again by that walk.
    """
    leaf = leaf_id if isinstance(leaf_id, str) else None
    table = FactTable() if facts is None else facts
    with collector_paused():  # the tree's size is unknown before the walk
        if leaf is not None and leaf_path and leaf_path[-1].entry.get("id") == leaf:
            flat = _flatten(roots, leaf, table, {id(node) for node in leaf_path})
            if flat.ids.count(leaf) == 1:
                return flat
        return _flatten(roots, leaf, table)


def _active_nodes(roots: Sequence[TreeNode], leaf: str | None) -> set[int]:
    """``id()`` of every node on a path from a root to a node whose entry has the id ``leaf``."""
    active: set[int] = set()
    if leaf is not None:
        path: list[TreeNode] = []
        walk: list[tuple[TreeNode, int]] = [(root, 0) for root in reversed(roots)]
        while walk:
            node, depth = walk.pop()
            del path[depth:]
            path.append(node)
            if node.entry.get("id") == leaf:
                active.update(id(n) for n in path)
            children = node.children
            if children:
                below = depth + 1
                for child in reversed(children):
                    walk.append((child, below))
    return active


def _flatten(roots: Sequence[TreeNode], leaf: str | None, table: FactTable, active: set[int] | None = None) -> FlatTree:
    flat = FlatTree()
    flat.leaf_id = leaf

    # 1. Which nodes lie on a root→leaf path ("contain the active leaf").
    if active is None:
        active = _active_nodes(roots, leaf)

    # 2. Pre-order walk, active subtrees first: only the nodes and their parents' positions.
    # A run of single children (most of a session) is followed without the stack; every
    # other column is read off the nodes afterwards, one comprehension each.
    order: list[TreeNode] = []
    parents = flat.parents
    add_node = order.append
    add_parent = parents.append
    ordered = list(roots)
    if active and len(ordered) > 1:
        ordered = [r for r in roots if id(r) in active] + [r for r in roots if id(r) not in active]
    stack: list[tuple[TreeNode, int]] = [(root, -1) for root in reversed(ordered)]
    pop = stack.pop
    push = stack.append
    while stack:
        node, parent = pop()
        while True:
            index = len(order)
            add_node(node)
            add_parent(parent)
            children = node.children
            if not children:
                break
            if len(children) == 1:
                node, parent = children[0], index
                continue
            if active:
                first = [c for c in children if id(c) in active]
                if first:
                    children = first + [c for c in children if id(c) not in active]
            for child in reversed(children):
                push((child, index))
            break

    flat.entries = entries = [node.entry for node in order]
    flat.ids = ids = [entry.get("id") for entry in entries]
    flat.labels = [node.label for node in order]
    flat.label_timestamps = [node.label_timestamp for node in order]
    del order
    # FactTable.of, inlined (this runs once per entry): the adopted flattening by id, then the
    # table's other entries; a first flattening computes every entry's facts and keeps them in
    # its own column only.
    before = table._flat
    extra = table._extra
    if before is None and not extra:
        facts = [entry_facts(entry) for entry in entries]
    else:
        # (empty without an adopted flattening: no id is found there)
        before_index: dict[str, int] = before.index_of if before is not None else {}
        before_entries: list[Entry] = before.entries if before is not None else []
        before_facts: list[EntryFacts] = before.facts if before is not None else []
        facts = []
        for entry, entry_id in zip(entries, ids):
            found = None
            if type(entry_id) is str:
                j = before_index.get(entry_id)
                if j is not None and before_entries[j] is entry:
                    found = before_facts[j]
            if found is None:
                if extra:
                    found = extra.get(id(entry))
                    if found is not None and found.entry is not entry:
                        found = None
                if found is None:
                    found = entry_facts(entry)
            facts.append(found)
    flat.facts = facts
    flat._categories = categories = [found.category for found in facts]
    tool_calls = flat.tool_calls
    for found in facts:
        calls = found.calls
        if calls is not None:
            tool_calls.update(calls)  # in walk order: a later call with the same id wins

    count = len(entries)
    flat.index_of = index_of = string_positions(ids)
    on_path = [False] * count
    if leaf is not None:
        i = index_of.get(leaf, -1)
        while i >= 0 and not on_path[i]:
            on_path[i] = True
            i = parents[i]
    flat.on_active_path = on_path
    if tool_calls:
        result_calls = flat._result_calls
        call_of = tool_calls.get
        for i in [i for i, category in enumerate(categories) if category == _CAT_TOOL_RESULT]:
            call_id = entries[i]["message"].get("toolCallId")
            if type(call_id) is str:  # what pi writes: a truthy string is any non-empty one
                if not call_id:
                    continue
            elif not (_truthy(call_id) and isinstance(call_id, (str, int, float))):
                continue
            call = call_of(call_id)
            if call is not None:
                result_calls[i] = call
    flat._search_cache = [None] * count
    return flat


# ---------------------------------------------------------------------------------------------
# Rows (§13.2, §13.3)


def search_tokens(query: str) -> list[str]:
    """The lower-cased, whitespace-separated tokens of a search query."""
    return [token for token in re.split(f"[{re.escape(JS_WHITESPACE)}]+", query.lower()) if token]


class ViewOptions(TypedDict, total=False):
    """Which rows a view shows: the keyword arguments of :func:`visible_layout` (defaults and
    meaning there), which :func:`visible_rows` passes on."""

    filter_mode: str
    search: str
    folded: Iterable[str]
    leaf_id: Any
    home: str | None
    keep_ids: Collection[str] | None


class RowOptions(ViewOptions, total=False):
    """:func:`visible_rows`'s keyword arguments: a view's, and whether texts are made now."""

    with_text: bool


def visible_rows(flat: FlatTree, *, with_text: bool = True, **view: Unpack[ViewOptions]) -> list[NavRow]:
    """The rows shown for a filter mode, search query and set of folded entry ids (``view``:
    :func:`visible_layout`'s arguments).

    With ``with_text=False`` a row's text is made when it is first read (the same text; a
    viewer that shows a few rows at a time then pays only for those).
    """
    layout = visible_layout(flat, **view)
    with collector_paused(len(layout.index)):
        make = layout.row if with_text else layout.lazy_row
        return [make(r) for r in range(len(layout.index))]


# Bits of RowLayout.bits: what a row's place in the layout says about it (NavRow fields of the
# same names, plus whether it has visible children).
LAYOUT_BITS: tuple[str, ...] = ("show_connector", "is_last", "is_virtual_root_child", "on_active_path", "is_leaf",
                                "foldable", "folded", "has_children")
(_L_CONNECTOR, _L_LAST, _L_VIRTUAL, _L_ON_PATH, _L_LEAF, _L_FOLDABLE, _L_FOLDED, _L_CHILDREN) = (
    1 << bit for bit in range(len(LAYOUT_BITS)))


# NavRow's fields up to ``folded``, in order (the rest is the text and what follows it).
_RowFields = tuple[Entry, Any, int, int, int, bool, bool, tuple[tuple[int, bool], ...], bool, bool, bool,
                   str | None, str | None, bool, bool]


class RowLayout:
    """The visible rows of one view as columns, one item per row: ``index`` (the entry's
    position in ``flat``), ``parent`` (row of the nearest visible ancestor, -1 for a visible
    root), ``indent`` (display indent), ``bits`` (``LAYOUT_BITS``), ``gutters`` (the row's
    ``(level, show)`` pairs, one tuple shared by a subtree) and ``child_count``.

    A viewer's columns are written straight from these (no row object per entry); the
    :class:`NavRow` of any row is made from the same values by :meth:`row` (text made now) or
    :meth:`lazy_row` (text made when first read), so both describe one layout.
    """

    __slots__ = ("flat", "home", "leaf", "index", "parent", "indent", "bits", "gutters", "child_count")

    def __init__(self, flat: FlatTree, home: str, leaf: str | None) -> None:
        self.flat = flat
        self.home = home
        self.leaf = leaf
        self.index: list[int] = []
        self.parent: list[int] = []
        self.indent: list[int] = []
        self.bits: list[int] = []
        self.gutters: list[tuple[tuple[int, bool], ...]] = []
        self.child_count: list[int] = []

    def __len__(self) -> int:
        return len(self.index)

    def _fields(self, r: int) -> _RowFields:
        flat = self.flat
        i = self.index[r]
        bits = self.bits[r]
        label = flat.labels[i]
        return (flat.entries[i], flat.ids[i], i, self.parent[r], self.indent[r], bits & _L_CONNECTOR != 0,
                bits & _L_LAST != 0, self.gutters[r], bits & _L_VIRTUAL != 0, bits & _L_ON_PATH != 0,
                bits & _L_LEAF != 0, label, flat.label_timestamps[i] if label is not None else None,
                bits & _L_FOLDABLE != 0, bits & _L_FOLDED != 0)

    def row(self, r: int) -> NavRow:
        """The :class:`NavRow` of row ``r``, its text made now (and kept in ``flat``'s cache)."""
        fields = self._fields(r)
        i = fields[2]
        flat = self.flat
        return NavRow(*fields, flat.display_text(i, self.home), self.child_count[r], flat._result_calls.get(i))

    def lazy_row(self, r: int) -> NavRow:
        """The :class:`NavRow` of row ``r``, its text made when first read (or taken from
        ``flat``'s cache when some view already made it)."""
        fields = self._fields(r)
        i = fields[2]
        flat = self.flat
        cache = flat._display_cache.get(self.home)
        text = cache[i] if cache is not None else None
        return _lazy_row(*fields, text, self.child_count[r], flat._result_calls.get(i), flat, self.home)


def visible_layout(
    flat: FlatTree,
    *,
    filter_mode: str = "default",
    search: str = "",
    folded: Iterable[str] = frozenset(),
    leaf_id: Any = UNSET,
    home: str | None = None,
    keep_ids: Collection[str] | None = None,
) -> RowLayout:
    """The layout :func:`visible_rows` draws, as columns (:class:`RowLayout`).

    ``leaf_id`` defaults to the flattening leaf; it only decides which tool-call-only
    assistant stays visible and which row is marked ``is_leaf``. ``home`` (default
    :func:`default_home`) shortens paths in tool-call rows. ``keep_ids`` (a note filter: the
    entries its notes cover) keeps only those entries of the ones the mode and the search keep.
    """
    if filter_mode not in FILTER_MODES:
        raise ValueError(f"unknown filter mode {filter_mode!r}; expected one of {', '.join(FILTER_MODES)}")
    with collector_paused(len(flat.ids)):
        return _visible_layout(flat, filter_mode, search, folded, leaf_id, home, keep_ids)


def _visible_layout(
    flat: FlatTree, filter_mode: str, search: str, folded: Iterable[str], leaf_id: Any, home: str | None,
    keep_ids: Collection[str] | None = None,
) -> RowLayout:
    leaf = flat.leaf_id if leaf_id is UNSET else (leaf_id if isinstance(leaf_id, str) else None)
    home_dir = default_home() if home is None else home
    folded_ids = folded if isinstance(folded, (set, frozenset)) else frozenset(folded)
    tokens = search_tokens(search) if search else []
    ids = flat.ids
    parents = flat.parents
    labels = flat.labels
    categories = flat._categories
    count = len(ids)

    # Which entries pass the filter and the search.
    keep = bytearray(count)
    if filter_mode == "labeled-only":
        for i in range(count):
            if labels[i] is not None and categories[i] != _CAT_USAGE:
                keep[i] = 1
    else:
        accepted = _MODE_CATEGORIES[filter_mode]
        for i in range(count):
            if categories[i] in accepted:
                keep[i] = 1
    for i in range(count):
        if categories[i] == _CAT_TOOL_ONLY and (leaf is None or ids[i] != leaf):
            keep[i] = 0
    if keep_ids is not None:
        # A note filter narrows what the mode keeps, as a search does; the kept entries are then
        # re-attached to their nearest kept ancestors below, the labeled-only view's tree shape.
        for i in range(count):
            if keep[i] and not (type(ids[i]) is str and ids[i] in keep_ids):
                keep[i] = 0
    if tokens:
        text_of = flat.search_text
        for i in range(count):
            if keep[i]:
                text = text_of(i)
                for token in tokens:
                    if token not in text:
                        keep[i] = 0
                        break

    # Descendants of folded entries (through the real parent chain) disappear.
    is_folded = bytearray(count)
    if folded_ids:
        for i in range(count):
            try:
                if ids[i] in folded_ids:
                    is_folded[i] = 1
            except TypeError:  # an id from the file that is a list or an object: no fold names it
                pass
        hidden = bytearray(count)
        for i in range(count):
            p = parents[i]
            if p >= 0 and (hidden[p] or is_folded[p]):
                hidden[i] = 1
                keep[i] = 0

    # Re-attach every kept entry to its nearest kept ancestor (§13.3).
    layout = RowLayout(flat, home_dir, leaf)
    nearest = [-1] * count  # row index of the nearest visible ancestor-or-self
    row_index = layout.index  # row → flat index
    row_parent = layout.parent
    for i in range(count):
        p = parents[i]
        above = nearest[p] if p >= 0 else -1
        if keep[i]:
            nearest[i] = len(row_index)
            row_index.append(i)
            row_parent.append(above)
        else:
            nearest[i] = above
    del nearest

    size = len(row_index)
    child_count = layout.child_count = [0] * size
    last_child = [-1] * size
    roots = 0
    last_root = -1
    for r in range(size):
        p = row_parent[r]
        if p < 0:
            roots += 1
            last_root = r
        else:
            child_count[p] += 1
            last_child[p] = r

    # Lay the visible forest out with the flattening rules (§13.1 items 6–7).
    multiple_roots = roots > 1
    indents = [0] * size
    branched = [False] * size
    child_gutters: list[tuple[tuple[int, bool], ...]] = [()] * size
    on_path = flat.on_active_path
    display_indents = layout.indent
    bits_of = layout.bits
    gutters_of = layout.gutters
    root_indent = 1 if multiple_roots else 0
    for r in range(size):
        i = row_index[r]
        p = row_parent[r]
        if p < 0:
            indent = root_indent
            just_branched = show_connector = virtual = multiple_roots
            is_last = r == last_root
            gutters: tuple[tuple[int, bool], ...] = ()
            foldable = child_count[r] > 0
        else:
            many = child_count[p] > 1
            parent_indent = indents[p]
            indent = parent_indent + 1 if many or (branched[p] and parent_indent > 0) else parent_indent
            just_branched = show_connector = many
            virtual = False
            is_last = last_child[p] == r
            gutters = child_gutters[p]
            foldable = many and child_count[r] > 0
        indents[r] = indent
        branched[r] = just_branched
        display_indent = (indent - 1 if indent > 0 else 0) if multiple_roots else indent
        bits = 0
        if child_count[r]:
            bits = _L_CHILDREN
            if show_connector and not virtual:
                position = display_indent - 1 if display_indent > 0 else 0
                child_gutters[r] = gutters + ((position, not is_last),)
            else:
                child_gutters[r] = gutters
        if show_connector:
            bits |= _L_CONNECTOR
        if is_last:
            bits |= _L_LAST
        if virtual:
            bits |= _L_VIRTUAL
        if on_path[i]:
            bits |= _L_ON_PATH
        if leaf is not None and ids[i] == leaf:
            bits |= _L_LEAF
        if foldable:
            bits |= _L_FOLDABLE
        if is_folded[i]:
            bits |= _L_FOLDED
        display_indents.append(display_indent)
        bits_of.append(bits)
        gutters_of.append(gutters)
    return layout


def navigation_rows(sm: SessionManager, **options: Unpack[RowOptions]) -> list[NavRow]:
    """:func:`visible_rows` of a session's current tree at its leaf."""
    return visible_rows(flatten_tree(sm.get_tree(), sm.leaf_id), **options)


# ---------------------------------------------------------------------------------------------
# Selection and folding (§13.6)


def initial_selection(
    rows: Sequence[NavRow], flat: FlatTree, wanted_id: Any, row_of: Mapping[int, int] | None = None
) -> int:
    """Row index for ``wanted_id``: itself, else its nearest visible ancestor, else the last row."""
    if not rows:
        return 0
    if not isinstance(wanted_id, str):
        return len(rows) - 1
    if row_of is None:
        row_of = {row.index: r for r, row in enumerate(rows)}
    i = flat.index_of.get(wanted_id, -1)
    parents = flat.parents
    steps = 0
    while i >= 0 and steps <= len(parents):
        r = row_of.get(i)
        if r is not None:
            return r
        i = parents[i]
        steps += 1
    return len(rows) - 1
