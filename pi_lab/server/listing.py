"""The Pi Sessions panel: every session under pi's sessions folder, grouped by project.

pi keeps one folder per working directory (``--home-ann-proj--``, session-format.md §1) and
summarises each file as a ``SessionInfo`` (§10). Summaries are cached by path, size and
modification time, so listing again only reads files that changed. A project is shown by the
``cwd`` its sessions' headers name, since the folder name cannot be decoded unambiguously.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pi_lab.server.locations import SESSIONS_PREFIX, inside
from pi_lab.session.paths import SessionInfo, session_info

__all__ = ["SessionListing", "SEARCH_TEXT_LIMIT"]

# pi searches the text of every message; the cache keeps the first 64 KiB of it per session, so
# a folder of a thousand sessions costs tens of megabytes at most.
SEARCH_TEXT_LIMIT = 64 * 1024


@dataclass(frozen=True, slots=True)
class _Summary:
    stamp: tuple[int, int]
    info: SessionInfo | None
    search_text: str


def _search_text(info: SessionInfo) -> str:
    parts = [info.name or "", info.first_message, info.cwd, info.id, info.all_messages_text[:SEARCH_TEXT_LIMIT]]
    return " ".join(parts).lower()


def _matches(text: str, terms: Iterable[str]) -> bool:
    return all(term in text for term in terms)


class SessionListing:
    """Lists a sessions folder; safe to call from several worker threads."""

    def __init__(self) -> None:
        self._cache: dict[str, _Summary] = {}
        self._lock = threading.Lock()

    def _summary(self, path: str, st: os.stat_result) -> _Summary:
        stamp = (st.st_size, st.st_mtime_ns)
        with self._lock:
            known = self._cache.get(path)
        if known is not None and known.stamp == stamp:
            return known
        info = session_info(path)
        summary = _Summary(stamp, info, _search_text(info) if info else "")
        with self._lock:
            self._cache[path] = summary
        return summary

    def list(self, sessions_dir: str, query: str = "", limit: int = 2000) -> dict[str, Any]:
        """``{"folder", "exists", "groups": [{"dir", "cwd", "newest", "sessions": [...]}], ...}``,
        newest first, keeping sessions whose text contains every word of ``query``."""
        result: dict[str, Any] = {"folder": sessions_dir, "exists": os.path.isdir(sessions_dir), "groups": [],
                                  "total": 0, "shown": 0, "query": query}
        if not result["exists"]:
            return result
        base = os.path.realpath(sessions_dir)
        terms = query.lower().split()
        groups: dict[str, list[dict[str, Any]]] = {}
        cwds: dict[str, str] = {}
        seen: set[str] = set()
        total = 0
        for directory, relative in self._folders(base):
            try:
                names = sorted(n for n in os.listdir(directory) if n.endswith(".jsonl"))
            except OSError:
                continue
            for name in names:
                path = os.path.join(directory, name)
                real = os.path.realpath(path)
                if not inside(real, base):
                    continue  # a link leading out: the viewer would refuse to open it
                try:
                    st = os.stat(real)
                except OSError:
                    continue
                if not os.path.isfile(real):
                    continue
                seen.add(path)
                summary = self._summary(path, st)
                info = summary.info
                if info is None:
                    continue
                total += 1
                cwds.setdefault(relative, info.cwd)  # newest first below; any header is a fair name
                if terms and not _matches(summary.search_text, terms):
                    continue
                groups.setdefault(relative, []).append(self._row(info, relative, name, st))
        with self._lock:
            for path in [p for p in self._cache if inside(p, base) and p not in seen]:
                del self._cache[path]
        ordered = []
        for relative, sessions in groups.items():
            sessions.sort(key=lambda s: s["modified_ms"], reverse=True)
            newest = sessions[0]
            ordered.append({"dir": relative, "cwd": newest["cwd"] or cwds.get(relative, ""),
                            "newest": newest["modified_ms"], "sessions": sessions})
        ordered.sort(key=lambda g: g["newest"], reverse=True)
        shown = 0
        for group in ordered:
            room = max(0, limit - shown)
            group["more"] = max(0, len(group["sessions"]) - room)
            group["sessions"] = group["sessions"][:room]
            shown += len(group["sessions"])
        result.update(groups=[g for g in ordered if g["sessions"]], total=total, shown=shown)
        return result

    @staticmethod
    def _folders(base: str) -> list[tuple[str, str]]:
        """The sessions folder itself (a flat custom folder) and each project folder in it."""
        folders = [(base, "")]
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)
        except OSError:
            return folders
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows links, as pi's listAll does
            except OSError:
                continue
            if is_dir and inside(os.path.realpath(entry.path), base):
                folders.append((entry.path, entry.name))
        return folders

    @staticmethod
    def _row(info: SessionInfo, relative: str, name: str, st: os.stat_result) -> dict[str, Any]:
        location = SESSIONS_PREFIX + (f"{relative}/{name}" if relative else name)
        return {
            "location": location,
            "file": name,
            "id": info.id,
            "name": info.name,
            "cwd": info.cwd,
            "first_message": info.first_message[:300],
            "message_count": info.message_count,
            "created": info.created.isoformat().replace("+00:00", "Z"),
            "modified": info.modified.isoformat().replace("+00:00", "Z"),
            "modified_ms": int(info.modified.timestamp() * 1000),
            "file_modified": st.st_mtime,
            "size": st.st_size,
            "parent_session": info.parent_session_path,
        }
