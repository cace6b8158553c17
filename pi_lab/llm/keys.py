"""API keys before they are used: cleaned, checked, and kept out of httpx's and httpcore's logs.

`clean_api_key` strips the whitespace a copy-paste or `echo KEY > file` adds around a key and
refuses a key that no HTTP header can carry as it is (a control character, a non-ASCII
character such as a typographic quote), with an `InvalidApiKey` that names the place and the
kind of character, never the key.

`KeyLogFilter` is a `logging.Filter` on the `httpx` and `httpcore` loggers (and httpcore's
child loggers, whose records a parent's filter would not see). With the root logger at DEBUG,
httpcore logs the response headers a server sent (which may echo the key) and the text of a
header it refused; the filter redacts every key a client holds, in the message, its arguments
and a formatted exception, before any handler sees the record. `hold_key` registers a key and
returns the function that gives it back; the filter is installed while at least one key is held
and removed with the last one.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable

from pi_lab.errors import PiLabError

from .redact import _MIN_SECRET_LEN, redact_all

__all__ = ["InvalidApiKey", "KeyLogFilter", "clean_api_key", "hold_key"]

# httpx logs on "httpx"; httpcore on one child logger per module. A filter on "httpcore" alone
# would not see its children's records (logging consults filters only where a record is made).
LOGGERS = ("httpx", "httpcore", "httpcore.connection", "httpcore.http11", "httpcore.http2",
           "httpcore.proxy", "httpcore.socks")


class InvalidApiKey(PiLabError, ValueError):
    """An API key that cannot be sent in an HTTP header; the message never shows the key."""


def clean_api_key(key: str | None, source: str) -> str | None:
    """`key` without surrounding whitespace (None when nothing is left), or `InvalidApiKey`.

    `source` names where the key came from in the message (`api_key`, `OPENAI_API_KEY`).
    """
    if key is None:
        return None
    if not isinstance(key, str):
        raise InvalidApiKey(f"{source} must be a string, not {type(key).__name__}")
    key = key.strip()
    for position, char in enumerate(key, 1):
        code = ord(char)
        if code < 0x20 or code == 0x7F:
            kind = "a control character"
        elif code > 0x7E:
            kind = "a non-ASCII character"
        else:
            continue
        name = unicodedata.name(char, "")
        described = f"U+{code:04X}" + (f" {name}" if name else "")
        place = _ordinal(position) + (" (last)" if position == len(key) else "")
        raise InvalidApiKey(
            f"The API key from {source} has {kind} ({described}) as its {place} character; "
            "API keys are printable ASCII: copy the key again (quotes and line breaks often come with a paste)"
        )
    return key or None


def _ordinal(number: int) -> str:
    # "48th", never a bare number: the message may end up as an assistant error, and a bare 429
    # or 500 there would read as retryable to pi's classifier.
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


class KeyLogFilter(logging.Filter):
    """Redacts the held keys in every record of the loggers it is installed on; drops nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: tuple[str, ...] = ()

    def filter(self, record: logging.LogRecord) -> bool:
        keys = self.keys
        if not keys:
            return True
        try:
            text = record.getMessage()
        except Exception:  # a record that cannot format: leave it to the handler's own report
            text = None
        if text is not None:
            clean = redact_all(text, keys)
            if clean != text:
                record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            formatted = logging.Formatter().formatException(record.exc_info)
            clean = redact_all(formatted, keys)
            if clean != formatted:
                record.exc_text = clean  # handlers use exc_text when it is set
        if record.exc_text:
            record.exc_text = redact_all(record.exc_text, keys)
        if record.stack_info:
            record.stack_info = redact_all(record.stack_info, keys)
        return True


_lock = threading.Lock()
_held: Counter[str] = Counter()
_filter = KeyLogFilter()


def hold_key(key: str | None) -> Callable[[], None]:
    """Redact `key` in the httpx/httpcore logs until the returned function is called (once)."""
    if not key or len(key) < _MIN_SECRET_LEN:
        return _nothing
    with _lock:
        if not _held:
            for name in LOGGERS:
                logging.getLogger(name).addFilter(_filter)
        _held[key] += 1
        _filter.keys = tuple(_held)
    released = False

    def release() -> None:
        nonlocal released
        with _lock:
            if released:
                return
            released = True
            _held[key] -= 1
            if _held[key] <= 0:
                del _held[key]
            _filter.keys = tuple(_held)
            if not _held:
                for name in LOGGERS:
                    logging.getLogger(name).removeFilter(_filter)

    return release


def _nothing() -> None:
    pass


def installed() -> bool:
    """Whether the filter is on the loggers now (for tests and the curious)."""
    return _filter in logging.getLogger("httpcore.http11").filters
