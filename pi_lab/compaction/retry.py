"""Retrying a summarisation call after a transient provider error (compaction.md §6.6).

Only errors classified as retryable (agent-loop.md §7.2) are retried; quota and billing
errors fail at once. The back-off sleep stops as soon as the abort signal fires. Progress
is reported through three optional callbacks: scheduled, attempt start, finished.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_MAX_AGENT_DELAY_MS",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "RetryPolicy",
    "RetryCallbacks",
    "retry_delay_ms",
    "retry_assistant_call",
    "server_retry_delay_ms",
    "is_aborted",
    "sleep_abortable",
]

DEFAULT_MAX_AGENT_DELAY_MS = 60000
# pi's `retry.provider.maxRetryDelayMs`: the longest server-requested delay that is honoured.
DEFAULT_MAX_RETRY_DELAY_MS = 60000


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """pi's ``retry`` settings, shared by agent-turn and summarisation retries.

    ``max_retry_delay_ms`` is pi's ``retry.provider.maxRetryDelayMs``: a provider's
    ``Retry-After`` up to this long is waited exactly; a longer one is not honoured (the
    exponential back-off applies instead); 0 means no limit.
    """

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_agent_delay_ms: int | None = DEFAULT_MAX_AGENT_DELAY_MS
    max_retry_delay_ms: int | None = DEFAULT_MAX_RETRY_DELAY_MS

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None) -> RetryPolicy:
        """From pi's settings JSON (the whole object with a ``"retry"`` key, or that object)."""
        section: Mapping[str, Any] = {}
        if isinstance(settings, Mapping):
            inner = settings.get("retry")
            section = inner if isinstance(inner, Mapping) else settings
        provider = section.get("provider")
        server_cap = provider.get("maxRetryDelayMs") if isinstance(provider, Mapping) else None
        if server_cap is None:
            server_cap = section.get("maxDelayMs")  # the legacy name pi migrates from
        return cls(
            enabled=bool(section.get("enabled", True)),
            max_retries=section.get("maxRetries", 3),
            base_delay_ms=section.get("baseDelayMs", 2000),
            max_agent_delay_ms=section.get("maxAgentDelayMs", DEFAULT_MAX_AGENT_DELAY_MS),
            max_retry_delay_ms=DEFAULT_MAX_RETRY_DELAY_MS if server_cap is None else server_cap,
        )


Callback = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class RetryCallbacks:
    """Optional progress callbacks; each may be a plain function or a coroutine function.

    * ``on_retry_scheduled(attempt, max_attempts, delay_ms, error_message)``
    * ``on_retry_attempt_start()``
    * ``on_retry_finished(success, attempt, final_error=None)``
    """

    on_retry_scheduled: Callback | None = None
    on_retry_attempt_start: Callback | None = None
    on_retry_finished: Callback | None = None


def _policy_value(policy: Any, attr: str, json_key: str, default: Any) -> Any:
    if isinstance(policy, Mapping):
        return policy.get(json_key, policy.get(attr, default))
    return getattr(policy, attr, default)


def retry_delay_ms(policy: Any, attempt: int, server_delay_ms: float | None = None) -> int:
    """The wait before retry number ``attempt``, in ms: the one rule of agent and summary retries.

    A provider's requested delay (``server_delay_ms``, from ``retry-after-ms`` / ``Retry-After``,
    read by ``pi_lab.llm._http.retry_after_ms``) is honoured as pi-ai's provider retry does: waited exactly
    (rounded up to a whole ms, never below 0) unless it exceeds ``maxRetryDelayMs`` (default
    60000; 0 = no limit). Without one, or above that limit, pi's agent back-off applies:
    ``min(baseDelayMs × 2^(attempt−1), maxAgentDelayMs ?? 60000)``.
    """
    if server_delay_ms is not None and math.isfinite(server_delay_ms):
        limit = _policy_value(policy, "max_retry_delay_ms", "maxRetryDelayMs", None)
        if limit is None:
            limit = DEFAULT_MAX_RETRY_DELAY_MS
        if not (limit > 0 and server_delay_ms > limit):
            return max(0, math.ceil(server_delay_ms))
    base = _policy_value(policy, "base_delay_ms", "baseDelayMs", 2000)
    cap = _policy_value(policy, "max_agent_delay_ms", "maxAgentDelayMs", None)
    if cap is None:
        cap = DEFAULT_MAX_AGENT_DELAY_MS
    return min(base * 2 ** max(0, attempt - 1), cap)


def server_retry_delay_ms(message: Any) -> float | None:
    """The delay the provider asked for on this failed assistant message, if it named one."""
    value = getattr(message, "retry_after_ms", None)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _callback(callbacks: Any, name: str) -> Callback | None:
    if callbacks is None:
        return None
    short = name.replace("on_retry_", "on_")
    bare = name.replace("on_retry_", "")
    for key in (name, short, bare):
        fn = callbacks.get(key) if isinstance(callbacks, Mapping) else getattr(callbacks, key, None)
        if fn is not None:
            return fn
    return None


async def _notify(callbacks: Any, name: str, *args: Any) -> None:
    fn = _callback(callbacks, name)
    if fn is None:
        return
    result = fn(*args)
    if inspect.isawaitable(result):
        await result


def is_aborted(signal: Any) -> bool:
    """Whether an abort signal has fired.

    Accepts ``None``, an object with an ``aborted`` attribute or method (pi's AbortSignal
    shape), or anything with ``is_set()`` (``asyncio.Event``, ``threading.Event``).
    """
    if signal is None:
        return False
    aborted = getattr(signal, "aborted", None)
    if aborted is not None:
        return bool(aborted() if callable(aborted) else aborted)
    is_set = getattr(signal, "is_set", None)
    if callable(is_set):
        return bool(is_set())
    return False


async def sleep_abortable(delay_ms: float, signal: Any) -> bool:
    """Sleep ``delay_ms``; return True (early) if ``signal`` fires before the time is up."""
    if is_aborted(signal):
        return True
    seconds = max(0.0, delay_ms / 1000)
    if signal is None:
        await asyncio.sleep(seconds)
        return False
    if isinstance(signal, asyncio.Event):
        try:
            await asyncio.wait_for(signal.wait(), seconds)
        except (asyncio.TimeoutError, TimeoutError):
            return False
        return True
    waiter: Callable[[], Awaitable[Any]] | None = getattr(signal, "wait_aborted", None)
    if callable(waiter):
        try:
            await asyncio.wait_for(waiter(), seconds)
        except (asyncio.TimeoutError, TimeoutError):
            return is_aborted(signal)
        return True
    # Any other signal object is polled.
    deadline = time.monotonic() + seconds
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return is_aborted(signal)
        await asyncio.sleep(min(0.02, remaining))
        if is_aborted(signal):
            return True


def _default_is_retryable(message: Mapping[str, Any]) -> bool:
    from pi_lab.llm.errors import is_retryable_assistant_error

    return bool(is_retryable_assistant_error(message))


async def retry_assistant_call(
    produce: Callable[[], Awaitable[dict[str, Any]]],
    policy: Any,
    signal: Any = None,
    callbacks: Any = None,
    *,
    is_retryable: Callable[[Mapping[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """Call ``produce`` until it returns a non-error, a non-retryable error, or retries run out.

    No policy (or ``enabled`` false) means exactly one call. An abort during the back-off
    returns the last response turned into ``stopReason: "aborted"`` (without its
    ``errorMessage``).
    """
    classify = is_retryable or _default_is_retryable
    enabled = policy is not None and bool(_policy_value(policy, "enabled", "enabled", True))
    max_attempts = _policy_value(policy, "max_retries", "maxRetries", 3) if enabled else 0
    attempt = 0
    retried = False
    while True:
        response = await produce()
        stop_reason = response.get("stopReason")
        if stop_reason == "aborted":
            if retried:
                await _notify(callbacks, "on_retry_finished", False, attempt)
            return response
        if stop_reason != "error":
            if retried:
                await _notify(callbacks, "on_retry_finished", True, attempt)
            return response
        if attempt >= max_attempts or not classify(response):
            if retried:
                await _notify(callbacks, "on_retry_finished", False, attempt, response.get("errorMessage"))
            return response
        attempt += 1
        retried = True
        delay = retry_delay_ms(policy, attempt, server_retry_delay_ms(response))
        await _notify(
            callbacks, "on_retry_scheduled", attempt, max_attempts, delay, response.get("errorMessage") or "Unknown error"
        )
        if await sleep_abortable(delay, signal):
            await _notify(callbacks, "on_retry_finished", False, attempt)
            aborted = {key: value for key, value in response.items() if key != "errorMessage"}
            aborted["stopReason"] = "aborted"
            return aborted
        await _notify(callbacks, "on_retry_attempt_start")
