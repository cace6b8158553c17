"""Corpus-level steps over the per-file tables: fork/clone copies, session totals, order.

These run after every file's rows are in hand (from the cache, the process pool or Ray),
so all readers give the same tables.
"""

from __future__ import annotations

import os
from typing import Any

from pi_lab.corpus.schema import (
    TABLE_NAMES,
    arrow_compute,
    empty_table,
    plain_array,
    plain_scalar,
    schema_of,
    to_table,
    utf8_safe,
)

__all__ = [
    "resolve_copies", "finish_tables", "columns_to_tables", "concat_tables", "parent_files",
    "copy_map", "copy_plan", "group_by", "key_files", "order_array", "ordered_rows", "involved_files", "parent_links", "resumed_copies", "apply_copies", "session_totals", "clear_copies", "claude_code_copies",
]

_PER_ENTRY = ("entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries")
_USAGE = ("input", "output", "cache_read", "cache_write", "total_tokens", "cost")


def columns_to_tables(columns: dict[str, dict[str, list[Any]]]) -> dict[str, Any]:
    return {name: to_table(name, columns[name]) for name in TABLE_NAMES}


def concat_tables(parts: list[dict[str, Any]]) -> dict[str, Any]:
    import pyarrow as pa

    out = {}
    for name in TABLE_NAMES:
        tables = [p[name] for p in parts if p[name].num_rows]
        out[name] = pa.concat_tables(tables) if tables else empty_table(name)
    return out


def parent_files(sessions: Any) -> dict[str, str]:
    """child file -> parent file, for sessions whose ``parentSession`` is in the corpus.

    The parent is the corpus file at that path (symlinks resolved), else the one corpus file
    with the same name (a folder of sessions copied elsewhere keeps pi's unique file names).
    """
    files = sessions.column("file").to_pylist()
    parents = sessions.column("parent_session").to_pylist()
    agents = sessions.column("agent").to_pylist() if "agent" in sessions.column_names else None
    return parent_links(files, parents, agents)


def parent_links(files: list[str], parents: list[str | None], agents: list[str] | None = None) -> dict[str, str]:
    """:func:`parent_files` over plain lists (each file's ``parent_session`` and agent)."""
    if agents is not None:
        # Only pi's copies are found by (id, timestamp): a Codex fork's copies are re-stamped and
        # marked by its extractor (pi_lab.corpus.extract._prepare_other).
        parents = [p if a == "pi" else None for p, a in zip(parents, agents)]
    by_real = {}
    by_name: dict[str, list[str]] = {}
    for f in files:
        by_real.setdefault(os.path.realpath(f), f)
        by_name.setdefault(os.path.basename(f), []).append(f)
    out: dict[str, str] = {}
    for f, parent in zip(files, parents):
        if not parent:
            continue
        found = by_real.get(os.path.realpath(parent))
        if found is None:
            same = by_name.get(os.path.basename(parent.replace("\\", "/")), [])
            found = same[0] if len(same) == 1 else None
        if found is not None and found != f:
            out[f] = found
    return out


def copy_map(
    sessions: Any, entries: Any, links: dict[str, str] | None = None
) -> tuple[dict[str, str], dict[tuple[str, str], str], list[str | None]]:
    """Which entries are fork/clone copies: (child file -> parent file, (file, entry id) ->
    the session that wrote the entry first, each session's parent session id or None).

    ``entries`` needs only the ``file``, ``entry_id`` and ``timestamp`` columns, and only the
    rows of files that have or are a parent (see :func:`involved_files`). ``links``: the
    :func:`parent_files` of ``sessions`` when the caller has them already.
    """
    import pyarrow as pa

    if links is None:
        links = parent_files(sessions)
    session_of = dict(zip(sessions.column("file").to_pylist(), sessions.column("session_id").to_pylist()))
    parent_ids = [session_of.get(links[f]) if f in links else None for f in sessions.column("file").to_pylist()]
    copied_key: dict[tuple[str, str], str] = {}
    if not links:
        return links, copied_key, parent_ids
    files = entries.column("file").to_pylist()
    ids = entries.column("entry_id").to_pylist()
    stamps = entries.column("timestamp").cast(pa.int64()).to_pylist()
    keys_of: dict[str, set[tuple[str, Any]]] = {}
    for f, i, t in zip(files, ids, stamps):
        if i is not None:
            keys_of.setdefault(f, set()).add((i, t))
    # Parents before children, so a copy of a copy names the session that wrote it first.
    order: list[str] = []
    placed: set[str] = set()
    for start in links:
        chain = []
        node: str | None = start
        while node is not None and node in links and node not in placed:
            placed.add(node)
            chain.append(node)
            node = links[node]
        order.extend(reversed(chain))
    for child in order:
        parent = links[child]
        parent_keys = keys_of.get(parent, set())
        for key in keys_of.get(child, ()):
            if key in parent_keys:
                first = copied_key.get((parent, key[0]))
                copied_key[(child, key[0])] = first if first is not None else session_of[parent]
    return links, copied_key, parent_ids


def involved_files(sessions: Any, links: dict[str, str] | None = None) -> list[str]:
    links = parent_files(sessions) if links is None else links
    return sorted(set(links) | set(links.values()))


def apply_copies(table: Any, links: dict[str, str], copied_key: dict[tuple[str, str], str]) -> Any:
    """``table`` with ``copied``/``copied_from`` set for the rows that are copies."""
    pc = arrow_compute()

    if not copied_key or not table.num_rows:
        return table
    # Only the rows of child files can be copies: those are looked up in Python, the others
    # stay in Arrow (the marks are scattered back with one mask).
    child_mask = pc.is_in(table.column("file"), value_set=plain_array(sorted(links), "str"))
    rows = pc.indices_nonzero(child_mask)
    if not len(rows):
        return table
    files = pc.take(table.column("file"), rows).to_pylist()
    ids = pc.take(table.column("entry_id"), rows).to_pylist()
    flags = [False] * table.num_rows
    sources = []
    for r, f, i in zip(rows.to_pylist(), files, ids):
        source = copied_key.get((f, i))
        if source is not None:
            flags[r] = True
            sources.append(source)
    if not sources:
        return table
    mask = plain_array(flags, "bool")
    copied = pc.or_(table.column("copied"), mask)
    copied_from = pc.replace_with_mask(table.column("copied_from"), mask, plain_array(sources, "str"))
    table = table.set_column(table.schema.get_field_index("copied"), "copied", copied)
    return table.set_column(table.schema.get_field_index("copied_from"), "copied_from", copied_from)


def resolve_copies(tables: dict[str, Any]) -> dict[str, Any]:
    """Mark the rows a fork or clone copied from a parent session in the corpus.

    An entry of a child file is a copy when its parent file has an entry with the same id
    and the same timestamp; ``copied_from`` is the session the entry first appeared in
    (chains of forks are followed). Nothing else is merged.
    """
    pc = arrow_compute()

    sessions = tables["sessions"]
    entries = tables["entries"].select(["file", "entry_id", "timestamp"])
    entries = entries.filter(pc.is_in(entries.column("file"), value_set=key_files(sessions)))
    links, copied_key, sessions = copy_plan(sessions, entries)
    out = dict(tables)
    for name in _PER_ENTRY:
        out[name] = apply_copies(tables[name], links, copied_key)
    out["sessions"] = session_totals(sessions, out["model_calls"], out["entries"])
    return out


def key_files(sessions: Any) -> Any:
    """The files whose entries' (file, entry_id, timestamp) :func:`copy_plan` needs, as an
    Arrow string array (forks and their parents, Claude Code files when there are several)."""

    needed = set(involved_files(sessions))
    agents = sessions.column("agent").to_pylist()
    if agents.count("claude-code") >= 2:
        needed.update(f for f, a in zip(sessions.column("file").to_pylist(), agents) if a == "claude-code")
    return plain_array(sorted(needed), "str")


def copy_plan(sessions: Any, entries: Any) -> tuple[dict[str, str], dict[tuple[str, str], str], Any]:
    """(child file -> parent file, (file, entry id) -> the session that wrote it first,
    ``sessions`` with each one's parent session id). ``entries``: the ``file``, ``entry_id``
    and ``timestamp`` of at least the :func:`key_files` rows, each file's rows in their order
    (files may come in any order: the rows of a file are looked up by file)."""
    pc = arrow_compute()

    links = parent_files(sessions)
    involved = involved_files(sessions, links)
    forks = entries
    if involved:
        forks = entries.filter(pc.is_in(entries.column("file"), value_set=plain_array(involved, "str")))
    links, copied_key, parent_ids = copy_map(sessions, forks, links)
    resumed, resumed_key = claude_code_copies(sessions, entries)
    if resumed_key:
        links, copied_key = {**links, **resumed}, {**copied_key, **resumed_key}
    # Another agent's parent id is the file's own (a Codex fork names its parent session).
    own = sessions.column("parent_session_id").to_pylist()
    agents = sessions.column("agent").to_pylist()
    parent_ids = [p if a == "pi" else o for p, o, a in zip(parent_ids, own, agents)]
    sessions = sessions.set_column(
        sessions.schema.get_field_index("parent_session_id"), "parent_session_id", plain_array(parent_ids, "str")
    )
    return links, copied_key, sessions


def claude_code_copies(sessions: Any, entries: Any) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """Entries of a Claude Code session that an earlier session's file holds too (a resumed
    session's file starts with the history it continues, the same lines): (file -> a file it
    copied from, (file, entry id) -> the session that holds it first). Same entry id (the line's
    uuid) and timestamp; sessions in order of creation, then of the corpus's files. ccusage
    counts such a response once too (one call per message id and request id)."""
    import pyarrow as pa
    pc = arrow_compute()

    agents = sessions.column("agent").to_pylist()
    if agents.count("claude-code") < 2:
        return {}, {}
    files = sessions.column("file").to_pylist()
    mine = {f for f, a in zip(files, agents) if a == "claude-code"}
    rows = entries.select(["file", "entry_id", "timestamp"])
    rows = rows.filter(pc.is_in(rows.column("file"), value_set=plain_array(sorted(mine), "str")))
    keys_of: dict[str, list[tuple[str, Any]]] = {}
    for f, i, t in zip(rows.column("file").to_pylist(), rows.column("entry_id").to_pylist(),
                       rows.column("timestamp").cast(pa.int64()).to_pylist()):
        if i is not None:
            keys_of.setdefault(f, []).append((i, t))
    return resumed_copies(files, agents, sessions.column("created").cast(pa.int64()).to_pylist(),
                          sessions.column("session_id").to_pylist(), keys_of)


def resumed_copies(files: list[str], agents: list[str], created: list[Any], session_ids: list[str],
                   keys_of: dict[str, list[tuple[str, Any]]]) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """:func:`claude_code_copies` over plain lists: each session's file, agent, creation time
    (ms) and id, and the (entry id, timestamp ms) keys of every Claude Code file's entries."""
    session_of = dict(zip(files, session_ids))
    mine = [f for f, a in zip(files, agents) if a == "claude-code"]
    rank = {f: i for i, f in enumerate(files)}
    when = dict(zip(files, created))
    mine.sort(key=lambda f: (when[f] is None, when[f] or 0, rank[f]))
    owner: dict[tuple[str, Any], str] = {}
    links: dict[str, str] = {}
    copied_key: dict[tuple[str, str], str] = {}
    for f in mine:
        for key in keys_of.get(f, ()):
            first = owner.setdefault(key, f)
            if first != f:
                copied_key[(f, key[0])] = session_of[first]
                links.setdefault(f, first)
    return links, copied_key


def session_totals(sessions: Any, model_calls: Any, entries: Any) -> Any:
    """Usage and cost of each session's own calls (copies counted in the session that made them).

    ``model_calls`` needs ``file``, ``copied`` and the usage columns; ``entries`` ``file``,
    ``entry_id`` and ``copied`` (only copied rows matter)."""
    pc = arrow_compute()

    calls = model_calls.select(["file", *_USAGE]).filter(pc.invert(model_calls.column("copied")))
    sums: dict[str, dict[str, float]] = {}
    if calls.num_rows:
        grouped = group_by(calls, "file", [(k, "sum") for k in _USAGE])
        gfiles = grouped.column("file").to_pylist()
        for k in _USAGE:
            sums[k] = dict(zip(gfiles, grouped.column(f"{k}_sum").to_pylist()))
    files = sessions.column("file").to_pylist()
    for k in _USAGE:
        values = [float(sums.get(k, {}).get(f, 0.0) or 0.0) for f in files]
        sessions = sessions.set_column(sessions.schema.get_field_index(k), k, plain_array(values, "f64"))
    counts: dict[str, int] = {}
    copied_rows = entries.select(["file", "entry_id"]).filter(entries.column("copied"))
    if copied_rows.num_rows:
        grouped = group_by(copied_rows, "file", [("entry_id", "count")])
        counts = dict(zip(grouped.column("file").to_pylist(), grouped.column("entry_id_count").to_pylist()))
    sessions = sessions.set_column(
        sessions.schema.get_field_index("copied_entries"), "copied_entries", plain_array([counts.get(f, 0) for f in files], "i64")
    )
    return sessions


def group_by(table: Any, key: str, aggregations: list[tuple[str, str]]) -> Any:
    """``table.group_by(key).aggregate(aggregations)`` (columns ``<column>_<function>`` and
    ``key``), the same Acero plan built here: pyarrow.acero, which TableGroupBy loads, imports
    pyarrow.dataset and with it pandas (0.3-0.4 CPU s), which a pooled scan's process needs for
    nothing else (see schema.plain_array)."""
    import importlib

    try:
        _acero: Any = importlib.import_module("pyarrow._acero")  # (no type stubs: a compiled module)
    except ImportError:  # (a pyarrow without that module: its own way)
        return table.group_by(key).aggregate(aggregations)
    plan = [([column], f"hash_{function}", None, f"{column}_{function}") for column, function in aggregations]
    return _acero.Declaration.from_sequence([
        _acero.Declaration("table_source", _acero.TableSourceNodeOptions(table)),
        _acero.Declaration("aggregate", _acero.AggregateNodeOptions(plan, keys=[key])),
    ]).to_table(use_threads=True)


def clear_copies(tables: dict[str, Any]) -> dict[str, Any]:
    """The per-file rows back as the extractor made them: no copy marks, no parent id on pi's
    and Claude Code's rows (a Codex fork's marks and parent id are its extractor's and stay)."""
    pc = arrow_compute()

    def cleared(table: Any, column: str, empty: Any) -> Any:
        at = table.schema.get_field_index(column)
        # (Claude Code's marks are the corpus's too: claude_code_copies)
        recomputed = pc.is_in(table.column("agent"), value_set=plain_array(["pi", "claude-code"], "str"))
        return table.set_column(at, column, pc.if_else(recomputed, empty, table.column(column)))

    out = dict(tables)
    for name in tables:  # (any of the tables: a spill clears a batch of one table at a time)
        if name == "sessions":
            out[name] = cleared(tables[name], "parent_session_id", plain_scalar(None, "str"))
        else:
            table = cleared(tables[name], "copied", plain_scalar(False, "bool"))
            out[name] = cleared(table, "copied_from", plain_scalar(None, "str"))
    return out


def finish_tables(tables: dict[str, Any], file_order: list[str]) -> dict[str, Any]:
    """Rows in the order of ``file_order`` (stable inside a file), then copies resolved.

    ``tables`` is emptied as its tables are combined into one chunk each: the caller hands
    them over, so that at most one table is held twice at a time (batches and combined copy),
    not every table."""
    # The file column holds each name as valid UTF-8 (schema.utf8_safe): so must the order.
    order = order_array(file_order)
    out = {}
    for name in TABLE_NAMES:
        out[name] = ordered_rows(name, tables.pop(name), order)
    return resolve_copies(out)


def order_array(files: list[str]) -> Any:
    """The files as the ``file`` column holds them (valid UTF-8: schema.utf8_safe), in order."""
    return plain_array([utf8_safe(f) for f in files], "str")


def ordered_rows(name: str, table: Any, order: Any) -> Any:
    """``table`` cast to its schema in one chunk, its rows in the order of the files ``order``
    (:func:`order_array`; stable inside a file), rows of other files left out."""
    import pyarrow as pa
    pc = arrow_compute()

    if not table.num_rows:
        return empty_table(name)
    # One chunk per table: the kernels below (and the cache write) pay per chunk.
    table = table.select(schema_of(name).names).cast(schema_of(name)).combine_chunks()
    rank = pc.index_in(table.column("file"), value_set=order)
    keep = pc.is_valid(rank)
    if pc.min(keep).as_py() is False:
        table, rank = table.filter(keep), rank.filter(keep)
    # Rows read in one process are in order already; only pooled batches need the sort.
    flat = rank.combine_chunks() if hasattr(rank, "combine_chunks") else rank
    if len(flat) > 1 and pc.min(pc.pairwise_diff(flat)).as_py() < 0:
        table = table.take(pc.sort_indices(pa.Table.from_arrays([rank], names=["r"]), sort_keys=[("r", "ascending")]))
    return table
