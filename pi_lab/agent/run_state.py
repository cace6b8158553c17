"""What AgentSession is doing right now, and the one way to cancel a part of it.

pi keeps one abort controller per operation (retry back-off, automatic compaction, manual
compaction, branch summary) and each ``abort*`` call stops a fixed set of them. Here they
are one registry of :class:`Operation` s keyed by kind: starting an operation registers its
cancel flag, :meth:`RunState.cancel` sets the flags of the kinds asked for, and
:meth:`RunState.running` answers "is a compaction in progress" and the like.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunState", "Operation", "RETRY", "AUTO_COMPACTION", "MANUAL_COMPACTION", "BRANCH_SUMMARY", "COMPACTIONS"]

RETRY = "retry"
AUTO_COMPACTION = "auto_compaction"
MANUAL_COMPACTION = "manual_compaction"
BRANCH_SUMMARY = "branch_summary"
# what counts as "compacting" (pi's isCompacting): both compactions and a branch summary
COMPACTIONS = (AUTO_COMPACTION, MANUAL_COMPACTION, BRANCH_SUMMARY)


@dataclass(eq=False)
class Operation:
    """One cancellable operation; ``signal`` is what the model calls and hooks receive."""

    kind: str
    signal: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def cancelled(self) -> bool:
        return self.signal.is_set()


class RunState:
    """The flags of the current run and the registry of cancellable operations."""

    def __init__(self) -> None:
        self.active = False  # a run (prompt → settled) is in progress
        self.preflight = 0  # prompts between their call and the start of the run
        self.abort_requested = False
        self.retry_attempt = 0
        self.overflow_recovery_attempted = False  # pi's one-shot guard, reset by a new user message
        self.last_assistant: dict[str, Any] | None = None
        self.idle = asyncio.Event()
        self.idle.set()
        self._operations: dict[str, Operation] = {}

    def begin(self, kind: str) -> Operation:
        operation = Operation(kind)
        self._operations[kind] = operation
        return operation

    def end(self, operation: Operation) -> None:
        """Forget ``operation`` unless a newer one of its kind replaced it (safe to repeat)."""
        if self._operations.get(operation.kind) is operation:
            del self._operations[operation.kind]

    def running(self, *kinds: str) -> bool:
        return any(kind in self._operations for kind in kinds)

    def cancel(self, *kinds: str) -> None:
        """Set the cancel flag of the running operations of ``kinds`` (all kinds when none given)."""
        for kind, operation in list(self._operations.items()):
            if not kinds or kind in kinds:
                operation.signal.set()

    def reset_for_new_session(self) -> None:
        """After a fork: nothing of the old file's run carries over."""
        self.last_assistant = None
        self.overflow_recovery_attempted = False
        self.retry_attempt = 0
