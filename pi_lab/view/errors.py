"""Errors of the view functions: bad ids and questions a view cannot answer.

Both derive from :class:`pi_lab.errors.PiLabError`, so the CLI, the server and the widget show
their message as it is. Neither is a ``KeyError`` (whose text Python would quote).
"""

from __future__ import annotations

from typing import Any

from pi_lab.errors import PiLabError
from pi_lab.session._text import safe_repr
from pi_lab.view.requests import kind_of

__all__ = ["ViewError", "UnknownEntry", "user_text"]


class ViewError(PiLabError):
    """A view was asked something it cannot answer (wrong argument type, empty search text…)."""


class UnknownEntry(ViewError, LookupError):
    """A node id that names no entry of the session.

    ``str(error)`` names the Python argument (``leaf_id: entry x not found``), for the caller of
    a view function; :attr:`user_text` says the same in a viewer's words, with no argument name
    or Python type, for the requests whose refusals a viewer shows as they are."""

    def __init__(self, entry_id: Any, argument: str = "entry_id", where: str | None = None):
        self.entry_id = entry_id
        self.argument = argument
        if not isinstance(entry_id, str):
            # safe_repr: an id taken from the file can be a list nested 3,000 deep (repr recurses).
            detail = f"{argument} must be an entry id (a string), not {type(entry_id).__name__} {safe_repr(entry_id)}"
        elif not entry_id:
            detail = f"{argument} is empty; pass the id of an entry"
        else:
            detail = f"{argument}: entry {entry_id} not found"
        super().__init__(f"{detail} in {where}" if where else detail)

    @property
    def user_text(self) -> str:
        entry_id = self.entry_id
        if not isinstance(entry_id, str):
            return f"an entry id is text, not {kind_of(entry_id)}"
        if not entry_id:
            return "no entry was named"
        return f"entry {entry_id} is not in this session"


def user_text(error: ViewError) -> str:
    """What a viewer shows for ``error``: :attr:`UnknownEntry.user_text`, else the message."""
    return error.user_text if isinstance(error, UnknownEntry) else str(error)
