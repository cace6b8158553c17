"""The entry model: what one line of a session file holds, and the questions every view asks.

Each entry kind of pi's format (session-format.md §5) has a ``TypedDict`` with pi's on-disk
keys. They document the shape; the engine never trusts it. A file is untrusted input and any
field can hold any JSON value, so the code works on the alias :data:`Entry` (a plain dict)
and the predicates here answer for *every* value: a ``type``, ``role`` or ``id`` that is a
list or an object is simply not equal to any string (pi compares with ``===`` and keys its
maps by value, so an object never matches an id).

The shared predicates are the single answer to:

* :func:`has_visible_text` — does message content show text (pi's tree selector, with
  JavaScript's ``trim``);
* :func:`display_kind` — how an entry's row is drawn (the widget's kind names);
* :func:`is_error_entry` — a failed tool result or a failed/aborted assistant reply;
* :func:`message_of` / :func:`str_key` — the message of a ``message`` entry, and an id value
  usable as a dict key (strings only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from pi_lab.session._js import js_trim

__all__ = [
    "Entry",
    "EntryView",
    "Message",
    "MessageView",
    "ENTRY_TYPES",
    "SETTINGS_ENTRY_TYPES",
    "SessionHeader",
    "MessageEntry",
    "ThinkingLevelChangeEntry",
    "ModelChangeEntry",
    "UsageEntry",
    "CompactionEntry",
    "BranchSummaryEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "LabelEntry",
    "SessionInfoEntry",
    "ContextEditEntry",
    "has_visible_text",
    "display_kind",
    "is_error_entry",
    "message_of",
    "str_key",
]

Entry = dict[str, Any]
"""One parsed line of a session file, as the engine holds it (any JSON object)."""

EntryView = Mapping[str, Any]
"""An entry as a read-only function takes it (compaction, previews): any mapping."""

Message = dict[str, Any]
"""pi's AgentMessage as the engine holds it (a parsed JSON object: role, content, usage...)."""

MessageView = Mapping[str, Any]
"""A message as a read-only function takes it (compaction's cut points and summaries)."""


class SessionHeader(TypedDict, total=False):
    type: Literal["session"]
    version: int
    id: str
    timestamp: str
    cwd: str
    parentSession: str


class _Common(TypedDict, total=False):
    id: str
    parentId: str | None
    timestamp: str


class MessageEntry(_Common, total=False):
    type: Literal["message"]
    message: dict[str, Any]


class ThinkingLevelChangeEntry(_Common, total=False):
    type: Literal["thinking_level_change"]
    thinkingLevel: str


class ModelChangeEntry(_Common, total=False):
    type: Literal["model_change"]
    provider: str
    modelId: str


class UsageEntry(_Common, total=False):
    type: Literal["usage"]
    kind: str
    provider: str
    model: str
    usage: dict[str, Any]
    note: str


class _Summary(_Common, total=False):
    """The fields both summary entries carry (a compaction's and a branch's)."""

    summary: str
    details: Any
    usage: dict[str, Any]
    fromHook: bool


class CompactionEntry(_Summary, total=False):
    type: Literal["compaction"]
    firstKeptEntryId: str
    firstKeptEntryIndex: int  # v1 files only; migrated to firstKeptEntryId
    tokensBefore: float
    systemMessage: dict[str, Any]


class BranchSummaryEntry(_Summary, total=False):
    type: Literal["branch_summary"]
    fromId: str


class CustomEntry(_Common, total=False):
    type: Literal["custom"]
    customType: str
    data: Any


class CustomMessageEntry(_Common, total=False):
    type: Literal["custom_message"]
    customType: str
    content: str | list[dict[str, Any]]
    display: bool
    details: Any


class LabelEntry(_Common, total=False):
    type: Literal["label"]
    targetId: str
    label: str


class SessionInfoEntry(_Common, total=False):
    type: Literal["session_info"]
    name: str


class ContextEditEntry(_Common, total=False):
    type: Literal["context_edit"]
    targetId: str
    replacement: dict[str, Any] | None


ENTRY_TYPES: tuple[str, ...] = (
    "message",
    "thinking_level_change",
    "model_change",
    "usage",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "context_edit",
)
"""The entry kinds pi 1.6.0 writes (any other ``type`` is an unknown entry, kept as a node)."""

SETTINGS_ENTRY_TYPES = frozenset(
    {"label", "context_edit", "custom", "model_change", "thinking_level_change", "session_info"}
)
"""Entry types hidden by the ``default`` and ``no-tools`` filters of pi's tree list (§13.2)."""


def str_key(value: Any) -> str | None:
    """``value`` when it can be an id (a string), else ``None``.

    Ids and parent ids are looked up in dicts keyed by string ids; a number, list or object
    in such a field never matches (pi's ``Map.get`` with an object key finds nothing), and
    an unhashable value must never reach a dict lookup.
    """
    return value if value.__class__ is str or isinstance(value, str) else None


def message_of(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The message of a ``message`` entry, or ``None`` (other kinds, or a non-object message)."""
    if entry.get("type") != "message":
        return None
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def has_visible_text(content: Any) -> bool:
    """Does message content show any text? A string, or a text block whose text is not
    empty after JavaScript's ``trim`` (pi's tree selector; ``"\\ufeff"`` is white space,
    ``"\\x1c"`` and ``"\\x85"`` are not)."""
    if isinstance(content, str):
        return js_trim(content) != ""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and js_trim(text) != "":
                    return True
    return False


_ENTRY_KINDS = {
    "branch_summary": "branch_summary",
    "compaction": "compaction",
    "custom_message": "custom_message",
    "model_change": "model_change",
    "thinking_level_change": "thinking_change",
    "label": "label",
    "session_info": "session_info",
    "context_edit": "context_edit",
    "custom": "custom",
    "usage": "usage",
}
_ROLE_KINDS = {"user": "user", "toolResult": "tool_result", "bashExecution": "bash", "system": "system"}


def _assistant_kind(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if has_visible_text(content):
        return "assistant"
    if message.get("stopReason") in ("error", "aborted") or message.get("errorMessage"):
        return "assistant_error"
    blocks = content if isinstance(content, list) else []
    if any(isinstance(b, Mapping) and b.get("type") == "toolCall" for b in blocks):
        return "tool_call"
    if any(isinstance(b, Mapping) and b.get("type") == "thinking" for b in blocks):
        return "thinking"
    return "assistant"


def display_kind(entry: Mapping[str, Any]) -> str:
    """How an entry's row is drawn: ``"user"``, ``"assistant"``, ``"tool_call"``,
    ``"assistant_error"``, ``"compaction"``, … , ``"other_message"`` for a role pi does not
    know and ``"unknown"`` for an unknown (or non-string) type. Never raises on odd values."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, Mapping):
            return "unknown"
        role = message.get("role")
        if role == "assistant":
            return _assistant_kind(message)
        return _ROLE_KINDS.get(role, "other_message") if isinstance(role, str) else "other_message"
    return _ENTRY_KINDS.get(kind, "unknown") if isinstance(kind, str) else "unknown"


def is_error_entry(entry: Mapping[str, Any]) -> bool:
    """A failed tool result (``isError``) or an assistant reply that failed or was aborted."""
    if entry.get("type") != "message":
        return False
    message = entry.get("message")
    if not isinstance(message, Mapping):
        return False
    role = message.get("role")
    if role == "toolResult":
        return bool(message.get("isError"))
    if role == "assistant":
        return message.get("stopReason") in ("error", "aborted")
    return False
