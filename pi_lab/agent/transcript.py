"""Which session entry each of the agent's messages came from (pi's finalized context).

The agent loop works on message dicts; the session file on entries. Compaction checks and
recovery omissions need the entry behind a message, so every message taken from the
projection or persisted from an event is remembered by identity here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from pi_lab.session.entries import Message

if TYPE_CHECKING:
    from pi_lab.agent.loop import Agent
    from pi_lab.session import SessionManager

__all__ = ["Transcript", "OMISSION_WITHOUT_SOURCE"]


OMISSION_WITHOUT_SOURCE = "Cannot persist recovery omission because a projected message has no source entry"


class TranscriptOwner(Protocol):
    """What the transcript reads of its AgentSession: the session file and the loop's messages."""

    session_manager: SessionManager
    agent: Agent


class Transcript:
    def __init__(self, owner: TranscriptOwner, emit: Callable[[dict[str, Any]], None]):
        self._owner = owner
        self._emit = emit
        self._entry_of: dict[int, tuple[Message, str | None]] = {}

    def remember(self, message: Message, entry_id: str | None) -> None:
        self._entry_of[id(message)] = (message, entry_id)

    def forget_all(self) -> None:
        self._entry_of.clear()

    def entry_id_of(self, message: Message) -> str | None:
        """``_findPersistedMessageEntryId``: identity map, then the branch, then position."""
        known = self._entry_of.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        sm = self._owner.session_manager
        for entry in reversed(sm.get_branch()):
            if entry.get("type") == "message" and entry.get("message") is message:
                return entry["id"]
        try:
            position = next(i for i, m in enumerate(self._owner.agent.messages) if m is message)
        except StopIteration:
            return None
        flat: list[str | None] = []
        for item in sm.build_session_projection().entries:
            flat.extend(item.source.get("id") for _ in item.messages)
        if position < len(flat):
            return flat[position]
        return None

    def project(self) -> list[Message]:
        """The projection's messages, each remembered with its source entry."""
        projection = self._owner.session_manager.build_session_projection()
        for item in projection.entries:
            for message in item.messages:
                self.remember(message, item.source.get("id"))
        return list(projection.messages)

    def refresh(self) -> None:
        """The agent continues from the current projection (after any write to the branch)."""
        self._owner.agent.messages = self.project()

    def omit_recovery_attempt(self, assistant: Message) -> None:
        """Persistently drop a failed attempt (and its tool results) from the model's view."""
        call_ids = {b.get("id") for b in assistant.get("content") or []
                    if isinstance(b, dict) and b.get("type") == "toolCall"}
        assistant_id = self.entry_id_of(assistant)
        messages = self._owner.agent.messages
        start = next((i for i, m in enumerate(messages)
                      if m is assistant or (assistant_id is not None and self.entry_id_of(m) == assistant_id)), None)
        targets: list[Message] = [assistant]
        if start is not None:
            for message in messages[start + 1:]:
                if message.get("role") == "assistant":
                    break
                if message.get("role") == "toolResult" and message.get("toolCallId") in call_ids:
                    targets.append(message)
        resolved: list[str] = []
        for target in targets:
            entry_id = self.entry_id_of(target)
            if entry_id is None:
                if any(m is target for m in messages):
                    raise RuntimeError(OMISSION_WITHOUT_SOURCE)  # an invariant broken: a bug, not a refusal
                continue
            resolved.append(entry_id)
        sm = self._owner.session_manager
        for entry_id in resolved:
            edit_id = sm.append_context_edit(entry_id, None)
            self._emit({"type": "entry_appended", "entry": sm.get_entry(edit_id)})
        self.refresh()
