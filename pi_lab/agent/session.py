"""AgentSession: the agent loop bound to a session file (agent-loop.md).

It persists every finished message through the SessionManager, builds every model request
from the session projection, retries transient failures, compacts at pi's three check
points, recovers from context overflow once, navigates the tree and forks. The behaviour
follows pi 1.6.0's ``agent-session.ts`` as specified in ``spec/agent-loop.md``.

The class is built from parts: :class:`~pi_lab.agent.run_state.RunState` (what is running and
the one registry of cancellable operations), :class:`~pi_lab.agent.transcript.Transcript`
(message ↔ entry identity), :class:`~pi_lab.agent.compactor.Compactor` (the check points and
every compaction) and :class:`~pi_lab.agent.tree_flow.TreeNavigator` (``/tree``, ``/fork``).
The parts read this object's public configuration and never its private state.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pi_lab.agent.compactor import Compactor, context_window, message_model
from pi_lab.agent.loop import Agent, AgentHooks
from pi_lab.agent.run_state import (
    AUTO_COMPACTION,
    BRANCH_SUMMARY,
    COMPACTIONS,
    MANUAL_COMPACTION,
    RETRY,
    RunState,
)
from pi_lab.agent.tools import Tool
from pi_lab.agent.transcript import Transcript
from pi_lab.agent.tree_flow import ForkResult, NavigateResult, TreeNavigator
from pi_lab.compaction import CompactionResult, CompactionSettings, RetryPolicy
from pi_lab.compaction.retry import retry_delay_ms, server_retry_delay_ms
from pi_lab.compaction.spend import sum_spend
from pi_lab.compaction.usage import ContextUsage, context_usage
from pi_lab.errors import Refused
from pi_lab.llm import OfflineModel, is_context_overflow, is_retryable_assistant_error
from pi_lab.llm.convert import convert_to_llm, prepare_request_messages
from pi_lab.llm.model import Model
from pi_lab.llm.protocol import run_sync
from pi_lab.llm.tokens import system_message_text
from pi_lab.session import SessionManager
from pi_lab.session.entries import Message
from pi_lab.session.projection import get_context_settings, replay_system_state

__all__ = ["AgentSession", "SessionStats", "PROMPT_DURING_COMPACTION", "ALREADY_PROCESSING"]

Listener = Callable[[dict[str, Any]], Any]

PROMPT_DURING_COMPACTION = (
    "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
)
ALREADY_PROCESSING = (
    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
)
SYSTEM_SECTION = "prompt"


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class SessionStats:
    user_messages: int
    assistant_messages: int
    tool_calls: int
    tool_results: int
    total_messages: int
    # sums of the recorded counters: ints when every record's are (pi writes ints)
    input: int | float
    output: int | float
    cache_read: int | float
    cache_write: int | float
    total_tokens: int | float
    cost: float


class AgentSession:
    """Drive a model over a session, as pi's AgentSession does.

    ``client`` is any :class:`pi_lab.llm.ModelClient`; without one the embedded
    :class:`~pi_lab.llm.OfflineModel` answers (no key, no network). ``model`` defaults to the
    client's own model description. ``settings`` are pi's compaction settings and ``retry``
    its retry policy. ``hooks`` may define ``before_compact`` and ``before_tree`` callables
    with pi's extension inputs and results (agent-loop.md §15).
    """

    def __init__(
        self,
        session_manager: SessionManager,
        *,
        model: Model | None = None,
        client: Any = None,
        tools: list[Tool] | None = None,
        settings: CompactionSettings | None = None,
        retry: RetryPolicy | None = None,
        system_prompt: str | None = None,
        thinking_level: str = "off",
        branch_summary_reserve_tokens: int = 16384,
        before_compact: Callable[..., Any] | None = None,
        before_tree: Callable[..., Any] | None = None,
        record_startup: bool = True,
    ):
        self.session_manager = session_manager
        if client is None:
            client = OfflineModel(context_window=model.context_window if model else 128000)
        self.client = client
        chosen: Model | None = model or getattr(client, "model", None)
        if chosen is None:
            raise ValueError("No model selected.")
        self.model: Model = chosen
        self.settings = settings or CompactionSettings()
        self.retry = retry or RetryPolicy()
        self.system_prompt = system_prompt
        self.thinking_level = thinking_level
        self.branch_summary_reserve_tokens = branch_summary_reserve_tokens
        self.before_compact = before_compact
        self.before_tree = before_tree
        self._listeners: list[Listener] = []
        self._run = RunState()
        self._transcript = Transcript(self, self._emit)
        self._compactor = Compactor(self, self._run, self._transcript, self._emit)
        self._navigator = TreeNavigator(self, self._run, self._transcript, self._emit)
        self.agent = Agent(
            AgentHooks(stream=self._stream, prepare_request=self._prepare_request,
                       prepare_next_turn=self._prepare_next_turn),
            self._handle_agent_event,
            tools,
        )
        if record_startup and not session_manager.entries:
            # pi records the selection when a session starts.
            session_manager.append_model_change(self.model.provider, self.model.id)
            session_manager.append_thinking_level_change(self.thinking_level)
        self._refresh_finalized_context()

    # ------------------------------------------------------------------ events

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event; returns a function that unsubscribes."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, event: dict[str, Any]) -> None:
        for listener in list(self._listeners):
            listener(event)

    # ------------------------------------------------------------------ state

    @property
    def is_running(self) -> bool:
        """A run (model calls, tools, retries, continuations) is in progress."""
        return self._run.active or self.agent.is_running

    @property
    def is_compacting(self) -> bool:
        """A compaction (automatic or manual) or a branch summary is in progress."""
        return self._run.running(*COMPACTIONS)

    @property
    def has_pending_tool_calls(self) -> bool:
        """A tool call is executing right now (navigation would attach its result elsewhere)."""
        return bool(self.agent.running_tool_calls)

    @property
    def messages(self) -> list[Message]:
        """What the agent will work from: the projection of the current branch."""
        return list(self.agent.messages)

    def _refresh_finalized_context(self) -> None:
        """The agent continues from the current projection (after any write to the branch)."""
        self._transcript.refresh()

    async def _prepare_request(self, messages: list[Message]) -> list[Message]:
        # Every request is built from a fresh projection: edits and compactions appended
        # mid-run take effect on the very next call.
        return self._transcript.project()

    async def _prepare_next_turn(self, messages: list[Message]) -> list[Message]:
        await self._compactor.before_next_response()
        self._refresh_finalized_context()
        return self.agent.messages

    async def _stream(self, messages: list[Message], tools: list[Tool], abort: asyncio.Event):
        system = replay_system_state(messages)
        system_text = (system_message_text(system) or None) if system is not None else None
        llm = convert_to_llm([m for m in messages if m.get("role") != "system"])
        llm = prepare_request_messages(llm, self.model)
        context = {"system_prompt": system_text, "messages": llm, "tools": [t.definition() for t in tools] or None}
        reasoning = self.thinking_level if getattr(self.model, "reasoning", False) and self.thinking_level != "off" else None
        async for event in self.client.stream(self.model, context, reasoning=reasoning, cancel=abort):
            yield event

    # ------------------------------------------------------------------ persistence

    async def _handle_agent_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        message = event.get("message")
        run = self._run
        if kind == "agent_start" and run.abort_requested:
            self.agent.abort()
        if kind == "message_start" and isinstance(message, dict) and message.get("role") == "user":
            run.overflow_recovery_attempted = False
        if kind == "agent_end":
            event = {**event, "willRetry": self._will_retry()}
        self._emit(event)
        if kind == "message_end" and isinstance(message, dict):
            role = message.get("role")
            entry_id = None
            if role == "custom":
                entry_id = self.session_manager.append_custom_message_entry(
                    message.get("customType"),  # type: ignore[arg-type]  # written as the extension gave it
                    message.get("content"), message.get("display", True),
                    message.get("details"),
                )
            elif role in ("system", "user", "assistant", "toolResult"):
                entry_id = self.session_manager.append_message(message)
            if entry_id is not None:
                self._transcript.remember(message, entry_id)
            if role == "assistant":
                run.last_assistant = message
                stop = message.get("stopReason")
                if stop not in ("error", "length"):
                    run.overflow_recovery_attempted = False
                if stop != "error" and run.retry_attempt > 0:
                    self._emit({"type": "auto_retry_end", "success": True, "attempt": run.retry_attempt})
                    run.retry_attempt = 0

    def _will_retry(self) -> bool:
        last = self._run.last_assistant
        return (
            not self._run.abort_requested
            and self.retry.enabled
            and self._run.retry_attempt < self.retry.max_retries
            and last is not None
            and self._is_retryable_error(last)
        )

    def _is_retryable_error(self, message: Message) -> bool:
        if is_context_overflow(message, context_window(message_model(message, self.model))):
            return False  # the same input would overflow again
        return is_retryable_assistant_error(message)

    # ------------------------------------------------------------------ prompting

    async def prompt(self, text: str, *, images: list[dict[str, Any]] | None = None,
                     streaming_behavior: str | None = None) -> None:
        """Send a user message and run until the model stops (retries and compactions included)."""
        if self._run.running(MANUAL_COMPACTION, BRANCH_SUMMARY):
            raise Refused(PROMPT_DURING_COMPACTION)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}, *(images or [])]
        user: Message = {"role": "user", "content": content, "timestamp": now_ms()}
        if self.is_running:
            if streaming_behavior == "steer":
                self.agent.steer(user)
            elif streaming_behavior == "followUp":
                self.agent.follow_up(user)
            else:
                raise Refused(ALREADY_PROCESSING)
            self._emit({"type": "queue_update"})
            return
        self._run.preflight += 1
        try:
            await self._start_run([user])
        finally:
            self._run.preflight -= 1

    def start(self, text: str, **options: Any) -> asyncio.Task[None]:
        """Run :meth:`prompt` in the background (the notebook cell returns at once)."""
        return asyncio.ensure_future(self.prompt(text, **options))

    def prompt_sync(self, text: str, **options: Any) -> None:
        """:meth:`prompt` for scripts without an event loop."""
        run_sync(self.prompt(text, **options))

    def steer(self, text: str) -> None:
        self.agent.steer({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": now_ms()})

    def follow_up(self, text: str) -> None:
        self.agent.follow_up({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": now_ms()})

    async def abort(self) -> None:
        """Stop the run, retries and compactions, then wait until idle."""
        self._run.abort_requested = True
        self.agent.abort()
        self._run.cancel()  # every operation: retry back-off, compactions, branch summary
        await self.wait_idle()

    async def wait_idle(self) -> None:
        await self._run.idle.wait()

    def _system_delta(self) -> Message | None:
        """A system message when the prompt or tool set differs from the transcript's."""
        state = replay_system_state(self.session_manager.build_session_context().messages) or {}
        sections = state.get("sections") or {}
        delta: Message = {"role": "system", "content": ""}
        wanted = {SYSTEM_SECTION: self.system_prompt} if self.system_prompt else {}
        patch = {k: v for k, v in wanted.items() if sections.get(k) != v}
        patch.update({k: None for k in sections if k not in wanted})
        if patch:
            delta["sections"] = patch
        delta["timestamp"] = now_ms()
        current = {t.get("name"): t for t in state.get("toolsAdded") or []}
        desired = {t.name: t.definition() for t in self.agent.tools}
        removed = [{"name": n} for n, d in current.items() if n not in desired or desired[n] != d]
        added = [d for n, d in desired.items() if n not in current or current[n] != d]
        if added:
            delta["toolsAdded"] = added
        if removed:
            delta["toolsRemoved"] = removed
        return delta if patch or added or removed else None

    async def _start_run(self, messages: list[Message]) -> None:
        run = self._run
        run.active = True
        run.idle.clear()
        run.abort_requested = False
        aborted = False
        try:
            # check point 1: before new input (never continues the old task)
            last = next((m for m in reversed(self.agent.messages) if m.get("role") == "assistant"), None)
            if last is not None:
                await self._compactor.check(last, skip_aborted_check=False)
            delta = self._system_delta()
            if delta is not None:
                messages = [delta, *messages]
            branch_level, _ = get_context_settings(self.session_manager.get_branch())
            if branch_level != self.thinking_level:
                self.session_manager.append_thinking_level_change(self.thinking_level)
            self._refresh_finalized_context()
            await self.agent.prompt(messages)
            while not run.abort_requested:
                if await self._handle_post_agent_run():
                    if run.abort_requested:
                        break
                    await self.agent.continue_()
                    continue
                if self.agent.has_queued_messages() and self.agent.messages and \
                        self.agent.messages[-1].get("role") == "assistant":
                    await self.agent.continue_()
                    continue
                break
            aborted = run.abort_requested
        finally:
            if run.abort_requested and run.retry_attempt > 0:
                self._emit({"type": "auto_retry_end", "success": False, "attempt": run.retry_attempt,
                            "finalError": "Retry cancelled"})
                run.retry_attempt = 0
            run.active = False
            run.idle.set()
            self._emit({"type": "agent_settled", "aborted": aborted})

    async def _handle_post_agent_run(self) -> bool:
        run = self._run
        message, run.last_assistant = run.last_assistant, None
        if run.abort_requested:
            return False
        if message is None:
            return self.agent.has_queued_messages()
        if self._is_retryable_error(message) and await self._prepare_retry(message):
            return not run.abort_requested
        if run.abort_requested:
            return False
        if message.get("stopReason") == "error" and run.retry_attempt > 0:
            self._emit({"type": "auto_retry_end", "success": False, "attempt": run.retry_attempt,
                        "finalError": message.get("errorMessage")})
            run.retry_attempt = 0
        if await self._compactor.check(message):
            return not run.abort_requested
        return self.agent.has_queued_messages()

    async def _prepare_retry(self, message: Message) -> bool:
        run = self._run
        if not self.retry.enabled:
            return False
        run.retry_attempt += 1
        if run.retry_attempt > self.retry.max_retries:
            run.retry_attempt -= 1
            return False
        delay = retry_delay_ms(self.retry, run.retry_attempt, server_retry_delay_ms(message))
        self._emit({"type": "auto_retry_start", "attempt": run.retry_attempt, "maxAttempts": self.retry.max_retries,
                    "delayMs": delay, "errorMessage": message.get("errorMessage") or "Unknown error"})
        self._transcript.omit_recovery_attempt(message)
        operation = run.begin(RETRY)
        try:
            await asyncio.wait_for(operation.signal.wait(), timeout=delay / 1000)
            cancelled = True
        except asyncio.TimeoutError:
            cancelled = False
        finally:
            run.end(operation)
        if cancelled:
            self._emit({"type": "auto_retry_end", "success": False, "attempt": run.retry_attempt,
                        "finalError": "Retry cancelled"})
            run.retry_attempt = 0
            return False
        return True

    def abort_retry(self) -> None:
        """Stop a retry back-off (the run then ends with ``Retry cancelled``)."""
        self._run.cancel(RETRY)

    # ------------------------------------------------------------------ compaction and the gauge

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """Manual compaction (pi's ``/compact [instructions]``); raises on every failure.

        Stops a running response first. :class:`~pi_lab.errors.Refused` when there is nothing
        to compact, :class:`~pi_lab.agent.compactor.CompactionCancelled` when cancelled."""
        await self.abort()
        self._run.abort_requested = False
        return await self._compactor.compact(custom_instructions)

    def abort_compaction(self) -> None:
        """Stop a manual or automatic compaction: nothing is appended."""
        self._run.cancel(MANUAL_COMPACTION, AUTO_COMPACTION)

    def get_context_usage(self) -> ContextUsage | None:
        """pi's ``getContextUsage()``: None without a context window; tokens None right after a
        compaction (see :func:`pi_lab.compaction.usage.context_usage`)."""
        window = context_window(self.model)
        if window <= 0:
            return None
        sm = self.session_manager
        return context_usage(sm.get_branch(), window, projection=sm.build_session_projection(),
                             settings=self.settings.for_model(self.model))

    # ------------------------------------------------------------------ the tree

    async def navigate_tree(self, target_id: str, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool = False, label: str | None = None) -> NavigateResult:
        """Move the leaf to ``target_id`` (pi's ``/tree``), optionally summarising what is left.

        Selecting a user (or custom) message moves the leaf to its parent and returns its text
        for re-editing. Nothing changes when the summary fails or is cancelled. Refused
        (:class:`~pi_lab.errors.Refused`) while a response, a tool call or a compaction is
        running: pi would attach the result to the wrong branch.
        """
        return await self._navigator.navigate_tree(target_id, summarize, custom_instructions,
                                                    replace_instructions, label)

    def abort_branch_summary(self) -> None:
        """Stop a branch summary of :meth:`navigate_tree`: the leaf stays where it was."""
        self._run.cancel(BRANCH_SUMMARY)

    async def fork(self, entry_id: str, position: str = "before") -> ForkResult:
        """pi's ``/fork`` (``before`` a user message) and ``/clone`` (``at`` an entry).

        Both produce a new session (a new file with ``parentSession``) and rebind this
        AgentSession to it; the old file is left as it was.
        """
        return await self._navigator.fork(entry_id, position)

    # ------------------------------------------------------------------ other writes

    def set_model(self, model: Model, client: Any = None) -> None:
        self.model = model
        if client is not None:
            self.client = client
        self.session_manager.append_model_change(model.provider, model.id)

    def set_thinking_level(self, level: str) -> None:
        if level != self.thinking_level:
            self.thinking_level = level
            self.session_manager.append_thinking_level_change(level)
            self._emit({"type": "thinking_level_changed", "level": level})

    def set_session_name(self, name: str) -> None:
        self.session_manager.append_session_info(name)
        self._emit({"type": "session_info_changed", "name": self.session_manager.session_name})

    def send_custom_message(self, custom_type: str, content: Any, display: bool = True, details: Any = None) -> str:
        """Append an extension message the model will see (idle sessions only)."""
        if self.is_running:
            raise Refused("Custom messages can only be appended while the session is idle")
        entry_id = self.session_manager.append_custom_message_entry(custom_type, [] if content is None else content,
                                                                    display, details)
        self._refresh_finalized_context()
        return entry_id

    def record_bash(self, command: str, output: str, exit_code: int | None = 0, *, cancelled: bool = False,
                    truncated: bool = False, exclude_from_context: bool = False) -> str:
        """Record a user shell command (pi's ``!cmd``) as a bashExecution message."""
        message: Message = {"role": "bashExecution", "command": command, "output": output, "exitCode": exit_code,
                            "cancelled": cancelled, "truncated": truncated, "timestamp": now_ms()}
        if exclude_from_context:
            message["excludeFromContext"] = True
        entry_id = self.session_manager.append_message(message)
        self._refresh_finalized_context()
        return entry_id

    def get_session_stats(self) -> SessionStats:
        """Totals over all entries of the file (all branches), as pi's getSessionStats; the spend
        by the one rule of :mod:`pi_lab.compaction.spend` (session scope)."""
        counts = {"user": 0, "assistant": 0, "toolResult": 0}
        tool_calls = total_messages = 0
        entries = self.session_manager.entries
        for entry in entries:
            if entry.get("type") != "message":
                continue
            total_messages += 1
            message = entry.get("message") or {}
            role = message.get("role")
            if role in counts:
                counts[role] += 1
            if role == "assistant":
                tool_calls += sum(1 for b in message.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall")
        spend = sum_spend(entries)
        return SessionStats(counts["user"], counts["assistant"], tool_calls, counts["toolResult"], total_messages,
                            spend.input, spend.output, spend.cache_read, spend.cache_write, spend.tokens, spend.cost)
