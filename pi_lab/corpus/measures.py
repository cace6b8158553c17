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

from typing import Any

from pi_lab.compaction.context_walk import Measure

__all__ = ["CompactMeasures"]


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


def _measure(stored: Any) -> Measure:
    if stored.__class__ is int:
        return (1, stored, None, 0, None)
    if len(stored) == 2:
        return (1, stored[1], stored, 0, None)
    return stored[0]
