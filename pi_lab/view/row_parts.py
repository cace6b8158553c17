"""Parts of :class:`~pi_lab.view.rows.RowState`: its rows as a list whose rows are made when read
(:class:`RowList`), and the words a search matched where the row does not show them."""

from __future__ import annotations

import threading
from collections.abc import Mapping, MutableSequence
from typing import Any

from pi_lab.session.display import search_text
from pi_lab.session.flatten import NavRow, RowLayout, search_tokens

__all__ = ["RowList", "search_hit", "HIT_BEFORE", "HIT_AFTER"]


class RowList(MutableSequence):
    """The rows of a :class:`RowState`: a list of :class:`NavRow` whose rows are made from
    their :class:`RowLayout` when first read (a layout of 83,000 rows would otherwise build
    83,000 objects that a viewer never looks at). Each item is a made row or the layout row it
    is made from, so inserting, replacing and deleting rows (a live append) works as on a list;
    a row once made is kept. Equal to a list of the same rows.

    A widget reads rows on the kernel's loop while a job of its queue may apply appends on a
    worker thread; a lock keeps a row being made from landing in a slot that an insert or a
    delete just moved."""

    __slots__ = ("_layout", "_items", "_lock")

    def __init__(self, layout: RowLayout) -> None:
        self._layout = layout
        self._items: list[Any] = list(range(len(layout)))
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def _made(self, position: int) -> NavRow:
        item = self._items[position]
        if item.__class__ is int:
            with self._lock:
                item = self._items[position]
                if item.__class__ is int:
                    item = self._items[position] = self._layout.lazy_row(item)
        return item

    def __getitem__(self, position: Any) -> Any:
        if isinstance(position, slice):
            return [self._made(p) for p in range(*position.indices(len(self._items)))]
        if position < 0:
            position += len(self._items)
            if position < 0:
                raise IndexError("row index out of range")
        elif position >= len(self._items):
            raise IndexError("row index out of range")
        return self._made(position)

    def __setitem__(self, position: Any, row: Any) -> None:
        if isinstance(position, slice):
            raise TypeError("rows are replaced one at a time")
        with self._lock:
            self._items[position] = row

    def __delitem__(self, position: Any) -> None:
        with self._lock:
            del self._items[position]

    def insert(self, position: int, row: NavRow) -> None:
        with self._lock:
            self._items.insert(position, row)

    def __iter__(self) -> Any:
        position = 0
        while position < len(self._items):
            yield self._made(position)
            position += 1

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RowList, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  (mutable, as a list)

    def __repr__(self) -> str:
        return f"<RowList {len(self._items)} rows>"


# Characters of the entry's search text shown before and after a match: few before, so that the
# word itself stays in view on a narrow row.
HIT_BEFORE, HIT_AFTER = 12, 40


def search_hit(search: str, entry: Mapping[str, Any], label: str | None, shown: str) -> str | None:
    """Why a row matched the search when its shown text and label do not say it: the words
    around the first search word that only the entry's search text holds (a tool result's
    output, the rest of a long message). ``None`` when the row shows every word."""
    words = search_tokens(search)
    visible = f"{shown} {label or ''}".lower()
    missing = next((word for word in words if word not in visible), None)
    if missing is None or not hasattr(entry, "get"):
        return None
    full = search_text(entry, label)
    at = full.find(missing)
    if at < 0:
        return None
    start, end = max(0, at - HIT_BEFORE), min(len(full), at + len(missing) + HIT_AFTER)
    return f"{'…' if start else ''}{' '.join(full[start:end].split())}{'…' if end < len(full) else ''}"
