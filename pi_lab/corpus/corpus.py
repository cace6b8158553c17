"""``Corpus``: many session files as Arrow tables, read in parallel and cached."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, cast

from pi_lab.corpus import spill as _spill
from pi_lab.corpus.batches import read_files, safe_size

# The extractor (and the engine it imports) loads only when a file has to be read.
from pi_lab.corpus.cache import Cache, CacheUnusable, MappedTable, read_all
from pi_lab.corpus.files import (
    _listing,
    claude_code_session_paths,
    codex_session_paths,
    default_cache_dir,
    default_session_paths,
    is_claude_subagent_file,
    list_session_files,
)
from pi_lab.corpus.progress import Progress as _Progress
from pi_lab.corpus.schema import TABLE_NAMES, arrow_compute
from pi_lab.corpus.tables import clear_copies, concat_tables, finish_tables
from pi_lab.errors import PiLabError

__all__ = [
    "Corpus", "EntryNotInCorpus", "SessionNotInCorpus", "default_cache_dir", "default_session_paths", "list_session_files",
    "claude_code_session_paths", "codex_session_paths", "is_claude_subagent_file",
]

_USAGE = ("input", "output", "cache_read", "cache_write", "total_tokens", "cost")
_BY = ("day", "session", "model", "project", "agent")


def cached_report(paths: Any, cache: Any, name: str) -> Any:
    """The report ``name`` kept by :meth:`Corpus.keep_report` for exactly these files, or None.

    Served only when a scan would use the cached tables as they are: every file listed is
    cached with the same size, mtime and inode, no cached file went away, and listing gave
    no error. Reads JSON only (no pyarrow, no DuckDB), so a cached ``pi-lab usage`` costs
    little more than starting Python.
    """
    root = _resolve_cache(cache)
    if root is None:
        return None
    paths, errors, files, stamps = _listing(paths)
    if errors or not files:
        return None
    store = Cache.for_paths(root, paths)
    live = store.current()
    if live is None:
        return None
    generation, cached = live
    if len(cached) != len(files) or any(cached.get(f) != stamps[f] for f in files):
        return None
    return store.read_report(generation, name)


def usage_query(by: str) -> str:
    """The SQL of :meth:`Corpus.usage` (over ``model_calls`` and, by project, ``sessions``)."""
    if by not in _BY:
        raise ValueError(f"by must be one of {', '.join(_BY)} (got {by!r})")
    # Token counts are whole numbers (exact in doubles); costs are not, and a parallel sum
    # adds them in a different order each run: summed in row order, the report repeats.
    sums = ", ".join(
        f"coalesce(sum(c.{k}{' ORDER BY c.file, c.entry_id' if k == 'cost' else ''}), 0)::DOUBLE AS {k}" for k in _USAGE
    )
    base = "FROM model_calls c WHERE NOT c.copied"
    if by == "day":
        query = f"SELECT strftime(c.timestamp AT TIME ZONE 'UTC', '%Y-%m-%d') AS day, count(*) AS calls, {sums} {base} GROUP BY 1 ORDER BY 1 NULLS LAST"
    elif by == "session":
        query = (
            f"SELECT c.session_id, c.file, count(*) AS calls, {sums} {base} GROUP BY 1, 2 ORDER BY 2"
        )
    elif by == "agent":
        query = f"SELECT c.agent, count(*) AS calls, {sums} {base} GROUP BY 1 ORDER BY 1"
    elif by == "model":
        query = f"SELECT c.provider, c.model, count(*) AS calls, {sums} {base} GROUP BY 1, 2 ORDER BY 1, 2 NULLS LAST"
    else:
        query = (
            f"SELECT s.project, count(*) AS calls, {sums} FROM model_calls c JOIN sessions s ON s.file = c.file "
            f"WHERE NOT c.copied GROUP BY 1 ORDER BY 1 NULLS LAST"
        )
    return query


class _MovableLeaf(Protocol):
    def branch(self, branch_from_id: str) -> None: ...


class SessionNotInCorpus(PiLabError):
    """``Corpus.open`` was given a session that the corpus does not hold (or holds twice)."""


class EntryNotInCorpus(PiLabError):
    """``Corpus.open`` was given an entry that the session's file does not hold."""


def _resolve_cache(cache: Any) -> Path | None:
    if cache is False or cache is None:
        return None
    if cache is True:
        return default_cache_dir()
    return Path(os.fspath(cache)).expanduser()


class _Table:
    """A table attribute of :class:`Corpus`: a cached table is read (its bytes checked) when
    it is first asked for (:class:`pi_lab.corpus.cache.MappedTable`)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, corpus: Corpus | None, owner: type | None = None) -> Any:
        if corpus is None:
            return self
        return corpus._table(self.name)

    def __set__(self, corpus: Corpus, table: Any) -> None:
        corpus._tables[self.name] = table


class Corpus:
    """Session files as Arrow tables; see :mod:`pi_lab.corpus` for the counting rules."""

    sessions = _Table()
    entries = _Table()
    messages = _Table()
    model_calls = _Table()
    tool_calls = _Table()
    compactions = _Table()
    branch_summaries = _Table()

    def __init__(self, tables: dict[str, Any], errors: list[tuple[str, str]] | None = None, files: list[str] | None = None):
        self._tables: dict[str, Any] = {name: tables[name] for name in TABLE_NAMES}
        # How this corpus was scanned (paths, workers, cache folder): to read the sessions
        # again when a cached table turns out not to be what was written.
        self._scanned: tuple[Any, int | None, Path] | None = None
        self.errors: list[tuple[str, str]] = list(errors or [])
        self.files: list[str] = list(files if files is not None else tables["sessions"].column("file").to_pylist())
        self.stats: dict[str, Any] = {}
        self._duck: Any = None
        self._registered: set[str] = set()  # the tables registered with _duck
        # (re-entrant: a table first read under it may read the sessions again, which resets _duck)
        self._duck_lock = threading.RLock()
        self._generation: tuple[Cache, str] | None = None
        self.notes_path: str | None = None
        """The notes file (``pi_lab.research.NoteStore``); None: ``pi-lab-notes.jsonl`` in the
        current folder, beside the notebook."""

    @property
    def tables(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in TABLE_NAMES}

    def _table(self, name: str) -> Any:
        table = self._tables[name]
        if not isinstance(table, MappedTable):
            return table
        try:
            table = self._tables[name] = table.read()
        except CacheUnusable as problem:
            self._read_again(problem)
            table = self._tables[name]
        return table

    def _read_again(self, problem: CacheUnusable) -> None:
        """A cached table is not what was written: the sessions are read again (and cached
        anew), and every table of this corpus is replaced by theirs."""
        assert self._scanned is not None and self._generation is not None  # (only a cached scan maps tables)
        paths, workers, root = self._scanned
        self._generation[0].warn(problem, "the sessions are read again")
        again = type(self)._scan(paths, workers, root, False, trust_cache=False)
        with self._duck_lock:
            self._tables = again._tables
            self._duck = None  # (it holds the tables it was given)
        self.errors, self.files, self.stats, self._generation = again.errors, again.files, again.stats, again._generation

    def __repr__(self) -> str:
        counts = ", ".join(f"{n}={getattr(self, n).num_rows}" for n in TABLE_NAMES)
        return f"Corpus({counts}, errors={len(self.errors)})"

    # ------------------------------------------------------------------ reading

    @classmethod
    def scan(
        cls,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
        *,
        workers: int | None = None,
        cache: bool | str | os.PathLike[str] = True,
        progress: bool = False,
    ) -> Corpus:
        """Read every session file under ``paths`` (folders recursively).

        Files of pi, Claude Code and Codex are recognised by their content (the ``agent``
        column of every table); a Claude Code sub-agent's file is read with its session.
        ``paths`` defaults to every agent's sessions folder (:func:`default_session_paths`:
        pi's ``$PI_CODING_AGENT_DIR/sessions`` or ``~/.pi/agent/sessions``, a missing one
        giving one line in ``errors``; Claude Code's and Codex's where they exist).
        ``workers``: processes reading files (default: the cores; 1 reads in this process).
        ``cache``: True (``$XDG_CACHE_HOME/pi_lab/corpus``), False, or a folder; a file is
        re-read only when its size, mtime or inode changed. The cache is a private folder
        checked on every read (:mod:`pi_lab.corpus.cache`); one that cannot be trusted is
        read again, with a warning. Session files are only read.
        """
        return cls._scan(paths, workers, _resolve_cache(cache), progress, trust_cache=True)

    @classmethod
    def _scan(cls, paths: Any, workers: int | None, root: Path | None, progress: bool, *, trust_cache: bool) -> Corpus:
        """:meth:`scan` into ``root`` (None: no cache); ``trust_cache=False`` reads every file
        again (a cached table failed its check) and caches the tables anew."""
        started = time.perf_counter()
        paths, errors, files, stamps = _listing(paths)
        store = None
        generation: str | None = None
        cached_stamps: dict[str, tuple[int, int, int]] = {}
        cached_tables: dict[str, Any] | None = None
        maps: list[Any] = []  # (the cache's files under cached_tables, once read)
        if root is not None:
            store = Cache.for_paths(root, paths)
            if trust_cache:
                cached_stamps, cached_tables, generation = store.load()
            fresh = {f for f in files if cached_stamps.get(f) == stamps[f]}
            if cached_tables is not None and fresh and (set(cached_stamps) != fresh or len(fresh) < len(files)):
                # Files changed, went or came: the cached rows of the others are taken from
                # every table (each checked now).
                maps = [t.mapped for t in cached_tables.values() if isinstance(t, MappedTable)]
                cached_tables = read_all(store, cached_tables)
            if cached_tables is None:
                cached_stamps = {}
        fresh = {f for f in files if cached_stamps.get(f) == stamps[f]}
        todo = [f for f in files if f not in fresh]

        parts: list[dict[str, Any]] = []
        everything_cached = cached_tables is not None and set(cached_stamps) == fresh
        # A large corpus's rows go to disk batch by batch (pi_lab.corpus.spill), not into memory.
        spilling = bool(todo) and sum(stamps[f][0] for f in files) >= _spill.SPILL_MIN_BYTES
        if cached_tables is not None and fresh and not spilling:  # (spilled below, a batch at a time)
            if everything_cached:
                parts.append(cached_tables)  # (mapped: pyarrow is imported when one is read)
            else:
                pc = arrow_compute()
                keep = _spill.file_array(fresh)  # (as the file column holds them)
                parts.append({n: t.filter(pc.is_in(t.column("file"), value_set=keep)) for n, t in cached_tables.items()})
        bar = _Progress(len(todo), progress, sum(safe_size(f) for f in todo) if progress else 0)
        bar.advance(0)
        read_stamps: dict[str, tuple[int, int, int]] = {}
        with _spill.Spill() if spilling else contextlib.nullcontext() as spill:
            if spill is not None and cached_tables is not None and fresh:
                # Cached rows carry the copy marks of the corpus they were saved with; the marks
                # are recomputed for the corpus as it is now.
                spill.add_cached(cached_tables, None if everything_cached else _spill.file_array(fresh), maps)
            for tables, batch_errors, batch_stamps in read_files(todo, workers, bar, spill):
                if spill is not None:
                    spill.add(tables)
                else:
                    parts.append(tables)
                errors.extend(batch_errors)
                read_stamps.update(batch_stamps)
            ok = set(fresh) | set(read_stamps)
            order = [f for f in files if f in ok]
            kept = {f: (cached_stamps[f] if f in fresh else read_stamps[f]) for f in order}
            if spill is not None:
                finished, generation = _spill.finish_scan(spill, order, store, kept, errors)
            elif everything_cached and not read_stamps and cached_tables is not None:
                # The cache holds the finished tables of exactly these files (same listing, same
                # order): nothing to recompute.
                finished = cached_tables
            else:
                if parts and cached_tables is not None and fresh:
                    parts[0] = clear_copies(parts[0])  # (as above)
                merged = concat_tables(parts)
                parts.clear()  # (finish_tables lets go of each table's batches once it has combined them)
                finished = finish_tables(merged, order)
                del merged
                generation = None
                if store is not None:
                    try:
                        generation = store.save(kept, finished)
                    except OSError as error:
                        errors.append((str(store.dir), f"cache not written: {error.strerror or error}"))
        corpus = cls(finished, errors, order)
        # The cache generation holding exactly these tables, if any (for keep_report).
        corpus._generation = (store, generation) if store is not None and generation is not None else None
        if root is not None:
            corpus._scanned = (paths, workers, root)
        corpus.stats = {"files": len(files), "read": len(todo), "cached": len(fresh), "seconds": time.perf_counter() - started}
        return corpus

    # ------------------------------------------------------------------ questions

    def sql(self, query: str) -> Any:
        """Run ``query`` on DuckDB over the tables (by their names); returns a pyarrow.Table."""
        with self._duck_lock:
            # Only the tables the query names are registered (a cached table is checked when
            # first read: usage reads model_calls alone); one found wrong reads the sessions
            # again (_read_again), and every table is then taken from the new ones. A query
            # naming none of them (SHOW TABLES, information_schema) gets them all.
            lowered = query.lower()  # (DuckDB's names are case-insensitive)
            named = [name for name in TABLE_NAMES if name in lowered] or list(TABLE_NAMES)
            tables = {name: self._table(name) for name in named}
            if any(self._tables[name] is not table for name, table in tables.items()):
                tables = {name: self._table(name) for name in named}
            if self._duck is None:
                import duckdb

                con = duckdb.connect()
                try:  # days and hours in UTC whatever the machine's zone (as usage() reports them)
                    con.execute("SET TimeZone = 'UTC'")
                except duckdb.Error:
                    pass
                self._duck = con
                self._registered = set()
            for name, table in tables.items():
                if name not in self._registered:
                    self._duck.register(name, table)
                    self._registered.add(name)
            if "annotations" in query:
                # the notes change while a researcher works: read them at each query that names them
                self._duck.register("annotations", self.annotations)
            relation = self._duck.sql(query)
            if relation is None:  # a statement without a result (SET, CREATE ...)
                import pyarrow as pa

                return pa.table({})
            # DuckDB 2.x calls it to_arrow_table; 1.x returns the table from arrow().
            fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
            return fetch()

    def usage(self, by: str = "day") -> Any:
        """Calls, tokens and cost per day (UTC, of the call), session, model, project or agent.

        Every assistant message of every branch is one call; rows a fork or clone copied from
        a parent in the corpus are left out (the parent counts them).
        """
        return self.sql(usage_query(by))

    def keep_report(self, name: str, report: Any) -> None:
        """Keep a JSON-able ``report`` computed from these tables in their cache generation,
        for :func:`cached_report` (nothing is kept for a corpus that is not cached)."""
        if self._generation is not None:
            store, generation = self._generation
            store.write_report(generation, name, report)

    def open(self, session: str, entry_id: str | None = None, *, leaf: bool = False, **options: Any) -> Any:
        """A viewer on one session of the corpus, at ``entry_id``: a
        :class:`~pi_lab.widget.SessionWidget` on its file, read-only, with that entry selected
        (and, with ``leaf=True``, the leaf moved there in memory: the tree and the gauge as
        the model saw them at that entry). ``session`` is a ``session_id`` or one of the
        corpus's files; when a session id names several files (a copied file keeps its id),
        the one that wrote ``entry_id`` first is chosen. An entry the default filter hides
        (a label, a tool result) is shown with the ``all`` filter. ``options`` go to the widget;
        its notes are the corpus's (:attr:`notes`, where ``c.ask`` writes its findings) unless
        ``notes=`` says otherwise, so the findings show as marks on the entries they cite.
        """
        from pi_lab.formats import open_session
        from pi_lab.widget import SessionWidget

        path = self._file_of(session, entry_id)
        # Whichever agent wrote it (Claude Code and Codex files open through their adapters).
        sm = open_session(path, lazy=False)
        if entry_id is not None:
            if sm.get_entry(entry_id) is None:
                raise EntryNotInCorpus(f"no entry {entry_id!r} in {path} (it may have changed since the scan)")
            if leaf:
                # Every reader open_session returns moves its leaf in memory; the protocol
                # (ReadableSession) does not declare it yet.
                cast(_MovableLeaf, sm).branch(entry_id)
        options.setdefault("notes", self.notes)
        widget = SessionWidget(sm, selected_id=entry_id, **options)
        if entry_id is not None and widget.selected_id != entry_id and "filter_mode" not in options:
            # Hidden by the default filter: the selection fell back to a visible ancestor.
            widget.close()
            widget = SessionWidget(sm, selected_id=entry_id, filter_mode="all", **options)
        return widget

    def _file_of(self, session: str, entry_id: str | None) -> str:
        """The file ``Corpus.open`` shows for ``session`` (an id or a file of the corpus)."""
        wanted = os.path.abspath(os.path.expanduser(os.fspath(session)))
        if wanted in self.files:
            return wanted
        pc = arrow_compute()

        rows = self.sessions.filter(pc.equal(self.sessions.column("session_id"), session))
        files = rows.column("file").to_pylist()
        if not files:
            raise SessionNotInCorpus(f"no session {session!r} in the corpus (pass a session_id or one of c.files)")
        if len(files) > 1 and entry_id is not None:
            entries = self.entries
            mask = pc.and_(pc.is_in(entries.column("file"), value_set=rows.column("file")),
                           pc.and_(pc.equal(entries.column("entry_id"), entry_id), pc.invert(entries.column("copied"))))
            first = entries.filter(mask).column("file").to_pylist()
            files = first or files
        if len(files) > 1:
            raise SessionNotInCorpus(f"session {session!r} is in {len(files)} files ({', '.join(files)}); "
                                     "pass the file instead")
        return files[0]

    def links(self, table: Any, *, base: str | os.PathLike[str] | None = None) -> Any:
        """``table`` (any corpus table or query result with a ``file`` column, and ``entry_id``)
        shown with an "open" link per row: in JupyterLab a click opens the session in the Pi
        Session viewer with that entry selected. Links are relative to ``base`` (default: the
        notebook's folder); :meth:`open` shows a session in a widget from anywhere."""
        from pi_lab.corpus.links import LinkedTable

        return LinkedTable(table, base)

    # -- research: notes beside the sessions, questions asked by a model (pi_lab.research)

    @property
    def notes(self) -> Any:
        """The :class:`~pi_lab.research.NoteStore` the corpus's notes and findings go to."""
        from pi_lab.research.corpus_api import corpus_notes

        return corpus_notes(self)

    @property
    def annotations(self) -> Any:
        """Every note on this corpus's sessions, a person's or a model's finding (``source``
        names the model and the question), as a ``pyarrow.Table``; ``annotations`` in ``sql``."""
        from pi_lab.research.corpus_api import corpus_annotations

        return corpus_annotations(self)

    def ask(self, question: str, *, client: Any, model: Any, unit: str = "session", where: str | None = None,
            answer: str = "yes/no", labels: Any = None, max_cost: float | None = None, concurrency: int = 4,
            dry_run: bool = False, progress: bool = True, retry: Any = None, cache: Any = None) -> Any:
        """Ask ``question`` of every session, branch or model call (``unit``) with a model.

        ``where`` is a SQL condition on the unit's table (``sessions``, ``entries`` for branches,
        ``model_calls`` for calls). Returns a ``pyarrow.Table`` (session_id, unit_id, answer,
        explanation, cited_entry_ids and invalid_citations, input/output tokens, cost...); the
        findings are also written to :attr:`notes`. ``dry_run=True`` returns only the estimate
        (units, tokens, cost); ``max_cost`` stops before it would be passed. Answers are cached:
        asking again makes no request. The offline model is refused (it cannot judge). See
        :mod:`pi_lab.research.ask`."""
        from pi_lab.research.corpus_api import corpus_ask

        return corpus_ask(self, question, client=client, model=model, unit=unit, where=where, answer=answer,
                          labels=labels, max_cost=max_cost, concurrency=concurrency, dry_run=dry_run,
                          progress=progress, retry=retry, cache=cache)

    def find(self, pattern: str, *, in_: str = "text", regex: bool = False, case: bool = False,
             note: str | None = None) -> Any:
        """Entries whose ``in_`` (``"text"``, ``"tool_args"``, ``"tool_results"``) match
        ``pattern``, as a table; ``note="tag"`` also writes each match as a note. No model."""
        from pi_lab.research.corpus_api import corpus_find

        return corpus_find(self, pattern, in_=in_, regex=regex, case=case, note=note)

    def to_parquet(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write one ``<table>.parquet`` per table into ``directory``; returns the paths.

        Each file is written beside its name and renamed over it (a killed run leaves the
        previous file whole). An existing file that is a symbolic link, not a regular file,
        or a session pi would open is never replaced: :class:`~pi_lab.session.output.
        OutputRefused` is raised before any table is written."""
        import pyarrow.parquet as pq

        from pi_lab.session.output import check_output, replacing

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        targets = [(name, out / f"{name}.parquet") for name in TABLE_NAMES]
        for _name, target in targets:
            check_output(target)
        for name, target in targets:
            with replacing(target) as handle:
                pq.write_table(getattr(self, name), handle)
        return [target for _name, target in targets]
