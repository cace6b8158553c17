"""The rows a view shows of a session, laid out from scratch.

:class:`LaidOutRows` holds the visible rows of one session for one view (filter, search,
folds, note filter) as columns, plus what a later live append starts from: the flattened
tree, the rows' entry ids, the row of the leaf and the leaf's tree node. The tree itself is
the manager's (``get_tree``, kept current by the engine and only read here).

* :meth:`LaidOutRows.reload` forgets every cache (a new session, a fork, a rebuilt file);
* :meth:`LaidOutRows.relayout` recomputes the marks of the branch and, when the leaf moved or
  the tree grew, flattens the tree again;
* :meth:`LaidOutRows.layout` recomputes every row with the engine's navigation functions
  (pi's /tree rules) and bumps :attr:`~LaidOutRows.version`;
* :meth:`~LaidOutRows.locate`, :meth:`~LaidOutRows.texts` and
  :meth:`~LaidOutRows.structure` answer the viewer's reads.

Following the session as it grows (row deltas) is :mod:`pi_lab.view.row_sync`'s job.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import methodcaller
from typing import Any

from pi_lab.session._gc import collector_paused
from pi_lab.session._text import field_text
from pi_lab.session.display import ToolCall, default_home
from pi_lab.session.entries import Entry, is_error_entry, str_key
from pi_lab.session.flatten import (
    FILTER_MODES,
    LAYOUT_BITS,
    EntryFacts,
    FactTable,
    FlatTree,
    RowLayout,
    flatten_tree,
    string_positions,
    visible_layout,
)
from pi_lab.session.projection import project_path
from pi_lab.session.protocol import ReadableSession
from pi_lab.session.tree import TreeNode
from pi_lab.view._common import with_bodies
from pi_lab.view.columns import (
    TOKENS_MAX,
    TOKENS_UNKNOWN,
    GutterTable,
    RowColumns,
    TokenColumn,
    encode_structure,
)
from pi_lab.view.context import ContextMarks, context_marks, facts_tokens, share_facts
from pi_lab.view.kinds import FLAG, FLAG_BITS, KIND, KIND_NAMES
from pi_lab.view.row_parts import RowList, search_hit

__all__ = ["LaidOutRows", "entry_flags"]


_GET_ID = methodcaller("get", "id")
# The row flags of each combination of RowLayout.bits (the layout's bits named as NavRow's
# fields, in its own order): one list lookup per row.
_LAYOUT_FLAG_OF: tuple[int, ...] = tuple(
    sum(FLAG[name] for bit, name in enumerate(LAYOUT_BITS) if code >> bit & 1) for code in range(1 << len(LAYOUT_BITS)))

def entry_flags(marks: ContextMarks, entry: Entry, entry_id: Any, *, label: Any, on_active_path: bool) -> int:
    """The flag bits of an entry's row that do not depend on the layout: on the active path,
    labelled, and what the model sees of it at the leaf (``marks``), and whether it failed.
    A row adds its layout bits (connector, last, leaf, folds, children)."""
    return _entry_flags(marks, is_error_entry(entry), entry_id, label, on_active_path)


_ON_ACTIVE_PATH, _HAS_LABEL, _OUT_OF_CONTEXT, _FIRST_KEPT, _OMITTED, _REPLACED, _ERROR = (
    FLAG[name] for name in ("on_active_path", "has_label", "out_of_context", "first_kept", "omitted", "replaced", "error"))


def _entry_flags(marks: ContextMarks, error: bool, entry_id: Any, label: Any, on_active_path: bool) -> int:
    """:func:`entry_flags` with the entry's error fact already known (its :class:`EntryFacts`)."""
    f = _ON_ACTIVE_PATH if on_active_path else 0
    if label:
        f |= _HAS_LABEL
    entry_id = str_key(entry_id)  # the marks hold string ids; a list id is unhashable
    if entry_id is not None:
        if entry_id in marks.out_of_context:
            f |= _OUT_OF_CONTEXT
        if entry_id == marks.first_kept_id:
            f |= _FIRST_KEPT
        if entry_id in marks.omitted:
            f |= _OMITTED
        if entry_id in marks.replaced:
            f |= _REPLACED
    if error:
        f |= _ERROR
    return f


def _call_key(call_id: Any) -> Any:
    """A tool call id usable as a dict key: a list or object id (odd file data) matches no call."""
    return None if isinstance(call_id, (list, dict)) else call_id


def _path_to_end(roots: list[TreeNode], branch: list[Entry]) -> list[TreeNode] | None:
    """The manager's tree nodes of ``branch`` (root first), found by walking down the tree
    along the branch: no index of the tree besides the manager's own. None when the tree
    does not hold the branch."""
    nodes, path = roots, []
    for entry in branch:
        if len(nodes) == 1:  # most of a long branch: no generator for a single child
            node = nodes[0]
            if node.entry is not entry:
                return None
        else:
            node = next((n for n in nodes if n.entry is entry), None)
            if node is None:
                return None
        path.append(node)
        nodes = node.children
    return path



class LaidOutRows:
    """Rows of ``sm`` for one view, laid out; see the module docstring."""

    def __init__(
        self,
        sm: ReadableSession,
        *,
        filter_mode: str = "default",
        search: str = "",
        folded: Iterable[str] = (),
        home: str | None = None,
        note_filter: str = "",
        note_keep: Iterable[str] | None = None,
        lay_out: bool = True,
    ):
        if filter_mode not in FILTER_MODES:
            raise ValueError(f"unknown filter mode {filter_mode!r}")
        # lay_out=False: the flattened tree, the marks, the facts and the leaf's projection,
        # without the visible rows and their columns (about 0.28 KB an entry): the static
        # export writes its own columns from the flattened tree and never reads those. A later
        # set_view lays the rows out, and from then on they are kept.
        self._lay_out = lay_out
        self.sm = with_bodies(sm)
        self.filter_mode = filter_mode
        self.search = search
        self.folded: frozenset[str] = frozenset(folded)
        # The note filter ("", "noted", "tag:<tag>") and the entries it keeps (pi_lab.view.notes
        # computes them from the notes store; the rows know nothing of notes).
        self.note_filter = note_filter
        self.note_keep: frozenset[str] | None = frozenset(note_keep) if note_filter and note_keep is not None else None
        self.home = default_home() if home is None else home
        self.version = 0
        # Each entry's facts (filter category, kind, error, tokens), decided once per entry
        # object for every flattening, layout and the gauge; a new table on reload.
        self.facts = FactTable()
        self._flat_stale = True
        self._extra_calls: dict[Any, ToolCall] = {}
        self.reload()

    # ------------------------------------------------------------------ full recomputation

    def reload(self) -> None:
        """Forget every cache and lay the rows out from the session (e.g. after a fork)."""
        sm = self.sm
        self.session_id = sm.session_id
        self.facts = FactTable()
        share_facts(self.facts)  # the gauge of this session reads the same token estimates
        self._cursor = sm.change_cursor  # everything up to now is in the layout below
        self.roots: list[TreeNode] = sm.get_tree()
        entries = sm.get_entries()
        # File positions of string ids (the last one of a duplicated id).
        self.entry_pos: dict[str, int] = string_positions(list(map(_GET_ID, entries)))
        self._entry_count = len(entries)
        self.relayout(leaf_moved=True)

    def relayout(self, *, leaf_moved: bool = False) -> None:
        """Recompute marks and rows (re-flattening when the leaf moved or the tree grew)."""
        sm = self.sm
        self.leaf_id = sm.leaf_id
        branch = sm.get_branch()
        leaf_path = _path_to_end(self.roots, branch)
        self._leaf_node = leaf_path[-1] if leaf_path else None
        self.projection = project_path(branch)
        self.branch_len = len(branch)
        self.marks: ContextMarks = context_marks(branch, self.projection)
        # The marks' own set until an append under the leaf adds to it (row_sync copies it
        # then): a second set of the branch's ids held about 42 bytes an entry of the branch.
        self.path_ids: set[str] | frozenset[str] = self.marks.path_ids
        if leaf_moved or self._flat_stale:
            self.flat: FlatTree = flatten_tree(self.roots, self.leaf_id, facts=self.facts, leaf_path=leaf_path)
            self.facts.adopt(self.flat)
            self._extra_calls: dict[Any, ToolCall] = {}
            self._flat_stale = False
        if self._lay_out:
            self.layout()

    def set_view(self, *, filter_mode: str | None = None, search: str | None = None,
                 folded: Iterable[str] | None = None, note_filter: str | None = None,
                 note_keep: Iterable[str] | None = None) -> None:
        """A new view; ``note_filter`` with ``note_keep`` (the entries it keeps) sets the note filter."""
        if filter_mode is not None:
            if filter_mode not in FILTER_MODES:
                raise ValueError(f"unknown filter mode {filter_mode!r}")
            self.filter_mode = filter_mode
        if search is not None:
            self.search = search
        if folded is not None:
            self.folded = frozenset(folded)
        if note_filter is not None:
            self.note_filter = note_filter
            self.note_keep = frozenset(note_keep or ()) if note_filter else None
        if self._flat_stale:
            self.flat = flatten_tree(self.roots, self.leaf_id, facts=self.facts)
            self.facts.adopt(self.flat)
            self._extra_calls = {}
            self._flat_stale = False
        self.layout()

    def layout(self) -> None:
        """Visible rows of the (fresh) flattened tree for the current view; bumps the version."""
        # The columns are written straight from the layout's own columns; a row's NavRow is
        # made when it is first read (an 83,000-row session lays out every row but a viewer
        # reads a few dozen), and a row's text when that is first read (row_text of the range
        # on screen).
        self._lay_out = True
        flat = self.flat
        layout = visible_layout(flat, filter_mode=self.filter_mode, search=self.search, folded=self.folded,
                                leaf_id=self.leaf_id, home=self.home, keep_ids=self.note_keep)
        index = layout.index
        self.rows = RowList(layout)
        flat_ids = flat.ids
        self.ids: list[Any] = [flat_ids[i] for i in index]
        ids = self.ids
        self.gutters = GutterTable()
        cols = RowColumns()
        self.columns = cols
        self.multiple_roots = sum(1 for p in layout.parent if p < 0) > 1
        with collector_paused(len(index)):
            self._fill_columns(cols, layout, ids)
        self._row_of: dict[Any, int] | None = None
        # The leaf's row without the map of every row's id (made when a request first needs
        # it): the last row with the leaf's id, as the map would answer.
        leaf = self.leaf_id
        self.leaf_row = -1
        if isinstance(leaf, str) and ids:
            try:
                self.leaf_row = len(ids) - 1 - ids[::-1].index(leaf)
            except ValueError:
                pass
        self.anchor_row = self.leaf_row if self.leaf_row >= 0 else self.locate(leaf, fallback_last=False)
        self.version += 1

    def _fill_columns(self, cols: RowColumns, layout: RowLayout, ids: list[Any]) -> None:
        """The row columns of ``layout`` (``ids``: its rows' entry ids), one pass per column."""
        flat = layout.flat
        index = layout.index
        pos = self.entry_pos.get
        # File positions of string ids; any other id (odd file data) is position 0.
        cols.entry = [pos(e, 0) if (e.__class__ is str or isinstance(e, str)) else 0 for e in ids]
        cols.parent = list(layout.parent)
        cols.indent = [n if n < 0xFFFF else 0xFFFF for n in layout.indent]
        # The bits that do not depend on the layout: the marks of the current branch (one
        # lookup per row in a map of the few marked ids), the label and the error.
        marks = self.marks
        marked: dict[str, int] = {}
        for entry_id in marks.out_of_context:
            marked[entry_id] = _OUT_OF_CONTEXT
        for entry_id in marks.omitted:
            marked[entry_id] = marked.get(entry_id, 0) | _OMITTED
        for entry_id in marks.replaced:
            marked[entry_id] = marked.get(entry_id, 0) | _REPLACED
        if isinstance(marks.first_kept_id, str):
            marked[marks.first_kept_id] = marked.get(marks.first_kept_id, 0) | _FIRST_KEPT
        mark = marked.get
        labels = flat.labels
        facts = flat.facts
        layout_flags = _LAYOUT_FLAG_OF
        kind_code = KIND
        flags: list[int] = []
        kinds: list[int] = []
        tokens: list[int] = []
        row_facts: list[EntryFacts] = []
        add_flags, add_kind, add_tokens, add_facts = flags.append, kinds.append, tokens.append, row_facts.append
        unknown, cap = TOKENS_UNKNOWN, TOKENS_MAX
        for i, entry_id, bits in zip(index, ids, layout.bits):
            f = layout_flags[bits]
            if labels[i]:
                f |= _HAS_LABEL
            if entry_id.__class__ is str or isinstance(entry_id, str):
                f |= mark(entry_id, 0)
            found = facts[i]  # the row's entry is the flattened one at its index
            if found.error:
                f |= _ERROR
            add_flags(f)
            add_kind(kind_code[found.kind])
            add_facts(found)
            # An estimate made before (an earlier layout's text request, the gauge) is used;
            # any other waits for the row's text to be asked for (TokenColumn).
            count = found.tokens
            add_tokens(unknown if count < 0 else count if count < cap else cap)
        cols.flags, cols.kind = flags, kinds
        cols.tokens = TokenColumn(tokens, row_facts, facts_tokens)
        gutter_ids: dict[int, tuple[Any, int]] = {}  # id(tuple) -> (tuple, id): a subtree shares one
        id_of = self.gutters.id_of
        column: list[int] = []
        add = column.append
        for gutters in layout.gutters:
            known = gutter_ids.get(id(gutters))
            if known is None or known[0] is not gutters:
                known = gutter_ids[id(gutters)] = (gutters, id_of(gutters))
            add(known[1])
        cols.gutter = column

    # ------------------------------------------------------------------ row facts

    def _tokens(self, entry: Entry) -> int:
        return facts_tokens(self.facts.of(entry))


    def _row_map(self) -> dict[Any, int]:
        if self._row_of is None:
            # Only string ids can be asked for; a list id (odd file data) cannot be a key.
            self._row_of = {entry_id: r for r, entry_id in enumerate(self.ids) if isinstance(entry_id, str)}
        return self._row_of

    def _exact_row(self, entry_id: Any) -> int:
        if not isinstance(entry_id, str):
            return -1
        return self._row_map().get(entry_id, -1)

    def locate(self, entry_id: Any, *, fallback_last: bool = True) -> int:
        """Row of ``entry_id``, else of its nearest visible ancestor (pi's selection rule),
        else the last row (or -1 with ``fallback_last=False``)."""
        row_of = self._row_map()
        seen: set[str] = set()
        current = entry_id
        while isinstance(current, str) and current not in seen:
            row = row_of.get(current)
            if row is not None:
                return row
            seen.add(current)
            entry = self.sm.get_entry(current)
            current = entry.get("parentId") if entry else None
        return len(self.rows) - 1 if (fallback_last and self.rows) else -1

    def tool_call(self, call_id: Any) -> ToolCall | None:
        """The call a tool result answers (any assistant in the tree), when known."""
        key = _call_key(call_id)
        if key is None:
            return None
        return self._extra_calls.get(key) or self.flat.tool_calls.get(key)

    def row_text(self, row: int) -> dict[str, Any]:
        r = self.rows[row]
        # The row's estimate travels with its text: the structure leaves it out until then.
        text = {"id": r.entry_id, "text": r.text, "label": r.label, "label_time": r.label_timestamp,
                "tokens": self.columns.tokens[row]}
        if not r.text:
            # pi draws an entry of a type it does not know as a blank row; the viewer names it
            # by its raw type (RowText.type), which travels with the row, deltas included.
            kind = r.entry.get("type") if hasattr(r.entry, "get") else None
            if kind is not None:
                text["type"] = kind if isinstance(kind, str) else field_text(kind)
        if self.search:
            hit = search_hit(self.search, r.entry, r.label, r.text)
            if hit:
                text["hit"] = hit
        return text

    def texts(self, start: int, end: int) -> list[dict[str, Any]]:
        start = max(0, start)
        end = min(len(self.rows), end)
        return [self.row_text(r) for r in range(start, end)]

    def structure(self, **extra: Any) -> bytes:
        header = {
            "version": self.version,
            "kinds": list(KIND_NAMES),
            "flags": list(FLAG_BITS),
            "leaf_id": self.leaf_id,
            "leaf_row": self.leaf_row,
            "anchor_row": self.anchor_row,
            "filter_mode": self.filter_mode,
            "search": self.search,
            "note_filter": self.note_filter,
            "multiple_roots": self.multiple_roots,
            "entry_count": self._entry_count,
            **extra,
        }
        return encode_structure(self.columns, self.gutters, header)
