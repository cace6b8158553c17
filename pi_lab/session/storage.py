"""Reading and writing session files line by line (session-format.md §8–§9)."""

from __future__ import annotations

import os
import re
import secrets
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pi_lab.errors import NotARegularFile, PiLabError
from pi_lab.session._gc import collector_paused
from pi_lab.session._json import NonObjectLine, dumps_line, loads_object
from pi_lab.session._text import safe_repr
from pi_lab.session.bodies import bodies_for

__all__ = [
    "decode_and_parse",
    "file_kind",
    "InvalidSessionFile",
    "LoadResult",
    "NonObjectLine",
    "check_regular_file",
    "validate_loaded",
    "load_entries_from_file",
    "parse_lines",
    "read_lines",
    "read_session_header",
    "append_line",
    "create_exclusive",
    "rewrite_file",
]

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)

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


def file_kind(mode: int) -> str:
    """What a path that is not a regular file is, in words ("directory", "FIFO"...)."""
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
        raise NotARegularFile(path, file_kind(mode))


@dataclass(slots=True)
class LoadResult:
    """Parsed lines plus what was skipped, so bad input is reported rather than hidden."""

    entries: list[Entry]  # every parsed object, header first when valid
    skipped_lines: list[int] = field(default_factory=list)  # 1-based numbers of unparsable lines
    invalid_reason: str | None = None
    ends_with_newline: bool = True
    consumed_bytes: int = 0  # bytes taken in (up to the end of the last line parsed)
    size: int = 0  # bytes read from the file
    tail_start: int = 0  # offset of an unterminated last line (== size when there is none)
    identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file that was read
    tail_parsed: bool = False  # the unterminated last line gave an entry
    tail_skipped: bool = False  # the unterminated last line was counted in skipped_lines
    lines: int = 0  # lines in the consumed bytes (line numbers continue from here)
    bodies: Any = None  # the BodyFile of the entries kept as skeletons (a lazy load), or None


def decode_and_parse(raw: bytes) -> Entry | None:
    """One line as pi reads it: its object (or pi's stand-in for a non-object), or None to skip."""
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
    skipped; lines pi drops (unparsable, or a falsy value: ``0``, ``false``, ``null``,
    ``""``) are skipped and counted; a line holding a truthy JSON value that is not an
    object is kept as a :class:`NonObjectLine` (pi keeps it as an entry). With
    ``complete_only`` a last line without its ``\\n`` is left for a later read (a writer may
    be in the middle of it).
    """
    entries: list[Entry] = []
    skipped: list[int] = []
    consumed, number = _parse_into(data, 0, first_line_number, complete_only, entries, skipped, None, 0)
    ends_with_newline = len(data) == 0 or data.endswith(b"\n")
    result = LoadResult(entries, skipped, None, ends_with_newline, consumed)
    # The lines walked over, counted by the walk itself: a reader that continues the line
    # numbers needs no second pass over the bytes (counting newlines in 186 MB costs ~0.1 s).
    result.lines = number - first_line_number
    return result


def _parse_into(
    data: bytes, start: int, number: int, complete_only: bool, entries: list[Entry], skipped: list[int],
    keep: Any, base: int,
) -> tuple[int, int]:
    """The walk of :func:`parse_lines` from offset ``start`` (line ``number``), appending to
    the caller's lists; returns (offset after the last line taken, the next line number).

    ``keep`` (a :meth:`BodyFile.keep`, or ``None``) is given each line orjson parsed
    straight from the bytes, with the line's file offset (``base`` is that of ``data[0]``)
    and length, and returns what to keep: the entry or its skeleton."""
    length = len(data)
    find = data.find
    loads = orjson.loads
    append = entries.append
    view = memoryview(data)  # lines are parsed from slices of it without copying them
    with collector_paused((length - start) // 200, keep=True):
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
                else:
                    if keep is not None:
                        entry = keep(entry, base + start, end_of_line - start)
            if entry is None and start < end_of_line:
                raw = data[start:end_of_line]
                if raw.strip():
                    entry = decode_and_parse(raw)
                    if entry is None:
                        skipped.append(number)
                    elif keep is not None and entry.__class__ is dict:
                        entry = keep(entry, base + start, 0)  # on the reader's path, never lazy
            if entry is not None:
                append(entry)
            number += 1
            start = next_start
    return start, number


def _header_problem(entries: list[Entry], first_bytes: bytes) -> str | None:
    if not entries:
        return "no JSON object on any line"
    first = entries[0]
    if first.get("type") != "session" or not isinstance(first.get("id"), str):
        if first_bytes.startswith(b"\xef\xbb\xbf"):
            return "the first line starts with a byte order mark, which pi cannot parse"
        # safe_repr: the type is file data and may nest 3,000 levels deep (repr would recurse).
        return f"first entry is not a session header (type {safe_repr(first.get('type'))})"
    return None


def validate_loaded(result: LoadResult, first_bytes: bytes, path: str | os.PathLike[str], *, empty_ok: bool) -> None:
    """Raise :class:`InvalidSessionFile` unless ``result`` starts with a session header.

    One rule for every reader (open, read-only open, bytes read elsewhere). An empty file
    (no line parsed) is accepted only with ``empty_ok`` (pi turns it into a new session).
    """
    has_content = bool(result.entries or result.skipped_lines)
    if not has_content:
        if empty_ok:
            return
        raise InvalidSessionFile(path, "empty file (no session header)")
    problem = _header_problem(result.entries, first_bytes)
    if problem:
        raise InvalidSessionFile(path, problem)


# How long a last line without its newline must stay unchanged before it counts as left
# by a writer that stopped (pi crashed) rather than one still writing it.
TAIL_SETTLE_SECONDS = 0.02


def load_entries_from_file(
    path: str | os.PathLike[str], *, repair: bool = True, hasher: Any = None, lazy: bool | None = False
) -> LoadResult:
    """Load every line of a session file (``loadEntriesFromFile``), repairing its tail.

    A missing file gives an empty result. An invalid file (no header first) gives an empty
    entry list with ``invalid_reason`` set, and is left untouched. A valid file whose last
    line lacks its ``\n`` gets exactly one appended, as pi 1.x does, but only when that line
    stayed the same across two reads: a line that is still growing belongs to a writer in
    the middle of it, so it is left out (``consumed_bytes`` stops before it) for a later
    :meth:`SessionManager.refresh`. With ``repair=False`` nothing is ever written and the
    unterminated line is parsed as pi would (``tail_start`` marks it). ``lazy`` keeps
    message lines as skeletons whose bodies are read back on demand (:mod:`.bodies`;
    ``None``: for large files); ``result.bodies`` is then their file.
    Raises :class:`NotARegularFile` for a FIFO, device or directory (never opened).
    """
    p = Path(path).expanduser()
    try:
        check_regular_file(p)
    except FileNotFoundError:
        return LoadResult([])
    with open(p, "rb") as handle:
        bodies = bodies_for(handle, str(p), lazy)
        result, first_bytes = _read_in_chunks(handle, hasher, bodies=bodies)
        if bodies is not None:
            result.bodies = bodies.finish()
        has_content = bool(result.entries or result.skipped_lines)
        problem = _header_problem(result.entries, first_bytes) if has_content else None
        if result.entries and problem:
            return LoadResult([], result.skipped_lines, problem, result.ends_with_newline, result.consumed_bytes,
                              result.size, result.tail_start, result.identity)
        if not result.entries and has_content:
            result.invalid_reason = problem
            return result
        if not result.entries or result.ends_with_newline or not repair:
            return result
        # The last line has no newline: look again after a moment.
        time.sleep(TAIL_SETTLE_SECONDS)
        if os.fstat(handle.fileno()).st_size != result.size:
            _drop_tail(result)
            return result
    fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != result.identity or st.st_size != result.size:
            _drop_tail(result)  # it changed between the look and the repair: not ours to end
            return result
        _write_all(fd, b"\n")
    finally:
        os.close(fd)
    result.ends_with_newline = True
    result.size += 1
    result.consumed_bytes = result.size
    result.tail_start = result.size
    result.lines += 1
    return result


def _drop_tail(result: LoadResult) -> None:
    """Forget the unterminated last line (a writer is still on it); a refresh reads it whole."""
    if result.tail_parsed and result.entries:
        result.entries.pop()
    elif result.skipped_lines and result.tail_skipped:
        result.skipped_lines.pop()
    result.tail_parsed = result.tail_skipped = False
    result.consumed_bytes = result.tail_start


READ_CHUNK = 16 * 1024 * 1024


def read_lines(handle: Any, *, limit: int | None = None, hasher: Any = None) -> tuple[LoadResult, bytes]:
    """Parse an open binary file from its start with pi's line rules, a chunk at a time (the
    reader of :func:`load_entries_from_file`; nothing is written), reading at most ``limit``
    bytes. Returns the result (as :func:`parse_lines` gives for the same bytes, plus the
    file's identity, ``size`` and ``tail_start``) and the file's first four bytes (for
    :func:`validate_loaded`); ``hasher`` is updated with every byte read."""
    handle.seek(0)
    return _read_in_chunks(handle, hasher, limit)


def _read_in_chunks(handle: Any, hasher: Any = None, limit: int | None = None,
                    bodies: Any = None) -> tuple[LoadResult, bytes]:
    """Parse an open file a chunk at a time, so a 200 MB session never sits in memory twice
    (bytes and objects); a line cut by a chunk boundary is completed by the next chunk.

    The result records the file's identity (device, inode) and how many bytes were read;
    an unterminated last line is parsed (as pi does) and marked by ``tail_start``."""
    st = os.fstat(handle.fileno())
    entries: list[Entry] = []
    skipped: list[int] = []
    keep = None
    if bodies is not None:  # a lazy load: the BodyFile turns lines of the list into skeletons
        bodies.begin(entries)
        keep = bodies.keep
    line_number = 1
    pending = b""
    first_bytes = b""
    size = 0
    while True:
        if limit is not None and size >= limit:
            break
        chunk = handle.read(READ_CHUNK if limit is None else min(READ_CHUNK, limit - size))
        if not chunk:
            break
        if hasher is not None:
            hasher.update(chunk)
        if not first_bytes:
            first_bytes = chunk[:4]
        size += len(chunk)
        start = 0
        if pending:
            # Only the line cut by the chunk boundary is joined up (a small copy), not the
            # whole chunk: the rest is parsed in place from the offset after it.
            cut = chunk.find(b"\n")
            if cut == -1:
                pending += chunk  # a line longer than a chunk: keep gathering it
                continue
            start = cut + 1
            _, line_number = _parse_into(pending + chunk[:start], 0, line_number, True, entries, skipped,
                                         keep, size - len(chunk) - len(pending))
        consumed, line_number = _parse_into(chunk, start, line_number, True, entries, skipped, keep,
                                            size - len(chunk))
        pending = chunk[consumed:]
    tail_parsed = tail_skipped = False
    if pending:
        part = parse_lines(pending, line_number)
        entries.extend(part.entries)
        skipped.extend(part.skipped_lines)
        tail_parsed, tail_skipped = bool(part.entries), bool(part.skipped_lines)
    ends_with_newline = not pending
    result = LoadResult(entries, skipped, None, ends_with_newline, size, size, size - len(pending),
                        (st.st_dev, st.st_ino))
    result.tail_parsed, result.tail_skipped = tail_parsed, tail_skipped
    result.lines = line_number - 1
    return result, first_bytes


def read_session_header(path: str | os.PathLike[str]) -> Entry | None:
    """The header if the first non-blank, parsable line is one (bounded scan, 1 MiB).

    ``None`` for anything that is not a regular file: a FIFO is never opened (it would block).
    """
    try:
        check_regular_file(path)
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
                    entry = decode_and_parse(raw)
                    if entry is None:
                        continue
                    if entry.get("type") == "session" and isinstance(entry.get("id"), str):
                        return entry
                    return None
                if at_end:
                    return None
    except (OSError, NotARegularFile):
        return None
    return None


def append_line(path: str | os.PathLike[str], entry: Entry) -> None:
    """Append one entry as a single write, so a crash never leaves a half line in between."""
    line = dumps_line(entry)
    fd, _ = open_for_append(path)
    try:
        _write_all(fd, line)
    finally:
        os.close(fd)


def open_for_append(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """An ``O_APPEND`` descriptor on an existing regular file and its ``fstat`` (the only
    one an append needs). ``O_NONBLOCK``: a FIFO without a reader fails at once instead of
    blocking; it has no effect on a regular file."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotARegularFile(path, file_kind(st.st_mode))
    return fd, st


def append_bytes(fd: int, payload: bytes) -> tuple[int, int]:
    """Write ``payload`` at the end of the file in one ``write``; return where it landed.

    With ``O_APPEND`` the kernel moves to the end and writes as one step, so a line written
    at the same moment by another process lands whole before or after it. The offset after
    the write is the end of these bytes; the start is learnt from it, not from a size read
    earlier (another writer may have written in between)."""
    _write_all(fd, payload)
    end = os.lseek(fd, 0, os.SEEK_CUR)
    return end - len(payload), end


def serialize(entries: list[Entry]) -> bytes:
    """Every entry as one JSONL line (raises before anything is written if one cannot be)."""
    return b"".join(dumps_line(e) for e in entries)


def _fsync_directory(directory: str) -> None:
    """Make a rename or link in ``directory`` durable (not supported everywhere: best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_temp(path: str, payload: bytes, mode: int | None = None) -> str:
    """Write ``payload`` to a new hidden file next to ``path`` and flush it to disk.

    The name does not end in ``.jsonl``, so no listing ever shows an unfinished file."""
    directory, name = os.path.split(os.path.abspath(path))
    _remove_abandoned_temps(directory, name)
    temp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        _write_all(fd, payload)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(temp)
        raise
    os.close(fd)
    return temp


_TEMP_NAME = re.compile(r"\.(.+)\.([0-9]+)\.[0-9a-f]{8}\.tmp")


def _remove_abandoned_temps(directory: str, name: str) -> None:
    """Delete the temporary files in ``directory`` left by processes killed mid-write (their
    pid no longer runs): those of ``name`` and of every session file (``*.jsonl``), so that
    one a killed first write or fork left for a name never used again does not stay for
    ever. One of a live process may still become its file, so it stays."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for leftover in names:
        if not leftover.endswith(".tmp"):
            continue
        match = _TEMP_NAME.fullmatch(leftover)
        if match is None or not (match.group(1) == name or match.group(1).endswith(".jsonl")):
            continue
        try:
            os.kill(int(match.group(2)), 0)
        except ProcessLookupError:
            _unlink_quietly(os.path.join(directory, leftover))
        except (PermissionError, OverflowError, ValueError):
            continue  # a process of another user: alive


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def create_exclusive(path: str | os.PathLike[str], entries: list[Entry]) -> os.stat_result:
    """Create the file (failing if it exists, like Node's ``wx``) holding ``entries``.

    The bytes go to a temporary file first, which is then hard-linked to ``path``: the link
    fails if ``path`` exists (exclusive) and makes the finished file appear in one step, so a
    crash never leaves a half-written session under the real name. Returns the file's stat.
    """
    payload = serialize(entries)
    target = os.fspath(path)
    temp = _write_temp(target, payload)
    try:
        try:
            os.link(temp, target)
        except FileExistsError:
            raise
        except OSError:
            # No hard links here (some network or FUSE file systems): an exclusive create,
            # written in one call, is the best left.
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                _write_all(fd, payload)
                os.fsync(fd)
            finally:
                os.close(fd)
    finally:
        _unlink_quietly(temp)
    _fsync_directory(os.path.dirname(os.path.abspath(target)))
    return os.stat(target)


def rewrite_file(
    path: str | os.PathLike[str], entries: list[Entry], expect: tuple[int, int, int] | None = None
) -> os.stat_result:
    """Replace the file by one holding ``entries`` (migration, empty-file initialisation).

    Written to a temporary file in the same folder, flushed, renamed over ``path``, and the
    folder flushed: at every moment ``path`` is either the old file or the whole new one.
    ``expect`` is (st_dev, st_ino, st_size) of the file as it was read; if the file no longer
    matches (another process wrote to it), nothing is replaced and
    :class:`~pi_lab.errors.ConcurrentWriteError` is raised. Returns the new file's stat.
    """
    from pi_lab.errors import ConcurrentWriteError

    payload = serialize(entries)
    target = os.fspath(path)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    temp = _write_temp(target, payload, mode)
    try:
        if expect is not None:
            st = os.stat(target)
            if (st.st_dev, st.st_ino, st.st_size) != expect:
                raise ConcurrentWriteError(target, describe_change(expect, st))
        os.replace(temp, target)
    except BaseException:
        _unlink_quietly(temp)
        raise
    _fsync_directory(os.path.dirname(os.path.abspath(target)))
    return os.stat(target)


def describe_change(expect: tuple[int, int, int], st: os.stat_result) -> str:
    """How the file differs from what pi_lab last saw, in words for an error message."""
    if (st.st_dev, st.st_ino) != expect[:2]:
        return "the file was replaced by another one"
    if st.st_size > expect[2]:
        return f"it grew by {st.st_size - expect[2]} bytes"
    if st.st_size < expect[2]:
        return f"it shrank by {expect[2] - st.st_size} bytes"
    return "it changed"


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]
