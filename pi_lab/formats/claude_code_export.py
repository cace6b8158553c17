"""Continue a Claude Code session in pi: one branch written to a NEW pi v3 session file.

The Claude Code file is never touched. The new file holds a pi header and the entries of the path
from the root to the chosen node, exactly as pi_lab shows them (a streamed response as one
assistant message, a compaction as a pi compaction, a microcompaction's context edits, other
lines as custom entries), without the ``claudeCode`` keys; pi 1.6.0 opens it as it is (no
migration, no repair: ``tests/formats/test_claude_code_export.py`` runs pi on it) and sees the same
context pi_lab showed at that node. A first ``custom`` entry records where it came from.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from pi_lab.session.ids import Clock, epoch_ms, iso_timestamp, utc_now, uuid7
from pi_lab.session.migration import CURRENT_VERSION
from pi_lab.session.paths import session_file_name
from pi_lab.session.storage import create_exclusive

__all__ = ["export_branch_to_pi", "pi_entries_of_branch"]

Entry = dict[str, Any]


def pi_entries_of_branch(session: Any, leaf_id: str | None = None, *, clock: Clock | None = None,
                         session_id: str | None = None) -> list[Entry]:
    """The lines of the new pi file (header first) for the branch ending at ``leaf_id``
    (default: the session's leaf)."""
    now: datetime = (clock or utc_now)()
    new_id = session_id or uuid7(epoch_ms(now))
    header: Entry = {"type": "session", "version": CURRENT_VERSION, "id": new_id, "timestamp": iso_timestamp(now),
                     "cwd": session.cwd}
    source: Entry = {"type": "custom", "id": f"{new_id[:8]}-src", "parentId": None, "timestamp": iso_timestamp(now),
                     "customType": "claude-code:source",
                     "data": {"file": session.session_file, "sessionId": session.session_id,
                              "leafId": leaf_id or session.leaf_id}}
    out: list[Entry] = [header, source]
    previous = source["id"]
    for entry in session.get_branch(leaf_id):
        copy = {k: v for k, v in entry.items() if k != "claudeCode"}
        copy["parentId"] = previous
        if copy.get("type") == "compaction" and copy.get("firstKeptEntryId") is None:
            # pi's field is a string: the compaction's own id names no earlier entry, so
            # nothing before it is kept, as in Claude Code.
            copy["firstKeptEntryId"] = copy.get("id")
        out.append(copy)
        previous = copy.get("id")
    return out


def export_branch_to_pi(session: Any, target: str | os.PathLike[str], leaf_id: str | None = None, *,
                        clock: Clock | None = None, session_id: str | None = None) -> str:
    """Write the branch ending at ``leaf_id`` as a new pi session file and return its path.

    ``target`` is the new file, or a folder to create it in under pi's own file name. The file
    is created exclusively (an existing file is never replaced) and appears whole."""
    entries = pi_entries_of_branch(session, leaf_id, clock=clock, session_id=session_id)
    path = os.fspath(target)
    if os.path.isdir(path):
        path = os.path.join(path, session_file_name(entries[0]["timestamp"], entries[0]["id"]))
    create_exclusive(path, entries)
    return path
