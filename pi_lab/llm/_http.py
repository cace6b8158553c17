"""Streaming HTTP plumbing shared by the provider clients: cancellation, SSE, failure texts.

A request either yields SSE events or raises one of three exceptions, each carrying the text
that becomes the assistant message's `errorMessage`:

* `HttpStatusFailure` — the server answered with a status ≥ 400 (text formatted per provider);
* `TransportFailure` — no connection, a timeout, or the connection dropped mid-stream; the
  texts contain words (`Connection error`, `timed out`, `terminated`) that
  `is_retryable_assistant_error` accepts, as pi's own transport errors do;
* `Cancelled` — the caller's cancel flag was set.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import httpx
import orjson

from ._assistant import AssistantBuilder, Clock, now_ms
from .protocol import Cancel, CompleteFromStream, StreamEvent

T = TypeVar("T")

# How often a cancel flag without an awaitable wait() is polled, in seconds.
_CANCEL_POLL = 0.05
# pi truncates provider error bodies to this many characters.
MAX_ERROR_BODY_CHARS = 4000
DEFAULT_TIMEOUT = httpx.Timeout(connect=30.0, read=600.0, write=60.0, pool=30.0)


class KeyedClient(CompleteFromStream):
    """What both provider clients share: the key, its source, and a repr that never shows it.

    A key given as an argument is used for every model; the environment variable only for
    models of the client's own provider, so a key never leaks to another provider's server.
    """

    provider = ""
    env_key = ""

    def __init__(self, api_key: str | None, base_url: str | None, headers: dict[str, str] | None,
                 timeout: httpx.Timeout, clock: Clock | None) -> None:
        self._api_key = api_key
        self.base_url = base_url
        self._headers = dict(headers or {})
        self.timeout = timeout
        self._clock = clock or now_ms

    def __repr__(self) -> str:
        source = "given" if self._api_key else f"from {self.env_key}" if os.environ.get(self.env_key) else "none"
        return f"{type(self).__name__}(base_url={self.base_url!r}, api_key=<{source}>)"

    def _resolve_key(self, model: Any) -> str | None:
        if self._api_key:
            return self._api_key
        if model.provider != self.provider:
            return None
        return os.environ.get(self.env_key) or None


class Cancelled(Exception):
    pass


class TransportFailure(Exception):
    pass


class HttpStatusFailure(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


async def race(awaitable: Awaitable[T], cancel: Cancel | None) -> T:
    """Await `awaitable`, abandoning it (and raising `Cancelled`) as soon as `cancel` is set."""
    if cancel is None:
        return await awaitable
    if cancel.is_set():
        _discard(awaitable)
        raise Cancelled
    task = asyncio.ensure_future(awaitable)
    while True:
        done, _ = await asyncio.wait({task}, timeout=_CANCEL_POLL)
        if done:
            return task.result()
        if cancel.is_set():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise Cancelled


def _discard(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()


@dataclass(frozen=True, slots=True)
class SseEvent:
    event: str | None
    data: str


async def post_sse(
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any],
    cancel: Cancel | None,
    timeout: httpx.Timeout,
) -> AsyncIterator[SseEvent]:
    """POST `body` as JSON and yield the server-sent events of the streamed answer."""
    async with httpx.AsyncClient(timeout=timeout) as http:
        request = http.build_request("POST", url, headers=headers, content=orjson.dumps(body))
        try:
            response = await race(http.send(request, stream=True), cancel)
        except httpx.TimeoutException as exc:
            raise TransportFailure(f"Request timed out: {_describe(exc)}") from exc
        except httpx.TransportError as exc:
            raise TransportFailure(f"Connection error: {_describe(exc)}") from exc
        try:
            if response.status_code >= 400:
                raw = await race(response.aread(), cancel)
                raise HttpStatusFailure(response.status_code, raw.decode("utf-8", "replace"))
            async for event in _parse_sse(response.aiter_lines(), cancel):
                yield event
        except httpx.TimeoutException as exc:
            raise TransportFailure(f"Stream timed out: {_describe(exc)}") from exc
        except httpx.TransportError as exc:
            # Body cut off mid-stream (peer closed, reset); fetch calls this "terminated".
            raise TransportFailure(f"terminated: {_describe(exc)}") from exc
        finally:
            await response.aclose()


class Reader(Protocol):
    """Turns one provider's SSE events into builder calls; see `stream_reply`."""

    done: bool

    def feed(self, event: SseEvent) -> list[StreamEvent]: ...

    def finish(self) -> list[StreamEvent]: ...

    def error_text(self, status: int, body: str) -> str: ...


async def stream_reply(
    builder: AssistantBuilder,
    reader: Reader,
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any],
    cancel: Cancel | None,
    timeout: httpx.Timeout,
    secret: str | None,
) -> AsyncIterator[StreamEvent]:
    """Send one streamed request and yield its events, ending with `StreamDone`/`StreamError`.

    The reader sees every SSE event until it says `done`, then `finish` closes the message.
    HTTP errors, transport failures and cancellation end it instead; `secret` (the API key) is
    removed from any text a server echoed back.
    """
    try:
        events = post_sse(url, headers=headers, body=body, cancel=cancel, timeout=timeout)
        async with contextlib.aclosing(events):
            async for sse in events:
                for event in reader.feed(sse):
                    yield event
                if reader.done:
                    break
    except Cancelled:
        yield builder.fail("Request was aborted", aborted=True)
        return
    except HttpStatusFailure as exc:
        yield builder.fail(redact(reader.error_text(exc.status, exc.body), secret))
        return
    except TransportFailure as exc:
        yield builder.fail(redact(str(exc), secret))
        return
    for event in reader.finish():
        yield event


async def _parse_sse(lines: AsyncIterator[str], cancel: Cancel | None) -> AsyncIterator[SseEvent]:
    event: str | None = None
    data: list[str] = []
    iterator = aiter(lines)
    while True:
        try:
            line = await race(anext(iterator), cancel)
        except StopAsyncIteration:
            break
        if line == "":
            if data:
                yield SseEvent(event, "\n".join(data))
            event, data = None, []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
    if data:
        yield SseEvent(event, "\n".join(data))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


def truncate_body(text: str) -> str:
    text = text.strip()
    if len(text) <= MAX_ERROR_BODY_CHARS:
        return text
    return f"{text[:MAX_ERROR_BODY_CHARS]}... [truncated {len(text) - MAX_ERROR_BODY_CHARS} chars]"


def parse_json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def compact(value: Any) -> str:
    return orjson.dumps(value).decode()


def redact(text: str, secret: str | None) -> str:
    """Remove an API key from text that a server may have echoed back."""
    if secret and len(secret) >= 4 and secret in text:
        return text.replace(secret, "***")
    return text
