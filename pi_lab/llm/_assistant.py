"""Build one assistant message while a response streams in, and the events that report it.

Every client (OpenAI, Anthropic, offline) goes through this builder, so the produced message has
the same shape and key order everywhere (session-format.md §6.4):

    role, content, api, provider, model, [responseId], usage, stopReason, [errorMessage], timestamp
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from .model import Model, empty_usage
from .protocol import StreamDone, StreamError, StreamStart, TextDelta, ThinkingDelta, ToolCallEvent

Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


_ORDER = ("role", "content", "api", "provider", "model", "responseId", "usage", "stopReason",
          "errorMessage", "timestamp")


class AssistantBuilder:
    """Accumulates content blocks; `message` is the live dict handed out in `StreamStart`."""

    def __init__(self, model: Model, timestamp: int) -> None:
        self.message: dict[str, Any] = {
            "role": "assistant",
            "content": [],
            "api": model.api,
            "provider": model.provider,
            "model": model.id,
            "usage": empty_usage(),
            "stopReason": "stop",
            "timestamp": timestamp,
        }
        self._raw_arguments: dict[int, str] = {}
        self._open_calls: list[int] = []

    @property
    def content(self) -> list[dict[str, Any]]:
        return self.message["content"]

    def start(self) -> StreamStart:
        return StreamStart(self.message)

    # --- text and thinking -------------------------------------------------------------------

    def begin_text(self) -> int:
        self.content.append({"type": "text", "text": ""})
        return len(self.content) - 1

    def append_text(self, index: int, delta: str) -> TextDelta:
        self.content[index]["text"] += delta
        return TextDelta(index, delta)

    def begin_thinking(self, signature: str | None = None) -> int:
        block: dict[str, Any] = {"type": "thinking", "thinking": ""}
        if signature is not None:
            block["thinkingSignature"] = signature
        self.content.append(block)
        return len(self.content) - 1

    def append_thinking(self, index: int, delta: str) -> ThinkingDelta:
        self.content[index]["thinking"] += delta
        return ThinkingDelta(index, delta)

    def append_signature(self, index: int, delta: str) -> None:
        block = self.content[index]
        block["thinkingSignature"] = block.get("thinkingSignature", "") + delta

    def add_block(self, block: dict[str, Any]) -> int:
        self.content.append(block)
        return len(self.content) - 1

    # --- tool calls ----------------------------------------------------------------------------

    def begin_tool_call(self, call_id: str, name: str) -> int:
        self.content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": {}})
        index = len(self.content) - 1
        self._raw_arguments[index] = ""
        self._open_calls.append(index)
        return index

    def append_tool_arguments(self, index: int, delta: str) -> None:
        self._raw_arguments[index] += delta

    def end_tool_call(self, index: int) -> ToolCallEvent:
        """Parse the streamed argument text; a non-object result is recorded, not raised."""
        block = self.content[index]
        raw = self._raw_arguments.pop(index, "")
        self._open_calls.remove(index)
        arguments, problem = parse_arguments(raw)
        block["arguments"] = arguments
        if problem is not None:
            block["argumentsError"] = problem
        return ToolCallEvent(index, block)

    def end_open_tool_calls(self) -> list[ToolCallEvent]:
        return [self.end_tool_call(index) for index in list(self._open_calls)]

    # --- metadata and the end ------------------------------------------------------------------

    def set_usage(self, usage: dict[str, Any]) -> None:
        self.message["usage"] = usage

    def set_response_id(self, response_id: str) -> None:
        if response_id:
            self.message["responseId"] = response_id

    def finish(self, stop_reason: str) -> StreamDone:
        self.end_open_tool_calls()
        self.message["stopReason"] = stop_reason
        self._reorder()
        return StreamDone(self.message)

    def fail(self, error_message: str, *, aborted: bool = False) -> StreamError:
        """End with `stopReason` `error` (or `aborted`); content received so far is kept."""
        for index in list(self._open_calls):
            self.end_tool_call(index)
        self.message["stopReason"] = "aborted" if aborted else "error"
        self.message["errorMessage"] = error_message
        self._reorder()
        return StreamError(self.message)

    def _reorder(self) -> None:
        ordered = {key: self.message[key] for key in _ORDER if key in self.message}
        self.message.clear()
        self.message.update(ordered)


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments from the model's complete JSON text: `(arguments, argumentsError)`.

    As in pi-ai, text that is not a JSON object gives `{}` plus an error that quotes what the
    model sent, so tool validation can tell the model. Raw control characters inside strings
    (a common model slip) are accepted.
    """
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw, strict=False)
    except ValueError as exc:
        problem = f"Invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    else:
        if isinstance(value, dict):
            return value, None
        problem = "Tool arguments must be a JSON object"
    return {}, f"{problem}\n\nReceived arguments:\n{raw}"
