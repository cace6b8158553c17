"""What every other agent's session shares: a read-only ``SessionManager`` of pi-shaped entries.

The adapters (Claude Code, Codex) hold pi-v3-shaped entries in a ``SessionManager`` so every
view reads them unchanged; this base refuses every write in one place, with the adapter's own
error (a :class:`~pi_lab.errors.ReadOnlySession`) and words for what the file is, and does what
both do around their own reading: the manager built from the entries read, the options of pi's
opener accepted and ignored, and ``refresh`` reading a changed file again.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

from pi_lab.errors import ReadOnlySession
from pi_lab.session.manager import SessionManager

__all__ = ["ForeignSession", "ForeignReadOnly", "check_open_options"]

Entry = dict[str, Any]

_Session = TypeVar("_Session", bound="ForeignSession")

#: Options of pi's opener that mean nothing for a file pi_lab only reads.
_IGNORED_OPTIONS = frozenset({"lazy", "read_only", "session_dir", "cwd_override", "uuid_factory", "clock"})


class ForeignReadOnly(ReadOnlySession):
    """A write was asked of another agent's file; subclasses name the file (``this``, as in
    "this Codex rollout") and the kind of file (``files``, as in "Codex rollouts")."""

    this = "this file"
    files = "other agents' files"

    def __init__(self, path: str | os.PathLike[str] | None, action: str = "append"):
        super().__init__(path, action)
        where = self.path or self.this
        self.args = (f"{where}: cannot {action}: {self.files} are never written by pi_lab "
                     "(export the branch to a new pi session instead)",)

    def __str__(self) -> str:
        return str(self.args[0])


def check_open_options(opener: str, refusal: type[ReadOnlySession], path: str | os.PathLike[str],
                       options: dict[str, Any]) -> None:
    """Refuse what an adapter's opener cannot do: an option pi's reader does not have (a
    ``TypeError``, as Python's own for a wrong keyword) and ``read_only=False`` (``refusal``)."""
    unknown = set(options) - _IGNORED_OPTIONS
    if unknown:
        raise TypeError(f"{opener}() got unexpected options: {', '.join(sorted(unknown))}")
    if options.get("read_only") is False:
        raise refusal(os.fspath(path), "open it for writing")


class ForeignSession(SessionManager):
    """A read-only session read from another agent's file. Subclasses set ``agent``,
    ``refusal`` (their ``ReadOnlySession`` subclass), ``described_as`` ("a Claude Code
    session"), build themselves with :meth:`_loaded` and read their file again in
    :meth:`_read_again`; navigation (``branch``) moves the leaf in memory only."""

    refusal: type[ReadOnlySession] = ReadOnlySession
    described_as = "another agent's session"
    #: Attributes ``refresh`` takes from the file read again (besides the entries and leaf).
    _refreshed: tuple[str, ...] = ("skipped_lines", "_foreign_read")

    # Class defaults: SessionManager.__init__ runs (and starts a session) before they are set.
    _foreign_path: str | None = None  # the file read; None until it is
    _foreign_read: tuple[int, int] | None = None  # (size, mtime_ns) of the file when read

    @classmethod
    def _loaded(cls: type[_Session], path: str, header: Entry, entries: list[Entry], *, leaf_id: str | None,
                skipped: list[int], read: tuple[int, int]) -> _Session:
        """The read-only manager of ``entries`` read from ``path`` (absolute), its leaf pinned."""
        sm = cls(header["cwd"], os.path.dirname(path), None, False, preloaded=[header, *entries])
        sm._read_only = True
        sm._foreign_path = path
        sm._foreign_read = read
        sm.skipped_lines = skipped
        sm._pin_leaf(leaf_id)
        return sm

    def _pin_leaf(self, leaf_id: str | None) -> None:
        # The agent's own rule chose it; pinned, pi's rule (the file's last line) never moves it.
        self._leaf_id = leaf_id
        self._leaf_pinned = True

    @property
    def session_file(self) -> str | None:
        return self._foreign_path

    # -- reading again

    def _read_again(self, path: str) -> ForeignSession:
        """The file read again whole, as it was opened (with or without its related files)."""
        raise NotImplementedError

    def _refreshed_leaf(self, fresh: ForeignSession, leaf: str | None, at_end: bool) -> str | None:
        """Where the leaf goes after a refresh; ``leaf`` is where it was, ``at_end`` whether
        that was the last entry of the file. By default it stays, or follows the new end when
        it was at the end or its entry is gone."""
        return fresh._leaf_id if at_end or leaf not in self._by_id else leaf

    def refresh(self) -> list[Entry]:
        """What the agent appended since the read: the file is read again whole (the agent's
        later lines may reshape entries already read) and the entries not seen before are
        returned. The leaf moves as :meth:`_refreshed_leaf` says."""
        if self._foreign_path is None:
            return []
        st = os.stat(self._foreign_path)
        if self._foreign_read == (st.st_size, st.st_mtime_ns):
            return []
        fresh = self._read_again(self._foreign_path)
        before = set(self._by_id)
        leaf = self._leaf_id
        at_end = leaf == (self._file_entries[-1].get("id") if len(self._file_entries) > 1 else None)
        self._file_entries = fresh._file_entries
        self._rebuild_index()
        for name in self._refreshed:
            setattr(self, name, getattr(fresh, name))
        self._pin_leaf(self._refreshed_leaf(fresh, leaf, at_end))
        return [e for e in self._entries_view() if e.get("id") not in before]

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self._session_id} {len(self._by_id)} entries, leaf {self._leaf_id!r}, "
                f"{self._foreign_path}>")

    # -- every write refused

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
        if self._foreign_path is not None:
            self._refuse("start a new session in it")
        return super().new_session(id=id, parent_session=parent_session)
