"""The context over time: one row per model call along a branch, plus markers.

For every assistant message on the path root → leaf the timeline gives two numbers that are
kept apart:

* ``measured``: what the provider reported for that call, by pi's usage rules
  (``calculate_context_tokens`` of the message's usage when the message is a valid usage anchor:
  not aborted, not an error, a positive total), else ``None``;
* ``estimated``: pi's estimate of the context that was sent for that call, i.e.
  ``estimate_projected_context_tokens`` of the projection at the call's parent (what the
  model saw): the last trusted usage plus chars/4 of what came after it, or chars/4 of every
  projected message when no usage is trusted (after a compaction or a context edit).

The estimate is computed in one forward walk: :class:`_ContextWalk` keeps running sums of
the projection of the path so far (each entry is estimated once when it arrives; a compaction
re-estimates only its kept region, a context edit only its target). The result equals
projecting from scratch at every call (tests/view/test_timeline.py checks this at every call
of the real fixtures and of generated sessions).
"""

from __future__ import annotations

import bisect
from typing import Any

from pi_lab.compaction.tokens import calculate_context_tokens, estimate_tokens, usage_anchor, whole_tokens
from pi_lab.llm.catalog import context_window_for
from pi_lab.llm.errors import is_context_overflow
from pi_lab.session.projection import entry_to_messages, project_with_edit, replay_system_state
from pi_lab.view._common import is_system_entry, manager_of, model_id_of, require_entry, str_or_none

__all__ = ["context_timeline", "TimelineWalk"]

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)
_ERROR_PREVIEW = 300
_OVERFLOW_STOPS = ("error", "stop", "length")


def _sums(messages: list[dict[str, Any]]) -> tuple[int, int, bool]:
    """(Σ estimates, Σ estimates of non-system messages, holds a system message)."""
    total = nonsystem = 0
    system = False
    for message in messages:
        tokens = estimate_tokens(message)
        total += tokens
        if message.get("role") == "system":
            system = True
        else:
            nonsystem += tokens
    return total, nonsystem, system


class _ContextWalk:
    """The projection of ``path[:i]`` as ``i`` grows, kept as running sums of pi's estimates.

    Mirrors ``project_path`` + ``estimate_projected_context_tokens`` (compaction.md §2.5).
    Context entries are the latest compaction C, its kept region (system message entries
    dropped; older compactions there contribute nothing) and everything after C; the latest
    ``context_edit`` per target among them applies wherever the target is. Two sums are kept:

    * ``nonsystem``: chars/4 of every non-system projected message — pi's estimate when no
      usage is trusted, plus the replayed system state (recomputed only when it changes);
    * ``trailing``: chars/4 of every message after the last usage anchor, valid while that
      anchor is trusted (its entry lies after the last compaction / context edit).

    Each entry is projected and estimated once when it arrives; a context edit re-estimates only
    its target, a compaction only its kept region. Assistant messages are the costly ones to
    estimate (thinking, JSON of tool arguments) and, being usage anchors, are needed only by the
    untrusted sum: they wait in ``pending`` until an estimate without trusted usage asks for
    them, and many never do (a compaction replaces them first).
    """

    def __init__(self, path: list[Entry]):
        self.path = path
        self.position: dict[str, int] = {}  # id → index on the path walked so far
        self.edits: dict[str, Entry] = {}  # target id → latest edit among context entries
        self.compaction_at = -1  # index of the compaction in effect
        self.kept_from = -1  # index of its first kept entry (-1: none kept)
        self.invalidated_at = -1  # index of the last compaction or context_edit
        self.compaction_id: str | None = None
        self.nonsystem = 0
        self.pending: set[int] = set()  # positions of assistants not yet in ``nonsystem``
        self.system_sources: list[int] = []  # context entries whose messages include system ones
        self.system_tokens: int | None = 0  # None: to be recomputed
        self.anchor_tokens: int | float | None = None  # None: no trusted anchor
        self.anchor_id: str | None = None
        self.trailing = 0

    def _edit_for(self, entry: Entry) -> Entry | None:
        entry_id = entry.get("id")
        return self.edits.get(entry_id) if self.edits and entry_id.__class__ is str else None

    def add(self, index: int, entry: Entry, call: tuple[dict[str, Any], Any] | None = None) -> None:
        """Extend the walk by ``path[index]``.

        ``call``: for an assistant message entry, its message and the context tokens of its
        usage when that usage is a valid anchor (else None), already computed for the row.
        Only assistant message entries can carry an anchor, so others skip that check.
        """
        kind = entry.get("type")
        entry_id = entry.get("id")
        if kind == "compaction":
            self._compact(index, entry)
        elif kind == "context_edit":
            self._edit(index, entry)
        else:
            edits = self.edits
            edit = edits.get(entry_id) if edits and entry_id.__class__ is str else None
            messages = entry_to_messages(entry) if edit is None else project_with_edit(entry, edit)
            if call is not None and call[1] is not None and len(messages) == 1 and messages[0] is call[0]:
                # an unedited assistant with valid usage: the new anchor (trusted when pi can
                # find its entry by id, see _anchor), estimated only on demand
                self.pending.add(index)
                if entry_id.__class__ is str and entry_id:
                    self.anchor_tokens = call[1]
                    self.anchor_id = entry_id
                    self.trailing = 0
                else:
                    self.anchor_tokens = None
            elif messages:
                total = nonsystem = 0
                for message in messages:
                    tokens = estimate_tokens(message)
                    total += tokens
                    if message.get("role") == "system":
                        if not self.system_sources or self.system_sources[-1] != index:
                            self.system_sources.append(index)
                        self.system_tokens = None
                    else:
                        nonsystem += tokens
                self.nonsystem += nonsystem
                # a new anchor restarts the trailing sum; anything else extends it
                anchored = call is not None and self._anchor(index, entry, messages, call)
                if not anchored and self.anchor_tokens is not None:
                    self.trailing += total
        if entry_id.__class__ is str:
            self.position[entry_id] = index

    def _anchor(self, index: int, entry: Entry, messages: list[dict[str, Any]], call: tuple[dict[str, Any], Any]) -> bool:
        """Make the last valid usage anchor in ``messages`` current; False when there is none."""
        if len(messages) == 1 and messages[0] is call[0]:
            if call[1] is None:
                return False
            k, tokens = 0, call[1]
        else:  # an edited copy or a normalised message: look at what the projection holds
            for k in range(len(messages) - 1, -1, -1):
                usage = usage_anchor(messages[k])
                if usage is not None:
                    tokens = calculate_context_tokens(usage)
                    break
            else:
                return False
        entry_id = entry.get("id")
        # pi locates the anchor's entry by id; an entry without a (truthy) id is never found,
        # so its usage is not trusted (and, being the last anchor, hides any earlier one). An
        # entry arriving now always lies after the last compaction or edit.
        if not (isinstance(entry_id, str) and entry_id):
            self.anchor_tokens = None
            return True
        self.anchor_tokens = tokens
        self.anchor_id = entry_id
        self.trailing = sum(estimate_tokens(m) for m in messages[k + 1 :]) if k + 1 < len(messages) else 0
        return True

    def _in_context(self, position: int) -> bool:
        """Whether the entry at ``position`` (already walked) is a context entry with messages."""
        if self.compaction_at < 0 or position >= self.compaction_at:
            return True  # no compaction yet, the compaction itself, or after it
        if self.kept_from < 0 or position < self.kept_from:
            return False
        entry = self.path[position]
        # system deltas before the checkpoint are carried by its snapshot; an older checkpoint
        # inside the kept region contributes nothing
        return entry.get("type") != "compaction" and not is_system_entry(entry)

    def _edit(self, index: int, edit: Entry) -> None:
        self.invalidated_at = index
        self.anchor_tokens = None
        target = edit.get("targetId")
        if not isinstance(target, str):
            return
        previous = self.edits.get(target)
        self.edits[target] = edit
        position = self.position.get(target)
        if position is None or position in self.pending or not self._in_context(position):
            return  # not walked yet or not estimated yet (edited when it is), or not in the context
        entry = self.path[position]
        _, before, had_system = _sums(project_with_edit(entry, previous))
        messages = project_with_edit(entry, edit)
        _, after, has_system = _sums(messages)
        self.nonsystem += after - before
        if had_system or has_system:
            self.system_tokens = None
            if has_system and position not in self.system_sources:
                bisect.insort(self.system_sources, position)  # path order is context order here

    def _compact(self, index: int, compaction: Entry) -> None:
        first_kept = compaction.get("firstKeptEntryId")
        kept_from = -1
        if isinstance(first_kept, str):
            found = self.position.get(first_kept)
            kept_from = found if found is not None else -1
        else:
            for j in range(index - 1, -1, -1):
                if self.path[j].get("id") == first_kept:
                    kept_from = j
                    break
        self.compaction_at = index
        self.kept_from = kept_from
        kept = self.path[kept_from:index] if kept_from >= 0 else []
        self.edits = {}
        for entry in kept:
            if entry.get("type") == "context_edit":
                target = entry.get("targetId")
                if isinstance(target, str):
                    self.edits[target] = entry
        _, nonsystem, system = _sums(project_with_edit(compaction, self._edit_for(compaction)))
        self.system_sources = [index] if system else []
        self.system_tokens = None if system else 0
        self.pending = set()
        for position in range(kept_from, index) if kept_from >= 0 else ():
            entry = self.path[position]
            if self._in_context(position):
                message = entry.get("message") if entry.get("type") == "message" else None
                if isinstance(message, dict) and message.get("role") == "assistant":
                    self.pending.add(position)
                    continue
                _, tokens, _ = _sums(project_with_edit(entry, self._edit_for(entry)))
                nonsystem += tokens
        self.nonsystem = nonsystem
        self.invalidated_at = index
        self.anchor_tokens = None
        entry_id = compaction.get("id")
        self.compaction_id = entry_id if isinstance(entry_id, str) else None

    def estimate(self) -> tuple[int | float, str | None]:
        """pi's projected context estimate of the path so far, and the anchor it trusted."""
        if self.anchor_tokens is not None:
            return self.anchor_tokens + self.trailing, self.anchor_id
        if self.pending:
            path = self.path
            nonsystem = self.nonsystem
            for position in self.pending:
                entry = path[position]
                nonsystem += _sums(project_with_edit(entry, self._edit_for(entry)))[1]
            self.nonsystem = nonsystem
            self.pending = set()
        return self._system() + self.nonsystem, None

    def _system(self) -> int:
        if not self.system_sources:
            return 0
        if self.system_tokens is None:
            messages: list[dict[str, Any]] = []
            for position in self.system_sources:
                entry = self.path[position]
                messages.extend(m for m in project_with_edit(entry, self._edit_for(entry)) if m.get("role") == "system")
            state = replay_system_state(messages)
            self.system_tokens = estimate_tokens(state) if state is not None else 0
        return self.system_tokens


def context_timeline(sm: Any, leaf_id: str | None = None) -> list[dict[str, Any]]:
    """Rows in path order root → ``leaf_id`` (default: the session's leaf).

    * ``{"kind": "call", "entry_id", "measured", "estimated", "compaction_id", "window",
      "model", "estimated_from", "stop_reason"}`` for every assistant message: ``measured`` is
      the call's own usage total (None when pi would not trust it), ``estimated`` pi's estimate
      of what was sent (the projection at the call's parent), ``estimated_from`` the entry
      whose usage that estimate starts from (None: chars/4 of everything), ``compaction_id``
      the compaction in effect, ``window`` the context window of the call's model from
      ``pi_lab.llm.catalog`` (None if unknown).
    * ``{"kind": "overflow", "entry_id", "error", "window"}`` right after the call row of an
      assistant error that pi classifies as a context overflow.
    * ``{"kind": "compaction", "entry_id", "tokens_before", "first_kept_id", "estimated"}``
      and ``{"kind": "branch_summary", "entry_id", "from_id", "estimated", "empty"}``, where
      ``estimated`` is pi's estimate of the context right after that entry and ``empty`` marks
      a summary with no text (pi projects nothing for it).

    Unknown or non-string ``leaf_id`` raises :class:`~pi_lab.view.errors.UnknownEntry`; a
    session without a leaf (empty, or the leaf reset) gives ``[]``.
    """
    sm = manager_of(sm)
    if leaf_id is None:
        leaf_id = sm.leaf_id
        if leaf_id is None:
            return []
    require_entry(sm, leaf_id, "leaf_id")
    return TimelineWalk(sm.get_branch(leaf_id)).rows


class TimelineWalk:
    """The timeline rows of a path, kept so that a longer path can continue the walk.

    ``TimelineWalk(path).rows`` is what :func:`context_timeline` returns for ``path``.
    ``extend(longer)`` walks only the entries ``longer`` adds after ``path`` (the session grew
    along the same branch, as it does while an agent runs) and returns False, changing nothing,
    when ``longer`` does not start with the very entries walked so far. The rows equal a
    fresh walk of ``longer``: the walk's state after an entry depends only on the entries up
    to it.
    """

    def __init__(self, path: list[Entry]):
        self.path: list[Entry] = []
        self._walk = _ContextWalk(self.path)  # reads self.path, which only grows
        self.rows: list[dict[str, Any]] = []
        self._windows: dict[str | None, int | None] = {}
        self._run(path)

    def extend(self, path: list[Entry]) -> bool:
        walked = self.path
        if len(path) < len(walked):
            return False
        # Identity, not equality: the same entry objects of the same session, in order.
        for old, new in zip(walked, path):
            if old is not new:
                return False
        self._run(path[len(walked):])
        return True

    def _run(self, entries: list[Entry]) -> None:
        path, walk, rows, windows = self.path, self._walk, self.rows, self._windows
        # hot loop (one pass over a possibly 100,000-entry path): bound methods kept in locals
        add, estimate, append = walk.add, walk.estimate, rows.append
        for entry in entries:
            index = len(path)
            path.append(entry)
            kind = entry.get("type")
            message = entry.get("message") if kind == "message" else None
            if isinstance(message, dict) and message.get("role") == "assistant":
                estimated, anchor_id = estimate()
                usage = usage_anchor(message)
                measured = calculate_context_tokens(usage) if usage is not None else None
                model = message.get("model")
                if not (model.__class__ is str and model):
                    model = model_id_of(message)
                if model in windows:
                    window = windows[model]
                else:
                    window = windows[model] = context_window_for(model)
                stop = message.get("stopReason")
                entry_id = entry.get("id")
                append({
                    "kind": "call",
                    "entry_id": entry_id if entry_id.__class__ is str else str_or_none(entry_id),
                    "measured": whole_tokens(measured) if measured is not None else None,
                    "estimated": whole_tokens(estimated),
                    "compaction_id": walk.compaction_id,
                    "window": window,
                    "model": model,
                    "estimated_from": anchor_id,
                    "stop_reason": stop if isinstance(stop, str) else None,
                })
                add(index, entry, (message, measured))
                # The classifier's three signals need an error, a stop or a length stop; skipping
                # the other stop reasons (toolUse, aborted) only saves its call on every turn.
                if stop in _OVERFLOW_STOPS and is_context_overflow(message, window):
                    error = message.get("errorMessage")
                    append({
                        "kind": "overflow",
                        "entry_id": str_or_none(entry.get("id")),
                        "error": error[:_ERROR_PREVIEW] if isinstance(error, str) else None,
                        "window": window,
                    })
                continue
            add(index, entry)
            if kind == "compaction":
                before = entry.get("tokensBefore")
                append({
                    "kind": "compaction",
                    "entry_id": str_or_none(entry.get("id")),
                    "tokens_before": before if isinstance(before, (int, float)) and not isinstance(before, bool) else None,
                    "first_kept_id": str_or_none(entry.get("firstKeptEntryId")),
                    "estimated": int(estimate()[0]),
                })
            elif kind == "branch_summary":
                append({
                    "kind": "branch_summary",
                    "entry_id": str_or_none(entry.get("id")),
                    "from_id": str_or_none(entry.get("fromId")),
                    "estimated": int(estimate()[0]),
                    "empty": not entry_to_messages(entry),
                })
