"""Payloads for a session viewer, independent of how they travel.

The notebook widget sends these over a comm; the JupyterLab server extension sends the same
ones over REST. Nothing here imports Jupyter. Every function takes the session (a
``SessionManager``) and, for rows, a :class:`~pi_lab.view.rows.RowState`, and returns
plain JSON-ready data (the structure is one ``bytes`` blob, see ``columns.py``).

``read_request(view, op, args)`` answers the read-only requests by name; the operations
that change the session live in ``actions.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pi_lab.compaction import CompactionSettings
from pi_lab.session.flatten import FactTable
from pi_lab.session.ids import parse_iso_ms
from pi_lab.session.projection import SessionProjection
from pi_lab.session.protocol import ReadableSession
from pi_lab.view.compare_requests import OPS as COMPARE_OPS
from pi_lab.view.context import context_payload
from pi_lab.view.contract import MAX_PREFIX_MATCHES, MAX_ROWS_PER_REQUEST, MAX_WHOLE
from pi_lab.view.detail import entry_detail
from pi_lab.view.gauge import gauge
from pi_lab.view.preview import compaction_preview
from pi_lab.view.requests import (  # the request layer, importable from here as before
    READ_OPS,
    RequestError,
    entry_id_arg,
    flag_arg,
    kind_of,
    known_entry,
    register_read_ops,
    request_args,
    whole_number,
)
from pi_lab.view.rows import RowState
from pi_lab.view.timeline_requests import OPS as TIMELINE_OPS

__all__ = [
    "ViewSettings",
    "SessionView",
    "structure_payload",
    "rows_payload",
    "entry_payload",
    "context_payload",
    "gauge_payload",
    "gauge_at_leaf",
    "preview_payload",
    "read_request",
    "READ_OPS",
    "RequestError",
    "MAX_ROWS_PER_REQUEST",
    "request_args",
    "whole_number",
    "entry_id_arg",
    "flag_arg",
    "kind_of",
    "MAX_WHOLE",
    "MAX_PREFIX_MATCHES",
]

# Row numbers and versions are JavaScript numbers on the other side: beyond MAX_WHOLE (2**53 - 1)
# they are not exact. The limits are shared with the front end (pi_lab/view/contract.py).


@dataclass(frozen=True, slots=True)
class ViewSettings:
    """The numbers the gauge and the compaction preview use."""

    context_window: int = 128_000
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000
    enabled: bool = True

    def compaction(self) -> CompactionSettings:
        return CompactionSettings(enabled=self.enabled, reserve_tokens=self.reserve_tokens,
                                  keep_recent_tokens=self.keep_recent_tokens)


@dataclass
class SessionView:
    """One session seen through one viewer: its rows, its settings, its current gauge."""

    sm: ReadableSession
    rows: RowState
    settings: ViewSettings = field(default_factory=ViewSettings)
    gauge: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, sm: ReadableSession, settings: ViewSettings | None = None, **view: Any) -> SessionView:
        result = cls(sm, RowState(sm, **view), settings or ViewSettings())
        result.refresh_gauge()
        return result

    def rebind(self, sm: ReadableSession) -> None:
        """Show another session (the agent forked to a new file): the rows are laid out
        from it with the same filter, search and folds, and the gauge recomputed."""
        self.sm = self.rows.sm = sm
        self.rows.reload()
        self.refresh_gauge()

    def refresh_gauge(self) -> dict[str, Any]:
        # The rows' projection is reused only while it is current (same leaf, no appends since).
        current = self.rows.projection if self.rows.leaf_id == self.sm.leaf_id else None
        self.gauge = gauge_payload(self.sm, self.settings, projection=current, facts=self.rows.facts)
        return self.gauge


def structure_payload(view: SessionView, selected_id: str | None = None) -> bytes:
    """The whole row structure, with the selected row resolved by pi's nearest-visible rule."""
    rows = view.rows
    selected = rows.locate(selected_id) if selected_id is not None else rows.anchor_row
    sm = view.sm
    return rows.structure(
        selected_row=selected,
        selected_id=rows.ids[selected] if 0 <= selected < len(rows.ids) else None,
        session_id=sm.session_id,
        session_file=sm.session_file,
        session_name=sm.get_session_name(),
    )


def rows_payload(view: SessionView, start: int, end: int, version: int | None = None) -> dict[str, Any]:
    """Display text and labels of rows ``[start, end)`` (at most ``MAX_ROWS_PER_REQUEST``)."""
    rows = view.rows
    start = whole_number(start, "start")
    end = whole_number(end, "end")
    if version is not None and whole_number(version, "version") != rows.version:
        return {"stale": True, "version": rows.version}
    end = min(end, start + MAX_ROWS_PER_REQUEST)
    return {"version": rows.version, "start": start, "rows": rows.texts(start, end)}


def entry_payload(view: SessionView, entry_id: str, full: bool = False) -> dict[str, Any]:
    sm = view.sm
    entry = known_entry(sm, entry_id)
    call = None
    message = entry.get("message") if entry.get("type") == "message" else None
    if isinstance(message, dict) and message.get("role") == "toolResult":
        call = view.rows.tool_call(message.get("toolCallId"))
    detail = entry_detail(entry, label=sm.get_label(entry_id), label_timestamp=sm.get_label_timestamp(entry_id),
                          tool_call=call, full=full)
    detail["on_active_path"] = entry_id in view.rows.path_ids
    detail["out_of_context"] = entry_id in view.rows.marks.out_of_context
    detail["children"] = [e.get("id") for e in _children(view, entry_id)]
    return detail


def _children(view: SessionView, entry_id: str) -> list[Mapping[str, Any]]:
    """The entry's children in the tree's order (by timestamp, file order among equals)."""
    return sorted(view.sm.get_children(entry_id), key=_timestamp_key)


def _timestamp_key(entry: Mapping[str, Any]) -> float:
    ms = parse_iso_ms(entry.get("timestamp"))
    return float("-inf") if ms != ms else ms  # unparsable first, as the tree orders them


def gauge_payload(sm: ReadableSession, settings: ViewSettings, projection: SessionProjection | None = None,
                  facts: FactTable | None = None) -> dict[str, Any]:
    """The gauge of the current branch; ``facts`` is the view's per-entry fact table (the rows'
    token estimates, reused instead of estimating the branch again)."""
    return gauge(sm.get_branch(), context_window=settings.context_window, settings=settings.compaction(),
                 projection=projection, facts=facts)


def gauge_request(view: SessionView, args: Mapping[str, Any]) -> dict[str, Any]:
    """``gauge`` ``{leaf_id?}``: the gauge at the current leaf, or at ``leaf_id`` for a read-only
    viewer that moved its leaf in that view only (the file's leaf stays where it is)."""
    leaf = entry_id_arg(args, "leaf_id", optional=True)
    if leaf is None or leaf == view.sm.leaf_id:
        return view.gauge or view.refresh_gauge()
    return gauge_at_leaf(view.sm, view.settings, leaf, facts=view.rows.facts)


def gauge_at_leaf(sm: ReadableSession, settings: ViewSettings, leaf_id: str, facts: FactTable | None = None) -> dict[str, Any]:
    """The gauge of the branch from the root to ``leaf_id`` (an unknown id is a RequestError)."""
    known_entry(sm, leaf_id)
    return gauge(sm.get_branch(leaf_id), context_window=settings.context_window, settings=settings.compaction(),
                 facts=facts)


def preview_payload(view: SessionView) -> dict[str, Any]:
    """A dry run of a manual compaction of the current branch."""
    result = compaction_preview(view.sm.get_branch(), view.settings.compaction())
    if result.get("ok"):
        rows = view.rows
        for part in ("summarize", "turn_prefix", "kept"):
            info = result[part]
            info["first_row"] = rows.locate(info["first_id"], fallback_last=False) if info["first_id"] else -1
            info["last_row"] = rows.locate(info["last_id"], fallback_last=False) if info["last_id"] else -1
    return result



def _locate(view: SessionView, args: Mapping[str, Any]) -> dict[str, Any]:
    """``locate`` ``{id, prefix?}``: the row that shows entry ``id`` (or its nearest visible
    ancestor). With ``prefix``, ``id`` may be the start of an id (the "go to entry id" box):
    ``found`` is the one entry it names, ``matches`` lists up to five when it names several,
    and neither is there when it names none."""
    wanted = entry_id_arg(args)
    result: dict[str, Any] = {}
    if flag_arg(args, "prefix"):
        matches = id_prefix_matches(view.sm, wanted.strip())
        result["matches"] = matches
        if len(matches) != 1:
            return {"row": -1, "version": view.rows.version, "id": None, **result}
        wanted = result["found"] = matches[0]
    row = view.rows.locate(wanted, fallback_last=False)
    return {"row": row, "version": view.rows.version,
            "id": view.rows.ids[row] if row >= 0 else None, **result}


def id_prefix_matches(sm: ReadableSession, prefix: str) -> list[str]:
    """The entry ids that start with ``prefix`` (the id itself when it is one), at most
    ``MAX_PREFIX_MATCHES``, in file order."""
    if not prefix:
        return []
    if sm.get_entry(prefix) is not None:
        return [prefix]
    found: list[str] = []
    for entry in sm.get_entries():
        entry_id = entry.get("id")
        if isinstance(entry_id, str) and entry_id.startswith(prefix):
            found.append(entry_id)
            if len(found) == MAX_PREFIX_MATCHES:
                break
    return found


register_read_ops({
    "rows": lambda view, a: rows_payload(view, a.get("start", 0), a.get("end", 0), a.get("version")),
    "locate": _locate,
    "entry": lambda view, a: entry_payload(view, entry_id_arg(a), flag_arg(a, "full")),
    "context_at": lambda view, a: context_payload(view, entry_id_arg(a, optional=True)),
    "gauge": gauge_request,
    "compact_preview": lambda view, a: preview_payload(view),
})
# The views of context over time and between nodes answer their own requests.
register_read_ops(TIMELINE_OPS)
register_read_ops(COMPARE_OPS)


def read_request(view: SessionView, op: object, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Answer a read-only request; raises :class:`RequestError` for an unknown op or bad id."""
    handler = READ_OPS.get(op) if isinstance(op, str) else None
    if handler is None:
        raise RequestError(f"unknown request {op[:80]!r}" if isinstance(op, str) else
                           f"the request name must be a string, not {kind_of(op)}")
    return handler(view, request_args(args))
