"""One session file's entry in the Sessions panel's index: its summary, and the lower-cased text
of its messages compressed in chunks of whole entries, with where each entry's line starts, so
that a search decompresses chunks until every word is found and cuts its snippets from the lines
read back from the file. A file that only grew is read from where the last read stopped. Other
agents' files are indexed from their adapter's entries (:class:`ForeignIndex`)."""

from __future__ import annotations

import bisect
import json
import os
import stat
import threading
import zlib
from array import array
from dataclasses import dataclass
from typing import Any

from pi_lab.errors import PiLabError
from pi_lab.session._text import JS_WHITESPACE
from pi_lab.session.storage import decode_and_parse
from pi_lab.session.summary import SessionInfo, SummaryBuilder
from pi_lab.view.titles import TITLE_CHARS, is_injected

_CHUNK_BYTES = 256 * 1024  # searchable text per compressed chunk (whole entries)
_READ_BYTES = 16 * 1024 * 1024  # a growing file is read in pieces of this size
_ANCHOR_BYTES = 256  # bytes compared at the start and before the end of what was read
_SNIPPETS = 3  # snippets per matching session
_SNIPPET_CONTEXT = 60  # characters shown on each side of a match
COUNT_CAP = 1000  # matching messages counted per session, at most


@dataclass(slots=True)
class Chunk:
    """Lower-cased text of consecutive entries, each followed by a newline (a search word has no
    whitespace, so no match spans two entries)."""

    blob: bytes  # zlib-compressed UTF-8
    starts: array  # byte offset of each entry's text in the decompressed chunk
    lines: array  # byte offset of each entry's line in the file
    size: int  # decompressed bytes

    def text(self) -> bytes:
        return zlib.decompress(self.blob)


class FileIndex:
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
        self.summary = SummaryBuilder(first_ms=_FIRST_MS, title_chars=TITLE_CHARS, keep_texts=False,
                                      skip_first=is_injected)
        self.chunks: list[Chunk] = []

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
                raise NotRegular(path)
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
        # An unterminated last line that went on is another line now.
        return not (self.open_tail and size > self.offset and os.pread(fd, 1, self.offset) != b"\n")

    def _read(self, fd: int, size: int) -> None:
        position = self.offset
        carry = b""
        recent = self.end_anchor  # the last bytes read, kept to check the file next time
        builder = ChunkBuilder(self.chunks)
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
            if decode_and_parse(carry) is not None:
                self._line(carry, self.offset, builder)
                self.offset += len(carry)
                self.open_tail = True
                recent = (recent + carry)[-_ANCHOR_BYTES:]
        builder.finish()
        self.end_anchor = recent
        if len(self.head_anchor) < min(_ANCHOR_BYTES, self.offset):
            self.head_anchor = os.pread(fd, min(_ANCHOR_BYTES, self.offset), 0)

    def _line(self, raw: bytes, where: int, builder: ChunkBuilder) -> None:
        if not raw.strip():
            return
        entry = decode_and_parse(raw)
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

    def search(self, terms: list[str], meta: str) -> tuple[int, list[tuple[Chunk, int, int]]] | None:
        """``None`` unless every term occurs in ``meta`` or the text; else how many messages
        match (capped) and the first few ``(chunk, entry, byte offset of the match)``."""
        missing = [t for t in terms if t not in meta]
        encoded = [t.encode("utf-8", "surrogatepass") for t in terms]
        texts: list[tuple[Chunk, bytes]] = []
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
                while at >= 0 and len(matched) < COUNT_CAP:
                    entry = bisect.bisect_right(chunk.starts, at) - 1
                    key = (number, entry)
                    matched.add(key)
                    first.setdefault(key, at)
                    # the next match in another entry: skip the rest of this one
                    following = chunk.starts[entry + 1] if entry + 1 < len(chunk.starts) else len(text)
                    at = text.find(term, following)
        hits = [(texts[n][0], e, first[(n, e)]) for n, e in sorted(first)[:_SNIPPETS]]
        return len(matched), hits


class NotRegular(Exception):
    pass


_BLOCK_ENTRIES = 64  # texts per compressed block of a foreign index's original-case texts


class ForeignIndex(FileIndex):
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
            raise NotRegular(path)
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
        builder = ChunkBuilder(self.chunks)
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


class ChunkBuilder:
    """Appends entry texts to a file's chunks, recompressing only the last, unfinished one."""

    def __init__(self, chunks: list[Chunk]):
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
            self.chunks.append(Chunk(blob, self.starts, self.lines, self.size))
        self.parts, self.starts, self.lines, self.size = [], array("I"), array("Q"), 0

    def finish(self) -> None:
        self._close()



# 1971-01-01: a time before it is a counter or seconds read as milliseconds, not a date (the
# listing's own choice where pi shows such a session as last changed on 1970-01-01).
_FIRST_MS = 365 * 86_400_000


_WHITESPACE = str.maketrans({c: " " for c in JS_WHITESPACE})


def read_line(path: str, offset: int, identity: tuple[int, int] | None) -> bytes | None:
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
