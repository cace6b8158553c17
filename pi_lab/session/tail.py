"""Following a growing file: what was appended since the last read, and nothing else.

A session file only grows (pi appends one complete line per write). A reader that follows
it keeps three facts: which file it read (device and inode), how far its bytes are taken
in (``offset``: every byte before it is in memory) and how big the file was (``size``).
:class:`FileTail` holds them and reads the rest:

    tail = FileTail(path, offset=consumed, size=size, identity=(st_dev, st_ino))
    chunk = tail.read()             # bytes from tail.offset to the end of the file now
    lines = chunk.complete          # up to the last newline: whole lines only
    tail.advance(len(lines))        # the unfinished rest is read again next time

A file that shrank or was replaced by another file raises :class:`FileReplaced` (a
``ValueError``, as ``SessionManager.refresh`` documents): an append-only session can only
grow, so the reader must reload.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pi_lab.errors import PiLabError

__all__ = ["FileTail", "TailChunk", "FileReplaced"]


class FileReplaced(PiLabError, ValueError):
    """The followed file shrank or is another file now; its appended bytes mean nothing."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path} {reason}")


@dataclass(frozen=True, slots=True)
class TailChunk:
    """The bytes from ``start`` (the tail's offset) to the file's end (``size``) at one read."""

    start: int
    data: bytes
    size: int

    @property
    def complete(self) -> bytes:
        """``data`` up to and including its last newline (whole lines only)."""
        end = self.data.rfind(b"\n") + 1
        return self.data[:end]

    @property
    def partial(self) -> bytes:
        """An unfinished last line (no newline yet), kept for the next read."""
        return self.data[self.data.rfind(b"\n") + 1:]


class FileTail:
    """The read position in one followed file (see the module docstring)."""

    __slots__ = ("path", "offset", "size", "identity")

    def __init__(self, path: str | None = None, *, offset: int = 0, size: int = 0,
                 identity: tuple[int, int] | None = None) -> None:
        self.path = path
        self.offset = offset  # every byte before this one is taken in
        self.size = size  # the file's size at the last read or own write
        self.identity = identity  # (st_dev, st_ino); None before the first read

    def __repr__(self) -> str:
        return f"<FileTail {self.path!r} offset {self.offset} of {self.size}>"

    def reset(self, path: str | None = None, *, offset: int = 0, size: int = 0,
              identity: tuple[int, int] | None = None) -> None:
        self.path = path if path is not None else self.path
        self.offset, self.size, self.identity = offset, size, identity

    def check(self, st: os.stat_result) -> None:
        """Raise :class:`FileReplaced` unless ``st`` is the followed file, not shrunk."""
        if self.identity is not None and (st.st_dev, st.st_ino) != self.identity:
            raise FileReplaced(str(self.path), "was replaced by another file since it was read")
        if st.st_size < self.size:
            raise FileReplaced(str(self.path), f"shrank from {self.size} to {st.st_size} bytes since it was read")

    def read(self, path: str | None = None) -> TailChunk:
        """The bytes appended after :attr:`offset` (empty when there are none); updates
        :attr:`size` but not the offset (see :meth:`advance`)."""
        with open(path or self.path, "rb") as handle:  # type: ignore[arg-type]
            st = os.fstat(handle.fileno())
            self.check(st)
            size = st.st_size
            start = self.offset
            if size <= start:
                self.size = size
                return TailChunk(start, b"", size)
            handle.seek(start)
            data = handle.read(size - start)
        self.size = start + len(data)
        return TailChunk(start, data, self.size)

    def advance(self, count: int) -> None:
        """Mark ``count`` more bytes as taken in."""
        self.offset += count
