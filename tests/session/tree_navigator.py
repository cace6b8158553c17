"""pi's tree selector as a key-driven state machine, for the tests (tree-and-context.md §13.6).

:class:`TreeNavigator` holds the selection, filter, search and folds and reacts to pi's
keys the way pi's selector does. Only the tests drive it (the widget and the CLI have their
own front ends), so it lives here, beside the tests that check pi's key behaviour with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pi_lab.cli_render import render_rows
from pi_lab.session._js import js_trim
from pi_lab.session.display import copy_text
from pi_lab.session.flatten import FILTER_MODES, FlatTree, NavRow, flatten_tree, initial_selection, visible_rows
from pi_lab.session.ids import iso_timestamp, utc_now
from pi_lab.session.tree import TreeNode

if TYPE_CHECKING:
    from pi_lab.session.manager import SessionManager

__all__ = [
    "NavEvent",
    "TreeNavigator",
    "fold_or_up",
    "unfold_or_down",
    "segment_start_up",
    "segment_start_down",
    "help_lines",
]

def segment_start_up(rows: Sequence[NavRow], selected_index: int) -> int:
    """The nearest segment start above the selection (a branch child), else the visible root."""
    if not rows:
        return selected_index
    current = selected_index
    while True:
        parent = rows[current].parent
        if parent < 0:
            return current
        if rows[parent].child_count > 1 and current < selected_index:
            return current
        current = parent


def segment_start_down(rows: Sequence[NavRow], selected_index: int) -> int:
    """Follow single visible children down to a row without children or to a branch point's
    first child (the active branch when it is visible)."""
    if not rows:
        return selected_index
    current = selected_index
    while True:
        children = rows[current].child_count
        if children == 0:
            return current
        if children > 1:
            return current + 1  # rows are in pre-order: the first child follows its parent
        current += 1


def fold_or_up(rows: Sequence[NavRow], selected_index: int, folded: Iterable[str]) -> tuple[frozenset[str], int]:
    """``ctrl+left``: fold the selected row if it is foldable and open, else jump up.

    Returns the new folded ids and the new selected index. Folding never moves rows above
    the folded one, so the index stays valid for the recomputed rows.
    """
    folded_ids = frozenset(folded)
    if not rows:
        return folded_ids, selected_index
    row = rows[selected_index]
    if row.entry_id and row.foldable and row.entry_id not in folded_ids:
        return folded_ids | {row.entry_id}, selected_index
    return folded_ids, segment_start_up(rows, selected_index)


def unfold_or_down(rows: Sequence[NavRow], selected_index: int, folded: Iterable[str]) -> tuple[frozenset[str], int]:
    """``ctrl+right``: unfold the selected row if it is folded, else jump down."""
    folded_ids = frozenset(folded)
    if not rows:
        return folded_ids, selected_index
    row = rows[selected_index]
    if row.entry_id and row.entry_id in folded_ids:
        return folded_ids - {row.entry_id}, selected_index
    return folded_ids, segment_start_down(rows, selected_index)


# ---------------------------------------------------------------------------------------------
# The stateful list


@dataclass(frozen=True, slots=True)
class NavEvent:
    """Something the caller must act on: ``select``, ``cancel``, ``copy`` or ``edit_label``."""

    kind: str
    entry_id: Any = None
    text: str | None = None


_KEY_ALIASES = {
    "\x1b[A": "up",
    "\x1b[B": "down",
    "\x1b[C": "right",
    "\x1b[D": "left",
    "\x1b[5~": "pageup",
    "\x1b[6~": "pagedown",
    "\x1b[1;5D": "ctrl+left",
    "\x1b[1;5C": "ctrl+right",
    "\x1b[1;3D": "alt+left",
    "\x1b[1;3C": "alt+right",
    "\r": "enter",
    "\n": "enter",
    "\x1b": "escape",
    "\x7f": "backspace",
    "\x08": "backspace",
    "\x01": "ctrl+a",
    "\x04": "ctrl+d",
    "\x0c": "ctrl+l",
    "\x0f": "ctrl+o",
    "\x14": "ctrl+t",
    "\x15": "ctrl+u",
    "\x18": "ctrl+x",
    "L": "shift+l",
    "T": "shift+t",
}

_NAMED_ALIASES = {
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "page-up": "pageup",
    "page_up": "pageup",
    "pgup": "pageup",
    "page-down": "pagedown",
    "page_down": "pagedown",
    "pgdn": "pagedown",
    "return": "enter",
    "esc": "escape",
    "ctrl+shift+o": "shift+ctrl+o",
}

_FILTER_TOGGLES = {"ctrl+t": "no-tools", "ctrl+u": "user-only", "ctrl+l": "labeled-only", "ctrl+a": "all"}


def _key_name(key: str) -> str:
    if key in _KEY_ALIASES:
        return _KEY_ALIASES[key]
    if len(key) > 1:
        lowered = key.lower()
        lowered = _NAMED_ALIASES.get(lowered, lowered)
        if lowered in _NAMED_KEYS:
            return lowered
    return key


def _has_control_characters(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 0x7F or 0x80 <= ord(ch) <= 0x9F for ch in text)


_NAMED_KEYS = frozenset(
    {
        "up", "down", "left", "right", "pageup", "pagedown", "enter", "escape", "backspace",
        "ctrl+left", "alt+left", "ctrl+right", "alt+right", "ctrl+x", "ctrl+d", "ctrl+t", "ctrl+u",
        "ctrl+l", "ctrl+a", "ctrl+o", "shift+ctrl+o", "shift+l", "shift+t",
    }
)  # fmt: skip


class TreeNavigator:
    """pi's tree list as a state machine: rows, selection, filter, search, folds, label times.

    Drive it with :meth:`handle_key` (pi's default key names such as ``"up"``,
    ``"ctrl+left"``, ``"shift+ctrl+o"``, or typed text) or the named methods. ``window`` is
    the page size of ``left``/``right``/``pageup``/``pagedown`` (pi: ``max(5, rows // 2)``).
    """

    def __init__(
        self,
        flat: FlatTree,
        *,
        selected_id: str | None = None,
        filter_mode: str = "default",
        window: int = 10,
        home: str | None = None,
    ):
        if filter_mode not in FILTER_MODES:
            raise ValueError(f"unknown filter mode {filter_mode!r}")
        self.flat = flat
        self.filter_mode = filter_mode
        self.search = ""
        self.folded: set[str] = set()
        self.show_label_times = False
        self.window = max(1, int(window))
        self.home = home
        self.rows: list[NavRow] = self._compute_rows()
        target = selected_id if selected_id is not None else flat.leaf_id
        self.selected = initial_selection(self.rows, flat, target)
        self.last_selected_id: Any = self.rows[self.selected].entry_id if self.rows else None

    @classmethod
    def from_roots(cls, roots: Sequence[TreeNode], leaf_id: Any, **kwargs: Any) -> TreeNavigator:
        return cls(flatten_tree(roots, leaf_id), **kwargs)

    @classmethod
    def from_session(cls, sm: SessionManager, **kwargs: Any) -> TreeNavigator:
        return cls(flatten_tree(sm.get_tree(), sm.leaf_id), **kwargs)

    # -------------------------------------------------------------- state

    @property
    def selected_row(self) -> NavRow | None:
        return self.rows[self.selected] if self.rows else None

    @property
    def selected_id(self) -> Any:
        row = self.selected_row
        return row.entry_id if row is not None else None

    def _compute_rows(self) -> list[NavRow]:
        return visible_rows(
            self.flat, filter_mode=self.filter_mode, search=self.search, folded=self.folded, home=self.home
        )

    def refresh(self) -> None:
        """Recompute the rows and keep the selection on the same entry or its nearest visible
        ancestor (pi's ``applyFilter``)."""
        if self.rows:
            current = self.rows[self.selected].entry_id if self.selected < len(self.rows) else None
            if current is not None:
                self.last_selected_id = current
        self.rows = self._compute_rows()
        if self.last_selected_id is not None:
            self.selected = initial_selection(self.rows, self.flat, self.last_selected_id)
        elif self.selected >= len(self.rows):
            self.selected = max(0, len(self.rows) - 1)
        if self.rows and self.rows[self.selected].entry_id is not None:
            self.last_selected_id = self.rows[self.selected].entry_id

    # -------------------------------------------------------------- moves

    def move_up(self) -> None:
        if self.rows:
            self.selected = len(self.rows) - 1 if self.selected == 0 else self.selected - 1

    def move_down(self) -> None:
        if self.rows:
            self.selected = 0 if self.selected >= len(self.rows) - 1 else self.selected + 1

    def page_up(self) -> None:
        self.selected = max(0, self.selected - self.window)

    def page_down(self) -> None:
        if self.rows:
            self.selected = min(len(self.rows) - 1, self.selected + self.window)

    def fold_or_up(self) -> None:
        folded, selected = fold_or_up(self.rows, self.selected, self.folded)
        if folded != self.folded:
            self.folded = set(folded)
            self.refresh()
        else:
            self.selected = selected

    def unfold_or_down(self) -> None:
        folded, selected = unfold_or_down(self.rows, self.selected, self.folded)
        if folded != self.folded:
            self.folded = set(folded)
            self.refresh()
        else:
            self.selected = selected

    # -------------------------------------------------------------- filters and search

    def set_filter(self, mode: str) -> None:
        if mode not in FILTER_MODES:
            raise ValueError(f"unknown filter mode {mode!r}")
        self.filter_mode = mode
        self.folded.clear()
        self.refresh()

    def toggle_filter(self, mode: str) -> None:
        self.set_filter("default" if self.filter_mode == mode else mode)

    def cycle_filter(self, step: int = 1) -> None:
        position = FILTER_MODES.index(self.filter_mode)
        self.set_filter(FILTER_MODES[(position + step) % len(FILTER_MODES)])

    def type_text(self, text: str) -> None:
        """Append typed text to the search (ignored if it holds control characters)."""
        if not text or _has_control_characters(text):
            return
        self.search += text
        self.folded.clear()
        self.refresh()

    def backspace(self) -> None:
        if self.search:
            self.search = self.search[:-1]
            self.folded.clear()
            self.refresh()

    def clear_search(self) -> None:
        self.search = ""
        self.folded.clear()
        self.refresh()

    def toggle_label_times(self) -> None:
        self.show_label_times = not self.show_label_times

    def set_label(self, entry_id: str, label: str | None, label_timestamp: str | None = None) -> None:
        """Show a new label on ``entry_id`` (the caller appends the label entry).

        Like pi, the filter is not re-run: the row keeps its place until the next change.
        """
        label = label or None
        if label is not None and label_timestamp is None:
            label_timestamp = iso_timestamp(utc_now())
        index = self.flat.set_label(entry_id, label, label_timestamp)
        if index is None:
            return
        for r, row in enumerate(self.rows):
            if row.index == index:
                self.rows[r] = replace(row, label=label, label_timestamp=label_timestamp if label else None)
                break

    def apply_label(self, sm: SessionManager, entry_id: str, text: str | None) -> str:
        """Save a label typed after ``shift+l``, as pi does: the input is trimmed, empty
        removes the label, and the label entry is appended at the session's current leaf.
        Returns the new label entry's id."""
        label = js_trim(text) if text else ""
        label_id = sm.append_label_change(entry_id, label or None)
        appended = sm.get_entry(label_id) or {}
        self.set_label(entry_id, label or None, appended.get("timestamp"))
        return label_id

    # -------------------------------------------------------------- keys

    def handle_key(self, key: str) -> NavEvent | None:
        """Apply one key (§13.6). Returns an event for the caller, or ``None``."""
        name = _key_name(key)
        if name == "up":
            self.move_up()
        elif name == "down":
            self.move_down()
        elif name in ("ctrl+left", "alt+left"):
            self.fold_or_up()
        elif name in ("ctrl+right", "alt+right"):
            self.unfold_or_down()
        elif name in ("left", "pageup"):
            self.page_up()
        elif name in ("right", "pagedown"):
            self.page_down()
        elif name == "enter":
            row = self.selected_row
            return NavEvent("select", row.entry_id) if row is not None else None
        elif name == "ctrl+x":
            row = self.selected_row
            return NavEvent("copy", row.entry_id if row else None, copy_text(row.entry) if row else None)
        elif name == "escape":
            if self.search:
                self.clear_search()
            else:
                return NavEvent("cancel")
        elif name == "ctrl+d":
            self.set_filter("default")
        elif name in _FILTER_TOGGLES:
            self.toggle_filter(_FILTER_TOGGLES[name])
        elif name == "ctrl+o":
            self.cycle_filter(1)
        elif name == "shift+ctrl+o":
            self.cycle_filter(-1)
        elif name == "backspace":
            self.backspace()
        elif name == "shift+l":
            row = self.selected_row
            if row is not None:
                return NavEvent("edit_label", row.entry_id, row.label)
        elif name == "shift+t":
            self.toggle_label_times()
        elif name not in _NAMED_KEYS:
            self.type_text(key)
        return None

    # -------------------------------------------------------------- drawing

    def render(self, *, now: datetime | None = None, all_rows: bool = False) -> list[str]:
        """The list lines (a window around the selection, or every row) and the status line."""
        return render_rows(
            self.rows,
            self.selected,
            filter_mode=self.filter_mode,
            show_label_times=self.show_label_times,
            window=None if all_rows else self.window,
            now=now,
            home=None,
        )


# ---------------------------------------------------------------------------------------------
# Help


_HELP_ITEMS = (
    "↑/↓ move",
    "←/→ page",
    "ctrl+←/→ branch",
    "ctrl+x copy",
    "shift+l label",
    "shift+t label time",
    "filters ctrl+d/t/u/l/a",
    "cycle ctrl+o/shift+ctrl+o",
)


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        while len(word) > width:
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:width])
            word = word[width:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= width:
            current = candidate
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def help_lines(width: int = 80) -> list[str]:
    """The key help, wrapped to ``width`` columns without truncation (items joined by ``·``)."""
    width = max(1, width)
    lines: list[str] = []
    current = ""
    for item in _HELP_ITEMS:
        indented = "  " + item if len("  " + item) <= width else item
        candidate = f"{current} · {item}" if current else indented
        if not current or len(candidate) <= width:
            current = candidate
            continue
        lines.extend(_wrap(current.rstrip(), width))
        current = indented
    if current:
        lines.extend(_wrap(current.rstrip(), width))
    return lines
