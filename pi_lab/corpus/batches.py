"""Reading session files into tables: a batch of files in one task, in this process or in a
pool of worker processes, with each file's errors and fingerprint (``Corpus.scan`` and the Ray
reader use these)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

from pi_lab.corpus import spill as _spill
from pi_lab.corpus.files import _fingerprint
from pi_lab.corpus.progress import Progress

__all__ = ["BATCH_BYTES", "LARGE_FILE_BYTES", "LEAN_MIN_BYTES", "POOL_MIN_BYTES", "SPAWNED_POOL_MIN_BYTES",
           "extract_batch", "error_reason", "read_files", "safe_size"]

# Below this many bytes to read, starting processes costs more than it saves. Forking two
# workers takes ~0.05 s; a fork server or spawned workers (used once other threads run, as
# in a Jupyter kernel) took ~2 s, each worker importing pyarrow and the engine again.
POOL_MIN_BYTES = 2_000_000
# A file this large has its tables built in batches of rows (extract_tables), not whole columns.
LARGE_FILE_BYTES = 64_000_000
SPAWNED_POOL_MIN_BYTES = 100_000_000
# A worker's batch of files holds at most about this many bytes (see _read_files).
BATCH_BYTES = 48_000_000
# From this size a file is read lean (extract_file(lean=True): message lines kept as skeletons
# and parsed again when walked, so the parsed lines of a huge file never exist at once); a
# smaller one is parsed once, whole: on the bench corpus (306 files, 183 MB) the second and
# third parse of every message line were a quarter of the scan's CPU. A file of this size
# parsed whole holds about 4x its bytes in Python objects while it is walked.
LEAN_MIN_BYTES = 16_000_000


def extract_batch(paths: Sequence[str], spill: _spill.Spill | None = None) -> tuple[dict[str, Any], list[tuple[str, str]], list[tuple[str, tuple[int, int, int]]]]:
    """Worker task: the tables of a batch of files, their errors and their fingerprints. With
    ``spill`` (a scan reading in this process), a large file's rows go into it as they are
    made instead of into the tables returned."""
    from pi_lab.corpus.extract import extract_file
    from pi_lab.corpus.tables import columns_to_tables as to_tables
    from pi_lab.corpus.tables import concat_tables as concat

    read: list[tuple[str, tuple[int, int, int], dict[str, dict[str, list[Any]]]]] = []
    errors: list[tuple[str, str]] = []
    large: list[tuple[str, tuple[int, int, int], dict[str, Any]]] = []
    stamps_spilled: list[tuple[str, tuple[int, int, int]]] = []
    for path in paths:
        try:
            before = _fingerprint(path)
            if before[0] >= LARGE_FILE_BYTES:
                if spill is not None:
                    _spill_large_file(path, spill)
                    stamps_spilled.append((path, before))
                else:
                    large.append((path, before, _large_file_tables(path)))
                continue
            columns = extract_file(path, lean=before[0] >= LEAN_MIN_BYTES)
        except Exception as error:
            errors.append((path, error_reason(path, error)))
            continue
        read.append((path, before, columns))
    tables, errors, stamps = _extract_batch_columns(read, errors, to_tables, concat)
    if large:  # (finish_tables puts the rows back in the files' order)
        tables = concat([tables, *(t for _p, _b, t in large)])
        stamps = [*stamps, *((p, b) for p, b, _t in large)]
    return tables, errors, [*stamps, *stamps_spilled]


def _spill_large_file(path: str, spill: _spill.Spill) -> None:
    """A large file's rows into ``spill`` a batch at a time (``table_parts``): its Arrow tables
    are never whole in memory (about 0.5 KB an entry, 500 MB at a million entries). A read that
    fails halfway takes back what it gave: a file rewritten while its bodies were read back is
    read again whole, any other error is the file's."""
    from pi_lab.corpus.extract import FileChanged, table_parts

    try:
        try:
            for name, table in table_parts(path):
                spill.add({name: table})
        except FileChanged:
            spill.forget(path)
            for name, table in table_parts(path, lean=False):
                spill.add({name: table})
    except BaseException:
        spill.forget(path)
        raise


def _large_file_tables(path: str) -> dict[str, Any]:
    """A large file's tables built a batch of rows at a time (``extract_tables``): its rows as
    Python lists of a whole column each, then copied into the batch's, took about 1 GB more at
    a million entries."""
    from pi_lab.corpus.extract import extract_tables

    return extract_tables(path)


def _extract_batch_columns(read: list[Any], errors: list[tuple[str, str]], to_tables: Any, concat: Any) -> tuple[dict[str, Any], list[tuple[str, str]], list[tuple[str, tuple[int, int, int]]]]:
    """The tables of the files read as Python columns (``extract_file``), converted once."""
    if not read:
        return concat([]), errors, []
    try:
        # The batch's rows as one list per column, converted once: per file, the fixed cost
        # of ~100 conversions was as much as the conversions themselves.
        merged = {name: {key: list(values) for key, values in table.items()} for name, table in read[0][2].items()}
        for _path, _before, columns in read[1:]:
            for name, table in columns.items():
                into = merged[name]
                for key, values in table.items():
                    into[key].extend(values)
        return to_tables(merged), errors, [(path, before) for path, before, _ in read]
    except Exception:
        pass
    # Some file's rows do not convert (a bug): convert file by file to name it and keep the
    # others.
    parts, stamps = [], []
    for path, before, columns in read:
        try:
            parts.append(to_tables(columns))
        except Exception as error:
            errors.append((path, error_reason(path, error)))
            continue
        stamps.append((path, before))
    return {name: table.combine_chunks() for name, table in concat(parts).items()}, errors, stamps


def error_reason(path: str, error: BaseException) -> str:
    """The ``Corpus.errors`` reason for a file whose extraction raised ``error``.

    Bad input is expected and said plainly: a file that holds no session (``FileUnreadable``,
    pi_lab's own ``PiLabError`` such as a FIFO), one the system will not read (``OSError``) or
    bytes that do not decode. Anything else is a bug in pi_lab: the other files are still read,
    but the reason says so and a warning with the traceback is logged, so it is not mistaken
    for a bad file.
    """
    from pi_lab.corpus.reading import FileUnreadable
    from pi_lab.errors import PiLabError

    if isinstance(error, (FileUnreadable, PiLabError)):
        return str(error)
    if isinstance(error, OSError):
        return error.strerror or str(error)
    if isinstance(error, UnicodeDecodeError):
        return f"cannot decode the file: {error}"
    import logging  # only on this path: a cached scan imports as little as it can

    logging.getLogger("pi_lab.corpus").warning("internal error while reading %s", path, exc_info=error)
    return f"internal error: {type(error).__name__}: {error} (please report)"


def read_files(todo: list[str], workers: int | None, bar: Progress, spill: _spill.Spill | None = None):
    """Yield (tables, errors, stamps) per batch, from a process pool when it pays (``spill``:
    where a large file read in this process puts its rows, see :func:`extract_batch`)."""
    if not todo:
        return
    count = workers if workers is not None else (os.cpu_count() or 1)
    total_bytes = 0
    for f in todo:
        try:
            total_bytes += os.stat(f).st_size
        except OSError:
            pass
    # fork is cheapest, but unsafe once other threads run (a Jupyter kernel): then a fork server.
    if sys.platform.startswith("linux"):
        method = "fork" if threading.active_count() == 1 else "forkserver"
    else:
        method = "spawn"
    # A few small files are faster read right here.
    if count <= 1 or len(todo) < 4 or total_bytes < (POOL_MIN_BYTES if method == "fork" else SPAWNED_POOL_MIN_BYTES):
        for i in range(0, len(todo), 16):
            batch = todo[i : i + 16]
            yield extract_batch(batch, spill)
            bar.advance(len(batch), sum(safe_size(f) for f in batch) if bar.enabled else 0)
        return
    import gc
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    import pi_lab.corpus.extract  # noqa: F401  (the engine, imported once for every worker)

    # Contiguous runs of files with about the same bytes each: the batches come back in file
    # order, so their rows need no sort (a take over every table cost more than it saved).
    # At most BATCH_BYTES each: a worker holds its batch's rows as Python lists (~4x the bytes).
    n_batches = max(count * 4, -(-total_bytes // BATCH_BYTES), 1)
    target = total_bytes / n_batches
    batches: list[list[str]] = [[]]
    filled = 0
    for f in todo:
        if batches[-1] and filled >= target * len(batches) and len(batches) < n_batches:
            batches.append([])
        batches[-1].append(f)
        filled += safe_size(f)
    context = mp.get_context(method)
    # Frozen objects are skipped by the workers' collections: a collection that walked the
    # inherited heap would copy every page of it (copy-on-write), seconds of CPU on 2 cores.
    gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=min(count, len(batches)), mp_context=context,
                                 initializer=_without_pandas) as pool:
            # A few batches ahead of the one awaited, not all: finished batches wait here, in
            # this process's memory, until their turn comes.
            ahead = 2 * count
            futures = {i: pool.submit(extract_batch, b) for i, b in enumerate(batches[:ahead])}
            gc.unfreeze()  # the workers are started; this process collects as before
            for i, batch in enumerate(batches):
                if i + ahead < len(batches):
                    futures[i + ahead] = pool.submit(extract_batch, batches[i + ahead])
                yield futures.pop(i).result()  # (its rows are the caller's now)
                bar.advance(len(batch), sum(safe_size(f) for f in batch) if bar.enabled else 0)
    finally:
        gc.unfreeze()


class _PandasRefused:
    """An import finder that refuses pandas (see :func:`_without_pandas`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError(f"{name} is not imported in a corpus reader (pi_lab.corpus.batches)")
        return None


def _without_pandas() -> None:
    """A worker's start: pandas is not imported in it unless this process had it already.
    pyarrow's first conversion of a Python list imports pandas (0.3-0.4 CPU s) only to ask
    whether the list is a pandas object; a list converts the same without it. (The scan's own
    process builds its few arrays without pa.array: schema.plain_array; it used to import
    pandas before forking the workers.) A finder, not None in sys.modules: pyarrow's compiled
    import takes a None found there for the module."""
    sys.meta_path.insert(0, _PandasRefused())


def safe_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
