"""Tree navigation with optional branch summaries, and fork/clone into a new file
(tree-and-context.md §10.2, §11)."""

from __future__ import annotations

import asyncio
import inspect
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pi_lab.compaction import collect_entries_for_branch_summary, generate_branch_summary
from pi_lab.session import SessionManager
from pi_lab.session._text import content_text

if TYPE_CHECKING:
    from pi_lab.agent.session import AgentSession

__all__ = ["TreeFlow", "NavigateResult", "ForkResult", "NAVIGATE_WHILE_RUNNING", "NAVIGATE_WHILE_COMPACTING"]

NAVIGATE_WHILE_RUNNING = "Wait for the current response to finish before navigating the session tree."
NAVIGATE_WHILE_COMPACTING = (
    "Wait for the current compaction or tree navigation to finish before navigating the session tree."
)


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


class TreeFlow:
    """Mixin for :class:`~pi_lab.agent.session.AgentSession`."""

    async def navigate_tree(
        self: AgentSession,
        target_id: str,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> NavigateResult:
        """Move the leaf to ``target_id`` (pi's ``/tree``), optionally summarising what is left.

        Selecting a user (or custom) message moves the leaf to its parent and returns its text
        for re-editing. Nothing changes when the summary fails or is cancelled. Refused while
        a response or a tool call is running: pi would attach the result to the wrong branch.
        """
        if self.is_running or self._preflight > 0 or self.has_pending_tool_calls:
            raise RuntimeError(NAVIGATE_WHILE_RUNNING)
        if self.is_compacting:
            raise RuntimeError(NAVIGATE_WHILE_COMPACTING)
        sm = self.session_manager
        old_leaf = sm.leaf_id
        if target_id == old_leaf:
            return NavigateResult()
        if summarize and self.model is None:
            raise RuntimeError("No model available for summarization")
        target = sm.get_entry(target_id)
        if target is None:
            raise KeyError(f"Entry {target_id} not found")
        entries, common_ancestor = collect_entries_for_branch_summary(sm, old_leaf, target_id)
        cancel = asyncio.Event()
        self._branch_summary_cancel = cancel
        try:
            supplied: dict[str, Any] | None = None
            if self.before_tree is not None:
                preparation = {"targetId": target_id, "oldLeafId": old_leaf, "commonAncestorId": common_ancestor,
                               "entriesToSummarize": entries, "userWantsSummary": summarize,
                               "customInstructions": custom_instructions, "replaceInstructions": replace_instructions,
                               "label": label}
                try:
                    answer = self.before_tree(preparation=preparation, signal=cancel)
                    if inspect.isawaitable(answer):
                        answer = await answer
                except Exception as error:
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
                    entries, self.client, self.model, custom_instructions=custom_instructions,
                    replace_instructions=replace_instructions, reserve_tokens=self.branch_summary_reserve_tokens,
                    thinking_level=self.thinking_level, retry=self.retry, callbacks=self._retry_callbacks(None),
                    signal=cancel,
                )
                if result.aborted or cancel.is_set():
                    return NavigateResult(cancelled=True, aborted=True)
                if result.error:
                    raise RuntimeError(result.error)
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
            self._refresh_finalized_context()
            self._branch_summary_cancel = None
            event = {"type": "session_tree", "newLeafId": sm.leaf_id, "oldLeafId": old_leaf, "summaryEntry": summary_entry}
            if summary_entry is not None:
                event["fromExtension"] = from_extension
            self._emit(event)
            return NavigateResult(editor_text=editor_text, summary_entry=summary_entry)
        finally:
            self._branch_summary_cancel = None

    def abort_branch_summary(self: AgentSession) -> None:
        if self._branch_summary_cancel is not None:
            self._branch_summary_cancel.set()

    async def fork(self: AgentSession, entry_id: str, position: str = "before") -> ForkResult:
        """pi's ``/fork`` (``before`` a user message) and ``/clone`` (``at`` an entry).

        Both produce a new session (a new file with ``parentSession``) and rebind this
        AgentSession to it; the old file is left as it was.
        """
        sm = self.session_manager
        selected = sm.get_entry(entry_id)
        if selected is None:
            raise ValueError("Invalid entry ID for forking")
        selected_text = None
        if position == "before":
            message = selected.get("message") if selected.get("type") == "message" else None
            if not isinstance(message, dict) or message.get("role") != "user":
                raise ValueError("Invalid entry ID for forking")
            target_leaf = selected.get("parentId")
            selected_text = content_text(message.get("content"))
        elif position == "at":
            target_leaf = entry_id
        else:
            raise ValueError(f"position must be 'before' or 'at', not {position!r}")
        if self.is_running:
            await self.abort()
        previous_file = sm.session_file
        if sm.is_persisted:
            if not previous_file:
                raise RuntimeError("Persisted session is missing a session file")
            if target_leaf is None:
                new_sm = SessionManager.create(sm.cwd, sm.session_dir, parent_session=previous_file)
            else:
                if not os.path.exists(previous_file):
                    raise RuntimeError("This session has not been saved yet. Send a message before cloning or forking it.")
                new_sm = SessionManager.open(previous_file)
                if new_sm.create_branched_session(target_leaf) is None:
                    raise RuntimeError("Failed to create forked session")
        else:
            new_sm = sm
            if target_leaf is None:
                sm.new_session()
            else:
                sm.create_branched_session(target_leaf)
        self._rebind(new_sm)
        self._emit({"type": "session_switch", "reason": "fork", "previousSessionFile": previous_file,
                    "sessionFile": new_sm.session_file})
        return ForkResult(selected_text=selected_text)

    def _rebind(self: AgentSession, session_manager: SessionManager) -> None:
        self.session_manager = session_manager
        self._entry_of.clear()
        self._last_assistant = None
        self._overflow_recovery_attempted = False
        self._retry_attempt = 0
        self._refresh_finalized_context()
