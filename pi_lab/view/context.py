"""What the model sees, at any entry: the projection with the leaf put on that entry.

``context_marks`` summarises the projection at the current leaf for the row flags (which
entries of the branch a compaction summarised away, the first kept entry, context edits);
``context_at`` lists the projected messages at any entry for the "what the model sees"
pane, each with its token estimate and the entry it came from.

At a user message the projection is pi's with the leaf on that message, unchanged: the context
before it, then the message, which is what the model received when it was sent. The pane titles
it so ("The context sent with this message", src_frontend/core/projection.ts ``sentWith``, which
reads it from the last row; tests/view/test_context_sent.py), and says pi's own rule: going to a
user message in /tree puts the leaf on its parent, so the message can be edited and sent again.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pi_lab.compaction import estimate_projected_context_tokens, estimate_tokens
from pi_lab.compaction.tokens import calculate_context_tokens, usage_anchor, whole_tokens
from pi_lab.session._js import js_string
from pi_lab.session._text import content_preview
from pi_lab.session.projection import (
    SessionProjection,
    context_edits,
    entry_to_messages,
    project_path,
    replay_system_state,
)
from pi_lab.view._common import ViewOfSession
from pi_lab.view.requests import known_entry

if TYPE_CHECKING:
    from pi_lab.session.facts import EntryFacts, FactTable

__all__ = ["ContextMarks", "context_marks", "context_at", "context_payload", "message_preview", "entry_tokens", "facts_tokens",
           "share_facts", "shared_facts", "PREVIEW_CHARS"]

# The engine's Entry (a dict, what a session's branch holds) where entries go to the projection;
# any mapping where one entry is only estimated.
from pi_lab.session.entries import Entry, EntryView  # noqa: E402

PREVIEW_CHARS = 240


@dataclass(frozen=True, slots=True)
class ContextMarks:
    """Facts about the current branch that change how rows look."""

    out_of_context: frozenset[str] = frozenset()
    first_kept_id: str | None = None
    omitted: frozenset[str] = frozenset()
    replaced: frozenset[str] = frozenset()
    path_ids: frozenset[str] = field(default_factory=frozenset)


def entry_tokens(entry: EntryView) -> int:
    """pi's estimate of the messages one entry contributes, before any context edit."""
    if type(entry) is dict and entry.get("type") == "message":
        message = entry.get("message")
        # The shape pi writes: entry_to_messages gives the message itself (it rewrites only a
        # null content), so its estimate is the entry's.
        if type(message) is dict and message.get("content") is not None:
            return int(estimate_tokens(message))
    total = 0
    # A plain dict is read as it is (entry_to_messages never changes it); any other mapping
    # is copied into one first.
    for message in entry_to_messages(entry if type(entry) is dict else dict(entry)):
        total += estimate_tokens(message)
    return int(total)


def facts_tokens(facts: EntryFacts) -> int:
    """:func:`entry_tokens` of the entry of ``facts``, estimated once and kept there."""
    tokens = facts.tokens
    if tokens < 0:
        tokens = facts.tokens = entry_tokens(facts.entry)
    return tokens


# The fact table of the session a view laid out last. The gauge of that session (computed
# right after its rows, by code that is handed only the branch) reads the token estimates the
# rows made instead of estimating the same entries again. A weak reference: the table lives
# as long as its view; a table answers only for its own entry objects, so using it for
# another session's branch is never wrong, merely no help.
_shared: weakref.ref[FactTable] | None = None


def share_facts(table: FactTable) -> None:
    global _shared
    _shared = weakref.ref(table)


def shared_facts() -> FactTable | None:
    return _shared() if _shared is not None else None


def _edits(projection: SessionProjection) -> tuple[set[str], set[str]]:
    """Targets the edits in force drop (``omitted``) and replace (the engine's rule: the last
    edit of a target wins, in path order)."""
    edits = context_edits([item.source for item in projection.entries])
    omitted = {target for target, edit in edits.items() if edit.get("replacement") is None}
    return omitted, set(edits) - omitted


def context_marks(branch: Sequence[Entry], projection: SessionProjection | None = None) -> ContextMarks:
    """Row facts for the branch ``branch`` (root → leaf) and its projection."""
    if projection is None:
        projection = project_path(list(branch))
    in_context = {id(item.source) for item in projection.entries}
    out: set[str] = set()
    path_ids: set[str] = set()
    for entry in branch:
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            path_ids.add(entry_id)
            if id(entry) not in in_context:
                out.add(entry_id)
    first_kept = None
    if projection.entries and projection.entries[0].source.get("type") == "compaction":
        kept = projection.entries[0].source.get("firstKeptEntryId")
        first_kept = kept if isinstance(kept, str) and kept in path_ids else None
    omitted, replaced = _edits(projection)
    return ContextMarks(frozenset(out), first_kept, frozenset(omitted), frozenset(replaced), frozenset(path_ids))


def _text_of(content: Any) -> str:
    return content_preview(content, "\n", thinking_text=True)


def message_preview(message: Mapping[str, Any], limit: int = PREVIEW_CHARS) -> str:
    """A short plain-text preview of a message (for lists; never rendered as markup)."""
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        text = message.get("summary") or ""
    elif role == "bashExecution":
        text = f"$ {js_string(message.get('command') or '')}\n{js_string(message.get('output') or '')}"
    else:
        text = _text_of(message.get("content"))
    if not isinstance(text, str):
        text = js_string(text)  # iterative: str() of a deep list recurses
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def context_at(branch: Sequence[Entry], *, limit: int = PREVIEW_CHARS) -> dict[str, Any]:
    """The projected messages at the last entry of ``branch`` (root → that entry).

    Each message carries its role, pi's token estimate, the id of the entry it came from and
    a preview; entries a context edit dropped are listed with ``omitted`` so the pane can show
    what the model no longer sees. ``estimate`` is pi's context estimate at that entry
    (``estimateProjectedContextTokens``): measured usage plus estimated trailing messages.
    """
    path = list(branch)
    projection = project_path(path)
    omitted, replaced = _edits(projection)
    items: list[dict[str, Any]] = []
    total = 0
    for position, item in enumerate(projection.entries):
        source = item.source
        source_id = source.get("id")
        # Edits name string ids only (the engine's rule); an id from the file may be a list,
        # which a set cannot even be asked about.
        edited_id = source_id if isinstance(source_id, str) else None
        if not item.messages:
            if edited_id in omitted or (position > 0 and source.get("type") == "compaction"):
                originals = entry_to_messages(dict(source))
                if originals:
                    items.append({
                        "role": originals[0].get("role"),
                        "source_id": source_id,
                        "tokens": 0,
                        "preview": message_preview(originals[0], limit),
                        "omitted": True,
                        "reason": "context edit" if edited_id in omitted else "older checkpoint",
                    })
            continue
        for message in item.messages:
            tokens = int(estimate_tokens(message))
            total += tokens
            row: dict[str, Any] = {
                "role": message.get("role"),
                "source_id": source_id,
                "source_type": source.get("type"),
                "tokens": tokens,
                "preview": message_preview(message, limit),
            }
            if edited_id in replaced:
                row["replaced"] = True
            usage = usage_anchor(message)
            if usage is not None:
                row["usage_tokens"] = whole_tokens(calculate_context_tokens(usage))
            if message.get("role") == "toolResult" and message.get("isError"):
                row["error"] = True
            items.append(row)
    estimate = estimate_projected_context_tokens(projection, path)
    system = replay_system_state(projection.messages)
    leaf = path[-1] if path else None
    return {
        "at": leaf.get("id") if leaf else None,
        "messages": items,
        "message_count": len(projection.messages),
        "estimated_total": total,
        "context_tokens": whole_tokens(estimate.tokens),
        "measured_tokens": whole_tokens(estimate.usage_tokens),
        "trailing_tokens": whole_tokens(estimate.trailing_tokens),
        "thinking_level": projection.thinking_level,
        "model": projection.model,
        "system_tokens": int(estimate_tokens(system)) if system is not None else 0,
        "compaction_id": projection.entries[0].source.get("id")
        if projection.entries and projection.entries[0].source.get("type") == "compaction"
        else None,
    }


# The context_at read request (here, not in payload, so the what-if replay can answer beside it).


def context_payload(view: ViewOfSession, entry_id: str | None = None) -> dict[str, Any]:
    """What the model sees with the leaf put on ``entry_id`` (default: the current leaf)."""
    sm = view.sm
    target = entry_id if entry_id is not None else sm.leaf_id
    if target is None:
        return context_at([])
    known_entry(sm, target)
    result = context_at(sm.get_branch(target))
    result["is_leaf"] = target == sm.leaf_id
    return result
