"""The incremental projection of the extractor's tree walk.

The projection of the current root-to-node path is a stack of context entries with running
sums (message counts, pi's token estimates, the estimates of system messages, the last usage
anchor), so entering or leaving an entry is O(1) and the context estimate of the whole path
is O(1); only a compaction or a ``context_edit`` (they change earlier messages) rebuilds it
with :func:`_rebuild`.
"""

from __future__ import annotations

from typing import Any

from pi_lab.compaction.tokens import calculate_context_tokens, estimate_tokens, usage_anchor
from pi_lab.session.entries import Entry
from pi_lab.session.projection import context_edits, entry_to_messages, project_with_edit

# What one context entry contributes, measured once (see _Stats): (message count, pi's
# estimate of its messages, its local usage anchor or None, the estimate of its system
# messages, its system messages or None). The anchor is (usage tokens, estimate through the
# anchoring message) counted from the entry's first message.
Measure = tuple[int, int, "tuple[Any, int] | None", int, "list[dict[str, Any]] | None"]

_EMPTY: Measure = (0, 0, None, 0, None)


class _Context:
    """The projection of one path: its context entries and, per entry, running sums.

    ``sums[k]`` (``sums[0]`` is the empty context) is (messages, estimate, system-message
    estimate, system messages, anchor, that entry's system messages) through context entry
    ``k - 1``; the anchor is (usage tokens, estimate through that message, its entry) of the
    last valid usage anchor so far, so the context estimate of the whole list is O(1).
    One tuple per entry keeps entering and leaving an entry at two list operations.
    """

    __slots__ = ("entries", "sums", "edits")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.sums: list[tuple[int, int, int, int, Any, Any]] = [(0, 0, 0, 0, None, None)]
        self.edits: dict[str, Entry] = {}

    def push(self, entry: Entry, measure: Measure) -> None:
        count, tokens, local_anchor, sys_tokens, sys_messages = measure
        total_count, total_tokens, total_sys, sys_count, anchor, _ = self.sums[-1]
        if local_anchor is not None:
            anchor = (local_anchor[0], total_tokens + local_anchor[1], entry)
        self.entries.append(entry)
        self.sums.append((
            total_count + count, total_tokens + tokens, total_sys + sys_tokens,
            sys_count + (len(sys_messages) if sys_messages else 0), anchor, sys_messages,
        ))

    def pop(self) -> None:
        self.entries.pop()
        self.sums.pop()

    @property
    def message_count(self) -> int:
        return self.sums[-1][0]

    @property
    def plain_tokens(self) -> int:
        """Sum of pi's per-message estimates (no usage anchor)."""
        return self.sums[-1][1]

    @property
    def estimate(self) -> Any:
        """``estimate_context_tokens(messages).tokens``: last anchor's usage + what follows."""
        _count, tokens, _sys, _n, anchor, _ = self.sums[-1]
        if anchor is None:
            return tokens
        return anchor[0] + (tokens - anchor[1])

    def anchor_entry(self) -> Entry | None:
        anchor = self.sums[-1][4]
        return anchor[2] if anchor is not None else None

    def has_system(self) -> bool:
        """Whether the projected messages hold a system message."""
        return self.sums[-1][3] > 0

    def system_messages(self) -> list[dict[str, Any]]:
        """The projected system messages, in order (for replaying the system state)."""
        return [m for s in self.sums if s[5] for m in s[5]]

    def non_system_tokens(self) -> int:
        """pi's estimate of every projected message that is not a system message."""
        last = self.sums[-1]
        return last[1] - last[2]


def _measure(messages: list[dict[str, Any]]) -> Measure:
    if len(messages) == 1:  # nearly every entry: one message
        message = messages[0]
        tokens = estimate_tokens(message)
        role = message.get("role")
        if role == "assistant":  # only an assistant message can be a usage anchor
            usage = usage_anchor(message)
            return (1, tokens, (calculate_context_tokens(usage), tokens) if usage is not None else None, 0, None)
        if role == "system":
            return (1, tokens, None, tokens, messages)
        return (1, tokens, None, 0, None)
    total = 0
    anchor = None
    sys_tokens = 0
    system: list[dict[str, Any]] = []
    for message in messages:
        tokens = estimate_tokens(message)
        total += tokens
        usage = usage_anchor(message)
        if usage is not None:
            anchor = (calculate_context_tokens(usage), total)
        if message.get("role") == "system":
            sys_tokens += tokens
            system.append(message)
    return (len(messages), total, anchor, sys_tokens, system or None)


class _Stats:
    """The :data:`Measure` of (entry, edit) pairs, computed once per pair: entries and edits
    live as long as the file's rows. ``plain`` holds the un-edited entries by ``id(entry)``."""

    __slots__ = ("plain", "edited")

    def __init__(self) -> None:
        self.plain: dict[int, Measure] = {}
        self.edited: dict[tuple[int, int], Measure] = {}

    def of(self, entry: Entry, edit: Entry | None) -> Measure:
        if edit is None:
            found = self.plain.get(id(entry))
            if found is None:
                found = self.plain[id(entry)] = _measure(entry_to_messages(entry))
            return found
        key = (id(entry), id(edit))
        found = self.edited.get(key)
        if found is None:
            found = self.edited[key] = _measure(project_with_edit(entry, edit))
        return found


def _rebuild(context_entries: list[Entry], stats: _Stats) -> _Context:
    """A fresh context from its context entries, with the rules of ``project_path``."""
    ctx = _Context()
    ctx.edits = edits = context_edits(context_entries)
    for i, entry in enumerate(context_entries):
        if i > 0 and entry.get("type") == "compaction":
            ctx.push(entry, _EMPTY)  # an older checkpoint inside the kept range
            continue
        entry_id = entry.get("id")
        edit = edits.get(entry_id) if isinstance(entry_id, str) else None
        ctx.push(entry, stats.of(entry, edit))
    return ctx
