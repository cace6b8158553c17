"""What the model sees along a path that grows and shrinks, kept as running sums.

A walk over a session (the timeline's walk down one branch, the corpus extractor's walk of a
whole tree) asks at every step what ``project_path`` and pi's estimates
(``estimate_context_tokens``, ``estimate_projected_context_tokens``, compaction.md §2.4–§2.5)
say about the path so far. Projecting from scratch at every step costs O(depth) per step;
:class:`ContextWalk` answers in O(1):

* entering an entry appends its projected messages' count and estimate to running sums
  (:class:`PathContext`, integer lists), leaving it pops them, so a depth-first walk of a
  tree pays a few list operations per entry;
* only a compaction, a ``context_edit`` or an entry that an earlier edit on the path targets
  (they change messages that came before) rebuilds the stack from the context entries of the
  path, re-using the measures already taken (:class:`MeasureCache`: each (entry, edit) pair is
  estimated once).

A walk that asks mostly for the usage-anchored estimate (the timeline, the export) can be
``lazy``: an assistant entry with a valid usage anchor enters without being estimated, since
everything pi's anchored estimate counts lies after the last anchor. Its chars/4 is taken only
when a sum over the whole context is asked for (no trusted anchor: after a compaction or an
edit, or the plain sum), and only for the anchors still on the path then.

This is the one copy of those rules outside ``project_path`` itself; tests compare its numbers
with the engine's projection at every call (tests/view/test_timeline.py,
tests/corpus/test_corpus_engine.py).
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

from pi_lab.compaction.tokens import calculate_context_tokens, call_usage, estimate_tokens, usage_anchor
from pi_lab.session.entries import Entry
from pi_lab.session.projection import (
    context_edits,
    context_entries_of_path,
    entry_to_messages,
    project_with_edit,
    replay_system_state,
)

__all__ = ["Measure", "measure", "MeasureCache", "PathContext", "rebuild", "ContextWalk", "call_usage"]

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
    entries by ``id(entry)``; a lazy walk keeps the un-edited entries of one message that is
    neither an assistant nor a system message in ``simple``, by their estimate alone (all their
    measure says): an integer per entry instead of a tuple the garbage collector would scan;
    ``anchored`` likewise holds the estimates of the usage anchors it had to measure."""

    __slots__ = ("plain", "edited", "simple", "anchored")

    def __init__(self) -> None:
        self.plain: dict[int, Measure] = {}
        self.edited: dict[tuple[int, int], Measure] = {}
        self.simple: dict[int, int] = {}
        self.anchored: dict[int, int] = {}

    def anchor_estimate(self, entry: Entry) -> int:
        """pi's estimate of an un-edited entry whose one message is an assistant message with
        a valid usage anchor (:func:`call_usage`), the one part of its measure a lazy walk
        leaves out."""
        found = self.anchored.get(id(entry))
        if found is None:
            found = self.anchored[id(entry)] = estimate_tokens(entry_to_messages(entry)[0])
        return found

    def of(self, entry: Entry, edit: Entry | None) -> Measure:
        if edit is None:
            found = self.plain.get(id(entry))
            if found is None:
                tokens = self.simple.get(id(entry))
                if tokens is not None:
                    return (1, tokens, None, 0, None)
                found = self.plain[id(entry)] = measure(entry_to_messages(entry))
            return found
        key = (id(entry), id(edit))
        found = self.edited.get(key)
        if found is None:
            found = self.edited[key] = measure(project_with_edit(entry, edit))
        return found


class PathContext:
    """The projection of one path: its context entries and, per entry, running sums.

    ``counts[k]`` and ``totals[k]`` are the message count and pi's estimate of the context
    entries before ``entries[k]`` (index 0: the empty context), so every sum the gauge asks
    for is O(1). Entering and leaving an entry appends and pops two integers: the lists hold
    no tuple per entry, nothing the garbage collector has to scan on a long path. The rarer
    facts are stacks that an entry pushes only when it has one, each with the entry's position
    so that :meth:`pop` knows whose it is:

    * the usage anchors on the path (``anchor_at`` positions, ``anchor_usage`` their context
      tokens, ``anchor_through`` the estimate through the anchoring message); the last one is
      what pi's estimate starts from;
    * the entries with system messages, ``systems``: (position, system-message estimate and
      count through it, its system messages).

    In a lazy context (``lazy`` is the cache to measure with) ``totals`` leave out the entries
    in ``pending``: the positions of the un-edited anchors pushed without an estimate. Each of
    them becomes the last anchor when pushed, so nothing after the last anchor is pending and
    the anchored estimate needs none of them; ``resolved[j]`` is the estimate of the first
    ``j + 1`` pending entries, filled when a full sum is asked for.
    """

    __slots__ = ("entries", "counts", "totals", "anchor_at", "anchor_usage", "anchor_through", "systems",
                 "edits", "_system", "lazy", "pending", "resolved")

    def __init__(self, lazy: MeasureCache | None = None) -> None:
        self.entries: list[Entry] = []
        self.counts: list[int] = [0]
        self.totals: list[int] = [0]
        self.anchor_at: list[int] = []
        self.anchor_usage: list[Any] = []
        self.anchor_through: list[int] = []
        self.systems: list[tuple[int, int, int, list[dict[str, Any]]]] = []
        self.edits: dict[str, Entry] = {}
        # pi's estimate of the replayed system state; None until asked for. The system messages
        # change only when an entry carrying some is pushed or popped, which clears it.
        self._system: int | None = None
        self.lazy = lazy
        self.pending: list[int] = []
        self.resolved: list[int] = []

    def push(self, entry: Entry, measure: Measure) -> None:
        count, tokens, local_anchor, sys_tokens, sys_messages = measure
        entries = self.entries
        position = len(entries)
        entries.append(entry)
        counts, totals = self.counts, self.totals
        before = totals[-1]
        counts.append(counts[-1] + count)
        totals.append(before + tokens)
        if local_anchor is not None:
            self.anchor_at.append(position)
            self.anchor_usage.append(local_anchor[0])
            self.anchor_through.append(before + local_anchor[1])
        if sys_messages:
            systems = self.systems
            last = systems[-1] if systems else (0, 0, 0)
            systems.append((position, last[1] + sys_tokens, last[2] + len(sys_messages), sys_messages))
            self._system = None

    def push_tokens(self, entry: Entry, tokens: int) -> None:
        """Push an entry of one message, neither an assistant nor a system message, of pi's
        estimate ``tokens`` (:meth:`push` of its measure, without the tuple)."""
        self.entries.append(entry)
        counts, totals = self.counts, self.totals
        counts.append(counts[-1] + 1)
        totals.append(totals[-1] + tokens)

    def push_anchor(self, entry: Entry, usage_tokens: Any) -> None:
        """Push a one-message entry whose message is a valid usage anchor of ``usage_tokens``
        without estimating it (a lazy context only)."""
        entries = self.entries
        position = len(entries)
        entries.append(entry)
        counts, totals = self.counts, self.totals
        before = totals[-1]
        counts.append(counts[-1] + 1)
        totals.append(before)  # its own estimate is not in the totals
        self.anchor_at.append(position)
        self.anchor_usage.append(usage_tokens)
        self.anchor_through.append(before)
        self.pending.append(position)

    def pop(self) -> None:
        entries = self.entries
        entries.pop()
        position = len(entries)
        self.counts.pop()
        self.totals.pop()
        anchor_at = self.anchor_at
        if anchor_at and anchor_at[-1] == position:
            anchor_at.pop()
            self.anchor_usage.pop()
            self.anchor_through.pop()
            pending = self.pending
            if pending and pending[-1] == position:  # (a pending entry is an anchor)
                pending.pop()
                if len(self.resolved) > len(pending):
                    self.resolved.pop()
        systems = self.systems
        if systems and systems[-1][0] == position:
            systems.pop()
            self._system = None

    def _pending_tokens(self) -> int:
        """The estimate of the entries pushed unmeasured, measured now (once per context)."""
        pending, resolved = self.pending, self.resolved
        total = resolved[-1] if resolved else 0
        if len(resolved) < len(pending):
            anchor_estimate = self.lazy.anchor_estimate  # type: ignore[union-attr]  (only a lazy context has any)
            entries = self.entries
            for j in range(len(resolved), len(pending)):
                total += anchor_estimate(entries[pending[j]])
                resolved.append(total)
        return total

    @property
    def sums(self) -> list[tuple[int, int, int, int, Any, Any]]:
        """The running sums as one tuple per context entry (``sums[0]`` the empty context):
        (messages, estimate, system-message estimate, system messages, anchor, that entry's
        system messages), the anchor being (usage tokens, estimate through it, its entry) of
        the last usage anchor so far. Built on demand (comparisons, inspection)."""
        out: list[tuple[int, int, int, int, Any, Any]] = []
        anchor: Any = None
        sys_tokens = sys_count = 0
        a = s = 0
        entries, systems = self.entries, self.systems
        for k in range(len(entries) + 1):
            own = None
            if k:
                while a < len(self.anchor_at) and self.anchor_at[a] == k - 1:
                    anchor = (self.anchor_usage[a], self.anchor_through[a], entries[k - 1])
                    a += 1
                if s < len(systems) and systems[s][0] == k - 1:
                    _position, sys_tokens, sys_count, own = systems[s]
                    s += 1
            out.append((self.counts[k], self.totals[k], sys_tokens, sys_count, anchor, own))
        return out

    @property
    def message_count(self) -> int:
        return self.counts[-1]

    @property
    def plain_tokens(self) -> int:
        """Sum of pi's per-message estimates (no usage anchor)."""
        if self.pending:
            return self.totals[-1] + self._pending_tokens()
        return self.totals[-1]

    @property
    def estimate(self) -> Any:
        """``estimate_context_tokens(messages).tokens``: last anchor's usage + what follows."""
        if not self.anchor_at:
            return self.totals[-1]  # (nothing is pending without an anchor)
        return self.anchor_usage[-1] + (self.totals[-1] - self.anchor_through[-1])

    def anchor_entry(self) -> Entry | None:
        anchor_at = self.anchor_at
        return self.entries[anchor_at[-1]] if anchor_at else None

    def anchor_parts(self) -> tuple[Any, int] | None:
        """(usage tokens, chars/4 of what follows) of the last usage anchor, else None."""
        if not self.anchor_at:
            return None
        return self.anchor_usage[-1], self.totals[-1] - self.anchor_through[-1]

    def has_system(self) -> bool:
        """Whether the projected messages hold a system message."""
        return bool(self.systems)

    def system_messages(self) -> list[dict[str, Any]]:
        """The projected system messages, in order (for replaying the system state)."""
        return [m for s in self.systems for m in s[3]]

    def non_system_tokens(self) -> int:
        """pi's estimate of every projected message that is not a system message."""
        systems = self.systems
        return self.plain_tokens - (systems[-1][1] if systems else 0)

    def unanchored_estimate(self) -> Any:
        """pi's estimate when no usage is trusted (compaction.md §2.5): the system messages
        count as the one state they replay into, every other message as it is."""
        if not self.systems:
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
            start = _first_with_id(entries, target, start)
        ctx = PathContext(self.lazy)
        ctx.entries = entries[:start]
        ctx.counts = self.counts[: start + 1]
        ctx.totals = self.totals[: start + 1]
        ctx.edits = edits
        n = _before(self.anchor_at, start)
        ctx.anchor_at, ctx.anchor_usage, ctx.anchor_through = self.anchor_at[:n], self.anchor_usage[:n], self.anchor_through[:n]
        n = _before(self.pending, start)
        ctx.pending, ctx.resolved = self.pending[:n], self.resolved[:n]
        systems = self.systems
        n = len(systems)
        while n and systems[n - 1][0] >= start:
            n -= 1
        ctx.systems = systems[:n]
        for k in range(start, len(entries)):
            entry = entries[k]
            if k > 0 and entry.get("type") == "compaction":
                ctx.push(entry, _EMPTY)  # an older checkpoint inside the kept range
                continue
            entry_id = entry.get("id")
            _push(ctx, entry, edits.get(entry_id) if isinstance(entry_id, str) else None, cache)
        ctx.push(edit, cache.of(edit, None))
        return ctx


def _first_with_id(entries: list[Entry], target: str, missing: int) -> int:
    """The position of the first entry whose id is ``target`` (``missing`` when none).

    Every edit looks its target up in the whole context, which after a long stretch without
    a compaction is thousands of entries: the ids are read and searched at C speed."""
    try:
        return list(map(dict.get, entries, repeat("id"))).index(target)
    except ValueError:
        return missing
    except TypeError:  # an entry that is no dict: the same search, one entry at a time
        for k, entry in enumerate(entries):
            if entry.get("id") == target:
                return k
        return missing


def _before(positions: list[int], start: int) -> int:
    """How many of the ascending ``positions`` lie before ``start`` (counted from the end:
    an edit's target is usually recent)."""
    n = len(positions)
    while n and positions[n - 1] >= start:
        n -= 1
    return n


def _push(ctx: PathContext, entry: Entry, edit: Entry | None, cache: MeasureCache) -> None:
    """Push ``entry``'s measure; in a lazy context an anchor not measured before is pushed
    without one."""
    if ctx.lazy is not None and edit is None:
        tokens = cache.simple.get(id(entry))
        if tokens is not None:
            ctx.push_tokens(entry, tokens)
            return
        if id(entry) not in cache.plain and entry.get("type") == "message":
            usage_tokens = call_usage(entry.get("message"))
            if usage_tokens is not None:
                tokens = cache.anchored.get(id(entry))
                if tokens is None:
                    ctx.push_anchor(entry, usage_tokens)
                else:  # measured in an earlier context
                    ctx.push(entry, (1, tokens, (usage_tokens, tokens), 0, None))
                return
    ctx.push(entry, cache.of(entry, edit))


def rebuild(context_entries: list[Entry], cache: MeasureCache, lazy: bool = False) -> PathContext:
    """A fresh context from its context entries, with the rules of ``project_path``
    (``lazy``: a lazy context measuring with ``cache``)."""
    ctx = PathContext(cache if lazy else None)
    ctx.edits = edits = context_edits(context_entries)
    for i, entry in enumerate(context_entries):
        if i > 0 and entry.get("type") == "compaction":
            ctx.push(entry, _EMPTY)  # an older checkpoint inside the kept range
            continue
        entry_id = entry.get("id")
        _push(ctx, entry, edits.get(entry_id) if isinstance(entry_id, str) else None, cache)
    return ctx


class ContextWalk:
    """The projection of a root-to-node path while the path grows (:meth:`enter`) and
    shrinks (:meth:`leave`, undoing the last :meth:`enter`).

    ``context`` is the :class:`PathContext` of the path walked so far; :meth:`projected` is
    pi's gauge estimate of it (``estimate_projected_context_tokens``), ``compaction_id`` the id
    of the compaction in effect. ``depth_of`` maps ``id(entry)`` to the depth it was entered
    at (the first entry: 0) for the entries that carry a usage anchor, the only ones whose
    depth the trust rule asks for; pass one dict to several walks of the same entries to
    share it. A ``lazy`` walk (see the module's notes) measures an assistant's usage anchor
    only when a sum over the whole context needs it.
    """

    __slots__ = ("path", "context", "cache", "depth_of", "invalidated_at", "compaction_id", "_undo", "lazy")

    def __init__(self, cache: MeasureCache | None = None, depth_of: dict[int, int] | None = None,
                 lazy: bool = False) -> None:
        self.path: list[Entry] = []
        self.cache = cache if cache is not None else MeasureCache()
        self.lazy = lazy
        self.context = PathContext(self.cache if lazy else None)
        self.depth_of: dict[int, int] = depth_of if depth_of is not None else {}
        # Depth of the last compaction or context_edit on the path (-1: none): usage measured
        # at or before it no longer describes what the model sees.
        self.invalidated_at = -1
        self.compaction_id: str | None = None
        # Per entered entry: None (its measure was pushed) or what enter replaced, to restore.
        self._undo: list[Any] = []

    def enter(self, entry: Entry) -> Any:
        """Extend the path by ``entry`` (a child of the path's last entry).

        Returns what the provider measured for the entry when it is a call: the context tokens
        of its un-edited message's usage when that is a valid anchor, else None."""
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
            self.context = rebuild(context_entries_of_path(path), self.cache, self.lazy)
            return None  # (a compaction's messages hold no assistant message)
        if kind == "context_edit":
            self._undo.append((ctx, self.invalidated_at, self.compaction_id))
            self.invalidated_at = depth
            self.context = ctx.with_edit(entry, self.cache)
            return None  # (it projects no message of its own)
        self._undo.append(None)
        edits = ctx.edits
        if edits:
            entry_id = entry.get("id")
            # an earlier edit on the path may name this entry: then its messages are the edited ones
            edit = edits.get(entry_id) if type(entry_id) is str else None
            if edit is not None:
                own = self.cache.of(entry, edit)
                if own[2] is not None:  # only a usage anchor's depth is ever asked for
                    self.depth_of[id(entry)] = depth
                ctx.push(entry, own)
                # the call as it was made, before the edit
                return call_usage(entry.get("message")) if kind == "message" else None
        plain = self.cache.plain
        if ctx.lazy is not None:
            # Measured here without a look in the cache: a walk enters an entry once (a
            # compaction's or an edit's rebuild takes the measures from the cache).
            messages = entry_to_messages(entry)
            if len(messages) == 1:
                message = messages[0]
                role = message.get("role")
                if role == "assistant":
                    usage_tokens = call_usage(message)
                    if usage_tokens is not None:
                        self.depth_of[id(entry)] = depth
                        ctx.push_anchor(entry, usage_tokens)
                        return usage_tokens
                elif role != "system":
                    tokens = self.cache.simple[id(entry)] = estimate_tokens(message)
                    ctx.push_tokens(entry, tokens)
                    return None
            own = plain[id(entry)] = measure(messages)
        else:
            # (MeasureCache.of for an un-edited entry, inline: this runs for every entry)
            own = plain.get(id(entry))
            if own is None:
                own = plain[id(entry)] = measure(entry_to_messages(entry))
        ctx.push(entry, own)
        anchor = own[2]
        if anchor is None:
            return None
        self.depth_of[id(entry)] = depth  # only a usage anchor's depth is ever asked for
        return anchor[0]

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
        self.context = rebuild(context_entries_of_path(path), self.cache, self.lazy)
        first = self.context.entries[:1]
        entry_id = first[0].get("id") if first and first[0].get("type") == "compaction" else None
        self.compaction_id = entry_id if isinstance(entry_id, str) else None
        self.invalidated_at = -1

    def trusted_anchor(self) -> Entry | None:
        """The entry of the last usage anchor when pi trusts it, else None.

        pi finds the anchor's entry on the branch by its id and trusts its usage only when it
        lies after the last compaction or context_edit; an entry without a (non-empty string)
        id is never found."""
        ctx = self.context
        anchor_at = ctx.anchor_at
        if not anchor_at:
            return None
        anchor = ctx.entries[anchor_at[-1]]
        entry_id = anchor.get("id")
        if not (entry_id.__class__ is str and entry_id):
            return None
        return anchor if self.depth_of.get(id(anchor), -1) > self.invalidated_at else None

    def anchored(self) -> tuple[Any, int] | None:
        """(usage tokens, chars/4 of what follows) of the trusted usage anchor, else None: the
        two parts of :meth:`projected` when pi trusts a measured usage."""
        if self.trusted_anchor() is None:
            return None
        return self.context.anchor_parts()

    def projected_from(self) -> tuple[Any, Entry | None]:
        """:meth:`projected` and :meth:`trusted_anchor` in one step (a timeline's call row:
        the rule of :meth:`trusted_anchor` written out, as it runs for every call)."""
        ctx = self.context
        anchor_at = ctx.anchor_at
        if anchor_at:
            anchor = ctx.entries[anchor_at[-1]]
            entry_id = anchor.get("id")
            if entry_id.__class__ is str and entry_id and self.depth_of.get(id(anchor), -1) > self.invalidated_at:
                return ctx.anchor_usage[-1] + (ctx.totals[-1] - ctx.anchor_through[-1]), anchor
        return ctx.unanchored_estimate(), None

    def projected(self) -> Any:
        """pi's gauge estimate of the path so far (``estimate_projected_context_tokens``)."""
        ctx = self.context
        if self.trusted_anchor() is not None:
            return ctx.estimate
        return ctx.unanchored_estimate()
