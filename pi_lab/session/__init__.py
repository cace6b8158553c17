"""The session engine: pi-compatible session trees (reading, writing, projecting).

Pure Python plus orjson; no Jupyter, no network. The pure functions take a list of entries
and a leaf; :class:`SessionManager` owns one session's file, index and leaf.
"""

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
    "render_row",
    "status_line",
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
    # pi's terminal lines live next to the CLI; loaded on first use, never by the engine.
    if name in ("render_row", "status_line"):
        from pi_lab import cli_render

        return getattr(cli_render, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
