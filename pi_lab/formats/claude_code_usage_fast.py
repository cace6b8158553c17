"""A Claude Code session's model calls without building its entries: what ``pi-lab usage`` needs.

:class:`pi_lab.formats.claude_code.ClaudeCodeSession` turns every line into pi-shaped entries,
folds the sub-agent files in and builds the tree; the usage report reads only its assistant
entries (one per streamed response: the lines sharing ``message.id`` and ``requestId`` chained
through ``parentUuid``, progress lines between them, with the largest usage of those lines),
each entry's (id, timestamp) for the copies a resumed session repeats, and the header's facts.
This module follows the adapter's converter line by line with the same rules and keeps only
that: a small node per entry that a later line can name (its kind, id, timestamp and, for an
assistant entry, the response key and usage), no content block, no tree.

A file is searched where it can be (:func:`_searchable`): only the lines holding the bytes
``assistant`` or ``progress`` are parsed (a response or a progress line holds one, unless an
escape spells a letter, which sends the file to a whole read), and every other line is known
only by the ``"uuid"`` values it holds: naming one of them ends a response's walk, as the
adapter's user, compaction or other entry does. The keys of those lines' entries are read (the
file parsed whole) only when a call somewhere has one of their ids; a compaction the search
meets, or a first line whose entry a compaction may have absorbed, makes the file parsed whole.

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
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from pi_lab.formats.claude_code_lines import CUSTOM_PREFIX, _read_file, _s, _text_of, pi_usage
from pi_lab.session._json import loads_object

__all__ = ["ClaudeCall", "ClaudeUsage", "claude_code_usage", "made_up_id", "parsed_lines"]

_PROGRESS = "progress"
assert CUSTOM_PREFIX + _PROGRESS == "claude-code:progress"  # (the custom type the walk passes through)


def parsed_lines(data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """``read_lines(data)[0]`` (the objects of ``data`` with their line numbers) in one loop:
    orjson first, JSON.parse's rules (``loads_object``) where it refuses a line (or the line is
    blank)."""
    loads, error = orjson.loads, orjson.JSONDecodeError
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = loads(raw)
        except error:
            line = loads_object(raw)
        if type(line) is dict:
            out.append((number, line))
    return out


def _total(usage: Any) -> int:
    """``_usage_total(pi_usage(usage))`` without making the dict (it picks among a response's
    lines; only the kept one's usage is made)."""
    if usage.__class__ is not dict and not isinstance(usage, dict):
        return 0
    total = 0
    for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = usage.get(key)
        if type(value) is int and value >= 0:
            total += value
    return total


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
    #: The uuids of the lines that were not parsed (their entries' keys are not in ``keys``:
    #: when a call anywhere has one of these ids, read the session again with ``whole=True``).
    unread: set[str] = field(default_factory=set)


# A node is a list (cheaper to make than an object, one per line): [kind, id, timestamp, file,
# parent], and for an assistant entry also [response id, request id, model, usage, total].
# ``kind`` is ``assistant``, ``message`` (a user or tool result message), ``progress``,
# ``boundary`` (a compact boundary whose summary is still empty) or ``other``; ``id`` None is an
# id the adapter made up.
_KIND, _ID, _TIME, _FILE, _PARENT, _RESPONSE, _REQUEST, _MODEL, _USAGE, _TOTAL = range(10)
Node = list[Any]


class _Plain(Exception):
    """The session is not plain enough for this reader: the adapter reads it."""


class _Whole(Exception):
    """A search cannot answer exactly: every line is parsed instead."""


# (a line cut short, as a torn last line, ends its value at the line's end)
_UUID = re.compile(rb'"uuid":"([^"\\\n]*)(?:"|\n|\Z)')
_LETTER_ESCAPE = re.compile(rb"\\u00[67]")


def _searchable(data: bytes) -> list[bytes] | None:
    """Every ``"uuid":"..."`` value of ``data`` when its lines may be searched, else None: no
    escape that could spell a letter of ``assistant`` or ``progress``, every ``"uuid"`` written
    as ``"uuid":"`` with a plain ASCII value, and no value twice (a line's uuid is among them;
    one named twice, maybe inside a value, leaves the answer to the adapter)."""
    if _LETTER_ESCAPE.search(data) is not None:
        return None
    found = _UUID.findall(data)
    if len(found) != data.count(b'"uuid"') or not all(u.isascii() for u in found):
        return None
    if len(set(found)) != len(found):
        raise _Plain
    return found


class _Reader:
    def __init__(self) -> None:
        self.owner: dict[str, Node] = {}
        self.nodes: list[Node] = []  # in the adapter's entry order (one per entry-making line)
        self.file = 0
        self.facts: dict[str, str] = {}  # the main file's first non-empty sessionId and cwd
        # The uuids of the lines a search did not parse (no response, no progress line: a name
        # of one resolves to an entry that ends the walk, as an unknown name does).
        self.unread: set[str] = set()
        self.read: set[str] = set()  # the uuids of the lines a search parsed
        self.searched = False  # (a file was searched)
        self.searching = False  # (this file is)
        self.starts: dict[int, Node] = {}  # main file, searched: line start -> the response entry it began

    def _resolve(self, raw: Any) -> Node | None:
        if raw.__class__ is not str:
            return None
        node = self.owner.get(raw)
        if node is None:
            if raw in self.unread:
                return None
            if made_up_id(raw):
                raise _Plain  # (it may name an entry by an id the adapter made up)
            return None
        if node[_FILE] != self.file:
            raise _Plain  # (another file's entry: the adapter may have re-hung it meanwhile)
        return node

    def data(self, data: bytes) -> None:
        """Every line of ``data`` that :func:`read_lines` keeps, in order."""
        line = self.line
        for _number, parsed in parsed_lines(data):
            line(parsed)

    def search(self, data: bytes, uuids: list[bytes]) -> None:
        """Parse only the lines holding ``assistant`` or ``progress`` (a response or a progress
        line holds one: the file has no escape of a letter, :func:`_searchable`); ``uuids``
        are every ``"uuid":"..."`` of the file, each once."""
        self.searched = True
        names = [u.decode() for u in uuids]
        if not self.unread.isdisjoint(names) or any(name in self.owner for name in names):
            raise _Plain  # (a uuid of an earlier file again: the adapter makes up an id for it)
        self.unread.update(names)
        loads, error, line = orjson.loads, orjson.JSONDecodeError, self.line
        find, rfind, size = data.find, data.rfind, len(data)
        first_file = self.file == 0
        at = {b"assistant": find(b"assistant"), b"progress": find(b"progress")}
        while True:
            found = [v for v in at.values() if v != -1]
            if not found:
                break
            hit = min(found)
            start = rfind(b"\n", 0, hit) + 1
            end = find(b"\n", hit)
            if end == -1:
                end = size
            raw = data[start:end]
            try:
                parsed = loads(raw)
            except error:
                parsed = loads_object(raw)
            if type(parsed) is dict:
                uuid = parsed.get("uuid")
                if type(uuid) is str:
                    self.read.add(uuid)
                before = len(self.nodes)
                line(parsed)
                if first_file and len(self.nodes) > before and self.nodes[-1][_KIND] == "assistant":
                    self.starts[start] = self.nodes[-1]
            for needle, where in at.items():
                if where != -1 and where <= end:
                    at[needle] = find(needle, end + 1)

    def first(self, key: str) -> str | None:
        return self.facts.get(key)

    def _facts(self, line: dict[str, Any]) -> None:
        for key in ("sessionId", "cwd"):
            value = line.get(key)
            if key not in self.facts and value.__class__ is str and value:
                self.facts[key] = value

    def line(self, line: dict[str, Any]) -> None:
        get = line.get
        if self.file == 0 and len(self.facts) < 2:
            self._facts(line)
        kind = get("type")
        uuid = get("uuid")
        if uuid.__class__ is not str:
            uuid = None
        elif uuid in self.owner or (uuid in self.unread and not self.searching):
            raise _Plain  # (a uuid used twice: the adapter makes up an id for the second)
        if self.searched and (get("subtype") == "compact_boundary" or get("isCompactSummary") is True):
            raise _Whole  # (a compaction joins lines the search may not have parsed)
        message = get("message")
        if message.__class__ is not dict and not isinstance(message, dict):
            message = None
        if kind == "assistant" and message is not None:
            self._assistant(line, uuid, message)
            return
        if kind == "user" and message is not None:
            if get("isCompactSummary") is True:
                self._compact_summary(line, uuid, message)
                return
            node = ["message", uuid, get("timestamp"), self.file, None]
        elif kind == "system" and get("subtype") == "compact_boundary":
            node = ["boundary", uuid, get("timestamp"), self.file, None]
        else:
            timestamp = get("timestamp")
            if timestamp is None and isinstance(get("snapshot"), dict):
                timestamp = line["snapshot"].get("timestamp")
            if kind == _PROGRESS:
                if "parentUuid" not in line:
                    raise _Plain  # (hung where the adapter's anchor rule says)
                node = [_PROGRESS, uuid, timestamp, self.file, line["parentUuid"]]
            else:
                node = ["other", uuid, timestamp, self.file, None]
        self.nodes.append(node)
        if uuid is not None:
            self.owner[uuid] = node

    def _assistant(self, line: dict[str, Any], uuid: str | None, message: dict[str, Any]) -> None:
        key = (_s(message.get("id")), _s(line.get("requestId")))
        usage = message.get("usage")
        total = _total(usage)
        parent = self._streamed_parent(line.get("parentUuid"), key)
        if parent is not None:
            # The lines of one response repeat its usage; the largest is the call's.
            if total >= parent[_TOTAL]:
                parent[_USAGE], parent[_TOTAL] = usage, total
            parent[_TIME] = line.get("timestamp", parent[_TIME])
            if uuid:
                parent[_ID] = uuid
                self.owner[uuid] = parent
            return
        model = message.get("model")
        node = ["assistant", uuid, line.get("timestamp"), self.file, None, key[0] or None, line.get("requestId"),
                model if _s(model) else "", usage, total]
        self.nodes.append(node)
        if uuid is not None:
            self.owner[uuid] = node

    def _streamed_parent(self, raw_parent: Any, key: tuple[str | None, str | None]) -> Node | None:
        """The adapter's ``_streamed_parent``: through at most 64 progress lines to an assistant
        entry of the same response."""
        if key[0] is None:
            return None
        node = self._resolve(raw_parent)
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

    def _compact_summary(self, line: dict[str, Any], uuid: str | None, message: dict[str, Any]) -> None:
        text = _text_of(message.get("content"))
        boundary = self._resolve(line.get("parentUuid"))
        if boundary is not None and boundary[_KIND] == "boundary":
            # It joins the boundary's compaction entry (which keeps its timestamp).
            if text:
                boundary[_KIND] = "other"  # (its summary is no longer empty)
            if uuid:
                boundary[_ID] = uuid
                self.owner[uuid] = boundary
            return
        node = ["other", uuid, line.get("timestamp"), self.file, None]
        self.nodes.append(node)
        if uuid is not None:
            self.owner[uuid] = node


def _scan_head(data: bytes, starts: dict[int, Node]) -> tuple[Any, str | None, str | None]:
    """(the first entry's truthy string timestamp, or None; the first non-empty ``sessionId``
    and ``cwd``) of a searched main file, read from its first lines as the adapter's entries
    stand (``starts``: a response's entry by the start of its first line; the lines merged into
    it make no entry)."""
    facts: dict[str, str] = {}
    first: Any = None
    start, size = 0, len(data)
    loads, error = orjson.loads, orjson.JSONDecodeError
    while start < size and (first is None or len(facts) < 2):
        end = data.find(b"\n", start)
        if end == -1:
            end = size
        raw = data[start:end]
        try:
            line = loads(raw)
        except error:
            line = loads_object(raw)
        if type(line) is dict:
            for key in ("sessionId", "cwd"):
                value = line.get(key)
                if key not in facts and type(value) is str and value:
                    facts[key] = value
            if first is None:
                kind, message = line.get("type"), line.get("message")
                if kind == "assistant" and isinstance(message, dict):
                    node = starts.get(start)
                    stamp = node[_TIME] if node is not None else None
                elif (kind == "user" and isinstance(message, dict)) or (kind == "system" and line.get("subtype") == "compact_boundary"):
                    if line.get("isCompactSummary") is True:
                        raise _Whole  # (it may have joined a compaction)
                    stamp = line.get("timestamp")
                else:
                    stamp = line.get("timestamp")
                    if stamp is None and isinstance(line.get("snapshot"), dict):
                        stamp = line["snapshot"].get("timestamp")
                if _s(stamp):
                    first = stamp
        start = end + 1
    return first, facts.get("sessionId"), facts.get("cwd")


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


def claude_code_usage(path: str, data: bytes | None = None, *, whole: bool = False) -> ClaudeUsage | None:
    """The calls, keys and header facts of the Claude Code session at ``path`` (``data``: its
    bytes, if read), equal to ``ClaudeCodeSession.from_file(path)``'s; None when the session is
    not plain enough (see the module's doc). ``whole``: parse every line, so that ``keys``
    holds every entry's (``unread`` is empty)."""
    resolved = os.path.abspath(path)
    if not os.path.basename(resolved).startswith("agent-") and _older_layout(os.path.dirname(resolved)):
        return None
    if data is None:
        data = _read_file(resolved)
    try:
        try:
            return _usage(resolved, data, whole)
        except _Whole:
            return _usage(resolved, data, True)
    except _Plain:
        return None


def _read(reader: _Reader, data: bytes, whole: bool) -> None:
    uuids = None if whole else _searchable(data)
    reader.searching = uuids is not None
    if uuids is None:
        reader.data(data)
    else:
        reader.search(data, uuids)


def _usage(resolved: str, data: bytes, whole: bool) -> ClaudeUsage | None:
    reader = _Reader()
    _read(reader, data, whole)
    searched = reader.searched
    if searched:
        first, session_id, cwd = _scan_head(data, reader.starts)
    else:
        first, session_id, cwd = None, reader.first("sessionId"), reader.first("cwd")
    for number, sub in enumerate(_subagent_files(resolved), start=1):
        try:
            sub_data = _read_file(sub)
        except OSError:
            continue  # (the adapter skips an unreadable sub-agent file)
        reader.file = number
        _read(reader, sub_data, whole)
    if _made_up_among(reader.owner) or _made_up_among(reader.unread):
        return None
    if first is None:
        if searched:
            raise _Whole  # (no entry of the main file has a time: the first may be a sub-agent's)
        first = next((n[_TIME] for n in reader.nodes if _s(n[_TIME])), None)
    found = ClaudeUsage(session_id or os.path.splitext(os.path.basename(resolved))[0], cwd or ".", first or "")
    found.unread = reader.unread - reader.read
    calls, keys = found.calls, found.keys
    for node in reader.nodes:
        if node[_KIND] == "assistant":
            if node[_ID] is None:
                return None  # (a response with no uuid: its id is made up)
            calls.append(ClaudeCall(node[_ID], node[_TIME], node[_MODEL], pi_usage(node[_USAGE])))
        elif node[_ID] is not None:
            keys.append((node[_ID], node[_TIME]))
    return found
