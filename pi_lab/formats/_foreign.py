"""What every other agent's session shares: a read-only ``SessionManager`` of pi-shaped entries.

The adapters (Claude Code, Codex) hold pi-v3-shaped entries in a ``SessionManager`` so every
view reads them unchanged; this base refuses every write in one place, with the adapter's own
error (a :class:`~pi_lab.errors.ReadOnlySession`) and words for what the file is.
"""

from __future__ import annotations

from typing import Any

from pi_lab.errors import ReadOnlySession
from pi_lab.session.manager import SessionManager

__all__ = ["ForeignSession"]

Entry = dict[str, Any]


class ForeignSession(SessionManager):
    """A read-only session read from another agent's file. Subclasses set ``agent``,
    ``refusal`` (their ``ReadOnlySession`` subclass), ``described_as`` ("a Claude Code
    session") and return the file from ``session_file``; navigation (``branch``) moves the
    leaf in memory only."""

    refusal: type[ReadOnlySession] = ReadOnlySession
    described_as = "another agent's session"

    def _refuse(self, action: str) -> None:
        raise self.refusal(self.session_file, action)

    def _append(self, entry: Entry) -> str:
        self._refuse(f"append a {entry.get('type')} entry")
        raise AssertionError  # unreachable: _refuse raises

    def branch_with_summary(self, *args: Any, **kwargs: Any) -> str:
        self._refuse("append a branch summary")
        raise AssertionError

    def make_writable(self) -> None:
        self._refuse("make it writable")

    def write_plan(self) -> str:
        return f"{self.session_file}: {self.described_as}; pi_lab never writes it."

    def create_branched_session(self, leaf_id: str) -> str | None:
        self._refuse("fork it in place")
        raise AssertionError

    def new_session(self, id: str | None = None, parent_session: str | None = None) -> str | None:
        # SessionManager.__init__ starts a session before the adapter has read its file.
        if getattr(self, "_foreign_loaded", False):
            self._refuse("start a new session in it")
        return super().new_session(id=id, parent_session=parent_session)
