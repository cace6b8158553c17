"""What a session is called: its name, else its first user message (pi's ``SessionInfo``), as
the Sessions panel, the viewer's header, its tab and the export's title show it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pi_lab.session._text import content_text

__all__ = ["session_title", "first_user_message", "title_fields", "message_text", "is_injected", "TITLE_CHARS"]

TITLE_CHARS = 300


def session_title(name: str | None, first_message: str) -> str:
    """What a session is called in the panel, on its tab and in the viewer's header: its name
    (the last ``session_info`` entry), else its first user message, as pi's session selector shows."""
    return name or first_message


def message_text(message: Mapping[str, Any]) -> str:
    return content_text(message.get("content"), " ")


def first_user_message(entries: Iterable[Mapping[str, Any]]) -> str:
    """The text of the first user message with text, in file order (``SessionInfo.firstMessage``),
    or ``"(no messages)"``."""
    for entry in entries:
        if entry.get("type") != "message":
            continue
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "user" and not is_injected(entry):
            text = message_text(message)
            if text:
                return text
    return "(no messages)"


def is_injected(entry: Mapping[str, Any]) -> bool:
    """Whether a user message is text Codex put in (its AGENTS.md, the environment), marked so by
    the Codex adapter: no title for the session. pi's entries carry no ``codex`` key."""
    marks = entry.get("codex")
    return isinstance(marks, dict) and bool(marks.get("injected"))


def title_fields(name: str | None, entries: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{"title", "first_message"}`` of a session, for the viewer's state (the same rule as the
    panel's rows)."""
    first = first_user_message(entries)[:TITLE_CHARS]
    return {"title": session_title(name, first), "first_message": first}
