"""A pi file's model calls, read from its bytes without parsing every line (``pi-lab usage``).

* The file is searched for the bytes ``assistant``; only the lines holding them are parsed
  (with pi's line rules, the same reader calls). A line can only be an assistant message if
  it holds those bytes, unless JSON escapes spell one of the letters (``\\u0061``...): a file
  holding such an escape (``\\u006``/``\\u007``) is read line by line in full
  (:func:`_letter_escape`).
* An assistant line is decoded by msgspec (when installed) into only the fields the report
  reads, the orjson way when that decode cannot answer exactly for it (:func:`_typed_call`).

:mod:`pi_lab.corpus.usage_fast` reads folders with these and sums the report.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

import orjson

from pi_lab.corpus.fields import _float_usage, _ms

_USAGE = ("input", "output", "cache_read", "cache_write", "total_tokens", "cost")
# A pi assistant entry's line holds these bytes, or an escape of one of their letters
# (a \u0061 \u0069 \u006e \u0073 \u0074: JSON writes escapes with a lowercase u).
_ASSISTANT = b"assistant"
_ESCAPE = b"\\u00"

# One call: (entry_id, timestamp ms, provider, model, input, output, cache_read, cache_write,
# total_tokens, cost, copied). ``copied`` is the extractor's mark (a Codex fork's, a Claude Code
# resumed session's) or False; a pi fork's copies are marked once every file is read.
Call = tuple


def _line_entry(data: bytes, view: memoryview, start: int, end: int) -> Any:
    """The entry of the line ``data[start:end]`` as pi's reader gives it
    (:func:`pi_lab.session.storage.parse_lines`), or None for a line it skips."""
    entry = None
    if start < end and data[start] == 0x7B:
        try:
            entry = orjson.loads(view[start:end])
        except orjson.JSONDecodeError:
            entry = None
    if entry is None and start < end:
        raw = data[start:end]
        if raw.strip():
            from pi_lab.session.storage import decode_and_parse

            entry = decode_and_parse(raw)
    return entry


# The typed decode of an assistant line (msgspec, a compiled JSON library, when installed): a
# Struct names only the fields the report reads, so the message's content is skipped, not built.
# It answers only when its answer is the one pi's reader gives; every other line raises and goes
# the orjson way (:func:`_line_entry`):
# * a kept field of another type than pi writes (an int id, a float counter, a usage without its
#   cost total, a counter outside int64 where orjson would give a float) fails validation;
# * a lone surrogate, a raw control character, a BOM, trailing bytes or deep nesting anywhere
#   fail decoding, as they fail orjson (msgspec's limit is below orjson's: those go on too);
# * duplicate keys: the last one wins, as in JSON.parse and orjson;
# * invalid UTF-8 and numbers beyond the float range are checked only in kept fields (they fail
#   there). In a skipped field pi's reader keeps the line too (U+FFFD, Infinity:
#   :func:`pi_lab.session.storage.decode_and_parse`), so the kept fields are the same.
# tests/corpus/test_corpus_usage_decode.py compares both ways on each of these lines.



_DECODE: Any = None  # (None without msgspec: every line then goes the orjson way, same report)
_TYPED_ERRORS: tuple[type[BaseException], ...] = ()
try:
    import msgspec
except ImportError:
    pass
else:
    # orjson gives a float past int64 (past uint64 for positive ones): those lines go its way.
    _BOUNDS = msgspec.Meta(ge=-(2**63), le=2**63 - 1)

    class _Cost(msgspec.Struct, gc=False):
        total: Annotated[int, _BOUNDS] | float

    class _Usage(msgspec.Struct, gc=False):
        # The shape _float_usage's fast path reads, required but for the total (older pi
        # versions write none: _float_usage's general rules then give the four counters' sum,
        # as for a null or zero one); a usage missing another goes the orjson way.
        input: Annotated[int, _BOUNDS]
        output: Annotated[int, _BOUNDS]
        cacheRead: Annotated[int, _BOUNDS]
        cacheWrite: Annotated[int, _BOUNDS]
        cost: _Cost
        totalTokens: Annotated[int, _BOUNDS] | None = None

    class _Message(msgspec.Struct, gc=False):
        role: str | None = None
        provider: str | None = None
        model: str | None = None
        usage: _Usage | None = None

    class _Entry(msgspec.Struct, gc=False):
        type: str | None = None
        id: str | None = None
        timestamp: str | None = None
        message: _Message | None = None

    _DECODE = msgspec.json.Decoder(_Entry).decode
    # (ValidationError is a DecodeError; a deep nesting raises RecursionError)
    _TYPED_ERRORS = (msgspec.DecodeError, RecursionError)

_NO_USAGE = _float_usage(None)


def _typed_call(line: Any) -> tuple[Call | None, tuple[str, Any] | None]:
    """(the call of one assistant line, or the (id, timestamp) of the other entry it holds),
    :func:`_call_of` and :func:`_keys` of the typed decode. Raises ``_TYPED_ERRORS`` for a line
    it cannot answer for."""
    entry = _DECODE(line)
    message = entry.message
    if entry.type == "message" and message is not None and message.role == "assistant":
        usage = message.usage
        if usage is None:
            cells = _NO_USAGE
        else:
            # As _float_usage: a zero, null or missing total is the four counters' sum.
            inp, out, cr, cw = usage.input, usage.output, usage.cacheRead, usage.cacheWrite
            cells = (float(inp), float(out), float(cr), float(cw), float(usage.totalTokens or (inp + out + cr + cw)),
                     float(usage.cost.total))
        return (entry.id, _ms(entry.timestamp), message.provider, message.model, *cells, False), None
    if entry.id is None or entry.type == "session":
        return None, None
    return None, (_safe(entry.id), _ms(entry.timestamp))


def _tail_entry(tail: bytes) -> Any:
    """A last line without its newline, as :func:`pi_lab.corpus.extract.read_complete_lines`
    reads it (kept when it parses as pi keeps a line)."""
    if not tail.strip():
        return None
    from pi_lab.session._json import loads_object

    return loads_object(tail)


def _call_of(entry: Any) -> Call | None:
    """The model_calls cells the report reads of one entry, or None when it is no call."""
    if entry.get("type") != "message":
        return None
    message = entry.get("message")
    if message.__class__ is not dict and not isinstance(message, dict):
        return None
    if message.get("role") != "assistant":
        return None
    entry_id = entry.get("id")
    provider, model = message.get("provider"), message.get("model")
    return (
        entry_id if isinstance(entry_id, str) else None, _ms(entry.get("timestamp")),
        provider if isinstance(provider, str) else None, model if isinstance(model, str) else None,
        *_float_usage(message.get("usage")), False,
    )


def _memmem() -> Any:
    """libc's ``memmem`` (a vectorised search: about 3x ``bytes.find`` for a short needle
    found nowhere, which is what the escape check does over every byte), or None."""
    try:
        import ctypes

        function = ctypes.CDLL(None).memmem
    except (ImportError, OSError, AttributeError):
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    return function


_MEMMEM: Any = False  # not looked up yet


def _letter_escape(data: bytes) -> bool:
    """Whether ``data`` holds a JSON escape of a letter of ``assistant`` (``\\u006x``, ``\\u007x``)."""
    global _MEMMEM
    if _MEMMEM is False:
        _MEMMEM = _memmem()
    if _MEMMEM is not None and _MEMMEM(data, len(data), _ESCAPE, len(_ESCAPE)) is None:
        return False  # (no escape at all: the common case, answered by the fast search)
    find = data.find
    at = find(_ESCAPE)
    while at != -1:
        if data[at + 4 : at + 5] in (b"6", b"7"):
            return True
        at = find(_ESCAPE, at + 4)
    return False


def _searched_calls(data: bytes) -> tuple[list[Call], list[tuple[str, Any]]]:
    """The calls of a pi file after its first line, parsing only the lines that can hold one,
    and the keys (:func:`_keys`) of the other entries those lines held (for :func:`file_keys`,
    which does not parse them again)."""
    calls: list[Call] = []
    others: list[Any] = []
    typed_keys: set[tuple[str, Any]] = set()
    view = memoryview(data)
    find, rfind = data.find, data.rfind
    typed = _typed_call if _DECODE is not None else None
    at = find(_ASSISTANT, find(b"\n") + 1)
    while at != -1:
        start = rfind(b"\n", 0, at) + 1
        end = find(b"\n", at)
        if end == -1:
            entry = _tail_entry(data[start:])
        else:
            if typed is not None and data[start] == 0x7B:
                try:
                    call, key = typed(view[start:end])
                except _TYPED_ERRORS:
                    pass  # (the orjson way, below)
                else:
                    if call is not None:
                        calls.append(call)
                    elif key is not None:
                        typed_keys.add(key)
                    at = find(_ASSISTANT, end + 1)
                    continue
            entry = _line_entry(data, view, start, end)
        if entry is not None:
            call = _call_of(entry)
            if call is not None:
                calls.append(call)
            elif entry.get("type") != "session":
                others.append(entry)
        if end == -1:
            break
        at = find(_ASSISTANT, end + 1)
    return calls, list(_keys(others) | typed_keys)


def _keys(entries: Iterable[Any], wanted: set[str] | None = None) -> set[tuple[str, Any]]:
    """The (entry id, timestamp ms) of every entry with an id (in ``wanted``, if given): what a
    fork's copy matches (the ids are the entries table's, :func:`_safe`)."""
    out = set()
    for e in entries:
        entry_id = e.get("id")
        if isinstance(entry_id, str):
            entry_id = _safe(entry_id)
            if wanted is None or entry_id in wanted:
                out.add((entry_id, _ms(e.get("timestamp"))))
    return out


def _safe(text: Any) -> Any:
    """A string as the Arrow column holds it (``schema.utf8_safe``)."""
    if text.__class__ is str and not text.isascii():
        from pi_lab.corpus.schema import utf8_safe

        return utf8_safe(text)
    return text
