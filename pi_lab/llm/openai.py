"""A streaming client for OpenAI-compatible chat completions (`POST {base}/chat/completions`).

Works with api.openai.com and with compatible servers (vLLM, llama.cpp, LM Studio, Ollama,
OpenRouter, LiteLLM…). What goes over the wire:

* `stream: true` and `stream_options: {include_usage: true}`, so the last chunk reports usage;
* an output cap in `max_completion_tokens` (or the field named by `max_tokens_field`): the
  caller's `max_tokens`, else the model's own limit, fitted into the room the estimated input
  leaves in the context window — pi-ai 1.6.0's provider-layer rule;
* for api.openai.com: `store: false`, and `prompt_cache_key` = the session id unless caching is
  off;
* `reasoning_effort` for reasoning models when a thinking level is requested (`xhigh` → `high`);
* the system prompt as `system` (`developer` for OpenAI's own reasoning models);
* tool calls with JSON-encoded arguments, tool results as `tool` messages; images as data URLs.

Answers map to pi's assistant message: text deltas → text blocks, `reasoning_content` /
`reasoning` / `reasoning_text` deltas → thinking blocks (the field name is kept as the block's
signature so it can be sent back), `tool_calls` deltas → tool calls; `finish_reason` `stop` →
`stop`, `length` → `length`, `tool_calls` → `toolUse`, anything else → `error` with
`Provider finish_reason: <reason>`; a stream without a finish reason is an error. Usage as
pi-ai 1.6.0 reads it: `cacheRead` = cached prompt tokens, `cacheWrite` = reported cache writes,
`input` = the rest of the prompt, `output` = completion tokens (which include reasoning),
`reasoning` = reasoning tokens. HTTP errors read as pi 1.6.0 shows them: `<status>: <the JSON
error object>` when the body has one (e.g. `400: {"message":"This model's maximum context
length is 128000 tokens…","type":"invalid_request_error",…}`), else `<status> <body text>`
or `<status> status code (no body)`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import _http
from ._assistant import AssistantBuilder
from .model import Model, make_usage
from .protocol import STREAM_OPTION_NAMES, Context, StreamEvent, StreamOptions, check_options
from .request import build_request, grouped_tool_results
from .tokens import compact_json

if TYPE_CHECKING:  # annotations only; typing has Unpack from 3.11
    from typing_extensions import Unpack

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAIClient"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
_ENV_KEY = "OPENAI_API_KEY"
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_STOP_REASONS = {"stop": "stop", "end": "stop", "length": "length", "tool_calls": "toolUse",
                 "function_call": "toolUse"}


class OpenAIClient(_http.KeyedClient):
    """`ModelClient` for the OpenAI chat-completions protocol.

    The API key comes from `api_key`, else — for models whose provider is `openai` —
    `OPENAI_API_KEY` at request time (an OpenAI key is never sent to another provider's server).
    A model or client with its own `base_url` (a local server) may run without a key. The key is
    sent only in the `Authorization` header; it never appears in repr, events or messages (a
    server that echoes it in an error has it replaced by `***`).

    `max_tokens_field` names the body field of the output cap (`max_tokens` for older servers);
    the other keywords are those of every HTTP client (`KeyedClient`: base_url, headers, ...).
    """

    provider = "openai"
    env_key = _ENV_KEY

    def __init__(self, api_key: str | None = None, *, max_tokens_field: str = "max_completion_tokens",
                 **settings: Unpack[_http.ClientSettings]) -> None:
        super().__init__(api_key, **settings)
        self.max_tokens_field = max_tokens_field

    def _request(
        self, model: Model, context: Context, key: str | None, options: StreamOptions
    ) -> str | tuple[str, dict[str, str], dict[str, Any]]:
        base_url = model.base_url or self.base_url
        if not key and not base_url:
            return f"No API key for provider: {model.provider} (set OPENAI_API_KEY or pass api_key)"
        headers = {"content-type": "application/json", "accept": "text/event-stream", **self._headers}
        if key:
            headers["authorization"] = f"Bearer {key}"
        url = (base_url or DEFAULT_OPENAI_BASE_URL).rstrip("/") + "/chat/completions"
        return url, headers, self.build_body(model, context, **options)

    def _reader(self, builder: AssistantBuilder, model: Model) -> _Reader:
        return _Reader(builder, model)

    def build_body(self, model: Model, context: Context, **options: Unpack[StreamOptions]) -> dict[str, Any]:
        """The JSON request body for `stream`'s options (exposed for inspection and tests)."""
        check_options(options, STREAM_OPTION_NAMES, f"{type(self).__name__}.build_body")
        reasoning, session_id = options.get("reasoning"), options.get("session_id")
        request = build_request(model, context, options.get("tools"))
        base_url = model.base_url or self.base_url or DEFAULT_OPENAI_BASE_URL
        official = "api.openai.com" in base_url
        body: dict[str, Any] = {
            "model": model.id,
            "messages": _encode_messages(model, request.system_prompt, request.messages),
            "stream": True,
        }
        if official and session_id and (options.get("cache_retention") or "short") != "none":
            body["prompt_cache_key"] = session_id[:64]
        body["stream_options"] = {"include_usage": True}
        if official:
            body["store"] = False
        body[self.max_tokens_field] = request.output_budget(model, options.get("max_tokens"))
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.get("name"),
                        "description": tool.get("description", ""),
                        "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
                    },
                }
                for tool in request.tools
            ]
        if model.reasoning and reasoning and reasoning != "off":
            body["reasoning_effort"] = "high" if reasoning == "xhigh" else reasoning
        return body


class _Reader:
    """Turns chat-completion chunks into builder calls and events."""

    def __init__(self, builder: AssistantBuilder, model: Model) -> None:
        self.builder = builder
        self.model = model
        self.finish_reason: str | None = None
        self.failure: str | None = None
        self.done = False
        self._current: tuple[str, int] | None = None  # ("text" | "thinking", content index)
        self._calls: dict[Any, int] = {}  # provider tool-call index → content index

    def error_text(self, status: int, body: str) -> str:
        return _error_text(status, body, self.builder.secret)

    def feed(self, sse: _http.SseEvent) -> list[StreamEvent]:
        if sse.data.strip() == "[DONE]":
            self.done = True
            return []
        chunk = _http.parse_json(sse.data)
        if not isinstance(chunk, dict):
            return []
        events: list[StreamEvent] = []
        if chunk.get("error") and not chunk.get("choices"):
            self.failure = _error_object_text(chunk["error"])
            self.done = True
            return events
        if isinstance(chunk.get("id"), str) and "responseId" not in self.builder.message:
            self.builder.set_response_id(chunk["id"])
        choices = chunk.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        usage = chunk.get("usage") or choice.get("usage")
        if isinstance(usage, dict):
            self.builder.set_usage(_usage(self.model, usage))
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta") or {}

        # Reasoning first: proxies that put reasoning and answer in one delta mean them in that order.
        for field in _REASONING_FIELDS:
            thinking = delta.get(field)
            if isinstance(thinking, str) and thinking:
                events.append(self.builder.append_thinking(self._block("thinking", events, field), thinking))
                break
        text = delta.get("content")
        if isinstance(text, str) and text:
            events.append(self.builder.append_text(self._block("text", events), text))
        for call in delta.get("tool_calls") or []:
            self._tool_call_delta(call, events)
        return events

    def _block(self, kind: str, events: list[StreamEvent], signature: str | None = None) -> int:
        if self._current is None or self._current[0] != kind:
            self._end_block(events)
            index = self.builder.begin_text() if kind == "text" else self.builder.begin_thinking(signature)
            self._current = (kind, index)
        return self._current[1]

    def _end_block(self, events: list[StreamEvent]) -> None:
        """The current text or thinking block is over (the protocol has no block end event)."""
        if self._current is not None:
            events.extend(self.builder.end_block(self._current[1]))
            self._current = None

    def _tool_call_delta(self, call: dict[str, Any], events: list[StreamEvent]) -> None:
        key = call.get("index", len(self._calls))
        function = call.get("function") or {}
        index = self._calls.get(key)
        if index is not None and call.get("id") and self.builder.content[index]["id"] != call["id"]:
            index = None  # a server that reuses index 0 for every call
        if index is None:
            self._end_block(events)
            index = self.builder.begin_tool_call(call.get("id") or "", function.get("name") or "")
            self._calls[key] = index
        block = self.builder.content[index]
        if call.get("id") and not block["id"]:
            block["id"] = call["id"]
        if function.get("name") and not block["name"]:
            block["name"] = function["name"]
        if function.get("arguments"):
            self.builder.append_tool_arguments(index, function["arguments"])

    def finish(self) -> list[StreamEvent]:
        if self.failure is not None:
            return [self.builder.fail(self.failure)]
        reason = self.finish_reason
        if reason is None:
            return [self.builder.fail("Stream ended without finish_reason")]
        stop = _STOP_REASONS.get(reason)
        if stop is None:
            return [self.builder.fail(f"Provider finish_reason: {reason}")]
        events: list[StreamEvent] = list(self.builder.end_open_tool_calls())
        events.append(self.builder.finish(stop))
        return events


def _usage(model: Model, raw: dict[str, Any]) -> dict[str, Any]:
    details = raw.get("prompt_tokens_details") or {}
    prompt = raw.get("prompt_tokens") or 0
    # Where providers put cache hits: OpenAI/OpenRouter, DeepSeek, Kimi.
    cache_read = _first_number(details.get("cached_tokens"), raw.get("prompt_cache_hit_tokens"),
                               raw.get("cached_tokens"))
    cache_write = details.get("cache_write_tokens") or 0
    completion_details = raw.get("completion_tokens_details") or {}
    reasoning = completion_details.get("reasoning_tokens") or raw.get("reasoning_tokens") or 0
    return make_usage(
        model,
        input=max(0, prompt - cache_read - cache_write),
        output=raw.get("completion_tokens") or 0,
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=reasoning,
    )


def _first_number(*values: Any) -> int:
    for value in values:
        if value is not None:
            return value
    return 0


def _error_object_text(error: Any) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    return _http.compact(error)


def _error_text(status: int, body: str, secret: str | None = None) -> str:
    data = _http.parse_json(body)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error:
        # pi 1.6.0 prefers the parsed error object over the SDK's "<status> <message>".
        text = f"{status}: {_http.truncate_body(_http.compact(error), secret)}"
        metadata = error.get("metadata")
        raw = metadata.get("raw") if isinstance(metadata, dict) else None
        if isinstance(raw, str) and raw and raw not in text:
            text += "\n" + raw  # OpenRouter puts the upstream provider's own text here
        return text
    if error is not None:
        return f"{status} {_http.compact(error)}"
    if data is not None:
        # The SDK would say "status code (no body)" here; the body is more use to a reader.
        return f"{status} {_http.truncate_body(_http.compact(data), secret)}"
    if body.strip():
        return f"{status} {_http.truncate_body(body, secret)}"
    return f"{status} status code (no body)"


# --- request encoding -------------------------------------------------------------------------

_UNSAFE_ID = re.compile(r"[^a-zA-Z0-9_-]")


def _call_id(model: Model, call_id: str) -> str:
    if "|" in call_id:  # Responses-API ids: "<call_id>|<item id>"
        return _UNSAFE_ID.sub("_", call_id.split("|", 1)[0])[:40]
    return call_id[:40] if model.provider == "openai" else call_id


def _image_part(block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{block.get('mimeType')};base64,{block.get('data')}"}}


def _encode_messages(model: Model, system_prompt: str | None, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if system_prompt:
        role = "developer" if model.reasoning and model.provider == "openai" else "system"
        out.append({"role": role, "content": system_prompt})
    for message in grouped_tool_results(messages):
        if isinstance(message, list):
            images: list[dict[str, Any]] = []
            for result in message:
                blocks = [b for b in result.get("content") or [] if isinstance(b, dict)]
                text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
                has_images = any(b.get("type") == "image" for b in blocks)
                out.append({
                    "role": "tool",
                    "tool_call_id": _call_id(model, str(result.get("toolCallId", ""))),
                    "content": text or ("(image attached below)" if has_images else ""),
                })
                images.extend(_image_part(b) for b in blocks if b.get("type") == "image")
            if images:
                # The tool role carries text only; images travel in a following user message.
                caption = {"type": "text", "text": "Images returned by the tools above:"}
                out.append({"role": "user", "content": [caption, *images]})
            continue
        role = message.get("role")
        if role == "user":
            content = message.get("content")
            if isinstance(content, str):
                out.append({"role": "user", "content": content})
            else:
                parts = [
                    {"type": "text", "text": b.get("text", "")} if b.get("type") == "text" else _image_part(b)
                    for b in content or []
                    if isinstance(b, dict) and b.get("type") in ("text", "image")
                ]
                if parts:
                    out.append({"role": "user", "content": parts})
        elif role == "assistant":
            encoded = _encode_assistant(model, message)
            if encoded is not None:
                out.append(encoded)
    return out


def _encode_assistant(model: Model, message: dict[str, Any]) -> dict[str, Any] | None:
    blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text" and (b.get("text") or "").strip())
    encoded: dict[str, Any] = {"role": "assistant", "content": text or None}
    thinking = [b for b in blocks if b.get("type") == "thinking" and (b.get("thinking") or "").strip()]
    if thinking and thinking[0].get("thinkingSignature") in _REASONING_FIELDS:
        # Servers that stream reasoning in a side field accept it back in the same field.
        encoded[thinking[0]["thinkingSignature"]] = "\n".join(b["thinking"] for b in thinking)
    calls = [b for b in blocks if b.get("type") == "toolCall"]
    if calls:
        encoded["tool_calls"] = [
            {
                "id": _call_id(model, str(call.get("id", ""))),
                "type": "function",
                "function": {"name": call.get("name", ""), "arguments": compact_json(call.get("arguments") or {})},
            }
            for call in calls
        ]
    if not text and not calls:
        return None  # providers reject assistant messages with neither content nor tool calls
    return encoded
