"""pi's tree list as terminal text (tree-and-context.md §13.4): a row's exact line, the
status line and the window of rows a terminal shows. Used by ``pi-lab tree`` and by the
widget's text snapshot; the rows themselves come from :mod:`pi_lab.session.flatten`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from pi_lab.session._text import field_text
from pi_lab.session.display import display_text_with, format_label_time
from pi_lab.session.flatten import NavRow

__all__ = [
    "iter_rendered_rows",
    "render_row",
    "render_rows",
    "status_line",
    "window_for_terminal",
    "window_range",
]

_STATUS_LABELS = {"no-tools": " [no-tools]", "user-only": " [user]", "labeled-only": " [labeled]", "all": " [all]"}


def _prefix(row: NavRow) -> str:
    """The indentation of ``row``: per level, its gutter (``│`` or blank; the first gutter
    given for a level wins), else the connector on the last level, else blank.

    Built from the gutters (a few) and runs of blank levels repeated at C speed: a row of a
    deep tree has thousands of levels, and a walk over levels x gutters made ``pi-lab tree``
    of a 100k-entry session quadratic."""
    levels = row.indent
    if levels <= 0:
        return ""
    drawn: dict[int, bool] = {}
    for position, show in row.gutters:
        if 0 <= position < levels and position not in drawn:
            drawn[position] = show
    pieces: list[str] = []
    at = 0
    for position in sorted(drawn):
        pieces.append("   " * (position - at))
        pieces.append("│  " if drawn[position] else "   ")
        at = position + 1
    last = levels - 1
    if row.show_connector and not row.is_virtual_root_child and last not in drawn:
        glyph = "⊞" if row.folded else ("⊟" if row.foldable else "─")
        pieces.append("   " * (last - at))
        pieces.append(("└" if row.is_last else "├") + glyph + " ")
    else:
        pieces.append("   " * (levels - at))
    return "".join(pieces)


def render_row(
    row: NavRow,
    *,
    selected: bool = False,
    show_label_times: bool = False,
    now: datetime | None = None,
    home: str | None = None,
) -> str:
    """The exact text line pi draws for ``row`` (without colours or horizontal panning).

    ``home`` re-derives the display text with another home directory; by default the text
    computed by :func:`visible_rows` is used.
    """
    parts = ["› " if selected else "  ", _prefix(row)]
    if row.folded and not row.connector:
        parts.append("⊞ ")
    if row.on_active_path:
        parts.append("• ")
    if row.label:
        label = row.label if isinstance(row.label, str) else field_text(row.label)  # odd label values
        parts.append(f"[{label}] ")
        if show_label_times and row.label_timestamp:
            parts.append(format_label_time(row.label_timestamp, now) + " ")
    if home is None:
        parts.append(row.text)
    else:
        parts.append(display_text_with(row.entry, row.tool_call, home))
    return "".join(parts)


def status_line(
    selected_index: int, rows: Sequence[NavRow], filter_mode: str = "default", show_label_times: bool = False
) -> str:
    """``  (<selected>/<rows>)`` plus the filter tag and ``[+label time]``."""
    tags = _STATUS_LABELS.get(filter_mode, "") + (" [+label time]" if show_label_times else "")
    if not rows:
        return f"  (0/0){tags}"
    return f"  ({selected_index + 1}/{len(rows)}){tags}"


def window_for_terminal(terminal_rows: int) -> int:
    """How many rows pi lists for a terminal of ``terminal_rows`` lines."""
    return max(5, terminal_rows // 2)


def window_range(selected_index: int, total: int, window: int) -> tuple[int, int]:
    """The ``[start, end)`` slice of rows shown, centred on the selection, clamped."""
    start = max(0, min(selected_index - window // 2, total - window))
    return start, min(start + window, total)


def render_rows(rows: Sequence[NavRow], selected_index: int, **options: Any) -> list[str]:
    """The list as pi draws it: the rows (all, or a window) and the status line (the options
    of :func:`iter_rendered_rows`)."""
    return list(iter_rendered_rows(rows, selected_index, **options))


def iter_rendered_rows(
    rows: Sequence[NavRow],
    selected_index: int,
    *,
    filter_mode: str = "default",
    show_label_times: bool = False,
    window: int | None = None,
    now: datetime | None = None,
    home: str | None = None,
) -> Iterator[str]:
    """:func:`render_rows` one line at a time (``pi-lab tree`` writes each as it comes: the
    text of a deep 100k-entry tree is far larger than its rows)."""
    if not rows:
        yield "  No entries found"
        yield status_line(0, rows, filter_mode, show_label_times)
        return
    start, end = (0, len(rows)) if window is None else window_range(selected_index, len(rows), window)
    for r in range(start, end):
        yield render_row(rows[r], selected=r == selected_index, show_label_times=show_label_times, now=now, home=home)
    yield status_line(selected_index, rows, filter_mode, show_label_times)
