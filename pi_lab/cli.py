"""``pi-lab``: look at pi session files from the command line.

``pi-lab tree FILE`` prints the /tree list as pi draws it (every row, no window), and
``pi-lab context FILE`` prints what the model sees at the leaf. Both only read the file:
it is never migrated, repaired or appended to. Files of format version 1 have no entry ids;
they are migrated in memory with ids derived from the file's bytes, so the ids printed are
the same on every run (pi would write random ones when it opens such a file).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from pi_lab._text_out import one_line

__all__ = ["main", "build_parser", "load_session"]

PROG = "pi-lab"
_PREVIEW_WIDTH = 100


class CliError(Exception):
    """A problem reported as one line on stderr with exit status 1."""


def _one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make ``parser`` and its subcommands' parsers report a wrong argument on one line (not the
    usage block and then the error): every error of ``pi-lab`` is one line on stderr. Done on
    the instances, so it holds for a parser built elsewhere (``pi_lab.corpus.cli``) too."""
    stack = [parser]
    while stack:
        current = stack.pop()

        def error(message: str, _parser: argparse.ArgumentParser = current) -> NoReturn:
            _parser.exit(2, f"{_parser.prog}: {one_line(message)} (see {_parser.prog} --help)\n")

        current.error = error  # type: ignore[method-assign]
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
    return parser


class _Printable:
    """The output stream, writing text it cannot encode with escapes instead of failing.

    Session text may hold lone surrogates (pi writes a JSON escape such as ``\\ud83d`` when it
    cuts an emoji in half): they are printed as that escape, the way pi_lab shows them
    elsewhere (error lines, the corpus tables); so is any character a non-UTF-8 terminal
    lacks. Everything else is the stream's own (flush, encoding, ...)."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except UnicodeEncodeError:  # nothing was written: the text is encoded before any byte goes out
            encoding = getattr(self._stream, "encoding", None) or "utf-8"
            return self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _internal_error(error: BaseException) -> str:
    """One line for a bug: the exception and the innermost frame of pi_lab where it happened."""
    from pi_lab.errors import where_it_failed

    where = where_it_failed(error)
    detail = str(error)[:200] if not isinstance(error, RecursionError) else "nested too deeply"
    return (f"{PROG}: internal error: {type(error).__name__}{where}: {one_line(detail)} "
            "(a bug: please report it; PI_LAB_DEBUG=1 prints the traceback)")


# ---------------------------------------------------------------------------------------------
# Loading


def load_session(path: str) -> Any:
    """Read a session file without touching it and return an in-memory SessionManager (for
    a Claude Code or Codex file, that agent's read-only session).

    Raises :class:`pi_lab.session.InvalidSessionFile` for a non-empty file that is not a pi
    session, and :class:`CliError` for a path that cannot be read.
    """
    from pi_lab.errors import NotARegularFile
    from pi_lab.session.readonly import session_from_bytes
    from pi_lab.session.storage import check_regular_file

    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory, not a session file")
    try:
        check_regular_file(path)  # a FIFO would block the open below forever
    except NotARegularFile as error:
        raise CliError(f"{path}: is a {error.kind}, not a session file") from None
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except OSError as error:
        raise CliError(f"{path}: {error.strerror or error}") from None
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except OSError as error:
        raise CliError(f"{path}: {error.strerror or error}") from None
    if not data.strip():
        raise CliError(f"{path}: empty file (no session header)")
    from pi_lab.formats.detect import UnknownSessionFormat, detect_format_of

    try:
        agent = detect_format_of(data[: 1 << 20], path)
    except UnknownSessionFormat:
        agent = "pi"  # pi's own reader says what is wrong with the file, in pi's words
    if agent != "pi":
        from pi_lab.formats import open_session

        return open_session(path)  # another agent's file: read by that agent's rules, never written
    return session_from_bytes(data, path)


def _resolve_leaf(sm: Any, leaf: str | None) -> str | None:
    if leaf is None:
        return sm.leaf_id
    if sm.get_entry(leaf) is None:
        raise CliError(f"no entry with id {leaf!r} in this session")
    return leaf


# ---------------------------------------------------------------------------------------------
# tree


def _cmd_tree(args: argparse.Namespace, out: TextIO) -> int:
    from pi_lab.cli_render import iter_rendered_rows
    from pi_lab.session.flatten import flatten_tree, initial_selection, visible_rows

    sm = load_session(args.file)
    leaf = _resolve_leaf(sm, args.leaf)
    flat = flatten_tree(sm.get_tree(), leaf)
    rows = visible_rows(flat, filter_mode=args.filter, search=args.search or "")
    selected = initial_selection(rows, flat, leaf)
    # Each line is written as it is made: the text of a deep tree (every row indented by its
    # depth) is many times the size of its rows and is never held whole.
    for line in iter_rendered_rows(rows, selected, filter_mode=args.filter, show_label_times=args.label_times):
        out.write(line + "\n")
    return 0


# ---------------------------------------------------------------------------------------------
# context


def _load_estimator() -> Callable[[dict[str, Any]], int] | None:
    try:
        from pi_lab.compaction import estimate_tokens
    except ImportError:
        try:
            from pi_lab.compaction.tokens import estimate_tokens
        except ImportError:
            return None
    return estimate_tokens


def message_preview(message: dict[str, Any], width: int = _PREVIEW_WIDTH) -> str:
    """One line of a message's text: whitespace collapsed, cut to ``width`` characters."""
    from pi_lab.session._text import content_preview  # lazy: `pi-lab usage` never needs the engine
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        text = message.get("summary")
    elif role == "bashExecution":
        text = f"$ {message.get('command', '')}"
        output = message.get("output")
        if isinstance(output, str) and output.strip():
            text += f" ⇒ {output}"
    else:
        text = content_preview(message.get("content"))
        if not text and role == "assistant" and isinstance(message.get("errorMessage"), str):
            text = f"(error) {message['errorMessage']}"
    text = re.sub(r"\s+", " ", text if isinstance(text, str) else "").strip()
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text or "(empty)"


def _role_label(message: dict[str, Any]) -> str:
    from pi_lab.session._text import field_text  # lazy: `pi-lab usage` never needs the engine
    role = message.get("role")
    label = role if isinstance(role, str) else "?"
    if role == "toolResult" and message.get("toolName"):
        label += f" {field_text(message['toolName'])}"
        if message.get("isError"):
            label += " (error)"
    elif role == "custom" and message.get("customType"):
        label += f" {field_text(message['customType'])}"
    return label


def _cmd_context(args: argparse.Namespace, out: TextIO) -> int:
    from pi_lab.session._text import field_text  # lazy: `pi-lab usage` never needs the engine
    sm = load_session(args.file)
    leaf = _resolve_leaf(sm, args.leaf)
    projection = sm.build_session_projection() if args.leaf is None else sm.build_session_projection(leaf)
    estimate = _load_estimator()
    blocks: list[str] = []
    total = 0
    count = 0
    for projected in projection.entries:
        source_id = projected.source.get("id")
        for message in projected.messages:
            count += 1
            if estimate is not None:
                tokens = estimate(message)
                total += tokens
                cost = f"~{tokens} tok"
            else:
                cost = "~? tok"
            blocks.append(f"[{count}] {_role_label(message)} · entry {field_text(source_id)} · {cost}")
            blocks.append(f"    {message_preview(message)}")
    model = projection.model or {}
    model_text = "/".join(field_text(v) for v in (model.get("provider"), model.get("modelId")) if v) or "unknown"
    total_text = f"~{total} tok" if estimate is not None else "~? tok"
    out.write(
        f"Context at leaf {leaf}: {count} message{'s' if count != 1 else ''}, {total_text}"
        f" (model {model_text}, thinking {field_text(projection.thinking_level)})\n"
    )
    if blocks:
        out.write("\n".join(blocks) + "\n")
    if estimate is None:
        out.write("note: token estimates unavailable (pi_lab.compaction.estimate_tokens cannot be imported)\n")
    return 0


# ---------------------------------------------------------------------------------------------
# Entry point


def build_parser() -> argparse.ArgumentParser:
    from pi_lab.session.flatten import FILTER_MODES

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Inspect pi coding-agent session files (JSONL). The files are only read.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    tree = commands.add_parser(
        "tree",
        help="print the session tree like pi's /tree",
        description="Print every row of pi's /tree list; the leaf row carries the › cursor.",
    )
    tree.add_argument("file", metavar="FILE", help="session file (.jsonl)")
    tree.add_argument("--filter", choices=FILTER_MODES, default="default", help="filter mode (default: %(default)s)")
    tree.add_argument("--search", metavar="S", default="", help="keep rows containing every word of S")
    tree.add_argument("--leaf", metavar="ID", help="treat entry ID as the current leaf")
    tree.add_argument("--label-times", action="store_true", help="show when each label was set")
    context = commands.add_parser(
        "context",
        help="print the messages the model sees at the leaf",
        description="Print one block per message of the model's context: role, source entry, "
        "token estimate and a one-line preview.",
    )
    context.add_argument("file", metavar="FILE", help="session file (.jsonl)")
    context.add_argument("--leaf", metavar="ID", help="project at entry ID instead of the current leaf")
    from pi_lab.corpus.cli import register as register_corpus_commands

    register_corpus_commands(commands)  # corpus, usage (pi_lab/corpus/cli.py)
    from pi_lab.export.cli import register as register_export_command

    register_export_command(commands)  # export (pi_lab/export/cli.py)
    from pi_lab.corpus.ask_cli import register as register_ask_command

    register_ask_command(commands)  # ask (pi_lab/corpus/ask_cli.py)
    return _one_line_errors(parser)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(argv) if argv is not None else sys.argv[1:]
    # corpus and usage parse alone: the other commands' imports cost more than a cached report.
    from pi_lab.corpus.cli import command_parser

    parser = command_parser(argv, PROG) or build_parser()
    _one_line_errors(parser)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from pi_lab.errors import PiLabError

    out: Any = _Printable(sys.stdout)
    log_lines = _LogLines()
    quiet = not os.environ.get("PI_LAB_DEBUG") and not logging.getLogger().handlers
    if quiet:  # a program that configured logging itself keeps its own handlers and tracebacks
        logging.getLogger("pi_lab").addHandler(log_lines)
    try:
        if getattr(args, "func", None) is not None:
            return args.func(args, out)
        if args.command == "tree":
            return _cmd_tree(args, out)
        return _cmd_context(args, out)
    # InvalidSessionFile, NotARegularFile... are PiLabErrors (importing the engine's storage here
    # would cost the cached `pi-lab usage` a third of its time).
    except (PiLabError, CliError) as error:
        print(one_line(f"{PROG}: {error}"), file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`pi-lab tree f | head`); stop quietly.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keep interpreter shutdown quiet
        except OSError:
            pass
        return 0
    except OSError as error:  # never a traceback for a file the system would not read
        name = f"{error.filename}: " if error.filename else ""
        print(one_line(f"{PROG}: {name}{error.strerror or error}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001  a bug: still one line, but saying it is one
        if os.environ.get("PI_LAB_DEBUG"):
            raise
        print(_internal_error(error), file=sys.stderr)
        return 1
    finally:
        if quiet:
            logging.getLogger("pi_lab").removeHandler(log_lines)


class _LogLines(logging.Handler):
    """pi_lab's log records during a command, as one line each on stderr.

    Without a handler, Python's last-resort handler would print a record's traceback (the
    corpus logs one for a file that hit a bug, and already names that file on its "skipped"
    line): here a record is its message on one line, and a record with a traceback is left to
    that line. ``PI_LAB_DEBUG=1`` lets the tracebacks through.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            return
        try:
            print(one_line(f"{PROG}: {record.getMessage()}"), file=sys.stderr)
        except Exception:  # noqa: BLE001  a broken record must not end the command
            self.handleError(record)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
