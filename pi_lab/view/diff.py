"""What two nodes' contexts share, and what only one of them holds.

Both contexts are projections of the same session, so a projected message is identified by
the entry it came from (the very same entry object on both sides) and its position among that
entry's messages; ids are reported but never needed for matching, so entries with odd or
missing ids still compare correctly.
"""

from __future__ import annotations

from typing import Any

from pi_lab.compaction.tokens import estimate_projected_context_tokens, estimate_tokens, whole_tokens
from pi_lab.session._text import content_preview, content_text
from pi_lab.session.projection import SessionProjection
from pi_lab.session.protocol import ReadableSession
from pi_lab.view._common import SessionLike, branch_to, manager_of, projection_at, str_or_none
from pi_lab.view.errors import ViewError

__all__ = ["context_diff", "context_search", "searchable_text", "SNIPPET_CHARS"]

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)

SNIPPET_CHARS = 40


class _Side:
    """One node's context: path, projection and its messages keyed by source."""

    def __init__(self, sm: ReadableSession, entry_id: Any, argument: str):
        self.entry_id = entry_id
        self.path = branch_to(sm, entry_id, argument)
        self.projection: SessionProjection = projection_at(self.path)
        self.rows: list[tuple[tuple[int, int], Entry, dict[str, Any]]] = []
        self.sources: set[int] = set()  # identities of entries that put a message in the context
        for item in self.projection.entries:
            for k, message in enumerate(item.messages):
                self.rows.append(((id(item.source), k), item.source, message))
            if item.messages:
                self.sources.add(id(item.source))
        self.keys = {key: message for key, _, message in self.rows}

    def context_tokens(self) -> int:
        return whole_tokens(estimate_projected_context_tokens(self.projection, self.path).tokens)


def _row(source: Entry, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "source_id": str_or_none(source.get("id")),
        "role": str_or_none(message.get("role")),
        "tokens": int(estimate_tokens(message)),
        "source_type": str_or_none(source.get("type")),
    }


def _replaced(side: _Side, other: _Side, name: str) -> dict[str, Any] | None:
    """What the compaction summary at the start of ``side``'s context stands for on ``other``."""
    entries = side.projection.entries
    if not entries or entries[0].source.get("type") != "compaction" or not entries[0].messages:
        return None
    compaction = entries[0].source
    at = -1
    for i in range(len(side.path) - 1, -1, -1):
        if side.path[i] is compaction:
            at = i
            break
    in_context = {id(item.source) for item in entries}
    ids: list[str | None] = []
    tokens = 0
    other_by_source: dict[int, list[dict[str, Any]]] = {}
    for _, source, message in other.rows:
        other_by_source.setdefault(id(source), []).append(message)
    for entry in side.path[:at]:
        key = id(entry)
        # summarised on this side (before the checkpoint, not kept) and verbatim on the other
        if key not in in_context and key in other_by_source:
            ids.append(str_or_none(entry.get("id")))
            tokens += sum(int(estimate_tokens(m)) for m in other_by_source[key])
    return {
        "side": name,
        "compaction_id": str_or_none(compaction.get("id")),
        "source_ids": ids,
        "tokens": tokens,
    }


def searchable_text(message: dict[str, Any]) -> str:
    """The text of a message as the model reads it (tool-call arguments and thinking included)."""
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        summary = message.get("summary")
        return summary if isinstance(summary, str) else ""
    if role == "bashExecution":
        command, output = message.get("command"), message.get("output")
        return "\n".join(t for t in (command, output) if isinstance(t, str))
    if role == "system":
        parts = [content_text(message.get("content"), "\n")]
        sections = message.get("sections")
        if isinstance(sections, dict):
            parts.extend(v for v in sections.values() if isinstance(v, str))
        tools = message.get("toolsAdded")
        if isinstance(tools, list):
            parts.append(content_preview([{"type": "toolCall", "name": "tools", "arguments": tools}]))
        return "\n".join(parts)
    return content_preview(message.get("content"), "\n", thinking_text=True)


def _hits(side: _Side, needle: str, case_sensitive: bool) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = []
    for index, (_, source, message) in enumerate(side.rows):
        text = searchable_text(message)
        haystack = text if case_sensitive else text.casefold()
        at = haystack.find(needle)
        if at < 0:
            continue
        start = max(0, at - SNIPPET_CHARS)
        end = min(len(text), at + len(needle) + SNIPPET_CHARS)
        hits.append({
            "index": index,
            "source_id": str_or_none(source.get("id")),
            "role": str_or_none(message.get("role")),
            "count": haystack.count(needle),
            "snippet": " ".join(text[start:end].split()),
        })
    return hits


def _search(a: _Side, b: _Side, text: Any, case_sensitive: bool) -> dict[str, Any]:
    if not isinstance(text, str) or not text:
        raise ViewError(f"search text must be a non-empty string, not {text!r}")
    needle = text if case_sensitive else text.casefold()
    hits_a = _hits(a, needle, case_sensitive)
    hits_b = hits_a if b is a else _hits(b, needle, case_sensitive)
    return {"text": text, "a": hits_a, "b": hits_b, "in_a": bool(hits_a), "in_b": bool(hits_b)}


def context_search(sm: SessionLike, a_id: str, b_id: str, text: str, *, case_sensitive: bool = False) -> dict[str, Any]:
    """Where ``text`` occurs in what the model sees at ``a_id`` and at ``b_id``.

    Answers per side: ``{"text", "a": [hit], "b": [hit], "in_a", "in_b"}``, a hit being
    ``{"index", "source_id", "role", "count", "snippet"}`` (``index``: position in that side's
    projected messages). The text searched is what the model reads: message text, thinking,
    tool-call names and JSON arguments, tool results, summaries, bash commands and output,
    system prompt sections. Case-insensitive unless ``case_sensitive``.
    """
    sm = manager_of(sm)
    a = _Side(sm, a_id, "a_id")
    b = a if b_id == a_id else _Side(sm, b_id, "b_id")
    return _search(a, b, text, case_sensitive)


def context_diff(sm: SessionLike, a_id: str, b_id: str, *, search: str | None = None, case_sensitive: bool = False) -> dict[str, Any]:
    """Compare what the model sees at ``a_id`` with what it sees at ``b_id``.

    ``both`` / ``only_a`` / ``only_b``: projected messages as ``{"source_id", "role", "tokens",
    "source_type"}`` (in A's context order for ``both``); a message in both whose content a
    context edit made different on one side carries ``"edited": True`` and ``tokens_b``.
    ``tokens_a`` / ``tokens_b``: Σ of the per-message estimates of each side (what the rows sum
    to), ``delta`` = ``tokens_b − tokens_a``; ``context_a`` / ``context_b``: pi's context
    estimate at each node (usage-anchored, as the gauge shows). ``replaced``: for the
    compaction summary that opens either context, ``{"side", "compaction_id", "source_ids",
    "tokens"}`` — the entries it summarised that the other side still holds verbatim, and their
    tokens there. ``search``: also run :func:`context_search` and put it under ``"search"``.
    ``notes`` explains the special cases (same node, nothing in common).
    """
    return diff_with_messages(sm, a_id, b_id, search=search, case_sensitive=case_sensitive)[0]


def diff_with_messages(sm: SessionLike, a_id: Any, b_id: Any, *, search: str | None = None,
                       case_sensitive: bool = False) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """:func:`context_diff` and, per group (``both``, ``only_a``, ``only_b``), the projected
    message behind each row (A's for ``both``), so a viewer can preview the rows it shows."""
    sm = manager_of(sm)
    a = _Side(sm, a_id, "a_id")
    b = a if b_id == a_id else _Side(sm, b_id, "b_id")
    both: list[dict[str, Any]] = []
    only_a: list[dict[str, Any]] = []
    only_b: list[dict[str, Any]] = []
    messages: dict[str, list[dict[str, Any]]] = {"both": [], "only_a": [], "only_b": []}
    for key, source, message in a.rows:
        row = _row(source, message)
        other = b.keys.get(key)
        if other is None:
            only_a.append(row)
            messages["only_a"].append(message)
            continue
        if other is not message and other != message:
            row["edited"] = True
            row["tokens_b"] = int(estimate_tokens(other))
        both.append(row)
        messages["both"].append(message)
    for key, source, message in b.rows:
        if key not in a.keys:
            only_b.append(_row(source, message))
            messages["only_b"].append(message)
    tokens_a = sum(int(estimate_tokens(m)) for _, _, m in a.rows)
    tokens_b = tokens_a if b is a else sum(int(estimate_tokens(m)) for _, _, m in b.rows)
    replaced = [r for r in (_replaced(a, b, "a"), _replaced(b, a, "b")) if r is not None]
    notes: list[str] = []
    if b is a:
        notes.append("the same entry on both sides: everything is in both")
    elif not both and a.rows and b.rows:
        shared = a.path and b.path and a.path[0] is b.path[0]
        notes.append("the two contexts share no message" + ("" if shared else " (the entries are on unrelated roots)"))
    result: dict[str, Any] = {
        "a_id": a_id,
        "b_id": b_id,
        "both": both,
        "only_a": only_a,
        "only_b": only_b,
        "tokens_a": tokens_a,
        "tokens_b": tokens_b,
        "delta": tokens_b - tokens_a,
        "context_a": a.context_tokens(),
        "context_b": a.context_tokens() if b is a else b.context_tokens(),
        "replaced": replaced,
        "notes": notes,
    }
    if search is not None:
        result["search"] = _search(a, b, search, case_sensitive)
    return result, messages
