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

The estimate is computed in one forward walk with the engine's incremental projection,
:class:`pi_lab.compaction.context_walk.ContextWalk` (the corpus extractor walks its trees with
the same class), lazily: each entry is estimated once when it arrives, except a call whose
usage is a valid anchor, estimated only if a later estimate trusts no usage and still counts it
(after a compaction or a context edit); a compaction or a context edit rebuilds the running sums
from measures already taken. The result equals projecting from
scratch at every call (tests/view/test_timeline.py checks this at every call of the real
fixtures and of generated sessions).
"""

from __future__ import annotations

from typing import Any

from pi_lab.compaction.context_walk import ContextWalk
from pi_lab.compaction.tokens import whole_tokens
from pi_lab.llm.catalog import context_window_for
from pi_lab.llm.errors import is_context_overflow
from pi_lab.session._gc import collector_paused
from pi_lab.session.projection import entry_to_messages
from pi_lab.view._common import (
    SessionLike,
    manager_of,
    model_id_of,
    recorded_window_of,
    require_entry,
    str_or_none,
)

__all__ = ["context_timeline", "TimelineWalk", "SharedContextWalk"]

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)

_ERROR_PREVIEW = 300
_OVERFLOW_STOPS = ("error", "stop", "length")


class SharedContextWalk:
    """The interface the timeline's walk had before it became :class:`ContextWalk`, kept for
    pi_lab/export/context.py, which walks a flattened tree in pre-order and copies a walk
    (``copy.copy``) at each branch point to resume a sibling branch from it.

    Every copy shares one :class:`ContextWalk` and remembers how deep its own path is; a
    copy that resumes first leaves what a later branch entered. That is exact for a
    pre-order walk (a branch point's copy is used only while the walk is inside its subtree),
    and a copy used any other way raises instead of answering for another path.
    """

    def __init__(self, path: list[Entry]):
        self.path = path  # the caller's path (entries up to the one being added)
        self._walk = ContextWalk(lazy=True)  # the export asks mostly for anchored estimates
        self._depth = 0  # how deep this copy's path is
        self._top: Entry | None = None  # the last entry this copy added
        # Copied by export's snapshot; the shared walk keeps no state in them.
        self.position: dict[str, int] = {}
        self.edits: dict[str, Entry] = {}
        self.pending: set[int] = set()
        self.system_sources: list[int] = []

    def _resume(self) -> ContextWalk:
        walk = self._walk
        depth = self._depth
        while len(walk.path) > depth:
            walk.leave()
        if len(walk.path) != depth or (depth and walk.path[-1] is not self._top):
            raise RuntimeError("a copy of the context walk was resumed outside its subtree")
        return walk

    def _edit_for(self, entry: Entry) -> Entry | None:
        entry_id = entry.get("id")
        edits = self._resume().context.edits
        return edits.get(entry_id) if edits and type(entry_id) is str else None

    def add(self, index: int, entry: Entry, call: Any = None) -> None:
        """Extend the walk by ``entry`` at depth ``index``; ``call`` is no longer needed."""
        del call
        walk = self._resume()
        if index != len(walk.path):
            raise RuntimeError(f"entry added at depth {index} to a walk {len(walk.path)} deep")
        walk.enter(entry)
        self._depth, self._top = index + 1, entry

    @property
    def anchor_tokens(self) -> Any:
        """The trusted usage anchor's tokens (None: no trusted anchor)."""
        parts = self._resume().anchored()
        return parts[0] if parts is not None else None

    @property
    def trailing(self) -> int:
        """chars/4 of the messages after the trusted anchor (0 without one)."""
        parts = self._resume().anchored()
        return parts[1] if parts is not None else 0

    def estimate(self) -> tuple[int | float, str | None]:
        """pi's projected context estimate of the path so far, and the anchor it trusted."""
        estimated, anchor = self._resume().projected_from()
        return estimated, (anchor.get("id") if anchor is not None else None)


def context_timeline(sm: SessionLike, leaf_id: str | None = None) -> list[dict[str, Any]]:
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
    return TimelineWalk(sm.get_branch(leaf_id), recorded_window=recorded_window_of(sm)).rows




class TimelineWalk:
    """The timeline rows of a path, kept so that a longer path can continue the walk.

    ``TimelineWalk(path).rows`` is what :func:`context_timeline` returns for ``path``.
    ``extend(longer)`` walks only the entries ``longer`` adds after ``path`` (the session grew
    along the same branch, as it does while an agent runs) and returns False, changing nothing,
    when ``longer`` does not start with the very entries walked so far. The rows equal a
    fresh walk of ``longer``: the walk's state after an entry depends only on the entries up
    to it.
    """

    def __init__(self, path: list[Entry], *, recorded_window: int | None = None):
        # lazy: most calls are estimated from the last usage, which needs no estimate of the
        # assistant messages that carry one (they are measured only when no usage is trusted)
        self._walk = ContextWalk(lazy=True)
        self.path: list[Entry] = self._walk.path  # the entries walked so far
        self.rows: list[dict[str, Any]] = []
        # the window of each call's model: the file's own record when it has one (Codex), else
        # the catalog's (pi_lab.llm.catalog)
        self._recorded_window = recorded_window
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
        # The walk keeps a measure and a running sum per entry and a row per call, all acyclic:
        # collections during it would only rescan them.
        with collector_paused(len(entries)):
            self._walk_entries(entries)

    def _walk_entries(self, entries: list[Entry]) -> None:
        walk, rows, windows = self._walk, self.rows, self._windows
        # hot loop (one pass over a possibly 100,000-entry path): bound methods kept in locals
        enter, projected_from, append = walk.enter, walk.projected_from, rows.append
        for entry in entries:
            kind = entry.get("type")
            message = entry.get("message") if kind == "message" else None
            if isinstance(message, dict) and message.get("role") == "assistant":
                # what was sent: the projection at the call's parent, i.e. before entering it
                estimated, anchor = projected_from()
                model = message.get("model")
                if not (model.__class__ is str and model):
                    model = model_id_of(message)
                if self._recorded_window is not None:
                    window = self._recorded_window
                elif model in windows:
                    window = windows[model]
                else:
                    window = windows[model] = context_window_for(model)
                stop = message.get("stopReason")
                entry_id = entry.get("id")
                # entering gives the call's own usage when it is a valid anchor
                measured = enter(entry)
                append({
                    "kind": "call",
                    "entry_id": entry_id if entry_id.__class__ is str else str_or_none(entry_id),
                    # (an int is its own whole number: the common case skips the call)
                    "measured": measured if measured.__class__ is int or measured is None else whole_tokens(measured),
                    "estimated": estimated if estimated.__class__ is int else whole_tokens(estimated),
                    "compaction_id": walk.compaction_id,
                    "window": window,
                    "model": model,
                    "estimated_from": anchor.get("id") if anchor is not None else None,
                    "stop_reason": stop if isinstance(stop, str) else None,
                })
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
            enter(entry)
            if kind == "compaction":
                before = entry.get("tokensBefore")
                append({
                    "kind": "compaction",
                    "entry_id": str_or_none(entry.get("id")),
                    "tokens_before": before if isinstance(before, (int, float)) and not isinstance(before, bool) else None,
                    "first_kept_id": str_or_none(entry.get("firstKeptEntryId")),
                    "estimated": int(walk.projected()),
                })
            elif kind == "branch_summary":
                append({
                    "kind": "branch_summary",
                    "entry_id": str_or_none(entry.get("id")),
                    "from_id": str_or_none(entry.get("fromId")),
                    "estimated": int(walk.projected()),
                    "empty": not entry_to_messages(entry),
                })
