"""Small helpers shared by the view functions: resolving node ids, reading entry fields.

Session files are parsed without validation, so every field read here tolerates odd types (a
role that is a number, an id that is a list): such values are treated as absent, never used as
dict keys or compared as strings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, runtime_checkable

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)
from pi_lab.session.projection import SessionProjection, project_path
from pi_lab.session.protocol import ReadableSession
from pi_lab.view.errors import UnknownEntry, ViewError

if TYPE_CHECKING:
    from pi_lab.view.payload import ViewSettings


class HoldsSession(Protocol):
    """An object that reads a session through another (an AgentSession, a SessionWidget)."""

    @property
    def session_manager(self) -> ReadableSession: ...


# What the view functions take: a session, or an object holding one (checked at run time by
# manager_of, which says what it got when it is neither).
SessionLike = ReadableSession | HoldsSession


class ViewOfSession(Protocol):
    """One viewer's view of a session (:class:`pi_lab.view.payload.SessionView`): what the read
    requests answer from. Declared here so the request modules need not import the payload
    module that dispatches to them."""

    @property
    def sm(self) -> ReadableSession: ...

    @property
    def settings(self) -> ViewSettings: ...


@runtime_checkable
class LazyBodies(Protocol):
    """A session opened with its bodies left on disk (:class:`SessionManager` opened lazily)."""

    @property
    def lazy_bodies(self) -> bool: ...

    def load_bodies(self) -> None: ...


def manager_of(sm: SessionLike) -> ReadableSession:
    """The SessionManager behind ``sm`` (a manager, or an object with ``session_manager``),
    with every body in memory (:func:`with_bodies`)."""
    if _reads_entries(sm):
        return with_bodies(sm)
    inner = getattr(sm, "session_manager", None)
    if _reads_entries(inner):
        return with_bodies(inner)
    raise ViewError(f"expected a SessionManager (or an AgentSession), not {type(sm).__name__}")


def _reads_entries(value: object) -> TypeGuard[ReadableSession]:
    """The run-time check of :func:`manager_of`: what the caller passed reads entries and
    branches (a whole isinstance check of the protocol would call every property)."""
    return hasattr(value, "get_branch") and hasattr(value, "get_entry")


def with_bodies(sm: ReadableSession) -> ReadableSession:
    """``sm``, its bodies read into memory if it was opened lazily: the views read every
    entry (row facts, search, gauge) and key their caches by entry identity, which needs one
    dict per entry for the session's life (SessionManager.load_bodies)."""
    if isinstance(sm, LazyBodies) and sm.lazy_bodies:
        sm.load_bodies()
    return sm


def _where(sm: ReadableSession) -> str | None:
    path = getattr(sm, "session_file", None)
    return f"session {path}" if isinstance(path, str) and path else None


def require_entry(sm: ReadableSession, entry_id: Any, argument: str = "entry_id") -> Entry:
    """The entry named ``entry_id``, or :class:`UnknownEntry` (never a KeyError/TypeError)."""
    if not isinstance(entry_id, str) or not entry_id:
        raise UnknownEntry(entry_id, argument, _where(sm))
    entry = sm.get_entry(entry_id)
    if entry is None:
        raise UnknownEntry(entry_id, argument, _where(sm))
    return entry


def branch_to(sm: ReadableSession, entry_id: Any, argument: str = "entry_id") -> list[Entry]:
    """The root-to-``entry_id`` path (the leaf of "what the model sees at X" is X)."""
    require_entry(sm, entry_id, argument)
    return sm.get_branch(entry_id)


def projection_at(path: list[Entry]) -> SessionProjection:
    return project_path(path)


def recorded_window_of(sm: ReadableSession) -> int | None:
    """The context window the session's file itself records for its calls (Codex writes its
    ``model_context_window``), which wins over the catalog's figure for the model; ``None``
    for pi and Claude Code files, which record none (an attribute of the Codex adapter only,
    so not a member of the protocol)."""
    recorded = getattr(sm, "recorded_context_window", None)
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0:
        return recorded
    return None


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def message_of(entry: Entry) -> dict[str, Any] | None:
    if entry.get("type") != "message":
        return None
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def role_of(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    return str_or_none(message.get("role"))


def is_system_entry(entry: Entry) -> bool:
    message = message_of(entry)
    return message is not None and message.get("role") == "system"


def model_id_of(message: dict[str, Any]) -> str | None:
    model = message.get("model")
    return model if isinstance(model, str) and model else None
