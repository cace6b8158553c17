"""Tree navigation with optional branch summaries, and fork/clone into a new file
(tree-and-context.md §10.2, §11). A component of :class:`~pi_lab.agent.session.AgentSession`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pi_lab.agent.compactor import call_hook, summary_retry_callbacks
from pi_lab.agent.run_state import BRANCH_SUMMARY, RunState
from pi_lab.compaction import SummarizationError, collect_entries_for_branch_summary, generate_branch_summary
from pi_lab.errors import Refused
from pi_lab.session import SessionManager
from pi_lab.session._text import content_text

if TYPE_CHECKING:
    from pi_lab.agent.transcript import Transcript
    from pi_lab.compaction import RetryPolicy
    from pi_lab.llm.model import Model

__all__ = ["TreeNavigator", "NavigateResult", "ForkResult", "InvalidEntry", "NAVIGATE_WHILE_RUNNING",
           "NAVIGATE_WHILE_COMPACTING", "INVALID_FORK_ENTRY"]

NAVIGATE_WHILE_RUNNING = "Wait for the current response to finish before navigating the session tree."
NAVIGATE_WHILE_COMPACTING = (
    "Wait for the current compaction or tree navigation to finish before navigating the session tree."
)
INVALID_FORK_ENTRY = "Invalid entry ID for forking"
NOT_SAVED_YET = "This session has not been saved yet. Send a message before cloning or forking it."


class InvalidEntry(Refused, KeyError, ValueError):
    """The entry named does not exist or cannot be used here (e.g. forking before a non-user entry).

    Also a ``KeyError`` (navigating to an unknown id raised one) and a ``ValueError`` (forking
    at a wrong entry raised one); its text is the message itself, not ``KeyError``'s quoted repr.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True, slots=True)
class NavigateResult:
    editor_text: str | None = None
    cancelled: bool = False
    aborted: bool = False
    summary_entry: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ForkResult:
    cancelled: bool = False
    selected_text: str | None = None


class NavigatorOwner(Protocol):
    """What navigation and forking read of their AgentSession."""

    session_manager: SessionManager
    client: Any
    model: Model
    retry: RetryPolicy
    thinking_level: str
    branch_summary_reserve_tokens: int
    before_tree: Callable[..., Any] | None

    @property
    def is_running(self) -> bool: ...

    @property
    def is_compacting(self) -> bool: ...

    @property
    def has_pending_tool_calls(self) -> bool: ...

    async def abort(self) -> None: ...


class TreeNavigator:
    """``navigate_tree`` and ``fork`` for one AgentSession (reads its public configuration)."""

    def __init__(self, owner: NavigatorOwner, run: RunState, transcript: Transcript,
                 emit: Callable[[dict[str, Any]], None]):
        self._owner = owner
        self._run_state = run
        self._transcript = transcript
        self._emit = emit

    async def navigate_tree(
        self,
        target_id: str,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> NavigateResult:
        owner, run = self._owner, self._run_state
        if owner.is_running or run.preflight > 0 or owner.has_pending_tool_calls:
            raise Refused(NAVIGATE_WHILE_RUNNING)
        if owner.is_compacting:
            raise Refused(NAVIGATE_WHILE_COMPACTING)
        sm = owner.session_manager
        old_leaf = sm.leaf_id
        if target_id == old_leaf:
            return NavigateResult()
        if summarize and owner.model is None:
            raise Refused("No model available for summarization")
        target = sm.get_entry(target_id)
        if target is None:
            raise InvalidEntry(f"Entry {target_id} not found")
        entries, common_ancestor = collect_entries_for_branch_summary(sm, old_leaf, target_id)
        operation = run.begin(BRANCH_SUMMARY)
        try:
            supplied: dict[str, Any] | None = None
            if owner.before_tree is not None:
                preparation = {"targetId": target_id, "oldLeafId": old_leaf, "commonAncestorId": common_ancestor,
                               "entriesToSummarize": entries, "userWantsSummary": summarize,
                               "customInstructions": custom_instructions, "replaceInstructions": replace_instructions,
                               "label": label}
                try:
                    answer = await call_hook(owner.before_tree, preparation=preparation, signal=operation.signal)
                except Exception as error:  # an extension error is reported, navigation proceeds
                    self._emit({"type": "extension_error", "hook": "before_tree", "error": str(error)})
                    answer = None
                if answer:
                    if answer.get("cancel"):
                        return NavigateResult(cancelled=True)
                    if summarize and answer.get("summary"):
                        supplied = answer["summary"]
                    custom_instructions = answer.get("customInstructions", custom_instructions)
                    replace_instructions = answer.get("replaceInstructions", replace_instructions)
                    label = answer.get("label", label)

            summary_text: str | None = None
            details: Any = None
            usage: Any = None
            from_extension = False
            if supplied is not None:
                summary_text, details, usage, from_extension = (
                    supplied.get("summary"), supplied.get("details"), supplied.get("usage"), True)
            elif summarize and entries:
                result = await generate_branch_summary(
                    entries, owner.client, owner.model, custom_instructions=custom_instructions,
                    replace_instructions=replace_instructions, reserve_tokens=owner.branch_summary_reserve_tokens,
                    thinking_level=owner.thinking_level, retry=owner.retry,
                    callbacks=summary_retry_callbacks(self._emit, None), signal=operation.signal,
                )
                if result.aborted or operation.cancelled:
                    return NavigateResult(cancelled=True, aborted=True)
                if result.error:
                    raise SummarizationError(result.error)
                summary_text, usage = result.summary, result.usage
                details = {"readFiles": list(result.read_files or []), "modifiedFiles": list(result.modified_files or [])}

            editor_text = None
            new_leaf: str | None = target_id
            if target.get("type") == "message" and (target.get("message") or {}).get("role") == "user":
                new_leaf, editor_text = target.get("parentId"), content_text(target["message"].get("content"))
            elif target.get("type") == "custom_message":
                new_leaf, editor_text = target.get("parentId"), content_text(target.get("content"))

            summary_entry = None
            if summary_text:
                summary_id = sm.branch_with_summary(new_leaf, summary_text, details, from_extension, usage)
                summary_entry = sm.get_entry(summary_id)
                if label:
                    sm.append_label_change(summary_id, label)
            else:
                if new_leaf is None:
                    sm.reset_leaf()
                else:
                    sm.branch(new_leaf)
                if label:
                    sm.append_label_change(target_id, label)
            self._transcript.refresh()
            run.end(operation)  # listeners of session_tree see the navigation finished
            event = {"type": "session_tree", "newLeafId": sm.leaf_id, "oldLeafId": old_leaf, "summaryEntry": summary_entry}
            if summary_entry is not None:
                event["fromExtension"] = from_extension
            self._emit(event)
            return NavigateResult(editor_text=editor_text, summary_entry=summary_entry)
        finally:
            run.end(operation)

    async def fork(self, entry_id: str, position: str = "before") -> ForkResult:
        owner = self._owner
        sm = owner.session_manager
        selected = sm.get_entry(entry_id)
        if selected is None:
            raise InvalidEntry(INVALID_FORK_ENTRY)
        selected_text = None
        if position == "before":
            message = selected.get("message") if selected.get("type") == "message" else None
            if not isinstance(message, dict) or message.get("role") != "user":
                raise InvalidEntry(INVALID_FORK_ENTRY)
            target_leaf = selected.get("parentId")
            selected_text = content_text(message.get("content"))
        elif position == "at":
            target_leaf = entry_id
        else:
            raise ValueError(f"position must be 'before' or 'at', not {position!r}")  # a caller's bug
        if owner.is_running:
            await owner.abort()
        previous_file = sm.session_file
        if sm.is_persisted:
            if not previous_file:
                raise RuntimeError("Persisted session is missing a session file")  # a broken manager: a bug
            if target_leaf is None:
                new_sm = SessionManager.create(sm.cwd, sm.session_dir, parent_session=previous_file)
            else:
                if not os.path.exists(previous_file):
                    raise Refused(NOT_SAVED_YET)
                # Read-only: an old format is migrated in memory, never rewritten in place; the
                # branched copy is a new file either way.
                new_sm = SessionManager.open(previous_file, read_only=True)
                if new_sm.create_branched_session(target_leaf) is None:
                    raise RuntimeError("Failed to create forked session")
        else:
            new_sm = sm
            if target_leaf is None:
                sm.new_session()
            else:
                sm.create_branched_session(target_leaf)
        self.rebind(new_sm)
        self._emit({"type": "session_switch", "reason": "fork", "previousSessionFile": previous_file,
                    "sessionFile": new_sm.session_file})
        return ForkResult(selected_text=selected_text)

    def rebind(self, session_manager: SessionManager) -> None:
        """Continue on another session: nothing of the old file's run state carries over."""
        self._owner.session_manager = session_manager
        self._transcript.forget_all()
        self._run_state.reset_for_new_session()
        self._transcript.refresh()
