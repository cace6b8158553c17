"""A Claude Code session's model calls without building its entries: what ``pi-lab usage`` needs.

:class:`pi_lab.formats.claude_code.ClaudeCodeSession` turns every line into pi-shaped entries,
folds the sub-agent files in and builds the tree; the usage report reads only its assistant
entries (one per streamed response: the lines sharing ``message.id`` and ``requestId`` chained
through ``parentUuid``, progress lines between them, with the largest usage of those lines),
each entry's (id, timestamp) for the copies a resumed session repeats, and the header's facts.
This module follows the adapter's converter line by line with the same rules and keeps only
that: a small node per entry that a later line can name (its kind, id, timestamp and, for an
assistant entry, the response key and usage), no content block, no tree.

Every line is read, but only the fields those rules look at are decoded: msgspec decodes a line
into :class:`_Line` (the message's content, tool results and snapshots are skipped in C, never
built); a line the typed decode cannot answer for exactly goes the adapter's dict way
(:mod:`pi_lab.formats.agent_usage_lines` says which), and so does a compact summary, whose text
is read.

It answers only where the entry ids are plain, so that no id the adapter would make up can
matter: every ``uuid`` of the session's files is a non-empty string used once, none shaped like
the ids the adapter makes (``line-N``, ``subagent-...``, with ``:`` or ``#``), every response has
a uuid, no progress line lacks ``parentUuid``, no line names an entry of another file as its
parent, and there is no sub-agent file in the older layout beside the session. Anything else
gives None and the caller reads the file with the adapter. ``tests/corpus/
test_corpus_usage_fast_agents.py`` proves the calls equal the adapter's.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import Annotated, Any

from pi_lab.formats.agent_usage_lines import (
    COUNT_BOUNDS,
    TYPED_ERRORS,
    UNSET,
    decoder,
    dict_line,
    parsed_lines,
    read_file,
    split_lines,
    utf8_valid,
)

# The adapter's value rules, from its own module (it imports neither the engine's manager nor
# the compaction package, so a forked reader pays little for it).
from pi_lab.formats.claude_code_lines import _int, _s
from pi_lab.formats.claude_code_lines import _text_of as text_of

__all__ = ["ClaudeCall", "ClaudeUsage", "claude_code_usage", "made_up_id", "parsed_lines", "pi_usage"]

_PROGRESS = "progress"  # (the adapter's custom type claude-code:progress, which the walk passes through)
_COUNTERS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _counters(usage: Any) -> tuple[int, int, int, int]:
    """The four counters of a usage read as counters (``_Usage``, ``_UsageFields``; None for one
    that is no object), each as ``claude_code_lines._int`` reads it (else 0)."""
    if usage is None:
        return (0, 0, 0, 0)
    if usage.__class__ is _TYPED_USAGE:
        return _astuple(usage)  # (non-negative ints: no other value gets through the decode)
    return (_int(usage.input_tokens), _int(usage.output_tokens), _int(usage.cache_read_input_tokens),
            _int(usage.cache_creation_input_tokens))


def pi_usage(usage: Any) -> dict[str, Any]:
    """``claude_code_lines.pi_usage`` of a usage read as counters (:func:`_counters`)."""
    inp, out, read, write = _counters(usage)
    return {"input": inp, "output": out, "cacheRead": read, "cacheWrite": write, "totalTokens": inp + read + write,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


# A line's fields as the rules read them: a typed decode's _Line, or _Fields made of a parsed
# line (the raw values, which the rules check as they check the adapter's dict: a field the line
# does not hold is UNSET where its absence matters, else None).
_DECODE: Any = None
_TYPED_USAGE: Any = None  # (the class a typed decode gives a usage)
try:
    import msgspec
except ImportError:  # pragma: no cover (msgspec is a dependency)
    pass
else:
    class _Usage(msgspec.Struct, gc=False):
        input_tokens: Annotated[int, COUNT_BOUNDS] = 0
        output_tokens: Annotated[int, COUNT_BOUNDS] = 0
        cache_read_input_tokens: Annotated[int, COUNT_BOUNDS] = 0
        cache_creation_input_tokens: Annotated[int, COUNT_BOUNDS] = 0

    class _Message(msgspec.Struct, gc=False):
        id: str | None = None
        model: str | None = None
        usage: _Usage | None = None

    class _Snapshot(msgspec.Struct, gc=False):
        timestamp: str | None = None

    class _Line(msgspec.Struct, gc=False):
        type: str | None = None
        uuid: str | None = None
        parentUuid: str | msgspec.UnsetType | None = msgspec.UNSET
        timestamp: str | msgspec.UnsetType | None = msgspec.UNSET
        sessionId: str | None = None
        cwd: str | None = None
        subtype: str | None = None
        isCompactSummary: bool | None = None
        requestId: str | None = None
        message: _Message | None = None
        snapshot: _Snapshot | None = None

    _DECODE = decoder(_Line)
    _TYPED_USAGE = _Usage
    _astuple = msgspec.structs.astuple


class _SnapshotFields:
    __slots__ = ("timestamp",)

    def __init__(self, timestamp: Any) -> None:
        self.timestamp = timestamp


class _UsageFields:
    __slots__ = _COUNTERS

    def __init__(self, usage: dict[str, Any]) -> None:
        for key in _COUNTERS:
            setattr(self, key, usage.get(key))


class _MessageFields:
    __slots__ = ("id", "model", "usage")

    def __init__(self, message: dict[str, Any]) -> None:
        self.id, self.model = message.get("id"), message.get("model")
        usage = message.get("usage")
        self.usage = _UsageFields(usage) if isinstance(usage, dict) else None


class _Fields:
    __slots__ = ("type", "uuid", "parentUuid", "timestamp", "sessionId", "cwd", "subtype", "isCompactSummary",
                 "requestId", "message", "snapshot", "content")

    def __init__(self, line: dict[str, Any]) -> None:
        get = line.get
        self.type, self.uuid, self.subtype = get("type"), get("uuid"), get("subtype")
        self.parentUuid, self.timestamp = get("parentUuid", UNSET), get("timestamp", UNSET)
        self.sessionId, self.cwd, self.requestId = get("sessionId"), get("cwd"), get("requestId")
        self.isCompactSummary = get("isCompactSummary")
        message = get("message")
        if isinstance(message, dict):
            self.message, self.content = _MessageFields(message), message.get("content")  # (a summary's text)
        else:
            self.message = self.content = None
        snapshot = get("snapshot")
        self.snapshot = _SnapshotFields(snapshot.get("timestamp")) if isinstance(snapshot, dict) else None


def _made_up_among(uuids: Any) -> bool:
    """Whether any of ``uuids`` is :func:`made_up_id`, by a few searches of their joined text
    (a line break before each; a uuid holding a line break can only make it say yes)."""
    if not uuids:
        return False
    text = "\n" + "\n".join(uuids) + "\n"
    return ":" in text or "#" in text or "\nline-" in text or "\nsubagent-" in text or "\n\n" in text


def made_up_id(value: Any) -> bool:
    """Whether ``value`` could be (or collide with) an id the adapter makes up for an entry:
    not a non-empty string, or shaped as ``line-N``, ``subagent-...``, ``x:n``, ``x#n``."""
    return value.__class__ is not str or not value or ":" in value or "#" in value \
        or value.startswith(("line-", "subagent-"))


@dataclass(slots=True)
class ClaudeCall:
    """One assistant entry as the adapter makes it: id, raw timestamp, model, pi usage."""

    entry_id: str
    timestamp: Any
    model: str
    usage: dict[str, Any]


@dataclass
class ClaudeUsage:
    """A session's header facts (as ``ClaudeCodeSession``'s header), calls, and the (id, raw
    timestamp) of every other entry whose id is a line's uuid (the others' ids are made up and
    can equal no call's id; a call's own key is its id and timestamp)."""

    session_id: str
    cwd: str
    timestamp: Any
    calls: list[ClaudeCall] = field(default_factory=list)
    keys: list[tuple[str, Any]] = field(default_factory=list)


# A node is a list (cheaper to make than an object, one per line): [kind, id, timestamp, file,
# parent], and for an assistant entry also [response id, request id, model, usage, total].
# ``kind`` is ``assistant``, ``message`` (a user or tool result message), ``progress``,
# ``boundary`` (a compact boundary whose summary is still empty) or ``other``; ``id`` None is an
# id the adapter made up.
_KIND, _ID, _TIME, _FILE, _PARENT, _RESPONSE, _REQUEST, _MODEL, _USAGE, _TOTAL = range(10)
Node = list[Any]


class _Plain(Exception):
    """The session is not plain enough for this reader: the adapter reads it."""


class _Reader:
    def __init__(self) -> None:
        self.owner: dict[str, Node] = {}
        self.nodes: list[Node] = []  # in the adapter's entry order (one per entry-making line)
        self.file = 0
        self.facts: dict[str, str] = {}  # the main file's first non-empty sessionId and cwd

    def _resolve(self, raw: Any) -> Node | None:
        if raw.__class__ is not str:
            return None
        node = self.owner.get(raw)
        if node is None:
            if made_up_id(raw):
                raise _Plain  # (it may name an entry by an id the adapter made up)
            return None
        if node[_FILE] != self.file:
            raise _Plain  # (another file's entry: the adapter may have re-hung it meanwhile)
        return node

    def data(self, data: bytes) -> None:
        """Every line of ``data`` that ``read_lines`` keeps, in order."""
        decode = _DECODE
        if decode is None or not utf8_valid(data):
            for _number, parsed in parsed_lines(data):
                self.line(_Fields(parsed))
            return
        # line()'s rules, with the two commonest kinds written out (a response line, a user
        # message): most of this loop's time is spent per line.
        errors, line, assistant, owner, nodes = TYPED_ERRORS, self.line, self._assistant, self.owner, self.nodes
        file = self.file
        for raw in split_lines(data):
            try:
                typed = decode(raw)
            except errors:
                typed = None
            if typed is None or typed.isCompactSummary is True:
                # (the dict way: a line the decode cannot answer for, or a summary, whose text is read)
                parsed = dict_line(raw)
                if parsed is not None:
                    line(_Fields(parsed))
                continue
            message = typed.message
            if message is None or (file == 0 and len(self.facts) < 2):
                line(typed)
                continue
            kind, uuid = typed.type, typed.uuid
            if uuid is not None and uuid in owner:
                raise _Plain  # (a uuid used twice: the adapter makes up an id for the second)
            if kind == "assistant":
                # (a typed id and request id are strings or None already)
                assistant(typed, uuid, message, (message.id, typed.requestId))
            elif kind == "user":
                timestamp = typed.timestamp
                node = ["message", uuid, None if timestamp is UNSET else timestamp, file, None]
                nodes.append(node)
                if uuid is not None:
                    owner[uuid] = node
            else:
                line(typed)

    def _facts(self, line: Any) -> None:
        for key in ("sessionId", "cwd"):
            value = getattr(line, key)
            if key not in self.facts and value.__class__ is str and value:
                self.facts[key] = value

    def line(self, line: Any) -> None:
        """One line's fields (a ``_Line`` or ``_Fields``), by the adapter's converter's rules."""
        if self.file == 0 and len(self.facts) < 2:
            self._facts(line)
        kind = line.type
        uuid = line.uuid
        if uuid.__class__ is not str:
            uuid = None
        elif uuid in self.owner:
            raise _Plain  # (a uuid used twice: the adapter makes up an id for the second)
        message = line.message
        if kind == "assistant" and message is not None:
            self._assistant(line, uuid, message, (_s(message.id), _s(line.requestId)))
            return
        timestamp = line.timestamp
        if timestamp is UNSET:
            timestamp = None
        if kind == "user" and message is not None:
            if line.isCompactSummary is True:
                self._compact_summary(line, uuid, timestamp)
                return
            node = ["message", uuid, timestamp, self.file, None]
        elif kind == "system" and line.subtype == "compact_boundary":
            node = ["boundary", uuid, timestamp, self.file, None]
        else:
            if timestamp is None and line.snapshot is not None:
                timestamp = line.snapshot.timestamp
            if kind == _PROGRESS:
                if line.parentUuid is UNSET:
                    raise _Plain  # (hung where the adapter's anchor rule says)
                node = [_PROGRESS, uuid, timestamp, self.file, line.parentUuid]
            else:
                node = ["other", uuid, timestamp, self.file, None]
        self.nodes.append(node)
        if uuid is not None:
            self.owner[uuid] = node

    def _assistant(self, line: Any, uuid: str | None, message: Any, key: tuple[str | None, str | None]) -> None:
        """A response line (``key``: its message id and request id, strings or None)."""
        usage = message.usage
        total = sum(_counters(usage))  # (the adapter's _usage_total of its pi_usage)
        parent = self._streamed_parent(line.parentUuid, key)
        if parent is not None:
            # The lines of one response repeat its usage; the largest is the call's.
            if total >= parent[_TOTAL]:
                parent[_USAGE], parent[_TOTAL] = usage, total
            if line.timestamp is not UNSET:
                parent[_TIME] = line.timestamp
            if uuid:
                parent[_ID] = uuid
                self.owner[uuid] = parent
            return
        model = message.model
        timestamp = line.timestamp
        node = ["assistant", uuid, None if timestamp is UNSET else timestamp, self.file, None, key[0] or None,
                line.requestId, model if _s(model) else "", usage, total]
        self.nodes.append(node)
        if uuid is not None:
            self.owner[uuid] = node

    def _streamed_parent(self, raw_parent: Any, key: tuple[str | None, str | None]) -> Node | None:
        """The adapter's ``_streamed_parent``: through at most 64 progress lines to an assistant
        entry of the same response."""
        if key[0] is None:
            return None
        node = self.owner.get(raw_parent) if raw_parent.__class__ is str else None
        if node is None or node[_FILE] != self.file:
            node = self._resolve(raw_parent)  # (the rare ways: an unknown name, another file's entry)
        for _ in range(64):
            if node is None:
                return None
            if node[_KIND] in ("assistant", "message"):
                break
            if node[_KIND] != _PROGRESS:
                return None
            node = self._resolve(node[_PARENT])
        else:
            return None
        if node[_KIND] != "assistant":
            return None
        return node if (node[_RESPONSE], node[_REQUEST]) == key else None

    def _compact_summary(self, line: _Fields, uuid: str | None, timestamp: Any) -> None:
        text = text_of(line.content)
        boundary = self._resolve(line.parentUuid)
        if boundary is not None and boundary[_KIND] == "boundary":
            # It joins the boundary's compaction entry (which keeps its timestamp).
            if text:
                boundary[_KIND] = "other"  # (its summary is no longer empty)
            if uuid:
                boundary[_ID] = uuid
                self.owner[uuid] = boundary
            return
        node = ["other", uuid, timestamp, self.file, None]
        self.nodes.append(node)
        if uuid is not None:
            self.owner[uuid] = node


_OLD_LAYOUT: dict[str, bool] = {}


def _older_layout(folder: str) -> bool:
    """Whether ``folder`` holds sub-agent files in the older layout (``agent-<id>.jsonl`` beside
    the sessions), which the adapter folds in by the agents a session names."""
    found = _OLD_LAYOUT.get(folder)
    if found is None:
        found = _OLD_LAYOUT[folder] = bool(glob.glob(os.path.join(glob.escape(folder), "agent-*.jsonl")))
    return found


def _subagent_files(path: str) -> list[str]:
    """The adapter's sub-agent files of ``path`` in the current layout (``<session>/subagents/``)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem.startswith("agent-"):
        return []
    folder = os.path.join(os.path.dirname(path), stem, "subagents")
    if not os.path.isdir(folder):
        return []
    found = glob.glob(os.path.join(glob.escape(folder), "**", "agent-*.jsonl"), recursive=True)
    return sorted(f for f in found if os.path.isfile(f))


def claude_code_usage(path: str, data: bytes | None = None) -> ClaudeUsage | None:
    """The calls, keys and header facts of the Claude Code session at ``path`` (``data``: its
    bytes, if read), equal to ``ClaudeCodeSession.from_file(path)``'s; None when the session is
    not plain enough (see the module's doc). Every line is read, so ``keys`` holds every
    entry's whose id is a line's uuid."""
    resolved = os.path.abspath(path)
    if not os.path.basename(resolved).startswith("agent-") and _older_layout(os.path.dirname(resolved)):
        return None
    if data is None:
        data = read_file(resolved)
    try:
        return _usage(resolved, data)
    except _Plain:
        return None


def _usage(resolved: str, data: bytes) -> ClaudeUsage | None:
    reader = _Reader()
    reader.data(data)
    session_id, cwd = reader.facts.get("sessionId"), reader.facts.get("cwd")
    for number, sub in enumerate(_subagent_files(resolved), start=1):
        try:
            sub_data = read_file(sub)
        except OSError:
            continue  # (the adapter skips an unreadable sub-agent file)
        reader.file = number
        reader.data(sub_data)
    if _made_up_among(reader.owner):
        return None
    nodes = reader.nodes
    first = next((n[_TIME] for n in nodes if _s(n[_TIME])), None)
    found = ClaudeUsage(session_id or os.path.splitext(os.path.basename(resolved))[0], cwd or ".", first or "")
    responses = [n for n in nodes if n[_KIND] == "assistant"]
    if any(n[_ID] is None for n in responses):
        return None  # (a response with no uuid: its id is made up)
    found.calls = [ClaudeCall(n[_ID], n[_TIME], n[_MODEL], pi_usage(n[_USAGE])) for n in responses]
    found.keys = [(n[_ID], n[_TIME]) for n in nodes if n[_ID] is not None and n[_KIND] != "assistant"]
    return found
