"""Token usage of Codex rollouts: per call, then per session, day and model.

The counting rules are ccusage's (``ccusage codex daily``), learned from its source
(``rust/crates/ccusage/src/adapter/codex/parser.rs`` and ``loader.rs``) and checked against
ccusage 20.0.24 itself (``tests/formats/test_codex_ccusage.py``); written here anew:

* files: every ``*.jsonl`` under ``$CODEX_HOME/sessions`` (default ``~/.codex``);
* a line is read only when it holds the bytes ``"type":"turn_context"`` or ``"type":"event_msg"``
  and ``"type":"token_count"`` (ccusage's prefilter; Codex writes compact JSON, so only a
  hand-made file written with spaces after the colons is affected: the session view reads it,
  these totals do not count it, as ccusage);
* ``turn_context`` sets the current model (``payload.model``);
* a call is an ``event_msg`` ``token_count`` with a timestamp and ``info``: its
  ``last_token_usage``, else the difference of ``total_token_usage`` from the previous one;
  a count whose ``total_token_usage`` equals the previous one is a repeat and is skipped, and so
  is a count of all zeros;
* the model is the count's own (``info.model``...), else the current one, else ``gpt-5``
  (ccusage marks that a fallback);
* ``input`` is ``input_tokens - cached_input_tokens`` (Codex's input includes the cached part),
  ``cache_read`` the cached part, ``output`` includes the reasoning tokens, ``total`` is
  Codex's ``total_tokens``;
* identical calls (same timestamp, model and counts) in several files count once.

One rule differs on purpose (``count_copies=False``, the default): the calls a fork or
sub-agent copied from its parent (:func:`pi_lab.formats.codex.copied_lines`) are its parent's
and count once. ccusage counts a fork's copies again (they are re-stamped, so its identical-call
rule does not catch them); ``count_copies=True`` gives ccusage's totals.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any

from pi_lab.formats.claude_code_lines import _read_file, read_lines
from pi_lab.formats.codex import token_usage
from pi_lab.formats.codex_forks import copied_lines, find_rollout, parent_id_of
from pi_lab.formats.usage_totals import CallTotals, totals_by
from pi_lab.session.ids import parse_iso_ms

__all__ = ["CodexCall", "codex_sessions_dirs", "usage_files", "calls_of_file", "usage_calls", "usage_totals",
           "folder_usage", "FALLBACK_MODEL"]

#: The model ccusage names when a rollout records none.
FALLBACK_MODEL = "gpt-5"
_COUNTERS = ("input", "output", "cache_read", "reasoning", "total")
_TURN_CONTEXT, _EVENT_MSG, _TOKEN_COUNT = b'"type":"turn_context"', b'"type":"event_msg"', b'"type":"token_count"'


@dataclass(slots=True)
class CodexCall:
    """One model call's usage as counted."""

    timestamp: datetime
    stamp: str
    model: str
    fallback: bool
    input: int  # not cached
    cache_read: int
    output: int
    reasoning: int
    total: int
    session: str  # the file's path under sessions/, without .jsonl (ccusage's session id)
    file: str
    line: int
    copied: bool


def codex_sessions_dirs(env: dict[str, str] | None = None) -> list[Path]:
    """``$CODEX_HOME/sessions`` (``~/.codex`` without it), when it exists."""
    environ: Mapping[str, str] = os.environ if env is None else env
    home = (environ.get("CODEX_HOME") or "").strip() or os.path.expanduser("~/.codex")
    folder = Path(home) / "sessions"
    return [folder] if folder.is_dir() else []


def usage_files(folders: Iterable[Path]) -> list[tuple[Path, Path]]:
    """(sessions folder, file) for every ``*.jsonl`` under the folders, in path order."""
    out = []
    for folder in folders:
        out.extend((folder, p) for p in sorted(folder.rglob("*.jsonl"), key=str) if p.is_file())
    return out


def _named(value: Any) -> str | None:
    """A model name: a string with something besides spaces, stripped."""
    return value.strip() or None if type(value) is str else None


def _model_of(payload: dict[str, Any]) -> str | None:
    info = payload.get("info")
    for holder in (payload, info if isinstance(info, dict) else {}):
        for key in ("model", "model_name"):
            named = _named(holder.get(key))
            if named:
                return named
        meta = holder.get("metadata")
        named = _named(meta.get("model")) if isinstance(meta, dict) else None
        if named:
            return named
    return None


def calls_of_file(folder: Path, path: Path, *, count_copies: bool = False) -> list[CodexCall]:
    """The calls one rollout counts (see the module's rules)."""
    try:
        data = _read_file(str(path))
    except OSError:
        return []
    lines, _ = read_lines(data)
    readable = {n for n, raw in enumerate(data.split(b"\n"), start=1)
                if _TURN_CONTEXT in raw or (_EVENT_MSG in raw and _TOKEN_COUNT in raw)}
    session = path.relative_to(folder).as_posix()[: -len(".jsonl")] if path.suffix == ".jsonl" else path.name
    copies: dict[int, Any] = {}
    if not count_copies:
        meta = next((line.get("payload") for _, line in lines[:1] if line.get("type") == "session_meta"), None)
        parent_id = parent_id_of(meta)[0] if isinstance(meta, dict) else None
        if parent_id:
            parent = find_rollout(parent_id, str(path))
            parent_lines = read_lines(_read_file(parent))[0] if parent else None
            copies = copied_lines(lines, parent_id, parent_lines)
    out: list[CodexCall] = []
    previous: dict[str, int] | None = None
    model: str | None = None
    fallback = False
    for number, line in lines:
        if number not in readable:
            continue
        kind, payload = line.get("type"), line.get("payload")
        if not isinstance(payload, dict):
            continue
        if kind == "turn_context":
            named = _model_of(payload)
            if named:
                model, fallback = named, False
            continue
        if kind != "event_msg" or payload.get("type") != "token_count":
            continue
        written = line.get("timestamp")
        stamp = written.strip() if type(written) is str else ""
        if not stamp:
            continue
        info = payload.get("info") if isinstance(payload.get("info"), dict) else None
        total = token_usage(info.get("total_token_usage")) if info else None
        last = token_usage(info.get("last_token_usage")) if info else None
        repeat = total is not None and total == previous
        if last is None and total is not None:
            last = {k: max(total[k] - (previous or {}).get(k, 0), 0) for k in total}
        if total is not None:
            previous = total
        if last is None or repeat:
            continue
        if not (last["input_tokens"] or last["cached_input_tokens"] or last["output_tokens"]
                or last["reasoning_output_tokens"]):
            continue
        named = _model_of(payload)
        if named:
            model, fallback = named, False
        elif model is None:
            model, fallback = FALLBACK_MODEL, True
        ms = parse_iso_ms(stamp)
        if ms != ms:
            continue
        cached = min(last["cached_input_tokens"], last["input_tokens"])
        out.append(CodexCall(datetime.fromtimestamp(ms / 1000, timezone.utc), stamp, model, fallback,
                             last["input_tokens"] - cached, cached, last["output_tokens"],
                             last["reasoning_output_tokens"],
                             last["total_tokens"] or last["input_tokens"] + last["output_tokens"],
                             session, str(path), number, number in copies))
    return out


def usage_calls(files: Iterable[tuple[Path, Path]], *, count_copies: bool = False) -> list[CodexCall]:
    """The calls of ``files``, identical ones (timestamp, model, counts) once, copies once."""
    seen: set[tuple[Any, ...]] = set()
    kept = []
    for folder, path in files:
        for call in calls_of_file(folder, path, count_copies=count_copies):
            if call.copied and not count_copies:
                continue
            key = (call.stamp, call.model, call.input, call.cache_read, call.output, call.reasoning, call.total)
            if key in seen:
                continue
            seen.add(key)
            kept.append(call)
    return kept


class Totals(CallTotals):
    """One group's calls: the counters summed, and per model."""

    COUNTERS = _COUNTERS
    input: int
    cache_read: int
    output: int
    reasoning: int
    total: int


_KEYS: dict[str, Callable[[CodexCall], str]] = {"session": lambda call: call.session, "model": lambda call: call.model}


def usage_totals(calls: Iterable[CodexCall], by: str = "day", tz: tzinfo | None = None) -> dict[str, Totals]:
    """Totals per ``by``: ``"day"`` (``YYYY-MM-DD`` in ``tz``; None: the local zone, as
    ccusage), ``"session"`` or ``"model"``, keys sorted."""
    return totals_by(calls, by, tz, _KEYS, Totals)


def folder_usage(home: str | os.PathLike[str], by: str = "day", tz: tzinfo | None = timezone.utc, *,
                 count_copies: bool = False) -> dict[str, Totals]:
    """:func:`usage_totals` of every rollout under a ``CODEX_HOME``-style folder."""
    files = usage_files(codex_sessions_dirs({"CODEX_HOME": os.fspath(home)}))
    return usage_totals(usage_calls(files, count_copies=count_copies), by, tz)
