"""The Pi Sessions panel: every session under pi's sessions folder, grouped by project, searchable.

pi keeps one folder per working directory (``--home-ann-proj--``, session-format.md §1) and
summarises each file as a ``SessionInfo`` (§10). A session is listed under the ``cwd`` its own
header names (:func:`group_title`), since the folder name cannot be decoded unambiguously and a
folder may hold sessions copied from elsewhere; its date is pi's ``modified``, except that a time
in 1970 is not taken for one (``_FIRST_MS``, given to pi_lab.session.summary's builder).

Each file is read once into a :class:`_FileIndex`, keyed by its path and checked against its
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

import bisect
import json
import os
import stat
import threading
import zlib
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pi_lab.errors import PiLabError
from pi_lab.formats.detect import UnknownSessionFormat, detect_format_of
from pi_lab.server.locations import SESSIONS_PREFIX, inside
from pi_lab.session._text import JS_WHITESPACE, content_text
from pi_lab.session.flatten import search_tokens
from pi_lab.session.storage import _decode_and_parse, _kind_of
from pi_lab.session.summary import SessionInfo, SummaryBuilder

__all__ = ["SessionListing", "SEARCH_TEXT_LIMIT", "session_title", "first_user_message", "title_fields"]

# There is no limit any more: the whole text of every session is searched. (The name stays for
# callers that read it; it used to be 64 KiB.)
SEARCH_TEXT_LIMIT: int | None = None

_CHUNK_BYTES = 256 * 1024  # searchable text per compressed chunk (whole entries)
_READ_BYTES = 16 * 1024 * 1024  # a growing file is read in pieces of this size
_ANCHOR_BYTES = 256  # bytes compared at the start and before the end of what was read
_SNIPPETS = 3  # snippets per matching session
_SNIPPET_CONTEXT = 60  # characters shown on each side of a match
_COUNT_CAP = 1000  # matching messages counted per session, at most
_TITLE_CHARS = 300


def session_title(name: str | None, first_message: str) -> str:
    """What a session is called in the panel, on its tab and in the viewer's header: its name
    (the last ``session_info`` entry), else its first user message, as pi's session selector shows."""
    return name or first_message


def _message_text(message: Mapping[str, Any]) -> str:
    return content_text(message.get("content"), " ")


def first_user_message(entries: Iterable[Mapping[str, Any]]) -> str:
    """The text of the first user message with text, in file order (``SessionInfo.firstMessage``),
    or ``"(no messages)"``."""
    for entry in entries:
        if entry.get("type") != "message":
            continue
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "user" and not _injected(entry):
            text = _message_text(message)
            if text:
                return text
    return "(no messages)"


def _injected(entry: Mapping[str, Any]) -> bool:
    """Whether a user message is text Codex put in (its AGENTS.md, the environment), marked so by
    the Codex adapter: no title for the session. pi's entries carry no ``codex`` key."""
    marks = entry.get("codex")
    return isinstance(marks, dict) and bool(marks.get("injected"))


def title_fields(name: str | None, entries: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{"title", "first_message"}`` of a session, for the viewer's state (the same rule as the
    panel's rows)."""
    first = first_user_message(entries)[:_TITLE_CHARS]
    return {"title": session_title(name, first), "first_message": first}


@dataclass(slots=True)
class _Chunk:
    """Lower-cased text of consecutive entries, each followed by a newline (a search word has no
    whitespace, so no match spans two entries)."""

    blob: bytes  # zlib-compressed UTF-8
    starts: array  # byte offset of each entry's text in the decompressed chunk
    lines: array  # byte offset of each entry's line in the file
    size: int  # decompressed bytes

    def text(self) -> bytes:
        return zlib.decompress(self.blob)


class _FileIndex:
    """One file's summary and searchable text, brought up to date by :meth:`update`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.identity: tuple[int, int] | None = None
        self.size = -1
        self.mtime_ns = -1
        self._reset()

    def _reset(self) -> None:
        self.offset = 0  # bytes read so far (complete lines)
        self.open_tail = False  # the last line read had no newline yet
        self.head_anchor = b""
        self.end_anchor = b""
        # pi's session summary, one rule with SessionManager.list (pi_lab.session.summary); the
        # listing's own choices: no time in 1970, the title cut short, the texts indexed here.
        self.summary = SummaryBuilder(first_ms=_FIRST_MS, title_chars=_TITLE_CHARS, keep_texts=False,
                                      skip_first=_injected)
        self.chunks: list[_Chunk] = []

    # ------------------------------------------------------------------ reading

    def update(self, path: str, st: os.stat_result) -> None:
        """Catch up with the file at ``path`` (whose ``os.stat`` is ``st``)."""
        identity = (st.st_dev, st.st_ino)
        if (identity, st.st_size, st.st_mtime_ns) == (self.identity, self.size, self.mtime_ns):
            return
        # O_NONBLOCK: if the path became a FIFO since it was checked, opening it does not wait for
        # a writer; fstat then tells, and nothing is read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            now = os.fstat(fd)
            if not stat.S_ISREG(now.st_mode):
                raise _NotRegular(path)
            identity = (now.st_dev, now.st_ino)
            if not self._continues(fd, identity, now.st_size):
                self._reset()
            self._read(fd, now.st_size)
            self.identity, self.size, self.mtime_ns = identity, now.st_size, now.st_mtime_ns
        finally:
            os.close(fd)

    def _continues(self, fd: int, identity: tuple[int, int], size: int) -> bool:
        """Whether the file is what was read before plus new bytes (pi only appends)."""
        if self.identity != identity or size < self.offset or self.offset == 0:
            return False
        if os.pread(fd, len(self.head_anchor), 0) != self.head_anchor:
            return False
        end = self.offset - len(self.end_anchor)
        if os.pread(fd, len(self.end_anchor), end) != self.end_anchor:
            return False
        if self.open_tail and size > self.offset and os.pread(fd, 1, self.offset) != b"\n":
            return False  # the unterminated last line went on: it is another line now
        return True

    def _read(self, fd: int, size: int) -> None:
        position = self.offset
        carry = b""
        recent = self.end_anchor  # the last bytes read, kept to check the file next time
        builder = _ChunkBuilder(self.chunks)
        while position < size and not self.summary.not_session:
            piece = os.pread(fd, min(_READ_BYTES, size - position), position)
            if not piece:
                break
            data = carry + piece
            base = position - len(carry)
            position += len(piece)
            start = 0
            while True:
                end = data.find(b"\n", start)
                if end < 0:
                    break
                self._line(data[start:end], base + start, builder)
                start = end + 1
            carry = data[start:]
            if start:
                recent = (recent + data[max(0, start - _ANCHOR_BYTES):start])[-_ANCHOR_BYTES:]
                self.open_tail = False
            self.offset = base + start
        if carry and not self.summary.not_session:
            # A last line without its newline: pi's reader takes it if it parses; a writer in the
            # middle of it leaves JSON that does not parse yet, which is read again next time.
            if _decode_and_parse(carry) is not None:
                self._line(carry, self.offset, builder)
                self.offset += len(carry)
                self.open_tail = True
                recent = (recent + carry)[-_ANCHOR_BYTES:]
        builder.finish()
        self.end_anchor = recent
        if len(self.head_anchor) < min(_ANCHOR_BYTES, self.offset):
            self.head_anchor = os.pread(fd, min(_ANCHOR_BYTES, self.offset), 0)

    def _line(self, raw: bytes, where: int, builder: _ChunkBuilder) -> None:
        if not raw.strip():
            return
        entry = _decode_and_parse(raw)
        if entry is None:
            return
        text = self.summary.add(entry)
        if text:
            builder.add(text.lower().encode("utf-8", "surrogatepass"), where)

    @property
    def header(self) -> dict[str, Any] | None:
        return self.summary.header

    @property
    def name(self) -> str | None:
        return self.summary.name

    def info(self, path: str, st: os.stat_result) -> SessionInfo | None:
        return self.summary.info(path, st.st_mtime, all_messages_text="")  # searched through the chunks

    def index_bytes(self) -> int:
        """Memory held by the searchable text and its maps (compressed)."""
        return sum(len(c.blob) + c.starts.itemsize * len(c.starts) + c.lines.itemsize * len(c.lines)
                   for c in self.chunks)

    def text_bytes(self) -> int:
        return sum(c.size for c in self.chunks)

    def search(self, terms: list[str], meta: str) -> tuple[int, list[tuple[_Chunk, int, int]]] | None:
        """``None`` unless every term occurs in ``meta`` or the text; else how many messages
        match (capped) and the first few ``(chunk, entry, byte offset of the match)``."""
        missing = [t for t in terms if t not in meta]
        encoded = [t.encode("utf-8", "surrogatepass") for t in terms]
        texts: list[tuple[_Chunk, bytes]] = []
        if missing:
            wanted = {t.encode("utf-8", "surrogatepass") for t in missing}
            for chunk in self.chunks:
                text = chunk.text()
                texts.append((chunk, text))
                wanted = {t for t in wanted if t not in text}
                if not wanted:
                    break
            if wanted:
                return None
            # A hit: the remaining chunks count too.
            texts.extend((c, c.text()) for c in self.chunks[len(texts):])
        else:
            texts = [(c, c.text()) for c in self.chunks]
        matched: set[tuple[int, int]] = set()
        first: dict[tuple[int, int], int] = {}
        for number, (chunk, text) in enumerate(texts):
            for term in encoded:
                at = text.find(term)
                while at >= 0 and len(matched) < _COUNT_CAP:
                    entry = bisect.bisect_right(chunk.starts, at) - 1
                    key = (number, entry)
                    matched.add(key)
                    first.setdefault(key, at)
                    # the next match in another entry: skip the rest of this one
                    following = chunk.starts[entry + 1] if entry + 1 < len(chunk.starts) else len(text)
                    at = text.find(term, following)
        hits = [(texts[n][0], e, first[(n, e)]) for n, e in sorted(first)[:_SNIPPETS]]
        return len(matched), hits


class _NotRegular(Exception):
    pass


_BLOCK_ENTRIES = 64  # texts per compressed block of a foreign index's original-case texts


class _ForeignIndex(_FileIndex):
    """Another agent's file, summarised from its adapter's pi-shaped entries (its raw lines are
    not entries): the same summary and searchable text as a pi file's, read again whole when the
    file changes (the adapters' refresh reads whole too). ``lines`` of a chunk number the texts,
    whose original letter case is kept in compressed blocks for the snippets."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        super().__init__()

    def _reset(self) -> None:
        super()._reset()
        self.blocks: list[bytes] = []

    def update(self, path: str, st: os.stat_result) -> None:
        identity = (st.st_dev, st.st_ino)
        if (identity, st.st_size, st.st_mtime_ns) == (self.identity, self.size, self.mtime_ns):
            return
        if not stat.S_ISREG(st.st_mode):
            raise _NotRegular(path)
        from pi_lab.formats import open_session

        self._reset()
        try:
            sm = open_session(path)
        except (PiLabError, ValueError):
            self.summary.not_session = True
        else:
            self._take(sm)
        self.identity, self.size, self.mtime_ns = identity, st.st_size, st.st_mtime_ns

    def _take(self, sm: Any) -> None:
        summary = self.summary
        summary.add({**(sm.header or {}), "type": "session"})  # the adapter's header, pi-shaped
        builder = _ChunkBuilder(self.chunks)
        texts: list[str] = []
        for entry in sm.get_entries():
            text = summary.add(entry)
            if text:
                builder.add(text.lower().encode("utf-8", "surrogatepass"), len(texts))
                texts.append(text)
        if summary.name is None:
            summary.name = sm.session_name  # Claude Code's custom-title is no session_info entry
        builder.finish()
        # ensure_ascii: a lone surrogate from a JSON escape stays writable
        self.blocks = [zlib.compress(json.dumps(texts[i:i + _BLOCK_ENTRIES]).encode("ascii"), 6)
                       for i in range(0, len(texts), _BLOCK_ENTRIES)]

    def text_at(self, number: int) -> str | None:
        """The ``number``-th searchable text, in its own letter case."""
        block, at = divmod(number, _BLOCK_ENTRIES)
        if block >= len(self.blocks):
            return None
        texts = json.loads(zlib.decompress(self.blocks[block]))
        return texts[at] if at < len(texts) else None

    def index_bytes(self) -> int:
        return super().index_bytes() + sum(len(b) for b in self.blocks)


class _ChunkBuilder:
    """Appends entry texts to a file's chunks, recompressing only the last, unfinished one."""

    def __init__(self, chunks: list[_Chunk]):
        self.chunks = chunks
        self.parts: list[bytes] = []
        self.starts = array("I")
        self.lines = array("Q")
        self.size = 0
        if chunks and chunks[-1].size < _CHUNK_BYTES:
            last = chunks.pop()
            self.parts = [last.text()]
            self.starts, self.lines, self.size = last.starts, last.lines, last.size

    def add(self, text: bytes, line: int) -> None:
        self.starts.append(self.size)
        self.lines.append(line)
        self.parts.append(text)
        self.parts.append(b"\n")
        self.size += len(text) + 1
        if self.size >= _CHUNK_BYTES:
            self._close()

    def _close(self) -> None:
        if self.size:
            blob = zlib.compress(b"".join(self.parts), 6)
            self.chunks.append(_Chunk(blob, self.starts, self.lines, self.size))
        self.parts, self.starts, self.lines, self.size = [], array("I"), array("Q"), 0

    def finish(self) -> None:
        self._close()



# 1971-01-01: a time before it is a counter or seconds read as milliseconds, not a date (the
# listing's own choice where pi shows such a session as last changed on 1970-01-01).
_FIRST_MS = 365 * 86_400_000


_WHITESPACE = str.maketrans({c: " " for c in JS_WHITESPACE})


def _read_line(path: str, offset: int, identity: tuple[int, int] | None) -> bytes | None:
    """The line that starts at ``offset``, if the file is still the one indexed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != identity:
            return None
        parts: list[bytes] = []
        position = offset
        while True:
            piece = os.pread(fd, 64 * 1024, position)
            if not piece:
                break
            end = piece.find(b"\n")
            if end >= 0:
                parts.append(piece[:end])
                break
            parts.append(piece)
            position += len(piece)
        return b"".join(parts)
    finally:
        os.close(fd)


def snippet(text: str, terms: list[str]) -> dict[str, Any]:
    """A short piece of ``text`` around the first match of any of ``terms``, as ``parts``: a list
    of ``[text, marked]`` pairs (the browser writes them as text, marking the matches)."""
    flat = text.translate(_WHITESPACE)
    lower = flat.lower()
    same_length = len(lower) == len(flat)  # lower() can change lengths (U+0130): then mark nothing
    spans: list[tuple[int, int]] = []
    if same_length:
        for term in terms:
            at = lower.find(term)
            while at >= 0:
                spans.append((at, at + len(term)))
                at = lower.find(term, at + len(term))
    spans.sort()
    centre = spans[0][0] if spans else 0
    start = max(0, centre - _SNIPPET_CONTEXT)
    end = min(len(flat), centre + _SNIPPET_CONTEXT + (spans[0][1] - spans[0][0] if spans else 0))
    if start > 0:
        space = flat.find(" ", start, centre)
        start = space + 1 if 0 <= space < centre else start
    parts: list[list[Any]] = []
    if start > 0:
        parts.append(["…", False])
    cursor = start
    for a, b in spans:
        if b <= cursor or a >= end:
            continue
        a = max(a, cursor)
        if a > cursor:
            parts.append([flat[cursor:a], False])
        parts.append([flat[a:min(b, end)], True])
        cursor = min(b, end)
    if cursor < end:
        parts.append([flat[cursor:end], False])
    if end < len(flat):
        parts.append(["…", False])
    return {"parts": parts}


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
        self._cache: dict[str, _FileIndex] = {}
        self._lock = threading.Lock()

    def _index(self, path: str, st: os.stat_result, agent: str | None = "pi") -> _FileIndex | None:
        with self._lock:
            index = self._cache.get(path)
        if index is None:
            if agent is None:
                agent = _agent_of_file(path)
                if agent is None:
                    return None
            index = _FileIndex() if agent == "pi" else _ForeignIndex(agent)
            with self._lock:
                index = self._cache.setdefault(path, index)
        with index.lock:
            try:
                index.update(path, st)
            except (OSError, _NotRegular):
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
                row["agent"] = index.agent if isinstance(index, _ForeignIndex) else "pi"
                if hits is not None:
                    row["hits"] = hits
                groups.setdefault(group_title(info.cwd, relative), []).append(row)
        with self._lock:
            for path in [p for p in self._cache if inside(p, base) and p not in seen]:
                del self._cache[path]
        return total

    @staticmethod
    def _hits(path: str, index: _FileIndex, found: tuple[int, list[tuple[_Chunk, int, int]]],
              terms: list[str], meta: str) -> dict[str, Any]:
        count, places = found
        snippets: list[dict[str, Any]] = []
        for chunk, entry, _ in places:
            if isinstance(index, _ForeignIndex):
                text = index.text_at(chunk.lines[entry])
                if text is not None:
                    # no entry id: the row a hit selects is found by the search itself
                    snippets.append({**snippet(text, terms), "role": None, "entry_id": None})
                continue
            raw = _read_line(path, chunk.lines[entry], index.identity)
            parsed = _decode_and_parse(raw) if raw else None
            message = parsed.get("message") if parsed else None
            if not isinstance(message, dict):
                continue
            piece = snippet(_message_text(message), terms)
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
        return {"count": count, "capped": count >= _COUNT_CAP, "snippets": snippets}

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
            "first_message": info.first_message[:_TITLE_CHARS],
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
    return _LISTED_KIND.get(_kind_of(mode), "not a regular file")
