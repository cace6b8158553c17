"""Token usage of Claude Code sessions: per call, then per session, day and model.

The counting rules are ccusage's (``ccusage claude daily``), the tool people compare with, so the
totals agree token for token on the same folder (``tests/formats/test_claude_code_ccusage.py``).
The rules, learned from ccusage's source (``rust/crates/ccusage/src/adapter/claude/mod.rs`` and
``daily.rs``, ``src/types.rs``; written here anew):

* files: every ``*.jsonl`` under ``<config>/projects/`` (recursively: sub-agent files count and
  belong to their folder's session), for each folder of ``CLAUDE_CONFIG_DIR`` (comma-separated)
  or, without it, ``~/.config/claude`` and ``~/.claude``;
* a line counts when it contains the bytes ``"usage":{`` (so a line written with a space after
  the colon, as Python's ``json.dumps`` writes, does not), has no ``:null`` after one of the
  fields ``id cwd model speed costUSD version sessionId requestId isApiErrorMessage
  cache_read_input_tokens cache_creation_input_tokens``, has a string ``timestamp`` that parses,
  ``message.usage.input_tokens`` and ``output_tokens`` as non-negative integers, a ``version``
  (when present) starting ``N.N.N``, and no empty ``sessionId``, ``requestId``, ``message.id`` or
  ``message.model``;
* one call per (``message.id``, ``requestId``): of the lines sharing a key the one with the
  largest token total is kept (a streamed response repeats its usage, the last count is the
  largest); a sidechain copy with the same ``message.id`` as a main-file line is dropped for it;
* cache writes are ``cache_creation.ephemeral_5m_input_tokens + ephemeral_1h_input_tokens`` when
  that object is present, else ``cache_creation_input_tokens``;
* the model ``<synthetic>`` is no model; ``usage.speed == "fast"`` adds ``-fast`` to the name;
* a call's day is its timestamp's date in the given time zone (ccusage: the local one).

pi_lab's own view of the same calls (``ClaudeCodeSession``) merges a streamed response into one
assistant message and keeps the same largest usage, so both count a call once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any

import orjson

from pi_lab.formats.usage_totals import CallTotals, totals_by

__all__ = ["UsageCall", "claude_config_dirs", "usage_files", "calls_of_file", "usage_calls", "usage_totals"]

_MARKER = b'"usage":{'
_NULLABLE_REFUSED = frozenset({b"id", b"cwd", b"model", b"speed", b"costUSD", b"version", b"sessionId", b"requestId",
                               b"isApiErrorMessage", b"cache_read_input_tokens", b"cache_creation_input_tokens"})
_SEMVER = re.compile(r"\d+\.\d+\.\d")
_COUNTERS = ("input", "output", "cache_write", "cache_read")


@dataclass(slots=True)
class UsageCall:
    """One model call's usage as counted."""

    message_id: str | None
    request_id: str | None
    timestamp: datetime
    model: str | None
    input: int
    output: int
    cache_write: int
    cache_read: int
    sidechain: bool
    session: str  # the session folder or file stem under the project
    project: str
    file: str

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read


def claude_config_dirs(env: dict[str, str] | None = None) -> list[Path]:
    """The config folders ccusage reads: ``CLAUDE_CONFIG_DIR`` (comma-separated; a folder or its
    ``projects/``), else ``~/.config/claude`` and ``~/.claude``; those with a ``projects/``."""
    environ: Mapping[str, str] = os.environ if env is None else env
    raw = environ.get("CLAUDE_CONFIG_DIR")
    candidates = [p.strip() for p in raw.split(",") if p.strip()] if raw else ["~/.config/claude", "~/.claude"]
    out: list[Path] = []
    for item in candidates:
        path = Path(os.path.expanduser(item))
        if path.name == "projects" and path.is_dir():
            path = path.parent
        if (path / "projects").is_dir() and path not in out:
            out.append(path)
    return out


def usage_files(dirs: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for base in dirs:
        for root, _dirnames, names in os.walk(base / "projects"):
            files.extend(Path(root) / n for n in names if n.endswith(".jsonl"))
    return sorted(files)


def _has_refused_null(line: bytes) -> bool:
    offset = 0
    while True:
        at = line.find(b":null", offset)
        if at < 0:
            return False
        end = max(at - 1, 0)
        if line[end:end + 1] != b'"':
            while end > 0 and line[end:end + 1] != b'"':
                end -= 1
        if line[end:end + 1] == b'"':
            start = max(end - 1, 0)
            while start > 0 and line[start:start + 1] != b'"':
                start -= 1
            if line[start:start + 1] == b'"' and line[start + 1:end] in _NULLABLE_REFUSED:
                return True
        offset = at + 5


def _count(value: Any) -> int | None:
    """A u64 as serde reads it: a non-negative JSON integer (not a float, not a bool)."""
    return value if value.__class__ is int and 0 <= value < 1 << 64 else None


def _optional(value: Any, kind: type) -> bool:
    return value is None or value.__class__ is kind


def _parse_time(value: str) -> datetime | None:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return parsed


def _session_parts(path: Path) -> tuple[str, str]:
    parts = path.parts
    try:
        at = len(parts) - 1 - list(reversed(parts)).index("projects")
    except ValueError:
        return path.stem, ""
    rel = parts[at + 1:]
    project = rel[0] if len(rel) > 1 else ""
    session = rel[1] if len(rel) > 2 else path.stem
    if session.endswith(".jsonl"):
        session = session[: -len(".jsonl")]
    return session, project


def calls_of_file(path: Path) -> Iterator[UsageCall]:
    """Every line of ``path`` ccusage counts (before the one-call-per-key rule)."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    session, project = _session_parts(path)
    for line in data.split(b"\n"):
        if _MARKER not in line or _has_refused_null(line):
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        call = _call(obj, session, project, str(path))
        if call is not None:
            yield call


def _call(obj: Any, session: str, project: str, file: str) -> UsageCall | None:
    if obj.__class__ is not dict:
        return None
    message = obj.get("message")
    timestamp = obj.get("timestamp")
    if message.__class__ is not dict or timestamp.__class__ is not str:
        return None
    usage = message.get("usage")
    if usage.__class__ is not dict:
        return None
    inp, out = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    write = _count(usage.get("cache_creation_input_tokens", 0))
    read = _count(usage.get("cache_read_input_tokens", 0))
    if inp is None or out is None or write is None or read is None:
        return None
    speed = usage.get("speed")
    if speed is not None and speed not in ("standard", "fast"):
        return None
    breakdown = usage.get("cache_creation")
    if breakdown is not None:
        if breakdown.__class__ is not dict:
            return None
        five, hour = _count(breakdown.get("ephemeral_5m_input_tokens", 0)), _count(breakdown.get("ephemeral_1h_input_tokens", 0))
        if five is None or hour is None:
            return None
        write = five + hour
    model, message_id = message.get("model"), message.get("id")
    session_id, request_id, version = obj.get("sessionId"), obj.get("requestId"), obj.get("version")
    if not all(_optional(v, str) for v in (model, message_id, session_id, request_id, version)):
        return None
    if not _optional(obj.get("isSidechain"), bool) or not _optional(obj.get("isApiErrorMessage"), bool):
        return None
    cost = obj.get("costUSD")
    if cost is not None and (cost.__class__ not in (int, float) or cost.__class__ is bool):
        return None
    when = _parse_time(timestamp)
    if when is None:
        return None
    if version is not None and not _SEMVER.match(version):
        return None
    if "" in (session_id, request_id, message_id, model):
        return None
    name = None if model in (None, "<synthetic>") else (model + "-fast" if speed == "fast" else model)
    return UsageCall(message_id, request_id, when, name, inp, out, write, read, obj.get("isSidechain") is True,
                     session, project, file)


def _replaces(candidate: UsageCall, existing: UsageCall) -> bool:
    if candidate.sidechain != existing.sidechain:
        return existing.sidechain
    return candidate.total > existing.total


def usage_calls(files: Iterable[Path]) -> list[UsageCall]:
    """The calls of ``files`` counted once per (message id, request id), in first-seen order."""
    kept: list[UsageCall] = []
    exact: dict[tuple[str, str | None], int] = {}
    by_message: dict[str, list[int]] = {}
    for path in files:
        for call in calls_of_file(path):
            if call.message_id is None:
                kept.append(call)
                continue
            index = exact.get((call.message_id, call.request_id))
            if index is None:
                # A sidechain replay of a main-file response carries another request id.
                index = next((i for i in by_message.get(call.message_id, ())
                              if call.sidechain or kept[i].sidechain), None)
            if index is not None:
                if _replaces(call, kept[index]):
                    kept[index] = call
                    exact[(call.message_id, call.request_id)] = index
                continue
            index = len(kept)
            kept.append(call)
            exact[(call.message_id, call.request_id)] = index
            by_message.setdefault(call.message_id, []).append(index)
    return kept


class Totals(CallTotals):
    """One group's calls: the four counters summed, and per model."""

    COUNTERS = _COUNTERS
    input: int
    output: int
    cache_write: int
    cache_read: int

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read


_KEYS: dict[str, Callable[[UsageCall], str]] = {
    "session": lambda call: call.session,
    "model": lambda call: call.model or "<none>",
    "project": lambda call: call.project,
}


def usage_totals(calls: Iterable[UsageCall], by: str = "day", tz: tzinfo | None = None) -> dict[str, Totals]:
    """Totals per ``by``: ``"day"`` (``YYYY-MM-DD`` in ``tz``; None: the local zone, as ccusage),
    ``"session"``, ``"model"`` or ``"project"``, keys sorted."""
    return totals_by(calls, by, tz, _KEYS, Totals)


def folder_usage(folder: str | os.PathLike[str], by: str = "day", tz: tzinfo | None = timezone.utc) -> dict[str, Totals]:
    """:func:`usage_totals` of every session under a ``CLAUDE_CONFIG_DIR``-style folder."""
    return usage_totals(usage_calls(usage_files(claude_config_dirs({"CLAUDE_CONFIG_DIR": os.fspath(folder)}))), by, tz)
