"""A Codex rollout's model calls without building its entries: what ``pi-lab usage`` needs.

:class:`pi_lab.formats.codex.CodexSession` turns every line into a pi-shaped entry; the usage
report reads only its assistant entries (one per model call: the assistant-side items gathered
until something else ends the call) with the usage of the ``token_count`` that priced them, the
header's facts and a fork's copied prefix. This module follows the adapter's ``_Converter`` line
by line with the same rules, keeping only that: which line starts each call, the model and
provider at the moment the call ends, the usage the next counted ``token_count`` gives the last
unpriced call (its counts: pi's usage dict is made only when asked for), and the first
timestamp an entry carries (the header's, when ``session_meta`` names none: then the file is
read again the dict way, the typed way not following it). Every line is still read (its kind
decides where a call ends), but no entry, content block or tree is made: the lines are decoded
by msgspec, in one pass, into only the fields those rules read (:class:`_Line`;
:mod:`pi_lab.formats.agent_usage_lines` says when a line goes the dict way instead), and a
header or compaction line, a few per file, is read whole. A fork's lines are
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
    the counts that priced it (:attr:`usage`: pi's usage of them) and whether it is a copy of
    the parent's."""

    entry_id: str
    timestamp: Any
    provider: str
    model: str
    # The five counts (_COUNTS) of the ``last_token_usage`` that priced the call, None when no
    # count did: pi's usage dict is made only when asked for (``pi-lab usage`` reads the counts).
    counts: tuple[int, ...] | None
    line: int  # the line the copy marks look at (a compaction's line for its history)
    copied: bool = False

    @property
    def usage(self) -> dict[str, Any]:
        """The adapter's ``usage`` of the call (:func:`pi_usage`)."""
        return pi_usage(None if self.counts is None else dict(zip(_COUNTS, self.counts)))


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
_WHOLE = ("session_meta", "compacted")  # kinds read whole (a few lines a file: their other fields count)


def _typed_or_dict(decode: Any, raw: bytes) -> Any:
    """The typed decode of one line, else the line as the adapter reads it (a dict, or None for
    a line it skips)."""
    try:
        return decode(raw)
    except TYPED_ERRORS:
        return dict_line(raw)


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
        self.first_timestamp_known = True  # (False after the typed way, which does not follow it)
        self._group: tuple[str, Any, int, bool] | None = None  # (id, timestamp, copy line, from compaction)

    def _added(self, timestamp: Any) -> None:
        """An entry was added (in the adapter's order) with this timestamp."""
        if self.first_timestamp is None and _s(timestamp):
            self.first_timestamp = timestamp

    def data(self, data: bytes, typed: bool = True) -> None:
        """Every line of ``data``, typed where it can be (``typed``), then the last call ended."""
        decode = _DECODE
        if not typed or decode is None or not utf8_valid(data):
            for number, line in parsed_lines(data):
                self.line(number, line)
            self._flush()
            return
        # The typed way does not follow which timestamp came first (codex_usage asks the dict way
        # in the rare file whose header names none).
        self.first_timestamp_known = False
        raws = split_lines(data)
        try:
            lines = list(map(decode, raws))  # (one loop in C: most files hold no line it refuses)
        except TYPED_ERRORS:
            lines = [_typed_or_dict(decode, raw) for raw in raws]
        self._typed(lines, raws)

    def _typed(self, lines: list[Any], raws: list[bytes]) -> None:
        """The rules of :meth:`line` over typed lines (a dict in ``lines`` is a line the decode
        could not answer for, None one the adapter skips), the common kinds written out with the
        state in local names (a method call per line was most of this loop's time). A header, a
        compaction or a dict goes through :meth:`line`, the state handed over and taken back.
        ``tests/corpus/test_corpus_usage_codex_loop.py`` compares it with the dict way."""
        sides, typed, astuple, new_call = _SIDES, _Line, _astuple, CodexCall
        calls, unpriced, previous = self.calls, self.unpriced, self.previous_total
        group = self._group
        for number, line in enumerate(lines, start=1):
            kind = line.type if line.__class__ is typed else None
            if kind == "event_msg":
                payload = line.payload
                if payload is None or payload.type != "token_count":
                    continue  # (no call ends: only a count does, of the events)
                if group is not None:  # (a count ends the call)
                    call = new_call(group[0], group[1], self.provider, self.model or "", None, group[2])
                    calls.append(call)
                    if not group[3]:
                        unpriced.append(call)
                    group = None
                info = payload.info
                if info is None:
                    continue  # (no info: a repeat)
                total = info.total_token_usage
                if total is not None:
                    total = astuple(total)
                    if total == previous:
                        continue  # (the previous count repeated: it prices nothing)
                    previous = total
                last = info.last_token_usage
                if last is not None:
                    if unpriced:
                        unpriced[-1].counts = astuple(last)
                    unpriced = []
                continue
            if kind == "response_item":
                payload = line.payload
                if payload is not None:
                    item = payload.type
                    if item == "message":
                        side = payload.role == "assistant"
                    else:
                        side = sides.get(item)
                        if side is None:
                            side = sides[item] = _assistant_side(item, None)
                    if side:
                        if group is None:
                            group = (line_id(number), line.timestamp, number, False)
                    elif group is not None:
                        call = new_call(group[0], group[1], self.provider, self.model or "", None, group[2])
                        calls.append(call)
                        if not group[3]:
                            unpriced.append(call)
                        group = None
                    continue
            elif line.__class__ is not typed or (kind in _WHOLE and line.payload is not None):
                whole = line if line.__class__ is not typed else dict_line(raws[number - 1])
                if whole is None:
                    continue  # (a line the adapter skips)
                # A header, a compaction or a line the decode refused: the dict way's rules.
                self._group, self.unpriced, self.previous_total = group, unpriced, previous
                self.line(number, whole)
                group, unpriced, previous = self._group, self.unpriced, self.previous_total
                continue
            # Anything else ends the call (a turn context, an unknown kind, a line with no payload).
            if group is not None:
                call = new_call(group[0], group[1], self.provider, self.model or "", None, group[2])
                calls.append(call)
                if not group[3]:
                    unpriced.append(call)
                group = None
            if kind == "turn_context":
                payload = line.payload
                if payload is not None:
                    model = payload.model
                    if model and model != self.model:
                        self.model = model
        self._group, self.unpriced, self.previous_total = group, unpriced, previous
        self._flush()

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
                last = _counts(info.get("last_token_usage")) if info else None
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
        call = CodexCall(entry_id, timestamp, self.provider, self.model or "", None, copy_line)
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

    def _price(self, last: tuple[int, ...]) -> None:
        """The counted ``token_count``'s ``last_token_usage`` (an object; its :func:`_counts`)
        prices the last unpriced call."""
        if self.unpriced:
            self.unpriced[-1].counts = last
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
        first = reader
        if not reader.first_timestamp_known:  # (the typed way did not follow it: the dict way's)
            first = _Calls()
            first.data(data, typed=False)
        timestamp = first.first_timestamp or ""
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
