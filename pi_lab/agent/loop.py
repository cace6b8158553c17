"""The low-level agent loop (pi-agent-core's ``Agent``): model call, tools, next turn.

It owns ``messages`` (what it believes the conversation is) and emits events to one
awaited handler. It knows nothing about sessions: :class:`~pi_lab.agent.session.AgentSession`
persists finished messages from the events and replaces the request context with the
session projection through the ``prepare_request`` hook (agent-loop.md §2, §4).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pi_lab.agent.tools import Tool
from pi_lab.llm.protocol import StreamDone, StreamError, StreamStart, TextDelta, ThinkingDelta, ToolCallEvent
from pi_lab.session.entries import Message

__all__ = ["Agent", "AgentHooks", "LENGTH_TOOL_ERROR"]

EventHandler = Callable[[dict[str, Any]], Awaitable[None]]

LENGTH_TOOL_ERROR = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments may be '
    "truncated. Re-issue the tool call with complete arguments."
)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class AgentHooks:
    """Callbacks AgentSession installs.

    ``stream(messages, tools)`` yields model events for one request built from ``messages``.
    ``prepare_request(messages)`` returns the messages to send (the session projection).
    ``prepare_next_turn(messages)`` runs before another call inside the same run (threshold
    compaction) and returns the messages to continue from.
    """

    stream: Callable[[list[Message], list[Tool], asyncio.Event], Any]
    prepare_request: Callable[[list[Message]], Awaitable[list[Message]]] | None = None
    prepare_next_turn: Callable[[list[Message]], Awaitable[list[Message]]] | None = None


@dataclass
class _Queues:
    steering: list[Message] = field(default_factory=list)
    follow_up: list[Message] = field(default_factory=list)


class Agent:
    def __init__(self, hooks: AgentHooks, handler: EventHandler, tools: list[Tool] | None = None):
        self.hooks = hooks
        self.messages: list[Message] = []
        self.tools: list[Tool] = list(tools or [])
        self._handler = handler
        self._queues = _Queues()
        self._abort = asyncio.Event()
        self.running_tool_calls: set[str | None] = set()  # a call may come without an id
        self.is_running = False

    # -- queues ----------------------------------------------------------------------------

    def steer(self, message: Message) -> None:
        self._queues.steering.append(message)

    def follow_up(self, message: Message) -> None:
        self._queues.follow_up.append(message)

    def has_queued_messages(self) -> bool:
        return bool(self._queues.steering or self._queues.follow_up)

    def abort(self) -> None:
        self._abort.set()

    @property
    def abort_requested(self) -> bool:
        return self._abort.is_set()

    # -- runs ------------------------------------------------------------------------------

    async def _emit(self, event: dict[str, Any]) -> None:
        await self._handler(event)

    async def prompt(self, messages: list[Message]) -> None:
        """Start a run with new input messages (each is finished as soon as it is added)."""
        self._abort = asyncio.Event()
        await self._run(messages)

    async def continue_(self) -> None:
        """Resume from the current messages (after a retry or a compaction)."""
        self._abort = asyncio.Event()
        if self.messages and self.messages[-1].get("role") == "assistant":
            if self._queues.steering:
                pending, self._queues.steering = self._queues.steering, []
                await self._run(pending)
                return
            if self._queues.follow_up:
                pending, self._queues.follow_up = self._queues.follow_up, []
                await self._run(pending)
                return
            raise RuntimeError("Cannot continue from message role: assistant")
        await self._run([])

    async def _add(self, message: Message) -> None:
        await self._emit({"type": "message_start", "message": message})
        self.messages.append(message)
        await self._emit({"type": "message_end", "message": message})

    async def _run(self, new_messages: list[Message]) -> None:
        self.is_running = True
        produced: list[Message] = []
        try:
            await self._emit({"type": "agent_start"})
            for message in new_messages:
                await self._add(message)
                produced.append(message)
            first_turn = True
            while True:
                if not first_turn and self.hooks.prepare_next_turn is not None:
                    self.messages = await self.hooks.prepare_next_turn(self.messages)
                first_turn = False
                await self._emit({"type": "turn_start"})
                assistant = await self._call_model()
                produced.append(assistant)
                stop = assistant.get("stopReason")
                if stop in ("error", "aborted"):
                    await self._emit({"type": "turn_end", "message": assistant, "toolResults": []})
                    break
                results = await self._run_tools(assistant)
                produced.extend(results)
                await self._emit({"type": "turn_end", "message": assistant, "toolResults": results})
                if self._abort.is_set():
                    break
                if results:
                    if self._queues.steering:
                        steering, self._queues.steering = self._queues.steering, []
                        for message in steering:
                            await self._add(message)
                            produced.append(message)
                    continue
                if self._queues.steering or self._queues.follow_up:
                    queued = self._queues.steering or self._queues.follow_up
                    if queued is self._queues.steering:
                        self._queues.steering = []
                    else:
                        self._queues.follow_up = []
                    for message in queued:
                        await self._add(message)
                        produced.append(message)
                    continue
                break
            await self._emit({"type": "agent_end", "messages": produced})
        finally:
            self.is_running = False

    async def _call_model(self) -> Message:
        context = self.messages
        if self.hooks.prepare_request is not None:
            context = await self.hooks.prepare_request(self.messages)
        final: Message | None = None
        started = False
        async for event in self.hooks.stream(context, self.tools, self._abort):
            if isinstance(event, StreamStart):
                started = True
                await self._emit({"type": "message_start", "message": event.message})
            elif isinstance(event, (TextDelta, ThinkingDelta, ToolCallEvent)):
                await self._emit({"type": "message_update", "message": None, "event": event})
            elif isinstance(event, (StreamDone, StreamError)):
                final = event.message
        if final is None:
            raise RuntimeError("model stream ended without a final message")
        if not started:
            await self._emit({"type": "message_start", "message": final})
        self.messages.append(final)
        await self._emit({"type": "message_end", "message": final})
        return final

    async def _run_tools(self, assistant: Message) -> list[Message]:
        calls = [b for b in assistant.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall"]
        results: list[Message] = []
        by_name = {t.name: t for t in self.tools}
        for call in calls:
            call_id, name = call.get("id"), call.get("name")
            raw_args = call.get("arguments")
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            await self._emit({"type": "tool_execution_start", "toolCallId": call_id, "toolName": name, "args": args})
            started = time.monotonic()
            self.running_tool_calls.add(call_id)
            try:
                if assistant.get("stopReason") == "length":
                    content, details, is_error = [{"type": "text", "text": LENGTH_TOOL_ERROR.format(name=name)}], None, True
                elif self._abort.is_set():
                    content, details, is_error = [{"type": "text", "text": "Tool execution was aborted"}], None, True
                elif name not in by_name:
                    content, details, is_error = [{"type": "text", "text": f"Tool {name} not found"}], None, True
                elif call.get("argumentsError"):
                    content, details, is_error = [{"type": "text", "text": str(call["argumentsError"])}], None, True
                else:
                    output = await by_name[name].run(args)
                    content, details, is_error = output.content, output.details, output.is_error
            finally:
                self.running_tool_calls.discard(call_id)
            result: Message = {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": content}
            if details is not None:
                result["details"] = details
            result["isError"] = is_error
            result["timestamp"] = now_ms()
            result["durationMs"] = int((time.monotonic() - started) * 1000)
            await self._emit({"type": "tool_execution_end", "toolCallId": call_id, "toolName": name,
                              "result": result, "isError": is_error})
            await self._add(result)
            results.append(result)
        return results
