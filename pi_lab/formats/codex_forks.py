"""A Codex fork or sub-agent rollout and its parent: which session it names, where that rollout
is, and which of its first lines are copies of the parent's (Codex re-stamps the copies, so they
are matched by content, in order). docs/formats.md ("Forks and sub-agents") gives the rules."""

from __future__ import annotations

import glob
import os
from typing import Any

from pi_lab.formats.claude_code_lines import _s

Entry = dict[str, Any]

__all__ = ["parent_id_of", "codex_home_of", "find_rollout", "copied_lines", "mark_copies"]

def parent_id_of(meta: dict[str, Any]) -> tuple[str | None, str | None]:
    """The session a rollout was copied from and how: ``forked_from_id`` (a fork), else a
    sub-agent's ``source.subagent.thread_spawn.parent_thread_id`` (or top-level
    ``parent_thread_id``)."""
    forked = meta.get("forked_from_id")
    if _s(forked):
        return forked, "fork"
    source = meta.get("source")
    sub = source.get("subagent") if isinstance(source, dict) else None
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    if not _s(parent):
        parent = meta.get("parent_thread_id")  # newer files repeat it at the top level
    if _s(parent):
        return parent, "subagent"
    return None, None


def codex_home_of(path: str) -> str | None:
    """The folder holding ``sessions/`` (or ``archived_sessions/``) above ``path``."""
    here = os.path.dirname(path)
    for _ in range(8):
        if os.path.basename(here) in ("sessions", "archived_sessions"):
            return os.path.dirname(here)
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return None


def find_rollout(session_id: str, near: str) -> str | None:
    """The rollout file of ``session_id`` (its name ends with the id): beside ``near``, else
    under the Codex home ``near`` sits in (``sessions/`` and ``archived_sessions/``)."""
    if not session_id or any(c in session_id for c in "/\\*?[]") or session_id in (".", ".."):
        return None
    pattern = f"rollout-*{glob.escape(session_id)}.jsonl"
    found = glob.glob(os.path.join(glob.escape(os.path.dirname(near)), pattern))
    home = codex_home_of(near)
    if not found and home is not None:
        for sub in ("sessions", "archived_sessions"):
            found += glob.glob(os.path.join(glob.escape(os.path.join(home, sub)), "**", pattern), recursive=True)
    found = sorted(f for f in found if os.path.abspath(f) != os.path.abspath(near) and os.path.isfile(f))
    return found[0] if found else None


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("type") == b.get("type") and a.get("payload") == b.get("payload")


def copied_lines(lines: list[tuple[int, dict[str, Any]]], parent_id: str,
                 parent_lines: list[tuple[int, dict[str, Any]]] | None) -> dict[int, int | None]:
    """child line number → parent line number (None when the parent file was not read) of the
    prefix a fork or sub-agent copied from its parent.

    Codex writes the child's own ``session_meta`` first, then replays the parent's items, the
    parent's ``session_meta`` included, each re-stamped. With the parent's file: the longest run
    of lines equal (type and payload) to the parent's, from that copied header (or from the
    child's second line in files without one). Without it: the copied header and the lines after
    it stamped in the same second, the replay being written at once."""
    if len(lines) < 2:
        return {}
    start = next((i for i in range(1, len(lines)) if lines[i][1].get("type") == "session_meta"
                  and isinstance(lines[i][1].get("payload"), dict) and lines[i][1]["payload"].get("id") == parent_id),
                 None)
    out: dict[int, int | None] = {}
    if parent_lines:
        if start is None:
            i, j = 1, 1 if parent_lines[0][1].get("type") == "session_meta" else 0
        else:
            i, j = start, 0
        while i < len(lines) and j < len(parent_lines) and _same(lines[i][1], parent_lines[j][1]):
            out[lines[i][0]] = parent_lines[j][0]
            i += 1
            j += 1
        return out
    if start is None:
        return {}
    stamp = lines[start][1].get("timestamp")
    second = stamp[:19] if isinstance(stamp, str) else None
    for number, line in lines[start:]:
        ts = line.get("timestamp")
        if second is None or not isinstance(ts, str) or ts[:19] != second:
            break
        out[number] = None
    return out


def mark_copies(entries: list[Entry], copies: dict[int, int | None], parent_id: str) -> list[str]:
    marked = []
    for entry in entries:
        meta = entry.get("codex") or {}
        number = meta.get("fromCompaction") or meta.get("line")
        if number in copies:
            meta["copied"] = True
            meta["copiedFrom"] = parent_id
            if copies[number] is not None:
                meta["parentLine"] = copies[number]
            marked.append(entry["id"])
    return marked
