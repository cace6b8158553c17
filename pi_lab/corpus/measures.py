"""The walk's measures of un-edited entries (``MeasureCache.plain``), kept small.

The corpus walk measures every entry of a file once and keeps the measure until the entry's
rows are made (a compaction's rebuild reads it back). Nearly every measure has one of two
shapes: one message that is no usage anchor, ``(1, tokens, None, 0, None)``, or one assistant
message that anchors, ``(1, tokens, (usage, tokens), 0, None)``. A tuple of five per entry
(and the anchor's pair) is about 0.1 KB; here the first shape is kept as its ``tokens`` (an
int, most of them the interpreter's shared small ints) and the second as its anchor pair,
and a measure is rebuilt, equal, when it is read.
"""

from __future__ import annotations

from array import array
from typing import Any

from pi_lab.compaction.context_walk import Measure

__all__ = ["CompactMeasures", "KnownTokens"]


class CompactMeasures(dict):  # type: ignore[type-arg]  (id(entry) -> Measure, stored compactly)
    """``dict[int, Measure]`` for :class:`pi_lab.compaction.context_walk.MeasureCache.plain`
    (the walk reads it with ``get``, ``[]`` and ``in`` and writes it with ``[]=``)."""

    __slots__ = ()

    def __setitem__(self, key: int, value: Measure) -> None:
        count, tokens, anchor, sys_tokens, system = value
        if count == 1 and sys_tokens == 0 and sys_tokens.__class__ is int and system is None and tokens.__class__ is int:
            if anchor is None:
                dict.__setitem__(self, key, tokens)
                return
            if anchor.__class__ is tuple and len(anchor) == 2 and anchor[1] is tokens:
                dict.__setitem__(self, key, anchor)
                return
        dict.__setitem__(self, key, (value,))  # any other shape, as it is

    def get(self, key: int, default: Any = None) -> Any:
        stored = dict.get(self, key)
        if stored is None:
            return default
        return _measure(stored)

    def __getitem__(self, key: int) -> Measure:
        return _measure(dict.__getitem__(self, key))

    def one_message_tokens(self, key: int) -> Any:
        """``measure[1]`` when the measure of ``key`` is one message's, else None."""
        stored = dict.get(self, key)
        if stored is None:
            return None
        if stored.__class__ is int:
            return stored
        if len(stored) == 2:
            return stored[1]
        measure = stored[0]
        return measure[1] if measure[0] == 1 else None


class KnownTokens:
    """pi's estimate of each message entry that the walk measured as one message, by position
    (what a messages row takes from the walk's measures): the measures, keyed by the entries'
    addresses in a dict as large as the file, go before the columns are made."""

    __slots__ = ("values", "other")

    def __init__(self, entries: list[Any], kinds: list[Any], plain: dict[int, Any]) -> None:
        self.values = values = array("q", [-1]) * len(entries)
        self.other: dict[int, Any] = {}
        one = plain.one_message_tokens if isinstance(plain, CompactMeasures) else _generic(plain)
        for i, kind in enumerate(kinds):
            if kind != "message":
                continue
            tokens = one(id(entries[i]))
            if tokens is None:
                continue
            if tokens.__class__ is int and 0 <= tokens < 1 << 62:
                values[i] = tokens
            else:
                self.other[i] = tokens

    def get(self, i: int) -> Any:
        tokens = self.values[i]
        return tokens if tokens >= 0 else self.other.get(i)


def _generic(plain: dict[int, Any]) -> Any:
    def one(key: int) -> Any:
        measure = plain.get(key)
        return measure[1] if measure is not None and measure[0] == 1 else None

    return one


def _measure(stored: Any) -> Measure:
    if stored.__class__ is int:
        return (1, stored, None, 0, None)
    if len(stored) == 2:
        return (1, stored[1], stored, 0, None)
    return stored[0]
