"""Writing a file the user asked for (an HTML export, a Parquet table) without ever
destroying a session.

The bytes go to a new private file beside the target (``O_EXCL``, mode 0600 while it is
incomplete), are flushed to disk, and take the target's name in one rename, so a process
killed at any moment leaves either the previous file or the whole new one. The target is
checked when the caller starts (:func:`check_output`, before a long build) and again just
before the rename (a session may have been copied there meanwhile). It is refused when it

* is a symbolic link (the write would land on whatever it points to),
* is not a regular file (a FIFO, a device, a directory),
* is the file being read (the same device and inode, whatever the spelling or link), or
* holds a session: a file pi would open as one, decided by the engine's own reading rules
  (``storage.parse_lines`` and ``validate_loaded``: blank, garbage or CR LF first lines, and
  a header of any length, are read as pi reads them), or what is left of one (its first
  entry is a JSON object with a ``type``, but its header is gone or starts with a BOM).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from pi_lab.errors import PiLabError
from pi_lab.session._json import NonObjectLine
from pi_lab.session.storage import (
    InvalidSessionFile,
    LoadResult,
    _fsync_directory,
    _remove_abandoned_temps,
    _unlink_quietly,
    file_kind,
    parse_lines,
    validate_loaded,
)

__all__ = ["OutputRefused", "check_output", "holds_session", "replacing", "write_bytes"]

_READ_CHUNK = 1 << 16
_BOM = b"\xef\xbb\xbf"


class OutputRefused(PiLabError):
    """An output file was not written because writing it could destroy a session (or go
    through a link); the existing file is left as it was."""


def _first_entry(fd: int) -> tuple[LoadResult, bytes, bool]:
    """Read lines from ``fd`` as pi does until the first one it keeps as an entry.

    Returns the lines' result (at most one entry), the file's first four bytes (for
    :func:`validate_loaded`), and whether that entry, read with a byte order mark on the
    file's first line ignored, is a JSON object with a ``type`` (what is left of a session).
    Only the line being read is held, so a long header costs its own length."""
    parts: list[bytes] = []
    first_bytes = b""
    number = 1
    skipped: list[int] = []
    at_end = False
    while not at_end:
        chunk = os.read(fd, _READ_CHUNK)
        at_end = not chunk
        if not first_bytes:
            first_bytes = chunk[:4]
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end == -1:
                if not at_end:
                    parts.append(chunk[start:])
                    break
                end = len(chunk)  # the last line, without its newline: pi reads it too
            line = b"".join(parts) + chunk[start:end]
            parts = []
            part = parse_lines(line, number)
            skipped.extend(part.skipped_lines)
            remnant = None
            if number == 1 and line.startswith(_BOM):
                remnant = parse_lines(line[len(_BOM):], number).entries
            if part.entries or remnant:
                entry = (remnant or part.entries)[0]
                left = isinstance(entry, dict) and not isinstance(entry, NonObjectLine) and isinstance(entry.get("type"), str)
                return LoadResult(part.entries, skipped), first_bytes, left
            number += 1
            start = end + 1
            if start >= len(chunk):
                break
    return LoadResult([], skipped), first_bytes, False


def holds_session(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file that pi would open as a session (an empty file,
    which pi would turn into a new one, holds nothing) or that holds what is left of one.

    Opened without following a symbolic link and without blocking (a FIFO is never read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False  # missing, a link, or unreadable: the caller checks those by lstat
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        result, first_bytes, remnant = _first_entry(fd)
    finally:
        os.close(fd)
    if not result.entries and not result.skipped_lines:
        return False  # empty or blank: nothing to lose
    try:
        validate_loaded(result, first_bytes, os.fspath(path), empty_ok=False)
    except InvalidSessionFile:
        return remnant
    return True


def check_output(target: str | os.PathLike[str], *, source: str | os.PathLike[str] | None = None) -> None:
    """Raise :class:`OutputRefused` unless ``target`` may be replaced by a new file: it does
    not exist, or it is a regular file (not a link) that is not ``source`` and holds no
    session."""
    path = os.fspath(target)
    if source is not None:
        try:
            same = os.path.samefile(path, source)
        except (OSError, ValueError):  # one of them does not exist (or cannot be a path)
            same = False
        if same:
            raise OutputRefused(f"{path} is the session file itself; write to another file")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as error:
        raise OutputRefused(f"{path} cannot be checked ({error.strerror or error}); not writing it") from error
    if stat.S_ISLNK(st.st_mode):
        raise OutputRefused(f"{path} is a symbolic link; not writing through it: remove it or choose another file")
    if not stat.S_ISREG(st.st_mode):
        raise OutputRefused(f"{path} is a {file_kind(st.st_mode)}, not a regular file; not replacing it")
    if holds_session(path):
        raise OutputRefused(f"{path} already holds a pi session (pi would open it as one); not replacing it: "
                            "remove it first or choose another file")


def _new_file_mode() -> int:
    """The mode an ordinary new file gets (0666 less the umask), read without changing the
    umask (``os.umask`` sets it, which would race with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o644


@contextmanager
def replacing(target: str | os.PathLike[str], *, source: str | os.PathLike[str] | None = None) -> Iterator[BinaryIO]:
    """Write ``target`` through the binary file this yields; on a clean exit the file takes
    the target's name (after :func:`check_output` once more), else it is removed.

    An existing target keeps its permission bits; a new one gets those of an ordinary new
    file. Raises :class:`OutputRefused` (nothing written) when the target may not be replaced.
    """
    path = os.path.abspath(os.fspath(target))
    check_output(path, source=source)
    directory, name = os.path.split(path)
    _remove_abandoned_temps(directory, name)
    temp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # 0600 while incomplete: nobody else reads a half-written export.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    handle = os.fdopen(fd, "wb")
    try:
        yield handle
        handle.flush()
        try:
            mode = os.lstat(path).st_mode & 0o7777
        except OSError:
            mode = _new_file_mode()
        os.fchmod(fd, mode)
        os.fsync(fd)
        handle.close()
        _install(temp, path, source)
    except BaseException:
        handle.close()
        _unlink_quietly(temp)
        raise
    _fsync_directory(directory)


def _install(temp: str, path: str, source: str | os.PathLike[str] | None) -> None:
    """Give ``temp`` the name ``path``, checking the target again first. A target that does
    not exist is created by a hard link, which fails if something took the name in between;
    an existing one (checked to be no session) is replaced by a rename."""
    check_output(path, source=source)
    if not os.path.lexists(path):
        try:
            os.link(temp, path)
        except FileExistsError:
            check_output(path, source=source)  # it appeared just now: look at it
        except OSError:
            pass  # no hard links here (some network file systems): the rename below
        else:
            _unlink_quietly(temp)
            return
    os.replace(temp, path)


def write_bytes(target: str | os.PathLike[str], payload: bytes, *, source: str | os.PathLike[str] | None = None) -> None:
    """:func:`replacing` for bytes already in memory."""
    with replacing(target, source=source) as handle:
        handle.write(payload)
