"""``pi-lab corpus`` and ``pi-lab usage``: the corpus from a shell.

``pi-lab corpus DIR... --out out/`` writes one Parquet file per table; ``pi-lab usage DIR...
--by day|session|model|project|agent [--json]`` prints the usage report (the counting rules of
:mod:`pi_lab.corpus`). A progress bar is drawn on stderr when it is a terminal, never when
piped. Files that could not be read are listed on stderr; the exit status is 0 when at least
one session was read, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

__all__ = ["register", "format_usage", "command_parser", "common_arguments", "scan_corpus"]

_USAGE_COLUMNS = ("calls", "input", "output", "cache_read", "cache_write", "total_tokens", "cost")


def register(commands: Any) -> None:
    """Add the ``corpus`` and ``usage`` subcommands to ``commands`` (argparse subparsers).

    Each parser gets ``func(args, out) -> int`` as its default, for ``pi_lab.cli.main``.
    """
    corpus = commands.add_parser(
        "corpus",
        help="read session folders into Parquet tables (sessions, entries, messages, model_calls, ...)",
        description="Read every *.jsonl under the folders (recursively) and write one Parquet file per table.",
    )
    common_arguments(corpus)
    corpus.add_argument("--out", required=True, metavar="DIR", help="folder for the Parquet files")
    corpus.set_defaults(func=_cmd_corpus)
    usage = commands.add_parser(
        "usage",
        help="token and cost report over session folders, without double counting forks",
        description="Calls, tokens and cost per day (UTC), session, model, project or agent. Every branch counts; "
        "entries a fork or clone copied from a parent in the folders count once.",
    )
    common_arguments(usage)
    usage.add_argument("--by", choices=("day", "session", "model", "project", "agent"), default="day", help="group by (default: %(default)s)")
    usage.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    usage.set_defaults(func=_cmd_usage)


def command_parser(argv: list[str], prog: str) -> argparse.ArgumentParser | None:
    """A parser of only ``corpus`` and ``usage`` when ``argv`` runs one of them, else None.

    ``pi_lab.cli.main`` uses it so that these commands do not import what the others need
    (the export and the tree view); their usage and error lines are the same as from the
    full parser (``pi-lab usage: ...``).
    """
    if not argv or argv[0] not in ("corpus", "usage"):
        return None
    parser = argparse.ArgumentParser(prog=prog)
    register(parser.add_subparsers(dest="command", metavar="COMMAND"))
    return parser


def common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="DIR", help="session folders or files (default: every agent's default folders that exist)")
    parser.add_argument("--workers", type=int, default=None, metavar="N", help="reading processes (default: the cores; usage --no-cache: the cores the load average leaves free)")
    parser.add_argument("--no-cache", action="store_true", help="read every file again (no cache)")
    parser.add_argument("--cache-dir", metavar="DIR", help="cache folder (default: $XDG_CACHE_HOME/pi_lab/corpus)")


def _cache(args: argparse.Namespace) -> Any:
    return False if args.no_cache else (args.cache_dir or True)


def scan_corpus(args: argparse.Namespace) -> Any:
    import pyarrow as pa

    from pi_lab.corpus import Corpus

    # The process is the command's own: its Arrow buffers come from an allocator that hands
    # freed memory back (mimalloc, pyarrow's default, kept about 0.3 KB an entry more at the
    # peak of a million-entry session's tables).
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except (NotImplementedError, pa.ArrowException):
        pa.set_memory_pool(pa.system_memory_pool())

    corpus = Corpus.scan(args.paths or None, workers=args.workers, cache=_cache(args), progress=sys.stderr.isatty())
    _print_errors(corpus.errors)
    return corpus


def _print_errors(errors: list[tuple[str, str]]) -> None:
    from pi_lab._text_out import one_line

    for path, reason in errors:
        # One line per file, written as pi-lab writes its other messages: a newline in a file
        # name (or in a reason quoting the file) must not make two lines of one.
        print(one_line(f"pi-lab: skipped {path}: {reason}"), file=sys.stderr)


def _cmd_corpus(args: argparse.Namespace, out: TextIO) -> int:
    corpus = scan_corpus(args)
    written = corpus.to_parquet(args.out)
    for path in written:
        name = path.stem
        out.write(f"{path}  {getattr(corpus, name).num_rows} rows\n")
    return 0 if corpus.sessions.num_rows else 1


def _cmd_usage(args: argparse.Namespace, out: TextIO) -> int:
    # The report of an unchanged folder is kept beside its cached tables: served from there,
    # the command reads a little JSON and imports neither pyarrow nor DuckDB. Without the
    # cache there is none to serve, and the scan's module (the cache, the spill) is not loaded.
    name = f"usage-{args.by}"
    report = None
    if not args.no_cache:
        from pi_lab.corpus.corpus import cached_report

        report = cached_report(args.paths or None, _cache(args), name)
    read_any = True  # a report is kept only for files that were read
    if report is None and args.no_cache:
        # Nothing to cache: only the model calls are read (pi_lab.corpus.usage_fast), not
        # every table; the report is the same.
        from pi_lab.corpus.usage_fast import usage_report

        report, errors, read = usage_report(args.paths or None, args.by, workers=args.workers,
                                            progress=sys.stderr.isatty())
        _print_errors(errors)
        read_any = read > 0
    elif report is None:
        corpus = scan_corpus(args)
        table = corpus.usage(by=args.by)
        report = {"columns": table.column_names, "rows": [list(row.values()) for row in table.to_pylist()]}
        corpus.keep_report(name, report)
        read_any = corpus.sessions.num_rows > 0
    columns, rows = report["columns"], report["rows"]
    if args.json:
        out.write(json.dumps([dict(zip(columns, row)) for row in rows], ensure_ascii=False, indent=1) + "\n")
    else:
        out.write(_format(columns, rows) + "\n")
    return 0 if read_any else 1


def _cell(value: Any, column: str) -> str:
    if value is None:
        return "-"
    if column == "cost":
        return f"{value:,.4f}"
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def format_usage(table: Any) -> str:
    """The usage table as aligned text, with a total line."""
    return _format(table.column_names, [list(row.values()) for row in table.to_pylist()])


def _format(columns: list[str], values: list[list[Any]]) -> str:
    rows = [[_cell(v, c) for c, v in zip(columns, row)] for row in values]
    total = []
    for i, c in enumerate(columns):
        if c in _USAGE_COLUMNS:
            total.append(_cell(sum(row[i] or 0 for row in values), c))
        else:
            total.append("")
    if columns:
        total[0] = "total"
    widths = [max([len(c)] + [len(r[i]) for r in rows + [total]]) for i, c in enumerate(columns)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(w) if columns[i] in _USAGE_COLUMNS else cell.ljust(w) for i, (cell, w) in enumerate(zip(cells, widths))
        ).rstrip()

    out = [line(list(columns)), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    out.append(line(["-" * w for w in widths]))
    out.append(line(total))
    return "\n".join(out)
