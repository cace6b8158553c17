"""The per-file extractor: one session file's bytes to the corpus rows (plain Python columns).

Everything here is a pure function of the file's bytes, so the in-process scan, the process
pool and Ray Data all call :func:`extract_file` and get the same rows. Fork/clone copies are
a property of the corpus, not of one file: ``copied``/``copied_from`` are left False/None here
and filled by :func:`pi_lab.corpus.tables.resolve_copies`.

What the model saw at each call is computed in one walk of the tree: the projection of the
current root-to-node path is kept as a stack that grows and shrinks with the walk (an entry is
appended when the walk enters it and removed when it leaves), and only a compaction or a
``context_edit`` rebuilds it (they change earlier messages). The numbers equal
``estimate_context_tokens(build_session_context(entries, call.parentId).messages)``.
That stack is :class:`pi_lab.compaction.context_walk.ContextWalk` (the timeline walks a branch
with it too); the per-field readers are :mod:`pi_lab.corpus.fields`.
"""

from __future__ import annotations

import gc
import os
from array import array
from collections.abc import Iterator
from typing import Any

from pi_lab.compaction.context_walk import ContextWalk, MeasureCache
from pi_lab.compaction.tokens import estimate_tokens
from pi_lab.corpus.columns import _NO_USAGE, READ_BACK, CallRows, Children, TableColumns, _str, _str_list
from pi_lab.corpus.fields import (
    _content_bytes,
    _float,
    _float_usage,
    _ms,
    _num,
    _text_chars,
    _usage_row,
    _window,
)
from pi_lab.corpus.measures import CompactMeasures
from pi_lab.corpus.other_agents import read_other, read_other_session
from pi_lab.corpus.reading import (
    FileUnreadable,
    other_agent,
    plain_pi_header,
    read_complete_lines,
    read_pi_entries,
)
from pi_lab.corpus.schema import SCHEMAS, TABLE_NAMES
from pi_lab.corpus.skeletons import BodyReader, FileChanged, Stamps, read_lean
from pi_lab.formats.claude_code import SUBAGENT_START
from pi_lab.session._json import dumps, js_json
from pi_lab.session._text import js_len, js_trim

__all__ = ["TABLE_NAMES", "extract_file", "extract_bytes", "extract_tables", "table_parts", "FileChanged", "read_complete_lines", "read_other", "FileUnreadable"]

# pi's default compaction reserve (compaction.md §3): a compaction whose tokensBefore passed
# window - reserve was the automatic threshold check.
_DEFAULT_RESERVE = 16384
# A trigger the agent wrote in the file, in the corpus's words: Claude Code's compactMetadata.trigger
# ("auto": the automatic threshold compaction; "manual": /compact).
_RECORDED_TRIGGERS = {"auto": "threshold", "manual": "manual"}
# The first read of a file: its first line must be in it for the lean read (a pi header is
# well under a kilobyte; a longer first line sends the file the whole-bytes way).
_FIRST_BLOCK = 1 << 20
_LEAVE = -1  # (one int object for every entry on the walk's stack)

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)

# ---------------------------------------------------------------------------------------------
# The extractor

# What a slimmed message entry keeps of its message (_Extractor._slim): one dict per role, or
# per (stop reason, model) for an assistant's, shared by the entries (nothing writes to them).
_SLIM_ROLES = ("user", "assistant", "toolResult")
_SLIM_OTHER: dict[str, dict[str, Any]] = {"user": {"role": "user"}, "toolResult": {"role": "toolResult"}}
_SLIM_ASSISTANT: dict[tuple[Any, Any], dict[str, Any]] = {}


def extract_file(path: str | os.PathLike[str], *, lean: bool = True) -> dict[str, dict[str, list[Any]]]:
    """Read ``path`` (never writing it) and return its rows, one column dict per table.

    ``lean``: a current pi file is read as skeletons, its message lines parsed again as the
    walk enters them (:mod:`pi_lab.corpus.skeletons`: bounded memory on a huge file, each
    message line parsed two or three times); False parses every line once, holding them all
    (the scan reads a small file so: the same rows). Raises :class:`FileUnreadable` (or
    OSError) for a file that holds no session.
    """
    if not lean:
        return _read(path, lean=False).columns()
    try:
        return _read(path).columns()
    except FileChanged:  # (rewritten while its bodies were read back: read it again, whole)
        return _read(path, lean=False).columns()


def extract_tables(path: str | os.PathLike[str], batch_rows: int = 65_536) -> dict[str, Any]:
    """The Arrow tables of ``path``: ``columns_to_tables(extract_file(path))`` (equal tables),
    built ``batch_rows`` rows at a time, so the Python rows of a million entries never exist
    at once (one batch of them and the Arrow columns so far do).

    Raises as :func:`extract_file` does."""
    import pyarrow as pa

    from pi_lab.corpus.schema import empty_table

    parts: dict[str, list[Any]] = {name: [] for name in TABLE_NAMES}
    try:
        for name, table in table_parts(path, batch_rows):
            parts[name].append(table)
    except FileChanged:  # (rewritten while its bodies were read back: read it again, whole)
        parts = {name: [] for name in TABLE_NAMES}
        for name, table in table_parts(path, batch_rows, lean=False):
            parts[name].append(table)
    return {name: pa.concat_tables(parts[name]) if parts[name] else empty_table(name) for name in TABLE_NAMES}


def table_parts(path: str | os.PathLike[str], batch_rows: int = 65_536, *, lean: bool = True) -> Iterator[tuple[str, Any]]:
    """(table name, Arrow table of up to ``batch_rows`` rows) of ``path``, each table's rows in
    order: :func:`extract_tables` without holding them (a large scan writes each to disk as it
    comes). A lean read (``lean``) may raise :class:`FileChanged` after some parts were given:
    the caller drops those and reads again with ``lean=False``."""
    from pi_lab.corpus.schema import to_table

    for name, columns in _read(path, lean).parts(batch_rows):
        yield name, to_table(name, columns)


def _read(path: str | os.PathLike[str], lean: bool = True) -> _Extractor:
    """The extractor of a file, its bytes already dropped: a file's bytes are a third of what
    its parsed entries take, and the walk needs only the entries."""
    from pi_lab.session.storage import check_regular_file

    path = os.fspath(path)
    check_regular_file(path)
    handle = open(path, "rb")
    try:
        # A current pi file is read as skeletons, its message bodies read back one at a time
        # as the walk enters them (pi_lab.corpus.skeletons): the parsed bodies of a million
        # entries never exist at once. Anything else is read whole.
        first = handle.read(_FIRST_BLOCK)
        read = read_lean(path, first, handle) if lean else None
        if read is None:
            data = first + handle.read()
            handle.close()
    except BaseException:
        handle.close()
        raise
    if read is not None:
        extractor = _Extractor(path, read.header, read.entries, read.version, read.skipped, read.partial)
        extractor.file_ts, extractor.bodies = read.ts, read.bodies
        return extractor
    del first
    extractor = _prepare(data, path)
    del data
    return extractor


def extract_bytes(data: bytes, path: str) -> dict[str, dict[str, list[Any]]]:
    return _prepare(data, path).columns()


def _prepare(data: bytes, path: str) -> _Extractor:
    if not data.strip():
        raise FileUnreadable("empty file (no session header)")
    # Another agent's file is recognised from its first lines (a pi file's first is its header),
    # before every line is parsed by pi's rules for nothing: its adapter reads it its own way.
    # (a first line that is pi's header says it at once: the probe splits up to 1 MB in lines)
    agent = None if plain_pi_header(data) is not None else other_agent(data)
    if agent is not None:
        return _prepare_other(path, agent)
    header, entries, version, skipped, partial = read_pi_entries(data)
    return _Extractor(path, header, entries, version, skipped, partial)


def _prepare_other(path: str, agent: str) -> _Extractor:
    """The extractor of a Claude Code or Codex file, over its adapter's pi-shaped entries
    (:func:`read_other`)."""
    sm, header, entries, copied_of = read_other_session(path, agent)
    skipped = len(sm.skipped_lines)
    if agent == "claude-code":
        skipped += sum(len(v) for v in sm.skipped_subagent_lines.values())
    extractor = _Extractor(path, header, entries, 3, skipped, False, agent=agent, leaf=sm.leaf_id)
    extractor.copied_of = copied_of
    if agent == "codex":
        extractor.parent_session_id = sm.parent_session_id
        extractor.parent_session = sm.parent_file
        window = sm.context_window
        extractor.recorded_window = window if window.__class__ is int and window > 0 else None
    return extractor


class _Extractor(TableColumns):
    """One file's walk (here) and its columns (:class:`pi_lab.corpus.columns.TableColumns`)."""

    def __init__(self, path: str, header: Entry, entries: list[Entry], version: int, skipped: int, partial: bool,
                 agent: str = "pi", leaf: str | None = None):
        self.path = path
        self.agent = agent
        # Another agent's leaf is its adapter's (Claude Code resumes at the latest message, not
        # at the file's last line); pi's is the last entry in file order.
        self.leaf = leaf
        # A Codex fork's copied entries: entry id -> the session they were copied from.
        self.copied_of: dict[str, str | None] = {}
        self.parent_session: str | None = None
        self.parent_session_id: str | None = None
        self.recorded_window: int | None = None  # a Codex rollout's last model_context_window
        self.header = header
        self.entries = entries
        self.version = version
        self.skipped = skipped
        self.partial = partial
        self.session_id = header["id"]
        self.stats = MeasureCache()
        self.stats.plain = CompactMeasures()  # (a measure per entry, to the end of the walk)
        self.known_tokens = None
        self.calls = CallRows()
        self.tool_rows: list[tuple[Any, ...]] = []
        self.tool_start: list[Any] = []  # call time of each tool row, for the seconds until its result
        self.tool_results: dict[int, tuple[Any, ...]] = {}  # tool row -> _TOOL_RESULT values
        self.compaction_rows: list[tuple[Any, ...]] = []
        self.overflowed: set[int] = set()  # model_calls rows
        self.usage_of: dict[int, tuple[float, ...]] = {}  # entry position -> its usage cells
        # A lean read's (pi_lab.corpus.skeletons): the entries' timestamps, and the reader that
        # puts a skeleton's body back as the walk enters it.
        self.file_ts: Stamps | None = None
        self.bodies: BodyReader | None = None

    # -- structure --------------------------------------------------------------------------

    def run(self) -> None:
        entries = self.entries
        n = len(entries)
        kinds = [e.get("type") for e in entries]
        ids = [e.get("id") for e in entries]
        index_of: dict[str, int] = {}  # the last entry with an id wins (as the engine's index)
        for i, entry_id in enumerate(ids):
            if entry_id.__class__ is str:
                index_of[entry_id] = i
        children = Children(n)
        roots: list[int] = []
        # In pi's own files the entries are kept to the end of the walk: a parentId holds the
        # same string object as its parent's id (equal text, one copy, 57 bytes an entry less).
        share_parent = self.agent == "pi"
        for i, entry in enumerate(entries):
            parent_id = entry.get("parentId")
            parent = index_of.get(parent_id) if parent_id.__class__ is str and parent_id and parent_id != ids[i] else None
            if parent is None:
                roots.append(i)
            else:
                if share_parent:
                    entry["parentId"] = ids[parent]
                children.add(parent, i)
        labels: dict[str, str] = {}
        name: str | None = None
        for i, kind in enumerate(kinds):
            if kind == "label":
                entry = entries[i]
                target = entry.get("targetId")
                if target.__class__ is not str:
                    continue  # pi's label map keys it where no entry id finds it (as the engine)
                label = entry.get("label")
                if label:  # pi labels with any truthy value; the column shows a non-string as JSON
                    labels[target] = label if label.__class__ is str else js_json(label)
                else:
                    labels.pop(target, None)
            elif kind == "session_info":
                raw = entries[i].get("name")
                name = (js_trim(raw) if isinstance(raw, str) else "") or None
        # pi's leaf is the last entry in file order; the active path is its root-to-leaf path.
        active = [False] * n
        node = n - 1 if n else None
        if self.leaf is not None:
            node = index_of.get(self.leaf, node)
        while node is not None and not active[node]:
            active[node] = True
            parent_id = entries[node].get("parentId")
            node = index_of.get(parent_id) if parent_id.__class__ is str and parent_id else None
        self.kinds, self.ids, self.index_of, self.children, self.labels, self.active = kinds, ids, index_of, children, labels, active
        self.ts: Any = self.file_ts if self.file_ts is not None else [_ms(e.get("timestamp")) for e in entries]
        self.file_ts = None
        # A message entry's row is made as soon as the walk has entered it, and the entry then
        # keeps only what the walk may read again (see _slim): except for pi's own files (the
        # adapters' entries carry more that is read later) and an entry some context_edit
        # names (its edited messages are projected from its body whenever a path holds both).
        self.message_rows = None
        # The cells many rows repeat (a model, a provider, a stop reason) as one string each.
        self.shared: dict[str, str] = {}
        if self.agent == "pi":
            made: list[tuple[Any, ...] | None] = [None] * n
            self.message_rows = made
            targets = (entries[i].get("targetId") for i, kind in enumerate(kinds) if kind == "context_edit")
            self.edit_targets = {t for t in targets if t.__class__ is str}

        self.call_row_at = array("q", [-1]) * n  # entry position -> its model_calls row (-1: none)
        self.path_at: list[int] = []  # the positions of the walk's path
        self.pending_tools: dict[str, int] = {}  # toolCallId -> tool_calls row (current path)
        self.depth = array("q", bytes(8 * n))
        self.depth_of: dict[int, int] = {}  # id(entry) -> depth, for the usage anchor's entry
        visited = bytearray(n)
        bodies = self.bodies
        if bodies is not None and children.reached(roots) < n:
            # A parentId cycle: its entries are walked from their path computed from scratch,
            # which reads bodies the walk has not entered yet; every body is read back first.
            bodies.restore_all(entries)
        # Roots in file order; then anything a parentId cycle made unreachable (hand edits).
        self._walk(roots, visited)
        leftovers = [i for i in range(n) if not visited[i]]
        while leftovers:
            self._walk([leftovers[0]], visited, fallback=True)
            leftovers = [i for i in leftovers if not visited[i]]
        self.name = name

    def columns(self) -> dict[str, dict[str, list[Any]]]:
        """Every table's columns whole (one part each)."""
        cols: dict[str, dict[str, list[Any]]] = {}
        for name, part in self.parts(None):
            into = cols.get(name)
            if into is None:
                cols[name] = part
            else:
                for key, values in part.items():
                    into[key].extend(values)
        cols = {name: cols.get(name) or {f.name: [] for f in SCHEMAS[name]} for name in TABLE_NAMES}
        self._session_row(cols, self.name)
        return cols

    def parts(self, batch_rows: int | None) -> Iterator[tuple[str, dict[str, list[Any]]]]:
        """(table, columns of up to ``batch_rows`` rows, in the schema's order) in row order,
        every table's rows after the walk; None: each table in one part, and no sessions
        table (:meth:`columns` makes its row from the whole columns)."""
        # The rows are tuples and lists of plain values (no reference cycles): collections
        # during the walk would only rescan them, up to a tenth of the time.
        try:
            paused = gc.isenabled()
            if paused:
                gc.disable()
            try:
                self.run()
            finally:
                if paused:
                    gc.enable()
            yield from self._named_parts(batch_rows)
        finally:
            if self.bodies is not None:  # (the message rows read their lines back from it)
                self.bodies.close()
                self.bodies = None

    def _named_parts(self, batch_rows: int | None) -> Iterator[tuple[str, dict[str, list[Any]]]]:
        copied_of = self.copied_of
        for name, part in self._parts(batch_rows):
            part["agent"] = [self.agent] * len(part["file"])
            if self.agent == "claude-code" and name in ("messages", "model_calls"):
                # The adapter's totalTokens is the context the request carried (its gauge);
                # a call's total is all four counters, as pi's own and ccusage's totals are.
                part["total_tokens"] = [a + b + c + d for a, b, c, d in
                                        zip(part["input"], part["output"], part["cache_read"], part["cache_write"])]
            if copied_of and "copied" in part:
                sources = [copied_of.get(i) if i.__class__ is str else None for i in part["entry_id"]]
                part["copied"] = [s is not None for s in sources]
                part["copied_from"] = sources
            yield name, {f.name: part[f.name] for f in SCHEMAS[name]}
        if batch_rows is not None:  # (columns() adds the row from the whole columns)
            totals = self._totals(self.messages)
            self._session_row(totals, self.name)
            yield "sessions", totals["sessions"]

    def _walk(self, starts: list[int], visited: bytearray, fallback: bool = False) -> None:
        entries, kinds = self.entries, self.kinds
        first_child, more_children = self.children.first, self.children.more
        depth, depth_of, pending = self.depth, self.depth_of, self.pending_tools
        walk = ContextWalk(self.stats, depth_of)
        path = walk.path
        enter, leave = walk.enter, walk.leave
        tool_undo: list[Any] = []  # per entered entry: None or its (toolCallId, previous row) changes
        slim = self.message_rows is not None
        path_at = self.path_at = []
        bodies = self.bodies
        lean = bodies.pending if bodies is not None else None
        # Positions to enter, and _LEAVE to leave the last entered entry after its subtree.
        stack = starts[::-1]
        while stack:
            i = stack.pop()
            if i < 0:  # (_LEAVE)
                leave()
                path_at.pop()
                changes = tool_undo.pop()
                if changes is not None:
                    for key, previous in reversed(changes):
                        if previous is None:
                            pending.pop(key, None)
                        else:
                            pending[key] = previous
                continue
            if visited[i]:
                continue
            visited[i] = 1
            entry = entries[i]
            if lean is not None and lean[i]:
                bodies.restore(i, entry)  # type: ignore[union-attr]  (lean is its pending flags)
            d = len(path)
            depth[i] = d
            if fallback:
                # (only a walk restarted from scratch asks for the depth of an entry the walk
                # did not anchor: elsewhere an anchor that differs from the entered one lies
                # before an edit or compaction, which invalidates it whatever its depth)
                depth_of[id(entry)] = d
                # (cycle members: usage in a context computed from scratch is not trusted)
                walk.restart(self._path_from_scratch(entry))
            kind = kinds[i]
            changes = None
            if kind == "message":
                message = entry.get("message")
                if isinstance(message, dict):
                    role = message.get("role")
                    if role == "assistant":
                        changes = self._model_call(i, entry, message, walk)
                    elif role == "toolResult":
                        self._tool_result(i, entry, message)
            enter(entry)
            path_at.append(i)
            if kind == "compaction":
                self._compaction_after(entry, walk)
            elif kind == "message" and slim:
                self._slim(i, entry)
            tool_undo.append(changes)
            stack.append(_LEAVE)
            kid = first_child[i]
            if kid >= 0:
                kids = more_children.get(i) if more_children else None
                if kids is None:
                    stack.append(kid)
                else:
                    stack.extend(reversed(kids))

    def _slim(self, i: int, entry: Entry) -> None:
        """Make entry ``i``'s message row now, and let go of its body.

        Once the walk has entered an entry, its measure is in the walk's cache (keyed by the
        entry object, which stays) and its call and tool rows are made; what is read of it
        later is its type, ids and parent, and, of its message, the role (a compaction skips
        the kept system messages), and an assistant's stop reason and model (a compaction's
        trigger). Those stay, in a message shared by every entry that has the same ones; the
        parsed body (about 1 KB an entry) goes, and so does the timestamp (``ts`` has it)."""
        message = entry.get("message")
        if not isinstance(message, dict):
            return
        role = message.get("role")
        entry_id = self.ids[i]
        # Edit targets are strings; an id of another JSON type (a list: unhashable) never is one.
        if role not in _SLIM_ROLES or (type(entry_id) is str and entry_id in self.edit_targets):
            return
        if self.bodies is not None and self.bodies.lengths[i]:
            # A skeleton's line is read back for its row when the columns are made: the rows
            # of a million entries are not held (about 0.3 KB each) until then.
            self.message_rows[i] = READ_BACK  # type: ignore[index]  (set when slimming is on)
            stop, model = message.get("stopReason"), message.get("model")
            stop = stop if isinstance(stop, str) else None
            model = model if isinstance(model, str) else None
        else:
            row = self._message_row(i, entry, message, role)
            self.message_rows[i] = row  # type: ignore[index]  (set when slimming is on)
            stop, model = row[5], row[7]
        self.usage_of.pop(i, None)
        if role == "assistant":
            key = (stop, model)
            shared = _SLIM_ASSISTANT.get(key)
            if shared is None:
                shared = _SLIM_ASSISTANT[key] = {"role": "assistant", "stopReason": stop, "model": model}
        else:
            shared = _SLIM_OTHER[role]
        entry["message"] = shared
        entry["timestamp"] = None
        entry["type"] = self.kinds[i] = "message"  # (the constant: one string for every entry)

    def _message_row(self, i: int, entry: Entry, message: dict[str, Any], role: Any) -> tuple[Any, ...]:
        """The messages row of entry ``i`` (``role``: its message's role if a string)."""
        if not isinstance(role, str):
            role = None
        # the walk estimated this entry's message already (one message, no edit)
        known_tokens = self.known_tokens
        if known_tokens is None:  # (during the walk)
            known = self.stats.plain.get(id(entry))
            tokens = known[1] if known is not None and known[0] == 1 else None
        else:
            tokens = known_tokens.get(i)
        stop, error = message.get("stopReason"), message.get("errorMessage")
        model, provider, tool = message.get("model"), message.get("provider"), message.get("toolName")
        share = self.shared.setdefault
        stop = share(stop, stop) if isinstance(stop, str) else None
        model = share(model, model) if isinstance(model, str) else None
        provider = share(provider, provider) if isinstance(provider, str) else None
        tool = share(tool, tool) if isinstance(tool, str) else None
        entry_id = self.ids[i]
        return (
            entry_id if entry_id.__class__ is str else None, self.ts[i], role, _text_chars(message.get("content")),
            tokens if tokens is not None else estimate_tokens(message),
            stop, error if isinstance(error, str) else None, model, provider, tool,
            # a tool result's own usage too (a tool that called a model): pi counts it in
            # the session's spend (pi_lab.compaction.spend), not as a model call
            *(self.usage_of.get(i) or _float_usage(message.get("usage")) if role == "assistant"
              else _float_usage(message.get("usage")) if role == "toolResult" else _NO_USAGE),
            self.active[i],
        )

    def _path_from_scratch(self, entry: Entry) -> list[Entry]:
        """The path to ``entry``'s parent by the engine's own walk (entries on a parentId cycle)."""
        from pi_lab.session.tree import get_branch

        parent_id = entry.get("parentId")
        by_id = {k: self.entries[i] for k, i in self.index_of.items()}
        return get_branch(by_id, parent_id) if parent_id else []

    # -- rows --------------------------------------------------------------------------------

    def _call_window(self, entry: Entry, model: str | None) -> int | None:
        """A call's context window: the catalog's for the model, except for a Codex call, whose
        rollout records the window Codex worked with (``model_context_window`` of the token
        count that priced the call, else the session's last; 272k where the catalog says 400k
        for the model itself)."""
        if self.agent == "codex":
            meta = entry.get("codex")
            recorded = meta.get("modelContextWindow") if isinstance(meta, dict) else None
            if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0:
                return recorded
            if self.recorded_window is not None:
                return self.recorded_window
        return _window(model)


    def _tool_result(self, i: int, entry: Entry, message: dict[str, Any]) -> None:
        call_id = message.get("toolCallId")
        row = self.pending_tools.get(call_id) if isinstance(call_id, str) else None
        if row is None:
            return
        found = self.tool_results.get(row)
        if found is not None and found[0] is not None:
            return  # the first result on the path answers the call
        start, end = self.tool_start[row], self.ts[i]
        self.tool_results[row] = (
            _str(entry.get("id")), _content_bytes(message.get("content")), bool(message.get("isError")),
            (end - start) / 1000 if start is not None and end is not None else None,
        )

    def _model_call(self, i: int, entry: Entry, message: dict[str, Any], walk: ContextWalk):
        inp, out, cr, cw, total, cost = _usage_row(message.get("usage"))
        try:
            usage = (float(inp), float(out), float(cr), float(cw), float(total), cost)
        except OverflowError:  # (a counter too large for a float: only then the slower way)
            usage = (_float(inp), _float(out), _float(cr), _float(cw), _float(total), cost)
        self.usage_of[i] = usage
        model = message.get("model")
        model = self.shared.setdefault(model, model) if isinstance(model, str) else None
        window = self._call_window(entry, model)
        # A valid usage anchor of the message itself is what the provider measured as input.
        measured = _float(inp + cr + cw) if self.stats.of(entry, None)[2] is not None else None
        ctx = walk.context
        estimate = ctx.estimate
        projected = walk.projected()
        seen = measured if measured is not None else projected
        provider = message.get("provider")
        stop = message.get("stopReason")
        share = self.shared.setdefault
        provider = share(provider, provider) if isinstance(provider, str) else None
        stop = share(stop, stop) if isinstance(stop, str) else None
        self.call_row_at[i] = len(self.calls)
        self.calls.append((
            _str(entry.get("id")), _str(entry.get("parentId")), self.ts[i],
            provider, model, stop, ctx.message_count, _float(estimate), ctx.plain_tokens, _float(projected), measured,
            *usage,
            walk.compaction_id,
            window, _float(seen) / window if window else None, len(walk.path), self.active[i],
        ))
        content = message.get("content")
        if not isinstance(content, list):
            return None
        changes = None
        rows, pending = self.tool_rows, self.pending_tools
        start = self.ts[i]
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            call_id = block.get("id")
            if not isinstance(call_id, str):
                call_id = None
            else:
                if changes is None:
                    changes = []
                changes.append((call_id, pending.get(call_id)))
                pending[call_id] = len(rows)
            tool = block.get("name")
            rows.append((
                _str(entry.get("id")), call_id, tool if isinstance(tool, str) else None,
                len(dumps(block.get("arguments", {}))), model,  # UTF-8 bytes of JSON.stringify(arguments)
            ))
            self.tool_start.append(start)
        return changes

    def _compaction_after(self, entry: Entry, walk: ContextWalk) -> None:
        details = entry.get("details")
        if not isinstance(details, dict):
            details = {}
        if details.get("claudeCode") == SUBAGENT_START:
            return  # where a Claude Code sub-agent's own context starts: no compaction happened
        path = walk.path
        first_kept = entry.get("firstKeptEntryId")
        kept = 0
        for i in range(len(path) - 2, -1, -1):
            if path[i].get("id") == first_kept:
                kept = len(path) - 1 - i
                break
        # The trigger as the file shows it: an overflow recovery follows a failed call whose
        # omission (context_edit) sits right before the compaction; the threshold check runs
        # after a successful turn; anything else was asked for (/compact) or by an extension.
        trigger = "manual"
        j = len(path) - 2
        saw_edit = False
        while j >= 0 and path[j].get("type") == "context_edit":
            saw_edit = True
            j -= 1
        previous = path[j] if j >= 0 else None
        prev_msg = previous.get("message") if previous is not None and previous.get("type") == "message" else None
        if previous is not None and isinstance(prev_msg, dict) and prev_msg.get("role") == "assistant":
            stop = prev_msg.get("stopReason")
            if stop in ("error", "length") and saw_edit:
                trigger = "overflow"
                row = self.call_row_at[self.path_at[j]]
                if row >= 0:
                    self.overflowed.add(row)
            else:
                window = self._call_window(previous, prev_msg.get("model") if isinstance(prev_msg.get("model"), str) else None)
                before = _num(entry.get("tokensBefore"))
                trigger = "threshold" if window and before > window - _DEFAULT_RESERVE else "manual"
        recorded = details.get("trigger")  # an agent that records it (Claude Code's compactMetadata)
        if recorded in _RECORDED_TRIGGERS:
            trigger = _RECORDED_TRIGGERS[recorded]
        summary = entry.get("summary")
        _inp, _out, _cr, _cw, total, cost = _usage_row(entry.get("usage"))
        self.compaction_rows.append((
            _str(entry.get("id")), _str(entry.get("parentId")), _ms(entry.get("timestamp")),
            _recorded_before(entry.get("tokensBefore")), first_kept if isinstance(first_kept, str) else None,
            js_len(summary) if isinstance(summary, str) else 0, kept, walk.context.message_count,
            _float(walk.projected()),
            "hook" if entry.get("fromHook") is True and trigger == "manual" else trigger,
            entry.get("fromHook") if isinstance(entry.get("fromHook"), bool) else None,
            _str_list(details.get("readFiles")), _str_list(details.get("modifiedFiles")), cost, _float(total),
        ))


def _recorded_before(value: Any) -> float | None:
    """A compaction's count before it as the file records it; null when it records none (every
    Codex compaction, a Claude Code boundary without preTokens, a pi entry without the field)."""
    return None if value is None else _float(_num(value))
