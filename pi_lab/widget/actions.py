"""What a click in the viewer does to the session, through the AgentSession.

Each action is a coroutine taking the agent and the request arguments and returning a
JSON-ready result. Refusals (pi's own messages: a response or tool call still running, a
compaction in progress, nothing to compact...) raise :class:`ActionRefused`, which the
viewer shows as is. Nothing here knows about widgets or HTTP.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

__all__ = ["ActionRefused", "ACTIONS", "run_action", "TOOL_RUNNING"]

TOOL_RUNNING = (
    "A tool call is still running: its result would be attached to the wrong branch. "
    "Wait for it to finish before navigating the session tree."
)


class ActionRefused(RuntimeError):
    """An action the engine refused, with the reason to show."""


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _require_entry(agent: Any, entry_id: Any) -> None:
    if not isinstance(entry_id, str) or agent.session_manager.get_entry(entry_id) is None:
        raise ActionRefused(f"Entry {entry_id} not found")


def _idle(agent: Any, what: str) -> None:
    if getattr(agent, "has_pending_tool_calls", False):
        raise ActionRefused(TOOL_RUNNING)
    if getattr(agent, "is_running", False):
        raise ActionRefused(f"Wait for the current response to finish before {what}.")


async def navigate(agent: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """pi's /tree selection: move the leaf, optionally summarising the branch left behind."""
    target = args.get("id")
    _require_entry(agent, target)
    if getattr(agent, "has_pending_tool_calls", False):
        raise ActionRefused(TOOL_RUNNING)
    if target == agent.session_manager.leaf_id:
        return {"already_here": True, "leaf_id": target}
    summarize = bool(args.get("summarize"))
    instructions = _text(args.get("instructions")) if summarize else None
    result = await agent.navigate_tree(
        target,
        summarize=summarize,
        custom_instructions=instructions,
        replace_instructions=bool(args.get("replace_instructions")),
        label=_text(args.get("label")),
    )
    summary = result.summary_entry
    return {
        "leaf_id": agent.session_manager.leaf_id,
        "editor_text": result.editor_text,
        "cancelled": result.cancelled,
        "aborted": result.aborted,
        "summary_id": summary.get("id") if isinstance(summary, Mapping) else None,
    }


async def compact(agent: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """pi's /compact [instructions] on the current branch."""
    _idle(agent, "compacting")
    result = await agent.compact(_text(args.get("instructions")))
    return {
        "leaf_id": agent.session_manager.leaf_id,
        "first_kept_id": result.first_kept_entry_id,
        "tokens_before": result.tokens_before,
        "estimated_tokens_after": getattr(result, "estimated_tokens_after", None),
        "summary": result.summary,
    }


async def cancel(agent: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """Stop a running compaction or branch summary (nothing is appended)."""
    agent.abort_compaction()
    stop_summary = getattr(agent, "abort_branch_summary", None)
    if stop_summary is not None:
        stop_summary()
    return {"cancelled": True}


async def label(agent: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """Set or clear (empty text) the label of an entry; the label entry goes at the leaf."""
    target = args.get("id")
    _require_entry(agent, target)
    _idle(agent, "editing a label")
    text = _text(args.get("label"))
    entry_id = agent.session_manager.append_label_change(target, text)
    return {"label_entry_id": entry_id, "label": text}


async def _fork(agent: Any, entry_id: Any, position: str) -> dict[str, Any]:
    _require_entry(agent, entry_id)
    _idle(agent, "forking")
    previous = agent.session_manager.session_file
    try:
        result = agent.fork(entry_id, position=position)
        if inspect.isawaitable(result):
            result = await result
    except ValueError as error:
        raise ActionRefused(str(error)) from error
    sm = agent.session_manager
    return {
        "cancelled": bool(getattr(result, "cancelled", False)),
        "selected_text": getattr(result, "selected_text", None),
        "session_file": sm.session_file,
        "previous_session_file": previous,
        "session_id": sm.session_id,
    }


async def fork(agent: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """pi's /fork: a new session file holding the path before a user message."""
    return await _fork(agent, args.get("id"), "before")


async def clone(agent: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """pi's /clone: a new session file holding the path up to an entry (default: the leaf)."""
    target = args.get("id") or agent.session_manager.leaf_id
    if target is None:
        raise ActionRefused("Nothing to clone yet")
    return await _fork(agent, target, "at")


ACTIONS = {"navigate": navigate, "compact": compact, "cancel": cancel, "label": label, "fork": fork, "clone": clone}


async def run_action(agent: Any, op: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run one action; pi's refusals and engine errors come back as :class:`ActionRefused`."""
    handler = ACTIONS.get(op)
    if handler is None:
        raise ActionRefused(f"unknown action {op!r}")
    try:
        return await handler(agent, args or {})
    except ActionRefused:
        raise
    except (RuntimeError, ValueError, KeyError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
        raise ActionRefused(str(message)) from error
