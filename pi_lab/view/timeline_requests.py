"""Read requests of the context-over-time views (timeline strip, composition bar).

Each entry maps a request name to ``handler(view, args) -> JSON-ready dict``; ``payload`` adds
them to the registry of :mod:`pi_lab.view.requests`, so the notebook widget, the JupyterLab
server and the static export answer them alike.

* ``timeline`` ``{leaf_id?, since?}``: :func:`~pi_lab.view.context_timeline` of the branch to
  ``leaf_id`` (default: the current leaf), sent as columns — a 48,000-entry branch has some 20,000
  calls, and one dict per call would be 4 MB of repeated keys. Calls are parallel lists; the few
  markers (compactions, branch summaries, overflows) are dicts that name the call they precede.
  ``since: {serial, calls, markers}`` (the ``serial`` and counts of an earlier answer) asks only
  for what was added since, when the branch only grew.
* ``timeline_at`` ``{id, leaf_id?}``: the call whose point stands for entry ``id`` on that branch
  (the nearest model call at or before it), so selecting any entry in the tree can highlight a
  point without the viewer holding every id of the branch.
* ``composition`` ``{id}``: :func:`~pi_lab.view.context_composition` at entry ``id``.

A bad argument (an id that is not a string, an unknown entry) is answered with a
:class:`~pi_lab.view.requests.RequestError` carrying the view's own message, which both hosts show
to the user as it is.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from pi_lab.session.protocol import ReadableSession
from pi_lab.view._common import ViewOfSession, manager_of, recorded_window_of, require_entry
from pi_lab.view.composition import context_composition
from pi_lab.view.errors import UnknownEntry, ViewError, user_text
from pi_lab.view.requests import RequestError, optional_id, request_args
from pi_lab.view.timeline import TimelineWalk
from pi_lab.view.whatif import OPS as WHAT_IF_OPS

__all__ = ["OPS", "timeline_payload", "timeline_at_payload", "composition_payload"]


def _refuse(error: ViewError) -> RequestError:
    # The viewer shows the text as it is: in its words, not the view function's argument names.
    return RequestError(user_text(error))


class _Columns:
    """The call columns and markers of a timeline, filled from its rows as they grow."""

    def __init__(self) -> None:
        self.done = 0  # rows consumed
        self.ids: list[str | None] = []
        self.measured: list[int | None] = []
        self.estimated: list[int] = []
        self.windows: list[int | None] = []
        self.model_index: list[int] = []
        self.compaction: list[int] = []  # index into markers of the compaction in effect, -1: none
        self.models: list[str | None] = []
        self.model_of: dict[Any, int] = {}
        self.markers: list[dict[str, Any]] = []
        self.compaction_marker: dict[str, int] = {}
        self.measured_count = 0

    def consume(self, rows: list[dict[str, Any]]) -> None:
        ids, markers = self.ids, self.markers
        for row in rows[self.done:]:
            kind = row["kind"]
            if kind == "call":
                ids.append(row["entry_id"])
                measured = row["measured"]
                self.measured.append(measured)
                if measured is not None:
                    self.measured_count += 1
                self.estimated.append(row["estimated"])
                self.windows.append(row["window"])
                model = row.get("model")
                slot = self.model_of.get(model)
                if slot is None:
                    slot = self.model_of[model] = len(self.models)
                    self.models.append(model)
                self.model_index.append(slot)
                effective = row["compaction_id"]
                self.compaction.append(self.compaction_marker.get(effective, -1) if effective is not None else -1)
                continue
            # "call": the index of the first call after the marker (an overflow names its own call)
            marker = {**row, "call": len(ids) - 1 if kind == "overflow" else len(ids)}
            if kind == "compaction" and isinstance(row.get("entry_id"), str):
                self.compaction_marker[row["entry_id"]] = len(markers)
            markers.append(marker)
        self.done = len(rows)


class _Cached:
    """One session's last timeline: its walk and its columns, continued while the branch grows.

    ``serial`` names the walk: a viewer holding the columns of serial S up to some call can be
    sent only what came after, as long as S is still the walk in use.
    """

    _serials = itertools.count(1)

    def __init__(self, path: list[Any], recorded_window: int | None = None):
        self.serial = next(self._serials)
        self.walk = TimelineWalk(path, recorded_window=recorded_window)
        self.columns = _Columns()
        self.columns.consume(self.walk.rows)

    def extend(self, path: list[Any]) -> bool:
        if not self.walk.extend(path):
            return False
        self.columns.consume(self.walk.rows)
        return True


# Per session (weakly: a closed viewer's session is not kept alive), the walk of the branch the
# strip showed last. A live session grows along its branch, so the next request walks only the
# new entries; another branch, or a session whose entries were reloaded, starts a new walk.
_CACHE: weakref.WeakKeyDictionary[Any, _Cached] = weakref.WeakKeyDictionary()
# A host may answer from worker threads (the server does, one session at a time under its own
# lock; an export may snapshot the timeline off the loop): one walk is extended, and its columns
# copied into an answer, by one thread at a time.
_LOCK = threading.RLock()


def _columns_for(sm: ReadableSession, leaf_id: Any) -> tuple[_Columns, int | None]:
    sm = manager_of(sm)
    if leaf_id is None:
        leaf_id = sm.leaf_id
    if leaf_id is None:
        return _Columns(), None
    require_entry(sm, leaf_id, "leaf_id")
    path = sm.get_branch(leaf_id)
    try:
        cached = _CACHE.get(sm)
    except TypeError:  # a session object that cannot be weakly referenced or hashed: no cache
        return _Cached(path, recorded_window_of(sm)).columns, None
    if cached is None or not cached.extend(path):
        cached = _Cached(path, recorded_window_of(sm))
        try:
            _CACHE[sm] = cached
        except TypeError:
            return cached.columns, None
    return cached.columns, cached.serial


def _since(args: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """``since: {serial, calls, markers}`` as three non-negative ints, or None (send it all)."""
    since = args.get("since")
    if not isinstance(since, Mapping):
        return None
    serial, calls, markers = (since.get(key) for key in ("serial", "calls", "markers"))
    if type(serial) is int and type(calls) is int and type(markers) is int and min(serial, calls, markers) >= 0:
        return serial, calls, markers
    return None


def timeline_payload(view: ViewOfSession, args: Any = None) -> dict[str, Any]:
    """The timeline of one branch as columns, plus the settings its lines are drawn from.

    The same rows as :func:`~pi_lab.view.context_timeline` (tests/view/test_timeline_requests.py
    rebuilds them from the columns), computed by a walk kept per session and continued when the
    branch has grown since the last request.
    """
    args = request_args(args)
    sm = view.sm
    leaf_id = optional_id(args, "leaf_id")
    with _LOCK:
        try:
            columns, serial = _columns_for(sm, leaf_id)
        except ViewError as error:
            raise _refuse(error) from None
        return _answer(view, sm, leaf_id, columns, serial, _since(args))


def _answer(view: ViewOfSession, sm: ReadableSession, leaf_id: Any, columns: _Columns, serial: int | None,
            since: tuple[int, int, int] | None) -> dict[str, Any]:
    settings = view.settings
    # With ``since`` naming the walk in use and counts within it, only what came after is sent
    # (``"append": true``): a live session's strip gets a few calls per burst, not the branch.
    appended = since is not None and serial is not None and since[0] == serial \
        and since[1] <= len(columns.ids) and since[2] <= len(columns.markers)
    calls_from, markers_from = (since[1], since[2]) if appended and since is not None else (0, 0)
    # Slices are copies: the cached lists keep growing, and a host may encode the answer later.
    reply: dict[str, Any] = {
        "leaf_id": leaf_id if leaf_id is not None else sm.leaf_id,
        "serial": serial,
        "calls": {
            "id": columns.ids[calls_from:],
            "measured": columns.measured[calls_from:],
            "estimated": columns.estimated[calls_from:],
            "window": columns.windows[calls_from:],
            "model": columns.model_index[calls_from:],
            "compaction": columns.compaction[calls_from:],
        },
        "models": list(columns.models),
        "markers": [dict(m) for m in columns.markers[markers_from:]],
        "call_count": len(columns.ids),
        "measured_count": columns.measured_count,
        "context_window": settings.context_window,
        "reserve_tokens": settings.reserve_tokens,
        "keep_recent_tokens": settings.keep_recent_tokens,
    }
    if appended:
        reply["append"] = True
        reply["calls_from"] = calls_from
        reply["markers_from"] = markers_from
    return reply


def _is_call(entry: Mapping[str, Any]) -> bool:
    if entry.get("type") != "message":
        return False
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") == "assistant"


def timeline_at_payload(view: ViewOfSession, args: Any = None) -> dict[str, Any]:
    """``{"id", "on_branch", "call_id"}``: the point entry ``id`` highlights on the branch.

    ``on_branch`` says whether ``id`` lies on the branch root → ``leaf_id``; ``call_id`` is the
    nearest assistant message at or before ``id`` on that branch (None when ``id`` is off the
    branch or precedes every call).
    """
    args = request_args(args)
    sm = view.sm
    entry_id = args.get("id")
    leaf_id = optional_id(args, "leaf_id")
    try:
        require_entry(sm, entry_id, "id")
        if leaf_id is None:
            leaf_id = sm.leaf_id
        else:
            require_entry(sm, leaf_id, "leaf_id")
    except UnknownEntry as error:
        raise _refuse(error) from None
    if leaf_id is None:
        return {"id": entry_id, "on_branch": False, "call_id": None}
    to_entry = sm.get_branch(entry_id)
    to_leaf = sm.get_branch(leaf_id)
    # On the branch when the path to the entry is a prefix of the path to the leaf (paths are
    # root first, ids are unique within a session).
    depth = len(to_entry) - 1
    on_branch = depth < len(to_leaf) and to_leaf[depth].get("id") == entry_id
    call_id = None
    if on_branch:
        for position in range(depth, -1, -1):
            entry = to_entry[position]
            if _is_call(entry):
                found = entry.get("id")
                call_id = found if isinstance(found, str) else None
                break
    return {"id": entry_id, "on_branch": on_branch, "call_id": call_id}


def composition_payload(view: ViewOfSession, args: Any = None) -> dict[str, Any]:
    """``{"at", "parts", "total"}``: the context at entry ``id`` split by part."""
    args = request_args(args)
    entry_id = args.get("id")
    try:
        parts = context_composition(view.sm, entry_id)
    except ViewError as error:
        raise _refuse(error) from None
    return {"at": entry_id, "parts": parts, "total": sum(p["tokens"] for p in parts)}


OPS: dict[str, Callable[[Any, Any], Any]] = {
    "timeline": timeline_payload,
    "timeline_at": timeline_at_payload,
    "composition": composition_payload,
    # The "what if" panel's replay (pi_lab/view/whatif.py) is drawn over this timeline.
    **WHAT_IF_OPS,
}
