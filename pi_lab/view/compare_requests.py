"""Read requests of the between-nodes views (context diff, context search, branch comparison).

Each entry maps a request name to ``handler(view, args) -> JSON-ready dict``; ``payload`` adds
them to the registry of :mod:`pi_lab.view.requests`, so the notebook widget, the JupyterLab
server and the static export answer them alike.

The answers are the Python functions' results shaped for the Compare pane: long lists are cut
at ``limit`` rows (the pane asks again with a larger limit for "show more") with the full counts
and token sums beside them, and each listed entry carries its kind and a short preview, so the
pane draws without one request per row. Bad arguments are refused with a
:class:`~pi_lab.view.requests.RequestError` whose text the pane shows as it is.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

from pi_lab.session.display import display_text
from pi_lab.session.entries import display_kind, is_error_entry
from pi_lab.session.protocol import ReadableSession
from pi_lab.view._common import ViewOfSession
from pi_lab.view.branches import compare_branches
from pi_lab.view.context import message_preview
from pi_lab.view.diff import context_search, diff_with_messages
from pi_lab.view.errors import ViewError, user_text
from pi_lab.view.kinds import unknown_entry_text
from pi_lab.view.requests import RequestError, picked_entry, request_args

__all__ = ["OPS", "DEFAULT_LIMIT", "MAX_LIMIT", "ROW_PREVIEW_CHARS", "cut_summary", "row_text", "with_children"]

DEFAULT_LIMIT = 200
MAX_LIMIT = 20_000
ROW_PREVIEW_CHARS = 120
_SUMMARY_CHARS = 4000
_NAMES = {"a": "A", "b": "B"}


def _pair(view: ViewOfSession, args: Any) -> tuple[str, str]:
    args = request_args(args)
    a, b = (picked_entry(view.sm, args, key, _NAMES[key]) for key in ("a", "b"))
    if a == b:
        raise RequestError(f"A and B are the same entry ({a}): pick two different entries to compare")
    return a, b


def _limit(args: Mapping[str, Any]) -> int:
    value = args.get("limit", DEFAULT_LIMIT)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RequestError(f"limit must be a positive whole number, not {value!r}")
    return min(value, MAX_LIMIT)


def row_text(entry: Mapping[str, Any]) -> str:
    """pi's row text, cut; an entry of a type pi does not know (pi draws a blank row) is named
    by its raw type, as the tree names it."""
    text = display_text(entry)
    if not text and display_kind(entry) == "unknown":
        kind = entry.get("type")
        text = unknown_entry_text(kind if isinstance(kind, str) and kind else None)
    return text if len(text) <= ROW_PREVIEW_CHARS else text[: ROW_PREVIEW_CHARS - 1] + "…"


_row_text = row_text


def cut_summary(text: str) -> tuple[str, bool]:
    """A branch summary as the pane shows it: ``(text, truncated)``."""
    if len(text) > _SUMMARY_CHARS:
        return text[: _SUMMARY_CHARS - 1] + "…", True
    return text, False


class _Parents:
    """The ids that have a child, kept per session manager and brought up to date by reading
    only the entries appended since (sessions are append-only): the manager's get_children
    scans the whole session for each id, 30–40 ms on a 100,000-entry session."""

    __slots__ = ("last", "seen", "ids")

    def __init__(self) -> None:
        self.last: Any = None  # the last entry read, to see that the entries only grew since
        self.seen = 0
        self.ids: set[str] = set()

    def update(self, entries: list[Any]) -> set[str]:
        if self.seen and (len(entries) < self.seen or entries[self.seen - 1] is not self.last):
            self.last, self.seen, self.ids = None, 0, set()  # not the same entries: start over
        for entry in entries[self.seen:]:
            parent = entry.get("parentId")
            if isinstance(parent, str):
                self.ids.add(parent)
        if entries:
            self.seen, self.last = len(entries), entries[-1]
        return self.ids


_PARENTS: weakref.WeakKeyDictionary[Any, _Parents] = weakref.WeakKeyDictionary()


def with_children(sm: ReadableSession) -> set[str]:
    """The ids some entry of ``sm`` names as its parent (kept per manager, see _Parents)."""
    try:
        parents = _PARENTS.setdefault(sm, _Parents())
    except TypeError:  # a manager that cannot be weakly referenced: no cache
        parents = _Parents()
    return parents.update(sm.get_entries())


def _nodes(view: ViewOfSession, **ids: str | None) -> dict[str, dict[str, Any] | None]:
    """How the pane names picked entries: id, kind, one line of text, where each stands."""
    sm = view.sm
    parents = with_children(sm)
    named: dict[str, dict[str, Any] | None] = {}
    for key, entry_id in ids.items():
        entry = sm.get_entry(entry_id) if isinstance(entry_id, str) else None
        named[key] = None if entry is None else {
            "id": entry_id,
            "kind": display_kind(entry),
            "text": _row_text(entry),
            "is_leaf": entry_id == sm.leaf_id,
            # a tree tip: nothing was appended after it
            "is_tip": entry_id not in parents,
        }
    return named


def _answer(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ViewError as error:  # a question the view cannot answer: the user's to fix
        raise RequestError(user_text(error)) from None


def _diff(view: ViewOfSession, args: Any) -> dict[str, Any]:
    a, b = _pair(view, args)
    limit = _limit(args)
    result, messages = _answer(lambda: diff_with_messages(view.sm, a, b))
    # Under each compaction summary: the entries it stands for, as the other side holds them
    # (read from the whole groups, before they are cut to the limit).
    for replaced in result["replaced"]:
        wanted = set(replaced["source_ids"])
        pool = "only_a" if replaced["side"] == "b" else "only_b"
        rows: list[dict[str, Any]] = []
        for row, message in zip(result[pool], messages[pool]):
            if row["source_id"] in wanted and len(rows) < limit:
                rows.append({**row, "preview": message_preview(message, ROW_PREVIEW_CHARS)})
        replaced["rows"] = rows
        replaced["count"] = len(replaced["source_ids"])
    counts: dict[str, int] = {}
    group_tokens: dict[str, int] = {}
    for group in ("both", "only_a", "only_b"):
        rows = result[group]
        counts[group] = len(rows)
        group_tokens[group] = sum(r["tokens"] for r in rows)
        shown = rows[:limit]
        for row, message in zip(shown, messages[group]):
            row["preview"] = message_preview(message, ROW_PREVIEW_CHARS)
        result[group] = shown
    result["counts"] = counts
    result["group_tokens"] = group_tokens
    result["limit"] = limit
    result["nodes"] = _nodes(view, a=a, b=b)
    return result


def _search(view: ViewOfSession, args: Any) -> dict[str, Any]:
    a, b = _pair(view, args)
    limit = _limit(args)
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise RequestError("type the text to look for in both contexts")
    found = _answer(lambda: context_search(view.sm, a, b, query, case_sensitive=bool(args.get("case_sensitive"))))
    for side in ("a", "b"):
        hits = found[side]
        found[f"{side}_hits"] = len(hits)
        found[f"{side}_count"] = sum(h["count"] for h in hits)
        found[side] = hits[:limit]
    found["limit"] = limit
    return found


def _segment(view: ViewOfSession, ids: list[str | None], limit: int) -> list[dict[str, Any]]:
    sm = view.sm
    rows: list[dict[str, Any]] = []
    for entry_id in ids[:limit]:
        entry = sm.get_entry(entry_id) if entry_id is not None else None
        if entry is None:
            rows.append({"id": entry_id, "kind": "unknown", "text": "", "error": False})
            continue
        rows.append({
            "id": entry_id,
            "kind": display_kind(entry),
            "text": _row_text(entry),
            "error": is_error_entry(entry),
        })
    return rows


def _branches(view: ViewOfSession, args: Any) -> dict[str, Any]:
    a, b = _pair(view, args)
    limit = _limit(args)
    result = _answer(lambda: compare_branches(view.sm, a, b))
    for side in ("a", "b"):
        ids = result[side]
        result[f"{side}_count"] = len(ids)
        result[f"{side}_rows"] = _segment(view, ids, limit)
        result[side] = ids[:limit]
    for summary in result["summaries"]:
        text, truncated = cut_summary(summary["summary"])
        if truncated:
            summary["summary"] = text
            summary["truncated"] = True
    result["limit"] = limit
    result["nodes"] = _nodes(view, a=a, b=b, common=result["common_ancestor"])
    return result


def _pick_node(view: ViewOfSession, args: Any) -> dict[str, Any]:
    """One picked entry as the pane names it (before a second pick makes a comparison)."""
    args = request_args(args)
    side = args.get("side", "a")
    if side not in _NAMES:
        raise RequestError(f"side must be 'a' or 'b', not {side!r}")
    entry_id = picked_entry(view.sm, {side: args.get("id")}, side, _NAMES[side])
    return _nodes(view, node=entry_id)["node"]  # type: ignore[return-value]


OPS: dict[str, Callable[[Any, Any], Any]] = {
    "compare_node": _pick_node,
    "context_diff": _diff,
    "context_search": _search,
    "compare_branches": _branches,
}
