"""The rows a view shows, kept up to date as the session grows.

:class:`RowState` owns the visible rows of one session for one view (filter, search, folds)
as columns. Its two jobs live in two modules:

* :mod:`pi_lab.view.row_layout` lays the rows out from scratch (:meth:`RowState.layout`,
  ``reload``, ``relayout``, ``set_view``) and answers the viewer's reads (``locate``,
  ``texts``, ``structure``);
* :mod:`pi_lab.view.row_sync` follows the session (:meth:`RowState.sync`): an append under
  the leaf becomes a small :class:`Delta` of row operations, anything else a new layout.

This module is the name the rest of pi_lab imports them by.
"""

from __future__ import annotations

from pi_lab.view.row_layout import LaidOutRows, entry_flags
from pi_lab.view.row_parts import RowList, search_hit
from pi_lab.view.row_sync import Delta, RowState, SyncResult

__all__ = ["RowState", "LaidOutRows", "RowList", "Delta", "SyncResult", "entry_flags", "search_hit"]
