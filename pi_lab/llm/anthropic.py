"""A streaming client for the Anthropic Messages API (`POST {base}/v1/messages`).

What goes over the wire:

* `max_tokens` (required by this API): the caller's value, else the model's own limit, fitted
  into the room the estimated input leaves in the context window (pi-ai 1.6.0's rule; pi's
  summaries send none);
* thinking, as pi-ai 1.6.0 does it for budget-based models: with a thinking level, `thinking:
  {type: "enabled", budget_tokens, display: "summarized"}` with budgets minimal 1024, low 2048,
  medium 8192, high/xhigh 16384; `max_tokens` grows by the budget up to the model's limit and
  the budget leaves at least 1024 tokens for the answer. A reasoning model asked for no thinking
  gets `thinking: {type: "disabled"}`. (Adaptive-thinking models are not special-cased.)
* prompt caching (`cache_retention`: `short` → ephemeral, `long` → ephemeral 1h, `none`):
  a cache breakpoint on the system prompt and on the last block of the last user message;
* tool ids are made safe for Anthropic (`[a-zA-Z0-9_-]`, at most 64 characters) on both the
  tool_use and the tool_result side; consecutive tool results travel in one user message.

Answers: text → text blocks; `thinking` with its `signature` → `{type: "thinking", thinking,
thinkingSignature}`; `redacted_thinking` → a thinking block with `redacted: true` and the opaque
payload in `thinkingSignature`; `tool_use` → tool calls. `stop_reason` `end_turn`,
`stop_sequence`, `pause_turn` → `stop`; `max_tokens` → `length`; `tool_use` → `toolUse`;
`refusal`, `sensitive` and unknown reasons → `error` (an unknown
`model_context_window_exceeded` therefore reads as an overflow, as in pi). Usage: `input_tokens`,
`output_tokens`, `cache_read_input_tokens` → cacheRead, `cache_creation_input_tokens` →
cacheWrite, its 1-hour share → `cacheWrite1h`, reported thinking tokens → `reasoning`, in the
key order pi writes. An HTTP error becomes `"<status> <body>"` — the JSON body as the Anthropic
SDK shows it to pi, e.g. `400 {"type":"error","error":{"type":"invalid_request_error",
"message":"prompt is too long: …"}}`; an `error` event inside the stream becomes its data. A
stream that stops before `message_stop` is an error (`Anthropic stream ended before
message_stop`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import _http
from ._assistant import AssistantBuilder
from .model import Model, calculate_cost
from .protocol import STREAM_OPTION_NAMES, Context, StreamEvent, StreamOptions, check_options
from .request import build_request, grouped_tool_results

if TYPE_CHECKING:  # annotations only; typing has Unpack from 3.11
    from typing_extensions import Unpack

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_BASE_URL", "THINKING_BUDGETS", "AnthropicClient"]

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
_ENV_KEY = "ANTHROPIC_API_KEY"
ANTHROPIC_VERSION = "2023-06-01"
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384}
_MIN_ANSWER_TOKENS = 1024
_REDACTED_THINKING_TEXT = "[redacted thinking]"
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
}
_CACHE_CONTROL = {"short": {"type": "ephemeral"}, "long": {"type": "ephemeral", "ttl": "1h"}, "none": None}


class AnthropicClient(_http.KeyedClient):
    """`ModelClient` for the Anthropic Messages protocol.

    The API key comes from `api_key`, else — for models whose provider is `anthropic` —
    `ANTHROPIC_API_KEY` at request time. It is sent only in the `x-api-key` header and never
    appears in repr, events or messages.

    `cache_retention` is the default prompt caching (`short`, `long` or `none`); the other
    keywords are those of every HTTP client (`KeyedClient`: base_url, headers, ...).
    """

    provider = "anthropic"
    env_key = _ENV_KEY

    def __init__(self, api_key: str | None = None, *, cache_retention: str = "short",
                 **settings: Unpack[_http.ClientSettings]) -> None:
        if cache_retention not in _CACHE_CONTROL:
            raise ValueError(f"cache_retention must be one of {sorted(_CACHE_CONTROL)}, not {cache_retention!r}")
        super().__init__(api_key, **settings)
        self.cache_retention = cache_retention

    def _request(
        self, model: Model, context: Context, key: str | None, options: StreamOptions
    ) -> str | tuple[str, dict[str, str], dict[str, Any]]:
        if not key:
            return f"No API key for provider: {model.provider} (set ANTHROPIC_API_KEY or pass api_key)"
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
            **self._headers,
            "x-api-key": key,
        }
        base_url = model.base_url or self.base_url or DEFAULT_ANTHROPIC_BASE_URL
        url = base_url.rstrip("/") + "/v1/messages"
        return url, headers, self.build_body(model, context, **options)

    def _reader(self, builder: AssistantBuilder, model: Model) -> _Reader:
        return _Reader(builder, model)

    def build_body(self, model: Model, context: Context, **options: Unpack[StreamOptions]) -> dict[str, Any]:
        """The JSON request body for `stream`'s options (exposed for inspection and tests).

        `session_id` is not sent: the Messages API has no session field."""
        check_options(options, STREAM_OPTION_NAMES, f"{type(self).__name__}.build_body")
        reasoning = options.get("reasoning")
        request = build_request(model, context, options.get("tools"))
        cache = _CACHE_CONTROL[options.get("cache_retention") or self.cache_retention]
        messages = _encode_messages(request.messages)
        if cache is not None:
            _mark_last_user_block(messages, cache)
        output_cap = request.output_budget(model, options.get("max_tokens"))
        thinking: dict[str, Any] | None = None
        if model.reasoning and reasoning and reasoning != "off":
            budget = THINKING_BUDGETS.get(reasoning, THINKING_BUDGETS["high"])
            ceiling = min(output_cap + budget, model.max_tokens)
            if ceiling <= budget:
                budget = min(budget, max(0, ceiling - _MIN_ANSWER_TOKENS))
            output_cap = request.output_budget(model, ceiling)
            budget = min(budget, max(0, output_cap - _MIN_ANSWER_TOKENS))
            thinking = {"type": "enabled", "budget_tokens": budget or 1024, "display": "summarized"}
        elif model.reasoning:
            thinking = {"type": "disabled"}

        body: dict[str, Any] = {"model": model.id, "messages": messages, "max_tokens": output_cap, "stream": True}
        if request.system_prompt:
            system: dict[str, Any] = {"type": "text", "text": request.system_prompt}
            if cache is not None:
                system["cache_control"] = dict(cache)
            body["system"] = [system]
        if request.tools:
            body["tools"] = [
                {
                    "name": tool.get("name"),
                    "description": tool.get("description", ""),
                    "input_schema": {"type": "object", **(tool.get("parameters") or {})},
                }
                for tool in request.tools
            ]
        if thinking is not None:
            body["thinking"] = thinking
        return body


class _Reader:
    """Turns Messages-API stream events into builder calls and events."""

    def __init__(self, builder: AssistantBuilder, model: Model) -> None:
        self.builder = builder
        self.model = model
        self.stop_reason: str | None = None
        self.saw_stop = False
        self.failure: str | None = None
        self.saw_start = False
        self._blocks: dict[Any, int] = {}  # server block index → content index
        self._counts = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        self._cache_write_1h = 0
        self._reasoning: int | None = None
        self._stop_details: Any = None

    @property
    def done(self) -> bool:
        return self.failure is not None or self.saw_stop

    def error_text(self, status: int, body: str) -> str:
        return _error_text(status, body, self.builder.secret)

    def feed(self, sse: _http.SseEvent) -> list[StreamEvent]:
        name, data = sse.event, sse.data
        if name == "error":
            self.failure = data  # the SDK reports the event's data as the error text
            return []
        payload = _http.parse_json(data)
        if not isinstance(payload, dict):
            return []
        kind = payload.get("type") or name
        events: list[StreamEvent] = []
        if kind == "message_start":
            self.saw_start = True
            message = payload.get("message") or {}
            if isinstance(message.get("id"), str):
                self.builder.set_response_id(message["id"])
            self._update_usage(message.get("usage") or {})
        elif kind == "content_block_start":
            self._start_block(payload.get("index"), payload.get("content_block") or {}, events)
        elif kind == "content_block_delta":
            self._delta(payload.get("index"), payload.get("delta") or {}, events)
        elif kind == "content_block_stop":
            index = self._blocks.get(payload.get("index"))
            if index is not None and self.builder.content[index].get("type") == "toolCall":
                events.append(self.builder.end_tool_call(index))
            elif index is not None:
                events.extend(self.builder.end_block(index))
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            if delta.get("stop_reason"):
                self.stop_reason = delta["stop_reason"]
                self._stop_details = delta.get("stop_details")
            self._update_usage(payload.get("usage") or {})
        elif kind == "message_stop":
            self.saw_stop = True
        return events

    def _start_block(self, server_index: Any, block: dict[str, Any], events: list[StreamEvent]) -> None:
        kind = block.get("type")
        if kind == "text":
            index = self.builder.begin_text()
            if block.get("text"):
                events.append(self.builder.append_text(index, block["text"]))
        elif kind == "thinking":
            index = self.builder.begin_thinking(signature="")
            if block.get("thinking"):
                events.append(self.builder.append_thinking(index, block["thinking"]))
        elif kind == "redacted_thinking":
            index = self.builder.add_block({
                "type": "thinking",
                "thinking": _REDACTED_THINKING_TEXT,
                "thinkingSignature": block.get("data", ""),
                "redacted": True,
            })
        elif kind == "tool_use":
            index = self.builder.begin_tool_call(block.get("id", ""), block.get("name", ""))
            if block.get("input"):
                self.builder.append_tool_arguments(index, _http.compact(block["input"]))
        else:
            return  # server-side tool blocks and other kinds are not part of pi's message
        self._blocks[server_index] = index

    def _delta(self, server_index: Any, delta: dict[str, Any], events: list[StreamEvent]) -> None:
        index = self._blocks.get(server_index)
        if index is None:
            return
        kind = delta.get("type")
        block_type = self.builder.content[index].get("type")
        if kind == "text_delta" and block_type == "text":
            events.append(self.builder.append_text(index, delta.get("text", "")))
        elif kind == "thinking_delta" and block_type == "thinking":
            events.append(self.builder.append_thinking(index, delta.get("thinking", "")))
        elif kind == "signature_delta" and block_type == "thinking":
            self.builder.append_signature(index, delta.get("signature", ""))
        elif kind == "input_json_delta" and block_type == "toolCall":
            self.builder.append_tool_arguments(index, delta.get("partial_json", ""))

    def _update_usage(self, raw: dict[str, Any]) -> None:
        # message_delta repeats only some counters; a missing or null one keeps its last value.
        for field, key in (("input_tokens", "input"), ("output_tokens", "output"),
                           ("cache_read_input_tokens", "cacheRead"), ("cache_creation_input_tokens", "cacheWrite")):
            if isinstance(raw.get(field), int):
                self._counts[key] = raw[field]
        breakdown = raw.get("cache_creation")
        if isinstance(breakdown, dict) and isinstance(breakdown.get("ephemeral_1h_input_tokens"), int):
            self._cache_write_1h = breakdown["ephemeral_1h_input_tokens"]
        thinking = (raw.get("output_tokens_details") or {}).get("thinking_tokens")
        if isinstance(thinking, int):
            self._reasoning = thinking
        # pi's key order: the four counters, totalTokens, cost, then cacheWrite1h and reasoning.
        usage: dict[str, Any] = {**self._counts, "totalTokens": sum(self._counts.values())}
        usage["cost"] = calculate_cost(self.model, {**usage, "cacheWrite1h": self._cache_write_1h})
        usage["cacheWrite1h"] = self._cache_write_1h
        if self._reasoning is not None:
            usage["reasoning"] = self._reasoning
        self.builder.set_usage(usage)

    def finish(self) -> list[StreamEvent]:
        return [self._final()]

    def _final(self) -> StreamEvent:
        if self.failure is not None:
            return self.builder.fail(self.failure)
        if self.saw_start and not self.saw_stop:
            return self.builder.fail("Anthropic stream ended before message_stop")
        if self.stop_reason is None:
            return self.builder.fail("Anthropic stream ended without a stop reason")
        stop = _STOP_REASONS.get(self.stop_reason)
        if stop is not None:
            return self.builder.finish(stop)
        if self.stop_reason == "refusal":
            details = self._stop_details if isinstance(self._stop_details, dict) else {}
            explanation = details.get("explanation")
            return self.builder.fail(explanation or "The model refused to complete the request")
        if self.stop_reason == "sensitive":
            return self.builder.fail("Provider stopped with: sensitive")
        return self.builder.fail(f"Unhandled stop reason: {self.stop_reason}")


def _error_text(status: int, body: str, secret: str | None = None) -> str:
    data = _http.parse_json(body)
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        text = data["message"]
    elif data is not None:
        text = _http.truncate_body(_http.compact(data), secret)
    elif body.strip():
        text = _http.truncate_body(body, secret)
    else:
        text = "status code (no body)"
    return f"{status} {text}"


# --- request encoding -------------------------------------------------------------------------

_UNSAFE_ID = re.compile(r"[^a-zA-Z0-9_-]")


def _tool_id(call_id: Any) -> str:
    return _UNSAFE_ID.sub("_", str(call_id or ""))[:64]


def _content_block(block: dict[str, Any]) -> dict[str, Any] | None:
    if block.get("type") == "text":
        text = block.get("text") or ""
        return {"type": "text", "text": text} if text.strip() else None
    if block.get("type") == "image":
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": block.get("mimeType"), "data": block.get("data")},
        }
    return None


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    blocks = (_content_block(x) for x in content or [] if isinstance(x, dict))
    return [b for b in blocks if b is not None]


def _encode_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in grouped_tool_results(messages):
        if isinstance(message, list):  # consecutive tool results travel in one user message
            out.append({"role": "user", "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": _tool_id(result.get("toolCallId")),
                    "content": _content_blocks(result.get("content")),
                    "is_error": bool(result.get("isError")),
                }
                for result in message
            ]})
            continue
        role = message.get("role")
        if role == "user":
            content = message.get("content")
            if isinstance(content, str):
                if content.strip():
                    out.append({"role": "user", "content": content})
            else:
                blocks = _content_blocks(content)
                if blocks:
                    out.append({"role": "user", "content": blocks})
        elif role == "assistant":
            blocks = _assistant_blocks(message)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
    return out


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and (block.get("text") or "").strip():
            blocks.append({"type": "text", "text": block["text"]})
        elif kind == "thinking":
            signature = block.get("thinkingSignature") or ""
            if block.get("redacted"):
                blocks.append({"type": "redacted_thinking", "data": signature})
            elif not (block.get("thinking") or "").strip():
                continue
            elif signature.strip():
                blocks.append({"type": "thinking", "thinking": block["thinking"], "signature": signature})
            else:
                # Unsigned thinking (an interrupted stream) would be rejected; send it as text.
                blocks.append({"type": "text", "text": block["thinking"]})
        elif kind == "toolCall":
            blocks.append({
                "type": "tool_use",
                "id": _tool_id(block.get("id")),
                "name": block.get("name", ""),
                "input": block.get("arguments") or {},
            })
    return blocks


def _mark_last_user_block(messages: list[dict[str, Any]], cache: dict[str, Any]) -> None:
    if not messages or messages[-1]["role"] != "user":
        return
    last = messages[-1]
    if isinstance(last["content"], str):
        block: dict[str, Any] = {"type": "text", "text": last["content"]}
        last["content"] = [block]
    if last["content"]:
        last["content"][-1]["cache_control"] = dict(cache)
