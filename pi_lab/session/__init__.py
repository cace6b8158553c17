"""The session engine: pi-compatible session trees (reading, writing, projecting).

Pure Python plus orjson; no Jupyter, no network. The pure functions take a list of entries
and a leaf; :class:`SessionManager` owns one session's file, index and leaf.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # editors and type checkers see the names; at run time each loads on first use
    from pi_lab.session.changes import ChangeCursor, Changes
    from pi_lab.session.errors import UnfinishedLineError
    from pi_lab.session.flatten import FlatTree, NavRow, flatten_tree, navigation_rows, visible_rows
    from pi_lab.session.ids import iso_timestamp, parse_iso_ms, uuid7
    from pi_lab.session.manager import EntryNotFound, SessionManager
    from pi_lab.session.paths import SessionInfo, default_session_dir, session_file_name
    from pi_lab.session.projection import (
        ProjectedEntry,
        SessionContext,
        SessionProjection,
        build_context_entries,
        build_session_context,
        build_session_projection,
        entry_to_messages,
        get_context_settings,
        project_with_edit,
        replay_system_state,
    )
    from pi_lab.session.storage import InvalidSessionFile, load_entries_from_file
    from pi_lab.session.tree import TreeNode, build_session_path, get_branch, get_tree

# Where each name lives. Loaded on first use, so that importing one engine module (the corpus's
# line reader, pi_lab.session._json) does not load every other one: `pi-lab usage` needs none.
_HOMES = {
    "ChangeCursor": "pi_lab.session.changes",
    "Changes": "pi_lab.session.changes",
    "UnfinishedLineError": "pi_lab.session.errors",
    "FlatTree": "pi_lab.session.flatten",
    "NavRow": "pi_lab.session.flatten",
    "flatten_tree": "pi_lab.session.flatten",
    "navigation_rows": "pi_lab.session.flatten",
    "visible_rows": "pi_lab.session.flatten",
    "iso_timestamp": "pi_lab.session.ids",
    "parse_iso_ms": "pi_lab.session.ids",
    "uuid7": "pi_lab.session.ids",
    "EntryNotFound": "pi_lab.session.manager",
    "SessionManager": "pi_lab.session.manager",
    "SessionInfo": "pi_lab.session.paths",
    "default_session_dir": "pi_lab.session.paths",
    "session_file_name": "pi_lab.session.paths",
    "ProjectedEntry": "pi_lab.session.projection",
    "SessionContext": "pi_lab.session.projection",
    "SessionProjection": "pi_lab.session.projection",
    "build_context_entries": "pi_lab.session.projection",
    "build_session_context": "pi_lab.session.projection",
    "build_session_projection": "pi_lab.session.projection",
    "entry_to_messages": "pi_lab.session.projection",
    "get_context_settings": "pi_lab.session.projection",
    "project_with_edit": "pi_lab.session.projection",
    "replay_system_state": "pi_lab.session.projection",
    "InvalidSessionFile": "pi_lab.session.storage",
    "load_entries_from_file": "pi_lab.session.storage",
    "TreeNode": "pi_lab.session.tree",
    "build_session_path": "pi_lab.session.tree",
    "get_branch": "pi_lab.session.tree",
    "get_tree": "pi_lab.session.tree",
}

__all__ = [
    "SessionManager",
    "SessionInfo",
    "EntryNotFound",
    "UnfinishedLineError",
    "InvalidSessionFile",
    "TreeNode",
    "Changes",
    "ChangeCursor",
    "FlatTree",
    "NavRow",
    "flatten_tree",
    "visible_rows",
    "navigation_rows",
    "ProjectedEntry",
    "SessionProjection",
    "SessionContext",
    "build_session_path",
    "build_context_entries",
    "build_session_projection",
    "build_session_context",
    "entry_to_messages",
    "project_with_edit",
    "get_context_settings",
    "replay_system_state",
    "get_branch",
    "get_tree",
    "load_entries_from_file",
    "default_session_dir",
    "session_file_name",
    "iso_timestamp",
    "parse_iso_ms",
    "uuid7",
]


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is not None:
        import importlib

        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # later lookups are plain module attributes
        return value
    if name in ("render_row", "status_line"):
        # pi's terminal lines are drawn above the engine, by pi_lab.cli_render; the engine
        # names them no more (that tied the lowest layer to one above it).
        raise AttributeError(f"{name} is in pi_lab.cli_render: from pi_lab.cli_render import {name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
