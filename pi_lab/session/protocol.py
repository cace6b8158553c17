"""ReadableSession: what every layer above the engine needs from a session.

The views, the corpus and the export read a session only through these members. pi's
:class:`~pi_lab.session.manager.SessionManager` implements them exactly; read-only adapters for
other agents' files (``pi_lab.formats``) implement them by those agents' own rules, so a new
format needs no change above the engine.

Entries and messages stay plain dicts with pi's JSON keys (``id``, ``parentId``, ``type``,
``message``...): an adapter maps its lines onto them and keeps what pi has no key for in extra
keys of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pi_lab.session.changes import ChangeCursor, Changes
    from pi_lab.session.projection import SessionContext, SessionProjection
    from pi_lab.session.tree import TreeNode

Entry = dict[str, Any]

#: The agents whose files pi_lab reads, as ``ReadableSession.agent`` names them.
AGENTS = ("pi", "claude-code", "codex")


@runtime_checkable
class ReadableSession(Protocol):
    """A session tree as the views read it: entries, tree, branch, leaf, what the model saw."""

    #: Which agent wrote the file: one of :data:`AGENTS`.
    agent: str

    @property
    def session_file(self) -> str | None: ...

    @property
    def session_id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def leaf_id(self) -> str | None: ...

    @property
    def read_only(self) -> bool: ...

    def get_header(self) -> Entry | None: ...

    def get_entries(self) -> list[Entry]: ...

    def get_entry(self, entry_id: str) -> Entry | None: ...

    def get_children(self, parent_id: str | None) -> list[Entry]: ...

    def get_label(self, entry_id: str) -> str | None: ...

    #: The timestamp of the label entry that set the entry's label (None without a label).
    def get_label_timestamp(self, entry_id: str) -> str | None: ...

    def get_session_name(self) -> str | None: ...

    def get_branch(self, from_id: str | None = None) -> list[Entry]: ...

    def get_tree(self) -> list[TreeNode]: ...

    def build_session_context(self, leaf_id: Any = ...) -> SessionContext: ...

    def build_session_projection(self, leaf_id: Any = ...) -> SessionProjection: ...

    @property
    def change_cursor(self) -> ChangeCursor: ...

    def changes_since(self, cursor: ChangeCursor) -> Changes: ...
