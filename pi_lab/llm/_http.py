"""Streaming HTTP plumbing shared by the provider clients: cancellation, SSE, failure texts.

A request either yields SSE events or raises one of these exceptions, each carrying the text
that becomes the assistant message's `errorMessage`:

* `HttpStatusFailure` — the server answered with a status ≥ 400 (text formatted per provider);
* `TransportFailure` — no connection, a timeout, or the connection dropped mid-stream; the
  texts contain words (`Connection error`, `timed out`, `terminated`) that
  `is_retryable_assistant_error` accepts, as pi's own transport errors do;
* `Cancelled` (protocol.py) — the caller's cancel flag was set;
* any other `ProviderFailure` — the request cannot be sent as it is (a header HTTP cannot carry).

Every call has two limits of its own besides httpx's socket timeouts: an overall `deadline`
and an `idle_timeout` between events. Keep-alives (SSE comments, Anthropic `ping` events) do not
count as events, so a server that only keeps the connection warm still ends at the idle limit.
Both end the message with a retryable `... timeout ...` error text.

Every text that came from the server is redacted (`redact.py`) before it is cut to
`MAX_ERROR_BODY_CHARS` or stored: a key that straddles the cut must not leave its first half.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import email.utils
import math
import os
import re
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar

import httpx
import orjson

from pi_lab.errors import PiLabError

from ._assistant import AssistantBuilder, Clock, now_ms
from .keys import InvalidApiKey, clean_api_key, hold_key
from .protocol import (
    ABORTED_TEXT,
    Cancel,
    Cancelled,
    CompleteFromStream,
    Context,
    StreamEvent,
    StreamOptions,
    check_options,
)
from .redact import redact

if TYPE_CHECKING:  # annotations only; typing has Unpack from 3.11
    from typing_extensions import Unpack

T = TypeVar("T")

# How often a cancel flag without an awaitable wait() is polled, in seconds.
_CANCEL_POLL = 0.05
# pi truncates provider error bodies to this many characters.
MAX_ERROR_BODY_CHARS = 4000
DEFAULT_TIMEOUT = httpx.Timeout(connect=30.0, read=600.0, write=60.0, pool=30.0)
# The longest silence (no event other than keep-alives) a call may have, in seconds: pi's own
# HTTP idle timeout (`httpIdleTimeoutMs`, 5 minutes), because a reasoning model that does not
# stream its reasoning can be silent that long before its first token, and a healthy call cut
# short would be retried at full cost.
DEFAULT_IDLE_TIMEOUT = 300.0
# The longest a whole call may take, in seconds: room for the largest answers models give
# (128k output tokens at ~40 tokens/s is under an hour) while bounding every call.
DEFAULT_DEADLINE = 3600.0


class ClientSettings(TypedDict, total=False):
    """The keyword settings both provider clients take (defaults: `KeyedClient`)."""

    base_url: str | None
    headers: dict[str, str] | None
    timeout: httpx.Timeout
    clock: Clock | None
    idle_timeout: float | None
    deadline: float | None


_CLIENT_SETTING_NAMES = frozenset(ClientSettings.__annotations__)


class KeyedClient(CompleteFromStream):
    """What both provider clients share: the key, its source, and a repr that never shows it.

    A key given as an argument is used for every model; the environment variable only for
    models of the client's own provider, so a key never leaks to another provider's server.
    Either is stripped of surrounding whitespace and checked (`keys.clean_api_key`): a bad
    argument raises `InvalidApiKey` here, a bad environment variable ends the message with that
    error when a request needs it. While the client holds a key, the httpx and httpcore loggers
    redact it (`keys.hold_key`); `close()`, or the client being collected, gives that back.

    Settings (keywords): `base_url` (else the model's, else the provider's), extra `headers`,
    httpx `timeout` (`DEFAULT_TIMEOUT`), `clock` (ms since the epoch), `idle_timeout` and
    `deadline` in seconds (`DEFAULT_IDLE_TIMEOUT`, `DEFAULT_DEADLINE`; None or 0 turns one off).
    """

    provider = ""
    env_key = ""

    def __init__(self, api_key: str | None = None, **settings: Unpack[ClientSettings]) -> None:
        check_options(settings, _CLIENT_SETTING_NAMES, f"{type(self).__name__}.__init__")
        self._api_key = clean_api_key(api_key, "the api_key argument")
        # Not a method of self: the finalizer must not keep the client alive.
        self._log_guard = weakref.finalize(self, hold_key(self._api_key))
        self.base_url = settings.get("base_url")
        self._headers = dict(settings.get("headers") or {})
        self.timeout = settings.get("timeout", DEFAULT_TIMEOUT)
        self._clock = settings.get("clock") or now_ms
        self.idle_timeout = settings.get("idle_timeout", DEFAULT_IDLE_TIMEOUT)
        self.deadline = settings.get("deadline", DEFAULT_DEADLINE)

    def __repr__(self) -> str:
        source = "given" if self._api_key else f"from {self.env_key}" if os.environ.get(self.env_key) else "none"
        return f"{type(self).__name__}(base_url={self.base_url!r}, api_key=<{source}>)"

    def close(self) -> None:
        """Stop redacting this client's key in the httpx/httpcore logs (requests still work,
        and hold their key in the logs while they run)."""
        self._log_guard()

    def _resolve_key(self, model: Any) -> str | None:
        """The key for `model`, or None; `InvalidApiKey` for an unusable environment variable."""
        if self._api_key:
            return self._api_key
        if model.provider != self.provider:
            return None
        return clean_api_key(os.environ.get(self.env_key), self.env_key)

    async def _stream(self, model: Any, context: Context, options: StreamOptions) -> AsyncIterator[StreamEvent]:
        """`ModelClient.stream` for both providers: only the request and the reader differ.

        A missing key ends the message at once, before anything is sent.
        """
        builder = AssistantBuilder(model, self._clock())
        yield builder.start()
        try:
            key = self._resolve_key(model)
        except InvalidApiKey as exc:
            yield builder.fail(str(exc))  # like any provider error: the agent shows it on the message
            return
        request = self._request(model, context, key, options)
        if isinstance(request, str):
            yield builder.fail(request)
            return
        url, headers, body = request
        # A key from the environment is held in the logs for the request; an argument already is.
        release = hold_key(key)
        try:
            async for event in stream_reply(
                builder, self._reader(builder, model), url, headers=headers, body=body,
                cancel=options.get("cancel"), timeout=self.timeout, secret=key,
                limits=(self.idle_timeout, self.deadline), clock=self._clock,
            ):
                yield event
        finally:
            release()

    def _request(
        self, model: Any, context: Context, key: str | None, options: StreamOptions
    ) -> str | tuple[str, dict[str, str], dict[str, Any]]:
        """The provider's `(url, headers, body)`, or the error text when it cannot be sent."""
        raise NotImplementedError

    def _reader(self, builder: AssistantBuilder, model: Any) -> Reader:
        raise NotImplementedError


class ProviderFailure(PiLabError):
    """A request that did not produce an answer; its text becomes the message's ``errorMessage``."""


class TransportFailure(ProviderFailure):
    """No connection, a timeout, or a connection that dropped mid-stream."""


class HttpStatusFailure(ProviderFailure):
    def __init__(self, status: int, body: str, headers: httpx.Headers | None = None) -> None:
        super().__init__(f"HTTP {status}")  # never the body: it may hold the key
        self.status = status
        self.body = body
        self.headers = headers if headers is not None else httpx.Headers()


class Limits:
    """The deadline and idle limit of one call, measured on the event loop's monotonic clock."""

    __slots__ = ("_deadline_at", "_idle", "_idle_from", "deadline", "idle")

    def __init__(self, idle: float | None, deadline: float | None) -> None:
        now = asyncio.get_running_loop().time()
        self.idle = idle or None
        self.deadline = deadline or None
        self._idle = self.idle
        self._deadline_at = now + self.deadline if self.deadline else None
        self._idle_from = now

    def progress(self) -> None:
        """An event arrived: the idle limit starts again."""
        self._idle_from = asyncio.get_running_loop().time()

    def remaining(self) -> float | None:
        now = asyncio.get_running_loop().time()
        left: float | None = None
        if self._deadline_at is not None:
            left = self._deadline_at - now
        if self._idle is not None:
            idle_left = self._idle_from + self._idle - now
            left = idle_left if left is None else min(left, idle_left)
        return left

    def expired(self) -> TransportFailure:
        now = asyncio.get_running_loop().time()
        if self._deadline_at is not None and now >= self._deadline_at - 1e-3:
            return TransportFailure(f"Request timeout: no complete answer within the {self.deadline:g} s deadline")
        return TransportFailure(f"Stream idle timeout: no event from the provider for {self.idle:g} s")


async def race(awaitable: Awaitable[T], cancel: Cancel | None, limits: Limits | None = None) -> T:
    """Await `awaitable`, abandoning it as soon as `cancel` is set (`Cancelled`) or a limit of
    `limits` runs out (`TransportFailure` with a timeout text)."""
    if cancel is None and limits is None:
        return await awaitable
    if cancel is None:
        assert limits is not None
        left = limits.remaining()
        if left is None:
            return await awaitable
        if left <= 0:
            _discard(awaitable)
            raise limits.expired()
        # No flag to poll: a plain timeout scope, no task per awaited line. asyncio.timeout is
        # Python 3.11's; on 3.10 (supported) wait_for does the same with one task.
        timeout = getattr(asyncio, "timeout", None)
        try:
            if timeout is None:
                return await asyncio.wait_for(awaitable, left)
            async with timeout(left):
                return await awaitable
        except (TimeoutError, asyncio.TimeoutError):
            raise limits.expired() from None
    if cancel is not None and cancel.is_set():
        _discard(awaitable)
        raise Cancelled
    task = asyncio.ensure_future(awaitable)
    try:
        while True:
            wait = _CANCEL_POLL if cancel is not None else None
            left = limits.remaining() if limits is not None else None
            if left is not None:
                if left <= 0:
                    assert limits is not None
                    raise limits.expired()
                wait = left if wait is None else min(wait, left)
            done, _ = await asyncio.wait({task}, timeout=wait)
            if done:
                return task.result()
            if cancel is not None and cancel.is_set():
                raise Cancelled
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


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
    limits: Limits | None = None,
) -> AsyncGenerator[SseEvent, None]:
    """POST `body` as JSON and yield the server-sent events of the streamed answer."""
    async with httpx.AsyncClient(timeout=timeout) as http:
        try:
            request = http.build_request("POST", url, headers=headers, content=orjson.dumps(body))
        except UnicodeEncodeError as exc:
            # A header (the key is checked before; this is one of the caller's `headers`) that
            # HTTP cannot carry. Never quote it: `exc.object` is the whole value.
            raise ProviderFailure(f"Cannot send the request: a header value has a non-ASCII character "
                                  f"(U+{ord(exc.object[exc.start]):04X})") from None
        try:
            response = await race(http.send(request, stream=True), cancel, limits)
        except httpx.TimeoutException as exc:
            raise TransportFailure(f"Request timed out: {_describe(exc)}") from exc
        except httpx.TransportError as exc:
            raise TransportFailure(f"Connection error: {_describe(exc)}") from exc
        try:
            if response.status_code >= 400:
                raw = await race(response.aread(), cancel, limits)
                raise HttpStatusFailure(response.status_code, raw.decode("utf-8", "replace"), response.headers)
            async for event in _parse_sse(response.aiter_lines(), cancel, limits):
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
    limits: tuple[float | None, float | None] | None = None,
    clock: Clock | None = None,
) -> AsyncIterator[StreamEvent]:
    """Send one streamed request and yield its events, ending with `StreamDone`/`StreamError`.

    The reader sees every SSE event until it says `done`, then `finish` closes the message.
    HTTP errors, transport failures, a limit running out (`limits` = idle seconds, deadline
    seconds) and cancellation end it instead. `secret` (the API key) is removed from every text
    a server sent back; the builder must hold the same secret (it redacts streamed content).
    `clock` (ms since the epoch) dates a `Retry-After` given as an HTTP date.
    """
    builder.secret = secret
    timer = Limits(*limits) if limits is not None else None
    failure: dict[str, Any] | None = None  # the arguments of `builder.fail`, when it failed
    try:
        events = post_sse(url, headers=headers, body=body, cancel=cancel, timeout=timeout, limits=timer)
        async with contextlib.aclosing(events):
            async for sse in events:
                if timer is not None and sse.event != "ping":
                    timer.progress()  # Anthropic's `ping` events are keep-alives, not progress
                for event in reader.feed(sse):
                    yield event
                if reader.done:
                    break
    except Cancelled:
        failure = {"error_message": ABORTED_TEXT, "aborted": True}
    except HttpStatusFailure as exc:
        # The body is redacted before anything cuts it (error_text truncates).
        text = reader.error_text(exc.status, redact(exc.body, secret))
        failure = {"error_message": redact(text, secret),
                   "retry_after_ms": retry_after_ms(exc.headers, (clock or now_ms)())}
    except ProviderFailure as exc:
        failure = {"error_message": redact(str(exc), secret)}
    # Text a redactor still holds comes out as deltas before the last event, so the deltas add
    # up to the finished (or failed) message.
    for event in builder.release():
        yield event
    if failure is not None:
        yield builder.fail(**failure)
        return
    for event in reader.finish():
        yield event


async def _parse_sse(lines: AsyncIterator[str], cancel: Cancel | None,
                     limits: Limits | None = None) -> AsyncIterator[SseEvent]:
    event: str | None = None
    data: list[str] = []
    iterator = aiter(lines)
    while True:
        try:
            line = await race(anext(iterator), cancel, limits)
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


def truncate_body(text: str, secret: str | None = None) -> str:
    """pi's cut of a long error body; `secret` is redacted first, so no part of it survives the cut."""
    text = redact(text, secret).strip()
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


# JavaScript's Number.parseFloat: the longest numeric prefix after leading whitespace.
_JS_FLOAT = re.compile(r"[\t\n\v\f\r \xa0\ufeff]*([+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))")


def _js_parse_float(text: str) -> float:
    match = _JS_FLOAT.match(text)
    if match is None:
        return math.nan
    number = match.group(1)
    return float(number.replace("Infinity", "inf"))


def retry_after_ms(headers: httpx.Headers | dict[str, str] | None, now_ms_value: int | float) -> float | None:
    """The delay a failed HTTP answer asks for before a retry, in ms, read as pi-ai 1.6.0 does.

    `retry-after-ms` (a number of ms) first; then `Retry-After`, either seconds (JavaScript
    `parseFloat`, so `1.5` and `2s` both count) or an HTTP date (minus `now_ms_value`, the
    client's clock). None when neither gives a finite number. Negative delays are kept (a date
    already past); the retry logic waits zero for them, as pi does.
    """
    if not headers:
        return None
    get = headers.get
    value = get("retry-after-ms")
    if value:
        number = _js_parse_float(value)
        if math.isfinite(number):
            return number
    value = get("retry-after")
    if value:
        seconds = _js_parse_float(value)
        if math.isnan(seconds):
            try:
                when = email.utils.parsedate_to_datetime(value.strip())
            except (TypeError, ValueError, IndexError):
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=datetime.timezone.utc)
            return when.timestamp() * 1000 - now_ms_value
        delay = seconds * 1000
        if math.isfinite(delay):
            return delay
    return None
