"""Builders for pi session entries and deterministic id/clock sources used across tests."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

from pi_lab.data import WORKED_EXAMPLE

T0 = datetime(2026, 7, 29, 9, 0, 0, tzinfo=timezone.utc)


class Ids:
    """A uuid_factory giving 00000001-..., 00000002-... (entry ids are their first 8 chars)."""

    def __init__(self, start: int = 1):
        self._counter = itertools.count(start)

    def __call__(self) -> str:
        n = next(self._counter)
        return f"{n:08x}-0000-4000-8000-000000000000"


class Clock:
    """A clock that advances one second per call, starting at T0."""

    def __init__(self, start: datetime = T0, step: timedelta = timedelta(seconds=1)):
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        current = self.now
        self.now = current + self.step
        return current


def iso(seconds: float) -> str:
    moment = T0 + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def header(session_id: str = "S1", cwd: str = "/repo", **extra: Any) -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": session_id, "timestamp": iso(0), "cwd": cwd, **extra}


def usage(inp: int = 10, out: int = 5, cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    total = inp + out + cache_read + cache_write
    return {
        "input": inp,
        "output": out,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": total,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def user_msg(text: Any, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def asst_msg(text: str | None = "ok", *, tool_calls: list[dict[str, Any]] | None = None, stop: str = "stop",
             provider: str = "anthropic", model: str = "claude-test", use: dict[str, Any] | None = None,
             ts: int = 2, error: str | None = None, thinking: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking})
    if text is not None:
        content.append({"type": "text", "text": text})
    for call in tool_calls or []:
        content.append({"type": "toolCall", **call})
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": provider,
        "model": model,
        "usage": use if use is not None else usage(),
        "stopReason": stop,
    }
    if error is not None:
        message["errorMessage"] = error
    message["timestamp"] = ts
    return message


def tool_result(call_id: str, name: str, text: str, ts: int = 3, is_error: bool = False) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": ts}


def msg(entry_id: str, parent: str | None, message: dict[str, Any], seconds: float = 1) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": iso(seconds), "message": message}


def entry(kind: str, entry_id: str, parent: str | None, seconds: float = 1, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": iso(seconds), **fields}


def chain(*specs: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Message entries linked one after another: chain(("1", user_msg("hi")), ...)."""
    out = []
    parent = None
    for i, (entry_id, message) in enumerate(specs):
        out.append(msg(entry_id, parent, message, seconds=i + 1))
        parent = entry_id
    return out


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


def texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        if m["role"] in ("compactionSummary", "branchSummary"):
            out.append(m["summary"])
            continue
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        else:
            out.append("".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return out


SEED_SECTION_14 = WORKED_EXAMPLE
"""The worked example of the seed explainer, section 14, verbatim (pi_lab.data.WORKED_EXAMPLE)."""


def cpu_growth(run: Any, small: int, large: int, repeat: int = 3) -> float:
    """How much more CPU ``run(large)`` takes than ``run(small)``, each the best of ``repeat``.

    For tests that guard an algorithm's order, not its speed: a ratio needs no figure for the
    machine (a slow or busy CI core scales both runs alike), and CPU time leaves out the waits
    of a loaded machine. With ``large = 4 * small`` a linear algorithm gives about 4, a
    quadratic one about 16; tests assert below 8. The cyclic collector is off while a run is
    timed: its full passes visit every live object, which would charge the larger run for the
    test's own data."""
    import gc
    import time

    def best(n: int) -> float:
        times = []
        for _ in range(repeat):
            gc.collect()
            gc.disable()
            try:
                started = time.process_time()
                run(n)
                times.append(time.process_time() - started)
            finally:
                gc.enable()
        return min(times)

    return best(large) / max(best(small), 1e-6)
