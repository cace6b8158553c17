"""Splitting the current branch into summarised history, a split-turn prefix and a kept tail
(compaction.md §5). Pure data in, pure data out: no model call, no write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pi_lab.compaction.cut_point import find_cut_in_columns, projected_columns
from pi_lab.compaction.file_ops import (
    FileOperations,
    add_summary_details,
    extract_file_ops_from_message,
)
from pi_lab.compaction.settings import DEFAULT_KEEP_RECENT_TOKENS, settings_value
from pi_lab.compaction.tokens import estimate_projected_context_tokens
from pi_lab.session.entries import EntryView as Entry  # one alias for every module
from pi_lab.session.entries import MessageView as Message

__all__ = ["CompactionPreparation", "prepare_compaction", "messages_for_summary"]


@dataclass(frozen=True, slots=True)
class CompactionPreparation:
    """What :func:`compact` needs; also what an extension hook is shown."""

    first_kept_entry_id: str
    messages_to_summarize: list[Message]
    turn_prefix_messages: list[Message]
    is_split_turn: bool
    tokens_before: int | float
    previous_summary: str | None = None
    file_ops: FileOperations = field(default_factory=FileOperations)
    settings: Any = None


def messages_for_summary(projected: Sequence[Any], start: int, end: int) -> list[Message]:
    """Projected messages of ``projected[start:end]`` minus compactions and system messages."""
    sources, messages = projected_columns(projected[start:end])
    return _summary_messages(sources, messages, 0, len(sources))


def _summary_messages(
    sources: Sequence[Entry], messages: Sequence[list[Message]], start: int, end: int
) -> list[Message]:
    out: list[Message] = []
    for i in range(start, end):
        if sources[i].get("type") == "compaction":
            continue
        for message in messages[i]:
            if message.get("role") != "system":
                out.append(message)
    return out


def prepare_compaction(path_entries: Sequence[Entry], settings: Any) -> CompactionPreparation | None:
    """Prepare a compaction of the branch ``path_entries`` (root → leaf), or None if there is nothing to do."""
    if path_entries and path_entries[-1].get("type") == "compaction":
        return None

    from pi_lab.session.projection import build_session_projection

    # A BranchPath from SessionManager.get_branch() stays as it is, so the projection can
    # skip re-checking that it is a chain.
    entries = path_entries if isinstance(path_entries, list) else list(path_entries)
    # The projection only reads the entries; its parameter is typed as a list of dicts.
    projection = build_session_projection(entries)  # type: ignore[arg-type]
    sources, messages = projected_columns(projection.entries)

    # Only the newest compaction contributes messages, and the projection puts it first.
    previous_index = -1
    for i, source in enumerate(sources):
        if source.get("type") == "compaction" and messages[i]:
            previous_index = i
            break
    previous_summary: str | None = None
    previous_compaction: Entry | None = None
    boundary_start = 0
    if previous_index >= 0:
        previous_compaction = sources[previous_index]
        previous_summary = previous_compaction.get("summary")
        boundary_start = previous_index + 1
    boundary_end = len(sources)

    tokens_before = estimate_projected_context_tokens(projection, entries).tokens
    keep = settings_value(settings, "keep_recent_tokens", "keepRecentTokens", DEFAULT_KEEP_RECENT_TOKENS)
    cut = find_cut_in_columns(sources, messages, boundary_start, boundary_end, keep)

    if cut.first_kept_entry_index >= len(sources):
        return None
    first_kept_id = sources[cut.first_kept_entry_index].get("id")
    if not first_kept_id:
        return None  # unmigrated v1 data

    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    to_summarize = _summary_messages(sources, messages, boundary_start, history_end)
    prefix = (
        _summary_messages(sources, messages, cut.turn_start_index, cut.first_kept_entry_index)
        if cut.is_split_turn
        else []
    )
    if not to_summarize and not prefix:
        return None

    ops = FileOperations()
    if previous_compaction is not None and not previous_compaction.get("fromHook"):
        add_summary_details(previous_compaction.get("details"), ops)
    for message in to_summarize:
        extract_file_ops_from_message(message, ops)
    for message in prefix:
        extract_file_ops_from_message(message, ops)

    return CompactionPreparation(
        first_kept_entry_id=first_kept_id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=ops,
        settings=settings,
    )
