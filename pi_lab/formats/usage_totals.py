"""Sums of counted calls per group (a day, a session, a model), overall and per model: the
tables ``ccusage claude daily`` and ``ccusage codex daily`` print, for the Claude Code and Codex
usage rules (:mod:`pi_lab.formats.claude_code_usage`, :mod:`pi_lab.formats.codex_usage`), which
differ only in the counters they name."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, tzinfo
from typing import Any, ClassVar, Protocol, TypeVar

__all__ = ["CallTotals", "totals_by", "day_of"]


class CallTotals:
    """The calls of one group: ``calls``, each of ``COUNTERS`` summed, and ``models`` (model
    name → its own sums of the counters)."""

    COUNTERS: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.calls = 0
        self.models: dict[str, dict[str, int]] = {}
        for key in self.COUNTERS:
            setattr(self, key, 0)

    def add(self, call: Any) -> None:
        """Add one call: an object with an attribute per counter and its ``model`` (None: no
        model, counted in the sums only)."""
        model = call.model
        self.calls += 1
        per = self.models.setdefault(model, dict.fromkeys(self.COUNTERS, 0)) if model is not None else None
        for key in self.COUNTERS:
            value = getattr(call, key)
            setattr(self, key, getattr(self, key) + value)
            if per is not None:
                per[key] += value

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class _Timed(Protocol):
    @property
    def timestamp(self) -> datetime: ...


T = TypeVar("T", bound=CallTotals)
C = TypeVar("C", bound=_Timed)


def totals_by(calls: Iterable[C], by: str, tz: tzinfo | None, keys: dict[str, Callable[[C], str]],
              make: Callable[[], T]) -> dict[str, T]:
    """``make()`` totals per group, keys sorted. A call's group is its day (``timestamp`` in
    ``tz``) for ``by="day"``, else ``keys[by](call)``."""
    key_of = (lambda call: day_of(call.timestamp, tz)) if by == "day" else keys.get(by)
    if key_of is None:
        raise ValueError(f"usage_totals: by must be {', '.join(['day', *keys])}, not {by!r}")
    out: dict[str, T] = {}
    for call in calls:
        key = key_of(call)
        found = out.get(key)
        if found is None:
            found = out[key] = make()
        found.add(call)
    return dict(sorted(out.items()))


def day_of(moment: datetime, tz: tzinfo | None) -> str:
    """``YYYY-MM-DD`` of ``moment`` in ``tz`` (None: the local zone, as ccusage)."""
    return (moment.astimezone(tz) if tz is not None else moment.astimezone()).strftime("%Y-%m-%d")
