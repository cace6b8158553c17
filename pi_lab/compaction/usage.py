"""How full the model's context is at the leaf: pi's ``getContextUsage()`` as a pure function.

One answer for the agent (``AgentSession.get_context_usage``) and the viewer's gauge. Two
rules live here and nowhere else:

* the usage anchor: the context is the tokens a provider reported for the last trusted
  assistant (:func:`~pi_lab.compaction.tokens.usage_anchor`) plus pi's chars/4 estimate of
  what came after it, trusted only when measured after the last compaction or context edit
  (``estimate_projected_context_tokens``);
* unknown right after a compaction: until an assistant answers after the latest compaction
  (and is still part of what the model sees), the number is unknown, because the last
  measured usage describes the context before the compaction (agent-loop.md §17).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_lab.compaction.settings import settings_value
from pi_lab.compaction.tokens import (
    _messages_of,
    _source_of,
    estimate_projected_context_tokens,
    source_entry_id,
    usage_anchor,
)

__all__ = ["ContextUsage", "context_usage", "unknown_after_compaction"]


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """pi's ``getContextUsage()``: ``tokens``/``percent`` are ``None`` right after a compaction.

    The fields after the first three split the number for a gauge: ``measured`` (the trusted
    usage anchor's tokens, 0 without one), ``estimated`` (the estimate of what follows it, or
    of everything), their sum ``estimate_total`` (shown even while ``unknown``), the anchor's
    entry id, and, when settings were given, the compaction ``threshold`` and whether an
    automatic compaction would run at this size.
    """

    tokens: int | float | None
    context_window: int
    percent: float | None
    unknown: bool = False
    measured: int | float = 0
    estimated: int | float = 0
    estimate_total: int | float = 0
    anchor_entry_id: str | None = None
    threshold: int | None = None
    would_compact: bool = False


def unknown_after_compaction(branch: Sequence[Mapping[str, Any]], projection: Any) -> bool:
    """True when the branch has a compaction and no projected, trusted assistant after it."""
    compaction_index = None
    for i in range(len(branch) - 1, -1, -1):
        if branch[i].get("type") == "compaction":
            compaction_index = i
            break
    if compaction_index is None:
        return False
    anchored = {
        _source_of(item).get("id")
        for item in projection.entries
        if any(usage_anchor(m) is not None for m in _messages_of(item))
    }
    anchored.discard(None)
    return not any(branch[i].get("id") in anchored for i in range(compaction_index + 1, len(branch)))


def context_usage(
    branch: Sequence[Mapping[str, Any]],
    context_window: int,
    *,
    projection: Any = None,
    settings: Any = None,
) -> ContextUsage:
    """The context usage at the end of ``branch`` (root → leaf) for a model of ``context_window``.

    ``projection`` is the branch's session projection (computed from ``branch`` when not
    given). ``percent`` is ``None`` when unknown or when the window is not positive; callers
    that, like pi, have no usage at all without a window check that themselves.
    """
    if projection is None:
        from pi_lab.session.projection import project_path

        # The projection only reads the entries; its parameter is typed as a list of dicts.
        projection = project_path(list(branch))  # type: ignore[arg-type]
    window = int(context_window or 0)
    estimate = estimate_projected_context_tokens(projection, branch)
    unknown = unknown_after_compaction(branch, projection)
    total = estimate.tokens
    tokens = None if unknown else total
    percent = tokens / window * 100 if tokens is not None and window > 0 else None
    threshold = None
    would_compact = False
    if settings is not None:
        threshold = window - int(settings_value(settings, "reserve_tokens", "reserveTokens", 16384))
        enabled = bool(settings_value(settings, "enabled", "enabled", True))
        would_compact = enabled and window > 0 and total > threshold
    return ContextUsage(
        tokens=tokens,
        context_window=window,
        percent=percent,
        unknown=unknown,
        measured=estimate.usage_tokens,
        estimated=estimate.trailing_tokens,
        estimate_total=total,
        anchor_entry_id=source_entry_id(projection, estimate.last_usage_index),
        threshold=threshold,
        would_compact=would_compact,
    )
