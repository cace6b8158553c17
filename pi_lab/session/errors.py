"""The engine's lookup errors (both pi_lab errors, and the built-in types they were before)."""

from __future__ import annotations

from typing import Any

from pi_lab.errors import PiLabError

__all__ = ["EntryNotFound", "SessionNotFound"]


class EntryNotFound(PiLabError, KeyError):
    """An id that is not in the session (pi: ``Entry <id> not found``)."""

    def __init__(self, entry_id: Any):
        self.entry_id = entry_id
        super().__init__(f"Entry {entry_id} not found")

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return self.args[0]


class SessionNotFound(PiLabError, FileNotFoundError):
    pass
