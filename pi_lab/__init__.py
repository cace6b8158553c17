"""pi_lab: the pi coding agent's session engine, in Jupyter."""

from __future__ import annotations

from pi_lab.session import SessionManager

__all__ = ["SessionManager"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "pi-lab"}]
