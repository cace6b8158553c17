"""What the model sees along a path that grows and shrinks, kept as running sums.

A walk over a session (the timeline's walk down one branch, the corpus extractor's walk of a
whole tree) asks at every step what ``project_path`` and pi's estimates
(``estimate_context_tokens``, ``estimate_projected_context_tokens``, compaction.md §2.4–§2.5)
say about the path so far. Projecting from scratch at every step costs O(depth) per step;
:class:`ContextWalk` answers in O(1):

* entering an entry appends its projected messages' measures to a stack of running sums
  (:class:`PathContext`), leaving it pops them, so a depth-first walk of a tree pays two list
  operations per entry;
* only a compaction, a ``context_edit`` or an entry that an earlier edit on the path targets
  (they change messages that came before) rebuilds the stack from the context entries of the
  path, re-using the measures already taken (:class:`MeasureCache`: each (entry, edit) pair is
  estimated once).

This is the one copy of those rules outside ``project_path`` itself; tests compare its numbers
with the engine's projection at every call (tests/view/test_timeline.py,
tests/corpus/test_corpus_engine.py).
"""

from __future__ import annotations

from typing import Any

from pi_lab.compaction.tokens import calculate_context_tokens, estimate_tokens, usage_anchor
from pi_lab.session.entries import Entry
from pi_lab.session.projection import (
    _context_entries_of_path,
    context_edits,
    entry_to_messages,
    project_with_edit,
    replay_system_state,
)

__all__ = ["Measure", "measure", "MeasureCache", "PathContext", "rebuild", "ContextWalk"]

# What one context entry contributes, measured once: (message count, pi's estimate of its
# messages, its local usage anchor or None, the estimate of its system messages, its system
# messages or None). The anchor is (usage tokens, estimate through the anchoring message)
# counted from the entry's first message.
Measure = tuple[int, int, "tuple[Any, int] | None", int, "list[dict[str, Any]] | None"]

_EMPTY: Measure = (0, 0, None, 0, None)


def measure(messages: list[dict[str, Any]]) -> Measure:
    """The :data:`Measure` of one entry's projected messages."""
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


class MeasureCache:
    """The :data:`Measure` of (entry, edit) pairs, computed once per pair.

    Keyed by object identity, so the entries and edits must outlive the cache (they do: the
    walk holds them on its path, the session holds them all). ``plain`` holds the un-edited
    entries by ``id(entry)``."""

    __slots__ = ("plain", "edited")

    def __init__(self) -> None:
        self.plain: dict[int, Measure] = {}
        self.edited: dict[tuple[int, int], Measure] = {}

    def of(self, entry: Entry, edit: Entry | None) -> Measure:
        if edit is None:
            found = self.plain.get(id(entry))
            if found is None:
                found = self.plain[id(entry)] = measure(entry_to_messages(entry))
            return found
        key = (id(entry), id(edit))
        found = self.edited.get(key)
        if found is None:
            found = self.edited[key] = measure(project_with_edit(entry, edit))
        return found


class PathContext:
    """The projection of one path: its context entries and, per entry, running sums.

    ``sums[k]`` (``sums[0]`` is the empty context) is (messages, estimate, system-message
    estimate, system messages, anchor, that entry's system messages) through context entry
    ``k - 1``; the anchor is (usage tokens, estimate through that message, its entry) of the
    last valid usage anchor so far, so the context estimate of the whole list is O(1).
    One tuple per entry keeps entering and leaving an entry at two list operations.
    """

    __slots__ = ("entries", "sums", "edits", "_system")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.sums: list[tuple[int, int, int, int, Any, Any]] = [(0, 0, 0, 0, None, None)]
        self.edits: dict[str, Entry] = {}
        # pi's estimate of the replayed system state; None until asked for. The system messages
        # change only when an entry carrying some is pushed or popped, which clears it.
        self._system: int | None = None

    def push(self, entry: Entry, measure: Measure) -> None:
        count, tokens, local_anchor, sys_tokens, sys_messages = measure
        total_count, total_tokens, total_sys, sys_count, anchor, _ = self.sums[-1]
        if local_anchor is not None:
            anchor = (local_anchor[0], total_tokens + local_anchor[1], entry)
        if sys_messages:
            self._system = None
        self.entries.append(entry)
        self.sums.append((
            total_count + count, total_tokens + tokens, total_sys + sys_tokens,
            sys_count + (len(sys_messages) if sys_messages else 0), anchor, sys_messages,
        ))

    def pop(self) -> None:
        self.entries.pop()
        if self.sums.pop()[5]:
            self._system = None

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

    def unanchored_estimate(self) -> Any:
        """pi's estimate when no usage is trusted (compaction.md §2.5): the system messages
        count as the one state they replay into, every other message as it is."""
        if not self.has_system():
            return self.plain_tokens  # without system messages that is the plain sum
        if self._system is None:
            state = replay_system_state(self.system_messages())
            self._system = estimate_tokens(state) if state is not None else 0
        return self._system + self.non_system_tokens()

    def with_edit(self, edit: Entry, cache: MeasureCache) -> PathContext:
        """A new context: this one followed by the ``context_edit`` ``edit``, equal to
        ``rebuild(self.entries + [edit])``.

        Only the entries from the edit's target on change, so the sums before it are copied
        (a failed call is dropped by an edit right after it: usually a few entries)."""
        entries = self.entries
        target = edit.get("targetId")
        edits = dict(self.edits)
        start = len(entries)
        if isinstance(target, str):
            edits[target] = edit
            for k, entry in enumerate(entries):
                if entry.get("id") == target:
                    start = k
                    break
        ctx = PathContext()
        ctx.entries = entries[:start]
        ctx.sums = self.sums[: start + 1]
        ctx.edits = edits
        for k in range(start, len(entries)):
            entry = entries[k]
            if k > 0 and entry.get("type") == "compaction":
                ctx.push(entry, _EMPTY)  # an older checkpoint inside the kept range
                continue
            entry_id = entry.get("id")
            ctx.push(entry, cache.of(entry, edits.get(entry_id) if isinstance(entry_id, str) else None))
        ctx.push(edit, cache.of(edit, None))
        return ctx


def rebuild(context_entries: list[Entry], cache: MeasureCache) -> PathContext:
    """A fresh context from its context entries, with the rules of ``project_path``."""
    ctx = PathContext()
    ctx.edits = edits = context_edits(context_entries)
    for i, entry in enumerate(context_entries):
        if i > 0 and entry.get("type") == "compaction":
            ctx.push(entry, _EMPTY)  # an older checkpoint inside the kept range
            continue
        entry_id = entry.get("id")
        edit = edits.get(entry_id) if isinstance(entry_id, str) else None
        ctx.push(entry, cache.of(entry, edit))
    return ctx


class ContextWalk:
    """The projection of a root-to-node path while the path grows (:meth:`enter`) and
    shrinks (:meth:`leave`, undoing the last :meth:`enter`).

    ``context`` is the :class:`PathContext` of the path walked so far; :meth:`projected` is
    pi's gauge estimate of it (``estimate_projected_context_tokens``), ``compaction_id`` the id
    of the compaction in effect. ``depth_of`` maps ``id(entry)`` to the depth it was entered
    at (the first entry: 0) for the entries that carry a usage anchor, the only ones whose
    depth the trust rule asks for; pass one dict to several walks of the same entries to
    share it.
    """

    __slots__ = ("path", "context", "cache", "depth_of", "invalidated_at", "compaction_id", "_undo")

    def __init__(self, cache: MeasureCache | None = None, depth_of: dict[int, int] | None = None) -> None:
        self.path: list[Entry] = []
        self.context = PathContext()
        self.cache = cache if cache is not None else MeasureCache()
        self.depth_of: dict[int, int] = depth_of if depth_of is not None else {}
        # Depth of the last compaction or context_edit on the path (-1: none): usage measured
        # at or before it no longer describes what the model sees.
        self.invalidated_at = -1
        self.compaction_id: str | None = None
        # Per entered entry: None (its measure was pushed) or what enter replaced, to restore.
        self._undo: list[Any] = []

    def enter(self, entry: Entry) -> None:
        """Extend the path by ``entry`` (a child of the path's last entry)."""
        path = self.path
        depth = len(path)
        path.append(entry)
        ctx = self.context
        kind = entry.get("type")
        if kind == "compaction":
            self._undo.append((ctx, self.invalidated_at, self.compaction_id))
            self.invalidated_at = depth
            entry_id = entry.get("id")
            self.compaction_id = entry_id if isinstance(entry_id, str) else None
            self.context = rebuild(_context_entries_of_path(path), self.cache)
            return
        if kind == "context_edit":
            self._undo.append((ctx, self.invalidated_at, self.compaction_id))
            self.invalidated_at = depth
            self.context = ctx.with_edit(entry, self.cache)
            return
        self._undo.append(None)
        edits = ctx.edits
        entry_id = entry.get("id")
        # an earlier edit on the path may name this entry: then its messages are the edited ones
        edit = edits.get(entry_id) if edits and entry_id.__class__ is str else None
        own = self.cache.of(entry, edit)
        if own[2] is not None:  # only a usage anchor's depth is ever asked for
            self.depth_of[id(entry)] = depth
        ctx.push(entry, own)

    def leave(self) -> None:
        """Undo the last :meth:`enter`."""
        self.path.pop()
        saved = self._undo.pop()
        if saved is None:
            self.context.pop()
        else:
            self.context, self.invalidated_at, self.compaction_id = saved

    def restart(self, path: list[Entry]) -> None:
        """Make the context that of ``path`` computed from scratch (entries the walk did not
        enter, e.g. on a parentId cycle); usage in it is trusted only by ``depth_of``."""
        self.context = rebuild(_context_entries_of_path(path), self.cache)
        first = self.context.entries[:1]
        entry_id = first[0].get("id") if first and first[0].get("type") == "compaction" else None
        self.compaction_id = entry_id if isinstance(entry_id, str) else None
        self.invalidated_at = -1

    def trusted_anchor(self) -> Entry | None:
        """The entry of the last usage anchor when pi trusts it, else None.

        pi finds the anchor's entry on the branch by its id and trusts its usage only when it
        lies after the last compaction or context_edit; an entry without a (non-empty string)
        id is never found."""
        anchor = self.context.anchor_entry()
        if anchor is None:
            return None
        entry_id = anchor.get("id")
        if not (entry_id.__class__ is str and entry_id):
            return None
        return anchor if self.depth_of.get(id(anchor), -1) > self.invalidated_at else None

    def anchored(self) -> tuple[Any, int] | None:
        """(usage tokens, chars/4 of what follows) of the trusted usage anchor, else None: the
        two parts of :meth:`projected` when pi trusts a measured usage."""
        if self.trusted_anchor() is None:
            return None
        _count, tokens, _sys, _n, anchor, _ = self.context.sums[-1]
        return anchor[0], tokens - anchor[1]

    def projected(self) -> Any:
        """pi's gauge estimate of the path so far (``estimate_projected_context_tokens``)."""
        ctx = self.context
        if self.trusted_anchor() is not None:
            return ctx.estimate
        return ctx.unanchored_estimate()
