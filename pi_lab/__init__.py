"""pi_lab: the pi coding agent's session engine, in Jupyter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # editors and type checkers see the public types; at run time they load lazily
    from pi_lab.agent import AgentSession
    from pi_lab.session import SessionManager
    from pi_lab.session.protocol import ReadableSession
    from pi_lab.widget import SessionWidget

__all__ = [
    "SessionManager",
    "AgentSession",
    "SessionWidget",
    "ReadableSession",
    "open",
    "open_session",
    "replay",
]

# Public names resolve lazily so that `import pi_lab.session` (or the CLI) does not pull in
# Jupyter or widget dependencies it does not need.
_LAZY = {
    "SessionManager": ("pi_lab.session", "SessionManager"),
    "AgentSession": ("pi_lab.agent", "AgentSession"),
    "SessionWidget": ("pi_lab.widget", "SessionWidget"),
    "ReadableSession": ("pi_lab.session.protocol", "ReadableSession"),
}


def open(path: str, **options: Any) -> SessionWidget:  # noqa: A001  (pi_lab.open mirrors the built-in on purpose)
    """Open a pi session file in a :class:`SessionWidget` (tree, context, gauge).

    The file is only read (an old format is migrated in memory, nothing is repaired on disk);
    pass ``writable=True``, or allow writes in the viewer, to navigate with summaries, label or
    compact into it. Notes (``notes=``: a path or a ``pi_lab.research.NoteStore``; default
    ``pi-lab-notes.jsonl`` in the current folder) are added in the viewer whether or not the
    session may be written: they live beside it, never in it (``widget.notes``)."""
    from pi_lab.widget import open_session

    return open_session(path, **options)


def open_session(path: str, **options: Any) -> ReadableSession:
    """Open any agent's session file read-only (a :class:`~pi_lab.session.protocol.ReadableSession`).

    The agent is recognised from the file's content: ``.agent`` says which. Nothing is written."""
    from pi_lab.formats import open_session as _open_session

    return _open_session(path, **options)


def replay(session: Any, **settings: Any) -> Any:
    """Replay a session's path under other compaction settings (see :mod:`pi_lab.compaction.replay`).

    ``session`` is a session file's path (any agent's, opened read-only) or an open session."""
    import os

    from pi_lab.compaction.replay import replay as _replay

    if isinstance(session, (str, os.PathLike)):
        session = open_session(os.fspath(session))
    return _replay(session, **settings)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'pi_lab' has no attribute {name!r}")


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "pi-lab"}]
