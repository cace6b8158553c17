"""Two leaves side by side: where they part, and what each side did after that.

Per side: the tools the model ran, the files it read and modified (pi's file-operation
tracking: ``read``/``write``/``edit`` tool calls with a path, nested calls of tool results),
tokens and cost from recorded usage (summed as pi's session statistics do: assistant and
tool-result usage, ``usage`` entries, usage of compactions and branch summaries), errors and
retries, and the context pi would estimate at the leaf.
"""

from __future__ import annotations

from typing import Any

from pi_lab.compaction.file_ops import compute_file_lists, create_file_ops, extract_file_ops_from_message
from pi_lab.compaction.spend import SPEND_ENTRY_TYPES, Spend, spend_usage, usage_numbers
from pi_lab.compaction.tokens import estimate_projected_context_tokens, whole_tokens
from pi_lab.llm.catalog import context_window_for
from pi_lab.llm.errors import is_context_overflow, is_retryable_assistant_error
from pi_lab.view._common import SessionLike, branch_to, manager_of, model_id_of, projection_at, str_or_none

__all__ = ["compare_branches", "entry_stats", "fold_stats", "usage_numbers"]

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)

_ERROR_PREVIEW = 300
def entry_stats(entry: Entry) -> dict[str, Any] | None:
    """What one entry adds to its side's statistics (None: nothing), folded by
    :func:`fold_stats`. Keys, each only when it applies: ``usage`` (:func:`usage_numbers`),
    ``role`` ("user", "assistant", "toolResult"), ``tools`` (the tool-call names, in order),
    ``read`` / ``written`` / ``edited`` (file paths), ``aborted``, ``tool_error``, ``error`` (the
    error row without ``omitted``, which depends on the side), ``omits`` (the id a context edit
    without replacement drops)."""
    kind = entry.get("type")
    facts: dict[str, Any] = {}
    if kind == "context_edit" and entry.get("replacement") is None:
        target = entry.get("targetId")
        if isinstance(target, str):
            facts["omits"] = target
    if kind in SPEND_ENTRY_TYPES:
        numbers = usage_numbers(spend_usage(entry))
        if numbers is not None:
            facts["usage"] = numbers
        return facts or None
    message = entry.get("message") if kind == "message" else None
    if not isinstance(message, dict):
        return facts or None
    role = message.get("role")
    if role not in ("user", "assistant", "toolResult"):
        return facts or None
    facts["role"] = role
    if role == "user":
        return facts
    numbers = usage_numbers(spend_usage(entry))
    if numbers is not None:
        facts["usage"] = numbers
    ops = create_file_ops()
    extract_file_ops_from_message(message, ops)
    for name in ("read", "written", "edited"):
        paths = list(getattr(ops, name))
        if paths:
            facts[name] = paths
    if role == "toolResult":
        if message.get("isError") is True:
            facts["tool_error"] = True
        return facts
    content = message.get("content")
    tools = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "toolCall":
            name = block.get("name")
            tools.append(name if isinstance(name, str) and name else "(unnamed)")
    if tools:
        facts["tools"] = tools
    stop = message.get("stopReason")
    if stop == "aborted":
        facts["aborted"] = True
    elif stop == "error":
        window = context_window_for(model_id_of(message))
        overflow = is_context_overflow(message, window)
        error = message.get("errorMessage")
        facts["error"] = {
            "entry_id": str_or_none(entry.get("id")),
            "error": error[:_ERROR_PREVIEW] if isinstance(error, str) else None,
            "overflow": overflow,
            # pi never retries an overflow as it is (agent-loop.md §7.3)
            "retryable": not overflow and is_retryable_assistant_error(message),
        }
    return facts


def fold_stats(facts: list[dict[str, Any] | None], context: int) -> dict[str, Any]:
    """A side's statistics from its entries' :func:`entry_stats`, in path order, and the
    context pi would estimate at its leaf (src_frontend/export/viewsBranches.ts folds the same way)."""
    tools: dict[str, int] = {}
    ops = create_file_ops()
    spend = Spend()  # the one sum rule (pi_lab.compaction.spend)
    omitted = {f["omits"] for f in facts if f is not None and "omits" in f}
    errors: list[dict[str, Any]] = []
    calls = aborted = tool_results = tool_errors = user_messages = 0
    for f in facts:
        if f is None:
            continue
        spend.add(f.get("usage"))
        role = f.get("role")
        if role == "user":
            user_messages += 1
        elif role == "assistant":
            calls += 1
        elif role == "toolResult":
            tool_results += 1
        if f.get("tool_error"):
            tool_errors += 1
        for name in ("read", "written", "edited"):
            getattr(ops, name).update(f.get(name, ()))
        for key in f.get("tools", ()):
            tools[key] = tools.get(key, 0) + 1
        if f.get("aborted"):
            aborted += 1
        error = f.get("error")
        if error is not None:
            errors.append({**error, "omitted": error["entry_id"] in omitted})
    read, modified = compute_file_lists(ops)
    total = spend.tokens
    return {
        "entries": len(facts),
        "user_messages": user_messages,
        "calls": calls,
        "tools": dict(sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))),
        "tool_calls": sum(tools.values()),
        "tool_results": tool_results,
        "tool_errors": tool_errors,
        "files_read": read,
        "files_modified": modified,
        "tokens": {
            "input": spend.input,
            "output": spend.output,
            "cache_read": spend.cache_read,
            "cache_write": spend.cache_write,
            "total": total,
        },
        "cost": spend.cost,
        "usage_known": spend.records > 0,
        "errors": errors,
        "error_count": len(errors),
        "aborted": aborted,
        # pi omits a failed attempt (context_edit without replacement) before it retries it or
        # recovers from an overflow, so an omitted error on the side is one retry
        "retries": sum(1 for e in errors if e["omitted"]),
        "context_tokens": context,
    }


def _side_stats(segment: list[Entry], path: list[Entry]) -> dict[str, Any]:
    context = whole_tokens(estimate_projected_context_tokens(projection_at(path), path).tokens) if path else 0
    return fold_stats([entry_stats(entry) for entry in segment], context)


def compare_branches(sm: SessionLike, leaf_a: str, leaf_b: str) -> dict[str, Any]:
    """The two root-to-leaf paths from their common ancestor on.

    ``common_ancestor``: the last entry both paths share (None when the leaves are on
    unrelated roots); ``a`` / ``b``: the entry ids after it, root first; ``a_stats`` /
    ``b_stats``: per-side statistics (see the module text); ``summaries``: the branch summaries
    written when leaving either side or arriving on it, each ``{"entry_id", "from_id",
    "parent_id", "left_side", "on_side", "summary"}`` — ``left_side`` is the side holding its
    ``fromId`` (pi ≥ 0.87 records the abandoned leaf there; older files and the seed explainer
    record the target position, then it is None), ``on_side`` the side the summary entry itself
    is on. ``notes`` explains the special cases (same leaf, ancestor, unrelated roots, no usage)
    in the Compare pane's words, which shows them as they are: ``leaf_a`` is "A", ``leaf_b`` "B".
    """
    sm = manager_of(sm)
    path_a = branch_to(sm, leaf_a, "leaf_a")
    path_b = branch_to(sm, leaf_b, "leaf_b")
    shared = 0
    limit = min(len(path_a), len(path_b))
    while shared < limit and path_a[shared] is path_b[shared]:
        shared += 1
    common = path_a[shared - 1] if shared else None
    side_a, side_b = path_a[shared:], path_b[shared:]
    notes: list[str] = []
    if common is None:
        notes.append("no common ancestor: the two entries are on unrelated roots (each side is its whole path)")
    elif not side_a and not side_b:
        notes.append("the same entry on both sides: nothing diverges")
    elif not side_a:
        notes.append("A comes before B on the same branch: A is the fork point, so A's side is empty "
                     "and B's side is what followed A")
    elif not side_b:
        notes.append("B comes before A on the same branch: B is the fork point, so B's side is empty "
                     "and A's side is what followed B")
    a_stats = _side_stats(side_a, path_a)
    b_stats = _side_stats(side_b, path_b)
    for name, segment, stats in (("A", side_a, a_stats), ("B", side_b, b_stats)):
        if segment and not stats["usage_known"]:
            notes.append(f"{name}'s side has no recorded usage (no reply on it reported any): its tokens and cost are unknown, "
                         "shown as 0")

    ids_a = {e.get("id") for e in side_a if isinstance(e.get("id"), str)}
    ids_b = {e.get("id") for e in side_b if isinstance(e.get("id"), str)}
    on_a = {id(e) for e in side_a}
    on_b = {id(e) for e in side_b}
    summaries: list[dict[str, Any]] = []
    for entry in sm.get_entries():
        if entry.get("type") != "branch_summary":
            continue
        from_id = entry.get("fromId")
        left = None
        if isinstance(from_id, str):
            left = "a" if from_id in ids_a else "b" if from_id in ids_b else None
        on = "a" if id(entry) in on_a else "b" if id(entry) in on_b else None
        if left is None and on is None:
            continue
        summary = entry.get("summary")
        summaries.append({
            "entry_id": str_or_none(entry.get("id")),
            "from_id": str_or_none(from_id),
            "parent_id": str_or_none(entry.get("parentId")),
            "left_side": left,
            "on_side": on,
            "summary": summary if isinstance(summary, str) else "",
        })
    return {
        "leaf_a": leaf_a,
        "leaf_b": leaf_b,
        "common_ancestor": str_or_none(common.get("id")) if common is not None else None,
        "a": [str_or_none(e.get("id")) for e in side_a],
        "b": [str_or_none(e.get("id")) for e in side_b],
        "a_stats": a_stats,
        "b_stats": b_stats,
        "summaries": summaries,
        "notes": notes,
    }
