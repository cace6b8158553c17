"""`OfflineModel`: the embedded default model — no key, no network, deterministic.

It is **not a language model**. It is a scriptable stand-in that speaks the same `ModelClient`
protocol as the real clients, so sessions, compaction and the widget can be exercised, taught
and tested without a provider:

* **Script.** `OfflineModel(script=[...])` answers each request with the next scripted reply:
  a string (text), `ToolCallReply(name, arguments)`, or `FaultReply(kind)` — a provider failure
  with a real provider's wording: `overflow` (`400 prompt is too long: N tokens > W maximum`),
  `rate_limit` (429), `overloaded` (529), `terminated` (dropped stream), `error` (your text),
  `length` (truncated answer) or `aborted`.
* **Without a script** (or once it is used up) it answers from the last message: it restates
  the user's request, or acknowledges a tool result. Same input, same answer.
* **Summaries.** A summarisation request (user text `<conversation>…` or `# Conversation…`, as
  pi's compaction and branch summariser send it) gets a real extractive checkpoint built from
  the conversation: see `offline_summary.py`. Summarisation requests never consume `script`
  (a compaction may make one or two of them), they take from their own `summary_script`
  first, so summary failures can be scripted too.
* **Usage.** `input` = estimated tokens of the whole request (UTF-16 length / 4, rounded up, as
  pi estimates), `output` = the same estimate of the reply; cost 0. An answer longer than
  `max_tokens` (the request's, else the model's) is cut there and stops with `length`.

Every request is recorded in `calls`, so tests can assert what a caller sent.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pi_lab.session._text import content_text

from ._assistant import AssistantBuilder, Clock, now_ms
from .model import Model, make_usage
from .offline_summary import summarise_request
from .protocol import ABORTED_TEXT, Cancel, Cancelled, CompleteFromStream, Context, StreamEvent, StreamOptions
from .request import build_request
from .tokens import compact_json, estimate_request_tokens, estimate_text_tokens, utf16_len

__all__ = [
    "FAULT_KINDS",
    "OFFLINE_MODEL",
    "FaultReply",
    "OfflineCall",
    "OfflineModel",
    "ScriptedReply",
    "ToolCallReply",
]

OFFLINE_MODEL = Model(provider="pi-lab", id="offline", api="offline", context_window=128000, max_tokens=4096)

FAULT_KINDS = ("overflow", "rate_limit", "overloaded", "terminated", "error", "length", "aborted")


@dataclass(frozen=True, slots=True)
class ToolCallReply:
    """Answer with a call of tool `name` (optionally after some text); stops with `toolUse`."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class FaultReply:
    """Answer with a failure of the given kind (see `FAULT_KINDS`).

    `message` replaces the error text; `text` is partial output sent before the failure (for
    `length` it is the truncated answer); `output_tokens` overrides the reported output count
    (a `length` stop reports the full output budget unless told otherwise).
    """

    kind: str
    message: str | None = None
    text: str | None = None
    output_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {FAULT_KINDS}")


ScriptedReply = str | ToolCallReply | FaultReply


@dataclass(frozen=True, slots=True)
class OfflineCall:
    """What one request asked for."""

    model: Model
    context: Context
    tools: list[dict[str, Any]] | None
    reasoning: str | None
    max_tokens: int | None
    session_id: str | None
    cache_retention: str | None


class OfflineModel(CompleteFromStream):
    """A deterministic, scriptable stand-in for a model; see the module docstring."""

    def __init__(
        self,
        script: Iterable[ScriptedReply] = (),
        *,
        summary_script: Iterable[ScriptedReply] = (),
        context_window: int = 128000,
        max_tokens: int = 4096,
        clock: Clock | None = None,
    ) -> None:
        self.model = Model(
            provider=OFFLINE_MODEL.provider,
            id=OFFLINE_MODEL.id,
            api=OFFLINE_MODEL.api,
            context_window=context_window,
            max_tokens=max_tokens,
        )
        self.script: list[ScriptedReply] = list(script)
        self.summary_script: list[ScriptedReply] = list(summary_script)
        self.calls: list[OfflineCall] = []
        self._clock = clock or now_ms
        self._tool_calls_made = 0

    def __repr__(self) -> str:
        return (
            f"OfflineModel(context_window={self.model.context_window}, scripted_replies_left={len(self.script)}, "
            f"scripted_summaries_left={len(self.summary_script)})"
        )

    def push(self, *replies: ScriptedReply) -> None:
        """Append replies to the script."""
        self.script.extend(replies)

    def push_summary(self, *replies: ScriptedReply) -> None:
        """Append replies for summarisation requests."""
        self.summary_script.extend(replies)

    async def _stream(
        self, model: Model | None, context: Context, options: StreamOptions
    ) -> AsyncIterator[StreamEvent]:
        model = model or self.model
        tools, cancel, max_tokens = options.get("tools"), options.get("cancel"), options.get("max_tokens")
        self.calls.append(OfflineCall(model, context, tools, options.get("reasoning"), max_tokens,
                                      options.get("session_id"), options.get("cache_retention")))
        builder = AssistantBuilder(model, self._clock())
        yield builder.start()
        request = build_request(model, context, tools)
        input_tokens = estimate_request_tokens(request.system_prompt, request.messages, request.tools)
        reply = self._next_reply(request.messages)
        cap = max_tokens or model.max_tokens

        async def emit_text(text: str) -> AsyncIterator[StreamEvent]:
            if not text:
                return
            index = builder.begin_text()
            for piece in _pieces(text):
                await _pause(cancel)
                yield builder.append_text(index, piece)

        try:
            if isinstance(reply, FaultReply):
                async for event in self._fault(builder, reply, model, input_tokens, cap, emit_text):
                    yield event
                return
            text = reply if isinstance(reply, str) else (reply.text or "")
            truncated = estimate_text_tokens(text) > cap
            if truncated:
                text = _cut_to_tokens(text, cap)
            async for event in emit_text(text):
                yield event
            output = estimate_text_tokens(text)
            stop = "length" if truncated else "stop"
            if isinstance(reply, ToolCallReply) and not truncated:
                self._tool_calls_made += 1
                call_id = reply.id or f"offline_call_{self._tool_calls_made}"
                index = builder.begin_tool_call(call_id, reply.name)
                builder.append_tool_arguments(index, compact_json(reply.arguments))
                await _pause(cancel)
                yield builder.end_tool_call(index)
                output += math.ceil((utf16_len(reply.name) + utf16_len(compact_json(reply.arguments))) / 4)
                stop = "toolUse"
            builder.set_usage(make_usage(model, input=input_tokens, output=output))
            yield builder.finish(stop)
        except Cancelled:
            yield builder.fail(ABORTED_TEXT, aborted=True)

    def _next_reply(self, messages: list[dict[str, Any]]) -> ScriptedReply:
        last = messages[-1] if messages else {}
        summary = summarise_request(_text_of(last.get("content")).strip()) if last.get("role") == "user" else None
        if summary is not None:
            return self.summary_script.pop(0) if self.summary_script else summary
        return self.script.pop(0) if self.script else _unscripted_reply(messages)

    async def _fault(
        self, builder: AssistantBuilder, reply: FaultReply, model: Model, input_tokens: int, cap: int,
        emit_text: Callable[[str], AsyncIterator[StreamEvent]],
    ) -> AsyncIterator[StreamEvent]:
        kind = reply.kind
        if kind == "length":
            text = reply.text if reply.text is not None else "This answer was cut off before it"
            async for event in emit_text(text):
                yield event
            output = reply.output_tokens if reply.output_tokens is not None else cap
            builder.set_usage(make_usage(model, input=input_tokens, output=output))
            yield builder.finish("length")
            return
        async for event in emit_text(reply.text or ""):
            yield event
        if kind == "aborted":
            yield builder.fail(reply.message or ABORTED_TEXT, aborted=True)
            return
        if kind == "overflow":
            window = model.context_window
            default = f"400 prompt is too long: {max(input_tokens, window + 1)} tokens > {window} maximum"
        elif kind == "rate_limit":
            default = "429 Rate limit reached for requests: too many requests, please retry after 1s"
        elif kind == "overloaded":
            default = '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
        elif kind == "terminated":
            default = "terminated"
        else:
            default = "500 Internal server error (scripted)"
        yield builder.fail(reply.message or default)


async def _pause(cancel: Cancel | None) -> None:
    """Before each event: `Cancelled` when the caller has cancelled, else let other tasks run
    (as a real stream would between its events)."""
    if cancel is not None and cancel.is_set():
        raise Cancelled
    await asyncio.sleep(0)


def _pieces(text: str, parts: int = 3) -> list[str]:
    """Split text into a few deltas at spaces (deterministic; whole text if it has none)."""
    if len(text) < 24:
        return [text]
    size = math.ceil(len(text) / parts)
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        space = text.find(" ", end)
        end = len(text) if space < 0 or space - end > 40 else space + 1
        out.append(text[start:end])
        start = end
    return out


def _cut_to_tokens(text: str, tokens: int) -> str:
    units = 0
    for i, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > tokens * 4:
            return text[:i]
    return text


_text_of = content_text


def _unscripted_reply(messages: list[dict[str, Any]]) -> str:
    """The deterministic answer to the last message."""
    last = messages[-1] if messages else None
    if last is None:
        return "There is nothing to answer yet. (offline stand-in model: no language model ran)"
    if last.get("role") == "user":
        request = " ".join(_text_of(last.get("content")).split())
        if len(request) > 200:
            request = request[:199] + "…"
        return (
            f'You asked: "{request}". This is the offline stand-in model: it restates requests '
            "and runs scripts, but no language model ran, so nothing was done."
        )
    if last.get("role") == "toolResult":
        name = last.get("toolName") or "the tool"
        size = utf16_len(_text_of(last.get("content")))
        status = "an error" if last.get("isError") else "a result"
        return f"`{name}` returned {status} of {size} characters. (offline stand-in model)"
    return "There is no new user message to answer. (offline stand-in model)"
