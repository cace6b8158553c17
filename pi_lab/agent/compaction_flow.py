"""When and how AgentSession compacts (agent-loop.md §9–§14, §17).

Three automatic check points (before new input, before the next model call inside a run,
after a run), the threshold test, overflow and truncation recovery with its one-shot guard,
manual compaction, and the context-usage gauge.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pi_lab.compaction import (
    CompactionResult,
    RetryCallbacks,
    calculate_context_tokens,
    compact,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
    prepare_compaction,
    should_compact,
)
from pi_lab.llm import is_context_overflow, is_recoverable_length
from pi_lab.session.ids import parse_iso_ms

if TYPE_CHECKING:
    from pi_lab.agent.session import AgentSession

__all__ = ["CompactionFlow", "ContextUsage", "OVERFLOW_RETRY_FAILED", "LENGTH_RETRY_FAILED"]

Message = dict[str, Any]

OVERFLOW_RETRY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
LENGTH_RETRY_FAILED = "Truncated response recovery failed after one compact-and-retry attempt."


class CompactionCancelled(RuntimeError):
    def __init__(self) -> None:
        super().__init__("Compaction cancelled")


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """pi's ``getContextUsage()``: ``tokens``/``percent`` are ``None`` right after a compaction."""

    tokens: int | None
    context_window: int
    percent: float | None


def _valid_anchor(message: Message) -> bool:
    return (
        message.get("role") == "assistant"
        and message.get("stopReason") not in ("aborted", "error")
        and isinstance(message.get("usage"), dict)
        and calculate_context_tokens(message["usage"]) > 0
    )


async def _call_hook(hook: Any, **kwargs: Any) -> Any:
    result = hook(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


class CompactionFlow:
    """Mixin for :class:`~pi_lab.agent.session.AgentSession`."""

    # ------------------------------------------------------------------ shared helpers

    def _latest_compaction(self: AgentSession) -> dict[str, Any] | None:
        for entry in reversed(self.session_manager.get_branch()):
            if entry.get("type") == "compaction":
                return entry
        return None

    def _compaction_settings(self: AgentSession):
        return self.settings.for_model(self.model)

    def _retry_callbacks(self: AgentSession, reason: str | None) -> RetryCallbacks:
        def scheduled(attempt: int, max_attempts: int, delay_ms: int, error_message: str) -> None:
            self._emit({"type": "summarization_retry_scheduled", "attempt": attempt, "maxAttempts": max_attempts,
                        "delayMs": delay_ms, "errorMessage": error_message})

        def attempt_start() -> None:
            event = {"type": "summarization_retry_attempt_start", "source": "compaction" if reason else "branchSummary"}
            if reason:
                event["reason"] = reason
            self._emit(event)

        def finished(*_: Any) -> None:
            self._emit({"type": "summarization_retry_finished"})

        return RetryCallbacks(scheduled, attempt_start, finished)

    def _estimated_tokens_after(self: AgentSession) -> int:
        return sum(estimate_tokens(m) for m in self.session_manager.build_session_context().messages)

    # ------------------------------------------------------------------ check points

    async def _compact_before_next_assistant_response(self: AgentSession) -> None:
        """Check point 2: inside a run, before the next model call (threshold only)."""
        window = self._window()
        if window <= 0:
            return
        projection = self.session_manager.build_session_projection()
        tokens = estimate_projected_context_tokens(projection, self.session_manager.get_branch()).tokens
        if should_compact(tokens, window, self._compaction_settings()):
            await self._run_auto_compaction("threshold", False)

    async def _check_compaction(self: AgentSession, assistant: Message, skip_aborted_check: bool = True) -> bool:
        """``_checkCompaction``: decide between nothing, threshold and overflow recovery."""
        settings = self._compaction_settings()
        if not settings.enabled:
            return False
        if skip_aborted_check and assistant.get("stopReason") == "aborted":
            return False
        message_model = self._message_model(assistant)
        same_model = message_model is not None
        context_window = self._window(message_model or self.model)
        latest = self._latest_compaction()
        if latest is not None and (assistant.get("timestamp") or 0) <= parse_iso_ms(latest.get("timestamp")):
            return False  # measured before the latest compaction: stale

        entry_id = self._entry_id_of(assistant)
        branch = self.session_manager.get_branch()
        projection = self.session_manager.build_session_projection()
        position = next((i for i, e in enumerate(branch) if e.get("id") == entry_id), None) if entry_id else None
        after = branch[position + 1:] if position is not None else []
        is_projected = entry_id is None or any(
            item.source.get("id") == entry_id and any(m.get("role") == "assistant" for m in item.messages)
            for item in projection.entries
        )
        edited_after = any(e.get("type") == "context_edit" for e in after)
        latest_edit = next((e for e in reversed(after) if e.get("type") == "context_edit" and e.get("targetId") == entry_id), None)
        retained = entry_id is None or (
            not any(e.get("type") == "compaction" for e in after)
            and not (latest_edit is not None and latest_edit.get("replacement") is None)
        )
        usage_matches = is_projected and not edited_after
        explicit = assistant.get("stopReason") == "error" and is_context_overflow(assistant)
        overflow = same_model and ((explicit and retained) or (usage_matches and is_context_overflow(assistant, context_window)))
        length = same_model and is_projected and is_recoverable_length(assistant, message_model.max_tokens if message_model else 0)

        if overflow or length:
            will_retry = assistant.get("stopReason") != "stop"
            if not will_retry:
                return await self._run_auto_compaction("overflow", False)
            if self._overflow_recovery_attempted:
                error = OVERFLOW_RETRY_FAILED if overflow else LENGTH_RETRY_FAILED
                self._emit({"type": "compaction_end", "reason": "overflow", "result": None, "aborted": False,
                            "willRetry": False, "errorMessage": error})
                self._emit({"type": "session_compact_failed", "reason": "overflow", "errorMessage": error,
                            "aborted": False, "willRetry": False, "fromExtension": False})
                return False
            self._overflow_recovery_attempted = True
            self._omit_recovery_attempt(assistant)
            return await self._run_auto_compaction("overflow", True)

        if any(item.source.get("type") == "context_edit" for item in projection.entries):
            tokens = estimate_projected_context_tokens(projection, branch).tokens
        elif assistant.get("stopReason") == "error" or not isinstance(assistant.get("usage"), dict) or \
                calculate_context_tokens(assistant["usage"]) == 0:
            estimate = estimate_context_tokens(self.agent.messages)
            if estimate.last_usage_index is not None and latest is not None:
                anchor = self.agent.messages[estimate.last_usage_index]
                if anchor.get("role") == "assistant" and (anchor.get("timestamp") or 0) <= parse_iso_ms(latest.get("timestamp")):
                    return False  # only kept, pre-compaction usage is available
            tokens = estimate.tokens
        else:
            tokens = calculate_context_tokens(assistant["usage"])
        if should_compact(tokens, context_window, settings):
            return await self._run_auto_compaction("threshold", False)
        return False

    # ------------------------------------------------------------------ running a compaction

    async def _before_compact(self: AgentSession, preparation: Any, reason: str, will_retry: bool,
                              custom_instructions: str | None, cancel: asyncio.Event) -> tuple[CompactionResult | None, bool]:
        """Run the ``before_compact`` hook: returns (result supplied by it, from_extension)."""
        if self.before_compact is None:
            return None, False
        try:
            answer = await _call_hook(self.before_compact, preparation=preparation,
                                      branch_entries=self.session_manager.get_branch(),
                                      custom_instructions=custom_instructions, reason=reason,
                                      will_retry=will_retry, signal=cancel)
        except CompactionCancelled:
            raise
        except Exception as error:  # an extension error is reported, default compaction proceeds
            self._emit({"type": "extension_error", "hook": "before_compact", "error": str(error)})
            return None, False
        if not answer:
            return None, False
        if answer.get("cancel"):
            raise CompactionCancelled()
        supplied = answer.get("compaction")
        if supplied is None:
            return None, False
        if isinstance(supplied, dict):
            supplied = CompactionResult(
                summary=supplied["summary"], first_kept_entry_id=supplied.get("firstKeptEntryId", supplied.get("first_kept_entry_id")),
                tokens_before=supplied.get("tokensBefore", supplied.get("tokens_before")),
                usage=supplied.get("usage"), details=supplied.get("details"),
            )
        return supplied, True

    def _append_result(self: AgentSession, result: CompactionResult, from_extension: bool) -> CompactionResult:
        entry_id = self.session_manager.append_compaction(
            result.summary, result.first_kept_entry_id, result.tokens_before, result.details, from_extension,
            result.usage,
        )
        self._refresh_finalized_context()
        result = replace(result, estimated_tokens_after=self._estimated_tokens_after())
        self._last_compaction_entry_id = entry_id
        return result

    def _result_event(self, result: CompactionResult) -> dict[str, Any]:
        return {"summary": result.summary, "firstKeptEntryId": result.first_kept_entry_id,
                "tokensBefore": result.tokens_before, "estimatedTokensAfter": result.estimated_tokens_after,
                "usage": result.usage, "details": result.details}

    async def _run_auto_compaction(self: AgentSession, reason: str, will_retry: bool) -> bool:
        settings = self._compaction_settings()
        preparation = prepare_compaction(self.session_manager.get_branch(), settings)
        if preparation is None:
            return False
        cancel = asyncio.Event()
        self._auto_compaction_cancel = cancel
        self._emit({"type": "compaction_start", "reason": reason})
        from_extension = False
        try:
            if cancel.is_set():
                raise CompactionCancelled()
            result, from_extension = await self._before_compact(preparation, reason, will_retry, None, cancel)
            if cancel.is_set():
                raise CompactionCancelled()
            if result is None:
                result = await compact(preparation, self.client, self.model, thinking_level=self.thinking_level,
                                       retry=self.retry, callbacks=self._retry_callbacks(reason), signal=cancel)
            if cancel.is_set():
                raise CompactionCancelled()
            result = self._append_result(result, from_extension)
            entry = self.session_manager.get_entry(self._last_compaction_entry_id)
            self._emit({"type": "session_compact", "compactionEntry": entry, "fromExtension": from_extension,
                        "reason": reason, "willRetry": will_retry})
            self._emit({"type": "compaction_end", "reason": reason, "result": self._result_event(result),
                        "aborted": False, "willRetry": will_retry})
            return True if will_retry else self.agent.has_queued_messages()
        except Exception as error:
            aborted = cancel.is_set() or isinstance(error, CompactionCancelled)
            prefix = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
            message = None if aborted else f"{prefix}: {error}"
            end = {"type": "compaction_end", "reason": reason, "result": None, "aborted": aborted, "willRetry": False}
            if message:
                end["errorMessage"] = message
            self._emit(end)
            self._emit({"type": "session_compact_failed", "reason": reason, "errorMessage": message,
                        "aborted": aborted, "willRetry": False, "fromExtension": from_extension})
            return False
        finally:
            self._auto_compaction_cancel = None

    async def compact(self: AgentSession, custom_instructions: str | None = None) -> CompactionResult:
        """Manual compaction (pi's ``/compact [instructions]``); raises on every failure."""
        await self.abort()
        self._abort_requested = False
        cancel = asyncio.Event()
        self._manual_compaction_cancel = cancel
        self._emit({"type": "compaction_start", "reason": "manual"})
        from_extension = False
        try:
            branch = self.session_manager.get_branch()
            preparation = prepare_compaction(branch, self._compaction_settings())
            if preparation is None:
                if branch and branch[-1].get("type") == "compaction":
                    raise RuntimeError("Already compacted")
                raise RuntimeError("Nothing to compact (session too small)")
            result, from_extension = await self._before_compact(preparation, "manual", False, custom_instructions, cancel)
            if result is None:
                result = await compact(preparation, self.client, self.model, custom_instructions=custom_instructions,
                                       thinking_level=self.thinking_level, retry=self.retry,
                                       callbacks=self._retry_callbacks("manual"), signal=cancel)
            if cancel.is_set():
                raise CompactionCancelled()
            result = self._append_result(result, from_extension)
            entry = self.session_manager.get_entry(self._last_compaction_entry_id)
            self._emit({"type": "session_compact", "compactionEntry": entry, "fromExtension": from_extension,
                        "reason": "manual", "willRetry": False})
            self._manual_compaction_cancel = None
            self._emit({"type": "compaction_end", "reason": "manual", "result": self._result_event(result),
                        "aborted": False, "willRetry": False})
            return result
        except Exception as error:
            aborted = cancel.is_set() or isinstance(error, CompactionCancelled)
            message = None if aborted else f"Compaction failed: {error}"
            self._manual_compaction_cancel = None
            end = {"type": "compaction_end", "reason": "manual", "result": None, "aborted": aborted, "willRetry": False}
            if message:
                end["errorMessage"] = message
            self._emit(end)
            self._emit({"type": "session_compact_failed", "reason": "manual", "errorMessage": message,
                        "aborted": aborted, "willRetry": False, "fromExtension": from_extension})
            if aborted and not isinstance(error, CompactionCancelled):
                raise CompactionCancelled() from error
            raise
        finally:
            self._manual_compaction_cancel = None

    def abort_compaction(self: AgentSession) -> None:
        """Stop a manual or automatic compaction: nothing is appended."""
        for cancel in (self._manual_compaction_cancel, self._auto_compaction_cancel):
            if cancel is not None:
                cancel.set()

    # ------------------------------------------------------------------ the gauge

    def get_context_usage(self: AgentSession) -> ContextUsage | None:
        window = self._window()
        if window <= 0:
            return None
        branch = self.session_manager.get_branch()
        projection = self.session_manager.build_session_projection()
        compaction_index = next((i for i in range(len(branch) - 1, -1, -1) if branch[i].get("type") == "compaction"), None)
        if compaction_index is not None:
            positions = {e.get("id"): i for i, e in enumerate(branch)}
            anchored_after = any(
                positions.get(item.source.get("id"), -1) > compaction_index
                for item in projection.entries
                if any(_valid_anchor(m) for m in item.messages)
            )
            if not anchored_after:
                return ContextUsage(None, window, None)
        tokens = estimate_projected_context_tokens(projection, branch).tokens
        return ContextUsage(tokens, window, tokens / window * 100)
