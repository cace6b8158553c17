"""pi's session summary (``buildSessionInfo``, session-format.md §10), built one line at a time.

One rule for both readers of it: :func:`pi_lab.session.paths.session_info` feeds a whole file,
the Lab's listing (:mod:`pi_lab.server.listing`) feeds the lines a growing file gained since
its last look. The builder holds only the counters and the texts it is asked to keep.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pi_lab.session._text import content_text, js_trim
from pi_lab.session.entries import Entry
from pi_lab.session.ids import parse_iso_ms

__all__ = ["SessionInfo", "SummaryBuilder", "MIN_MS", "MAX_MS"]

# The times a Python datetime can show (years 1 to 9999). pi takes any number as a message's
# time and shows a bigger one (10**20) as "Invalid Date"; a datetime cannot hold that, so such a
# number is no time of activity here and the entry's own ISO time counts instead, as pi does for
# a message without a numeric time. The session is listed either way, as pi lists it.
MIN_MS = (datetime(1, 1, 1, tzinfo=timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds() * 1000
MAX_MS = (datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
          - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds() * 1000


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session as pi's session list shows it (the fields of pi's ``SessionInfo``)."""

    path: str
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: datetime
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str


def _to_datetime(ms: float) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


class SummaryBuilder:
    """pi's ``SessionInfo`` of one file, fed parsed lines in file order by :meth:`add`.

    ``first_ms``: the earliest time taken as a time (the listing passes 1971: a time in 1970 is a
    counter or seconds read as milliseconds there); pi's own rule takes any time a date can show.
    ``title_chars``: keep only that much of the first user message. ``keep_texts``: keep every
    message text for ``all_messages_text`` (the listing indexes them itself instead).
    ``skip_first``: user messages that cannot be the first message (the listing passes Codex's
    injected instructions, which no session should be titled by)."""

    __slots__ = ("header", "not_session", "name", "message_count", "first_message", "latest",
                 "created_ms", "texts", "_first_ms", "_title_chars", "_keep_texts", "_skip_first")

    def __init__(self, *, first_ms: float = MIN_MS, title_chars: int | None = None, keep_texts: bool = True,
                 skip_first: Callable[[Entry], bool] | None = None) -> None:
        self._first_ms = first_ms
        self._skip_first = skip_first
        self._title_chars = title_chars
        self._keep_texts = keep_texts
        self.header: dict[str, Any] | None = None
        self.not_session = False  # the first parsed line is not a session header
        self.name: str | None = None
        self.message_count = 0
        self.first_message = ""
        self.latest = 0.0  # the latest activity time, 0 while there is none
        self.created_ms = float("nan")  # the header's time, NaN when it is not a usable one
        self.texts: list[str] = []

    def _usable(self, ms: float) -> float:
        return ms if self._first_ms <= ms <= MAX_MS else float("nan")

    def add(self, entry: Entry) -> str | None:
        """Take one parsed line; the text of a user or assistant message (for a search index),
        else ``None``. Lines after a first line that is not a header are ignored."""
        if self.not_session:
            return None
        if self.header is None:
            if entry.get("type") != "session":
                self.not_session = True
                return None
            self.header = entry
            self.created_ms = self._usable(parse_iso_ms(entry.get("timestamp")))
            return None
        kind = entry.get("type")
        if kind == "session_info":
            value = entry.get("name")
            self.name = (js_trim(value) if isinstance(value, str) else "") or None
            return None
        if kind != "message":
            return None
        self.message_count += 1
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return None
        activity = self._activity(message.get("timestamp"), entry.get("timestamp"))
        if activity > self.latest:
            self.latest = activity
        text = content_text(message.get("content"), " ")
        if not text:
            return None
        if self._keep_texts:
            self.texts.append(text)
        if not self.first_message and message.get("role") == "user" and not (
                self._skip_first is not None and self._skip_first(entry)):
            self.first_message = text if self._title_chars is None else text[: self._title_chars]
        return text

    def _activity(self, stamp: Any, entry_time: Any) -> float:
        # pi: the message's numeric timestamp, else its entry's ISO time (compared before any
        # float(): an int past the float range, 10**400, has none).
        if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and self._first_ms <= stamp <= MAX_MS:
            return float(stamp)
        if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and self._first_ms == MIN_MS and stamp < MIN_MS:
            return 0.0  # pi keeps the maximum of 0 and it: no activity
        activity = self._usable(parse_iso_ms(entry_time))
        return activity if activity == activity else 0.0

    def info(self, path: str, mtime: float | None = None, all_messages_text: str | None = None) -> SessionInfo | None:
        """The summary so far, ``None`` unless the file began with a session header. The file's
        ``mtime`` (seconds; ``os.stat`` when not given and needed) is the last resort for
        ``modified``, as in pi."""
        if self.header is None or self.not_session:
            return None
        header = self.header
        created_ms = self.created_ms
        # pi's order: the latest activity, else the header's time, else the file's mtime.
        if self.latest > 0:
            modified_ms = self.latest
        elif created_ms == created_ms:
            modified_ms = created_ms
        else:
            modified_ms = (os.stat(path).st_mtime if mtime is None else mtime) * 1000
        cwd = header.get("cwd")
        parent = header.get("parentSession")
        return SessionInfo(
            path=path,
            id=header.get("id"),  # pyright: ignore[reportArgumentType]  (pi copies whatever the header holds)
            cwd=cwd if isinstance(cwd, str) else "",
            name=self.name,
            parent_session_path=parent if isinstance(parent, str) else None,
            created=_to_datetime(created_ms if created_ms == created_ms else modified_ms),
            modified=_to_datetime(modified_ms),
            message_count=self.message_count,
            first_message=self.first_message or "(no messages)",
            all_messages_text=" ".join(self.texts) if all_messages_text is None else all_messages_text,
        )
