"""A Codex rollout's model calls without building its entries: what ``pi-lab usage`` needs.

:class:`pi_lab.formats.codex.CodexSession` turns every line into a pi-shaped entry; the usage
report reads only its assistant entries (one per model call: the assistant-side items gathered
until something else ends the call) with the usage of the ``token_count`` that priced them, the
header's facts and a fork's copied prefix. This module follows the adapter's ``_Converter`` line
by line with the same rules, keeping only that: which line starts each call, the model and
provider at the moment the call ends, the usage the next counted ``token_count`` gives the last
unpriced call, and the first timestamp an entry carries (the header's, when ``session_meta``
names none). Every line is still read (its kind decides where a call ends), but no entry,
content block or tree is made: a line is decoded by msgspec into only the fields those rules
read (:class:`_Line`; :mod:`pi_lab.formats.agent_usage_lines` says when a line goes the dict way
instead), and a header or compaction line, a few per file, is read whole. A fork's lines are
compared with its parent's whole. ``tests/corpus/test_corpus_usage_fast_agents.py`` proves its
calls equal the adapter's on generated, forked, compacted, torn and hostile rollouts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Annotated, Any

from pi_lab.formats.agent_usage_lines import (
    COUNT_BOUNDS,
    TYPED_ERRORS,
    decoder,
    dict_line,
    parsed_lines,
    read_file,
    split_lines,
    utf8_valid,
)

__all__ = ["CodexCall", "CodexUsage", "codex_usage"]

# The adapter's rules (pi_lab/formats/codex.py), restated so that reading a rollout imports no
# adapter (it pulls in the session manager: ~0.09 CPU s in each forked reader).
# tests/corpus/test_corpus_usage_decode_agents.py checks them equal to the adapter's.
ASSISTANT_SIDE = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call",
                            "tool_search_call", "image_generation_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def _s(value: Any) -> str | None:
    return value if value.__class__ is str else None


def _int(value: Any) -> int:
    return value if value.__class__ is int and value >= 0 else 0


def line_id(number: int) -> str:
    """The adapter's entry id of the line numbered ``number`` (``codex.line_id``)."""
    return f"L{number:06d}"


def token_usage(raw: Any) -> dict[str, int] | None:
    """``codex.token_usage``: a ``TokenUsage`` object as five non-negative integers, None when
    it is no object."""
    if not isinstance(raw, dict):
        return None
    return {k: _int(raw.get(k)) for k in _COUNTS}


def pi_usage(usage: dict[str, int] | None) -> dict[str, Any]:
    """``codex.pi_usage``: pi's usage of one call's ``last_token_usage``."""
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    if usage is None:
        return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": zero}
    cached = min(usage["cached_input_tokens"], usage["input_tokens"])
    total = usage["total_tokens"] or usage["input_tokens"] + usage["output_tokens"]
    return {"input": usage["input_tokens"] - cached, "output": usage["output_tokens"], "cacheRead": cached,
            "cacheWrite": 0, "totalTokens": total, "cost": zero}


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
    """:func:`token_usage`'s five counts as a tuple (compared with the previous count's, never
    kept)."""
    if not isinstance(raw, dict):
        return None
    get = raw.get
    counts = (get("input_tokens"), get("cached_input_tokens"), get("output_tokens"), get("reasoning_output_tokens"),
              get("total_tokens"))
    return tuple(v if type(v) is int and v >= 0 else 0 for v in counts)


_DECODE: Any = None
try:
    import msgspec
except ImportError:  # pragma: no cover (msgspec is a dependency)
    pass
else:
    class _Counts(msgspec.Struct, gc=False):
        input_tokens: Annotated[int, COUNT_BOUNDS] = 0
        cached_input_tokens: Annotated[int, COUNT_BOUNDS] = 0
        output_tokens: Annotated[int, COUNT_BOUNDS] = 0
        reasoning_output_tokens: Annotated[int, COUNT_BOUNDS] = 0
        total_tokens: Annotated[int, COUNT_BOUNDS] = 0

    class _Info(msgspec.Struct, gc=False):
        total_token_usage: _Counts | None = None
        last_token_usage: _Counts | None = None

    class _Payload(msgspec.Struct, gc=False):
        # (one shape for every kind's payload: a field another kind fills with another type
        # sends that line the dict way)
        type: str | None = None
        role: str | None = None
        model: str | None = None
        info: _Info | None = None

    class _Line(msgspec.Struct, gc=False):
        timestamp: str | None = None
        type: str | None = None
        payload: _Payload | None = None

    _DECODE = decoder(_Line)
    _astuple = msgspec.structs.astuple


def _assistant_side(kind: Any, role: Any) -> bool:
    """Whether a response item of this type and role belongs to the model's call (the adapter's
    rule: an assistant message, reasoning, a tool call)."""
    item = _s(kind)  # (an odd type is an unknown item, never a set lookup of it)
    return (item == "message" and role == "assistant") or item == "reasoning" or item in ASSISTANT_SIDE \
        or (item is not None and item.endswith("_call") and item not in OUTPUTS)


_SIDES: dict[Any, bool] = {}  # item type (not "message") -> _assistant_side


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

    def data(self, data: bytes) -> None:
        """Every line of ``data``, typed where it can be, then the last call ended."""
        decode = _DECODE
        if decode is None or not utf8_valid(data):
            for number, line in parsed_lines(data):
                self.line(number, line)
            self._flush()
            return
        # The dict way's rules (line(), _item(), _token_count()) with their common cases written
        # out: about 1 µs a line less, most of this loop's time.
        errors, flush, sides = TYPED_ERRORS, self._flush, _SIDES
        for number, raw in enumerate(split_lines(data), start=1):
            try:
                line = decode(raw)
            except errors:
                whole = dict_line(raw)  # (the adapter's way, for a line the decode cannot answer)
                if whole is not None:
                    self.line(number, whole)
                continue
            kind, payload = line.type, line.payload
            if kind == "event_msg":
                if payload is not None and payload.type == "token_count":
                    info = payload.info
                    if info is None:
                        flush()  # (no info: a repeat)
                    else:
                        total = info.total_token_usage
                        if self._token_count(True, None if total is None else _astuple(total)):
                            last = info.last_token_usage
                            if last is not None:
                                self._price(dict(zip(_COUNTS, _astuple(last))))
                if self.first_timestamp is None:
                    self._added(line.timestamp)
            elif kind == "response_item" and payload is not None:
                item = payload.type
                if item == "message":
                    side = payload.role == "assistant"
                else:
                    side = sides.get(item)
                    if side is None:
                        side = sides[item] = _assistant_side(item, None)
                if side:
                    if self._group is None:
                        self._group = (line_id(number), line.timestamp, number, False)
                else:
                    if self._group is not None:
                        flush()
                    if self.first_timestamp is None:
                        self._added(line.timestamp)
            elif kind == "turn_context" and payload is not None:
                self._turn(payload.model, line.timestamp)
            elif (kind == "session_meta" or kind == "compacted") and payload is not None:
                whole = dict_line(raw)  # (a few per file: their other fields are read too)
                if whole is not None:
                    self.line(number, whole)
            else:
                flush()
                self._added(line.timestamp)
        flush()

    def line(self, number: int, line: dict[str, Any]) -> None:
        """One line as the adapter's dict reads it."""
        kind, payload = line.get("type"), line.get("payload")
        if kind == "session_meta" and isinstance(payload, dict) and self.header_line is None:
            self.header_line = line
            if _s(payload.get("model_provider")):
                self.provider = payload["model_provider"]
            return
        if kind == "response_item" and isinstance(payload, dict):
            self._item(number, line.get("timestamp"), payload.get("type"), payload.get("role"), None, None)
        elif kind == "turn_context" and isinstance(payload, dict):
            self._turn(payload.get("model"), line.get("timestamp"))
        elif kind == "compacted" and isinstance(payload, dict):
            self._flush()
            self._compacted(number, line, payload)
        elif kind == "event_msg" and isinstance(payload, dict) and payload.get("type") == "token_count":
            info = payload.get("info")
            if not isinstance(info, dict):
                info = None
            if self._token_count(info is not None, _counts(info.get("total_token_usage")) if info else None):
                last = token_usage(info.get("last_token_usage")) if info else None
                if last is not None:
                    self._price(last)
            self._added(line.get("timestamp"))
        else:
            if kind != "event_msg":
                self._flush()
            self._added(line.get("timestamp"))

    def _turn(self, model: Any, timestamp: Any) -> None:
        self._flush()
        if _s(model) and model != self.model:
            self.model = model
        self._added(timestamp)

    def _item(self, number: int, timestamp: Any, kind: Any, role: Any, compaction: int | None,
              wanted: str | None) -> None:
        if _assistant_side(kind, role):
            if self._group is None:
                self._group = (wanted or line_id(number), timestamp, compaction or number, compaction is not None)
            return
        self._flush()
        self._added(timestamp)

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
                self._item(number, line.get("timestamp"), item.get("type"), item.get("role"), number,
                           f"{line_id(number)}.r{index:04d}")
        self._flush()

    def _token_count(self, has_info: bool, total: tuple[int, ...] | None) -> bool:
        """A ``token_count`` (``has_info``: its ``info`` is an object; ``total``: the counts of
        its ``total_token_usage``): ends the call; whether it prices the last unpriced one
        (a count repeating the previous total does not)."""
        repeat = not has_info or (total is not None and total == self.previous_total)
        if total is not None:
            self.previous_total = total
        self._flush()
        return not repeat

    def _price(self, last: dict[str, int]) -> None:
        """The counted ``token_count``'s ``last_token_usage`` (an object) is the last unpriced
        call's usage."""
        if self.unpriced:
            self.unpriced[-1].usage = pi_usage(last)
        self.unpriced = []


def _parent_id(meta: dict[str, Any]) -> str | None:
    """``codex_forks.parent_id_of(meta)[0]``, importing it only for a header that can name a
    parent (a ``forked_from_id`` or ``parent_thread_id`` string, a ``source`` object)."""
    if _s(meta.get("forked_from_id")) or isinstance(meta.get("source"), dict) or _s(meta.get("parent_thread_id")):
        from pi_lab.formats.codex_forks import parent_id_of

        return parent_id_of(meta)[0]
    return None


def codex_usage(path: str, data: bytes | None = None) -> CodexUsage:
    """The calls and header facts of the rollout at ``path`` (``data``: its bytes, if read),
    equal to those of ``CodexSession.from_file(path)``'s assistant entries."""
    resolved = os.path.abspath(path)
    if data is None:
        data = read_file(resolved)
    reader = _Calls()
    reader.data(data)
    head: dict[str, Any] = reader.header_line or {}
    written = head.get("payload")
    meta: dict[str, Any] = written if isinstance(written, dict) else {}
    session_id = _s(meta.get("id")) or os.path.splitext(os.path.basename(resolved))[0]
    cwd = _s(meta.get("cwd")) or "."
    timestamp = meta.get("timestamp") if _s(meta.get("timestamp")) else head.get("timestamp")
    if not _s(timestamp):
        timestamp = reader.first_timestamp or ""
    parent_id = _parent_id(meta)
    parent_file = None
    if parent_id:
        from pi_lab.formats.claude_code_lines import read_lines
        from pi_lab.formats.codex_forks import copied_lines, find_rollout

        parent_file = find_rollout(parent_id, resolved)
        parent_lines = None
        if parent_file is not None:
            try:
                parent_lines = read_lines(read_file(parent_file))[0]
            except OSError:
                parent_lines, parent_file = None, None
        copies = copied_lines(parsed_lines(data), parent_id, parent_lines)
        for call in reader.calls:
            call.copied = call.line in copies
    return CodexUsage(session_id, cwd, timestamp, parent_file, reader.calls)
