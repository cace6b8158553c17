"""The session header every viewer shows (the ``session`` state of the viewer core,
src_frontend/core/transport.ts ``SessionInfo``), built in one place for the notebook widget, the
JupyterLab viewer and the static export. Each host passes only what is its own: the name it
gives the file, whether it follows the file, whether it may write, and what answers new prompts.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pi_lab.session.protocol import ReadableSession
from pi_lab.view.actions import WRITE_ACTIONS
from pi_lab.view.gauge import recorded_model
from pi_lab.view.titles import title_fields

__all__ = ["session_header", "agent_facts", "HeaderSession"]


@runtime_checkable
class HeaderSession(ReadableSession, Protocol):
    """What the header reads of a session beyond the protocol (pi's SessionManager and the
    adapters, which are read-only SessionManagers, have both)."""

    def get_entry_count(self) -> int: ...  # entries by distinct id, as pi counts them

    def write_plan(self) -> str: ...  # the adapter's words for why its file is not written


def agent_facts(sm: HeaderSession) -> dict[str, Any]:
    """``agent`` and, for another agent's session, ``write_refusal``: why a view offers nothing
    that writes (its adapter's ``write_plan``, without the file's path), for the session payload."""
    agent = sm.agent
    if agent == "pi":
        if sm.read_only and not sm.session_file:
            # a moment of a session held in memory (pi_lab.teach.session_at): no file to allow writing to
            return {"agent": "pi", "write_refusal": "a copy held in memory (a past moment); there is no file to write"}
        return {"agent": "pi", "write_refusal": None}
    return {"agent": agent, "write_refusal": sm.write_plan().removeprefix(f"{sm.session_file}: ")}


def session_header(sm: HeaderSession, *, file: str | None, following: bool, read_only: bool,
                   answering_model: str | None = None) -> dict[str, Any]:
    """What the viewer's header shows of ``sm``: its id, file (as the host names it), name and
    title (its name, else its first user message), working folder, entry count, the model its own
    file records on the current branch (None: "model unknown"), the agent and why another agent's
    file is not written, and the host's facts."""
    return {
        **agent_facts(sm),
        "id": sm.session_id,
        "file": file,
        "name": sm.get_session_name(),
        **title_fields(sm.get_session_name(), sm.get_entries()),
        "cwd": sm.cwd,
        "entries": sm.get_entry_count(),
        "model": recorded_model(sm),
        "answering_model": answering_model,
        "read_only": read_only,
        "following": following,
        "write_actions": sorted(WRITE_ACTIONS),  # the requests a read-only viewer refuses
    }
