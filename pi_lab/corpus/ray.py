"""The corpus on Ray Data: the same per-file extractor, scheduled by Ray (laptop or cluster).

    import ray
    from pi_lab.corpus.ray import read_sessions
    ray.init(num_cpus=2)                     # or ray.init(address="auto") on a cluster
    ds = read_sessions(["runs/"])            # {"sessions": Dataset, "entries": Dataset, ...}
    ds["model_calls"].groupby("model").sum("cost").show()

Each task extracts a batch of files with :func:`pi_lab.corpus.extract.extract_file` (the
function ``Corpus.scan`` uses). The driver does the fork/clone bookkeeping, which needs the
``sessions`` table, the (file, id, timestamp) keys of the files that are or have a parent in the
corpus, and the eight usage columns of ``model_calls`` for the per-session totals (summed in
row order, so the totals equal the in-process ones to the last digit). The tables equal ``Corpus.scan(paths, cache=False)``
(row order aside: Ray does not keep it). Files that cannot be read are in ``.errors``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import ray  # the top-level package (this module is pi_lab.corpus.ray; imports are absolute)

from pi_lab.corpus.extract import TABLE_NAMES
from pi_lab.corpus.schema import schema_of

__all__ = ["read_sessions", "RaySessions"]

_PER_ENTRY = ("entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries")


class RaySessions(dict):
    """``{table name: ray.data.Dataset}`` plus ``errors``: [(path, reason)]."""

    errors: list[tuple[str, str]]


def _extract_to_ipc(batch: Any) -> Any:
    """One Ray task: extract every file of the batch; one row per table, as Arrow IPC bytes
    (Ray Data needs one schema per dataset; the seven tables travel together once)."""
    import pyarrow as pa

    from pi_lab.corpus.batches import extract_batch as _extract_batch

    tables, errors, _stamps = _extract_batch(batch.column("path").to_pylist())
    names, blobs = [], []
    for name in TABLE_NAMES:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, tables[name].schema) as writer:
            writer.write_table(tables[name])
        names.append(name)
        blobs.append(sink.getvalue().to_pybytes())
    names.append("__errors__")
    blobs.append(repr(errors).encode("utf-8"))
    return pa.table({"table": names, "ipc": pa.array(blobs, pa.binary())})


def _decoder(name: str):
    def decode(batch: Any) -> Any:
        import pyarrow as pa

        parts = [pa.ipc.open_stream(blob).read_all() for blob in batch.column("ipc").to_pylist()]
        schema = schema_of(name)
        parts = [p for p in parts if p.num_rows]
        return pa.concat_tables(parts).cast(schema) if parts else schema.empty_table()

    return decode


def _copies(links: dict[str, str], copied_key: dict[tuple[str, str], str]):
    def apply(batch: Any) -> Any:
        from pi_lab.corpus.tables import apply_copies

        return apply_copies(batch, links, copied_key)

    return apply


def _to_arrow(ds: Any, name: str) -> Any:
    import pyarrow as pa

    parts = [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows]
    if not parts:
        return schema_of(name).empty_table() if name in TABLE_NAMES else pa.table({})
    return pa.concat_tables(parts)


def read_sessions(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, files_per_task: int = 16) -> RaySessions:
    """One ``ray.data.Dataset`` per corpus table for the session files under ``paths``."""
    import ast

    import pyarrow as pa

    from pi_lab.corpus.corpus import list_session_files
    from pi_lab.corpus.tables import copy_map, involved_files, session_totals

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    errors: list[tuple[str, str]] = []
    files = list_session_files(paths, errors)
    if not files:
        out = RaySessions({name: ray.data.from_arrow(schema_of(name).empty_table()) for name in TABLE_NAMES})
        out.errors = errors
        return out
    raw = (
        ray.data.from_items([{"path": f} for f in files])
        .map_batches(_extract_to_ipc, batch_size=files_per_task, batch_format="pyarrow")
        .materialize()
    )
    error_rows = raw.filter(lambda row: row["table"] == "__errors__").take_all()
    for row in error_rows:
        errors.extend(tuple(e) for e in ast.literal_eval(bytes(row["ipc"]).decode("utf-8")))
    tables: dict[str, Any] = {}
    for name in TABLE_NAMES:
        tables[name] = (
            raw.filter(lambda row, name=name: row["table"] == name)
            .map_batches(_decoder(name), batch_format="pyarrow")
            .materialize()
        )
    # Driver-side bookkeeping on small inputs only: sessions, and the keys of fork families.
    sessions = _to_arrow(tables["sessions"], "sessions")
    involved = involved_files(sessions)
    keys = schema_of("entries").empty_table().select(["file", "entry_id", "timestamp"])
    if involved:
        wanted = set(involved)
        found = _to_arrow(
            tables["entries"].select_columns(["file", "entry_id", "timestamp"]).filter(lambda row: row["file"] in wanted),
            "entries_keys",
        )
        keys = found if found.num_rows else keys
    links, copied_key, parent_ids = copy_map(sessions, keys)
    out = RaySessions()
    for name in _PER_ENTRY:
        ds = tables[name]
        if copied_key:
            ds = ds.map_batches(_copies(links, copied_key), batch_format="pyarrow")
        out[name] = ds
    usage_cols = ["file", "copied", "input", "output", "cache_read", "cache_write", "total_tokens", "cost"]
    calls = _to_arrow(out["model_calls"].select_columns(usage_cols), "calls")
    if not calls.num_rows:
        calls = schema_of("model_calls").empty_table().select(usage_cols)
    copied_entries = _to_arrow(out["entries"].select_columns(["file", "entry_id", "copied"]).filter(lambda r: r["copied"]), "copied")
    if not copied_entries.num_rows:
        copied_entries = schema_of("entries").empty_table().select(["file", "entry_id", "copied"])
    sessions = sessions.set_column(
        sessions.schema.get_field_index("parent_session_id"), "parent_session_id", pa.array(parent_ids, pa.string())
    )
    sessions = session_totals(sessions, calls, copied_entries)
    out["sessions"] = ray.data.from_arrow(sessions)
    order = {name: out[name] for name in TABLE_NAMES}
    result = RaySessions(order)
    result.errors = errors
    return result
