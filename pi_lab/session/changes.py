"""What changed in a session since a consumer last looked: the engine's change feed.

Every view of a session (the widget's rows, the gauge, the server's store, a timeline) needs
the same answer after an append or a :meth:`~pi_lab.session.SessionManager.refresh`: which
entries are new, whether the leaf moved, which labels changed, or whether everything must be
reloaded. The manager records it once, here, and each consumer keeps only a cursor::

    cursor = sm.change_cursor          # after building a view
    ...                                # appends by pi_lab, sm.refresh() picking up pi's lines
    changes = sm.changes_since(cursor)
    if changes.rebuilt:
        rebuild_from(sm)               # the file was re-read or replaced, or a new session began
    else:
        for entry in changes.appended: # file order; headers excluded
            add_row(entry)
        if changes.leaf_moved:
            move_active_path(changes.leaf_id)
        for entry_id in changes.labels_changed:
            redraw_label(entry_id, sm.get_label(entry_id))
    cursor = changes.cursor

The cost is O(changes): the log holds one item per appended entry and per label change
since the last rebuild (never the entries loaded with the file). A cursor is a value; a
cursor from an earlier epoch (before a rebuild) or from another manager answers
``rebuilt=True``. ``leaf_moved`` compares the leaf now with the leaf when the cursor was taken.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from pi_lab.session.entries import Entry, str_key

__all__ = ["ChangeCursor", "Changes", "ChangeLog"]

_EPOCHS = itertools.count(1)  # process-wide: two managers never share an epoch
_ENTRY = 0
_LABEL = 1


@dataclass(frozen=True, slots=True)
class ChangeCursor:
    """A position in one manager's change log (opaque to consumers; compare, store, pass back)."""

    epoch: int
    position: int
    leaf_id: Any


@dataclass(frozen=True, slots=True)
class Changes:
    """What changed between a cursor and now.

    ``cursor`` is the new cursor to keep; ``appended`` the entries added since, in file order
    (own appends and lines read by ``refresh``/``add_loaded_entries``); ``leaf_moved`` and
    ``leaf_id`` the leaf now; ``labels_changed`` the target ids whose label was set or
    cleared (first change first, each once); ``rebuilt`` that memory was rebuilt (the file
    re-read, rewritten in another order, replaced, or a new session started): the other
    fields are then empty and the consumer reloads from the manager.
    """

    cursor: ChangeCursor
    appended: tuple[Entry, ...] = ()
    leaf_moved: bool = False
    leaf_id: Any = None
    labels_changed: tuple[str, ...] = ()
    rebuilt: bool = False


class ChangeLog:
    """The manager's record of appends and label changes since its last rebuild."""

    __slots__ = ("epoch", "_items")

    def __init__(self) -> None:
        self.epoch = next(_EPOCHS)
        self._items: list[tuple[int, Any]] = []

    def rebuilt(self) -> None:
        """Memory was rebuilt: every earlier cursor now answers ``rebuilt``."""
        self.epoch = next(_EPOCHS)
        self._items = []

    def appended(self, entry: Entry) -> None:
        self._items.append((_ENTRY, entry))
        if entry.get("type") == "label":
            target = str_key(entry.get("targetId"))
            if target is not None:
                self._items.append((_LABEL, target))

    def removed_last(self, entry: Entry) -> None:
        """An own append was rolled back (its write failed): forget it."""
        while self._items and self._items[-1][0] == _LABEL:
            self._items.pop()
        if self._items and self._items[-1][1] is entry:
            self._items.pop()

    def cursor(self, leaf_id: Any) -> ChangeCursor:
        return ChangeCursor(self.epoch, len(self._items), leaf_id)

    def since(self, cursor: ChangeCursor, leaf_id: Any) -> Changes:
        now = self.cursor(leaf_id)
        if not isinstance(cursor, ChangeCursor) or cursor.epoch != self.epoch or cursor.position > len(self._items):
            return Changes(now, leaf_moved=True, leaf_id=leaf_id, rebuilt=True)
        appended: list[Entry] = []
        labels: dict[str, None] = {}
        for kind, value in itertools.islice(self._items, cursor.position, None):
            if kind == _ENTRY:
                appended.append(value)
            else:
                labels[value] = None
        return Changes(
            now,
            appended=tuple(appended),
            leaf_moved=not _same_leaf(cursor.leaf_id, leaf_id),
            leaf_id=leaf_id,
            labels_changed=tuple(labels),
        )


def _same_leaf(a: Any, b: Any) -> bool:
    return a is b or (a.__class__ is str and b.__class__ is str and a == b)
