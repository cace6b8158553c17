"""Where to cut a branch for compaction (compaction.md §3–§4).

A *cut point* is a non-compaction entry that contributes a user, assistant, bashExecution,
custom, branchSummary or compactionSummary message: the kept region may start there. Tool
results never are, because a kept tool result without its call is rejected by providers.
A *turn start* is a non-compaction entry contributing a user-like message (everything above
except assistant); cutting anywhere else splits a turn.

Both variants walk back from the newest entry, adding up estimated tokens until the
``keep_recent_tokens`` budget is reached, then snap to a legal cut point. Work is linear in
the number of entries looked at; cut points are searched on demand rather than listed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_lab.compaction.tokens import estimate_tokens
from pi_lab.session.entries import EntryView as Entry  # one alias for every module
from pi_lab.session.entries import MessageView as Message

__all__ = [
    "CUT_POINT_ROLES",
    "TURN_START_ROLES",
    "CutPointResult",
    "is_cut_point_message",
    "is_turn_start_message",
    "find_cut_point",
    "find_turn_start_index",
    "find_projected_cut_point",
    "find_projected_turn_start_index",
    "projected_source",
    "projected_messages",
    "projected_columns",
]

CUT_POINT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
TURN_START_ROLES = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})


@dataclass(frozen=True, slots=True)
class CutPointResult:
    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def is_cut_point_message(message: Message) -> bool:
    # pi switches on the role with ===: a role that is not a string (a list, an object) is
    # no cut point, and must not be hashed
    role = message.get("role")
    return isinstance(role, str) and role in CUT_POINT_ROLES


def is_turn_start_message(message: Message) -> bool:
    role = message.get("role")
    return isinstance(role, str) and role in TURN_START_ROLES


def projected_source(projected: Any) -> Entry:
    """The session entry of a projected entry (``ProjectedEntry`` or ``{sourceEntry, messages}``)."""
    source = getattr(projected, "source", None)
    if source is None and isinstance(projected, Mapping):
        source = projected.get("sourceEntry", projected.get("source"))
    return source if source is not None else {}


def projected_messages(projected: Any) -> list[Message]:
    messages = getattr(projected, "messages", None)
    if messages is None and isinstance(projected, Mapping):
        messages = projected.get("messages")
    return messages or []


def _unedited_messages(entry: Entry) -> list[Message]:
    from pi_lab.session.projection import entry_to_messages

    return entry_to_messages(entry)  # type: ignore[arg-type]


class _View:
    """Uniform access to (entry type, messages) by index, for raw or projected entries."""

    __slots__ = ("source", "messages")

    def __init__(self, source: Callable[[int], Entry], messages: Callable[[int], list[Message]]) -> None:
        self.source = source
        self.messages = messages

    def is_cut_point(self, i: int) -> bool:
        if self.source(i).get("type") == "compaction":
            return False
        return any(map(is_cut_point_message, self.messages(i)))

    def first_cut_point(self, indices: range) -> int:
        """The first index in ``indices`` (walked in its own direction) that is a cut point, else -1."""
        for i in indices:
            if self.is_cut_point(i):
                return i
        return -1

    def is_turn_start(self, i: int) -> bool:
        if self.source(i).get("type") == "compaction":
            return False
        return any(map(is_turn_start_message, self.messages(i)))


def _raw_view(entries: Sequence[Entry]) -> _View:
    cache: dict[int, list[Message]] = {}

    def messages(i: int) -> list[Message]:
        found = cache.get(i)
        if found is None:
            found = cache[i] = _unedited_messages(entries[i])
        return found

    return _View(entries.__getitem__, messages)


def projected_columns(projected: Sequence[Any]) -> tuple[list[Entry], list[list[Message]]]:
    """``(sources, messages)`` of projected entries as two parallel lists."""
    try:
        return [p.source for p in projected], [p.messages for p in projected]
    except AttributeError:
        return [projected_source(p) for p in projected], [projected_messages(p) for p in projected]


def _projected_view(projected: Sequence[Any]) -> _View:
    sources, messages = projected_columns(projected)
    return _View(sources.__getitem__, messages.__getitem__)


def _turn_start_before(view: _View, entry_index: int, start_index: int) -> int:
    for i in range(entry_index, start_index - 1, -1):
        if view.is_turn_start(i):
            return i
    return -1


def _recovery_omission_suffix(view: _View, cut: int, end: int) -> bool:
    """§4 step 3: only a dropped failed attempt (omitted entries + their edits) follows the cut."""
    omitted_ids: set[Any] = set()
    edits: list[Entry] = []
    has_omitted_assistant = False
    for i in range(cut + 1, end):
        source = view.source(i)
        kind = source.get("type")
        if kind == "compaction":
            return False
        if view.messages(i):
            return False  # visible and not omitted
        if kind == "context_edit":
            edits.append(source)
            continue
        if not _unedited_messages(source):
            continue  # intrinsically invisible (metadata)
        omitted_ids.add(source.get("id"))
        if kind == "message":
            message = source.get("message")
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                has_omitted_assistant = True
    if not has_omitted_assistant:
        return False
    for edit in edits:
        if edit.get("replacement") is not None and edit.get("targetId") not in omitted_ids:
            return False
    return True


def _find_cut(view: _View, start: int, end: int, keep_recent_tokens: float, recovery_rule: bool) -> CutPointResult:
    first_cut = view.first_cut_point(range(start, end))
    if first_cut < 0:
        return CutPointResult(start, -1, False)

    cut = first_cut
    exceeded = False
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        tokens = 0
        for message in view.messages(i):
            tokens += estimate_tokens(message)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            exceeded = True
            chosen = view.first_cut_point(range(i, end))
            if chosen < 0:
                # Only tool results follow: fall back to the last cut point before them.
                chosen = view.first_cut_point(range(i - 1, first_cut - 1, -1))
            cut = chosen
            break

    if recovery_rule and exceeded and _recovery_omission_suffix(view, cut, end):
        cut += 1

    # Metadata right before the cut (model/thinking changes, labels, edits…) stays with the kept part.
    while cut > start:
        previous = cut - 1
        if view.source(previous).get("type") == "compaction" or view.messages(previous):
            break
        cut = previous

    if view.is_turn_start(cut):
        return CutPointResult(cut, -1, False)
    turn_start = _turn_start_before(view, cut, start)
    return CutPointResult(cut, turn_start, turn_start != -1)


def find_projected_cut_point(
    projected: Sequence[Any], start_index: int, end_index: int, keep_recent_tokens: float
) -> CutPointResult:
    """Cut point over projected entries ``[start_index, end_index)`` (compaction.md §4).

    Judged on the projected (context-edited) messages, so an omitted entry is never a cut
    point and costs nothing; includes the recovery-omission rule of step 3.
    """
    return _find_cut(_projected_view(projected), start_index, end_index, keep_recent_tokens, True)


def find_cut_in_columns(
    sources: Sequence[Entry], messages: Sequence[list[Message]], start_index: int, end_index: int,
    keep_recent_tokens: float,
) -> CutPointResult:
    """:func:`find_projected_cut_point` over parallel ``sources``/``messages`` lists."""
    return _find_cut(_View(sources.__getitem__, messages.__getitem__), start_index, end_index, keep_recent_tokens, True)


def find_projected_turn_start_index(projected: Sequence[Any], entry_index: int, start_index: int) -> int:
    return _turn_start_before(_projected_view(projected), entry_index, start_index)


def find_cut_point(entries: Sequence[Entry], start_index: int, end_index: int, keep_recent_tokens: float) -> CutPointResult:
    """The entry-based variant: raw session entries, each judged on its un-edited projection."""
    return _find_cut(_raw_view(entries), start_index, end_index, keep_recent_tokens, False)


def find_turn_start_index(entries: Sequence[Entry], entry_index: int, start_index: int) -> int:
    """Index of the turn start at or before ``entry_index`` (not before ``start_index``), or −1."""
    return _turn_start_before(_raw_view(entries), entry_index, start_index)
