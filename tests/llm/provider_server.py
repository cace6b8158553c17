"""A loopback HTTP server that speaks both provider protocols, scripted per request.

    with ProviderServer() as server:
        server.push(Text("Hello"), anthropic_overflow(), ToolUse("read", {"path": "a.py"}))
        client = OpenAIClient("test-key", base_url=server.openai_base_url)
        ...
        server.requests[0].body   # the JSON the client sent

`POST /v1/chat/completions` answers in the OpenAI chat-completions streaming format,
`POST /v1/messages` in the Anthropic Messages streaming format. Each request takes the next
scripted reply (any reply works for both protocols); with an empty script the answer is
`Text("ok")`. Streams use chunked transfer encoding, so `Drop` (closing the socket without the
final chunk) looks to the client exactly like a connection lost mid-answer.

Reusable by later test suites (the agent loop): import `ProviderServer` and the reply types.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

__all__ = [
    "Drop",
    "EchoHeaders",
    "EndEarly",
    "HttpError",
    "KeepAlive",
    "PartialFailure",
    "Pieces",
    "ProviderServer",
    "RecordedRequest",
    "Silent",
    "Stall",
    "StreamFailure",
    "Text",
    "Thinking",
    "ToolUse",
    "Trickle",
    "Truncated",
    "Usage",
    "anthropic_overflow",
    "anthropic_overloaded",
    "anthropic_rate_limit",
    "openai_context_window_overflow",
    "openai_overflow",
    "openai_rate_limit",
]


# --- scripted replies ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    input: int = 12
    output: int = 5
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0


@dataclass(frozen=True)
class Text:
    """A normal answer, streamed in `chunks` deltas. It ends with `finish_reason: stop` /
    `stop_reason: end_turn`, or with the wire value given in `stop_reason` (e.g. `refusal`)."""

    text: str
    chunks: int = 3
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None


@dataclass(frozen=True)
class Thinking:
    """Reasoning then text. Anthropic: a signed thinking block; OpenAI: `reasoning_content`."""

    thinking: str
    text: str
    signature: str = "sig-abc123"
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class ToolUse:
    """A tool call (arguments streamed as JSON fragments), optionally after some text."""

    name: str
    arguments: dict[str, Any]
    id: str = "call_1"
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    raw_arguments: str | None = None  # send this text instead of the JSON of `arguments`


@dataclass(frozen=True)
class Truncated:
    """An answer cut by the output cap: `finish_reason: length` / `stop_reason: max_tokens`."""

    text: str
    usage: Usage = field(default_factory=lambda: Usage(output=16))


@dataclass(frozen=True)
class HttpError:
    """A non-2xx answer with a JSON (dict) or raw (str) body, and extra response headers
    (e.g. `{"retry-after": "30"}`)."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EchoHeaders:
    """A non-2xx answer whose error message quotes every request header (as some proxies do);
    with `in_headers`, the request headers come back as response headers `x-echo-<name>`
    instead (what httpcore logs at DEBUG)."""

    status: int = 401
    in_headers: bool = False


@dataclass(frozen=True)
class Pieces:
    """An answer streamed exactly as cut: `blocks` is a sequence of `(kind, pieces)` with kind
    `text`, `thinking` or `tool` (the pieces of a `read` call's argument JSON), each piece one
    delta. It ends with `stop` / `toolUse`, or with an in-stream error `error` when given."""

    blocks: tuple[tuple[str, tuple[str, ...]], ...]
    error: str | None = None


@dataclass(frozen=True)
class PartialFailure:
    """Stream `text` (in `chunks` deltas), then an in-stream error with `message`."""

    text: str
    message: str
    chunks: int = 5
    error_type: str = "api_error"


@dataclass(frozen=True)
class KeepAlive:
    """A 200 stream that only keeps the connection warm: an SSE comment (`: ping`), or with
    `ping_events` Anthropic's `event: ping`, every `interval` s for up to `seconds`, then `text`."""

    seconds: float = 10.0
    interval: float = 0.05
    ping_events: bool = False
    text: str = "late"


@dataclass(frozen=True)
class Silent:
    """Accept the request, then send nothing at all (not even headers) for up to `seconds`."""

    seconds: float = 10.0


@dataclass(frozen=True)
class Trickle:
    """A healthy but slow answer: `text` in `chunks` deltas, `interval` s apart."""

    text: str
    chunks: int = 5
    interval: float = 0.1


@dataclass(frozen=True)
class Drop:
    """Stream `text`, then close the socket without ending the chunked body."""

    text: str = "partial answer"


@dataclass(frozen=True)
class EndEarly:
    """Stream `text`, then end the body cleanly but without any terminal event."""

    text: str = "partial answer"


@dataclass(frozen=True)
class StreamFailure:
    """An error reported inside a 200 stream (Anthropic `event: error`, OpenAI `{"error": …}`)."""

    error_type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass(frozen=True)
class Stall:
    """Send the first event, then wait (up to `seconds`) before finishing with `text`."""

    seconds: float = 10.0
    text: str = "late"


Reply = Union[Text, Thinking, ToolUse, Truncated, HttpError, Drop, EndEarly, StreamFailure, Stall, EchoHeaders,
              PartialFailure, KeepAlive, Trickle, Silent, Pieces]


def openai_overflow(limit: int = 128000, used: int = 130512) -> HttpError:
    return HttpError(400, {"error": {
        "message": f"This model's maximum context length is {limit} tokens. However, your messages "
                   f"resulted in {used} tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})


def openai_context_window_overflow() -> HttpError:
    return HttpError(400, {"error": {
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}})


def anthropic_overflow(tokens: int = 213000, limit: int = 200000) -> HttpError:
    return HttpError(400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": f"prompt is too long: {tokens} tokens > {limit} maximum"}})


def openai_rate_limit() -> HttpError:
    return HttpError(429, {"error": {
        "message": "Rate limit reached for requests per min (RPM): Limit 3, Used 3. Please try again in 20s.",
        "type": "requests", "code": "rate_limit_exceeded"}})


def anthropic_rate_limit() -> HttpError:
    return HttpError(429, {"type": "error", "error": {
        "type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}})


def anthropic_overloaded() -> HttpError:
    return HttpError(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


# --- recording ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    at: float = 0.0  # time.monotonic() when the request arrived


# --- the server ---------------------------------------------------------------------------------


class ProviderServer:
    """Threaded HTTP server on 127.0.0.1 (a free port). Use as a context manager."""

    def __init__(self) -> None:
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.release = threading.Event()  # ends every Stall early
        self._httpd = _QuietServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="provider-server", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def _next(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        with self._lock:
            self.requests.append(RecordedRequest(path, headers, body, time.monotonic()))
            return self._script.pop(0) if self._script else Text("ok")

    def start(self) -> ProviderServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ProviderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients close connections abruptly in cancellation and drop tests; that is expected.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _make_handler(server: ProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            if self.path.endswith("/chat/completions"):
                renderer: _Renderer = _OpenAI(body)
            elif self.path.endswith("/messages"):
                renderer = _Anthropic(body)
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            reply = server._next(self.path, headers, body)
            if isinstance(reply, EchoHeaders) and reply.in_headers:
                reply = HttpError(reply.status, {"type": "error", "error": {
                    "type": "authentication_error", "message": "invalid credentials"}},
                    {f"x-echo-{k}": v for k, v in headers.items()})
            elif isinstance(reply, EchoHeaders):
                quoted = "; ".join(f"{k}: {v}" for k, v in headers.items())
                reply = HttpError(reply.status, {"type": "error", "error": {
                    "type": "authentication_error", "message": f"invalid credentials (received headers: {quoted})"}})
            try:
                self._answer(renderer, reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (cancellation tests)

        def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = (json.dumps(body) if not isinstance(body, str) else body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _begin_stream(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()

        def _chunk(self, text: str) -> None:
            data = text.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _end_stream(self) -> None:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _answer(self, renderer: _Renderer, reply: Reply) -> None:
            if isinstance(reply, Silent):
                server.release.wait(reply.seconds)
                reply = Text("late")
            if isinstance(reply, HttpError):
                self._send_json(reply.status, reply.body, reply.headers)
                return
            self._begin_stream()
            if isinstance(reply, Drop):
                for event in renderer.opening() + renderer.text(reply.text, 2):
                    self._chunk(event)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if isinstance(reply, EndEarly):
                for event in renderer.opening() + renderer.text(reply.text, 2):
                    self._chunk(event)
                self._end_stream()
                return
            if isinstance(reply, Stall):
                for event in renderer.opening():
                    self._chunk(event)
                server.release.wait(reply.seconds)
                for event in renderer.text(reply.text, 1) + renderer.closing("stop", Usage()):
                    self._chunk(event)
                self._end_stream()
                return
            if isinstance(reply, KeepAlive):
                ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n" if reply.ping_events else ": ping\n\n"
                end = time.monotonic() + reply.seconds
                while time.monotonic() < end and not server.release.wait(reply.interval):
                    self._chunk(ping)
                for event in renderer.opening() + renderer.text(reply.text, 1) + renderer.closing("stop", Usage()):
                    self._chunk(event)
                self._end_stream()
                return
            if isinstance(reply, Trickle):
                events = renderer.opening() + renderer.text(reply.text, reply.chunks) + renderer.closing("stop", Usage())
                for event in events:
                    self._chunk(event)
                    time.sleep(reply.interval)
                self._end_stream()
                return
            for event in renderer.render(reply):
                self._chunk(event)
            self._end_stream()

    return Handler


def _split(text: str, parts: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(parts, 1)))
    return [text[i:i + size] for i in range(0, len(text), size)]


class _Renderer:
    def opening(self) -> list[str]: ...
    def text(self, text: str, chunks: int) -> list[str]: ...
    def closing(self, stop: str, usage: Usage) -> list[str]: ...
    def render(self, reply: Reply) -> list[str]: ...


class _OpenAI(_Renderer):
    def __init__(self, request: Any) -> None:
        self.model = request.get("model", "test-model") if isinstance(request, dict) else "test-model"
        options = request.get("stream_options") if isinstance(request, dict) else None
        self.include_usage = bool(options and options.get("include_usage"))

    def _data(self, choice: dict[str, Any] | None = None, **extra: Any) -> str:
        chunk = {"id": "chatcmpl-test-1", "object": "chat.completion.chunk", "created": 1, "model": self.model,
                 "choices": [choice] if choice is not None else [], **extra}
        return f"data: {json.dumps(chunk)}\n\n"

    def _delta(self, delta: dict[str, Any], finish: str | None = None) -> str:
        return self._data({"index": 0, "delta": delta, "finish_reason": finish})

    def opening(self) -> list[str]:
        return [self._delta({"role": "assistant", "content": ""})]

    def text(self, text: str, chunks: int) -> list[str]:
        return [self._delta({"content": piece}) for piece in _split(text, chunks)]

    def closing(self, stop: str, usage: Usage, raw: str | None = None) -> list[str]:
        finish = raw or {"stop": "stop", "length": "length", "toolUse": "tool_calls"}[stop]
        events = [self._delta({}, finish)]
        if self.include_usage:
            raw = {"prompt_tokens": usage.input + usage.cache_read, "completion_tokens": usage.output,
                   "total_tokens": usage.input + usage.cache_read + usage.output,
                   "prompt_tokens_details": {"cached_tokens": usage.cache_read},
                   "completion_tokens_details": {"reasoning_tokens": usage.reasoning}}
            events.append(self._data(None, usage=raw))
        return events + ["data: [DONE]\n\n"]

    def render(self, reply: Reply) -> list[str]:
        events = self.opening()
        if isinstance(reply, Text):
            return events + self.text(reply.text, reply.chunks) + self.closing("stop", reply.usage, reply.stop_reason)
        if isinstance(reply, Truncated):
            return events + self.text(reply.text, 2) + self.closing("length", reply.usage)
        if isinstance(reply, Thinking):
            events += [self._delta({"reasoning_content": piece}) for piece in _split(reply.thinking, 2)]
            return events + self.text(reply.text, 2) + self.closing("stop", reply.usage)
        if isinstance(reply, ToolUse):
            events += self.text(reply.text, 1)
            arguments = reply.raw_arguments if reply.raw_arguments is not None else json.dumps(reply.arguments)
            events.append(self._delta({"tool_calls": [{"index": 0, "id": reply.id, "type": "function",
                                                       "function": {"name": reply.name, "arguments": ""}}]}))
            events += [self._delta({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                       for piece in _split(arguments, 3)]
            return events + self.closing("toolUse", reply.usage)
        if isinstance(reply, StreamFailure):
            return events + [f"data: {json.dumps({'error': {'message': reply.message, 'type': reply.error_type}})}\n\n"]
        if isinstance(reply, PartialFailure):
            events += self.text(reply.text, reply.chunks)
            return events + [f"data: {json.dumps({'error': {'message': reply.message, 'type': reply.error_type}})}\n\n"]
        if isinstance(reply, Pieces):
            calls = 0
            for kind, pieces in reply.blocks:
                if kind == "tool":
                    events.append(self._delta({"tool_calls": [{"index": calls, "id": f"call_{calls}", "type": "function",
                                                               "function": {"name": "read", "arguments": ""}}]}))
                    events += [self._delta({"tool_calls": [{"index": calls, "function": {"arguments": piece}}]})
                               for piece in pieces]
                    calls += 1
                else:
                    field = "content" if kind == "text" else "reasoning_content"
                    events += [self._delta({field: piece}) for piece in pieces]
            if reply.error is not None:
                return events + [f"data: {json.dumps({'error': {'message': reply.error, 'type': 'api_error'}})}\n\n"]
            return events + self.closing("toolUse" if calls else "stop", Usage())
        raise TypeError(f"cannot render {reply!r}")


class _Anthropic(_Renderer):
    def __init__(self, request: Any) -> None:
        self.model = request.get("model", "test-model") if isinstance(request, dict) else "test-model"
        self.block = 0

    @staticmethod
    def _event(name: str, payload: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n"

    def opening(self, usage: Usage | None = None) -> list[str]:
        usage = usage or Usage()
        message = {"id": "msg_test_1", "type": "message", "role": "assistant", "model": self.model, "content": [],
                   "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": usage.input, "cache_creation_input_tokens": usage.cache_write,
                             "cache_read_input_tokens": usage.cache_read, "output_tokens": 1}}
        return [self._event("message_start", {"message": message}), "event: ping\ndata: {\"type\": \"ping\"}\n\n"]

    def _block(self, start: dict[str, Any], deltas: list[dict[str, Any]]) -> list[str]:
        index, self.block = self.block, self.block + 1
        events = [self._event("content_block_start", {"index": index, "content_block": start})]
        events += [self._event("content_block_delta", {"index": index, "delta": d}) for d in deltas]
        return events + [self._event("content_block_stop", {"index": index})]

    def text(self, text: str, chunks: int) -> list[str]:
        if not text:
            return []
        return self._block({"type": "text", "text": ""},
                           [{"type": "text_delta", "text": piece} for piece in _split(text, chunks)])

    def closing(self, stop: str, usage: Usage, raw: str | None = None) -> list[str]:
        reason = raw or {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}[stop]
        delta_usage: dict[str, Any] = {"output_tokens": usage.output}
        if usage.reasoning:
            delta_usage["output_tokens_details"] = {"thinking_tokens": usage.reasoning}
        return [self._event("message_delta", {"delta": {"stop_reason": reason, "stop_sequence": None},
                                              "usage": delta_usage}),
                self._event("message_stop", {})]

    def render(self, reply: Reply) -> list[str]:
        usage = getattr(reply, "usage", None)
        events = self.opening(usage)
        if isinstance(reply, Text):
            return events + self.text(reply.text, reply.chunks) + self.closing("stop", reply.usage, reply.stop_reason)
        if isinstance(reply, Truncated):
            return events + self.text(reply.text, 2) + self.closing("length", reply.usage)
        if isinstance(reply, Thinking):
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _split(reply.thinking, 2)]
            deltas += [{"type": "signature_delta", "signature": reply.signature}]
            events += self._block({"type": "thinking", "thinking": ""}, deltas)
            return events + self.text(reply.text, 2) + self.closing("stop", reply.usage)
        if isinstance(reply, ToolUse):
            events += self.text(reply.text, 1)
            raw = reply.raw_arguments if reply.raw_arguments is not None else json.dumps(reply.arguments)
            pieces = _split(raw, 3)
            events += self._block({"type": "tool_use", "id": reply.id, "name": reply.name, "input": {}},
                                  [{"type": "input_json_delta", "partial_json": p} for p in pieces])
            return events + self.closing("toolUse", reply.usage)
        if isinstance(reply, StreamFailure):
            return events + [self._event("error", {"error": {"type": reply.error_type, "message": reply.message}})]
        if isinstance(reply, PartialFailure):
            events += self.text(reply.text, reply.chunks)
            return events + [self._event("error", {"error": {"type": reply.error_type, "message": reply.message}})]
        if isinstance(reply, Pieces):
            calls = 0
            for kind, pieces in reply.blocks:
                if kind == "tool":
                    events += self._block({"type": "tool_use", "id": f"call_{calls}", "name": "read", "input": {}},
                                          [{"type": "input_json_delta", "partial_json": p} for p in pieces])
                    calls += 1
                elif kind == "thinking":
                    events += self._block({"type": "thinking", "thinking": ""},
                                          [{"type": "thinking_delta", "thinking": p} for p in pieces]
                                          + [{"type": "signature_delta", "signature": "sig"}])
                else:
                    events += self._block({"type": "text", "text": ""},
                                          [{"type": "text_delta", "text": p} for p in pieces])
            if reply.error is not None:
                return events + [self._event("error", {"error": {"type": "api_error", "message": reply.error}})]
            return events + self.closing("toolUse" if calls else "stop", Usage())
        raise TypeError(f"cannot render {reply!r}")
