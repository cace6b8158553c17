"""Entry ids, session ids and timestamps, with injectable sources for determinism."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Container
from datetime import datetime, timedelta, timezone

__all__ = [
    "UuidFactory",
    "Clock",
    "new_entry_id",
    "uuid7",
    "iso_timestamp",
    "parse_iso_ms",
    "validate_session_id",
    "SESSION_ID_ERROR",
]

UuidFactory = Callable[[], str]
Clock = Callable[[], datetime]

SESSION_ID_ERROR = (
    "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
    "and start and end with an alphanumeric character"
)
_SESSION_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


def random_uuid4() -> str:
    return str(uuid.uuid4())


def new_entry_id(existing: Container[str], uuid_factory: UuidFactory | None = None) -> str:
    """pi's entry id: the first 8 characters of a UUID, redrawn on collision (100 tries)."""
    factory = uuid_factory or random_uuid4
    for _ in range(100):
        candidate = factory()[:8]
        if candidate not in existing:
            return candidate
    return factory()


_MS = timedelta(milliseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

_uuid7_lock = threading.Lock()
_uuid7_last = (0, 0)  # (milliseconds, counter) of the previous id, for monotonicity


def uuid7(now_ms: int | None = None) -> str:
    """A UUIDv7 string; monotonic within the process like pi's generator."""
    global _uuid7_last
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _uuid7_lock:
        last_ms, counter = _uuid7_last
        if ms <= last_ms:
            ms, counter = last_ms, counter + 1
            if counter >= 1 << 12:
                ms, counter = ms + 1, 0
        else:
            counter = int.from_bytes(os.urandom(2), "big") & 0x3FF
        _uuid7_last = (ms, counter)
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso_timestamp(moment: datetime) -> str:
    """``Date.prototype.toISOString()``: UTC, three fractional digits, ``Z``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the epoch, truncated like a JavaScript ``Date``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // _MS


_ISO = re.compile(
    r"^(?P<y>[+-]?\d{4,6})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d+))?)?)?"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2})?$"
)


def parse_iso_ms(value: object) -> float | int:
    """``Date.parse`` for the ISO strings pi writes: epoch milliseconds, or NaN.

    NaN mirrors JavaScript, where an unparsable timestamp becomes ``NaN`` (serialised as
    ``null``) rather than an error.
    """
    if not isinstance(value, str):
        return float("nan")
    m = _ISO.match(value.strip())
    if not m:
        return float("nan")
    try:
        frac = (m.group("f") or "0")[:3].ljust(3, "0")
        has_time = m.group("h") is not None
        tz = m.group("tz")
        base = datetime(
            int(m.group("y")),
            int(m.group("mo")),
            int(m.group("d")),
            int(m.group("h") or 0),
            int(m.group("mi") or 0),
            int(m.group("s") or 0),
            tzinfo=timezone.utc,
        )
    except ValueError:
        return float("nan")
    ms = (base - _EPOCH) // _MS + int(frac)
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        offset = (int(digits[:2]) * 60 + int(digits[2:])) * 60000
        ms -= sign * offset
    elif not tz and has_time:
        # JavaScript reads a date-time without offset as local time; pi never writes one.
        local = datetime.fromtimestamp(ms / 1000, tz=timezone.utc).astimezone()
        local_offset = local.utcoffset()
        ms -= int(local_offset.total_seconds() * 1000) if local_offset else 0
    return ms


def validate_session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise ValueError(SESSION_ID_ERROR)
    return session_id
