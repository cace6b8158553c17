"""Build one assistant message while a response streams in, and the events that report it.

Every client (OpenAI, Anthropic, offline) goes through this builder, so the produced message has
the same shape and key order everywhere (session-format.md §6.4):

    role, content, api, provider, model, [responseId], usage, stopReason, [errorMessage], timestamp

Given the API key (`secret`), the builder also keeps it out of the message: streamed text and
thinking go through a `StreamRedactor` before they are stored or emitted (the tail it holds back
comes out as one more delta when the block ends, `end_block`, or before the final event,
`release`), and every string of the finished (or failed) message is redacted once more before it
is handed out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from .model import Model, empty_usage
from .protocol import StreamDone, StreamError, StreamStart, TextDelta, ThinkingDelta, ToolCallEvent
from .redact import StreamRedactor, redact, redact_tree

Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


_ORDER = ("role", "content", "api", "provider", "model", "responseId", "usage", "stopReason",
          "errorMessage", "timestamp")


class AssistantMessage(dict):  # type: ignore[type-arg]
    """A plain assistant-message dict that can also carry what the HTTP answer said about retrying.

    `retry_after_ms` is the delay the provider asked for (`retry-after-ms` / `Retry-After`) on a
    failed request, or None. It is an attribute, not a key, so it is never written to a session
    file (pi's message has no such field) yet reaches the retry logic with the message itself.
    """

    __slots__ = ("retry_after_ms",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after_ms: float | None = None


class AssistantBuilder:
    """Accumulates content blocks; `message` is the live dict handed out in `StreamStart`."""

    def __init__(self, model: Model, timestamp: int, secret: str | None = None) -> None:
        self.secret = secret
        self._redactors: dict[int, StreamRedactor] = {}
        self.message: dict[str, Any] = AssistantMessage({
            "role": "assistant",
            "content": [],
            "api": model.api,
            "provider": model.provider,
            "model": model.id,
            "usage": empty_usage(),
            "stopReason": "stop",
            "timestamp": timestamp,
        })
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

    def _shown(self, index: int, delta: str) -> str:
        if not self.secret:
            return delta
        redactor = self._redactors.get(index)
        if redactor is None:
            redactor = self._redactors[index] = StreamRedactor(self.secret)
        return redactor.feed(delta)

    def append_text(self, index: int, delta: str) -> TextDelta:
        delta = self._shown(index, delta)
        self.content[index]["text"] += delta
        return TextDelta(index, delta)

    def begin_thinking(self, signature: str | None = None) -> int:
        block: dict[str, Any] = {"type": "thinking", "thinking": ""}
        if signature is not None:
            block["thinkingSignature"] = signature
        self.content.append(block)
        return len(self.content) - 1

    def append_thinking(self, index: int, delta: str) -> ThinkingDelta:
        delta = self._shown(index, delta)
        self.content[index]["thinking"] += delta
        return ThinkingDelta(index, delta)

    def end_block(self, index: int) -> list[TextDelta | ThinkingDelta]:
        """The text or thinking block at `index` is complete: the delta of what its redactor
        still held back (nothing when it held nothing)."""
        redactor = self._redactors.pop(index, None)
        rest = redactor.flush() if redactor is not None else ""
        if not rest:
            return []
        block = self.content[index]
        if block.get("type") == "text":
            block["text"] += rest
            return [TextDelta(index, rest)]
        block["thinking"] += rest
        return [ThinkingDelta(index, rest)]

    def release(self) -> list[TextDelta | ThinkingDelta]:
        """End every block still streaming; called before the final event, so the deltas add up
        to the finished message."""
        return [event for index in list(self._redactors) for event in self.end_block(index)]

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
        raw = redact(self._raw_arguments.pop(index, ""), self.secret)
        self._open_calls.remove(index)
        arguments, problem = parse_arguments(raw)
        block["arguments"] = arguments
        if problem is not None:
            block["argumentsError"] = problem
        redact_tree(block, self.secret)  # the id and name came from the provider too
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
        self._seal()
        return StreamDone(self.message)

    def fail(self, error_message: str, *, aborted: bool = False, retry_after_ms: float | None = None) -> StreamError:
        """End with `stopReason` `error` (or `aborted`); content received so far is kept.

        `retry_after_ms` is the provider's requested delay before a retry, if it named one.
        """
        for index in list(self._open_calls):
            self.end_tool_call(index)
        self.message["stopReason"] = "aborted" if aborted else "error"
        self.message["errorMessage"] = error_message
        if isinstance(self.message, AssistantMessage):
            self.message.retry_after_ms = retry_after_ms
        self._seal()
        return StreamError(self.message)

    def _seal(self) -> None:
        """Release held-back text, redact every provider string once more, fix the key order."""
        self.release()  # a caller that did not release first still gets the whole text
        redact_tree(self.message, self.secret)
        self._reorder()

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
    except json.JSONDecodeError as exc:
        problem = f"Invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    else:
        if isinstance(value, dict):
            return value, None
        problem = "Tool arguments must be a JSON object"
    return {}, f"{problem}\n\nReceived arguments:\n{raw}"
