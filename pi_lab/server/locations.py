"""Which files the viewer may read: paths confined to the server root and the sessions folder.

A location is what the browser names a file by:

* ``docs/2026-01-01T00-00-00-000Z_x.jsonl``: relative to the server root (what JupyterLab's
  file browser and document paths use);
* ``@sessions/--home-ann-proj--/2026-...jsonl``: relative to pi's sessions folder, which is
  usually outside the server root (the Pi Sessions panel opens these);
* an absolute path, accepted only when it lies inside one of the two folders.

``..`` is refused outright; symbolic links are resolved and the target must still be inside the
folder the location names. Hidden paths under the server root are refused unless the contents
manager allows hidden files, so the viewer reads no more than the file browser shows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Location", "PathRefused", "SESSIONS_PREFIX", "resolve_location", "inside"]

SESSIONS_PREFIX = "@sessions/"
MAX_PATH_BYTES = 4096  # PATH_MAX on Linux: a longer name is no file the system can open


class PathRefused(Exception):
    """A location the server will not read; ``status`` is 400 (malformed) or 403 (not allowed)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Location:
    """A readable file: ``area`` is ``root`` or ``sessions``, ``relative`` uses ``/``."""

    area: str
    relative: str
    real: str
    # the folder's name for the browser: pi's sessions folder, or another agent's or a
    # configured folder (``@claude/0/``, ``@codex/0/``, ``@dir/0/``: PiLabConfig.session_folders)
    prefix: str = SESSIONS_PREFIX

    @property
    def key(self) -> str:
        """The location as the browser names it (stable, without the server's absolute paths)."""
        return self.prefix + self.relative if self.area == "sessions" else self.relative

    @property
    def name(self) -> str:
        return self.relative.rsplit("/", 1)[-1]


def inside(path: str, folder: str) -> bool:
    """Whether the resolved ``path`` is ``folder`` or below it (both already resolved)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _parts(relative: str) -> list[str]:
    # Backslashes count as separators too: "..\\x" must not slip through on any platform.
    parts = [p for p in relative.replace("\\", "/").split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefused(400, "'..' is not allowed in a session path")
    return parts


def _confine(area: str, base: str, parts: list[str], prefix: str = SESSIONS_PREFIX) -> Location:
    base_real = os.path.realpath(base)
    joined = os.path.join(base_real, *parts)
    real = os.path.realpath(joined)
    if not inside(real, base_real):
        where = "the server root" if area == "root" else "the sessions folder"
        raise PathRefused(403, f"{'/'.join(parts)} leads outside {where} (through a symbolic link)")
    return Location(area, "/".join(parts), real, prefix)


def resolve_location(value: object, *, root_dir: str, sessions_dir: str | None, allow_hidden: bool = False,
                     folders: Sequence[tuple[str, str]] = ()) -> Location:
    """The :class:`Location` for ``value``, or :class:`PathRefused` saying why not.

    ``folders``: ``(prefix, folder)`` of the other session folders (other agents', configured ones)."""
    if not isinstance(value, str) or not value.strip():
        raise PathRefused(400, "a session path is required")
    if "\0" in value:
        raise PathRefused(400, "a session path may not contain NUL")
    try:
        encoded = os.fsencode(value)
    except UnicodeEncodeError:  # a lone surrogate from a JSON escape: no file can have that name
        raise PathRefused(400, "a session path may not contain a lone surrogate") from None
    if len(encoded) > MAX_PATH_BYTES:
        raise PathRefused(400, f"a session path may have at most {MAX_PATH_BYTES} bytes")
    if value.startswith(SESSIONS_PREFIX):
        if not sessions_dir or not os.path.isdir(sessions_dir):
            raise PathRefused(404, "the sessions folder is not configured or does not exist")
        parts = _parts(value[len(SESSIONS_PREFIX):])
        if not parts:
            raise PathRefused(400, "a session path names a file, not the sessions folder")
        return _confine("sessions", sessions_dir, parts)
    for prefix, folder in folders:
        if prefix != SESSIONS_PREFIX and value.startswith(prefix):
            if not os.path.isdir(folder):
                raise PathRefused(404, f"the folder {prefix} names does not exist")
            parts = _parts(value[len(prefix):])
            if not parts:
                raise PathRefused(400, "a session path names a file, not a sessions folder")
            return _confine("sessions", folder, parts, prefix)
    if os.path.isabs(value) or value.startswith(("/", "\\")):
        _parts(value)  # refuse "..", even in an absolute path
        real = os.path.realpath(value)
        bases = [("root", root_dir, ""), ("sessions", sessions_dir, SESSIONS_PREFIX)]
        bases += [("sessions", folder, prefix) for prefix, folder in folders if prefix != SESSIONS_PREFIX]
        for area, base, prefix in bases:
            if not base:
                continue
            base_real = os.path.realpath(base)
            if inside(real, base_real) and real != base_real:
                parts = os.path.relpath(real, base_real).split(os.sep)
                return _check_hidden(_confine(area, base, parts, prefix or SESSIONS_PREFIX), allow_hidden)
        raise PathRefused(403, "absolute paths must lie inside the server root or a sessions folder")
    parts = _parts(value)
    if not parts:
        raise PathRefused(400, "a session path names a file, not the server root")
    return _check_hidden(_confine("root", root_dir, parts), allow_hidden)


def _check_hidden(location: Location, allow_hidden: bool) -> Location:
    if location.area == "root" and not allow_hidden and any(p.startswith(".") for p in location.relative.split("/")):
        raise PathRefused(403, f"{location.relative} is hidden (ContentsManager.allow_hidden is off)")
    return location
