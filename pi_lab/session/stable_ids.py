"""Entry ids that depend only on a file's bytes, for a read that must make ids without writing.

A read-only read of a format-version-1 file (which has no entry ids) migrates it in memory; the
ids it makes come from the SHA-256 of the file's bytes, so every read gives the same ones (pi
writes random ones when it opens such a file). Used by ``opening`` (``SessionManager.open(...,
read_only=True)``), ``readonly`` (sessions from bytes) and the Lab server's store; it imports no
manager, so the opener and the manager do not import each other through it.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from typing import Any

from pi_lab.session.migration import js_to_number

__all__ = ["needs_stable_ids", "stable_uuid_factory", "stable_uuid_factory_from_digest"]


def needs_stable_ids(first: dict[str, Any] | None) -> bool:
    """Whether a read-only read must make entry ids (so hash the file's bytes while reading):
    a file whose first header, as the discovery scan found it, is of format version 1, or which
    has none the scan could see."""
    version = first.get("version") if first is not None else None
    return first is None or (1.0 if version is None else js_to_number(version)) < 2


def stable_uuid_factory(seed: bytes) -> Callable[[], str]:
    """UUID-shaped strings that depend only on ``seed`` (ids for migrated version-1 files)."""
    return stable_uuid_factory_from_digest(hashlib.sha256(seed).digest())


def stable_uuid_factory_from_digest(digest: bytes) -> Callable[[], str]:
    """:func:`stable_uuid_factory` from the SHA-256 of the seed (hashed while reading)."""
    counter = itertools.count()

    def factory() -> str:
        h = hashlib.sha256(digest + next(counter).to_bytes(8, "big")).hexdigest()
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"

    return factory
