"""A Codex rollout's model calls without building its entries: what ``pi-lab usage`` needs.

:class:`pi_lab.formats.codex.CodexSession` turns every line into a pi-shaped entry; the usage
report reads only its assistant entries (one per model call: the assistant-side items gathered
until something else ends the call) with the usage of the ``token_count`` that priced them, the
header's facts and a fork's copied prefix. This module follows the adapter's ``_Converter`` line
by line with the same rules, keeping only that: which line starts each call, the model and
provider at the moment the call ends, the usage the next counted ``token_count`` gives the last
unpriced call, and the first timestamp an entry carries (the header's, when ``session_meta``
names none). Every line is still parsed (its kind decides where a call ends), but no entry,
content block or tree is made. ``tests/corpus/test_corpus_usage_fast_agents.py`` proves its calls equal
the adapter's on generated, forked, compacted, torn and hostile rollouts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from pi_lab.formats.claude_code_lines import _read_file, _s, read_lines
from pi_lab.formats.claude_code_usage_fast import parsed_lines
from pi_lab.formats.codex import _ASSISTANT_SIDE, _OUTPUTS, line_id, pi_usage, token_usage
from pi_lab.formats.codex_forks import copied_lines, find_rollout, parent_id_of

__all__ = ["CodexCall", "CodexUsage", "codex_usage"]


@dataclass(slots=True)
class CodexCall:
    """One assistant entry as the adapter makes it: its id, raw timestamp, provider, model,
    pi usage and whether it is a copy of the parent's."""

    entry_id: str
    timestamp: Any
    provider: str
    model: str
    usage: dict[str, Any]
    line: int  # the line the copy marks look at (a compaction's line for its history)
    copied: bool = False


@dataclass
class CodexUsage:
    """A rollout's header facts (as ``CodexSession``'s header) and calls."""

    session_id: str
    cwd: str
    timestamp: Any
    parent_file: str | None
    calls: list[CodexCall] = field(default_factory=list)


def _counts(raw: Any) -> tuple[int, ...] | None:
    """:func:`~pi_lab.formats.codex.token_usage`'s five counts as a tuple (compared with the
    previous count's, never kept)."""
    if not isinstance(raw, dict):
        return None
    get = raw.get
    counts = (get("input_tokens"), get("cached_input_tokens"), get("output_tokens"), get("reasoning_output_tokens"),
              get("total_tokens"))
    return tuple(v if type(v) is int and v >= 0 else 0 for v in counts)


class _Calls:
    """The adapter's converter reduced to its calls (same order of events, no entries)."""

    def __init__(self) -> None:
        self.calls: list[CodexCall] = []
        self.header_line: dict[str, Any] | None = None
        self.provider = "openai"
        self.model: str | None = None
        self.previous_total: tuple[int, ...] | None = None
        self.unpriced: list[CodexCall] = []
        self.first_timestamp: Any = None  # the first truthy string timestamp of an entry
        self._group: tuple[str, Any, int, bool] | None = None  # (id, timestamp, copy line, from compaction)

    def _added(self, timestamp: Any) -> None:
        """An entry was added (in the adapter's order) with this timestamp."""
        if self.first_timestamp is None and _s(timestamp):
            self.first_timestamp = timestamp

    def lines(self, lines: list[tuple[int, dict[str, Any]]]) -> None:
        for number, line in lines:
            kind, payload = line.get("type"), line.get("payload")
            if kind == "session_meta" and isinstance(payload, dict) and self.header_line is None:
                self.header_line = line
                if _s(payload.get("model_provider")):
                    self.provider = payload["model_provider"]
                continue
            if kind == "response_item" and isinstance(payload, dict):
                self._item(number, line, payload, None, None)
            elif kind == "turn_context" and isinstance(payload, dict):
                self._flush()
                model = payload.get("model")
                if _s(model) and model != self.model:
                    self.model = model
                self._added(line.get("timestamp"))
            elif kind == "compacted" and isinstance(payload, dict):
                self._flush()
                self._compacted(number, line, payload)
            elif kind == "event_msg" and isinstance(payload, dict) and payload.get("type") == "token_count":
                self._token_count(payload)
                self._added(line.get("timestamp"))
            else:
                if kind != "event_msg":
                    self._flush()
                self._added(line.get("timestamp"))
        self._flush()

    def _item(self, number: int, line: dict[str, Any], payload: dict[str, Any], compaction: int | None,
              wanted: str | None) -> None:
        item = _s(payload.get("type"))  # (an odd type is an unknown item, never a set lookup of it)
        if (item == "message" and payload.get("role") == "assistant") or item == "reasoning" \
                or item in _ASSISTANT_SIDE or (item is not None and item.endswith("_call") and item not in _OUTPUTS):
            if self._group is None:
                self._group = (wanted or line_id(number), line.get("timestamp"), compaction or number,
                               compaction is not None)
            return
        self._flush()
        self._added(line.get("timestamp"))

    def _flush(self) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        entry_id, timestamp, copy_line, from_compaction = group
        call = CodexCall(entry_id, timestamp, self.provider, self.model or "", pi_usage(None), copy_line)
        self.calls.append(call)
        self._added(timestamp)
        if not from_compaction:
            self.unpriced.append(call)

    def _compacted(self, number: int, line: dict[str, Any], payload: dict[str, Any]) -> None:
        self._added(line.get("timestamp"))
        history = payload.get("replacement_history")
        if not isinstance(history, list):
            return
        for index, item in enumerate(history, start=1):
            if isinstance(item, dict):
                self._item(number, line, item, number, f"{line_id(number)}.r{index:04d}")
        self._flush()

    def _token_count(self, payload: dict[str, Any]) -> None:
        info = payload.get("info")
        if not isinstance(info, dict):
            info = None
        total = _counts(info.get("total_token_usage")) if info else None
        last = info.get("last_token_usage") if info else None
        repeat = info is None or (total is not None and total == self.previous_total)
        if total is not None:
            self.previous_total = total
        self._flush()
        if not repeat and isinstance(last, dict):
            if self.unpriced:
                self.unpriced[-1].usage = pi_usage(token_usage(last))
            self.unpriced = []


def codex_usage(path: str, data: bytes | None = None) -> CodexUsage:
    """The calls and header facts of the rollout at ``path`` (``data``: its bytes, if read),
    equal to those of ``CodexSession.from_file(path)``'s assistant entries."""
    resolved = os.path.abspath(path)
    if data is None:
        data = _read_file(resolved)
    lines = parsed_lines(data)
    reader = _Calls()
    reader.lines(lines)
    head: dict[str, Any] = reader.header_line or {}
    written = head.get("payload")
    meta: dict[str, Any] = written if isinstance(written, dict) else {}
    session_id = _s(meta.get("id")) or os.path.splitext(os.path.basename(resolved))[0]
    cwd = _s(meta.get("cwd")) or "."
    timestamp = meta.get("timestamp") if _s(meta.get("timestamp")) else head.get("timestamp")
    if not _s(timestamp):
        timestamp = reader.first_timestamp or ""
    parent_id, _kind = parent_id_of(meta)
    parent_file = find_rollout(parent_id, resolved) if parent_id else None
    if parent_id:
        parent_lines = None
        if parent_file is not None:
            try:
                parent_lines = read_lines(_read_file(parent_file))[0]
            except OSError:
                parent_lines, parent_file = None, None
        copies = copied_lines(lines, parent_id, parent_lines)
        for call in reader.calls:
            call.copied = call.line in copies
    return CodexUsage(session_id, cwd, timestamp, parent_file, reader.calls)
