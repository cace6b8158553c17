"""Compaction preview: what a compaction of the current branch would do, before doing it.

Runs pi's ``prepareCompaction`` on the branch (no model call, nothing written) and reports
the three parts: the history that will be summarized, the prefix of a split turn (summarized
separately), and the kept tail, with token estimates and the entries each part comes from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pi_lab.compaction import CompactionSettings, compute_file_lists, estimate_tokens, prepare_compaction
from pi_lab.session.projection import project_path, replay_system_state
from pi_lab.view.context import message_preview

__all__ = ["compaction_preview", "ALREADY_COMPACTED", "NOTHING_TO_COMPACT", "SAMPLE"]

ALREADY_COMPACTED = "Already compacted"
NOTHING_TO_COMPACT = "Nothing to compact (session too small)"
SAMPLE = 4  # messages shown at each end of a part

from pi_lab.session.entries import Entry  # noqa: E402  (a branch as the session holds it)


def _part(messages: Sequence[Mapping[str, Any]], source_of: Mapping[int, Any]) -> dict[str, Any]:
    items = []
    ids: list[Any] = []  # entry ids as the file has them (any JSON value)
    tokens = 0
    for message in messages:
        t = int(estimate_tokens(message))
        tokens += t
        source = source_of.get(id(message))
        if source is not None and (not ids or ids[-1] != source):
            ids.append(source)
        items.append({"role": message.get("role"), "tokens": t, "source_id": source, "preview": message_preview(message, 160)})
    shown = items if len(items) <= 2 * SAMPLE else items[:SAMPLE] + [{"gap": len(items) - 2 * SAMPLE}] + items[-SAMPLE:]
    return {
        "count": len(items),
        "tokens": tokens,
        "items": shown,
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
        "entry_count": len(ids),
    }


def compaction_preview(branch: Sequence[Entry], settings: CompactionSettings | None = None) -> dict[str, Any]:
    """A dry run of ``/compact`` on ``branch`` (root → leaf) as a JSON-ready dict.

    ``ok`` is False with pi's message when there is nothing to do. ``estimated_after`` is
    the kept tail plus the system snapshot, i.e. the context after compaction *without* the
    summary, whose size is only known once the model has written it.
    """
    settings = settings or CompactionSettings()
    path = branch if isinstance(branch, list) else list(branch)  # a BranchPath skips the chain check
    if path and path[-1].get("type") == "compaction":
        return {"ok": False, "reason": ALREADY_COMPACTED}
    preparation = prepare_compaction(path, settings)
    if preparation is None:
        return {"ok": False, "reason": NOTHING_TO_COMPACT}
    projection = project_path(path)
    source_of: dict[int, Any] = {}
    for item in projection.entries:
        for message in item.messages:
            source_of[id(message)] = item.source.get("id")
    kept_messages: list[Mapping[str, Any]] = []
    seen_first = False
    for item in projection.entries:
        if item.source.get("id") == preparation.first_kept_entry_id:
            seen_first = True
        if seen_first and item.source.get("type") != "compaction":
            kept_messages.extend(m for m in item.messages if m.get("role") != "system")
    system = replay_system_state(projection.messages)
    system_tokens = int(estimate_tokens(system)) if system is not None else 0
    kept = _part(kept_messages, source_of)
    return {
        "ok": True,
        "first_kept_id": preparation.first_kept_entry_id,
        "is_split_turn": preparation.is_split_turn,
        "tokens_before": int(preparation.tokens_before),
        "previous_summary": preparation.previous_summary is not None,
        "summarize": _part(preparation.messages_to_summarize, source_of),
        "turn_prefix": _part(preparation.turn_prefix_messages, source_of),
        "kept": kept,
        "system_tokens": system_tokens,
        "estimated_after": kept["tokens"] + system_tokens,
        "keep_recent_tokens": int(settings.keep_recent_tokens),
        "files": dict(zip(("read", "modified"), compute_file_lists(preparation.file_ops))),
    }
