"""The widget's one serial job queue: every change to its view runs here, one after the other.

A notebook widget's view changes for three reasons: the browser asks for another filter,
search or folds (a re-layout that takes a second on a large session, so it runs on a worker
thread while the kernel keeps answering); the session grew or its leaf moved (a sync); or the
agent switched to another session file (a fork). Running them one at a time in arrival order
is what keeps the rows consistent, so they all go through one queue:

* ``"view"`` jobs carry the view changes; keystrokes that arrive while one waits are merged
  into it (the last value of each setting wins);
* ``"sync"`` jobs are not queued twice: one waiting sync catches up with everything;
* any other kind (``"rebind"`` after a fork, ``"call"`` with a function) runs in its turn.

After a delta the traitlets and the saved structure are brought up to date once the queue has
been quiet for a while (the *quiet steps*): a live session sends one small message per entry,
not the whole state. Outside an event loop nothing is queued; the caller runs the job at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["JobQueue"]

Runner = Callable[[str, Any], Awaitable[None]]


class JobQueue:
    """See the module docstring. ``run(kind, payload)`` does one job; ``quiet`` lists
    ``(seconds, step)``: each step runs after that much quiet following the previous one."""

    def __init__(self, run: Runner, quiet: Sequence[tuple[float, Callable[[], None]]],
                 log: logging.Logger | None = None):
        self._run = run
        self._quiet = tuple(quiet)
        self._log = log or logging.getLogger(__name__)
        self._jobs: deque[list[Any]] = deque()  # [kind, payload, waiters]
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._next_quiet = len(self._quiet)  # no quiet step due
        self.busy = False
        self.closed = False

    @property
    def pending(self) -> bool:
        """A job is running or waiting."""
        return self.busy or bool(self._jobs)

    def pending_view(self) -> bool:
        return any(job[0] == "view" for job in self._jobs)

    def submit(self, kind: str, payload: Any = None) -> asyncio.Future[None] | None:
        """Queue a job; returns a future done when it has run, or None without a running loop
        (the caller then does the job itself)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        waiter: asyncio.Future[None] = loop.create_future()
        # A failed job is logged here; a caller that did not wait must not get a warning too.
        waiter.add_done_callback(lambda done: done.cancelled() or done.exception())
        last = self._jobs[-1] if self._jobs else None
        if kind == "view" and last is not None and last[0] == "view":
            last[1].update(payload)
            last[2].append(waiter)
        elif kind == "sync" and (same := next((job for job in self._jobs if job[0] == "sync"), None)) is not None:
            same[2].append(waiter)
        else:
            self._jobs.append([kind, dict(payload) if kind == "view" else payload, [waiter]])
        self._poke(loop)
        return waiter

    async def run(self, kind: str, payload: Any = None) -> None:
        """Queue a job and wait until it has run."""
        waiter = self.submit(kind, payload)
        if waiter is None:
            await self._run(kind, payload)
        else:
            await waiter

    def touched(self) -> None:
        """Something changed that the quiet steps publish: run them again once it is quiet."""
        self._next_quiet = 0
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.quiet_now(len(self._quiet))  # no loop to wait on: publish at once
            return
        self._poke(loop)

    def quiet_now(self, steps: int = 1) -> None:
        """Run the next ``steps`` due quiet steps now (e.g. the first when a run is over)."""
        end = min(len(self._quiet), self._next_quiet + steps)
        while self._next_quiet < end and not self.closed:
            step = self._quiet[self._next_quiet][1]
            self._next_quiet += 1
            step()

    def close(self) -> None:
        self.closed = True
        self._next_quiet = len(self._quiet)
        if self._task is not None:
            self._task.cancel()
        for job in self._jobs:
            for waiter in job[2]:
                waiter.cancel()
        self._jobs.clear()

    def _poke(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.closed:
            return
        if self._wake is not None:
            self._wake.set()
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._work())

    async def _work(self) -> None:
        self._wake = asyncio.Event()
        try:
            while not self.closed:
                if self._jobs:
                    kind, payload, waiters = self._jobs.popleft()
                    self.busy = True
                    try:
                        await self._run(kind, payload)
                    except Exception as error:  # a bug in one job must not stop the queue
                        self._log.exception("pi_lab: widget job %s failed", kind)
                        for waiter in waiters:
                            if not waiter.done():
                                waiter.set_exception(error)
                        continue
                    finally:
                        self.busy = False
                    for waiter in waiters:
                        if not waiter.done():
                            waiter.set_result(None)
                    continue
                if self._next_quiet >= len(self._quiet):
                    return
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), self._quiet[self._next_quiet][0])
                except asyncio.TimeoutError:
                    self.quiet_now(1)
        finally:
            self._wake = None
