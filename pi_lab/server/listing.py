"""The Pi Sessions panel: every session under pi's sessions folder, grouped by project, searchable.

pi keeps one folder per working directory (``--home-ann-proj--``, session-format.md §1) and
summarises each file as a ``SessionInfo`` (§10). A session is listed under the ``cwd`` its own
header names (:func:`group_title`), since the folder name cannot be decoded unambiguously and a
folder may hold sessions copied from elsewhere; its date is pi's ``modified``, except that a time
in 1970 is not taken for one (``_FIRST_MS``, given to pi_lab.session.summary's builder).

Each file is read once into a :class:`FileIndex`, keyed by its path and checked against its
device, inode, size and modification time. A file that only grew (pi appends) is read from where
the last read stopped, so following a live session costs its new bytes only; a file that shrank,
was replaced or rewritten (a migration) is read again from the start.

Search looks at what pi's session selector looks at (the name, the id, the cwd and the text of
every user and assistant message), over the whole session. The index keeps that text lower-cased
and zlib-compressed in chunks of whole entries, plus, for each entry, where its line starts in
the file: a query decompresses the chunks of each session until every word was found, and the
snippets shown for a hit are cut from the entry read back from the file, in its own letter case.
Memory is the compressed text (about a third of it: 9.8 MB for the 26.9 MB of text of a folder of
1,000 sessions copied from the real fixtures, 506 MB on disk) plus 12 bytes per message; a query
over that folder takes 0.1-0.3 s. Nothing else of a session is kept (the summary is a few fields).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable
from typing import Any

from pi_lab.formats.detect import UnknownSessionFormat, detect_format_of
from pi_lab.server.file_index import COUNT_CAP, Chunk, FileIndex, ForeignIndex, NotRegular, read_line, snippet
from pi_lab.server.locations import SESSIONS_PREFIX, inside
from pi_lab.session.flatten import search_tokens
from pi_lab.session.storage import decode_and_parse, file_kind
from pi_lab.session.summary import SessionInfo
from pi_lab.view.titles import TITLE_CHARS, first_user_message, message_text, session_title, title_fields

__all__ = ["SessionListing", "SEARCH_TEXT_LIMIT", "session_title", "first_user_message", "title_fields"]

# There is no limit any more: the whole text of every session is searched. (The name stays for
# callers that read it; it used to be 64 KiB.)
SEARCH_TEXT_LIMIT: int | None = None



NO_FOLDER_TITLE = "(sessions folder)"


def group_title(cwd: str, folder: str) -> str:
    """The group a session is listed in, which is also its title: the working directory its
    own header names (pi's session selector shows each session's cwd), else its folder in the
    sessions folder. Grouping by the title itself means no two groups ever share one, and the
    listing and its search results put a session in the same group (a group named after its
    newest session's cwd, as before, changed its name with the search and put sessions recorded
    elsewhere and copied into one folder under another project's name)."""
    return cwd or folder or NO_FOLDER_TITLE


# How deep below a folder sessions are looked for, by the agent whose folder it is (None: a
# configured folder of any agent's sessions).
_DEPTH: dict[str | None, int] = {"pi": 1, "claude-code": 1, "codex": 3}


def _agent_of_file(path: str) -> str | None:
    """The agent whose session the file at ``path`` is, from its first bytes; None for none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.pread(fd, 1 << 20, 0)
    finally:
        os.close(fd)
    try:
        return detect_format_of(data)
    except (UnknownSessionFormat, TypeError):  # TypeError: a line's type is a list (see store._agent_of)
        return None


class SessionListing:
    """Lists a sessions folder; safe to call from several worker threads."""

    def __init__(self) -> None:
        self._cache: dict[str, FileIndex] = {}
        self._lock = threading.Lock()

    def _index(self, path: str, st: os.stat_result, agent: str | None = "pi") -> FileIndex | None:
        with self._lock:
            index = self._cache.get(path)
        if index is None:
            if agent is None:
                agent = _agent_of_file(path)
                if agent is None:
                    return None
            index = FileIndex() if agent == "pi" else ForeignIndex(agent)
            with self._lock:
                index = self._cache.setdefault(path, index)
        with index.lock:
            try:
                index.update(path, st)
            except (OSError, NotRegular):
                with self._lock:
                    self._cache.pop(path, None)
                return None
        return index

    def memory(self) -> dict[str, int]:
        """``{"files", "index_bytes", "text_bytes"}``: what the search index holds now."""
        with self._lock:
            indexes = list(self._cache.values())
        return {"files": len(indexes), "index_bytes": sum(i.index_bytes() for i in indexes),
                "text_bytes": sum(i.text_bytes() for i in indexes)}

    def list(self, sessions_dir: str, query: str = "", limit: int = 2000,
             others: Iterable[tuple[str, str, str | None]] = ()) -> dict[str, Any]:
        """``{"folder", "exists", "groups": [{"title", "cwd", "dir", "newest", "sessions": [...]}], ...}``
        (one group per :func:`group_title`),
        newest first, keeping sessions whose text contains every word of ``query``; with a query,
        each session carries ``hits``: how many messages match and a few snippets.

        ``others``: more folders, ``(location prefix, folder, agent)`` (``PiLabConfig.session_folders``;
        agent ``None`` when each file says which agent wrote it); each row names its ``agent``."""
        result: dict[str, Any] = {"folder": sessions_dir, "exists": os.path.isdir(sessions_dir), "groups": [],
                                  "total": 0, "shown": 0, "query": query, "skipped": [], "folders": []}
        folders = [(SESSIONS_PREFIX, sessions_dir, "pi")] if sessions_dir else []
        folders += [f for f in others if f[0] != SESSIONS_PREFIX]
        terms = search_tokens(query) if query else []
        groups: dict[str, list[dict[str, Any]]] = {}
        total = 0
        for prefix, folder, agent in folders:
            exists = os.path.isdir(folder)
            result["folders"].append({"prefix": prefix, "agent": agent, "exists": exists})
            if exists:
                total += self._list_folder(prefix, folder, agent, terms, groups, result["skipped"])
        result["exists"] = any(f["exists"] for f in result["folders"])
        ordered = []
        for title, sessions in groups.items():
            sessions.sort(key=lambda s: s["modified_ms"], reverse=True)
            folders_of = {s["dir"] for s in sessions}
            # The panel titles a group by ``cwd``, else by ``dir``: both are set so that it shows
            # ``title``. ``dir`` is the folder when all the group's sessions are in one.
            cwd = title if any(s["cwd"] == title for s in sessions) else ""
            ordered.append({"title": title, "cwd": cwd, "newest": sessions[0]["modified_ms"],
                            "dir": folders_of.pop() if len(folders_of) == 1 else "", "sessions": sessions,
                            "agents": sorted({s["agent"] for s in sessions})})
        ordered.sort(key=lambda g: g["newest"], reverse=True)
        shown = 0
        for group in ordered:
            room = max(0, limit - shown)
            group["more"] = max(0, len(group["sessions"]) - room)
            group["sessions"] = group["sessions"][:room]
            shown += len(group["sessions"])
        result.update(groups=[g for g in ordered if g["sessions"]], total=total, shown=shown)
        return result

    def _list_folder(self, prefix: str, folder: str, agent: str | None, terms: list[str],
                     groups: dict[str, list[dict[str, Any]]], skipped: list[dict[str, str]]) -> int:
        """Add the sessions of one folder to ``groups``; how many sessions it holds."""
        base = os.path.realpath(folder)
        seen: set[str] = set()
        total = 0
        for directory, relative in self._folders(base, _DEPTH.get(agent, 4)):
            try:
                names = sorted(n for n in os.listdir(directory) if n.endswith(".jsonl"))
            except OSError:
                continue
            for name in names:
                if agent != "pi" and name.startswith("agent-"):
                    continue  # a Claude Code sub-agent's file: it folds into its parent session
                path = os.path.join(directory, name)
                real = os.path.realpath(path)
                if not inside(real, base):
                    continue  # a link leading out: the viewer would refuse to open it
                try:
                    st = os.stat(real)  # never open a FIFO or a device: reading one can block
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    skipped.append({"file": f"{relative}/{name}" if relative else name, "reason": _kind(st.st_mode)})
                    continue
                seen.add(path)
                index = self._index(path, st, agent)
                if index is None:
                    continue
                with index.lock:
                    info = index.info(path, st)
                    if info is None:
                        continue
                    total += 1
                    hits = None
                    if terms:
                        meta = " ".join([info.name or "", info.first_message, info.cwd, str(info.id)]).lower()
                        found = index.search(terms, meta)
                        if found is None:
                            continue
                        hits = self._hits(path, index, found, terms, meta)
                row = self._row(info, relative, name, st, prefix)
                row["agent"] = index.agent if isinstance(index, ForeignIndex) else "pi"
                if hits is not None:
                    row["hits"] = hits
                groups.setdefault(group_title(info.cwd, relative), []).append(row)
        with self._lock:
            for path in [p for p in self._cache if inside(p, base) and p not in seen]:
                del self._cache[path]
        return total

    @staticmethod
    def _hits(path: str, index: FileIndex, found: tuple[int, list[tuple[Chunk, int, int]]],
              terms: list[str], meta: str) -> dict[str, Any]:
        count, places = found
        snippets: list[dict[str, Any]] = []
        for chunk, entry, _ in places:
            if isinstance(index, ForeignIndex):
                text = index.text_at(chunk.lines[entry])
                if text is not None:
                    # no entry id: the row a hit selects is found by the search itself
                    snippets.append({**snippet(text, terms), "role": None, "entry_id": None})
                continue
            raw = read_line(path, chunk.lines[entry], index.identity)
            parsed = decode_and_parse(raw) if raw else None
            message = parsed.get("message") if parsed else None
            if parsed is None or not isinstance(message, dict):
                continue
            piece = snippet(message_text(message), terms)
            piece["role"] = message.get("role")
            piece["entry_id"] = parsed.get("id") if isinstance(parsed.get("id"), str) else None
            snippets.append(piece)
        if not snippets:
            # Every word is in the name, the cwd or the id only: show the first of them that has one.
            header = index.header or {}
            fields = [index.name or "", str(header.get("cwd") or ""), str(header.get("id") or "")]
            text = next((f for f in fields if any(t in f.lower() for t in terms)), meta)
            piece = snippet(text, terms)
            piece["role"] = "session"
            piece["entry_id"] = None
            snippets.append(piece)
        return {"count": count, "capped": count >= COUNT_CAP, "snippets": snippets}

    @staticmethod
    def _folders(base: str, depth: int = 1) -> list[tuple[str, str]]:
        """The sessions folder itself (a flat custom folder) and the folders in it down to
        ``depth`` levels (pi and Claude Code: one folder per project; Codex: YYYY/MM/DD), in name
        order; a ``subagents`` folder holds no sessions of its own (Claude Code's sub-agents)."""
        folders = [(base, "")]
        stack = [(base, "", 0)]
        while stack:
            directory, relative, level = stack.pop()
            if level >= depth:
                continue
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name, reverse=True)
            except OSError:
                continue
            for entry in entries:
                try:
                    is_dir = entry.is_dir()  # follows links, as pi's listAll does
                except OSError:
                    continue
                if is_dir and entry.name != "subagents" and inside(os.path.realpath(entry.path), base):
                    below = f"{relative}/{entry.name}" if relative else entry.name
                    folders.append((entry.path, below))
                    stack.append((entry.path, below, level + 1))
        return folders

    @staticmethod
    def _row(info: SessionInfo, relative: str, name: str, st: os.stat_result,
             prefix: str = SESSIONS_PREFIX) -> dict[str, Any]:
        location = prefix + (f"{relative}/{name}" if relative else name)
        return {
            "location": location,
            "file": name,
            "dir": relative,
            "id": info.id,
            "name": info.name,
            "title": session_title(info.name, info.first_message),
            "cwd": info.cwd,
            "first_message": info.first_message[:TITLE_CHARS],
            "message_count": info.message_count,
            "created": info.created.isoformat().replace("+00:00", "Z"),
            "modified": info.modified.isoformat().replace("+00:00", "Z"),
            "modified_ms": int(info.modified.timestamp() * 1000),
            "file_modified": st.st_mtime,
            "size": st.st_size,
            "parent_session": info.parent_session_path,
        }


# The listing's words for storage's kinds of non-regular file (the listing says what a
# reader sees in the file browser; one classification of st_mode serves both).
_LISTED_KIND = {
    "directory": "a folder",
    "FIFO (named pipe)": "a FIFO (named pipe)",
    "socket": "a socket",
    "character device": "a device",
    "block device": "a device",
}


def _kind(mode: int) -> str:
    return _LISTED_KIND.get(file_kind(mode), "not a regular file")
