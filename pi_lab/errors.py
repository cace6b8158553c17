"""pi_lab's own errors: each carries a message a user can act on.

Every class derives from :class:`PiLabError`, so a caller (CLI, server, widget) can catch
pi_lab's errors in one place and show their message as it is.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["PiLabError", "Refused", "ReadOnlySession", "ConcurrentWriteError", "NotARegularFile"]


class PiLabError(Exception):
    """Root of the errors pi_lab raises on purpose (the message is meant for the user)."""


class Refused(PiLabError, RuntimeError):
    """pi_lab declined to do something in the current state; nothing changed.

    The message says why and what to do (pi's own words where pi refuses the same thing, e.g.
    "Wait for the current response to finish ..."). A viewer shows it as a refusal; any other
    exception is a failure or a bug. Also a ``RuntimeError``, the type these refusals had before.
    """


class ReadOnlySession(PiLabError):
    """An append on a session opened read-only; nothing was written."""

    def __init__(self, path: str | os.PathLike[str] | None, action: str = "append"):
        self.path = str(path) if path is not None else None
        where = self.path or "this session"
        super().__init__(
            f"{where} was opened read-only; cannot {action}. "
            "Call sm.make_writable() (see sm.write_plan()) or open it with read_only=False to write."
        )


class ConcurrentWriteError(PiLabError):
    """The file changed on disk since pi_lab last read or wrote it (another writer).

    ``new_entries`` holds the entries picked up from the other writer before raising (the
    manager already contains them); nothing of pi_lab's was written.
    """

    def __init__(self, path: str | os.PathLike[str], what: str, new_entries: list[dict[str, Any]] | None = None):
        self.path = str(path)
        self.what = what
        self.new_entries: list[dict[str, Any]] = list(new_entries or [])
        picked = len(self.new_entries)
        super().__init__(
            f"{self.path} was changed by another writer since pi_lab last read it ({what}); "
            f"{picked} new entr{'y' if picked == 1 else 'ies'} picked up, nothing appended. "
            "Retry the append to write after them, or set sm.allow_concurrent_writes = True."
        )


class NotARegularFile(PiLabError):
    """A FIFO, device, socket or directory where a session file was expected."""

    def __init__(self, path: str | os.PathLike[str], kind: str):
        self.path = str(path)
        self.kind = kind
        super().__init__(f"{self.path} is a {kind}, not a regular file; a session file must be a regular file")


def where_it_failed(error: BaseException) -> str:
    """`` at file:line in fn`` for the innermost frame of ``error``, and `` (from …)`` for the
    innermost frame of pi_lab's own code when that is a different one (a library's frame says
    little without it); empty when the error carries no traceback. Bug reports of the CLI, the
    server and the corpus name a bug's place with it."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if f"{os.sep}pi_lab{os.sep}" in f.filename]

    def name(frame: traceback.FrameSummary) -> str:
        return f"{os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"

    where = f" at {name(frames[-1])}" if frames else ""
    if ours and ours[-1] is not frames[-1]:
        where += f" (from {name(ours[-1])})"
    return where
