"""Keep an API key out of every text that came back from a provider.

A server may echo the key anywhere it writes text: an HTTP error body, an error event inside a
stream, even the content of an answer. Every such text passes through `redact` (or, for text that
streams in pieces, a `StreamRedactor`) before it is cut, stored, emitted or logged.

What counts as the key: the whole key and every piece of it at least `MIN_SECRET_RUN` characters
long (a key cut by a truncation, or quoted in part, still identifies its owner). Each such run is
replaced by `***`. Keys shorter than `MIN_SECRET_RUN` are matched whole; keys shorter than four
characters are not matched at all (they would blank out ordinary words).

Finding the runs is linear in practice: a run of length L ≥ 2b − 1 always contains one of the
key's blocks `key[m·b : m·b + b]` (b = ⌈MIN/2⌉), so only the places where such a block occurs
(found with `str.find`) are extended character by character to the full run.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MIN_SECRET_RUN", "REDACTED", "StreamRedactor", "redact", "redact_tree"]

MIN_SECRET_RUN = 12
REDACTED = "***"
# Keys shorter than this are not redacted at all: they would match ordinary text.
_MIN_SECRET_LEN = 4
# A streamed tail this long that could still grow into a key run is held back until it is
# decided; a shorter one is released (at most this many minus one characters of a key can then
# appear at the edge of a redaction, which is far from identifying).
_HOLD_FROM = 4


def _shape(secret: str) -> tuple[int, int]:
    run = min(MIN_SECRET_RUN, len(secret))
    return run, (run + 1) // 2


def _runs(text: str, secret: str, start: int = 0) -> list[tuple[int, int]]:
    """Sorted, merged `(begin, end)` spans of `text[start:]` that are key runs."""
    run, block = _shape(secret)
    spans: list[tuple[int, int]] = []
    n, k = len(text), len(secret)
    for offset in range(0, k - block + 1, block):
        piece = secret[offset:offset + block]
        at = text.find(piece, start)
        while at >= 0:
            left, key_left = at, offset
            while left > start and key_left > 0 and text[left - 1] == secret[key_left - 1]:
                left -= 1
                key_left -= 1
            right, key_right = at + block, offset + block
            while right < n and key_right < k and text[right] == secret[key_right]:
                right += 1
                key_right += 1
            if right - left >= run:
                spans.append((left, right))
            at = text.find(piece, at + 1)
    if not spans:
        return spans
    spans.sort()
    merged = [spans[0]]
    for begin, end in spans[1:]:
        last_begin, last_end = merged[-1]
        if begin <= last_end:
            merged[-1] = (last_begin, max(last_end, end))
        else:
            merged.append((begin, end))
    return merged


def _apply(text: str, spans: list[tuple[int, int]], begin: int, end: int) -> str:
    """`text[begin:end]` with every span (clipped to the range) replaced by `REDACTED`."""
    out: list[str] = []
    position = begin
    for span_begin, span_end in spans:
        span_begin, span_end = max(span_begin, begin), min(span_end, end)
        if span_begin >= span_end:
            continue
        out.append(text[position:span_begin])
        out.append(REDACTED)
        position = span_end
    out.append(text[position:end])
    return "".join(out)


def redact(text: str, secret: str | None) -> str:
    """`text` with the key and every run of at least `MIN_SECRET_RUN` of its characters removed."""
    if not secret or len(secret) < _MIN_SECRET_LEN or not text:
        return text
    spans = _runs(text, secret)
    return _apply(text, spans, 0, len(text)) if spans else text


def redact_tree(value: Any, secret: str | None) -> Any:
    """Redact every string (and every mapping key) inside nested dicts and lists, in place.

    Returns the value itself, or a redacted copy when `value` is a string. Walks iteratively:
    tool arguments from a model can nest deeply.
    """
    if not secret or len(secret) < _MIN_SECRET_LEN:
        return value
    if isinstance(value, str):
        return redact(value, secret)
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in list(node):
                item = node[key]
                if isinstance(item, str):
                    node[key] = redact(item, secret)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
                if isinstance(key, str):
                    clean = redact(key, secret)
                    if clean != key:
                        node[clean] = node.pop(key)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = redact(item, secret)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
    return value


class StreamRedactor:
    """Redacts a text that arrives in pieces, so a key split across deltas is still caught.

    `feed(delta)` returns what may be shown now; a tail that could be the start of a key run is
    held back until the next piece decides it, and `flush()` returns whatever is left. The
    concatenation of everything returned equals `redact` of the whole text, up to where a run
    was cut by a hold decision (then each part reads `***`).
    """

    __slots__ = ("_raw", "_secret", "_shown")

    def __init__(self, secret: str | None) -> None:
        self._secret = secret if secret and len(secret) >= _MIN_SECRET_LEN else None
        self._raw = ""
        self._shown = 0  # characters of `_raw` already released

    def feed(self, delta: str) -> str:
        if self._secret is None:
            return delta
        self._raw += delta
        return self._release(len(self._raw) - self._held())

    def flush(self) -> str:
        if self._secret is None:
            return ""
        return self._release(len(self._raw))

    def _held(self) -> int:
        secret, raw = self._secret, self._raw
        assert secret is not None
        pending = len(raw) - self._shown
        if pending < _HOLD_FROM or raw[-_HOLD_FROM:] not in secret:
            return 0  # the usual case: the tail cannot be part of a key
        held = _HOLD_FROM
        limit = min(pending, len(secret))
        while held < limit and raw[-(held + 1):] in secret:
            held += 1
        return held

    def _release(self, end: int) -> str:
        secret = self._secret
        assert secret is not None
        if end <= self._shown:
            return ""
        # A run reaching into the new text starts at most one key length before it.
        window = max(0, self._shown - len(secret))
        spans = _runs(self._raw, secret, window)
        out = _apply(self._raw, spans, self._shown, end)
        self._shown = end
        if self._shown > 2 * len(secret):
            # Keep only what a future run could still reach back into.
            drop = self._shown - len(secret)
            self._raw = self._raw[drop:]
            self._shown -= drop
        return out
