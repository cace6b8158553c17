"""The usage report without the tables: ``pi-lab usage --no-cache`` reads only the model calls.

:meth:`Corpus.usage` counts the ``model_calls`` rows that are not fork copies. Those rows need
no tree walk and no other table: one per assistant message entry of a file (every branch
counts), with its usage, time, model and id; a pi fork's call is a copy when its parent file
holds an entry with the same id and timestamp. This module computes exactly those rows and
sums them as the report's SQL does, so its report equals ``Corpus.scan(cache=False).usage(by)``
(``tests/corpus/test_corpus_usage_fast.py`` compares them row for row), without pyarrow, DuckDB
or the engine's walk:

* a pi file is searched for the bytes ``assistant``; only the lines holding them are parsed
  (:mod:`pi_lab.corpus.usage_lines`); a file whose first line is not a plain v3 header is
  read line by line in full (old versions are migrated first);
* the files a fork names as its parent, and the forks, are read in full for the (id,
  timestamp) of every entry (which files those are is known from their first lines);
* Claude Code and Codex files go through their adapters and the extractor (their calls are
  the extractor's, with their copy rules: a resumed Claude Code session, a Codex fork);
* files are read by forked processes when there are enough bytes, as many as free cores.

A call whose day the report cannot write as the SQL does (a year outside 1970-9999) makes the
report go through the same SQL on a small Arrow table instead.
"""

from __future__ import annotations

import gc
import os
import re
import sys
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from operator import itemgetter
from typing import Any

from pi_lab.corpus.fields import _float_usage, _ms
from pi_lab.corpus.reading import other_agent, plain_pi_header
from pi_lab.corpus.usage_lines import (
    _ASSISTANT,
    _USAGE,
    Call,
    _call_of,
    _keys,
    _letter_escape,
    _line_entry,
    _safe,
    _searched_calls,
    _tail_entry,
)

__all__ = ["usage_report", "usage_rows"]

# Below this many bytes, forking workers costs more than it saves.
POOL_MIN_BYTES = 8_000_000


def _session(path: str, header: Any, agent: str, calls: list[Call], keys: Any) -> dict[str, Any]:
    cwd = header.get("cwd")
    parent = header.get("parentSession")
    if not isinstance(parent, str):
        parent = header.get("branchedFrom") if isinstance(header.get("branchedFrom"), str) else None
    return {"file": path, "session_id": header["id"], "project": cwd if isinstance(cwd, str) else None,
            "parent_session": parent or None, "agent": agent, "created": _ms(header.get("timestamp")),
            "calls": calls, "keys": keys}


def _read_bytes(path: str) -> bytes:
    from pi_lab.session.storage import check_regular_file

    check_regular_file(path)
    with open(path, "rb") as handle:
        return handle.read()


def _searchable(data: bytes) -> dict[str, Any] | None:
    """The header of a pi file whose lines the byte searches may skip, else None: a plain v3
    header on the first line (so no other agent's file: a pi header is the first thing
    :func:`~pi_lab.formats.detect.detect_format_of` looks at) and no escape that could spell a
    letter of the keys and values searched for."""
    header = plain_pi_header(data)
    return header if header is not None and not _letter_escape(data) else None


def file_usage(path: str) -> dict[str, Any]:
    """One file's session facts and calls (``keys``: None for a pi file; every entry's for
    another agent's).

    Raises as :func:`pi_lab.corpus.extract.extract_file` does for a file with no session."""
    data = _read_bytes(path)
    header = _searchable(data)
    if header is not None:
        calls, others = _searched_calls(data)
        found = _session(path, header, "pi", calls, None)
        found["parsed_keys"] = others
        return found
    agent = other_agent(data) if data.strip() else None
    if agent is not None:
        return _other_usage(path, agent, data)
    from pi_lab.corpus.reading import FileUnreadable, read_pi_entries

    if not data.strip():
        raise FileUnreadable("empty file (no session header)")
    header, entries, _version, _skipped, _partial = read_pi_entries(data)
    del data
    return _session(path, header, "pi", [c for c in map(_call_of, entries) if c is not None], None)


# A line as pi writes an entry: its type and id first, neither with an escape.
_ENTRY_START = re.compile(rb'\{"type":"[^"\\]*","id":"([^"\\]*)"')


def file_keys(path: str, wanted: set[str]) -> tuple[bool, set[tuple[str, Any]]]:
    """(whether every line was parsed, the (id, timestamp ms) of the entries of the pi file
    ``path`` whose id is in ``wanted``).

    A line is parsed unless it shows it cannot hold such an entry: it starts as pi writes an
    entry (``{"type":"...","id":"X"``), ``"id"`` occurs once in it (a second top-level id
    would replace the first) and X is not wanted. A line holding ``assistant`` was parsed by
    :func:`file_usage` already (its calls and ``parsed_keys``): it is left to the caller. (In
    a file with an escape of a letter, or with another header, every line is parsed.)"""
    data = _read_bytes(path)
    if _searchable(data) is None:
        agent = other_agent(data) if data.strip() else None
        if agent is not None:
            from pi_lab.corpus.extract import read_other

            return True, _keys(read_other(path, agent)[1], wanted)
        from pi_lab.corpus.reading import read_pi_entries

        return True, _keys(read_pi_entries(data)[1], wanted)
    out = []
    view = memoryview(data)
    find, count, match = data.find, data.count, _ENTRY_START.match
    start = find(b"\n") + 1  # (the header line holds no entry)
    length = len(data)
    while start < length:
        end = find(b"\n", start)
        last = end == -1
        if last:
            end = length
        found = match(data, start, end)
        if (found is None or found.group(1).decode("utf-8", "replace") in wanted or count(b'"id"', start, end) != 1) \
                and find(_ASSISTANT, start, end) == -1:
            entry = _tail_entry(data[start:]) if last else _line_entry(data, view, start, end)
            if entry is not None and entry.get("type") != "session":
                out.append(entry)
        start = end + 1
    return False, _keys(out, wanted)


def _other_usage(path: str, agent: str, data: bytes | None = None) -> dict[str, Any]:
    """A Claude Code or Codex file's calls: its adapter's assistant messages (a streamed
    response merged into one call, sub-agent files folded in), and, for Claude Code, every
    entry's keys (a resumed session's copies are found over every Claude Code file). The
    usage-only readers (:mod:`pi_lab.formats.codex_usage_fast`,
    :mod:`pi_lab.formats.claude_code_usage_fast`) give them without building the entries; a
    Claude Code session they cannot read exactly goes through the adapter
    (:func:`pi_lab.corpus.extract.read_other`)."""
    if agent == "codex":
        from pi_lab.formats.codex_usage_fast import codex_usage

        rollout = codex_usage(path, data)
        header = {"id": rollout.session_id, "cwd": rollout.cwd, "timestamp": rollout.timestamp}
        calls = _codex_calls(rollout.calls)
        # (a Codex file's keys are wanted only if a pi fork names it: file_keys reads it again)
        found = _session(path, header, agent, calls, None)
        found["parent_session"] = rollout.parent_file
        return found
    from pi_lab.formats.claude_code_usage_fast import claude_code_usage

    session = claude_code_usage(path, data)
    if session is None:
        return _adapter_usage(path, agent)
    header = {"id": session.session_id, "cwd": session.cwd, "timestamp": session.timestamp}
    calls = [_claude_call(_foreign_call(c.entry_id, c.timestamp, "anthropic", c.model, c.usage, False))
             for c in session.calls]
    # The keys of the entries whose id is a line's uuid, as read: :func:`_claude_keys` keeps
    # those a call's id can equal, once every file is read.
    found = _session(path, header, agent, calls, None)
    found["raw_keys"] = session.keys
    return found


def _foreign_call(entry_id: Any, timestamp: Any, provider: Any, model: Any, usage: Any, copied: bool) -> Call:
    """The call :func:`_call_of` reads of an adapter's assistant entry with these fields."""
    return (entry_id if isinstance(entry_id, str) else None, _ms(timestamp),
            provider if isinstance(provider, str) else None, model if isinstance(model, str) else None,
            *_float_usage(usage), copied)


def _codex_calls(calls: list[Any]) -> list[Call]:
    """:func:`_foreign_call` of each Codex call (its id, provider and model are strings), the
    cells taken from its counts (:func:`_codex_cells`) without making pi's usage dict."""
    ms, cells_of = _ms, _codex_cells
    return [(c.entry_id, ms(c.timestamp), c.provider, c.model, *cells_of(c), c.copied) for c in calls]


def _codex_cells(call: Any) -> tuple[float, ...]:
    """``_float_usage(call.usage)`` from the call's counts: pi's usage of a Codex call (the
    adapter's ``pi_usage``: the cached input apart, no cache writes, the total or input plus
    output, no cost) as the float cells. tests/corpus/test_corpus_usage_codex_loop.py compares
    both ways on odd counts."""
    counts = call.counts
    if counts is None:
        return _CODEX_UNPRICED
    inp, cached, out, total = counts[0], counts[1], counts[2], counts[4]
    if cached > inp:
        cached = inp
    try:
        # (a zero total is input plus output, which is also the four counters' sum)
        return (float(inp - cached), float(out), float(cached), 0.0, float(total or (inp + out)), 0.0)
    except OverflowError:  # (a count past the float range: the general rules)
        return _float_usage(call.usage)


def _claude_call(call: Call) -> Call:
    # The adapter's totalTokens is the context the request carried; a call's total is all four
    # counters (as the extractor's parts(): pi's own and ccusage's totals).
    return (*call[:8], call[4] + call[5] + call[6] + call[7], call[9], False)


def _adapter_usage(path: str, agent: str) -> dict[str, Any]:
    """A Claude Code or Codex file's calls through its adapter, as the extractor reads them
    without its walk (:func:`pi_lab.corpus.extract.read_other`)."""
    from pi_lab.corpus.extract import read_other

    header, entries, copied_of, parent = read_other(path, agent)
    calls = []
    for entry in entries:
        call = _call_of(entry)
        if call is None:
            continue
        if agent == "claude-code":
            call = _claude_call(call)
        if copied_of and isinstance(call[0], str) and copied_of.get(call[0]) is not None:
            call = (*call[:10], True)
        calls.append(call)
    found = _session(path, header, agent, calls, _keys(entries) if agent == "claude-code" else None)
    if agent == "codex":
        found["parent_session"] = parent
    return found


def _task(item: tuple[str, Any]) -> tuple[str, Any, str | None]:
    """(path, result, error reason): a file's calls (``wanted`` None) or the keys of its
    entries whose id is in ``wanted``."""
    path, wanted = item
    try:
        return path, (file_usage(path) if wanted is None else file_keys(path, wanted)), None
    except Exception as error:
        from pi_lab.corpus.batches import error_reason

        return path, None, error_reason(path, error)


class _Readers:
    """Runs :func:`_task` over files, in two forked processes when there are enough bytes
    (largest files first, so both finish together), else in this one. Unless told how many,
    as many as there are free cores (:func:`free_cores`)."""

    def __init__(self, files: list[str], workers: int | None):
        self.sizes = {f: _size(f) for f in files}
        count = workers if workers is not None else free_cores()
        # Forking is safe only while this process runs one thread (not in a Jupyter kernel).
        self.pool = None
        if count > 1 and len(files) >= 4 and sum(self.sizes.values()) >= POOL_MIN_BYTES \
                and sys.platform.startswith("linux") and threading.active_count() == 1:
            import multiprocessing as mp

            self.pool = mp.get_context("fork").Pool(count)

    def run(self, items: list[tuple[str, Any]]) -> Iterable[tuple[str, Any, str | None]]:
        if self.pool is None:
            return map(_task, items)
        items = sorted(items, key=lambda item: -self.sizes.get(item[0], 0))
        return self.pool.imap_unordered(_task, items, chunksize=max(1, min(8, len(items) // 32)))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool.join()


def free_cores() -> int:
    """The cores other processes leave free (at least 1): a core counts as busy when the
    1-minute load average fills more than half of it. A reader forked onto a busy core only
    adds CPU time (scale_bench at load 5 on 2 cores: 0.69 CPU s in one process, 0.87 in
    three, and no sooner done), as ``make -l`` starts no job past a load."""
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # (no load average on this system)
        return cores
    return max(1, min(cores, round(cores - load)))


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def usage_rows(paths: Any, *, workers: int | None = None, progress: bool = False) -> tuple[list[dict[str, Any]], list[str], list[tuple[str, str]]]:
    """(every file's session facts with its calls, marked copies included, the files read in
    listing order, the errors), for :func:`usage_report`.

    The cyclic garbage collector is paused meanwhile (and in the readers forked meanwhile): a
    read makes a few objects per line and call, none in a cycle, and the collections their
    numbers set off found nothing (about 2% of a Codex folder's instructions)."""
    if not gc.isenabled():
        return _usage_rows(paths, workers, progress)
    gc.disable()
    try:
        return _usage_rows(paths, workers, progress)
    finally:
        gc.enable()


def _usage_rows(paths: Any, workers: int | None, progress: bool) -> tuple[list[dict[str, Any]], list[str], list[tuple[str, str]]]:
    from pi_lab.corpus.files import _listing
    from pi_lab.corpus.progress import Progress
    from pi_lab.corpus.tables import parent_links, resumed_copies

    _paths, errors, files, _stamps = _listing(paths)
    readers = _Readers(files, workers)
    bar = Progress(len(files), progress, sum(readers.sizes.values())) if progress else None
    if bar is not None:
        bar.advance(0)
    try:
        by_file: dict[str, dict[str, Any]] = {}
        for path, result, reason in readers.run([(f, None) for f in files]):
            if reason is not None:
                errors.append((path, reason))
            else:
                by_file[path] = result
            if bar is not None:
                bar.advance(1, readers.sizes.get(path, 0))
        sessions = [by_file[f] for f in files if f in by_file]
        order = [s["file"] for s in sessions]
        agents = [s["agent"] for s in sessions]
        links = parent_links(order, [s["parent_session"] for s in sessions], agents)
        # The keys that can mark a copy: the ids of a fork's calls, in the fork and its parent.
        wanted: dict[str, set[str]] = {}
        for child, parent in links.items():
            ids = {_safe(c[0]) for c in by_file[child]["calls"] if c[0] is not None}
            wanted.setdefault(child, set()).update(ids)
            wanted.setdefault(parent, set()).update(ids)
        keys = {f: by_file[f]["keys"] for f in wanted if by_file[f]["keys"] is not None}
        todo = [(f, ids) for f, ids in wanted.items() if f not in keys]
        for path, result, reason in readers.run(todo):
            if reason is not None:  # (the file changed since it was read)
                errors.append((path, reason))
                result = (True, set())
            whole, found = result
            if not whole:  # the lines file_usage parsed: its calls and the other entries
                read = by_file[path]
                ids = wanted[path]
                found.update(k for k in read["parsed_keys"] if k[0] in ids)
                found.update(k for k in ((_safe(c[0]), c[1]) for c in read["calls"] if c[0] is not None) if k[0] in ids)
            keys[path] = found
    finally:
        readers.close()
    # As tables.copy_map: an id of the fork is a copy when the parent holds an entry with that
    # id and timestamp; every row of the fork with that id is then marked.
    for child, parent in links.items():
        parent_keys = keys[parent]
        copied = {key[0] for key in keys[child] if key in parent_keys}
        if copied:
            by_file[child]["calls"] = [(*c[:10], True) if _safe(c[0]) in copied else c for c in by_file[child]["calls"]]
    if agents.count("claude-code") >= 2:
        _claude_keys(sessions)
        _links, copied_key = resumed_copies(order, agents, [s["created"] for s in sessions],
                                            [s["session_id"] for s in sessions],
                                            {s["file"]: s["keys"] for s in sessions if s["agent"] == "claude-code"})
        for s in sessions:
            if s["agent"] == "claude-code":
                s["calls"] = [(*c[:10], True) if (s["file"], _safe(c[0])) in copied_key else c for c in s["calls"]]
    return sessions, order, errors


def _claude_keys(sessions: list[dict[str, Any]]) -> None:
    """Every Claude Code session's keys that can mark a copy: a call is a copy when an earlier
    session holds an entry with its (id, timestamp), so only the keys whose id is some call's
    are kept. The usage-only reader keeps the keys of the entries whose id is a line's uuid;
    only a call of a session the adapter read can have a made-up id (``line-N``...): when one
    does, the other sessions' keys are read in full by the adapter."""
    from pi_lab.formats.claude_code_usage_fast import made_up_id

    mine = [s for s in sessions if s["agent"] == "claude-code"]
    ids = {_safe(c[0]) for s in mine for c in s["calls"] if c[0] is not None}
    complete = not any(made_up_id(i) for i in ids)
    for s in mine:
        raw = s.pop("raw_keys", None)
        if raw is None:
            continue
        if not complete:
            from pi_lab.corpus.extract import read_other

            s["keys"] = _keys(read_other(s["file"], "claude-code")[1])
            continue
        # A call's own key, and those of the other entries whose id is some call's.
        keys = {(_safe(c[0]), c[1]) for c in s["calls"]}
        for entry_id, timestamp in raw:
            if entry_id.__class__ is str and not entry_id.isascii():
                entry_id = _safe(entry_id)
            if entry_id in ids:
                keys.add((entry_id, _ms(timestamp)))
        s["keys"] = keys


# Corpus.usage's groupings (checked equal to its own in tests/corpus/test_corpus_usage_startup.py),
# restated so that a usage read does not import the scan's module for them.
_BY = ("day", "session", "model", "project", "agent")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_CODEX_UNPRICED = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # a Codex call no count priced (pi_usage(None))
_FIRST = itemgetter(0)
_DAY_MS = 86_400_000
_LAST_DAY_MS = 253_402_300_800_000  # 10000-01-01


def usage_report(paths: Any, by: str = "day", *, workers: int | None = None, progress: bool = False) -> tuple[dict[str, Any], list[tuple[str, str]], int]:
    """(``{"columns", "rows"}`` as ``pi-lab usage`` prints it, errors, sessions read): equal to
    the report of :meth:`Corpus.usage` over ``Corpus.scan(paths, cache=False)``."""
    if by not in _BY:
        from pi_lab.corpus.corpus import usage_query

        usage_query(by)  # (raises: the same refusal of an unknown grouping as Corpus.usage)
    sessions, _order, errors = usage_rows(paths, workers=workers, progress=progress)
    # Cost is summed in (file, entry id) order, as the SQL's ordered sum (the token counts are
    # whole numbers, exact in any order): the files sorted, then each file's calls by id, no id
    # last (a stable sort keeps the order of equal ones, as the one sort over every call did).
    by_file: dict[Any, list[dict[str, Any]]] = {}
    for s in sessions:
        by_file.setdefault(_safe(s["file"]), []).append(s)
    groups: dict[Any, list[Any]] = {}
    for file in sorted(by_file):
        named: list[tuple[str, Any, Call]] = []
        unnamed: list[tuple[str, Any, Call]] = []
        for s in by_file[file]:
            for c in s["calls"]:
                if not c[10]:
                    entry_id = c[0]
                    if entry_id is None:
                        unnamed.append(("", s, c))
                    else:
                        named.append((entry_id if entry_id.isascii() else _safe(entry_id), s, c))
        named.sort(key=_FIRST)
        for _id, s, c in (*named, *unnamed):
            if by == "day":
                ms = c[1]
                if ms is None:
                    key: Any = (None,)
                elif 0 <= ms < _LAST_DAY_MS:
                    key = (ms // _DAY_MS,)
                else:
                    return _sql_report(sessions, by), errors, len(sessions)
            elif by == "model":
                key = (_safe(c[2]), _safe(c[3]))
            elif by == "session":
                key = (_safe(s["session_id"]), file)
            elif by == "project":
                key = (_safe(s["project"]),)
            else:
                key = (s["agent"],)
            # One addition after another in row order, as the SQL's sums (not sum(), which
            # compensates rounding on Python 3.12+).
            sums = groups.get(key)
            if sums is None:
                # (from 0.0, as the sums start: 0.0 + -0.0 is 0.0)
                groups[key] = [1, 0.0 + c[4], 0.0 + c[5], 0.0 + c[6], 0.0 + c[7], 0.0 + c[8], 0.0 + c[9]]
            else:
                sums[0] += 1
                sums[1] += c[4]
                sums[2] += c[5]
                sums[3] += c[6]
                sums[4] += c[7]
                sums[5] += c[8]
                sums[6] += c[9]
    keyed: dict[tuple[Any, ...], list[Any]]
    if by == "day":
        keyed = {(None if k[0] is None else (_EPOCH + timedelta(days=k[0])).strftime("%Y-%m-%d"),): v for k, v in groups.items()}
        names = ["day"]
    elif by == "session":
        keyed, names = groups, ["session_id", "file"]
    elif by == "model":
        keyed, names = groups, ["provider", "model"]
    else:
        keyed, names = groups, [by]
    if by == "session":
        ordered = sorted(keyed, key=lambda k: k[1])
    else:
        ordered = sorted(keyed, key=lambda k: tuple((v is None, v or "") for v in k))
    rows = [[*k, v[0], *(float(x) for x in v[1:])] for k, v in ((k, keyed[k]) for k in ordered)]
    return {"columns": [*names, "calls", *_USAGE], "rows": rows}, errors, len(sessions)


def _sql_report(sessions: list[dict[str, Any]], by: str) -> dict[str, Any]:
    """The report by :meth:`Corpus.usage`'s own SQL over the calls as Arrow tables (times the
    Python sums cannot write as the SQL does)."""
    import duckdb
    import pyarrow as pa

    from pi_lab.corpus.corpus import usage_query
    from pi_lab.corpus.schema import arrow_safe

    cols: dict[str, list[Any]] = {k: [] for k in ("file", "session_id", "entry_id", "timestamp", "provider", "model", *_USAGE, "copied", "agent")}
    for s in sessions:
        for c in s["calls"]:
            cols["file"].append(s["file"])
            cols["session_id"].append(s["session_id"])
            cols["agent"].append(s["agent"])
            for k, v in zip(("entry_id", "timestamp", "provider", "model", *_USAGE, "copied"), c):
                cols[k].append(v)
    types = {"timestamp": pa.timestamp("ms", tz="UTC"), "copied": pa.bool_(), **{k: pa.float64() for k in _USAGE}}
    kinds = {"timestamp": "ts", "copied": "bool", **{k: "f64" for k in _USAGE}}
    calls = pa.table({k: pa.array(arrow_safe(v, kinds.get(k, "str")), types.get(k, pa.string())) for k, v in cols.items()})
    sessions_table = pa.table({"file": pa.array(arrow_safe([s["file"] for s in sessions], "str"), pa.string()),
                               "project": pa.array(arrow_safe([s["project"] for s in sessions], "str"), pa.string())})
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("model_calls", calls)
    con.register("sessions", sessions_table)
    relation = con.sql(usage_query(by))
    table = (getattr(relation, "to_arrow_table", None) or relation.arrow)()
    return {"columns": table.column_names, "rows": [list(row.values()) for row in table.to_pylist()]}
