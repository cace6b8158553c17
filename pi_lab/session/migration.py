"""Format versions 1 → 2 → 3 (session-format.md §7)."""

from __future__ import annotations

from typing import Any

from pi_lab.session.ids import UuidFactory, new_entry_id

__all__ = ["CURRENT_VERSION", "migrate_entries"]

CURRENT_VERSION = 3


def migrate_entries(file_entries: list[dict[str, Any]], uuid_factory: UuidFactory | None = None) -> bool:
    """Migrate ``file_entries`` (header included) in place; return whether anything changed."""
    header = next((e for e in file_entries if e.get("type") == "session"), None)
    version = header.get("version", 1) if header is not None else 1
    if not isinstance(version, (int, float)) or isinstance(version, bool):
        version = 1
    if version >= CURRENT_VERSION:
        return False
    if version < 2:
        _v1_to_v2(file_entries, uuid_factory)
    _v2_to_v3(file_entries)
    return True


def _v1_to_v2(file_entries: list[dict[str, Any]], uuid_factory: UuidFactory | None) -> None:
    # v1 files are a linear log without ids. pi gives every line a fresh id chained to the
    # previous one; its collision set is never filled, we check against the ids we made.
    used: set[str] = set()
    previous: str | None = None
    for entry in file_entries:
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        entry_id = new_entry_id(used, uuid_factory)
        used.add(entry_id)
        entry["id"] = entry_id
        entry["parentId"] = previous
        previous = entry_id
    for entry in file_entries:
        if entry.get("type") != "compaction":
            continue
        index = entry.get("firstKeptEntryIndex")
        if isinstance(index, bool) or not isinstance(index, (int, float)):
            continue
        # The index counts lines of the whole loaded list, header at 0.
        if isinstance(index, float) and index.is_integer():
            index = int(index)
        if isinstance(index, int) and 0 <= index < len(file_entries):
            target = file_entries[index]
            if target.get("type") != "session":
                entry["firstKeptEntryId"] = target["id"]
        del entry["firstKeptEntryIndex"]


def _v2_to_v3(file_entries: list[dict[str, Any]]) -> None:
    for entry in file_entries:
        if entry.get("type") == "session":
            entry["version"] = 3
        elif entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
