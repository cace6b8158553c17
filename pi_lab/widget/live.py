"""Keeping a viewer current: agent events, streaming text, and a file another process writes.

:class:`LiveFeed` turns an AgentSession's events into calls on its owner: ``sync()``
(coalesced, run once the agent has persisted what the event announced), ``stream(data)``
(throttled partial text and tool progress) and ``status(busy, text)``. :func:`follow_file`
polls ``sm.refresh()`` for a session file that pi itself is appending to.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pi_lab.errors import PiLabError

__all__ = ["LiveFeed", "follow_file", "call_soon", "STREAM_INTERVAL_S", "partial_text"]

STREAM_INTERVAL_S = 0.1
STREAM_TAIL_CHARS = 4000


def call_soon(callback: Callable[[], None]) -> bool:
    """Run ``callback`` on the running event loop after the current step; False if there is none."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    loop.call_soon(callback)
    return True


def partial_text(message: Any) -> dict[str, str]:
    """The text and thinking of a (partial) assistant message, tails only."""
    text: list[str] = []
    thinking: list[str] = []
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
        elif block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
            thinking.append(block["thinking"])
    return {"text": "".join(text)[-STREAM_TAIL_CHARS:], "thinking": "".join(thinking)[-STREAM_TAIL_CHARS:]}


class LiveFeed:
    """Subscribes to an agent and forwards what a viewer needs; call :meth:`close` to stop."""

    def __init__(self, agent: Any, *, sync: Callable[[], object], stream: Callable[[dict[str, Any]], None],
                 status: Callable[[str, str], None]):
        self.agent = agent
        self._sync = sync
        self._stream = stream
        self._status = status
        self._sync_pending = False
        self._last_stream = 0.0
        self._pending_stream: dict[str, Any] | None = None
        self._flush_scheduled = False
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._unsubscribe = agent.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def request_sync(self) -> None:
        if self._sync_pending:
            return
        self._sync_pending = True
        if not call_soon(self._run_sync):
            self._run_sync()

    def _run_sync(self) -> None:
        self._sync_pending = False
        self._sync()

    def _flush_stream(self) -> None:
        self._flush_scheduled = False
        if self._pending_stream is not None:
            data, self._pending_stream = self._pending_stream, None
            self._last_stream = time.monotonic()
            self._stream(data)

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_update":
            message = event.get("message")
            delta = event.get("event")
            if isinstance(message, dict) and message.get("role") == "assistant":
                self._pending_stream = {"type": "stream", **partial_text(message)}
            elif delta is not None and isinstance(getattr(delta, "delta", None), str):
                kind_name = getattr(delta, "kind", "")
                (self._thinking if kind_name == "thinking_delta" else self._text).append(delta.delta)
                self._pending_stream = {"type": "stream", "text": "".join(self._text)[-STREAM_TAIL_CHARS:],
                                        "thinking": "".join(self._thinking)[-STREAM_TAIL_CHARS:]}
            if self._pending_stream is None:
                return
            if time.monotonic() - self._last_stream >= STREAM_INTERVAL_S:
                self._flush_stream()
            elif not self._flush_scheduled:
                try:
                    asyncio.get_running_loop().call_later(STREAM_INTERVAL_S, self._flush_stream)
                    self._flush_scheduled = True
                except RuntimeError:
                    pass
            return
        if kind == "message_start":
            self._text, self._thinking = [], []
            return
        if kind == "message_end":
            self._pending_stream = None
            self._stream({"type": "stream_end"})
        elif kind == "agent_start":
            self._status("running", "Running…")
        elif kind == "tool_execution_start":
            self._stream({"type": "tool", "phase": "start", "name": event.get("toolName"),
                          "call_id": event.get("toolCallId")})
            self._status("running", f"Running tool {event.get('toolName')}…")
        elif kind == "tool_execution_end":
            self._stream({"type": "tool", "phase": "end", "name": event.get("toolName"),
                          "call_id": event.get("toolCallId"), "error": bool(event.get("isError"))})
        elif kind == "compaction_start":
            self._status("compacting", f"Compacting ({event.get('reason', 'manual')})…")
        elif kind == "compaction_end":
            result = event.get("result") or {}
            if event.get("aborted"):
                text = "Compaction cancelled"
            elif event.get("errorMessage"):
                text = str(event["errorMessage"])
            else:
                text = f"Compacted: {result.get('tokensBefore', '?')} tokens before"
            self._status("running" if self.agent.is_running else "", text)
        elif kind in ("agent_end", "agent_settled"):
            if not self.agent.is_running:
                self._sync_pending = False
                self._sync()  # everything of the run is persisted by now: rows first, then "idle"
                self._status("", "")
                return
        self.request_sync()


async def follow_file(sm: Any, on_change: Callable[[], object], *, interval: float = 1.0,
                      stopped: Callable[[], bool] = lambda: False,
                      on_error: Callable[[str], None] = lambda message: None,
                      refresh: Callable[[], Awaitable[list[Any]]] | None = None) -> None:
    """Poll ``sm.refresh()`` every ``interval`` seconds; call ``on_change`` when lines arrive.

    ``refresh`` replaces the plain ``sm.refresh()`` call, e.g. to run it as a job of the
    widget's queue: a refresh while a re-layout reads the tree on a worker thread would let the
    layout see the new entries and the change feed add them a second time.

    The other writer's entries are shown as they come; the leaf follows the file only until
    the user moves it in pi_lab (``sm.leaf_pinned``), then stays where the user put it."""
    while not stopped():
        await asyncio.sleep(interval)
        if stopped():
            return
        try:
            # the engine's leaf rule: a leaf the user moved stays put
            added = await refresh() if refresh is not None else sm.refresh()
        except (OSError, ValueError, PiLabError) as error:
            on_error(f"Stopped following the file: {error}")
            return
        if added:
            on_change()


# ---------------------------------------------------------------------------------------------
# The kernel's parent header while a widget talks during "Run all"
#
# ipykernel 7 runs every main-shell request in ONE shared contextvars.Context, and the current
# request (the parent header that every iopub message, the idle status included, is sent with)
# is a ContextVar in it. A comm message that arrives while an async cell holds the shell lock is
# dispatched at once in a copy of that context; when it is done, shell_main writes the parent it
# saw at the start back into the shared context. A viewer sends requests whenever rows arrive, so
# during "Run all" such a comm can start under cell N and finish after cell N+1 began: N's parent
# is written back, and N+1 (then every cell after it that meets another comm) publishes its idle
# status and its output under N's header. The notebook never sees N+1 finish: it stays [*] on an
# idle kernel. The comm ran in its own copy, so the shared parent never needs restoring; only
# ``_shell_context`` (the fallback threads read) was replaced, and is refreshed from the shared
# context instead.

_GUARDED_KERNELS: set[int] = set()


def guard_kernel_parent(kernel: Any = None) -> bool:
    """Keep the kernel's shell parent header right while comms are dispatched concurrently
    (see above). Idempotent; returns True when the guard is in place."""
    import contextvars
    import inspect
    import sys

    if kernel is None:
        # Outside a kernel (a script, a test, the benchmark) ipykernel was never imported and
        # there is no kernel to guard: importing it just to learn that costs ~0.2 s.
        kernelbase = sys.modules.get("ipykernel.kernelbase")
        if kernelbase is None:
            return False
        Kernel = kernelbase.Kernel
        if not Kernel.initialized():
            return False
        kernel = Kernel.instance()
    if id(kernel) in _GUARDED_KERNELS:
        return True
    shell_main = getattr(type(kernel), "shell_main", None)
    try:
        source = inspect.getsource(shell_main) if shell_main is not None else ""
    except (OSError, TypeError):
        source = ""
    # Only the ipykernel code that restores a captured parent after a concurrent comm needs it.
    if shell_main is None or "concurrent=True" not in source or "set_parent(shell_ident, shell_parent" not in source:
        return False
    main_code = shell_main.__code__
    original = kernel.set_parent

    def set_parent(ident: Any, parent: Any, channel: str = "shell") -> None:
        caller = sys._getframe(1)
        if channel == "shell" and caller.f_code is main_code:
            # shell_main restoring the parent it captured before a concurrent comm: the shared
            # context already holds the right one (possibly a newer request's).
            kernel._shell_context = contextvars.copy_context()
            return
        original(ident, parent, channel)

    kernel.set_parent = set_parent
    _GUARDED_KERNELS.add(id(kernel))
    return True
