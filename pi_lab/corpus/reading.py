"""Reading a pi session file's lines for the corpus, with pi's line rules (and nothing of the
engine's walk, so the usage fast path can read a file without importing it)."""

from __future__ import annotations

from typing import Any

import orjson

from pi_lab.session._json import loads_object
from pi_lab.session._text import safe_repr

__all__ = ["FileUnreadable", "other_agent", "plain_pi_header", "read_complete_lines", "read_pi_entries"]

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)


class FileUnreadable(Exception):
    """A file that yields no session (its reason goes to ``Corpus.errors``)."""


# ---------------------------------------------------------------------------------------------
# Reading


def read_complete_lines(data: bytes) -> tuple[list[Entry], list[int], bool]:
    """Entries of ``data`` up to its last complete line, the skipped line numbers, and whether
    an unfinished last line was left out (a live pi session being written).

    A last line without its newline that parses as a JSON object is kept: pi itself reads
    such a line (and repairs the newline when it opens the file for writing).
    """
    # (imported here: the usage read asks only plain_pi_header and other_agent of every file, and
    # the engine's storage and migration cost its start-up about 50 M instructions)
    from pi_lab.session.storage import parse_lines

    loaded = parse_lines(data, complete_only=True)
    entries, skipped = loaded.entries, list(loaded.skipped_lines)
    tail = data[loaded.consumed_bytes :]
    partial = False
    if tail.strip():
        entry = loads_object(tail)
        if entry is None:
            partial = True
        else:
            entries.append(entry)
    return entries, skipped, partial


def read_pi_entries(data: bytes) -> tuple[Entry, list[Entry], int, int, bool]:
    """A pi file's (header, entries after migration without the header lines, version,
    skipped line count, whether an unfinished last line was left out); raises
    :class:`FileUnreadable` for a file that holds no pi session."""
    file_entries, skipped, partial = read_complete_lines(data)
    if not file_entries:
        raise FileUnreadable("no JSON object on any line")
    header = file_entries[0]
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        if data.startswith(b"\xef\xbb\xbf"):
            raise FileUnreadable("the first line starts with a byte order mark, which pi cannot parse")
        # (bounded: the type of a hand-edited header may be a list 3,000 levels deep)
        raise FileUnreadable(f"first entry is not a session header (type {safe_repr(header.get('type'))})")
    raw_version = header.get("version", 1)
    version = raw_version if isinstance(raw_version, int) and not isinstance(raw_version, bool) else 1
    # Old formats are migrated in memory only, with ids derived from the bytes (as the viewer
    # does). Hashing the bytes costs ~0.6 ms per MB, so it is done only if an id is needed.
    from pi_lab.session.migration import migrate_entries

    migrate_entries(file_entries, _lazy_ids(data))
    entries = [e for e in file_entries if e.get("type") != "session"]
    return header, entries, version, len(skipped), partial


def _lazy_ids(data: bytes):
    factory = None

    def next_id() -> str:
        nonlocal factory
        if factory is None:
            # only a version-1 file needs ids; readonly loads the whole engine, which usage never needs
            from pi_lab.session.readonly import stable_uuid_factory

            factory = stable_uuid_factory(data)
        return factory()

    return next_id


def plain_pi_header(data: bytes) -> dict[str, Any] | None:
    """The header when the file's first line is a pi header of the current version that orjson
    parses, else None. Such a file is pi's (its first line is what format detection looks at
    first) and needs no migration."""
    end = data.find(b"\n")
    if end <= 0 or data[0] != 0x7B:
        return None
    try:
        header = orjson.loads(memoryview(data)[:end])
    except orjson.JSONDecodeError:
        return None
    if header.__class__ is not dict or header.get("type") != "session" or not isinstance(header.get("id"), str):
        return None
    version = header.get("version")
    if version.__class__ is not int or version < 3:
        return None
    return header


def other_agent(data: bytes) -> str | None:
    """``"claude-code"`` or ``"codex"`` when ``data`` is another agent's session, else None
    (a pi file never gets here: its first JSON object is the header)."""
    from pi_lab.formats.detect import PROBE_BYTES, UnknownSessionFormat, detect_format_of

    try:
        agent = detect_format_of(data[:PROBE_BYTES])
    except UnknownSessionFormat:
        return None
    return agent if agent in ("claude-code", "codex") else None
