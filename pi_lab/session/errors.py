"""The engine's lookup errors (both pi_lab errors, and the built-in types they were before)."""

from __future__ import annotations

import os
from typing import Any

from pi_lab.errors import ConcurrentWriteError, PiLabError

__all__ = ["EntryNotFound", "SessionNotFound", "UnfinishedLineError"]


class EntryNotFound(PiLabError, KeyError):
    """An id that is not in the session (pi: ``Entry <id> not found``)."""

    def __init__(self, entry_id: Any):
        self.entry_id = entry_id
        super().__init__(f"Entry {entry_id} not found")

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return self.args[0]


class SessionNotFound(PiLabError, FileNotFoundError):
    pass


class UnfinishedLineError(ConcurrentWriteError):
    """The file ends with a line another process has not finished (no newline yet); pi_lab
    never writes after it, whatever its age: a write would join it or, ending it, break the
    entry its writer is still writing. Nothing was written."""

    def __init__(self, path: str | os.PathLike[str], pending: int, new_entries: list[dict[str, Any]] | None = None,
                 *, at_open: bool = False):
        super().__init__(path, "another writer is in the middle of a line", new_entries)
        self.pending = pending
        picked = len(self.new_entries)
        if at_open:  # an old format to rewrite: the rewrite would end (or drop) that line
            done = "nothing written. Its format must be rewritten, which would end the line"
            repair = ("SessionManager.open(path, read_only=True) reads it as it is, and its make_writable() "
                      "(see write_plan()) ends the line and rewrites the file")
        else:
            done = f"{picked} new entr{'y' if picked == 1 else 'ies'} picked up, nothing appended"
            repair = "sm.end_unfinished_line() ends it with a newline (as pi does on open), then appends can go after it"
        self.args = (
            f"{self.path}: another writer is in the middle of a line ({pending} bytes, no newline yet); "
            f"{done}. Retry once it is finished; if its writer is gone, {repair}.",
        )

    def __str__(self) -> str:
        return self.args[0]
