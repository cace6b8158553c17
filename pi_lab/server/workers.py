"""The worker threads of the session viewer server.

``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter exits, so one
request stuck in a long parse kept ``jupyter server`` alive for minutes after SIGTERM. These
workers are daemon threads: the server exits at once, and whatever they were computing for a
browser that is going away is dropped. They only read files (nothing to leave half-written).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["DaemonExecutor"]

_STOP = object()


class DaemonExecutor:
    """A fixed pool of daemon threads with the ``submit``/``shutdown`` of an executor (enough
    for ``loop.run_in_executor``)."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "pi-lab"):
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._work, name=f"{thread_name_prefix}-{n}", daemon=True)
                         for n in range(max(1, max_workers))]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the pi_lab workers are shut down")
            self._queue.put((future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as error:  # handed to the awaiting request, as an executor does
                future.set_exception(error)
            else:
                future.set_result(result)

    def shutdown(self, wait: bool = False, *, cancel_futures: bool = True) -> None:
        """Stop taking work; queued requests are cancelled, running ones are not waited for
        unless ``wait``."""
        with self._lock:
            self._closed = True
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    item[0].cancel()
        for _ in self._threads:
            self._queue.put(_STOP)
        if wait:
            for thread in self._threads:
                thread.join()
