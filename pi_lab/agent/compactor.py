"""When and how AgentSession compacts (agent-loop.md §9–§14).

Three automatic check points (before new input, before the next model call inside a run,
after a run), the threshold test, overflow and truncation recovery with its one-shot guard,
and manual compaction. Automatic and manual compaction run through one method,
:meth:`Compactor._run`, which emits ``compaction_start``, ``session_compact``,
``compaction_end`` and ``session_compact_failed`` from one place; the differences pi makes
between the two (when the operation counts as finished, whether cancellation is checked
before the hook, whether a failure raises) are parameters of that one method.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from pi_lab.agent.run_state import AUTO_COMPACTION, MANUAL_COMPACTION, Operation, RunState
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
from pi_lab.errors import PiLabError, Refused
from pi_lab.llm import is_context_overflow, is_recoverable_length
from pi_lab.session.entries import Message
from pi_lab.session.ids import parse_iso_ms

if TYPE_CHECKING:
    from pi_lab.agent.loop import Agent
    from pi_lab.agent.transcript import Transcript
    from pi_lab.compaction import CompactionSettings, RetryPolicy
    from pi_lab.llm.model import Model
    from pi_lab.session import SessionManager

__all__ = [
    "Compactor",
    "CompactionCancelled",
    "OVERFLOW_RETRY_FAILED",
    "LENGTH_RETRY_FAILED",
    "ALREADY_COMPACTED",
    "NOTHING_TO_COMPACT",
    "context_window",
    "message_model",
    "summary_retry_callbacks",
]

Emit = Callable[[dict[str, Any]], None]

OVERFLOW_RETRY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
LENGTH_RETRY_FAILED = "Truncated response recovery failed after one compact-and-retry attempt."
ALREADY_COMPACTED = "Already compacted"
NOTHING_TO_COMPACT = "Nothing to compact (session too small)"


class CompactionCancelled(PiLabError, RuntimeError):
    """A compaction stopped by the user or by a ``before_compact`` hook; nothing was appended."""

    def __init__(self) -> None:
        super().__init__("Compaction cancelled")


def context_window(model: Model | None) -> int:
    return getattr(model, "context_window", 0) or 0


def message_model(message: Message, model: Model) -> Model | None:
    """The model an assistant message came from, when it is the current one (else unknown)."""
    if message.get("provider") == model.provider and message.get("model") == model.id:
        return model
    return None


def summary_retry_callbacks(emit: Emit, reason: str | None) -> RetryCallbacks:
    """Retry events of a summary request: a compaction's (``reason``) or a branch summary's (None)."""

    def scheduled(attempt: int, max_attempts: int, delay_ms: int, error_message: str) -> None:
        emit({"type": "summarization_retry_scheduled", "attempt": attempt, "maxAttempts": max_attempts,
              "delayMs": delay_ms, "errorMessage": error_message})

    def attempt_start() -> None:
        event = {"type": "summarization_retry_attempt_start", "source": "compaction" if reason else "branchSummary"}
        if reason:
            event["reason"] = reason
        emit(event)

    def finished(*_: Any) -> None:
        emit({"type": "summarization_retry_finished"})

    return RetryCallbacks(scheduled, attempt_start, finished)


async def call_hook(hook: Any, **kwargs: Any) -> Any:
    """Call an extension hook that may be a plain function or a coroutine function."""
    result = hook(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _supplied_result(supplied: Any) -> CompactionResult:
    if not isinstance(supplied, dict):
        return supplied
    fields: dict[str, Any] = supplied

    def either(camel: str, snake: str) -> Any:
        # An extension's values pass through unchecked, as in pi (its types are not checked at
        # run time): a missing field stays None rather than failing the compaction here.
        return fields[camel] if camel in fields else fields.get(snake)

    return CompactionResult(
        summary=fields["summary"],
        first_kept_entry_id=either("firstKeptEntryId", "first_kept_entry_id"),
        tokens_before=either("tokensBefore", "tokens_before"),
        usage=fields.get("usage"), details=fields.get("details"),
    )


def _result_event(result: CompactionResult) -> dict[str, Any]:
    return {"summary": result.summary, "firstKeptEntryId": result.first_kept_entry_id,
            "tokensBefore": result.tokens_before, "estimatedTokensAfter": result.estimated_tokens_after,
            "usage": result.usage, "details": result.details}


class CompactorOwner(Protocol):
    """What compaction reads of its AgentSession, each time it runs (so a fork, ``set_model`` or
    new settings take effect at once)."""

    session_manager: SessionManager
    agent: Agent
    client: Any
    model: Model
    settings: CompactionSettings
    retry: RetryPolicy
    thinking_level: str
    before_compact: Callable[..., Any] | None


class Compactor:
    """Compaction for one :class:`~pi_lab.agent.session.AgentSession`.

    It reads the session's public configuration (``session_manager``, ``client``, ``model``,
    ``settings``, ``retry``, ``thinking_level``, ``before_compact``, ``agent``) when it runs,
    so a fork, ``set_model`` or a new ``settings`` object take effect at once.
    """

    def __init__(self, owner: CompactorOwner, run: RunState, transcript: Transcript, emit: Emit):
        self._owner = owner
        self._run_state = run
        self._transcript = transcript
        self._emit = emit

    def settings(self):
        return self._owner.settings.for_model(self._owner.model)

    # ------------------------------------------------------------------ check points

    async def before_next_response(self) -> None:
        """Check point 2: inside a run, before the next model call (threshold only)."""
        owner = self._owner
        window = context_window(owner.model)
        if window <= 0:
            return
        sm = owner.session_manager
        tokens = estimate_projected_context_tokens(sm.build_session_projection(), sm.get_branch()).tokens
        if should_compact(tokens, window, self.settings()):
            await self.run_automatic("threshold", False)

    async def check(self, assistant: Message, skip_aborted_check: bool = True) -> bool:
        """``_checkCompaction`` (check points 1 and 3): nothing, threshold or overflow recovery.

        True when the run should continue (a retry after recovery, or queued messages)."""
        settings = self.settings()
        if not settings.enabled:
            return False
        if skip_aborted_check and assistant.get("stopReason") == "aborted":
            return False
        owner = self._owner
        sm = owner.session_manager
        answered_by = message_model(assistant, owner.model)
        same_model = answered_by is not None
        window = context_window(answered_by or owner.model)
        branch = sm.get_branch()
        latest = next((e for e in reversed(branch) if e.get("type") == "compaction"), None)
        if latest is not None and (assistant.get("timestamp") or 0) <= parse_iso_ms(latest.get("timestamp")):
            return False  # measured before the latest compaction: stale

        entry_id = self._transcript.entry_id_of(assistant)
        projection = sm.build_session_projection()
        position = next((i for i, e in enumerate(branch) if e.get("id") == entry_id), None) if entry_id else None
        after = branch[position + 1:] if position is not None else []
        is_projected = entry_id is None or any(
            item.source.get("id") == entry_id and any(m.get("role") == "assistant" for m in item.messages)
            for item in projection.entries
        )
        edited_after = any(e.get("type") == "context_edit" for e in after)
        latest_edit = next((e for e in reversed(after)
                            if e.get("type") == "context_edit" and e.get("targetId") == entry_id), None)
        retained = entry_id is None or (
            not any(e.get("type") == "compaction" for e in after)
            and not (latest_edit is not None and latest_edit.get("replacement") is None)
        )
        usage_matches = is_projected and not edited_after
        explicit = assistant.get("stopReason") == "error" and is_context_overflow(assistant)
        overflow = same_model and ((explicit and retained) or (usage_matches and is_context_overflow(assistant, window)))
        length = same_model and is_projected and is_recoverable_length(assistant, answered_by.max_tokens if answered_by else 0)

        if overflow or length:
            if assistant.get("stopReason") == "stop":
                return await self.run_automatic("overflow", False)  # a complete answer is not retried
            if self._run_state.overflow_recovery_attempted:
                self._report_recovery_failed(OVERFLOW_RETRY_FAILED if overflow else LENGTH_RETRY_FAILED)
                return False
            self._run_state.overflow_recovery_attempted = True
            self._transcript.omit_recovery_attempt(assistant)
            return await self.run_automatic("overflow", True)

        if any(item.source.get("type") == "context_edit" for item in projection.entries):
            tokens = estimate_projected_context_tokens(projection, branch).tokens
        elif assistant.get("stopReason") == "error" or not isinstance(assistant.get("usage"), dict) or \
                calculate_context_tokens(assistant["usage"]) == 0:
            messages = owner.agent.messages
            estimate = estimate_context_tokens(messages)
            if estimate.last_usage_index is not None and latest is not None:
                anchor = messages[estimate.last_usage_index]
                if anchor.get("role") == "assistant" and \
                        (anchor.get("timestamp") or 0) <= parse_iso_ms(latest.get("timestamp")):
                    return False  # only kept, pre-compaction usage is available
            tokens = estimate.tokens
        else:
            tokens = calculate_context_tokens(assistant["usage"])
        if should_compact(tokens, window, settings):
            return await self.run_automatic("threshold", False)
        return False

    def _report_recovery_failed(self, error: str) -> None:
        """The second overflow in a row: no compaction is started, only its failure reported."""
        self._end_events("overflow", error, False, False)

    # ------------------------------------------------------------------ running a compaction

    async def run_automatic(self, reason: str, will_retry: bool) -> bool:
        """``_runAutoCompaction``: True when the run continues (retry, or queued messages)."""
        preparation = prepare_compaction(self._owner.session_manager.get_branch(), self.settings())
        if preparation is None:
            return False  # nothing to compact: no events at all
        result = await self._run(reason, will_retry, None, preparation)
        if result is None:
            return False
        return True if will_retry else self._owner.agent.has_queued_messages()

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """Manual compaction (pi's ``/compact [instructions]``); raises on every failure."""
        result = await self._run("manual", False, custom_instructions, None)
        assert result is not None  # a manual compaction raises instead of returning nothing
        return result

    def _manual_preparation(self) -> Any:
        branch = self._owner.session_manager.get_branch()
        preparation = prepare_compaction(branch, self.settings())
        if preparation is None:
            if branch and branch[-1].get("type") == "compaction":
                raise Refused(ALREADY_COMPACTED)
            raise Refused(NOTHING_TO_COMPACT)
        return preparation

    async def _run(self, reason: str, will_retry: bool, custom_instructions: str | None,
                   preparation: Any) -> CompactionResult | None:
        """One compaction, automatic (``preparation`` given) or manual (``reason == "manual"``).

        pi's manual compaction prepares inside the attempt (a failure is reported and raised),
        checks for cancellation only after the summary, and counts as finished before its
        ``compaction_end`` (listeners may prompt again); an automatic one checks before and
        after the hook too, reports failures without raising, and finishes afterwards.
        """
        manual = reason == "manual"
        run = self._run_state
        operation = run.begin(MANUAL_COMPACTION if manual else AUTO_COMPACTION)
        self._emit({"type": "compaction_start", "reason": reason})
        from_extension = False
        try:
            if manual:
                preparation = self._manual_preparation()
            else:
                self._raise_if_cancelled(operation)
            result, from_extension = await self._before_compact(preparation, reason, will_retry,
                                                                custom_instructions, operation)
            if not manual:
                self._raise_if_cancelled(operation)
            if result is None:
                owner = self._owner
                result = await compact(preparation, owner.client, owner.model, custom_instructions=custom_instructions,
                                       thinking_level=owner.thinking_level, retry=owner.retry,
                                       callbacks=summary_retry_callbacks(self._emit, reason), signal=operation.signal)
            self._raise_if_cancelled(operation)
            result, entry = self._append(result, from_extension)
            self._emit({"type": "session_compact", "compactionEntry": entry, "fromExtension": from_extension,
                        "reason": reason, "willRetry": will_retry})
            if manual:
                run.end(operation)
            self._emit({"type": "compaction_end", "reason": reason, "result": _result_event(result),
                        "aborted": False, "willRetry": will_retry})
            return result
        except Exception as error:
            aborted = operation.cancelled or isinstance(error, CompactionCancelled)
            prefix = ("Compaction failed" if manual else
                      "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed")
            if manual:
                run.end(operation)
            self._end_events(reason, None if aborted else f"{prefix}: {error}", aborted, from_extension)
            if not manual:
                return None
            if aborted and not isinstance(error, CompactionCancelled):
                raise CompactionCancelled() from error
            raise
        finally:
            run.end(operation)

    def _end_events(self, reason: str, message: str | None, aborted: bool, from_extension: bool) -> None:
        """``compaction_end`` and ``session_compact_failed`` of a compaction that produced nothing."""
        end: dict[str, Any] = {"type": "compaction_end", "reason": reason, "result": None, "aborted": aborted,
                               "willRetry": False}
        if message:
            end["errorMessage"] = message
        self._emit(end)
        self._emit({"type": "session_compact_failed", "reason": reason, "errorMessage": message,
                    "aborted": aborted, "willRetry": False, "fromExtension": from_extension})

    @staticmethod
    def _raise_if_cancelled(operation: Operation) -> None:
        if operation.cancelled:
            raise CompactionCancelled()

    async def _before_compact(self, preparation: Any, reason: str, will_retry: bool,
                              custom_instructions: str | None, operation: Operation) -> tuple[CompactionResult | None, bool]:
        """Run the ``before_compact`` hook: returns (result supplied by it, from_extension)."""
        hook = self._owner.before_compact
        if hook is None:
            return None, False
        try:
            answer = await call_hook(hook, preparation=preparation,
                                     branch_entries=self._owner.session_manager.get_branch(),
                                     custom_instructions=custom_instructions, reason=reason,
                                     will_retry=will_retry, signal=operation.signal)
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
        return _supplied_result(supplied), True

    def _append(self, result: CompactionResult,
                from_extension: bool) -> tuple[CompactionResult, dict[str, Any] | None]:
        sm = self._owner.session_manager
        entry_id = sm.append_compaction(result.summary, result.first_kept_entry_id, result.tokens_before,
                                        result.details, from_extension, result.usage)
        self._transcript.refresh()
        after = sum(estimate_tokens(m) for m in sm.build_session_context().messages)
        return replace(result, estimated_tokens_after=after), sm.get_entry(entry_id)
