"""The /tree list of pi's tree selector (tree-and-context.md §13), by its old name.

The code lives by job: :mod:`pi_lab.session.flatten` (flattening, filters, rows, selection),
:mod:`pi_lab.session.display` (display, search and copy text) and :mod:`pi_lab.cli_render`
(pi's terminal lines: ``render_row``, ``status_line``, ``render_rows``, windows). This module
re-exports them so that ``from pi_lab.session.navigation import X`` keeps working; the
terminal names are loaded on first use (the engine itself never imports the renderer).
"""

from __future__ import annotations

from typing import Any

from pi_lab.session import display as _display
from pi_lab.session import flatten as _flatten

from pi_lab.session.display import (
    ToolCall,
    copy_text,
    default_home,
    display_text,
    format_label_time,
    format_tool_call,
    search_text,
    shorten_home,
)
from pi_lab.session.flatten import (
    FILTER_MODES,
    SETTINGS_ENTRY_TYPES,
    FlatTree,
    NavRow,
    flatten_tree,
    initial_selection,
    navigation_rows,
    search_tokens,
    visible_rows,
)

_RENDERER = ("render_row", "render_rows", "status_line", "window_for_terminal", "window_range")

__all__ = [*_display.__all__, *_flatten.__all__, *_RENDERER]


def __getattr__(name: str) -> Any:
    if name in _RENDERER:
        from pi_lab import cli_render

        return getattr(cli_render, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
