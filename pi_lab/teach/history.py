"""A session as it was after its k-th line: for pages that read as a story from top to bottom.

pi appends to a session file and never rewrites it, so the session "as it was" after k lines is
the file cut after line k, opened: the entries of those lines, and the leaf where pi's rule puts
it when such a file is read (the last entry read). :func:`session_at` builds that from the
lines already in memory, without reading or writing the file again; :func:`frozen` shows it in a
:class:`~pi_lab.widget.SessionWidget` (read-only), so a question's widget keeps showing the state
the question talks about after Run All.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from pi_lab.errors import PiLabError

__all__ = ["TeachError", "frozen", "session_at"]


class TeachError(PiLabError, ValueError):
    """A teaching helper was given something it cannot use (a step out of range, a choice list
    that does not hold the answer, a session that is not pi's)."""


def _manager(source: Any) -> Any:
    """The SessionManager of a path, a manager, an AgentSession or a SessionWidget."""
    if isinstance(source, (str, os.PathLike)):
        from pi_lab.session import SessionManager

        # read-only: inspecting never writes the user's file; bodies now, they are all copied
        return SessionManager.open(source, read_only=True, lazy=False)
    inner = getattr(source, "session_manager", None)
    if inner is not None:
        source = inner
    if not hasattr(source, "file_entries") or not hasattr(source, "get_branch"):
        raise TeachError(f"session_at needs a pi session (a path, a SessionManager, an AgentSession or a "
                         f"SessionWidget), not {type(source).__name__}")
    return source


def session_at(session: Any, k: int) -> Any:
    """The session as it was after the first ``k`` lines of its file (the header is line 1).

    A read-only in-memory :class:`~pi_lab.session.SessionManager`: the entries of those lines in
    file order, the leaf on the last one (pi's rule when it reads a file). Equal to opening the
    file cut after line ``k`` (tests/teach/test_history.py), except that a version-1 file's
    migrated ids are the full session's (so a node id means the same entry in both). Lines that
    were not JSON objects are not counted. ``session``: a path, a SessionManager, an
    AgentSession or a SessionWidget; it is only read.
    """
    if k.__class__ is not int or k < 1:
        raise TeachError(f"k counts the file's lines from the header (1), not {k!r}")
    sm = _manager(session)
    lines = sm.file_entries
    if k > len(lines):
        raise TeachError(f"the session has {len(lines)} lines, so there is no line {k}")
    from pi_lab.session import SessionManager

    # Copies: the frozen session must not share dicts the live one may change (labels, a
    # migration in place) and must not change them either.
    entries = copy.deepcopy(lines[:k])
    frozen_sm = SessionManager.in_memory(sm.cwd, entries=entries)
    # Nothing may be appended to a past state: the widget then offers no write action.
    frozen_sm._read_only = True
    return frozen_sm


def frozen(source: Any, step: int, **options: Any) -> Any:
    """A read-only :class:`~pi_lab.widget.SessionWidget` showing :func:`session_at` ``(source, step)``.

    ``source``: a SessionWidget (its context window and compaction settings are kept), a path,
    a SessionManager or an AgentSession. ``options`` go to the widget (``context_window=``...).
    """
    from pi_lab.widget import SessionWidget

    if isinstance(source, SessionWidget):
        for name in ("context_window", "reserve_tokens", "keep_recent_tokens"):
            options.setdefault(name, getattr(source, name))
    return SessionWidget(session_at(source, step), **options)
