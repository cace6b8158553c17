"""``pi-lab export FILE -o out.html [--leaf ID] [--notes NOTES | --no-notes]``."""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

from pi_lab.research.notes import DEFAULT_NOTES_FILE

__all__ = ["register"]


def _cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    import sys

    from pi_lab.export.html import ExportError, export_html

    notes = None if args.no_notes else args.notes
    if notes is not None and not os.path.lexists(notes):
        print(f"pi-lab export: no notes file {notes}", file=sys.stderr)
        return 1
    if notes is None and not args.no_notes and os.path.lexists(DEFAULT_NOTES_FILE):
        notes = DEFAULT_NOTES_FILE  # the notes beside the sessions a researcher works on, when there
    try:
        written = export_html(args.file, args.output, leaf_id=args.leaf, notes=notes)
    except ExportError as error:
        print(f"pi-lab export: {error}", file=sys.stderr)
        return 1
    size = written.stat().st_size
    out.write(f"wrote {written} ({size:,} bytes)\n")
    return 0


def register(commands: Any) -> None:
    """Add the ``export`` subcommand to ``pi-lab``'s subparsers."""
    export = commands.add_parser(
        "export",
        help="write a self-contained HTML viewer of a session",
        description="Write one HTML file that shows the session read-only in any browser, "
        "without a kernel or network: tree with filters, search and folds, entry detail, what "
        "the model sees at any entry, the gauge and compactions. The session file is only read. "
        "OUT is written beside itself and renamed into place; an existing OUT that pi would open as a "
        "session, a symbolic link or anything but a regular file is never replaced.",
    )
    export.add_argument("file", metavar="FILE", help="session file (.jsonl)")
    export.add_argument("-o", "--output", metavar="OUT", required=True, help="HTML file to write")
    export.add_argument("--leaf", metavar="ID", help="show the session with entry ID as the leaf")
    chosen = export.add_mutually_exclusive_group()
    chosen.add_argument("--notes", metavar="NOTES", help="embed the session's notes from this notes file, shown "
                        f"read-only (default: {DEFAULT_NOTES_FILE} in the current folder, when there is one)")
    chosen.add_argument("--no-notes", action="store_true", help="embed no notes")
    export.set_defaults(func=_cmd_export)
