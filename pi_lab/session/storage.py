"""Reading and writing session files line by line (session-format.md §8–§9)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pi_lab.errors import NotARegularFile, PiLabError
from pi_lab.session._gc import collector_paused
from pi_lab.session._json import dumps_line, loads_object

__all__ = [
    "InvalidSessionFile",
    "LoadResult",
    "check_regular_file",
    "load_entries_from_file",
    "parse_lines",
    "read_session_header",
    "append_line",
    "create_exclusive",
    "rewrite_file",
]

Entry = dict[str, Any]

_BOM = "\ufeff"
_HEADER_SCAN_LIMIT = 1024 * 1024
_HEADER_SCAN_CHUNK = 4096


class InvalidSessionFile(PiLabError, ValueError):
    """A non-empty file that is not a pi session. Its content is never modified."""

    def __init__(self, path: str | os.PathLike[str], reason: str | None = None):
        self.path = str(path)
        self.reason = reason
        message = f"Session file is not a valid pi session: {self.path}"
        if reason:
            message += f" ({reason})"
        super().__init__(message)


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def check_regular_file(path: str | os.PathLike[str]) -> None:
    """Raise :class:`NotARegularFile` unless ``path`` is a regular file (symlinks followed).

    Uses ``os.stat`` only: opening a FIFO for reading would block until a writer appears.
    ``FileNotFoundError`` passes through.
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotARegularFile(path, _kind_of(mode))


@dataclass(slots=True)
class LoadResult:
    """Parsed lines plus what was skipped, so bad input is reported rather than hidden."""

    entries: list[Entry]  # every parsed object, header first when valid
    skipped_lines: list[int] = field(default_factory=list)  # 1-based numbers of unparsable lines
    invalid_reason: str | None = None
    ends_with_newline: bool = True
    consumed_bytes: int = 0  # bytes up to the end of the last complete line


def _decode_and_parse(raw: bytes) -> Entry | None:
    if raw.startswith(b"\xef\xbb\xbf"):
        # JSON.parse rejects a byte order mark (orjson would skip it); pi drops such a line.
        return None
    entry = loads_object(raw)
    if entry is not None:
        return entry
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        # Invalid byte sequences become U+FFFD, as a JavaScript UTF-8 decoder does.
        return loads_object(raw.decode("utf-8", errors="replace"))
    return None


def parse_lines(data: bytes, first_line_number: int = 1, *, complete_only: bool = False) -> LoadResult:
    """Parse JSONL bytes with pi's line rules.

    Lines are split on ``\\n`` only (a trailing ``\\r`` is JSON whitespace); blank lines are
    skipped; lines that are not a JSON object are skipped and counted. With
    ``complete_only`` a last line without its ``\\n`` is left for a later read (a writer may
    be in the middle of it).
    """
    entries: list[Entry] = []
    skipped: list[int] = []
    start = 0
    number = first_line_number
    length = len(data)
    find = data.find
    loads = orjson.loads
    append = entries.append
    view = memoryview(data)  # lines are parsed from slices of it without copying them
    with collector_paused(length // 200, keep=True):
        while start < length:
            end = find(b"\n", start)
            if end == -1:
                if complete_only:
                    break
                end_of_line, next_start = length, length
            else:
                end_of_line, next_start = end, end + 1
            entry = None
            if data[start] == 0x7B:  # "{": nearly every line is one object written by pi
                try:
                    entry = loads(view[start:end_of_line])
                except orjson.JSONDecodeError:
                    entry = None
            if entry is None and start < end_of_line:
                raw = data[start:end_of_line]
                if raw.strip():
                    entry = _decode_and_parse(raw)
                    if entry is None:
                        skipped.append(number)
            if entry is not None:
                append(entry)
            number += 1
            start = next_start
    consumed = start
    ends_with_newline = length == 0 or data.endswith(b"\n")
    return LoadResult(entries, skipped, None, ends_with_newline, consumed)


def _header_problem(entries: list[Entry], first_bytes: bytes) -> str | None:
    if not entries:
        return "no JSON object on any line"
    first = entries[0]
    if first.get("type") != "session" or not isinstance(first.get("id"), str):
        if first_bytes.startswith(b"\xef\xbb\xbf"):
            return "the first line starts with a byte order mark, which pi cannot parse"
        return f"first entry is not a session header (type {first.get('type')!r})"
    return None


def load_entries_from_file(path: str | os.PathLike[str]) -> LoadResult:
    """Load every line of a session file (``loadEntriesFromFile``), repairing its tail.

    A missing file gives an empty result. An invalid file (no header first) gives an empty
    entry list with ``invalid_reason`` set, and is left untouched. A valid file whose last
    line lacks its ``\n`` gets exactly one appended, as pi 1.x does.
    """
    p = Path(path).expanduser()
    if not p.exists():
        return LoadResult([])
    result, first_bytes = _read_in_chunks(p)
    has_content = bool(result.entries or result.skipped_lines)
    problem = _header_problem(result.entries, first_bytes) if has_content else None
    if result.entries and problem:
        return LoadResult([], result.skipped_lines, problem, result.ends_with_newline, result.consumed_bytes)
    if not result.entries and has_content:
        result.invalid_reason = problem
        return result
    if result.entries and not result.ends_with_newline:
        with open(p, "ab") as handle:
            handle.write(b"\n")
        result.ends_with_newline = True
        result.consumed_bytes += 1
    return result


READ_CHUNK = 16 * 1024 * 1024


def _read_in_chunks(path: Path) -> tuple[LoadResult, bytes]:
    """Parse the file a chunk at a time, so a 200 MB session never sits in memory twice
    (bytes and objects); a line cut by a chunk boundary is completed by the next chunk."""
    entries: list[Entry] = []
    skipped: list[int] = []
    line_number = 1
    pending = b""
    first_bytes = b""
    size = 0
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(READ_CHUNK)
            if not chunk:
                break
            if not first_bytes:
                first_bytes = chunk[:4]
            size += len(chunk)
            buffer = pending + chunk if pending else chunk
            part = parse_lines(buffer, line_number, complete_only=True)
            entries.extend(part.entries)
            skipped.extend(part.skipped_lines)
            line_number += buffer.count(b"\n", 0, part.consumed_bytes)
            pending = buffer[part.consumed_bytes:]
    if pending:
        part = parse_lines(pending, line_number)
        entries.extend(part.entries)
        skipped.extend(part.skipped_lines)
    ends_with_newline = not pending
    return LoadResult(entries, skipped, None, ends_with_newline, size), first_bytes


def read_session_header(path: str | os.PathLike[str]) -> Entry | None:
    """The header if the first non-blank, parsable line is one (bounded scan, 1 MiB)."""
    try:
        with open(path, "rb") as handle:
            pending = b""
            scanned = 0
            while scanned < _HEADER_SCAN_LIMIT:
                chunk = handle.read(_HEADER_SCAN_CHUNK)
                at_end = not chunk
                scanned += len(chunk)
                pending += chunk
                *complete, pending = pending.split(b"\n")
                if at_end:
                    complete.append(pending)
                for raw in complete:
                    if not raw.strip():
                        continue
                    entry = _decode_and_parse(raw)
                    if entry is None:
                        continue
                    if entry.get("type") == "session" and isinstance(entry.get("id"), str):
                        return entry
                    return None
                if at_end:
                    return None
    except OSError:
        return None
    return None


def append_line(path: str | os.PathLike[str], entry: Entry) -> None:
    """Append one entry as a single write, so a crash never leaves a half line in between."""
    line = dumps_line(entry)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        _write_all(fd, line)
    finally:
        os.close(fd)


def create_exclusive(path: str | os.PathLike[str], entries: list[Entry]) -> None:
    """Create the file (failing if it exists, like Node's ``wx``) holding ``entries``."""
    payload = b"".join(dumps_line(e) for e in entries)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        _write_all(fd, payload)
    finally:
        os.close(fd)


def rewrite_file(path: str | os.PathLike[str], entries: list[Entry]) -> None:
    """Truncate and write every line (migration, empty-file initialisation, branching)."""
    payload = b"".join(dumps_line(e) for e in entries)
    with open(path, "wb") as handle:
        handle.write(payload)


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]
