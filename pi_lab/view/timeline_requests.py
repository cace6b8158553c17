"""Read requests of the context-over-time views (timeline strip, composition bar).

Each entry maps a request name to ``handler(view, args) -> JSON-ready dict``; ``payload.READ_OPS``
merges them, so the notebook widget, the JupyterLab server and the static export answer them alike.

* ``timeline`` ``{leaf_id?}``: :func:`~pi_lab.view.context_timeline` of the branch to ``leaf_id``
  (default: the current leaf), sent as columns — a 48,000-entry branch has some 20,000 calls, and
  one dict per call would be 4 MB of repeated keys. Calls are parallel lists; the few markers
  (compactions, branch summaries, overflows) are dicts that name the call they precede.
* ``timeline_at`` ``{id, leaf_id?}``: the call whose point stands for entry ``id`` on that branch
  (the nearest model call at or before it), so selecting any entry in the tree can highlight a
  point without the viewer holding every id of the branch.
* ``composition`` ``{id}``: :func:`~pi_lab.view.context_composition` at entry ``id``.

A bad argument (an id that is not a string, an unknown entry) is answered with a
:class:`~pi_lab.view.payload.RequestError` carrying the view's own message, which both hosts show
to the user as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from pi_lab.view.composition import context_composition
from pi_lab.view.errors import ViewError
from pi_lab.view.timeline import context_timeline

__all__ = ["OPS", "timeline_payload", "timeline_at_payload", "composition_payload"]


def _refuse(error: ViewError) -> Exception:
    # Imported here: payload imports this module to build READ_OPS.
    from pi_lab.view.payload import RequestError

    return RequestError(str(error))


def _args(args: Any) -> Mapping[str, Any]:
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        from pi_lab.view.payload import RequestError

        raise RequestError(f"request arguments must be an object, not {type(args).__name__}")
    return args


def _optional_id(args: Mapping[str, Any], key: str) -> Any:
    value = args.get(key)
    # An absent, null or empty leaf means "the current leaf" (the viewer sends what it has).
    return None if value is None or value == "" else value


def timeline_payload(view: Any, args: Any = None) -> dict[str, Any]:
    """The timeline of one branch as columns, plus the settings its lines are drawn from."""
    args = _args(args)
    sm = view.sm
    leaf_id = _optional_id(args, "leaf_id")
    try:
        rows = context_timeline(sm, leaf_id)
    except ViewError as error:
        raise _refuse(error) from None
    ids: list[str | None] = []
    measured: list[int | None] = []
    estimated: list[int] = []
    windows: list[int | None] = []
    model_index: list[int] = []
    compaction: list[int] = []  # index into markers of the compaction in effect, -1: none
    models: list[str | None] = []
    model_of: dict[Any, int] = {}
    markers: list[dict[str, Any]] = []
    compaction_marker: dict[str, int] = {}
    for row in rows:
        kind = row["kind"]
        if kind == "call":
            ids.append(row["entry_id"])
            measured.append(row["measured"])
            estimated.append(row["estimated"])
            windows.append(row["window"])
            model = row.get("model")
            slot = model_of.get(model)
            if slot is None:
                slot = model_of[model] = len(models)
                models.append(model)
            model_index.append(slot)
            effective = row["compaction_id"]
            compaction.append(compaction_marker.get(effective, -1) if effective is not None else -1)
            continue
        # "call": the index of the first call after the marker (an overflow names its own call)
        marker = {**row, "call": len(ids) - 1 if kind == "overflow" else len(ids)}
        if kind == "compaction" and isinstance(row.get("entry_id"), str):
            compaction_marker[row["entry_id"]] = len(markers)
        markers.append(marker)
    settings = view.settings
    return {
        "leaf_id": leaf_id if leaf_id is not None else sm.leaf_id,
        "calls": {
            "id": ids,
            "measured": measured,
            "estimated": estimated,
            "window": windows,
            "model": model_index,
            "compaction": compaction,
        },
        "models": models,
        "markers": markers,
        "call_count": len(ids),
        "measured_count": sum(1 for m in measured if m is not None),
        "context_window": settings.context_window,
        "reserve_tokens": settings.reserve_tokens,
        "keep_recent_tokens": settings.keep_recent_tokens,
    }


def _is_call(entry: Mapping[str, Any]) -> bool:
    if entry.get("type") != "message":
        return False
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") == "assistant"


def timeline_at_payload(view: Any, args: Any = None) -> dict[str, Any]:
    """``{"id", "on_branch", "call_id"}``: the point entry ``id`` highlights on the branch.

    ``on_branch`` says whether ``id`` lies on the branch root → ``leaf_id``; ``call_id`` is the
    nearest assistant message at or before ``id`` on that branch (None when ``id`` is off the
    branch or precedes every call).
    """
    from pi_lab.view._common import require_entry
    from pi_lab.view.errors import UnknownEntry

    args = _args(args)
    sm = view.sm
    entry_id = args.get("id")
    leaf_id = _optional_id(args, "leaf_id")
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


def composition_payload(view: Any, args: Any = None) -> dict[str, Any]:
    """``{"at", "parts", "total"}``: the context at entry ``id`` split by part."""
    args = _args(args)
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
}
