"""The four states a teacher of context engineering points at (seed explainer §1).

``fileEntries`` (every entry, all branches), ``leafId`` (where the next entry hangs),
``current branch`` (root to leaf) and what the model sees (the projection). ``four_states``
puts them side by side in plain text, one short label per entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_lab.session._text import content_preview
from pi_lab.session.display import display_text

__all__ = ["FourStates", "four_states", "entry_label", "message_label"]


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def entry_label(entry: dict[str, Any], width: int = 40) -> str:
    """``<id> <display text>``, as the /tree row would show it."""
    text = display_text(entry) or f"[{entry.get('type')}]"
    return f"{entry.get('id')} {_short(text, width)}"


def message_label(message: dict[str, Any], width: int = 40) -> str:
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        return f"{role}: {_short(str(message.get('summary') or ''), width)}"
    text = content_preview(message.get("content"))
    if role == "bashExecution":
        text = message.get("command", "")
    if role == "system" and not text.strip():
        parts = []
        if message.get("sections"):
            parts.append("sections " + ", ".join(message["sections"]))
        if message.get("toolsAdded"):
            parts.append("tools " + ", ".join(str(t.get("name")) for t in message["toolsAdded"] if isinstance(t, dict)))
        text = "; ".join(parts) or "(empty)"
    return f"{role}: {_short(text, width)}"


def _elide(labels: list[str], limit: int) -> list[str]:
    if len(labels) <= limit:
        return [f"  {label}" for label in labels]
    head, tail = 3, limit - 4
    hidden = len(labels) - head - tail
    return [f"  {label}" for label in labels[:head]] + [f"  … {hidden} more …"] + [f"  {label}" for label in labels[-tail:]]


@dataclass(frozen=True, slots=True)
class FourStates:
    file_entries: list[str]
    leaf_id: str | None
    branch: list[str]
    model_sees: list[str]

    def __str__(self) -> str:
        return self.render()

    def render(self, limit: int = 14) -> str:
        """Plain text; lists longer than ``limit`` show their first and last lines only."""
        lines = [f"file entries ({len(self.file_entries)}):", *_elide(self.file_entries, limit)]
        lines.append(f"leaf: {self.leaf_id}")
        lines += [f"current branch ({len(self.branch)}):", *_elide(self.branch, limit)]
        lines += [f"the model sees ({len(self.model_sees)}):", *_elide(self.model_sees, limit)]
        return "\n".join(lines)

    __repr__ = __str__


def four_states(source: Any, width: int = 40) -> FourStates:
    """The four states of a SessionManager, or of an AgentSession (its live message view)."""
    sm = getattr(source, "session_manager", source)
    messages = source.messages if hasattr(source, "session_manager") else sm.build_session_context().messages
    return FourStates(
        file_entries=[entry_label(e, width) for e in sm.entries],
        leaf_id=sm.leaf_id,
        branch=[entry_label(e, width) for e in sm.get_branch()],
        model_sees=[message_label(m, width) for m in messages],
    )
