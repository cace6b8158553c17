"""What the model sees: the projection of one root-to-leaf path (tree-and-context.md §5–§6).

Everything here is a pure function of (entries, leaf). The session manager calls these
with its own entries and leaf; the widget calls them with any other leaf to show what the
model saw at that node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from pi_lab.session._gc import collector_paused
from pi_lab.session._text import content_text
from pi_lab.session.entries import Entry, Message
from pi_lab.session.ids import parse_iso_ms
from pi_lab.session.tree import UNSET, BranchPath, build_session_path, index_by_id

__all__ = [
    "ProjectedEntry",
    "SessionProjection",
    "SessionContext",
    "entry_to_messages",
    "branch_summary_message",
    "compaction_summary_message",
    "project_with_edit",
    "build_context_entries",
    "context_entries_of_path",
    "build_session_projection",
    "build_session_context",
    "get_context_settings",
    "replay_system_state",
    "parse_iso_ms",
    "EDITABLE_ROLES",
]


EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
_EMPTY_LIST_ROLES = frozenset({"user", "assistant", "toolResult"})


@dataclass(frozen=True, slots=True)
class ProjectedEntry:
    """One context entry and the messages it contributes (possibly none)."""

    source: dict[str, Any]
    messages: list[Message]

    @property
    def source_entry(self) -> dict[str, Any]:
        return self.source


@dataclass(frozen=True, slots=True)
class SessionContext:
    messages: list[Message]
    thinking_level: str
    model: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class SessionProjection:
    entries: list[ProjectedEntry]
    messages: list[Message]
    thinking_level: str
    model: dict[str, Any] | None

    def context(self) -> SessionContext:
        return SessionContext(self.messages, self.thinking_level, self.model)


def _ms(entry: Entry) -> float | int:
    return parse_iso_ms(entry.get("timestamp"))


def branch_summary_message(entry: Entry) -> Message:
    """The ``branchSummary`` message of a ``branch_summary`` entry (key order as pi writes it)."""
    return {"role": "branchSummary", "summary": entry.get("summary"), "fromId": entry.get("fromId"), "timestamp": _ms(entry)}


def compaction_summary_message(entry: Entry) -> Message:
    """The ``compactionSummary`` message of a ``compaction`` entry (key order as pi writes it)."""
    return {
        "role": "compactionSummary",
        "summary": entry.get("summary"),
        "tokensBefore": entry.get("tokensBefore"),
        "timestamp": _ms(entry),
    }


def entry_to_messages(entry: Entry) -> list[Message]:
    """The un-edited messages one entry contributes (tree-and-context.md §6.2)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return []
        # Session files are parsed without validation: old versions, forks and hand edits
        # can hold messages with null content, which providers would reject.
        if message.get("content") is None:
            role = message.get("role")
            if role == "system":
                return [{**message, "content": ""}]
            if isinstance(role, str) and role in _EMPTY_LIST_ROLES:  # an odd role is kept as it is
                return [{**message, "content": []}]
        return [message]
    if kind == "custom_message":
        content = entry.get("content")
        out: Message = {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": [] if content is None else content,
            "display": entry.get("display"),
        }
        if "details" in entry:
            out["details"] = entry["details"]
        out["timestamp"] = _ms(entry)
        return [out]
    if kind == "branch_summary":
        if not entry.get("summary"):
            return []  # pi projects nothing for an empty summary
        return [branch_summary_message(entry)]
    if kind == "compaction":
        summary_message = compaction_summary_message(entry)
        snapshot = entry.get("systemMessage")
        if snapshot:
            return [snapshot, summary_message]
        return [summary_message]
    return []


def _normalise_replacement(content: Any, role: Any) -> Any:
    if isinstance(content, str) and role in ("assistant", "toolResult"):
        return [{"type": "text", "text": content}]
    return content


def project_with_edit(entry: Entry, edit: Entry | None) -> list[Message]:
    """The messages of ``entry`` with the latest ``context_edit`` for it applied."""
    messages = entry_to_messages(entry)
    if edit is None:
        return messages
    replacement = edit.get("replacement")
    if replacement is None:
        return []
    if not isinstance(replacement, dict) or "content" not in replacement:
        return messages
    content = replacement["content"]
    out: list[Message] = []
    for message in messages:
        role = message.get("role")
        if isinstance(role, str) and role in EDITABLE_ROLES:  # pi compares roles with ===
            copy = dict(message)
            copy["content"] = _normalise_replacement(content, role)
            out.append(copy)
        else:
            out.append(message)
    return out


def build_context_entries(entries: list[Entry], leaf_id: Any = UNSET, by_id: Mapping[str, Entry] | None = None) -> list[Entry]:
    """The path entries that feed the model: latest compaction first, then its kept tail."""
    path = build_session_path(entries, leaf_id, by_id)
    return context_entries_of_path(path)


def context_entries_of_path(path: Sequence[Entry], kinds: list[Any] | None = None) -> list[Entry]:
    """:func:`build_context_entries` for an already computed root-to-leaf path: its latest
    compaction, then the kept entries before it (system messages there left out) and every
    entry after it; the whole path when it holds no compaction. ``kinds``: each entry's
    ``type`` from the leaf back, when the caller has them (a faster search)."""
    compaction_index = -1
    if kinds is not None:
        compaction_index = _last_index(kinds, "compaction")
    else:
        for i in range(len(path) - 1, -1, -1):
            if path[i].get("type") == "compaction":
                compaction_index = i
                break
    if compaction_index < 0:
        return list(path)
    compaction = path[compaction_index]
    first_kept = compaction.get("firstKeptEntryId")
    result = [compaction]
    kept_from = -1
    # Ids on a walked path are unique, so searching back from the checkpoint finds the same
    # entry as pi's forward search, in time proportional to the kept region only.
    for i in range(compaction_index - 1, -1, -1):
        if path[i].get("id") == first_kept:
            kept_from = i
            break
    if kept_from >= 0:
        for entry in path[kept_from:compaction_index]:
            # System deltas before the checkpoint are carried by its systemMessage snapshot.
            if entry.get("type") == "message" and isinstance(entry.get("message"), dict) and entry["message"].get("role") == "system":
                continue
            result.append(entry)
    result.extend(path[compaction_index + 1 :])
    return result


def get_context_settings(path: Sequence[Entry], kinds: list[Any] | None = None) -> tuple[str, dict[str, Any] | None]:
    """Thinking level and model restored from the whole path (tree-and-context.md §5).

    ``kinds``: each entry's ``type`` (from :func:`_kinds`), when the caller has them."""
    # The last of each kind wins, so scan from the leaf backwards and stop once both are known.
    thinking_level: Any = UNSET
    model: Any = UNSET
    stop = -1
    if kinds is not None:
        # The latest thinking-level change and model change are found at C speed (a session
        # without one would otherwise be walked whole); the walk below then only looks for an
        # assistant reply after the latest model change.
        at = _last_index(kinds, "thinking_level_change")
        if at >= 0:
            thinking_level = path[at].get("thinkingLevel")
        stop = _last_index(kinds, "model_change")
        if thinking_level is UNSET:
            thinking_level = "off"  # none on the path: the walk must not look for one
    for i in range(len(path) - 1, stop, -1):
        entry = path[i]
        kind = entry.get("type")
        if kind == "message":
            if model is UNSET:
                message = entry.get("message")
                if isinstance(message, dict) and message.get("role") == "assistant":
                    model = _model_ref(message, "provider", "model")
                    if thinking_level is not UNSET:
                        break
        elif kind == "thinking_level_change":
            if thinking_level is UNSET:
                thinking_level = entry.get("thinkingLevel")
                if model is not UNSET:
                    break
        elif kind == "model_change" and model is UNSET:
            model = _model_ref(entry, "provider", "modelId")
            if thinking_level is not UNSET:
                break
    if model is UNSET and stop >= 0:
        model = _model_ref(path[stop], "provider", "modelId")  # no reply after the latest change
    return ("off" if thinking_level is UNSET else thinking_level), (None if model is UNSET else model)


def _model_ref(source: dict[str, Any], provider_key: str, model_key: str) -> dict[str, Any]:
    # Absent fields stay absent (JavaScript's undefined), so the result serialises as pi's.
    ref: dict[str, Any] = {}
    if provider_key in source:
        ref["provider"] = source[provider_key]
    if model_key in source:
        ref["modelId"] = source[model_key]
    return ref


def build_session_projection(
    entries: list[Entry], leaf_id: Any = UNSET, by_id: Mapping[str, Entry] | None = None
) -> SessionProjection:
    """Context entries, each with its (edited) messages, plus model and thinking level."""
    path = build_session_path(entries, leaf_id, by_id)
    return project_path(path)


def context_edits(context_entries: list[Entry]) -> dict[str, Entry]:
    """The context edit in force for each target id: the last one in path order wins (a
    non-string ``targetId`` names no entry)."""
    edits: dict[str, Entry] = {}
    for entry in context_entries:
        if entry.get("type") == "context_edit":
            target = entry.get("targetId")
            if isinstance(target, str):
                edits[target] = entry
    return edits


def project_path(path: Sequence[Entry], *, sources: bool = True) -> SessionProjection:
    """:func:`build_session_projection` for an already computed root-to-leaf path.

    ``sources=False`` leaves ``entries`` empty (for a caller that wants the messages only:
    :meth:`SessionManager.build_session_context`; one object less per projected entry)."""
    # Each entry's type, read at C speed when the path is a list of dicts (what a branch is),
    # so that the scans below for the latest compaction, settings and edits cost a list search
    # each instead of a Python walk of the path (a 1,000,000-entry branch: 0.45 s of walks).
    kinds = _kinds(path)
    thinking_level, model = get_context_settings(path, kinds)
    context_entries = context_entries_of_path(path, kinds)
    edits = context_edits(context_entries) if kinds is None or "context_edit" in kinds else {}
    # A million projected entries and their lists would set off full collections that rescan
    # every young object; nothing made here forms a cycle.
    with collector_paused(len(context_entries)):
        return _project(context_entries, edits, thinking_level, model, sources)


def _kinds(path: Any) -> list[Any] | None:
    """The ``type`` of every entry of ``path`` (a plain list of dicts) from the leaf back, or
    ``None`` for any other sequence (a lazy session's path: reading it whole would parse every
    body)."""
    if path.__class__ is not list and path.__class__ is not BranchPath:
        return None
    try:
        kinds = list(map(dict.get, path, repeat("type")))
    except TypeError:  # an entry that is not a dict (odd data handed in): the general scans
        return None
    kinds.reverse()
    return kinds


def _last_index(kinds: list[Any], kind: str) -> int:
    """The index in the path of the last entry of type ``kind`` (``kinds`` from :func:`_kinds`;
    ``==`` as the walks compare), or -1."""
    try:
        return len(kinds) - 1 - kinds.index(kind)
    except ValueError:
        return -1


def _project(context_entries: list[Entry], edits: dict[str, Entry], thinking_level: Any, model: Any,
             sources: bool = True) -> SessionProjection:
    projected: list[ProjectedEntry] = []
    messages: list[Message] = []
    add_projected, add_message = projected.append, messages.append
    for i, entry in enumerate(context_entries):
        kind = entry.get("type")
        if kind == "message":
            # The line pi writes for nearly every entry, decided here without the general
            # rules' two calls (a kept region of 1,000,000 messages spent 1.2 s in them): a
            # message object with content, no edit in force. Anything else goes below.
            message = entry.get("message")
            if type(message) is dict and message.get("content") is not None:
                entry_id = entry.get("id")
                if not edits or not isinstance(entry_id, str) or entry_id not in edits:
                    if sources:
                        add_projected(ProjectedEntry(entry, [message]))
                    add_message(message)
                    continue
        if i > 0 and kind == "compaction":
            produced: list[Message] = []  # an older checkpoint inside the kept range
        else:
            entry_id = entry.get("id")
            produced = project_with_edit(entry, edits.get(entry_id) if isinstance(entry_id, str) else None)
        if sources:
            add_projected(ProjectedEntry(entry, produced))
        messages.extend(produced)
    return SessionProjection(projected, messages, thinking_level, model)


def build_session_context(
    entries: list[Entry], leaf_id: Any = UNSET, by_id: Mapping[str, Entry] | None = None
) -> SessionContext:
    return build_session_projection(entries, leaf_id, by_id).context()


def _system_text(content: Any) -> str:
    return content_text(content, "\n")


def replay_system_state(messages: list[Message]) -> Message | None:
    """The current system state from every system message in order (session-format.md §6.6)."""
    pieces: list[str] = []
    sections: dict[str, Any] = {}
    tools: dict[Any, Any] = {}  # keyed by whatever JSON value a tool's name holds
    first_timestamp: Any = UNSET
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "system":
            continue
        if first_timestamp is UNSET:
            first_timestamp = message.get("timestamp")
        text = _system_text(message.get("content"))
        if text:
            pieces.append(text)
        patch = message.get("sections")
        if isinstance(patch, dict):
            for name, value in patch.items():
                if value is None:
                    sections.pop(name, None)
                else:
                    sections[name] = value
        removed = message.get("toolsRemoved")
        if isinstance(removed, list):
            for tool in removed:
                if isinstance(tool, dict):
                    tools.pop(tool.get("name"), None)
        added = message.get("toolsAdded")
        if isinstance(added, list):
            for tool in added:
                if isinstance(tool, dict):
                    tools[tool.get("name")] = tool
    if first_timestamp is UNSET:
        return None
    state: Message = {"role": "system", "content": "\n\n".join(pieces)}
    if sections:
        state["sections"] = sections
    if tools:
        state["toolsAdded"] = list(tools.values())
    state["timestamp"] = first_timestamp
    return state


def context_entries_for(entries: list[Entry], leaf_id: Any = UNSET) -> list[Entry]:
    """Convenience for callers without an index (tests, notebooks)."""
    return build_context_entries(entries, leaf_id, index_by_id(entries))
