"""The four states a teacher of context engineering points at (seed explainer §1).

``fileEntries`` (every entry, all branches), ``leafId`` (where the next entry hangs),
``current branch`` (root to leaf) and what the model sees (the projection). ``four_states``
puts them side by side in plain text, one short label per entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_lab.session.navigation import display_text

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
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                parts.append(block.get("text", ""))
            elif block.get("type") == "toolCall":
                parts.append(f"<call {block.get('name')}>")
        text = " ".join(parts)
    else:
        text = ""
    if role == "bashExecution":
        text = message.get("command", "")
    return f"{role}: {_short(text, width)}"


@dataclass(frozen=True, slots=True)
class FourStates:
    file_entries: list[str]
    leaf_id: str | None
    branch: list[str]
    model_sees: list[str]

    def __str__(self) -> str:
        lines = [f"file entries ({len(self.file_entries)}):"]
        lines += [f"  {label}" for label in self.file_entries]
        lines.append(f"leaf: {self.leaf_id}")
        lines.append(f"current branch ({len(self.branch)}):")
        lines += [f"  {label}" for label in self.branch]
        lines.append(f"the model sees ({len(self.model_sees)}):")
        lines += [f"  {label}" for label in self.model_sees]
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
