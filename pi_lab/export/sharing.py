"""One string object for each short text repeated across a session's parsed entries.

The JSON parser makes a new string for every value it reads: each assistant message of a
session repeats ``"message"``, its role, ``api``, ``provider``, ``model`` and ``stopReason``,
and each entry's ``parentId`` repeats the id of the entry before it. An export holds every
parsed entry of the file until its last chunk (about 1.46 KB an entry on a generated linear
session); letting the equal strings be one object saves about 0.18 KB of it (200,000 entries:
peak RSS 672 -> 637 MB).

Only the export's own read-only manager is changed this way (``html._open_any``), never a
caller's: a value is replaced by an equal string, so every value, key order and length stays
as it was; only which string object holds it changes. Strings are the one type shared (an int
and a float may be equal, and a dict or list may be changed by whoever holds it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["SHARED_MAX_CHARS", "share_strings"]

SHARED_MAX_CHARS = 64
"""Longer strings are left alone: texts, arguments and signatures that long seldom repeat."""


def share_strings(entries: Iterable[Any]) -> int:
    """Replace, in place, every string value of at most :data:`SHARED_MAX_CHARS` characters in
    the dicts and lists of ``entries`` by the first equal string met. Returns how many values
    now point at an earlier string. Iterative (entries may nest thousands of levels deep);
    anything that is not exactly a dict or a list (a NonObjectLine, a skeleton) is skipped."""
    first: dict[str, str] = {}
    shared = 0
    stack: list[Any] = []
    for entry in entries:
        if entry.__class__ is not dict:
            continue
        stack.append(entry)
        while stack:
            item = stack.pop()
            if item.__class__ is dict:
                pairs: Iterable[tuple[Any, Any]] = item.items()
            else:
                pairs = enumerate(item)
            for key, value in pairs:
                kind = value.__class__
                if kind is str:
                    if len(value) <= SHARED_MAX_CHARS:
                        known = first.setdefault(value, value)
                        if known is not value:
                            item[key] = known  # (same key: the dict's size and order stay)
                            shared += 1
                elif kind is dict or kind is list:
                    stack.append(value)
    return shared
