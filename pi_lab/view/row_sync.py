"""Following a growing session: the rows of :mod:`pi_lab.view.row_layout` kept current.

:meth:`RowState.sync` asks the engine what changed since the last call (its change feed,
``sm.changes_since``, never rediscovered here). The common live case, one entry appended
under a leaf that had no children, becomes a :class:`Delta` of at most three row operations
whose size does not depend on the session. Anything that moves rows non-locally (a new
branch point, a compaction, a context edit, a leaf moved by navigation, a label in the
labeled-only view) re-lays the rows out instead, and the caller sends the whole structure
again.

The incremental rules are pi's layout rules applied to one new child: see
``_child_layout``. ``tests/widget/test_rows.py`` checks every delta against a full layout.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

from pi_lab.session.display import ToolCall, display_text
from pi_lab.session.entries import Entry
from pi_lab.session.flatten import EntryFacts, NavRow, flatten_tree, visible_rows
from pi_lab.session.tree import TreeNode
from pi_lab.view.columns import row_values
from pi_lab.view.kinds import FLAG, KIND
from pi_lab.view.row_layout import LaidOutRows, _call_key, _entry_flags

__all__ = ["RowState", "Delta", "SyncResult"]


# Flag bits that depend on where the row is drawn (NavRow attributes of the same name).
_LAYOUT_FLAGS = ("show_connector", "is_last", "is_leaf", "foldable", "folded", "is_virtual_root_child")
_LAYOUT_VALUES = attrgetter(*_LAYOUT_FLAGS)
_LAYOUT_FLAG_BITS = tuple(FLAG[name] for name in _LAYOUT_FLAGS)
_HAS_CHILDREN = FLAG["has_children"]

# Entries whose arrival changes rows far from the leaf (the row flags of everything a
# compaction summarised, the target of a context edit).
_NON_LOCAL_TYPES = frozenset({"compaction", "context_edit"})


@dataclass
class Delta:
    """Row operations that turn structure ``from_version`` into ``to_version``."""

    from_version: int
    to_version: int
    ops: list[dict[str, Any]] = field(default_factory=list)
    gutter_base: int = 0
    gutters: list[list[int]] = field(default_factory=list)
    row_count: int = 0
    leaf_row: int = -1

    def message(self) -> dict[str, Any]:
        return {
            "kind": "delta",
            "from": self.from_version,
            "to": self.to_version,
            "ops": self.ops,
            "gutter_base": self.gutter_base,
            "gutters": self.gutters,
            "row_count": self.row_count,
            "leaf_row": self.leaf_row,
        }


@dataclass
class SyncResult:
    """What :meth:`RowState.sync` did: ``none``, ``delta`` (see :attr:`delta`) or ``layout``."""

    kind: str
    delta: Delta | None = None
    new_entries: list[Entry] = field(default_factory=list)


def _layout_bits(row: NavRow, has_children: bool) -> int:
    """The layout bits of _LAYOUT_FLAGS, read from a row made for a live append."""
    f = _HAS_CHILDREN if has_children else 0
    for bit, on in zip(_LAYOUT_FLAG_BITS, _LAYOUT_VALUES(row)):
        if on:
            f |= bit
    return f


class RowState(LaidOutRows):
    """Rows of ``sm`` for one view, laid out (:class:`LaidOutRows`) and kept current as the
    session grows (:meth:`sync`); see the module docstring."""

    def sync(self) -> SyncResult:
        """Catch up with the session (see the module docstring)."""
        sm = self.sm
        changes = sm.changes_since(self._cursor)
        self._cursor = changes.cursor
        if changes.rebuilt or sm.session_id != self.session_id:
            self.reload()
            return SyncResult("layout")
        fresh = [e for e in changes.appended if e.get("type") != "session"]
        self.roots = sm.get_tree()  # the manager's nodes, grown (or rebuilt) by the engine
        if not fresh:
            if sm.leaf_id != self.leaf_id:
                self.relayout(leaf_moved=True)
                return SyncResult("layout")
            return SyncResult("none")
        start_version = self.version
        gutter_base = len(self.gutters)
        ops: list[dict[str, Any]] = []
        local = True
        for entry in fresh:
            self._note_entry(entry)
            self.branch_len += 1
            if local:
                local = self._append_locally(entry, ops)
            else:
                self._track_leaf(entry)
        if local and sm.leaf_id != self.leaf_id:
            local = False
        if not local:
            self.relayout(leaf_moved=True)
            return SyncResult("layout", new_entries=fresh)
        self._flat_stale = True
        self.projection = None  # computed at layout time; the appends made it stale
        self.version = start_version + 1
        delta = Delta(start_version, self.version, ops, gutter_base, self.gutters.entries_since(gutter_base),
                      len(self.rows), self.leaf_row)
        return SyncResult("delta", delta, fresh)

    def _note_entry(self, entry: Entry) -> None:
        """The row facts of one appended entry: its position and the tool calls it makes."""
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            self.entry_pos[entry_id] = self._entry_count
        self._entry_count += 1
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str):
                    self._extra_calls[block["id"]] = ToolCall(block.get("name"), block.get("arguments"))

    def _track_leaf(self, entry: Entry) -> None:
        self.leaf_id = entry.get("id")

    def _passes(self, entry: Entry, *, as_leaf: bool, label: str | None = None) -> bool:
        """Whether the filter and search keep ``entry`` (folds aside), via a one-node tree."""
        self.facts.of(entry)  # kept in the table, so the one-node flattening below finds it
        node = TreeNode(entry, [], label, None)
        leaf = entry.get("id") if as_leaf else None
        mini = flatten_tree([node], leaf, facts=self.facts)
        return bool(visible_rows(mini, filter_mode=self.filter_mode, search=self.search, leaf_id=leaf, home=self.home,
                                 keep_ids=self.note_keep))

    def _new_row(self, entry: Entry, parent_row: int, layout: tuple[int, bool, bool, tuple, bool]) -> NavRow:
        indent, show_connector, is_last, gutters, virtual = layout
        calls: Mapping[Any, Any] = ChainMap(self._extra_calls, self.flat.tool_calls)
        call = None
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "toolResult":
            call = calls.get(_call_key(message.get("toolCallId")))
        return NavRow(entry, entry.get("id"), -1, parent_row, indent, show_connector, is_last, gutters, virtual,
                      True, True, None, None, False, False, display_text(entry, calls, self.home), 0, call)

    def _child_layout(self, parent: int) -> tuple[int, bool, bool, tuple, bool]:
        """Layout of the only visible child of row ``parent`` (pi §13.1 items 6–7)."""
        p = self.rows[parent]
        raw = p.indent + 1 if self.multiple_roots else p.indent
        indent = p.indent + 1 if (p.show_connector and raw > 0) else p.indent
        gutters = p.gutters
        if p.show_connector and not p.is_virtual_root_child:
            gutters = gutters + ((p.indent - 1 if p.indent > 0 else 0, not p.is_last),)
        return indent, False, True, gutters, False

    def _flags(self, row: NavRow, has_children: bool, facts: EntryFacts | None = None) -> int:
        error = (self.facts.of(row.entry) if facts is None else facts).error
        f = _entry_flags(self.marks, error, row.entry_id, row.label, row.on_active_path)
        return f | _layout_bits(row, has_children)

    def _values(self, row: NavRow, parent_row: int) -> list[int]:
        return row_values(self.entry_pos.get(row.entry_id, 0), parent_row, row.indent, self._flags(row, False),
                          KIND[self.facts.of(row.entry).kind], self._tokens(row.entry), self.gutters.id_of(row.gutters))

    def _set_flag(self, row: int, name: str, on: bool, ops: list[dict[str, Any]]) -> None:
        old = self.columns.flags[row]
        new = old | FLAG[name] if on else old & ~FLAG[name]
        if new != old:
            self.columns.flags[row] = new
            last = ops[-1] if ops else None
            if last is not None and last["op"] == "flags" and last["row"] == row:
                last["flags"] = new  # ops apply in order: only the latest one may be merged
            else:
                ops.append({"op": "flags", "row": row, "flags": new})

    def _insert(self, at: int, row: NavRow, ops: list[dict[str, Any]]) -> None:
        values = self._values(row, row.parent)
        self.rows.insert(at, row)
        self.ids.insert(at, row.entry_id)
        self.columns.insert(at, values)
        self._row_of = None
        ops.append({"op": "insert", "row": at, "values": values, "text": self.row_text(at)})

    def _append_locally(self, entry: Entry, ops: list[dict[str, Any]]) -> bool:
        """Apply one entry appended at the leaf as row operations; False when it cannot be."""
        parent_id = self.leaf_id
        entry_id = entry.get("id")
        if (not isinstance(entry_id, str) or parent_id is None or entry.get("parentId") != parent_id
                or entry.get("type") in _NON_LOCAL_TYPES):
            return False
        parent_node = self._leaf_node
        if (parent_node is None or parent_node.entry.get("id") != parent_id or len(parent_node.children) != 1
                or parent_node.children[0].entry is not entry):
            return False  # a new branch point (siblings move), or the manager rebuilt its tree
        parent_entry = parent_node.entry
        self._leaf_node = parent_node.children[0]
        hidden_by_fold = not self.folded.isdisjoint(self.path_ids)
        entry_visible = not hidden_by_fold and self._passes(entry, as_leaf=True)
        leaf_row = self.leaf_row
        self.leaf_id = entry_id
        if isinstance(self.path_ids, frozenset):  # still the marks' set (row_layout.relayout)
            self.path_ids = set(self.path_ids)
        self.path_ids.add(entry_id)

        if leaf_row >= 0:
            parent_stays = self._passes(parent_entry, as_leaf=False, label=self.rows[leaf_row].label)
            self._set_flag(leaf_row, "is_leaf", False, ops)
            if parent_stays:
                if entry_visible:
                    self._add_only_child(entry, leaf_row, ops)
                else:
                    self.leaf_row = -1
                    self.anchor_row = leaf_row
            else:
                old = self.rows[leaf_row]
                parent_row = self.columns.parent[leaf_row]
                if entry_visible:
                    # The new entry takes the hidden leaf's place, with the same layout.
                    row = self._new_row(entry, parent_row, (old.indent, old.show_connector, old.is_last,
                                                            old.gutters, old.is_virtual_root_child))
                    values = self._values(row, parent_row)
                    self.rows[leaf_row] = row
                    self.ids[leaf_row] = entry_id
                    self.columns.replace(leaf_row, values)
                    self._row_of = None
                    ops.append({"op": "replace", "row": leaf_row, "values": values, "text": self.row_text(leaf_row)})
                    self.anchor_row = leaf_row
                else:
                    if old.show_connector:
                        return False  # it had siblings: they are laid out again
                    del self.rows[leaf_row]
                    del self.ids[leaf_row]
                    self.columns.remove(leaf_row)
                    self._row_of = None
                    ops.append({"op": "remove", "row": leaf_row})
                    if parent_row >= 0:
                        self._set_flag(parent_row, "has_children", False, ops)
                        self._set_flag(parent_row, "foldable", False, ops)
                    self.leaf_row = -1
                    self.anchor_row = parent_row
        else:
            anchor = self.anchor_row
            if entry_visible:
                if anchor < 0:
                    if self.rows:
                        return False  # a second visible root
                    row = self._new_row(entry, -1, (0, False, True, (), False))
                    self._insert(0, row, ops)
                    self.leaf_row = self.anchor_row = 0
                elif self.columns.flags[anchor] & FLAG["has_children"]:
                    return False  # the anchor becomes a branch point
                else:
                    self._add_only_child(entry, anchor, ops)
        if entry.get("type") == "label":
            return self._relabel(entry, ops)
        return True

    def _add_only_child(self, entry: Entry, parent: int, ops: list[dict[str, Any]]) -> None:
        """``entry`` as the first visible child of row ``parent``, which has no visible
        children, so its subtree is just its own row: the new row goes right below it."""
        row = self._new_row(entry, parent, self._child_layout(parent))
        p = self.rows[parent]
        self._set_flag(parent, "has_children", True, ops)
        self._set_flag(parent, "foldable", self.columns.parent[parent] < 0 or p.show_connector, ops)
        self._insert(parent + 1, row, ops)
        self.leaf_row = self.anchor_row = parent + 1

    def _relabel(self, entry: Entry, ops: list[dict[str, Any]]) -> bool:
        target_id = entry.get("targetId")
        if self.filter_mode == "labeled-only" or self.search:
            return False  # the label decides visibility
        label = self.sm.get_label(target_id) if isinstance(target_id, str) else None
        stamp = self.sm.get_label_timestamp(target_id) if label and isinstance(target_id, str) else None
        row = self._exact_row(target_id)
        if row < 0:
            return True
        self.rows[row] = replace(self.rows[row], label=label or None, label_timestamp=stamp)
        self._set_flag(row, "has_label", bool(label), ops)
        ops.append({"op": "text", "row": row, "text": self.row_text(row)})
        return True
