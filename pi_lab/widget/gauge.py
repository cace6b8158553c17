"""The context gauge: how full the model's context is at the leaf, and when it compacts.

Measured tokens (the last trusted usage a provider reported) and estimated tokens (pi's
chars/4 estimate of what came after it) are kept apart, never summed into one number
without saying so. Like pi's ``getContextUsage()`` the gauge is *unknown* right after a
compaction until the next successful response. The compactions on the branch are listed
with their tokens before and after (after = the next measured usage, else the estimate of
the projection right after the checkpoint).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pi_lab.compaction import CompactionSettings, estimate_projected_context_tokens, estimate_tokens
from pi_lab.compaction.tokens import calculate_context_tokens, usage_anchor
from pi_lab.session.projection import SessionProjection, entry_to_messages, project_path

__all__ = ["gauge", "gauge_after_append", "compactions_on_branch"]

Entry = Mapping[str, Any]


def _anchor_of(entry: Entry) -> Any:
    if entry.get("type") != "message":
        return None
    return usage_anchor(entry.get("message"))


def _anchor_entry_id(projection: SessionProjection, message_index: int | None) -> str | None:
    if message_index is None:
        return None
    seen = 0
    for item in projection.entries:
        count = len(item.messages)
        if message_index < seen + count:
            return item.source.get("id")
        seen += count
    return None


DEFAULT_CONTEXT_WINDOW = 128_000


def recorded_context_window(sm: Any) -> int | None:
    """The published window of the model that answered on the current branch, if known.

    Recorded sessions do not store their model's limits; the gauge of a session opened from a
    file starts from this (``pi_lab.llm.catalog``) instead of a fixed guess.
    """
    from pi_lab.llm.catalog import context_window_for

    model = sm.build_session_context().model or {}
    return context_window_for(model.get("modelId"))


def compactions_on_branch(branch: Sequence[Entry]) -> list[dict[str, Any]]:
    """Every compaction on ``branch`` with tokens before and after, oldest first."""
    found: list[dict[str, Any]] = []
    positions = [i for i, entry in enumerate(branch) if entry.get("type") == "compaction"]
    for n, i in enumerate(positions):
        entry = branch[i]
        stop = positions[n + 1] if n + 1 < len(positions) else len(branch)
        after: int | None = None
        after_kind: str | None = None
        after_id: str | None = None
        for j in range(i + 1, stop):
            usage = _anchor_of(branch[j])
            if usage is not None:
                after, after_kind, after_id = int(calculate_context_tokens(usage)), "measured", branch[j].get("id")
                break
        if after is None:
            head = list(branch[: i + 1])
            after = int(estimate_projected_context_tokens(project_path(head), head).tokens)
            after_kind = "estimated"
        summary = entry.get("summary") if isinstance(entry.get("summary"), str) else ""
        before = entry.get("tokensBefore")
        found.append({
            "id": entry.get("id"),
            "timestamp": entry.get("timestamp"),
            "tokens_before": before if isinstance(before, (int, float)) and not isinstance(before, bool) else None,
            "after": after,
            "after_kind": after_kind,
            "after_entry_id": after_id,
            "first_kept_id": entry.get("firstKeptEntryId"),
            "from_hook": bool(entry.get("fromHook")),
            "summary_preview": " ".join(summary.split())[:160],
        })
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
) -> dict[str, Any]:
    """The gauge at the end of ``branch`` (root → leaf) as a JSON-ready dict."""
    settings = settings or CompactionSettings()
    path = list(branch)
    if projection is None:
        projection = project_path(path)
    estimate = estimate_projected_context_tokens(projection, path)
    compactions = compactions_on_branch(path)
    unknown = False
    if compactions:
        last = max(i for i, e in enumerate(path) if e.get("type") == "compaction")
        unknown = not any(_anchor_of(e) is not None for e in path[last + 1 :])
    g: dict[str, Any] = {
        "leaf_id": path[-1].get("id") if path else None,
        "context_window": int(context_window or 0),
        "reserve_tokens": int(settings.reserve_tokens),
        "keep_recent_tokens": int(settings.keep_recent_tokens),
        "enabled": bool(settings.enabled),
        "unknown": unknown,
        "measured": int(estimate.usage_tokens),
        "estimated": int(estimate.trailing_tokens),
        "anchor_id": _anchor_entry_id(projection, estimate.last_usage_index),
        "compactions": compactions,
        "message_count": len(projection.messages),
    }
    return _finish(g)


def gauge_after_append(previous: Mapping[str, Any], entry: Entry) -> dict[str, Any] | None:
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
