"""The incremental projection of the extractor's tree walk.

The projection of the current root-to-node path is a stack of context entries with running
sums (message counts, pi's token estimates, the last usage anchor), so entering or leaving an
entry is O(1) and the context estimate of the whole path is O(1); only a compaction or a
``context_edit`` (they change earlier messages) rebuilds it with :func:`_rebuild`.
"""

from __future__ import annotations

from typing import Any

from pi_lab.compaction.tokens import calculate_context_tokens, estimate_tokens, usage_anchor
from pi_lab.session.entries import Entry
from pi_lab.session.projection import context_edits, entry_to_messages, project_with_edit


class _Context:
    """The projection of one path as parallel per-context-entry lists with running sums.

    ``cum_tokens[i]``: pi's estimate of every message of context entries 0..i;
    ``anchors[i]``: (usage tokens, cum tokens through that message, its entry) of the last
    valid usage anchor among them, so the context estimate of the whole list is O(1).
    """

    __slots__ = ("entries", "counts", "cum_count", "cum_tokens", "anchors", "edits")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.counts: list[int] = []
        self.cum_count: list[int] = []
        self.cum_tokens: list[int] = []
        self.anchors: list[tuple[Any, int, Entry] | None] = []
        self.edits: dict[str, Entry] = {}

    def push(self, entry: Entry, stats: tuple[int, list[int], tuple[Any, int] | None]) -> None:
        count, _tokens, local_anchor = stats
        base_tokens = self.cum_tokens[-1] if self.cum_tokens else 0
        base_count = self.cum_count[-1] if self.cum_count else 0
        self.entries.append(entry)
        self.counts.append(count)
        self.cum_count.append(base_count + count)
        self.cum_tokens.append(base_tokens + (sum(_tokens) if count else 0))
        if local_anchor is not None:
            self.anchors.append((local_anchor[0], base_tokens + local_anchor[1], entry))
        else:
            self.anchors.append(self.anchors[-1] if self.anchors else None)

    def pop(self) -> None:
        self.entries.pop()
        self.counts.pop()
        self.cum_count.pop()
        self.cum_tokens.pop()
        self.anchors.pop()

    @property
    def message_count(self) -> int:
        return self.cum_count[-1] if self.cum_count else 0

    @property
    def plain_tokens(self) -> int:
        """Sum of pi's per-message estimates (no usage anchor)."""
        return self.cum_tokens[-1] if self.cum_tokens else 0

    @property
    def estimate(self) -> Any:
        """``estimate_context_tokens(messages).tokens``: last anchor's usage + what follows."""
        if not self.cum_tokens:
            return 0
        anchor = self.anchors[-1]
        if anchor is None:
            return self.cum_tokens[-1]
        return anchor[0] + (self.cum_tokens[-1] - anchor[1])

    def anchor_entry(self) -> Entry | None:
        anchor = self.anchors[-1] if self.anchors else None
        return anchor[2] if anchor is not None else None


class _Stats:
    """Messages, per-message estimates and the local usage anchor of (entry, edit) pairs,
    computed once per pair: entries and edits live as long as the file's rows."""

    __slots__ = ("cache",)

    def __init__(self) -> None:
        self.cache: dict[tuple[int, int], tuple[int, list[int], tuple[Any, int] | None]] = {}

    def of(self, entry: Entry, edit: Entry | None, messages: list[dict[str, Any]] | None = None):
        key = (id(entry), id(edit) if edit is not None else 0)
        found = self.cache.get(key)
        if found is not None:
            return found
        if messages is None:
            messages = entry_to_messages(entry) if edit is None else project_with_edit(entry, edit)
        tokens = [estimate_tokens(m) for m in messages]
        anchor = None
        running = 0
        for message, tok in zip(messages, tokens):
            running += tok
            usage = usage_anchor(message)
            if usage is not None:
                anchor = (calculate_context_tokens(usage), running)
        stats = (len(messages), tokens, anchor)
        self.cache[key] = stats
        return stats


_EMPTY = (0, [], None)


def _rebuild(context_entries: list[Entry], stats: _Stats) -> _Context:
    """A fresh context from its context entries, with the rules of ``project_path``."""
    ctx = _Context()
    ctx.edits = context_edits(context_entries)
    for i, entry in enumerate(context_entries):
        if i > 0 and entry.get("type") == "compaction":
            ctx.push(entry, _EMPTY)  # an older checkpoint inside the kept range
            continue
        entry_id = entry.get("id")
        edit = ctx.edits.get(entry_id) if isinstance(entry_id, str) else None
        ctx.push(entry, stats.of(entry, edit))
    return ctx
