"""Keep an API key out of every text that came back from a provider.

A server may echo the key anywhere it writes text: an HTTP error body, an error event inside a
stream, even the content of an answer. Every such text passes through `redact` (or, for text that
streams in pieces, a `StreamRedactor`, whose output adds up to exactly `redact` of the whole
text) before it is cut, stored, emitted or logged.

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

__all__ = ["MIN_SECRET_RUN", "REDACTED", "StreamRedactor", "redact", "redact_all", "redact_tree"]

MIN_SECRET_RUN = 12
REDACTED = "***"
# Keys shorter than this are not redacted at all: they would match ordinary text.
_MIN_SECRET_LEN = 4


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
    return _merge(spans)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted spans, overlapping or touching ones joined (one `***` for each joined stretch)."""
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


def redact_all(text: str, secrets: tuple[str, ...] | list[str]) -> str:
    """`redact` for several keys at once. One pass over the union of their runs: two keys that
    share a stretch (two keys of one account) would otherwise leave the second one's rest."""
    spans = [span for secret in secrets if secret and len(secret) >= _MIN_SECRET_LEN for span in _runs(text, secret)]
    return _apply(text, _merge(spans), 0, len(text)) if spans else text


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

    `feed(delta)` returns what may be shown now and `flush()` (at the end of the block or the
    stream) whatever is left. However the text is cut, everything returned adds up to exactly
    `redact` of the whole text: no character of a key run is ever released, not even at the edge
    of a `***`.

    What is held back is the shortest tail that still could become part of a key run: the
    longest suffix of the undecided text that occurs in the key at a place with room to grow to
    a full run. Everything before it is decided, because any run through it would have to
    continue into that suffix. Ordinary text is held for at most a few characters, until the
    next delta shows it does not go on as the key.
    """

    __slots__ = ("_pending", "_after_run", "_run", "_secret")

    def __init__(self, secret: str | None) -> None:
        self._secret = secret if secret and len(secret) >= _MIN_SECRET_LEN else None
        self._run = _shape(self._secret)[0] if self._secret else 0
        self._pending = ""  # received, not yet released; nothing before it can join a run
        # The released text ended with a `***` whose run touches `_pending`: a run starting right
        # there is the same run to `redact` (spans that touch merge), so it adds no second `***`.
        self._after_run = False

    def feed(self, delta: str) -> str:
        if self._secret is None:
            return delta
        self._pending += delta
        return self._release(final=False)

    def flush(self) -> str:
        if self._secret is None:
            return ""
        return self._release(final=True)

    def _held(self) -> int:
        """Length of the longest suffix of `_pending` that could still grow into a key run."""
        secret, pending = self._secret, self._pending
        assert secret is not None
        limit = min(len(pending), len(secret))
        # Every suffix of a key substring is one too: grow while the tail still occurs in the key.
        longest = 0
        while longest < limit and pending[-(longest + 1):] in secret:
            longest += 1
        # A suffix can become (part of) a run only where it occurs early enough in the key to grow
        # to `run` characters. Checked from the longest down, the first that can is the held tail:
        # a run through any earlier character would have made a longer suffix able to.
        last_start = len(secret) - self._run
        for length in range(longest, 0, -1):
            if secret.find(pending[-length:], 0, last_start + length) >= 0:
                return length
        return 0

    def _release(self, final: bool) -> str:
        secret, pending = self._secret, self._pending
        assert secret is not None
        spans = _runs(pending, secret)
        end = len(pending) if final else len(pending) - self._held()
        for begin, stop in spans:
            if begin < end < stop:
                end = begin  # never cut a finished run: its rest alone may be too short to match
                break
        if end <= 0:
            return ""
        out = _apply(pending, spans, 0, end)
        if self._after_run and spans and spans[0][0] == 0:
            out = out[len(REDACTED):]  # the run goes on from the `***` already released
        released = [span for span in spans if span[0] < end]
        self._after_run = bool(released) and released[-1][1] == end
        self._pending = pending[end:]
        return out
