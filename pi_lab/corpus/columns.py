"""The extractor's rows as columns: each table's columns, a batch of rows at a time, and
the sessions row (:class:`TableColumns`, the half of :class:`pi_lab.corpus.extract._Extractor`
that runs after its walk).

The walk (:mod:`pi_lab.corpus.extract`) leaves one tuple per row (a model call, a tool call,
a compaction, a message made as soon as its entry was entered) and per-entry lists (kinds,
ids, timestamps, depths, children); here they become the columns of :mod:`pi_lab.corpus.schema`,
in file order, with the columns every row of a file shares added.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

from pi_lab.compaction.context_walk import MeasureCache
from pi_lab.corpus.fields import _ms, _text_chars
from pi_lab.corpus.measures import KnownTokens
from pi_lab.corpus.schema import SCHEMAS
from pi_lab.corpus.skeletons import BodyReader
from pi_lab.session._text import js_len
from pi_lab.session.entries import Entry
from pi_lab.session.projection import entry_to_messages

__all__ = ["TableColumns"]

# The columns each table's row tuples hold, in order. The columns every row of a file shares
# (file, session_id, copied, copied_from) and the ones set after the row was made (a tool
# call's result, a call found overflowed or retried later) are added when the columns are
# assembled: one tuple per row costs far less than one list append per cell.
_CALL_ROW = (
    "entry_id", "parent_id", "timestamp", "provider", "model", "stop_reason", "context_messages",
    "context_tokens_est", "context_tokens_plain", "context_tokens_projected", "input_tokens_measured",
    "input", "output", "cache_read", "cache_write", "total_tokens", "cost", "compaction_id",
    "context_window", "fill_ratio", "depth", "on_active_path",
)
_MESSAGE_ROW = (
    "entry_id", "timestamp", "role", "text_chars", "est_tokens", "stop_reason", "error_message", "model",
    "provider", "tool_name", "input", "output", "cache_read", "cache_write", "total_tokens", "cost", "on_active_path",
)
_TOOL_ROW = ("entry_id", "tool_call_id", "tool_name", "argument_bytes", "model")
_TOOL_RESULT = ("result_entry_id", "result_bytes", "is_error", "seconds")
_COMPACTION_ROW = (
    "entry_id", "parent_id", "timestamp", "tokens_before", "first_kept_entry_id", "summary_chars", "kept_entries",
    "messages_after", "tokens_after", "trigger", "from_hook", "read_files", "modified_files", "summary_cost",
    "summary_tokens",
)
_SUMMARY_ROW = ("entry_id", "timestamp", "from_id", "target_id", "summary_chars", "read_files", "modified_files", "from_hook")
_NO_USAGE = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
_USAGE_COLUMNS = ("input", "output", "cache_read", "cache_write", "total_tokens", "cost")
# A message_rows cell: the row is made from the entry's line read back (a lean read's skeleton).
READ_BACK = ()
# The model_calls cells that are always floats (the walk makes them with float()): kept in
# arrays of doubles, 8 bytes a cell instead of a float object and a pointer.
_CALL_FLOATS = frozenset(("context_tokens_est", "context_tokens_projected", *_USAGE_COLUMNS))


class Children:
    """Each entry's children, by position: ``first[i]`` its first child (-1: none), and for
    the entries with more than one, ``more[i]`` all of them in file order (nearly every entry
    of a session has one child: an int in an array, no object, for it)."""

    __slots__ = ("first", "more")

    def __init__(self, n: int) -> None:
        self.first = array("q", [-1]) * n
        self.more: dict[int, list[int]] = {}

    def add(self, parent: int, child: int) -> None:
        first = self.first[parent]
        if first < 0:
            self.first[parent] = child
        else:
            kids = self.more.get(parent)
            if kids is None:
                self.more[parent] = [first, child]
            else:
                kids.append(child)

    def reached(self, roots: list[int]) -> int:
        """How many entries a walk from ``roots`` reaches (fewer than all: a parentId cycle)."""
        first, more = self.first, self.more
        stack = list(roots)
        count = 0
        while stack:
            i = stack.pop()
            count += 1
            kid = first[i]
            if kid >= 0:
                kids = more.get(i)
                if kids is None:
                    stack.append(kid)
                else:
                    stack.extend(kids)
        return count

    def counts(self, a: int, b: int) -> list[int]:
        """The number of children of entries ``a`` to ``b``."""
        more = self.more
        counts = [0 if f < 0 else 1 for f in self.first[a:b]]
        if more:
            for i, kids in more.items():
                if a <= i < b:
                    counts[i - a] = len(kids)
        return counts


class CallRows:
    """The model_calls rows of one file, kept by column (a tuple per row and a float object
    per cell cost about 0.5 KB a call). Rows are appended as tuples of :data:`_CALL_ROW`'s
    cells and moved into the columns a thousand at a time."""

    __slots__ = ("columns", "_buffer", "count")

    def __init__(self) -> None:
        self.columns: list[Any] = [array("d") if name in _CALL_FLOATS else [] for name in _CALL_ROW]
        self._buffer: list[tuple[Any, ...]] = []
        self.count = 0

    def append(self, row: tuple[Any, ...]) -> None:
        buffer = self._buffer
        buffer.append(row)
        self.count += 1
        if len(buffer) >= 1024:
            self.flush()

    def flush(self) -> None:
        buffer = self._buffer
        if buffer:
            for column, values in zip(self.columns, zip(*buffer)):
                column.extend(values)
            buffer.clear()

    def column(self, name: str, start: int = 0, stop: int | None = None) -> list[Any]:
        """The cells of rows ``start`` to ``stop`` of column ``name`` (a new list)."""
        self.flush()
        return list(self.columns[_CALL_ROW.index(name)][start:stop])

    def __len__(self) -> int:
        return self.count


class TableColumns:
    """The columns half of the extractor (a base class: the walk sets what is declared here)."""

    path: str
    agent: str
    header: Entry
    session_id: str
    entries: list[Any]  # (an entry is set to None once its rows are made)
    kinds: list[Any]
    ids: list[Any]
    ts: Any  # a list or a Stamps: ts[i], ts[a:b] (a list)
    active: list[bool]
    children: Children
    labels: dict[str, str]
    index_of: dict[str, int]
    depth: array
    depth_of: dict[int, int]
    stats: MeasureCache
    shared: dict[str, str]
    message_rows: list[tuple[Any, ...] | None] | None
    known_tokens: KnownTokens | None  # (set when the columns are made)
    bodies: BodyReader | None
    usage_of: dict[int, tuple[float, ...]]
    call_row_at: array  # entry position -> its model_calls row, -1 for none
    calls: CallRows
    pending_tools: dict[str, int]
    tool_rows: list[tuple[Any, ...]]
    tool_start: list[Any]
    tool_results: dict[int, tuple[Any, ...]]
    compaction_rows: list[tuple[Any, ...]]
    summary_rows: list[tuple[Any, ...]]
    overflowed: set[int]
    version: int
    skipped: int
    partial: bool
    parent_session: str | None
    parent_session_id: str | None
    messages: int

    def _retried(self) -> set[int]:
        """model_calls rows of failed calls that pi dropped with context_edit(null) and sent again."""
        rows: set[int] = set()
        entries = self.entries
        for i, kind in enumerate(self.kinds):
            if kind != "context_edit" or entries[i].get("replacement") is not None:
                continue
            target = entries[i].get("targetId")
            position = self.index_of.get(target) if target.__class__ is str else None
            row = self.call_row_at[position] if position is not None else -1
            if row >= 0:
                rows.add(row)
        return rows

    # -- columns -----------------------------------------------------------------------------

    def _parts(self, size: int | None) -> Iterator[tuple[str, dict[str, list[Any]]]]:
        n = len(self.entries)
        step = size or max(n, 1)
        messages = 0
        self.summary_rows: list[tuple[Any, ...]] = []
        overflowed, retried = self.overflowed, self._retried()
        # What only the walk needed goes before the rows are made: a million entries' depths
        # by object, their call rows by object, their edited measures.
        self.depth_of, self.call_row_at, self.pending_tools, self.tool_start = {}, array("q"), {}, []
        self.index_of = {}  # (ids are looked up no more)
        self.stats.edited.clear()
        # The measures too: the rows take only the one-message estimates from them, kept by
        # position (the measures' dict, keyed by address, is a few tens of MB at a million).
        self.known_tokens = KnownTokens(self.entries, self.kinds, self.stats.plain)
        self.stats.plain = {}
        entries_of, ids = self.entries, self.ids
        for start in range(0, n, step):
            stop = min(n, start + step)
            entries, rows = self._entry_columns(start, stop)
            # Each entry is read for the last time: it goes now.
            for i in range(start, stop):
                entries_of[i] = ids[i] = None
            messages += len(rows)
            yield "entries", entries
            del entries
            yield "messages", self._table("messages", _MESSAGE_ROW, rows)
            del rows
        calls = self.calls
        for start in range(0, len(calls), size or max(len(calls), 1)):
            stop = min(len(calls), start + (size or len(calls)))
            part = self._columns({name: calls.column(name, start, stop) for name in _CALL_ROW}, stop - start)
            part["overflowed"] = [r in overflowed for r in range(start, stop)] if overflowed else [False] * (stop - start)
            part["retried"] = [r in retried for r in range(start, stop)] if retried else [False] * (stop - start)
            yield "model_calls", part
        tools, results = self.tool_rows, self.tool_results
        empty = (None, None, None, None)
        for start in range(0, len(tools), size or max(len(tools), 1)):
            stop = min(len(tools), start + (size or len(tools)))
            part = self._table("tool_calls", _TOOL_ROW, tools[start:stop])
            late = list(zip(*[results.get(r, empty) for r in range(start, stop)]))
            for key, values in zip(_TOOL_RESULT, late):
                part[key] = list(values)
            yield "tool_calls", part
        yield "compactions", self._table("compactions", _COMPACTION_ROW, self.compaction_rows)
        yield "branch_summaries", self._table("branch_summaries", _SUMMARY_ROW, self.summary_rows)
        self.messages = messages

    def _table(self, name: str, fields: tuple[str, ...], rows: list[tuple[Any, ...]]) -> dict[str, list[Any]]:
        columns = [list(c) for c in zip(*rows)] if rows else [[] for _ in fields]
        return self._columns(dict(zip(fields, columns)), len(rows))

    def _columns(self, out: dict[str, list[Any]], n: int) -> dict[str, list[Any]]:
        """``out`` (``n`` rows) with the columns every row of the file shares."""
        out["file"] = [self.path] * n
        out["session_id"] = [self.session_id] * n
        out["copied"] = [False] * n
        out["copied_from"] = [None] * n
        return out

    def _entry_columns(self, a: int, b: int) -> tuple[dict[str, list[Any]], list[tuple[Any, ...]]]:
        """The entries columns of entries ``a`` to ``b`` and their message rows (the branch
        summaries' rows go to ``summary_rows``)."""
        entries, kinds, ids, ts, active = self.entries, self.kinds, self.ids, self.ts, self.active
        n = b - a
        made_rows = self.message_rows
        roles: list[Any] = [None] * n
        chars = [0] * n
        message_rows: list[tuple[Any, ...]] = []
        summary_rows = self.summary_rows
        for i in range(a, b):
            kind = kinds[i]
            if kind == "message":
                made = made_rows[i] if made_rows is not None else None
                if made is READ_BACK:
                    skeleton = entries[i]  # (its measure is keyed by it)
                    message = self.bodies.read(i, skeleton)["message"]  # type: ignore[union-attr]
                    made = self._message_row(i, skeleton, message, message["role"])
                if made is not None:  # (made by the walk: _slim, or now)
                    made_rows[i] = None  # type: ignore[index]
                    roles[i - a] = made[2]
                    chars[i - a] = made[3]
                    message_rows.append(made)
                    continue
                entry = entries[i]
                message = entry.get("message")
                if not isinstance(message, dict):
                    continue
                role = message.get("role")
                if not isinstance(role, str):
                    role = None
                roles[i - a] = role
                row = self._message_row(i, entry, message, role)
                chars[i - a] = row[3]
                if role in ("compactionSummary", "branchSummary"):  # (a hand-written message entry)
                    summary = message.get("summary")
                    chars[i - a] = js_len(summary) if isinstance(summary, str) else 0
                message_rows.append(row)
            elif kind in ("compaction", "branch_summary", "custom_message"):
                entry = entries[i]
                total = 0
                for m in entry_to_messages(entry):
                    if m.get("role") in ("compactionSummary", "branchSummary"):
                        total += js_len(m["summary"]) if isinstance(m.get("summary"), str) else 0
                    else:
                        total += _text_chars(m.get("content"))
                chars[i - a] = total
                if kind == "branch_summary":
                    details = entry.get("details") if isinstance(entry.get("details"), dict) else {}
                    summary, from_id, target = entry.get("summary"), entry.get("fromId"), entry.get("parentId")
                    entry_id = ids[i]
                    summary_rows.append((
                        entry_id if entry_id.__class__ is str else None, ts[i], from_id if isinstance(from_id, str) else None,
                        target if isinstance(target, str) else None, js_len(summary) if isinstance(summary, str) else 0,
                        _str_list(details.get("readFiles")), _str_list(details.get("modifiedFiles")),
                        entry.get("fromHook") if isinstance(entry.get("fromHook"), bool) else None,
                    ))
        child_count = self.children.counts(a, b)
        labels = self.labels
        parents = [e.get("parentId") for e in entries[a:b]]
        ec = {
            "file": [self.path] * n,
            "session_id": [self.session_id] * n,
            "entry_id": [i if i.__class__ is str else None for i in ids[a:b]],
            "parent_id": [p if isinstance(p, str) else None for p in parents],
            "line": list(range(a + 1, b + 1)),
            "type": [k if isinstance(k, str) else None for k in kinds[a:b]],
            "role": roles,
            "timestamp": ts[a:b],
            "depth": self.depth[a:b].tolist(),
            "child_count": child_count,
            "is_leaf": [c == 0 for c in child_count],
            "on_active_path": active[a:b],
            "branch_point": [c > 1 for c in child_count],
            "label": [labels.get(i) if i.__class__ is str else None for i in ids[a:b]],
            "chars": chars,
            "copied": [False] * n,
            "copied_from": [None] * n,
        }
        return ec, message_rows

    def _message_row(self, i: int, entry: Entry, message: dict[str, Any], role: Any) -> tuple[Any, ...]:
        raise NotImplementedError  # (the walk's: pi_lab.corpus.extract._Extractor)

    def _totals(self, messages: int) -> dict[str, dict[str, Any]]:
        """What :meth:`_session_row` reads of the other tables, without their rows: the
        columns it reads over the file's arrays (``messages``: the file's message rows)."""
        calls = self.calls
        child_count = self.children.counts(0, len(self.kinds))
        return {
            "sessions": {f.name: [] for f in SCHEMAS["sessions"]},
            "entries": {"timestamp": self.ts[0:len(self.kinds)], "type": [k if isinstance(k, str) else None for k in self.kinds],
                        "branch_point": [c > 1 for c in child_count], "is_leaf": [c == 0 for c in child_count],
                        "depth": self.depth},
            "messages": {"entry_id": range(messages)},
            "model_calls": {key: calls.column(key) for key in ("entry_id", "model", *_USAGE_COLUMNS)},
        }

    def _session_row(self, cols: dict[str, dict[str, list[Any]]], name: str | None) -> None:
        sc = cols["sessions"]
        header = self.header
        ec = cols["entries"]
        mc = cols["model_calls"]
        parent = header.get("parentSession")
        if not isinstance(parent, str):
            parent = header.get("branchedFrom") if isinstance(header.get("branchedFrom"), str) else None
        if self.agent == "codex":
            parent = self.parent_session
        times = [t for t in ec["timestamp"] if t is not None]
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
        models = sorted({m for m in mc["model"] if m})
        types = ec["type"]
        row = {
            "file": self.path, "session_id": self.session_id, "cwd": cwd, "project": cwd,
            "parent_session": parent or None, "parent_session_id": self.parent_session_id, "created": _ms(header.get("timestamp")),
            "last_activity": max(times) if times else None, "name": name, "version": self.version,
            "entries": len(self.entries), "messages": len(cols["messages"]["entry_id"]), "model_calls": len(mc["entry_id"]),
            "branch_points": ec["branch_point"].count(True), "leaves": ec["is_leaf"].count(True),
            "max_depth": max(ec["depth"]) if ec["depth"] else 0, "compactions": len(self.compaction_rows),
            "branch_summaries": types.count("branch_summary"), "context_edits": types.count("context_edit"),
            "labels": len(self.labels), "models": models,
            **{key: float(sum(mc[key])) for key in ("input", "output", "cache_read", "cache_write", "total_tokens", "cost")},
            "copied_entries": 0, "skipped_lines": self.skipped, "partial_last_line": self.partial,
            "agent": self.agent,
        }
        for key, value in row.items():
            sc[key].append(value)


def _str(value: Any) -> str | None:
    """An id cell: pi writes strings; anything else a hand edit left is shown as null."""
    return value if isinstance(value, str) else None


def _str_list(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [v for v in value if isinstance(v, str)]
