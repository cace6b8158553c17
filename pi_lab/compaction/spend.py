"""What a session spent: which entries carry usage that counts, and how their counters add up.

One rule, with two scopes named here and used everywhere:

* **session** (pi's ``getSessionStats``, session-format.md §6.2): the usage of assistant and
  tool-result messages, of ``usage`` entries, and of the model calls behind compactions and
  branch summaries (their ``usage``). ``AgentSession.get_session_stats`` sums it over every
  entry of the file; the branch comparison (``pi_lab.view.branches``) over each side's path.
* **model calls** (what ccusage and ``Corpus.usage`` / ``pi-lab usage`` count): the usage of
  assistant messages only, a fork's copies once. The corpus keeps the rest apart: tool-result
  usage in ``messages``, a compaction's summary call in ``compactions.summary_cost``.

A counter adds up when it is a finite number; anything else in a hand-edited file (a string, a
boolean, NaN, an integer past the float range, which JavaScript reads as Infinity) is left out
of the sum rather than turning it into text or raising, where pi would concatenate or yield NaN.
tests/compaction/test_spend.py checks that the three sums agree on real and generated sessions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pi_lab.session._js import js_double

__all__ = ["SPEND_ENTRY_TYPES", "SPEND_ROLES", "COUNTERS", "spend_usage", "usage_numbers", "Spend", "sum_spend"]

#: Entry types whose own ``usage`` counts (a model call made for the session's bookkeeping).
SPEND_ENTRY_TYPES = ("usage", "compaction", "branch_summary")
#: Message roles whose ``usage`` counts.
SPEND_ROLES = ("assistant", "toolResult")
#: pi's usage fields and their names here, in order.
COUNTERS = (("input", "input"), ("output", "output"), ("cacheRead", "cache_read"), ("cacheWrite", "cache_write"))


def spend_usage(entry: Mapping[str, Any]) -> Any:
    """The usage record ``entry`` adds to the session's spend, or None (pi's getSessionStats scope)."""
    kind = entry.get("type")
    if kind in SPEND_ENTRY_TYPES:
        return entry.get("usage")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, Mapping) and message.get("role") in SPEND_ROLES:
            return message.get("usage")
    return None


def _number(value: Any) -> float | None:
    """A counter that can be summed: a finite number (an int past the float range, which
    JavaScript reads as Infinity, is left out like Infinity itself)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        return value if math.isfinite(js_double(value)) else None
    return value if math.isfinite(value) else None


def usage_numbers(usage: Any) -> list[float | None] | None:
    """The summable counters of one usage record, ``[input, output, cache_read, cache_write,
    cost]`` (None where a counter is missing or cannot be summed), or None when none is (the
    record is then not counted)."""
    if not isinstance(usage, Mapping):
        return None
    numbers: list[float | None] = [_number(usage.get(key)) for key, _ in COUNTERS]
    cost = usage.get("cost")
    numbers.append(_number(cost.get("total")) if isinstance(cost, Mapping) else None)
    return numbers if any(v is not None for v in numbers) else None


@dataclass
class Spend:
    """Summed counters and how many usage records were summed."""

    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0
    cost: float = 0.0
    records: int = 0

    def add(self, numbers: list[float | None] | None) -> None:
        if numbers is None:
            return
        inp, out, cache_read, cache_write, cost = numbers
        self.input += inp or 0
        self.output += out or 0
        self.cache_read += cache_read or 0
        self.cache_write += cache_write or 0
        self.cost += cost or 0.0
        self.records += 1

    @property
    def tokens(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write


def sum_spend(entries: Iterable[Mapping[str, Any]]) -> Spend:
    """The session-scope spend of ``entries`` (every entry of a file, or one path)."""
    spend = Spend()
    for entry in entries:
        spend.add(usage_numbers(spend_usage(entry)))
    return spend
