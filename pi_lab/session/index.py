"""The lookups SessionManager keeps over its lines: entries by id, the leaf, the labels.

pi rebuilds them from every line in file order (session-format.md §9); these functions do
that over plain dicts so the manager only swaps the results in.
"""

from __future__ import annotations

from typing import Any

from pi_lab.session.appends import _is_user_or_assistant
from pi_lab.session.entries import Entry
from pi_lab.session.tree import UNSET


def apply_label(labels: dict[str, str], stamps: dict[str, Any], entry: Entry) -> None:
    """Set (or, with an empty label, clear) the label a ``label`` entry names."""
    target = entry.get("targetId")
    if target.__class__ is not str:
        return  # pi's label map would hold it under a key no string id ever finds
    if entry.get("label"):
        labels[target] = entry["label"]
        stamps[target] = entry.get("timestamp")
    else:
        labels.pop(target, None)
        stamps.pop(target, None)


def index_lines(
    file_entries: list[Entry],
) -> tuple[dict[str, Entry], Any, bool, dict[str, str], dict[str, Any]]:
    """(entries by id, leaf id, whether there is a user or assistant message, labels, their
    timestamps) of a session's lines, header included."""
    by_id: dict[str, Entry] = {}
    labels: dict[str, str] = {}
    stamps: dict[str, Any] = {}
    labels_seen = False
    leaf: Any = None
    for entry in file_entries:
        kind = entry.get("type")
        if kind == "session":
            continue
        entry_id = entry.get("id")
        if entry_id.__class__ is str:
            by_id[entry_id] = entry
            leaf = entry_id
        else:
            leaf = UNSET  # pi sets the leaf to the line's id even when it has none
        if kind == "label":
            labels_seen = True
    has_conversation = any(_is_user_or_assistant(e) for e in file_entries)
    if labels_seen:
        for entry in file_entries:
            if entry.get("type") == "label":
                apply_label(labels, stamps, entry)
    return by_id, leaf, has_conversation, labels, stamps
