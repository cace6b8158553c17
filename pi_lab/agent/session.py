"""AgentSession: the agent loop bound to a session file (agent-loop.md).

It persists every finished message through the SessionManager, builds every model request
from the session projection, retries transient failures, compacts at pi's three check
points, recovers from context overflow once, navigates the tree and forks. The behaviour
follows pi 1.6.0's ``agent-session.ts`` as specified in ``spec/agent-loop.md``; compaction
and tree navigation live in the two mixins next to this file.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pi_lab.agent.compaction_flow import CompactionFlow
from pi_lab.agent.loop import Agent, AgentHooks
from pi_lab.agent.tools import Tool
from pi_lab.agent.tree_flow import TreeFlow
from pi_lab.compaction import CompactionSettings, RetryPolicy
from pi_lab.compaction.retry import retry_delay_ms, server_retry_delay_ms
from pi_lab.llm import OfflineModel, is_context_overflow, is_retryable_assistant_error
from pi_lab.llm.convert import convert_to_llm, prepare_request_messages
from pi_lab.llm.model import Model
from pi_lab.llm.protocol import run_sync
from pi_lab.llm.tokens import system_message_text
from pi_lab.session import SessionManager
from pi_lab.session.projection import get_context_settings, replay_system_state

__all__ = ["AgentSession", "SessionStats", "PROMPT_DURING_COMPACTION", "ALREADY_PROCESSING"]

Message = dict[str, Any]
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
    input: int
    output: int
    cache_read: int
    cache_write: int
    total_tokens: int
    cost: float


class AgentSession(CompactionFlow, TreeFlow):
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
        self.model: Model = model or getattr(client, "model", None)
        if self.model is None:
            raise ValueError("No model selected.")
        self.settings = settings or CompactionSettings()
        self.retry = retry or RetryPolicy()
        self.system_prompt = system_prompt
        self.thinking_level = thinking_level
        self.branch_summary_reserve_tokens = branch_summary_reserve_tokens
        self.before_compact = before_compact
        self.before_tree = before_tree
        self._listeners: list[Listener] = []
        self._entry_of: dict[int, tuple[Message, str]] = {}
        self._last_assistant: Message | None = None
        self._overflow_recovery_attempted = False
        self._retry_attempt = 0
        self._retry_cancel: asyncio.Event | None = None
        self._auto_compaction_cancel: asyncio.Event | None = None
        self._manual_compaction_cancel: asyncio.Event | None = None
        self._branch_summary_cancel: asyncio.Event | None = None
        self._abort_requested = False
        self._run_active = False
        self._preflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
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
        return self._run_active or self.agent.is_running

    @property
    def is_compacting(self) -> bool:
        return any(
            c is not None
            for c in (self._auto_compaction_cancel, self._manual_compaction_cancel, self._branch_summary_cancel)
        )

    @property
    def has_pending_tool_calls(self) -> bool:
        """A tool call is executing right now (navigation would attach its result elsewhere)."""
        return bool(self.agent.running_tool_calls)

    @property
    def messages(self) -> list[Message]:
        """What the agent will work from: the projection of the current branch."""
        return list(self.agent.messages)

    def _window(self, model: Model | None = None) -> int:
        model = model or self.model
        return getattr(model, "context_window", 0) or 0

    # ------------------------------------------------------------------ projection <-> agent

    def _remember(self, message: Message, entry_id: str) -> None:
        self._entry_of[id(message)] = (message, entry_id)

    def _entry_id_of(self, message: Message) -> str | None:
        """``_findPersistedMessageEntryId``: identity map, then the branch, then position."""
        known = self._entry_of.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        for entry in reversed(self.session_manager.get_branch()):
            if entry.get("type") == "message" and entry.get("message") is message:
                return entry["id"]
        try:
            position = next(i for i, m in enumerate(self.agent.messages) if m is message)
        except StopIteration:
            return None
        projection = self.session_manager.build_session_projection()
        flat: list[str] = []
        for item in projection.entries:
            flat.extend(item.source.get("id") for _ in item.messages)
        if position < len(flat):
            return flat[position]
        return None

    def _refresh_finalized_context(self) -> None:
        projection = self.session_manager.build_session_projection()
        for item in projection.entries:
            for message in item.messages:
                self._remember(message, item.source.get("id"))
        self.agent.messages = list(projection.messages)

    async def _prepare_request(self, messages: list[Message]) -> list[Message]:
        # Every request is built from a fresh projection: edits and compactions appended
        # mid-run take effect on the very next call.
        projection = self.session_manager.build_session_projection()
        for item in projection.entries:
            for message in item.messages:
                self._remember(message, item.source.get("id"))
        return list(projection.messages)

    async def _prepare_next_turn(self, messages: list[Message]) -> list[Message]:
        await self._compact_before_next_assistant_response()
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
        if kind == "agent_start" and self._abort_requested:
            self.agent.abort()
        if kind == "message_start" and isinstance(message, dict) and message.get("role") == "user":
            self._overflow_recovery_attempted = False
        if kind == "agent_end":
            event = {**event, "willRetry": self._will_retry()}
        self._emit(event)
        if kind == "message_end" and isinstance(message, dict):
            role = message.get("role")
            entry_id = None
            if role == "custom":
                entry_id = self.session_manager.append_custom_message_entry(
                    message.get("customType"), message.get("content"), message.get("display", True),
                    message.get("details"),
                )
            elif role in ("system", "user", "assistant", "toolResult"):
                entry_id = self.session_manager.append_message(message)
            if entry_id is not None:
                self._remember(message, entry_id)
            if role == "assistant":
                self._last_assistant = message
                stop = message.get("stopReason")
                if stop not in ("error", "length"):
                    self._overflow_recovery_attempted = False
                if stop != "error" and self._retry_attempt > 0:
                    self._emit({"type": "auto_retry_end", "success": True, "attempt": self._retry_attempt})
                    self._retry_attempt = 0

    def _will_retry(self) -> bool:
        last = self._last_assistant
        return (
            not self._abort_requested
            and self.retry.enabled
            and self._retry_attempt < self.retry.max_retries
            and last is not None
            and self._is_retryable_error(last)
        )

    def _is_retryable_error(self, message: Message) -> bool:
        if is_context_overflow(message, self._window(self._message_model(message))):
            return False  # the same input would overflow again
        return is_retryable_assistant_error(message)

    def _message_model(self, message: Message) -> Model | None:
        if message.get("provider") == self.model.provider and message.get("model") == self.model.id:
            return self.model
        return None

    # ------------------------------------------------------------------ prompting

    async def prompt(self, text: str, *, images: list[dict[str, Any]] | None = None,
                     streaming_behavior: str | None = None) -> None:
        """Send a user message and run until the model stops (retries and compactions included)."""
        if self._manual_compaction_cancel is not None or self._branch_summary_cancel is not None:
            raise RuntimeError(PROMPT_DURING_COMPACTION)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}, *(images or [])]
        user: Message = {"role": "user", "content": content, "timestamp": now_ms()}
        if self.is_running:
            if streaming_behavior == "steer":
                self.agent.steer(user)
            elif streaming_behavior == "followUp":
                self.agent.follow_up(user)
            else:
                raise RuntimeError(ALREADY_PROCESSING)
            self._emit({"type": "queue_update"})
            return
        self._preflight += 1
        try:
            await self._start_run([user])
        finally:
            self._preflight -= 1

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
        self._abort_requested = True
        self.agent.abort()
        for cancel in (self._retry_cancel, self._auto_compaction_cancel, self._manual_compaction_cancel,
                       self._branch_summary_cancel):
            if cancel is not None:
                cancel.set()
        await self.wait_idle()

    async def wait_idle(self) -> None:
        await self._idle.wait()

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
        self._run_active = True
        self._idle.clear()
        self._abort_requested = False
        aborted = False
        try:
            # check point 1: before new input (never continues the old task)
            last = next((m for m in reversed(self.agent.messages) if m.get("role") == "assistant"), None)
            if last is not None:
                await self._check_compaction(last, skip_aborted_check=False)
            delta = self._system_delta()
            if delta is not None:
                messages = [delta, *messages]
            branch_level, _ = get_context_settings(self.session_manager.get_branch())
            if branch_level != self.thinking_level:
                self.session_manager.append_thinking_level_change(self.thinking_level)
            self._refresh_finalized_context()
            await self.agent.prompt(messages)
            while not self._abort_requested:
                if await self._handle_post_agent_run():
                    if self._abort_requested:
                        break
                    await self.agent.continue_()
                    continue
                if self.agent.has_queued_messages() and self.agent.messages and \
                        self.agent.messages[-1].get("role") == "assistant":
                    await self.agent.continue_()
                    continue
                break
            aborted = self._abort_requested
        finally:
            if self._abort_requested and self._retry_attempt > 0:
                self._emit({"type": "auto_retry_end", "success": False, "attempt": self._retry_attempt,
                            "finalError": "Retry cancelled"})
                self._retry_attempt = 0
            self._run_active = False
            self._idle.set()
            self._emit({"type": "agent_settled", "aborted": aborted})

    async def _handle_post_agent_run(self) -> bool:
        message, self._last_assistant = self._last_assistant, None
        if self._abort_requested:
            return False
        if message is None:
            return self.agent.has_queued_messages()
        if self._is_retryable_error(message) and await self._prepare_retry(message):
            return not self._abort_requested
        if self._abort_requested:
            return False
        if message.get("stopReason") == "error" and self._retry_attempt > 0:
            self._emit({"type": "auto_retry_end", "success": False, "attempt": self._retry_attempt,
                        "finalError": message.get("errorMessage")})
            self._retry_attempt = 0
        if await self._check_compaction(message):
            return not self._abort_requested
        return self.agent.has_queued_messages()

    async def _prepare_retry(self, message: Message) -> bool:
        if not self.retry.enabled:
            return False
        self._retry_attempt += 1
        if self._retry_attempt > self.retry.max_retries:
            self._retry_attempt -= 1
            return False
        delay = retry_delay_ms(self.retry, self._retry_attempt, server_retry_delay_ms(message))
        self._emit({"type": "auto_retry_start", "attempt": self._retry_attempt, "maxAttempts": self.retry.max_retries,
                    "delayMs": delay, "errorMessage": message.get("errorMessage") or "Unknown error"})
        self._omit_recovery_attempt(message)
        self._retry_cancel = asyncio.Event()
        try:
            await asyncio.wait_for(self._retry_cancel.wait(), timeout=delay / 1000)
            cancelled = True
        except asyncio.TimeoutError:
            cancelled = False
        finally:
            self._retry_cancel = None
        if cancelled:
            self._emit({"type": "auto_retry_end", "success": False, "attempt": self._retry_attempt,
                        "finalError": "Retry cancelled"})
            self._retry_attempt = 0
            return False
        return True

    def abort_retry(self) -> None:
        if self._retry_cancel is not None:
            self._retry_cancel.set()

    def _omit_recovery_attempt(self, assistant: Message) -> None:
        """Persistently drop a failed attempt (and its tool results) from the model's view."""
        call_ids = {b.get("id") for b in assistant.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall"}
        assistant_id = self._entry_id_of(assistant)
        messages = self.agent.messages
        start = next((i for i, m in enumerate(messages)
                      if m is assistant or (assistant_id is not None and self._entry_id_of(m) == assistant_id)), None)
        targets: list[Message] = [assistant]
        if start is not None:
            for message in messages[start + 1:]:
                if message.get("role") == "assistant":
                    break
                if message.get("role") == "toolResult" and message.get("toolCallId") in call_ids:
                    targets.append(message)
        resolved: list[str] = []
        for target in targets:
            entry_id = self._entry_id_of(target)
            if entry_id is None:
                if any(m is target for m in messages):
                    raise RuntimeError("Cannot persist recovery omission because a projected message has no source entry")
                continue
            resolved.append(entry_id)
        for entry_id in resolved:
            edit_id = self.session_manager.append_context_edit(entry_id, None)
            self._emit({"type": "entry_appended", "entry": self.session_manager.get_entry(edit_id)})
        self._refresh_finalized_context()

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
            raise RuntimeError("Custom messages can only be appended while the session is idle")
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
        """Totals over all entries of the file (all branches), as pi's getSessionStats."""
        counts = {"user": 0, "assistant": 0, "toolResult": 0}
        tool_calls = total_messages = 0
        sums = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        cost = 0.0

        def add(usage: Any) -> None:
            nonlocal cost
            if isinstance(usage, dict):
                for key in sums:
                    sums[key] += usage.get(key) or 0
                cost += (usage.get("cost") or {}).get("total") or 0

        for entry in self.session_manager.entries:
            kind = entry.get("type")
            if kind == "message":
                total_messages += 1
                message = entry.get("message") or {}
                role = message.get("role")
                if role in counts:
                    counts[role] += 1
                if role == "assistant":
                    tool_calls += sum(1 for b in message.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall")
                if role in ("assistant", "toolResult"):
                    add(message.get("usage"))
            elif kind in ("usage", "compaction", "branch_summary"):
                add(entry.get("usage"))
        return SessionStats(counts["user"], counts["assistant"], tool_calls, counts["toolResult"], total_messages,
                            sums["input"], sums["output"], sums["cacheRead"], sums["cacheWrite"],
                            sum(sums.values()), cost)
