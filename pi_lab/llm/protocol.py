"""The one interface through which the agent loop and the summariser call a model.

A client streams events for one request and ends with exactly one `StreamDone` or `StreamError`:

    StreamStart → (TextDelta | ThinkingDelta | ToolCallEvent)* → StreamDone | StreamError

Every stream starts with `StreamStart`, whose `message` is the assistant message being built: the
same dict object that later arrives complete in `StreamDone.message` / `StreamError.message`, so
a UI can render it while it grows. Failures never raise: a missing key, an HTTP error, a dropped
connection or a cancellation ends the stream with `StreamError`, whose message has `stopReason`
`"error"` or `"aborted"` and an `errorMessage` that the classifiers in `errors.py` understand.

`context` is a plain dict:

    {"system_prompt": str | None,
     "messages": [pi LLM messages: user / assistant / toolResult (and system) dicts],
     "tools": [{"name", "description", "parameters": <JSON schema>}] | None}
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar, runtime_checkable

from pi_lab.errors import PiLabError

from .model import Model

if TYPE_CHECKING:  # annotations only (PEP 692 keyword types); typing has Unpack from 3.11
    from typing_extensions import Unpack

__all__ = [
    "ABORTED_TEXT",
    "Cancel",
    "Cancelled",
    "CompleteFromStream",
    "Context",
    "StreamDone",
    "StreamError",
    "ModelClient",
    "StreamStart",
    "StreamEvent",
    "StreamOptions",
    "STREAM_OPTION_NAMES",
    "check_options",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallEvent",
    "collect",
    "complete_sync",
    "run_sync",
    "stream_sync",
]


class Context(TypedDict, total=False):
    system_prompt: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None


# --- events -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _MessageEvent:
    """An event that carries the assistant message: the one being built, or the finished one."""

    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StreamStart(_MessageEvent):
    """The request was accepted; `message` is the (still empty) assistant message."""

    kind = "start"


@dataclass(frozen=True, slots=True)
class _Delta:
    """More of the text of the content block at `index`."""

    index: int
    delta: str


@dataclass(frozen=True, slots=True)
class TextDelta(_Delta):
    """More text for the content block at `index`."""

    kind = "text_delta"


@dataclass(frozen=True, slots=True)
class ThinkingDelta(_Delta):
    """More reasoning text for the thinking block at `index`."""

    kind = "thinking_delta"


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A complete tool call (`{"type": "toolCall", id, name, arguments}`) at `index`."""

    index: int
    tool_call: dict[str, Any]
    kind = "toolcall"


@dataclass(frozen=True, slots=True)
class StreamDone(_MessageEvent):
    """Success; `message["stopReason"]` is `stop`, `length` or `toolUse`."""

    kind = "done"


@dataclass(frozen=True, slots=True)
class StreamError(_MessageEvent):
    """Failure; `message["stopReason"]` is `error` or `aborted`, with `errorMessage`."""

    kind = "error"


StreamEvent = StreamStart | TextDelta | ThinkingDelta | ToolCallEvent | StreamDone | StreamError


# --- cancellation -----------------------------------------------------------------------------


class Cancel(Protocol):
    """Anything with `is_set()`: an `asyncio.Event`, a `threading.Event`, or your own flag."""

    def is_set(self) -> bool: ...


# pi's errorMessage of a request stopped by its caller.
ABORTED_TEXT = "Request was aborted"


class Cancelled(PiLabError):
    """A model call stopped because its cancel flag was set.

    Raised and caught inside the clients (offline and HTTP), which then end the message with
    ``stopReason: "aborted"``; a caller of ``stream`` never sees it.
    """

    def __init__(self) -> None:
        super().__init__(ABORTED_TEXT)


# --- the client interface ---------------------------------------------------------------------


class StreamOptions(TypedDict, total=False):
    """The keyword options of `ModelClient.stream` and `complete` (meanings: `ModelClient`)."""

    tools: list[dict[str, Any]] | None
    reasoning: str | None
    cancel: Cancel | None
    session_id: str | None
    max_tokens: int | None
    cache_retention: str | None


STREAM_OPTION_NAMES = frozenset(StreamOptions.__annotations__)


def check_options(options: Mapping[str, Any], allowed: frozenset[str], function: str) -> None:
    """The TypeError Python raises for an unknown keyword, for functions taking `**options`
    typed by a TypedDict (which Python does not check at run time)."""
    for name in options:
        if name not in allowed:
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r}")


@runtime_checkable
class ModelClient(Protocol):
    """A model endpoint. Implementations: OpenAIClient, AnthropicClient, OfflineModel.

    `stream` is an async generator (`async def ... yield`). Keyword options:

    * `tools` — overrides `context["tools"]` when given;
    * `reasoning` — pi thinking level (`minimal`/`low`/`medium`/`high`/`xhigh`); `None` or
      `"off"` asks for no reasoning; ignored for models with `reasoning=False`;
    * `cancel` — checked while waiting; when set the stream ends with `stopReason: "aborted"`;
    * `session_id` — a cache/affinity key passed to providers that accept one;
    * `max_tokens` — output cap; `None` leaves it to the provider layer, which sends the model's
      own limit fitted into the room left in the context window (pi-ai 1.6.0);
    * `cache_retention` — prompt caching: `"short"`, `"long"` or `"none"` (pi's summariser asks
      for `"none"`); `None` means the client's default; ignored where the API has no caching.
    """

    def stream(self, model: Model, context: Context, **options: Unpack[StreamOptions]) -> AsyncIterator[StreamEvent]:
        ...

    async def complete(self, model: Model, context: Context, **options: Unpack[StreamOptions]) -> dict[str, Any]:
        ...


class CompleteFromStream:
    """Base of the clients: `stream` checks the options and runs the client's `_stream`;
    `complete` and `complete_sync` are derived from it."""

    def stream(self, model: Any, context: Context, **options: Unpack[StreamOptions]) -> AsyncIterator[StreamEvent]:
        check_options(options, STREAM_OPTION_NAMES, f"{type(self).__name__}.stream")  # at the call, as before
        return self._stream(model, context, options)

    def _stream(self, model: Any, context: Context, options: StreamOptions) -> AsyncIterator[StreamEvent]:
        """The client's async generator of events (see `ModelClient`)."""
        raise NotImplementedError

    async def complete(self, model: Any, context: Context, **options: Unpack[StreamOptions]) -> dict[str, Any]:
        return await collect(self.stream(model, context, **options))

    def complete_sync(self, model: Any, context: Context, **options: Unpack[StreamOptions]) -> dict[str, Any]:
        """`complete` for synchronous callers (also inside a running event loop)."""
        return run_sync(self.complete(model, context, **options))


async def collect(events: AsyncIterator[StreamEvent]) -> dict[str, Any]:
    """Drain a stream and return its final assistant message (from `StreamDone` or `StreamError`)."""
    final: dict[str, Any] | None = None
    async for event in events:
        if isinstance(event, (StreamDone, StreamError)):
            final = event.message
    if final is None:
        raise RuntimeError("model stream ended without a StreamDone or StreamError event")
    return final


# --- sync wrappers (scripts, tests, and Jupyter cells where a loop is already running) ------

T = TypeVar("T")


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run a coroutine to completion from synchronous code.

    Inside a running event loop (a Jupyter kernel) `asyncio.run` is not allowed, so the
    coroutine then runs on a fresh loop in a worker thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coroutine(awaitable))
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(_as_coroutine(awaitable))
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=worker, name="pi-lab-model-call", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def complete_sync(client: ModelClient, model: Model, context: Context,
                  **options: Unpack[StreamOptions]) -> dict[str, Any]:
    """`client.complete(...)` for synchronous callers."""
    return run_sync(client.complete(model, context, **options))


_END = object()


def stream_sync(client: ModelClient, model: Model, context: Context,
                **options: Unpack[StreamOptions]) -> Iterator[StreamEvent]:
    """Iterate `client.stream(...)` from synchronous code; events arrive as they are produced.

    The stream runs on its own event loop in a worker thread. Leaving the loop early (break,
    exception) cancels the request.
    """
    events: queue.Queue[Any] = queue.Queue()
    stop = threading.Event()
    options["cancel"] = _EitherSet(options.get("cancel"), stop)  # (the call's own copy of the options)

    async def pump() -> None:
        try:
            async for event in client.stream(model, context, **options):
                events.put(event)
        except BaseException as exc:
            events.put(exc)
        finally:
            events.put(_END)

    thread = threading.Thread(target=lambda: asyncio.run(pump()), name="pi-lab-model-stream", daemon=True)
    thread.start()
    try:
        while True:
            item = events.get()
            if item is _END:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


class _EitherSet:
    """A cancel flag that is set when either of two flags is."""

    def __init__(self, first: Cancel | None, second: Cancel) -> None:
        self._first, self._second = first, second

    def is_set(self) -> bool:
        return self._second.is_set() or (self._first is not None and self._first.is_set())
