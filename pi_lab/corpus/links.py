"""A corpus table shown with a link on every row that opens its session at its entry.

``Corpus.links(table)`` wraps any table that has ``file`` (and ``entry_id``) columns; in
JupyterLab a click on a row's link opens the session in the Pi Session viewer with that entry
selected (the viewer takes the link's ``#<entry id>`` fragment). Links are relative to the
notebook's folder, where JupyterLab resolves them; a file outside it gets no link (the Lab can
only open files under its root), and ``c.open(session_id, entry_id)`` opens it in a widget.
"""

from __future__ import annotations

import html
import os
from typing import Any
from urllib.parse import quote

__all__ = ["LinkedTable"]

_ROWS_SHOWN = 200


class LinkedTable:
    """``table`` for display with an "open" link per row; ``.table`` is the table itself."""

    def __init__(self, table: Any, base: str | os.PathLike[str] | None = None, rows: int = _ROWS_SHOWN):
        if "file" not in table.column_names:
            raise ValueError("links need a table with a 'file' column (every corpus table has one)")
        self.table = table
        self.base = os.path.abspath(os.fspath(base) if base is not None else os.getcwd())
        self.rows = rows

    def href(self, file: str, entry_id: str | None) -> str | None:
        """The link of one row, relative to the notebook's folder; None outside it."""
        relative = os.path.relpath(file, self.base)
        if relative.startswith(os.pardir + os.sep) or relative == os.pardir or os.path.isabs(relative):
            return None
        link = quote(relative.replace(os.sep, "/"))
        return f"{link}#{quote(entry_id, safe='')}" if entry_id else link

    def _repr_html_(self) -> str:
        columns = self.table.column_names
        shown = self.table.slice(0, self.rows).to_pylist()
        head = "".join(f"<th>{html.escape(name)}</th>" for name in columns)
        body = []
        for row in shown:
            href = self.href(row["file"], row.get("entry_id")) if isinstance(row.get("file"), str) else None
            cell = f'<a href="{html.escape(href, quote=True)}">open</a>' if href else ""
            values = "".join(f"<td>{html.escape(_text(row[name]))}</td>" for name in columns)
            body.append(f"<tr><td>{cell}</td>{values}</tr>")
        more = self.table.num_rows - len(shown)
        note = f"<p>{more:,} more rows not shown</p>" if more > 0 else ""
        return f"<table><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{note}"

    def __repr__(self) -> str:
        return f"LinkedTable({self.table.num_rows} rows)"


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = str(value)
    return text if len(text) <= 120 else text[:119] + "…"
