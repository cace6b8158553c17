"""The context gauge: how full the model's context is at the leaf, and when it compacts.

Measured tokens (the last trusted usage a provider reported) and estimated tokens (pi's
chars/4 estimate of what came after it) are kept apart, never summed into one number
without saying so. Like pi's ``getContextUsage()`` the gauge is *unknown* right after a
compaction until the next successful response. The compactions on the branch are listed
with their tokens before and after (after = the next measured usage, else the estimate of
the projection right after the checkpoint).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from operator import is_
from typing import Any

from pi_lab.compaction import CompactionSettings, estimate_tokens
from pi_lab.compaction.tokens import calculate_context_tokens, usage_anchor, whole_tokens
from pi_lab.compaction.usage import context_usage
from pi_lab.session._js import js_string
from pi_lab.session.flatten import FactTable
from pi_lab.session.projection import (
    SessionProjection,
    entry_to_messages,
    project_path,
    project_with_edit,
    replay_system_state,
)
from pi_lab.view._common import recorded_window_of
from pi_lab.view.context import facts_tokens, shared_facts

__all__ = ["gauge", "gauge_after_append", "gauge_after_entries", "compactions_on_branch", "recorded_context_window", "recorded_model"]

# The engine's Entry (a dict, what a session's branch holds) where entries go to the projection;
# any mapping where the gauge only reads one (a step after an append).
from pi_lab.session.entries import Entry, EntryView  # noqa: E402
from pi_lab.session.protocol import ReadableSession  # noqa: E402


def _anchor_of(entry: EntryView) -> Any:
    if entry.get("type") != "message":
        return None
    return usage_anchor(entry.get("message"))


DEFAULT_CONTEXT_WINDOW = 128_000


def recorded_context_window(sm: ReadableSession) -> int | None:
    """The published window of the model that answered on the current branch, if known.

    Recorded sessions do not store their model's limits; the gauge of a session opened from a
    file starts from this (``pi_lab.llm.catalog``) instead of a fixed guess.
    """
    from pi_lab.llm.catalog import context_window_for

    recorded = recorded_window_of(sm)  # an agent that writes its window (Codex)
    if recorded is not None:
        return recorded
    model = sm.build_session_context().model or {}
    model_id = model.get("modelId")
    return context_window_for(model_id) if isinstance(model_id, str) else None


def recorded_model(sm: ReadableSession) -> str | None:
    """``provider/modelId`` of the session's own model on the current branch (pi's rule: the
    last assistant message or model change on the path), or None when the file names none."""
    model = sm.build_session_context().model or {}
    if not model.get("modelId"):
        return None
    # pi joins the fields with a template string: JavaScript's String() of odd values.
    return f"{js_string(model.get('provider') or '?')}/{js_string(model['modelId'])}"


def _kept_tokens(entry: Entry, edit: Entry | None = None) -> int:
    """What ``entry`` adds to the context when it lies in a compaction's kept range."""
    kind = entry.get("type")
    if kind == "compaction":
        return 0  # an older checkpoint inside the kept range contributes nothing
    if kind == "message" and isinstance(entry.get("message"), dict) and entry["message"].get("role") == "system":
        return 0  # carried by the checkpoint's systemMessage snapshot
    return sum(int(estimate_tokens(m)) for m in project_with_edit(entry, edit))


def _kept_tokens_of(entry: Entry, facts: FactTable | None) -> int:
    """:func:`_kept_tokens` of an unedited entry, with its estimate taken from (and kept in)
    the entry's facts: the rows of a view estimate the same entries (``entry_tokens`` is the
    sum of the same per-message estimates, each an integer)."""
    if facts is None or entry.__class__ is not dict:
        return _kept_tokens(entry)
    kind = entry.get("type")
    if kind == "compaction":
        return 0
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "system":
            return 0
    return facts_tokens(facts.of(entry))


def _after_compaction_estimate(branch: Sequence[Entry], i: int, position: Mapping[str, int],
                               edits: Sequence[int], prefix: Sequence[int]) -> int:
    """pi's estimate of the context right after the compaction at ``branch[i]``.

    The same number as ``estimate_projected_context_tokens(project_path(branch[:i+1]), ...)``
    (with the compaction as the leaf no usage is trusted, so every message is estimated), but
    without projecting the prefix again: ``prefix[j]`` is the kept-range tokens of
    ``branch[:j]`` unedited, so a kept range costs one subtraction plus its context edits.
    ``position`` maps the ids before ``i`` to their (last) index; ``edits`` lists the indexes
    of the context edits before ``i``.
    """
    entry = branch[i]
    first_kept = entry.get("firstKeptEntryId")
    kept_from = position.get(first_kept, -1) if isinstance(first_kept, str) else -1
    if not 0 <= kept_from < i:
        kept_from = i  # not on the branch: the checkpoint alone
    latest: dict[str, Entry] = {}  # the context edits among the context entries, last one wins
    for e in range(bisect_left(edits, kept_from), bisect_left(edits, i)):
        edit = branch[edits[e]]
        if isinstance(edit.get("targetId"), str):
            latest[edit["targetId"]] = edit
    own_id = entry.get("id")
    messages = project_with_edit(entry, latest.pop(own_id, None) if isinstance(own_id, str) else None)
    system = replay_system_state(messages)
    tokens = (estimate_tokens(system) if system is not None else 0)
    tokens += sum(estimate_tokens(m) for m in messages if m.get("role") != "system")
    tokens += prefix[i] - prefix[kept_from]
    for target_id, edit in latest.items():
        j = position.get(target_id, -1)
        if kept_from <= j < i:
            tokens += _kept_tokens(branch[j], edit) - (prefix[j + 1] - prefix[j])
    return int(tokens)


# The last branch whose compactions were listed and the list: a viewer asks again for the same
# branch (the layout, then the state it publishes) and the pass estimates every entry on it.
# Entries are never changed in place, so the same entry objects in the same order give the
# same answer; the branch is compared by identity, entry by entry (C-level, ~1 ms per 100k).
_last_compactions: tuple[list[Entry], list[dict[str, Any]]] | None = None


def compactions_on_branch(branch: Sequence[Entry], *, facts: FactTable | None = None) -> list[dict[str, Any]]:
    """Every compaction on ``branch`` with tokens before and after, oldest first.

    One forward pass, linear in the branch: the "after" of a compaction is the first trusted
    usage before the next compaction (measured), else the estimate of its own kept range
    (estimated), taken when the pass reaches it, from running sums of the entries before it.
    ``facts`` holds token estimates of entries already made (default: those of the view that
    laid out its rows last, :func:`pi_lab.view.context.shared_facts`).
    """
    global _last_compactions
    path = list(branch)
    last = _last_compactions
    if last is not None and len(last[0]) == len(path) and all(map(is_, last[0], path)):
        return [dict(item) for item in last[1]]  # copies: a caller may edit what it gets
    found = _compactions_on_branch(path, shared_facts() if facts is None else facts)
    _last_compactions = (path, [dict(item) for item in found])
    return found


def _compactions_on_branch(branch: Sequence[Entry], facts: FactTable | None = None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if not any(entry.get("type") == "compaction" for entry in branch):
        return found
    position: dict[str, int] = {}
    edits: list[int] = []
    # prefix[j]: the kept-range tokens of branch[:j]. With a fact table (a viewer's: the
    # estimates stay there for its rows) it is extended only as far as an estimate needs it:
    # a compaction's "after" is the next measured usage when one follows before the next
    # compaction (the usual case), and only when none does is its kept range estimated, so
    # most branches estimate no entry here. Without one, every entry is estimated in the pass.
    prefix = [0]
    eager = facts is None

    def prefix_to(i: int) -> list[int]:
        for j in range(len(prefix) - 1, i):
            prefix.append(prefix[-1] + _kept_tokens_of(branch[j], facts))
        return prefix

    waiting: dict[str, Any] | None = None  # the last compaction, until a measured usage follows
    pending = -1  # the branch index of ``waiting`` while its estimate is not made yet

    def settle() -> None:
        # The estimate reads ``position`` and ``edits`` as they were at the compaction: ids of
        # later entries are not in it yet, except a later duplicate of an earlier id, which
        # settles the estimate first (below).
        nonlocal pending
        if pending >= 0 and waiting is not None:  # pending is the index of ``waiting``
            waiting["after"] = _after_compaction_estimate(branch, pending, position, edits, prefix_to(pending))
            pending = -1

    for i, entry in enumerate(branch):
        kind = entry.get("type")
        if kind == "compaction":
            settle()
            summary = entry.get("summary")
            if not isinstance(summary, str):
                summary = ""
            before = entry.get("tokensBefore")
            waiting = {
                "id": entry.get("id"),
                "timestamp": entry.get("timestamp"),
                "tokens_before": before if isinstance(before, (int, float)) and not isinstance(before, bool) else None,
                "after": None,
                "after_kind": "estimated",
                "after_entry_id": None,
                "first_kept_id": entry.get("firstKeptEntryId"),
                "from_hook": bool(entry.get("fromHook")),
                "summary_preview": " ".join(summary.split())[:160],
            }
            pending = i
            found.append(waiting)
        elif waiting is not None:
            usage = _anchor_of(entry)
            if usage is not None:
                waiting.update(after=int(calculate_context_tokens(usage)), after_kind="measured",
                               after_entry_id=entry.get("id"))
                waiting = None
                pending = -1  # measured: the estimate is never needed
        if kind == "context_edit":
            edits.append(i)
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            if pending >= 0 and entry_id in position:
                settle()
            position[entry_id] = i
        if eager:
            prefix_to(i + 1)
    settle()
    return found


def _finish(g: dict[str, Any]) -> dict[str, Any]:
    window = g["context_window"]
    g["threshold"] = window - g["reserve_tokens"]
    g["estimate_total"] = g["measured"] + g["estimated"]
    g["tokens"] = None if g["unknown"] else g["estimate_total"]
    shown = g["estimate_total"]
    g["headroom"] = g["threshold"] - shown
    g["percent"] = (g["tokens"] / window * 100) if (g["tokens"] is not None and window > 0) else None
    g["estimate_percent"] = (shown / window * 100) if window > 0 else None
    g["would_compact"] = bool(g["enabled"] and window > 0 and shown > g["threshold"])
    return g


def gauge(
    branch: Sequence[Entry],
    *,
    context_window: int,
    settings: CompactionSettings | None = None,
    projection: SessionProjection | None = None,
    facts: FactTable | None = None,
) -> dict[str, Any]:
    """The gauge at the end of ``branch`` (root → leaf) as a JSON-ready dict (``facts``: see
    :func:`compactions_on_branch`)."""
    settings = settings or CompactionSettings()
    path = list(branch)
    if projection is None:
        projection = project_path(path)
    # The agent's rule (measured anchor, estimated tail, unknown after a compaction), not a copy.
    usage = context_usage(path, context_window, projection=projection)
    compactions = compactions_on_branch(path, facts=facts)
    g: dict[str, Any] = {
        "leaf_id": path[-1].get("id") if path else None,
        "context_window": int(context_window or 0),
        "reserve_tokens": int(settings.reserve_tokens),
        "keep_recent_tokens": int(settings.keep_recent_tokens),
        "enabled": bool(settings.enabled),
        "unknown": usage.unknown,
        "measured": whole_tokens(usage.measured),
        "estimated": whole_tokens(usage.estimated),
        "anchor_id": usage.anchor_entry_id,
        "compactions": compactions,
        "message_count": len(projection.messages),
    }
    return _finish(g)


def gauge_after_append(previous: Mapping[str, Any], entry: EntryView) -> dict[str, Any] | None:
    """The gauge after ``entry`` was appended at the leaf, or None when it must be recomputed.

    Constant time: a new assistant with trusted usage becomes the measured anchor, anything
    else adds its estimate to the trailing part. Compactions, context edits and system
    messages change the projection non-locally, so they ask for a full recomputation.
    """
    if entry.get("type") in ("compaction", "context_edit"):
        return None
    messages = entry_to_messages(dict(entry))
    if any(m.get("role") == "system" for m in messages):
        return None
    g = dict(previous)
    usage = _anchor_of(entry)
    if usage is not None:
        g["measured"] = int(calculate_context_tokens(usage))
        g["estimated"] = 0
        g["anchor_id"] = entry.get("id")
        g["unknown"] = False
        compactions = list(g.get("compactions") or [])
        if compactions and compactions[-1].get("after_kind") == "estimated":
            compactions[-1] = {**compactions[-1], "after": g["measured"], "after_kind": "measured",
                               "after_entry_id": entry.get("id")}
            g["compactions"] = compactions
    else:
        g["estimated"] = int(g["estimated"]) + sum(int(estimate_tokens(m)) for m in messages)
    g["leaf_id"] = entry.get("id")
    g["message_count"] = int(g.get("message_count", 0)) + len(messages)
    return _finish(g)


def gauge_after_entries(previous: Mapping[str, Any] | None, entries: Sequence[EntryView]) -> dict[str, Any] | None:
    """The gauge after ``entries`` were appended one after the other at the leaf of
    ``previous``, or None when it must be recomputed (an entry that is not a child of the leaf
    so far, or one :func:`gauge_after_append` cannot step over). The one stepping rule of the
    widget and the server."""
    if not previous:
        return None
    value: dict[str, Any] | None = dict(previous)
    for entry in entries:
        if entry.get("type") == "session" or entry.get("parentId") != value.get("leaf_id"):
            return None
        value = gauge_after_append(value, entry)
        if value is None:
            return None
    return value
