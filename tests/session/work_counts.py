"""Counting work instead of timing it: how many Python lines of one module a call runs.

A complexity test compares these counts on inputs of size n and 2n (or against the size of
the output): the counts are the same on every machine and every run, unlike a wall time.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


def lines_run(module: ModuleType, call: Callable[[], Any]) -> tuple[int, Any]:
    """(Python lines of ``module`` executed while ``call()`` runs, its result)."""
    filename = module.__file__
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame, event, arg):
        # Only frames of the module are traced line by line; the rest run untraced.
        return local if frame.f_code.co_filename == filename else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = call()
    finally:
        sys.settrace(previous)
    return count, result
