"""Reading Claude Code and Codex lines for ``pi-lab usage``: the pieces both usage-only readers
(:mod:`pi_lab.formats.claude_code_usage_fast`, :mod:`pi_lab.formats.codex_usage_fast`) share.

* :func:`parsed_lines` / :func:`dict_line`: a line as the adapters read it (``read_lines``:
  JSON.parse's rules), orjson first.
* The typed decode: each reader declares msgspec Structs naming only the fields its report reads,
  so the rest of a line (message content, tool output) is skipped in C, never built. A typed
  decode answers only when its answer is the adapters': it raises :data:`TYPED_ERRORS` for every
  line it cannot answer for, and that line goes the :func:`dict_line` way:
  - a kept field of another type than declared (an int where a string is read, a float, bool,
    null or negative counter, a counter past int64 where orjson gives a float) fails validation;
  - a lone surrogate, a raw control character, a BOM, trailing bytes or deep nesting anywhere in
    the line fail decoding, as they fail orjson;
  - duplicate keys: the last one wins, as in JSON.parse and orjson;
  - a number past the float range is checked only in a kept field (it fails there); in a skipped
    field JSON.parse's reader keeps the line too (Infinity), so the kept fields are the same;
  - invalid UTF-8 is checked only in kept fields, but the adapters drop a line holding any: a
    file that is not valid UTF-8 throughout (:func:`utf8_valid`) is read the dict way.
  ``tests/corpus/test_corpus_usage_decode_agents.py`` compares both ways on each of these.

This module imports no adapter: the adapters pull in the engine's session manager and the
compaction package (about 0.09 CPU s), which every forked reader would pay again.
"""

from __future__ import annotations

import codecs
import os
from typing import Any

import orjson

from pi_lab.session._json import loads_object

__all__ = ["TYPED_ERRORS", "COUNT_BOUNDS", "UNSET", "decoder", "dict_line", "parsed_lines", "read_file",
           "split_lines", "utf8_valid"]

# (without msgspec every line goes the dict way, with the same answers)
COUNT_BOUNDS: Any = None  # a token counter's bounds (``Annotated[int, COUNT_BOUNDS] = 0``)
UNSET: Any = object()  # a field the line does not hold (msgspec's UNSET when installed)
TYPED_ERRORS: tuple[type[BaseException], ...] = ()
_DECODER: Any = None
try:
    import msgspec
except ImportError:  # pragma: no cover (msgspec is a dependency)
    pass
else:
    # A counter the rules read as itself: a non-negative int (one past int64, where orjson gives a
    # float, or a negative or null one, which the rules read as 0, sends its line the dict way).
    COUNT_BOUNDS = msgspec.Meta(ge=0, le=2**63 - 1)
    UNSET = msgspec.UNSET
    # (ValidationError is a DecodeError; a deep nesting raises RecursionError)
    TYPED_ERRORS = (msgspec.DecodeError, RecursionError)
    _DECODER = msgspec.json.Decoder


def decoder(struct: Any) -> Any:
    """The typed decode of one line into ``struct`` (a msgspec Struct), or None without msgspec."""
    return None if _DECODER is None else _DECODER(struct).decode


def utf8_valid(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8 throughout (an ASCII file is, and is told at once); the
    check decodes 4 MB at a time, never the whole file into one string."""
    if data.isascii():
        return True
    decode = codecs.getincrementaldecoder("utf-8")().decode
    view = memoryview(data)
    try:
        for start in range(0, len(data), 1 << 22):
            decode(view[start : start + (1 << 22)])
        decode(b"", True)
    except UnicodeDecodeError:
        return False
    return True


def split_lines(data: bytes) -> list[bytes]:
    """The lines of ``data`` split on ``\\n`` (numbered from 1 by their place), without the empty
    piece after a last line break (a blank line, which every way of reading skips)."""
    pieces = data.split(b"\n")
    if not pieces[-1]:
        pieces.pop()
    return pieces


def dict_line(raw: bytes) -> dict[str, Any] | None:
    """The object of one line as ``read_lines`` keeps it (JSON.parse's rules), else None."""
    try:
        line = orjson.loads(raw)
    except orjson.JSONDecodeError:
        line = loads_object(raw)
    return line if type(line) is dict else None


def parsed_lines(data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """``read_lines(data)[0]`` (the objects of ``data`` with their line numbers) in one loop:
    orjson first, JSON.parse's rules (``loads_object``) where it refuses a line (or the line is
    blank)."""
    loads, error = orjson.loads, orjson.JSONDecodeError
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = loads(raw)
        except error:
            line = loads_object(raw)
        if type(line) is dict:
            out.append((number, line))
    return out


def read_file(path: str) -> bytes:
    """The bytes of ``path``, opened as the adapters open it (``claude_code_lines._read_file``:
    O_RDONLY and nothing else, so reading never changes the file). One read of the size the
    file has (a file read whole is not copied again to join its pieces), more while it grows."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        data = os.read(fd, os.fstat(fd).st_size + 1)
        if not data:
            return data
        chunks = [data]
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return data if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)
