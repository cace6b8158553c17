"""What a click in the viewer does to the session, through the AgentSession.

Each action is a coroutine taking the agent and the request arguments and returning a
JSON-ready result. Refusals (pi's own messages: a response or tool call still running, a
compaction in progress, nothing to compact...; a session opened read-only; another process
writing the file) raise :class:`ActionRefused`, which the viewer shows as is. Only
pi_lab's own errors (:class:`~pi_lab.errors.PiLabError`) become refusals: anything else is a
bug and propagates with its traceback. Nothing here knows about widgets or HTTP.

A session opened read-only (``pi_lab.open(path)``) still navigates (the leaf moves in memory
only); whatever would append to its file (a branch summary, a label, a compaction) is refused
with the file's name and the way to write. Fork and clone write a NEW file and leave the
user's file alone (the source is read read-only, an old format migrated in memory only), so
they stay allowed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pi_lab.errors import ConcurrentWriteError, PiLabError, Refused
from pi_lab.session.protocol import ReadableSession

if TYPE_CHECKING:
    from pi_lab.compaction import CompactionResult

__all__ = ["ActionRefused", "ActingAgent", "WritableSession", "ACTIONS", "WRITE_ACTIONS", "run_action", "TOOL_RUNNING", "read_only_refusal"]

NAVIGATE_WHILE_RUNNING = "Wait for the current response to finish before navigating the session tree."
NAVIGATE_WHILE_COMPACTING = (
    "Wait for the current compaction or tree navigation to finish before navigating the session tree."
)
TOOL_RUNNING = (
    "A tool call is still running: its result would be attached to the wrong branch. "
    "Wait for it to finish before navigating the session tree."
)


@runtime_checkable
class WritableSession(ReadableSession, Protocol):
    """What the actions need of a session beyond reading it (pi's SessionManager, and the
    read-only adapters, which refuse each write with their own error)."""

    @property
    def is_persisted(self) -> bool: ...

    def write_plan(self) -> str: ...

    def append_label_change(self, target_id: str, label: str | None = None) -> str: ...


class Navigated(Protocol):
    """What an action reads of pi_lab.agent's NavigateResult (the view imports no agent module)."""

    @property
    def editor_text(self) -> str | None: ...
    @property
    def cancelled(self) -> bool: ...
    @property
    def aborted(self) -> bool: ...
    @property
    def summary_entry(self) -> Mapping[str, Any] | None: ...


class Forked(Protocol):
    """What an action reads of pi_lab.agent's ForkResult."""

    @property
    def cancelled(self) -> bool: ...
    @property
    def selected_text(self) -> str | None: ...


@runtime_checkable
class ActingAgent(Protocol):
    """What the actions need of the agent: pi_lab.agent.AgentSession (the engine's state
    flags, its tree navigation, compaction and fork) over a writable session."""

    @property
    def session_manager(self) -> WritableSession: ...
    @property
    def model(self) -> object | None: ...
    @property
    def is_running(self) -> bool: ...
    @property
    def is_compacting(self) -> bool: ...
    @property
    def has_pending_tool_calls(self) -> bool: ...

    async def navigate_tree(self, target_id: str, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool = False, label: str | None = None) -> Navigated: ...

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult: ...

    def abort_compaction(self) -> None: ...

    def abort_branch_summary(self) -> None: ...

    async def fork(self, entry_id: str, position: str = "before") -> Forked: ...


class ActionRefused(Refused):
    """An action the engine refused, with the reason to show (still a ``RuntimeError``).

    ``concurrent`` is True when another process had written the file: its entries are now in
    the session, and the viewer should show them.
    """

    concurrent = False


def read_only_refusal(sm: WritableSession, what: str) -> ActionRefused:
    """The refusal of an append on a read-only session: which file, and how to write."""
    where = sm.session_file or "this session"
    plan = sm.write_plan()
    return ActionRefused(
        f"{where} is open read-only: {what} would append to it. To write, allow writes in the viewer"
        f"{f' ({plan})' if plan else ''} or open it with pi_lab.open(path, writable=True)."
    )


def _writable(agent: ActingAgent, what: str) -> None:
    sm = agent.session_manager
    if sm.read_only:
        raise read_only_refusal(sm, what)


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _require_entry(agent: ActingAgent, entry_id: Any) -> str:
    if not isinstance(entry_id, str) or agent.session_manager.get_entry(entry_id) is None:
        raise ActionRefused(f"Entry {entry_id} not found")
    return entry_id


def _idle(agent: ActingAgent, what: str) -> None:
    if agent.has_pending_tool_calls:
        raise ActionRefused(TOOL_RUNNING)
    if agent.is_running:
        raise ActionRefused(f"Wait for the current response to finish before {what}.")


async def navigate(agent: ActingAgent, args: Mapping[str, Any]) -> dict[str, Any]:
    """pi's /tree selection: move the leaf, optionally summarising the branch left behind."""
    target = _require_entry(agent, args.get("id"))
    if agent.has_pending_tool_calls:
        raise ActionRefused(TOOL_RUNNING)
    if agent.is_running:
        raise ActionRefused(NAVIGATE_WHILE_RUNNING)
    if agent.is_compacting:
        raise ActionRefused(NAVIGATE_WHILE_COMPACTING)
    sm = agent.session_manager
    if target == sm.leaf_id:
        return {"already_here": True, "leaf_id": target}
    summarize = bool(args.get("summarize"))
    label_text = _text(args.get("label"))
    # Going to a descendant of the leaf abandons nothing: pi then just moves the leaf.
    nothing_to_summarize = summarize and not _abandoned(sm, target)
    if summarize and not nothing_to_summarize and agent.model is None:
        raise ActionRefused("No model available for summarization")  # pi's words
    if (summarize and not nothing_to_summarize) or label_text:
        _writable(agent, "a branch summary" if summarize and not nothing_to_summarize else "a label")
    instructions = _text(args.get("instructions")) if summarize else None
    result = await agent.navigate_tree(
        target,
        summarize=summarize,
        custom_instructions=instructions,
        replace_instructions=bool(args.get("replace_instructions")),
        label=label_text,
    )
    summary = result.summary_entry
    return {
        "leaf_id": agent.session_manager.leaf_id,
        "editor_text": result.editor_text,
        "cancelled": result.cancelled,
        "aborted": result.aborted,
        "summary_id": summary.get("id") if isinstance(summary, Mapping) else None,
        "nothing_to_summarize": bool(nothing_to_summarize and summary is None),
    }


def _abandoned(sm: ReadableSession, target: str) -> bool:
    """Whether moving the leaf to ``target`` leaves entries behind (pi summarises exactly those:
    the old branch below the deepest common ancestor). False when ``target`` is the leaf or
    one of its descendants."""
    from pi_lab.compaction import collect_entries_for_branch_summary

    entries, _ = collect_entries_for_branch_summary(sm, sm.leaf_id, target)
    return bool(entries)


async def compact(agent: ActingAgent, args: Mapping[str, Any]) -> dict[str, Any]:
    """pi's /compact [instructions] on the current branch."""
    _idle(agent, "compacting")
    _writable(agent, "a compaction")
    result = await agent.compact(_text(args.get("instructions")))
    return {
        "leaf_id": agent.session_manager.leaf_id,
        "first_kept_id": result.first_kept_entry_id,
        "tokens_before": result.tokens_before,
        "estimated_tokens_after": result.estimated_tokens_after,
        "summary": result.summary,
    }


async def cancel(agent: ActingAgent, args: Mapping[str, Any]) -> dict[str, Any]:
    """Stop a running compaction or branch summary (nothing is appended)."""
    agent.abort_compaction()
    agent.abort_branch_summary()
    return {"cancelled": True}


async def label(agent: ActingAgent, args: Mapping[str, Any]) -> dict[str, Any]:
    """Set or clear (empty text) the label of an entry; the label entry goes at the leaf."""
    target = _require_entry(agent, args.get("id"))
    _idle(agent, "editing a label")
    _writable(agent, "a label")
    text = _text(args.get("label"))
    entry_id = agent.session_manager.append_label_change(target, text)
    return {"label_entry_id": entry_id, "label": text}


async def _fork(agent: ActingAgent, wanted: Any, position: str) -> dict[str, Any]:
    entry_id = _require_entry(agent, wanted)
    _idle(agent, "forking")
    source = agent.session_manager
    previous = source.session_file
    entry = source.get_entry(entry_id) or {}  # _require_entry found it
    message = entry.get("message") if entry.get("type") == "message" else None
    if position == "before" and not (isinstance(message, dict) and message.get("role") == "user"):
        raise ActionRefused("Invalid entry ID for forking")  # pi's words
    copies_a_path = position == "at" or entry.get("parentId") is not None
    if copies_a_path and source.is_persisted and previous and not os.path.exists(previous):
        raise ActionRefused("This session has not been saved yet. Send a message before cloning or forking it.")
    result = await agent.fork(entry_id, position=position)
    sm = agent.session_manager
    return {
        "cancelled": bool(result.cancelled),
        "selected_text": result.selected_text,
        "session_file": sm.session_file,
        "previous_session_file": previous,
        "session_id": sm.session_id,
    }


async def fork(agent: ActingAgent, args: Mapping[str, Any]) -> dict[str, Any]:
    """pi's /fork: a new session file holding the path before a user message."""
    return await _fork(agent, args.get("id"), "before")


async def clone(agent: ActingAgent, args: Mapping[str, Any]) -> dict[str, Any]:
    """pi's /clone: a new session file holding the path up to an entry (default: the leaf)."""
    target = args.get("id") or agent.session_manager.leaf_id
    if target is None:
        raise ActionRefused("Nothing to clone yet")
    return await _fork(agent, target, "at")


ACTIONS = {"navigate": navigate, "compact": compact, "cancel": cancel, "label": label, "fork": fork, "clone": clone}
# The one list of requests that act on the session (the widget runs them as tasks, the
# read-only server refuses them and sends them to the Lab viewer as session.write_actions).
WRITE_ACTIONS = frozenset(ACTIONS)


async def run_action(agent: ActingAgent, op: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run one action. pi's refusals and pi_lab's own errors (:class:`~pi_lab.errors.PiLabError`:
    a read-only session, another writer, a failed summary...) come back as
    :class:`ActionRefused`; any other exception is a bug and propagates unchanged."""
    handler = ACTIONS.get(op)
    if handler is None:
        raise ActionRefused(f"unknown action {op!r}")
    try:
        return await handler(agent, args or {})
    except ActionRefused:
        raise
    except PiLabError as error:
        refused = ActionRefused(str(error))
        refused.concurrent = isinstance(error, ConcurrentWriteError)
        raise refused from error
