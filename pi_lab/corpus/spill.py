"""A corpus's tables at any size: rows written to disk batch by batch, never all in memory.

``Corpus.scan`` on a large folder hands each batch of rows it reads (from the process pool or
the cache) to :class:`Spill`, which casts it to the table's schema and appends it to one Arrow
IPC file per table, remembering where each session file's rows are. :meth:`Spill.finish` then
writes the finished tables a bounded chunk at a time, in the files' order, with the fork and
clone copies marked and the sessions' totals computed, into a :class:`TableSink`: a private
temporary folder (the tables are memory-mapped back and their files unlinked) or the cache's
new generation (:meth:`pi_lab.corpus.cache.Cache.new_generation`).

The finished tables equal :func:`pi_lab.corpus.tables.finish_tables`'s (tests/corpus/
test_corpus_spill.py): the same rows in the same order, the copies found from the same keys,
and each session's totals summed by the same kernel over the same single-chunk columns.

Memory: one chunk of rows at a time (``CHUNK_BYTES``), plus the columns the corpus-level steps
need whole (the model calls' usage, the fork files' entry keys, the sessions). The spilled
files are read through a memory map whose pages are let go (``MADV_DONTNEED``) after each
chunk: the kernel keeps them in its page cache, and they are not counted in this process.
The temporary folder is made private (mode 0700) under the system's temporary folder, never
beside the session files, and removed when the scan ends, also on error.
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from pi_lab.corpus.schema import TABLE_NAMES, arrow_compute, empty_table, plain_array, schema_of, utf8_safe
from pi_lab.corpus.tables import (
    apply_copies,
    clear_copies,
    copy_plan,
    key_files,
    order_array,
    ordered_rows,
    session_totals,
)

__all__ = ["CHUNK_BYTES", "SPILL_MIN_BYTES", "Spill", "TableSink", "TempTables", "file_array", "finish_scan"]

# From this many bytes of session files a scan spills its rows (below, the tables are held in
# memory and finished whole: finish_tables). Tests set it to 0 to compare both ways.
SPILL_MIN_BYTES = 256_000_000
# A spilled batch or a finished chunk holds about this many bytes of Arrow data.
CHUNK_BYTES = 64_000_000

_PER_ENTRY = ("entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries")
_USAGE = ("input", "output", "cache_read", "cache_write", "total_tokens", "cost")


class TableSink(Protocol):
    """Where :meth:`Spill.finish` writes the finished tables, one at a time."""

    def table(self, name: str) -> Any:
        """A context manager giving a function that writes one chunk (a pyarrow.Table)."""
        ...


class Spill:
    """The spilled rows of one scan (see the module's notes); use it as a context manager,
    so that its folder goes whatever happens."""

    def __init__(self) -> None:
        # mkdtemp makes the folder with mode 0700, under TMPDIR (or /tmp), never the sessions'.
        self.dir = tempfile.mkdtemp(prefix="pi-lab-corpus-")
        self._writers: dict[str, Any] = {}
        self._batches: dict[str, list[tuple[int, float]]] = {name: [] for name in _PER_ENTRY}  # (rows, bytes per row)
        # table -> file (as the file column holds it) -> [(batch, first row, rows)], in the file's row order
        self._runs: dict[str, dict[str, list[tuple[int, int, int]]]] = {name: {} for name in _PER_ENTRY}
        self._sessions: list[Any] = []  # (one row per file: kept in memory)

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def close(self) -> None:
        for writer in self._writers.values():
            try:
                writer.close()
            except Exception:  # (already closed, or the disk is full: the folder goes anyway)
                pass
        self._writers.clear()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _path(self, name: str) -> str:
        return os.path.join(self.dir, f"{name}.spill.arrow")

    # ------------------------------------------------------------------ writing batches

    def add(self, tables: dict[str, Any]) -> None:
        """Append one batch of rows (a table per name, any files, each file's rows in order)."""
        import pyarrow as pa

        for name in TABLE_NAMES:
            table = tables.get(name)
            if table is None or not table.num_rows:
                continue
            schema = schema_of(name)
            table = table.select(schema.names).cast(schema)
            if name == "sessions":
                self._sessions.append(table)
                continue
            writer = self._writers.get(name)
            if writer is None:
                writer = self._writers[name] = pa.ipc.new_file(self._path(name), schema)
            for batch in table.to_batches():
                for piece in _pieces(batch):
                    self._index(name, piece)
                    writer.write_batch(piece)

    def forget(self, file: str) -> None:
        """Drop the rows added so far for ``file`` (its name as given to the scan): a large file
        is spilled as it is read, and a read that fails halfway is read again or reported."""
        pc = arrow_compute()

        name = utf8_safe(file)
        for runs in self._runs.values():
            runs.pop(name, None)
        self._sessions = [t.filter(pc.not_equal(t.column("file"), name)) for t in self._sessions]

    def add_cached(self, tables: dict[str, Any], keep: Any, maps: list[mmap.mmap]) -> None:
        """Append the cached rows of the files ``keep`` (an Arrow string array as the file
        column holds them; None: every row) with their copy marks cleared, a batch at a time;
        ``maps``: the cache files under ``tables``, whose pages are let go after each batch."""
        import pyarrow as pa
        pc = arrow_compute()

        for name in TABLE_NAMES:
            for batch in tables[name].to_batches():
                for piece in _pieces(batch):
                    part = pa.Table.from_batches([piece])
                    if keep is not None:
                        part = part.filter(pc.is_in(part.column("file"), value_set=keep))
                    self.add(clear_copies({name: part}))
                    for mapped in maps:
                        _let_go(mapped)

    def _index(self, name: str, batch: Any) -> None:
        pc = arrow_compute()

        number = len(self._batches[name])
        self._batches[name].append((batch.num_rows, batch.nbytes / batch.num_rows))
        runs = pc.run_end_encode(batch.column(batch.schema.get_field_index("file")))
        start = 0
        into = self._runs[name]
        for file, end in zip(runs.values.to_pylist(), runs.run_ends.to_pylist()):
            into.setdefault(file, []).append((number, start, end - start))
            start = end

    # ------------------------------------------------------------------ finishing

    def finish(self, files: list[str], sink: TableSink) -> None:
        """Write the finished tables of ``files`` (in that order) into ``sink``."""
        import pyarrow as pa

        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        order = order_array(files)
        sessions = ordered_rows("sessions", pa.concat_tables(self._sessions) if self._sessions else empty_table("sessions"), order)
        links, copied_key, sessions = copy_plan(sessions, self._keys(key_files(sessions)))
        calls: list[Any] = []
        copied: list[Any] = []
        names = order.to_pylist()
        for name in _PER_ENTRY:
            with sink.table(name) as write:
                for chunk in self._chunks(name, names):
                    chunk = apply_copies(chunk, links, copied_key)
                    if name == "model_calls":
                        calls.append(_own_calls(chunk, order))
                    elif name == "entries":
                        copied.append(chunk.select(["file", "entry_id", "copied"]).filter(chunk.column("copied")))
                    write(chunk)
        # The totals over the model calls' usage columns in one chunk, as finish_tables sums
        # them (a sum of doubles depends on how the rows are split): the same rows (those not
        # copied) in the same order, the file as an index into the files, not its name again.
        calls_table = pa.concat_tables(calls) if calls else empty_table("model_calls").select(["file", "copied", *_USAGE])
        entries = pa.concat_tables(copied) if copied else empty_table("entries").select(["file", "entry_id", "copied"])
        sessions = session_totals(sessions, calls_table.combine_chunks(), entries)
        with sink.table("sessions") as write:
            write(sessions)

    @contextmanager
    def _reading(self, name: str) -> Iterator[tuple[Any, mmap.mmap] | None]:
        """The spilled file of ``name`` (an IPC reader and its map), None when it has no rows."""
        import pyarrow as pa

        if not self._batches[name]:
            yield None
            return
        with open(self._path(name), "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield pa.ipc.open_file(pa.py_buffer(mapped)), mapped
        finally:
            try:
                mapped.close()
            except BufferError:  # (a view still alive: the map goes with it)
                pass

    def _keys(self, needed: Any) -> Any:
        """``file``, ``entry_id`` and ``timestamp`` of the entries of the files ``needed``, in
        the order they were spilled (found by their runs: rows of a file that was
        :meth:`forget`-ten stay in the spilled file but belong to no run)."""
        import pyarrow as pa

        keys = ["file", "entry_id", "timestamp"]
        ranges: dict[int, list[tuple[int, int]]] = {}
        runs = self._runs["entries"]
        for file in needed.to_pylist():
            for number, start, rows in runs.get(file, ()):
                ranges.setdefault(number, []).append((start, rows))
        parts = []
        if ranges:
            with self._reading("entries") as source:
                if source is not None:
                    reader, mapped = source
                    for number in sorted(ranges):
                        batch = reader.get_batch(number).select(keys)
                        for start, rows in sorted(ranges[number]):
                            parts.append(pa.Table.from_batches([batch.slice(start, rows)]).combine_chunks())
                        del batch
                        _let_go(mapped)
        return pa.concat_tables(parts) if parts else empty_table("entries").select(keys)

    def _chunks(self, name: str, files: list[str]) -> Iterator[Any]:
        """The rows of ``name`` in the order of ``files``, a chunk of whole files at a time."""
        import pyarrow as pa

        with self._reading(name) as source:
            if source is None:
                return
            reader, mapped = source
            runs, sizes = self._runs[name], self._batches[name]
            pending: list[list[int]] = []
            weight = 0.0
            for file in files:
                for number, start, rows in runs.get(file, ()):
                    last = pending[-1] if pending else None
                    if last is not None and last[0] == number and last[1] + last[2] == start:
                        last[2] += rows
                    else:
                        pending.append([number, start, rows])
                    weight += rows * sizes[number][1]
                if weight >= CHUNK_BYTES:
                    yield _gather(reader, pending, schema_of(name))
                    _let_go(mapped)
                    pending, weight = [], 0.0
            if pending:
                yield _gather(reader, pending, schema_of(name))
                _let_go(mapped)
            del reader
            pa.default_memory_pool().release_unused()


def _own_calls(chunk: Any, order: Any) -> Any:
    """The rows of a chunk of model calls that session_totals sums (not copied): file (as a
    dictionary over ``order``), copied and the usage columns."""
    import pyarrow as pa
    pc = arrow_compute()

    own = chunk.filter(pc.invert(chunk.column("copied"))).select(["file", "copied", *_USAGE])
    index = pc.index_in(own.column("file"), value_set=order).combine_chunks()
    return own.set_column(0, "file", pa.DictionaryArray.from_arrays(index, order))


def file_array(files: Any) -> Any:
    """``files`` as the file column holds them (schema.utf8_safe), sorted, as an Arrow array."""
    return plain_array(sorted(utf8_safe(f) for f in files), "str")


def _gather(reader: Any, runs: list[list[int]], schema: Any) -> Any:
    """One chunk: the rows ``runs`` ([batch, first row, rows]) of the spilled file, copied."""
    import pyarrow as pa

    pieces = [reader.get_batch(number).slice(start, rows) for number, start, rows in runs]
    return pa.Table.from_batches(pieces, schema).combine_chunks()


def _pieces(batch: Any) -> list[Any]:
    """``batch`` cut into pieces of about ``CHUNK_BYTES`` (a cached table is one batch)."""
    count = -(-batch.nbytes // CHUNK_BYTES)
    if count <= 1:
        return [batch]
    step = -(-batch.num_rows // count)
    return [batch.slice(at, step) for at in range(0, batch.num_rows, step)]


def _let_go(mapped: mmap.mmap) -> None:
    """Drop the pages of a read-only map from this process (they stay in the page cache)."""
    advise = getattr(mapped, "madvise", None)
    flag = getattr(mmap, "MADV_DONTNEED", None)
    if advise is not None and flag is not None:
        advise(flag)


def finish_scan(spill: Spill, order: list[str], store: Any, stamps: dict[str, tuple[int, int, int]],
                errors: list[tuple[str, str]]) -> tuple[dict[str, Any], str | None]:
    """The finished tables of a spilled scan, written into a new generation of the cache
    ``store`` (a :class:`pi_lab.corpus.cache.Cache`, or None) and mapped from there, or, without
    a cache or when it cannot be written, into the spill's folder; and the generation's name."""
    generation = store.new_generation() if store is not None else None
    if generation is not None:
        try:
            with generation:
                spill.finish(order, generation)
                generation.commit(stamps)
                return dict(generation.mapped()), generation.name
        except OSError as error:
            errors.append((str(generation.cache.dir), f"cache not written: {error.strerror or error}"))
    out = TempTables(spill.dir)
    spill.finish(order, out)
    return out.tables(), None


class TempTables:
    """A :class:`TableSink` in a private folder: each table written to a file there, then
    memory-mapped back (:meth:`tables`) and its file unlinked (the map keeps its pages)."""

    def __init__(self, folder: str):
        self.folder = folder
        self._paths: dict[str, str] = {}

    @contextmanager
    def table(self, name: str) -> Iterator[Any]:
        import pyarrow as pa

        path = os.path.join(self.folder, f"{name}.arrow")
        with pa.OSFile(path, "wb") as handle, pa.ipc.new_file(handle, schema_of(name)) as writer:
            yield writer.write_table
        self._paths[name] = path

    def tables(self) -> dict[str, Any]:
        import pyarrow as pa

        out = {}
        for name in TABLE_NAMES:
            path = self._paths[name]
            out[name] = pa.ipc.open_file(pa.memory_map(path)).read_all()
            try:
                os.unlink(path)
            except OSError:  # (a system that keeps open files: the folder goes when the scan ends)
                pass
        return out
