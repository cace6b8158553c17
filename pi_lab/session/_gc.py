"""Pausing the cyclic garbage collector around bulk creation of acyclic objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused(objects: int | None = None, *, keep: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector while many acyclic records are created.

    Loading or flattening 100,000 entries allocates millions of dicts and lists; each
    allocation burst would otherwise trigger full collections that rescan everything
    already loaded, roughly doubling the cost. Nothing created here forms reference
    cycles, so deferring collection loses nothing. Small jobs (``objects`` below 20,000)
    and an already paused collector are left alone.

    ``keep`` is for data that stays loaded (a session's entries): the objects alive at the end
    are moved to the collector's permanent generation (``gc.freeze``), so neither the first
    collection after the pause nor any later full collection rescans millions of entry
    objects — otherwise a 100,000-entry session costs a ~0.3 s pause at the end of every load
    and again at every full collection. Frozen objects are still freed normally when nothing
    refers to them; only reference cycles among them would outlive their use, and session
    data has none.
    """
    if (objects is not None and objects < 20_000) or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        gc.enable()
