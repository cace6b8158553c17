"""The session engine: pi-compatible session trees (reading, writing, projecting).

Pure Python plus orjson; no Jupyter, no network. The pure functions take a list of entries
and a leaf; :class:`SessionManager` owns one session's file, index and leaf.
"""

from pi_lab.session.ids import iso_timestamp, parse_iso_ms, uuid7
from pi_lab.session.manager import EntryNotFound, SessionManager
from pi_lab.session.navigation import (
    FlatTree,
    NavRow,
    TreeNavigator,
    flatten_tree,
    navigation_rows,
    render_row,
    status_line,
    visible_rows,
)
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
    "InvalidSessionFile",
    "TreeNode",
    "FlatTree",
    "NavRow",
    "TreeNavigator",
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
