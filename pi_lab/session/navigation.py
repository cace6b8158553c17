"""The /tree list of pi's tree selector (tree-and-context.md §13), by its old name: deprecated.

The code lives by job: :mod:`pi_lab.session.flatten` (flattening, filters, rows, selection),
:mod:`pi_lab.session.display` (display, search and copy text) and :mod:`pi_lab.cli_render`
(pi's terminal lines: ``render_row``, ``status_line``, ``render_rows``, windows). This module
still answers ``from pi_lab.session.navigation import X`` for code outside pi_lab, with a
``DeprecationWarning`` naming the new home; pi_lab itself imports the real modules.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Any

from pi_lab.session import display as _display
from pi_lab.session import flatten as _flatten

if TYPE_CHECKING:  # editors and type checkers see the names; at run time they resolve lazily
    from pi_lab.cli_render import render_row, render_rows, status_line, window_for_terminal, window_range
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


def _home(name: str) -> str:
    if name in _RENDERER:
        return "pi_lab.cli_render"
    return "pi_lab.session.display" if name in _display.__all__ else "pi_lab.session.flatten"


def __getattr__(name: str) -> Any:
    # Names resolve here, on every access, rather than being bound at import: the warning then
    # reaches each outside caller, not only the first importer of the module.
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    home = _home(name)
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if not (caller == "pi_lab" or caller.startswith("pi_lab.")):
        warnings.warn(
            f"pi_lab.session.navigation is deprecated: import {name} from {home}",
            DeprecationWarning,
            stacklevel=2,
        )
    import importlib

    return getattr(importlib.import_module(home), name)
