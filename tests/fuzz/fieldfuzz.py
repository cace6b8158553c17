"""Field-level fuzzing of pi session files: mutate one field of one line, run every public path.

A session file is untrusted input. Line-level damage (truncation, byte flips, invalid UTF-8) is
covered elsewhere; this module changes the *type* of one field of one entry (a number where a
string is expected, an object as ``parentId``, content nested thousands of levels deep) and
runs what a user can reach on the result: the engine's contract, compaction preparation, the
widget's payloads, the context views, the server's store and the CLI.

The only assertion is "a result or one of pi_lab's own errors": any other exception is a
finding, reported with its type and the innermost pi_lab frame so that counts can be grouped.
``tools/fuzz_fields.py`` drives a large run; ``test_field_fuzz.py`` runs a bounded one in CI.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from shared_fixtures import FIXTURES_DIR as FIXTURES  # noqa: E402  (the one place that finds them)
SMALL_FIXTURES = [
    "public-dwsy-real-truncated.jsonl",
    "public-twkrash-branching.jsonl",
    "public-twkrash-uat.jsonl",
    "public-whamp-v1-linear.jsonl",
]

# (top-level key, nested key path) pairs; a path into message content uses "#" for "some index".
FIELD_PATHS: list[tuple[str, ...]] = [
    ("type",), ("id",), ("parentId",), ("timestamp",), ("version",), ("cwd",),
    ("message",), ("message", "role"), ("message", "content"), ("message", "content", "#"),
    ("message", "content", "#", "type"), ("message", "content", "#", "text"),
    ("message", "content", "#", "arguments"), ("message", "content", "#", "name"),
    ("message", "content", "#", "id"), ("message", "content", "#", "thinking"),
    ("message", "toolCallId"), ("message", "toolName"), ("message", "usage"),
    ("message", "usage", "input"), ("message", "usage", "totalTokens"), ("message", "usage", "cost"),
    ("message", "stopReason"), ("message", "errorMessage"), ("message", "provider"), ("message", "model"),
    ("message", "timestamp"), ("message", "details"), ("message", "isError"),
    ("summary",), ("label",), ("targetId",), ("firstKeptEntryId",), ("tokensBefore",), ("details",),
    ("fromId",), ("replacement",), ("name",), ("customType",), ("content",), ("data",),
    ("thinkingLevel",), ("provider",), ("modelId",), ("fromHook",),
]


def deep_list_text(levels: int, leaf: str = '"x"') -> str:
    """JSON text of a list nested ``levels`` deep (built as text: no recursion anywhere)."""
    return "[" * levels + leaf + "]" * levels


def deep_object_text(levels: int) -> str:
    return '{"a":' * levels + '"x"' + "}" * levels


def _odd_values(rng: random.Random) -> list[Any]:
    return [
        None, 0, -1, 1.5, 1e308, 2**63, True, False, "", "x", "\u202eevil", "line\nbreak",
        [], [1, "a"], {}, {"a": 1}, {"type": "text"}, [{"type": None}], [[[]]],
        "x" * rng.choice([1, 200, 70_000]), {"text": 5}, [{"type": "text", "text": 7}],
        [{"type": "toolCall", "id": 3, "name": {}, "arguments": "notadict"}],
        [{"type": "image", "data": None}], "\ud800",
        {"\ud800": 1},  # a lone surrogate as an object key (JSON.stringify writes it escaped)
        10**400,  # past the float range: JavaScript reads Infinity, Python keeps the exact int
    ]


DEEP_MARK = "\u0000DEEP\u0000"


@dataclass(frozen=True)
class Mutation:
    line: int
    path: tuple[str, ...]
    value: str  # a short description, for reports

    def describe(self) -> str:
        return f"line {self.line + 1} {'.'.join(self.path)} = {self.value}"


def _set_path(obj: Any, path: tuple[str, ...], value: Any, rng: random.Random) -> bool:
    """Set ``obj[path] = value``; "#" picks an existing index. Returns False when there is no such place."""
    target = obj
    for i, key in enumerate(path):
        last = i == len(path) - 1
        if key == "#":
            if not isinstance(target, list) or not target:
                return False
            index = rng.randrange(len(target))
            if last:
                target[index] = value
                return True
            target = target[index]
            continue
        if not isinstance(target, dict):
            return False
        if last:
            target[key] = value
            return True
        if key not in target:
            return False
        target = target[key]
    return False


def mutate(lines: list[bytes], rng: random.Random) -> tuple[bytes, Mutation]:
    """One mutated copy of a session (its lines without newlines)."""
    for _ in range(50):
        index = rng.randrange(len(lines))
        if index == 0 and rng.random() < 0.8:
            continue  # header damage is mostly covered by the line-level tests
        try:
            entry = orjson.loads(lines[index])
        except orjson.JSONDecodeError:
            continue
        path = rng.choice(FIELD_PATHS)
        roll = rng.random()
        deep_text = None
        if roll < 0.15:
            levels = rng.choice([300, 1_000, 3_000])
            deep_text = deep_list_text(levels) if rng.random() < 0.6 else deep_object_text(levels)
            value: Any = DEEP_MARK
            described = f"<nested {levels}>"
        else:
            value = rng.choice(_odd_values(rng))
            described = repr(value)[:40]
        if not _set_path(entry, path, value, rng):
            continue
        # The standard library writes a lone surrogate as a \ud800 escape (valid JSON text
        # that JavaScript's JSON.parse accepts); orjson refuses to write it.
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        if deep_text is not None:
            text = text.replace(json.dumps(DEEP_MARK), deep_text, 1)
        out = list(lines)
        out[index] = text.encode("utf-8", "backslashreplace") if "\ud800" not in text else \
            json.dumps(entry, separators=(",", ":")).replace(json.dumps(DEEP_MARK), deep_text or "", 1).encode()
        return b"\n".join(out) + b"\n", Mutation(index, path, described)
    return b"\n".join(lines) + b"\n", Mutation(-1, (), "unchanged")


# ---------------------------------------------------------------------------------------------
# Running the public paths


@dataclass(frozen=True)
class Finding:
    step: str
    error: str  # exception type name
    where: str  # innermost pi_lab frame "module.py:line in function"
    message: str

    def key(self) -> tuple[str, str, str]:
        return (self.step, self.error, self.where)

    def known(self) -> bool:
        """Whether this is one of the findings still open that ``test_fixed_findings.py``
        reproduces, matched by exception and file name (line numbers move, and the owners
        rename functions while they work on them)."""
        file = self.where.partition(" in ")[0].rsplit(":", 1)[0]
        return (self.error, os.path.basename(file)) in {(error, name) for error, name, _ in KNOWN}


# Findings still open, each reproduced by a strict xfail in test_fixed_findings.py until fixed:
# (exception, file name, function when found) of the innermost pi_lab frame; matched on the first
# two. Remove an entry with its xfail.
KNOWN: frozenset[tuple[str, str, str]] = frozenset()  # none open today: every finding so far is fixed


PATHS = ("engine", "view", "write", "cli", "server", "corpus", "export")
_VIEW_STEPS = ("SessionView", "structure_payload", "rows", "entry", "context_", "gauge", "compact_preview", "compare_")
_WRITE_STEPS = ("open(writable)", "create_branched_session", "append_message")


def path_of(step: str) -> str:
    """Which public path a step belongs to (one of ``PATHS``), for the per-path counts."""
    if step.startswith("cli "):
        return "cli"
    if step.startswith(("server", "store.")):
        return "server"
    if step.startswith("corpus"):
        return "corpus"
    if step.startswith("export"):
        return "export"
    if step.startswith(_WRITE_STEPS):
        return "write"
    if step.startswith(_VIEW_STEPS):
        return "view"
    return "engine"


def _allowed_errors() -> tuple[type[BaseException], ...]:
    allowed: list[type[BaseException]] = []
    try:
        from pi_lab.errors import PiLabError

        allowed.append(PiLabError)
    except ImportError:  # before the error hierarchy existed
        from pi_lab.session.storage import InvalidSessionFile

        allowed.append(InvalidSessionFile)
    return tuple(allowed)


def _innermost_pi_lab_frame(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    for frame in reversed(frames):
        if f"{os.sep}pi_lab{os.sep}" in frame.filename:
            rel = frame.filename.split(f"{os.sep}pi_lab{os.sep}", 1)[1]
            return f"{rel}:{frame.lineno} in {frame.name}"
    last = frames[-1] if frames else None
    return f"{os.path.basename(last.filename)}:{last.lineno} in {last.name}" if last else "?"


class Runner:
    """Runs named steps, recording any exception that is not one of pi_lab's own."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.allowed = _allowed_errors()

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except self.allowed:
            return None
        except RecursionError as error:  # never recursive on file data
            self.findings.append(Finding(name, "RecursionError", _innermost_pi_lab_frame(error), ""))
        except Exception as error:  # noqa: BLE001  (the point is to catch everything else)
            self.findings.append(Finding(name, type(error).__name__, _innermost_pi_lab_frame(error), str(error)[:200]))
        return None


def _open_read_only(path: Path) -> Any:
    from pi_lab.session import SessionManager

    try:
        return SessionManager.open(path, read_only=True)
    except TypeError as error:
        if "read_only" not in str(error):
            raise
        from pi_lab.session.readonly import session_from_bytes

        return session_from_bytes(path.read_bytes(), path)


def _engine_steps(run: Runner, sm: Any) -> None:
    from pi_lab.compaction import CompactionSettings, estimate_context_tokens, prepare_compaction
    from pi_lab.session.flatten import flatten_tree, visible_rows

    branch = run.step("get_branch", sm.get_branch) or []
    run.step("get_tree", sm.get_tree)
    context = run.step("build_session_context", sm.build_session_context)
    if context is not None:
        run.step("estimate_context_tokens", lambda: estimate_context_tokens(context.messages))
    ids = [e.get("id") for e in sm.file_entries[1:]][:40]
    for entry_id in ids[::7]:
        run.step("build_session_context(id)", lambda: sm.build_session_context(entry_id))
        run.step("get_children", lambda: sm.get_children(entry_id))
    run.step("prepare_compaction", lambda: prepare_compaction(branch, CompactionSettings(keep_recent_tokens=50)))
    flat = run.step("flatten_tree", lambda: flatten_tree(sm.get_tree(), sm.leaf_id))
    if flat is not None:
        for mode in ("default", "no-tools", "user-only", "labeled-only", "all"):
            run.step(f"visible_rows[{mode}]", lambda: visible_rows(flat, filter_mode=mode, search="a"))


def _view_steps(run: Runner, sm: Any) -> None:
    from pi_lab.view.payload import SessionView, read_request, structure_payload

    view = run.step("SessionView.open", lambda: SessionView.open(sm))
    if view is None:
        return
    run.step("structure_payload", lambda: structure_payload(view, None))
    run.step("rows", lambda: read_request(view, "rows", {"start": 0, "end": 400}))
    for entry in sm.file_entries[1:][:30]:
        entry_id = entry.get("id")
        run.step("entry", lambda: read_request(view, "entry", {"id": entry_id, "full": True}))
    run.step("context_at", lambda: read_request(view, "context_at", {}))
    run.step("gauge", lambda: read_request(view, "gauge", {}))
    run.step("compact_preview", lambda: read_request(view, "compact_preview", {}))
    try:
        import pi_lab.view as context_views
    except ImportError:
        return
    _context_view_steps(run, sm, context_views)


def _node_pairs(sm: Any) -> list[tuple[Any, Any]]:
    """A few (A, B) node pairs: the leaf against the middle and the first entry, the first
    against the middle, and two neighbours (ids as the file holds them: any type at all)."""
    ids = [e.get("id") for e in sm.file_entries[1:] if isinstance(e, dict)]
    if not ids:
        return []
    leaf = sm.leaf_id
    first, middle, last = ids[0], ids[len(ids) // 2], ids[-1]
    pairs = [(leaf, middle), (leaf, first), (first, middle), (ids[max(0, len(ids) - 2)], last)]
    return [(a, b) for a, b in pairs if a is not None and b is not None]


def _context_view_steps(run: Runner, sm: Any, views: Any) -> None:
    """The context over time and between nodes: timeline, composition, diff, search, branches."""
    leaf = sm.leaf_id
    if leaf is not None:
        run.step("context_timeline", lambda: views.context_timeline(sm))
        run.step("context_composition", lambda: views.context_composition(sm, leaf))
    for a, b in _node_pairs(sm):
        run.step("context_timeline(leaf)", lambda: views.context_timeline(sm, b))
        run.step("context_composition(id)", lambda: views.context_composition(sm, b))
        run.step("context_diff", lambda: views.context_diff(sm, a, b))
        run.step("context_diff(search)", lambda: views.context_diff(sm, a, b, search="a"))
        run.step("context_search", lambda: views.context_search(sm, a, b, "answer", case_sensitive=True))
        run.step("compare_branches", lambda: views.compare_branches(sm, a, b))


def _write_steps(run: Runner, path: Path, work: Path) -> None:
    """A writable open of a copy, a fork of it, one append: the paths that write."""
    from pi_lab.session import SessionManager

    copy = work / "writable.jsonl"
    shutil.copyfile(path, copy)
    sm = run.step("open(writable)", lambda: SessionManager.open(copy, session_dir=work / "forks"))
    if sm is None:
        return
    leaf = sm.leaf_id
    if leaf is not None:
        run.step("create_branched_session", lambda: sm.create_branched_session(leaf))
    run.step("append_message", lambda: sm.append_message({"role": "user", "content": "probe", "timestamp": 0}))


def _cli_steps(run: Runner, path: Path, work: Path) -> None:
    """Every ``pi-lab`` subcommand on the file: one line on stderr for an error, never a traceback."""
    from pi_lab.cli import main

    commands = [
        ["tree", str(path)], ["context", str(path)],
        ["export", str(path), "-o", str(work / "cli-export.html")],
        ["usage", str(path), "--workers", "1", "--no-cache", "--json"],
        ["corpus", str(path), "--workers", "1", "--no-cache", "--out", str(work / "cli-tables")],
    ]
    for command in commands:
        err = io.StringIO()
        out = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = run.step(f"cli {command[0]}", lambda: _exit_code(main, command))
        step = f"cli {command[0]}"
        lines = err.getvalue().splitlines()
        skipped = [line for line in lines if line.startswith("pi-lab: skipped ")]
        rest = [line for line in lines if line not in skipped]
        text = err.getvalue()
        if "Traceback" in text:
            run.findings.append(Finding(step, "traceback on stderr", "cli", text[-200:]))
            continue
        # A "skipped ...: internal error" line is the corpus reading the file: the corpus steps
        # find the same error with its frame, so only the CLI's own lines are looked at here.
        for line in rest:
            if "internal error" in line:
                run.findings.append(Finding(step, *_internal_error_parts(line)))
        if code not in (0, None) and len(rest) > 1:
            run.findings.append(Finding(step, "multi-line error", "cli", text[:200]))


def _exit_code(main: Callable[[list[str]], int], argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1


def _internal_error_parts(line: str) -> tuple[str, str, str]:
    """(exception type, where, message) of a CLI or corpus "internal error" line."""
    rest = line.split("internal error: ", 1)[1]
    error = rest.split(" ", 1)[0].rstrip(":")
    where = "?"
    if " at " in rest:
        where = rest.split(" at ", 1)[1].split(": ", 1)[0]
        if "(from " in where:  # the innermost pi_lab frame groups the findings best
            where = where.split("(from ", 1)[1].rstrip(")")
    return error, where, rest[:200]


def _server_steps(run: Runner, path: Path) -> None:
    """The server's store and every session request, answered as the REST handlers answer them
    (``session_answer``): an error that is not pi_lab's own would be a 500."""
    from pi_lab.server.store import SessionStore, view_key
    from pi_lab.view.payload import ViewSettings

    store = SessionStore()
    loaded = run.step("store.get", lambda: store.get(str(path)))
    if loaded is None:
        return
    shared = run.step("store.view", lambda: store.view(loaded, view_key()))
    if shared is not None:
        run.step("store.gauge", lambda: store.gauge(loaded, shared, ViewSettings()))
    run.step("store.session_info", lambda: store.session_info(loaded))
    try:
        from pi_lab.server.handlers import SESSION_OPS, PiLabState, session_answer
        from pi_lab.server.locations import Location
        from pi_lab.server.store import FileTooLarge
    except ImportError:
        return
    state = PiLabState(config=None, store=store, listing=None, executor=None)
    location = Location("root", path.name, str(path))
    sm = loaded.sm
    ids = [e.get("id") for e in sm.file_entries[1:] if isinstance(e, dict)]
    strings = [i for i in ids if isinstance(i, str)]
    some = strings[len(strings) // 2] if strings else "missing"
    args = {"start": 0, "end": 400, "id": some, "full": True, "a": sm.leaf_id if isinstance(sm.leaf_id, str) else some,
            "b": strings[0] if strings else "missing", "query": "answer", "leaf_id": some}
    for op in sorted(SESSION_OPS):
        for view in ({}, {"filter_mode": "all", "search": "a", "folded": strings[:3]}):
            body = {"view": view, "args": args, "version": 1, "generation": 1, "selected_id": some}
            run.step(f"server {op}", lambda: _answer(session_answer, state, location, op, body, FileTooLarge))


def _listing_steps(run: Runner, path: Path, work: Path) -> None:
    """The Pi Sessions panel over a sessions folder holding the file: listed, then searched."""
    try:
        from pi_lab.server.listing import SessionListing
    except ImportError:
        return
    folder = work / "sessions" / "--home-fuzz--"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, folder / path.name)
    listing = SessionListing()
    run.step("server listing", lambda: _json_ready(listing.list(str(work / "sessions"))))
    run.step("server listing(q)", lambda: _json_ready(listing.list(str(work / "sessions"), "answer question")))


def _answer(session_answer: Any, state: Any, location: Any, op: str, body: dict[str, Any], too_large: type) -> Any:
    try:
        result, blob = session_answer(state, location, op, body)
    except too_large:  # a 413, not a bug
        return None
    return _json_ready(result) if blob is None else blob


def _json_ready(value: Any) -> Any:
    """The reply as the handlers send it (orjson, else the standard library): a value neither
    can write would be a 500 too."""
    from pi_lab.server.handlers import _json_bytes

    return _json_bytes(value)


def _corpus_steps(run: Runner, path: Path) -> None:
    """The corpus scan of the one file in this process; a reason in ``errors`` that says
    "internal error" is a built-in exception inside pi_lab, found as such."""
    import logging

    try:
        from pi_lab.corpus import Corpus
    except ImportError:
        return
    caught: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record)

    logger = logging.getLogger("pi_lab.corpus")
    handler = Keep(logging.WARNING)
    logger.addHandler(handler)
    try:
        corpus = run.step("corpus.scan", lambda: Corpus.scan([path], workers=1, cache=False))
    finally:
        logger.removeHandler(handler)
    if corpus is None:
        return
    for _, reason in corpus.errors:
        if "internal error" not in reason:
            continue
        record = next((r for r in caught if r.exc_info), None)
        if record is not None and record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            run.findings.append(Finding("corpus.scan errors", type(error).__name__, _innermost_pi_lab_frame(error),
                                        reason[:200]))
        else:
            run.findings.append(Finding("corpus.scan errors", *_internal_error_parts(reason)))
    # corpus.usage (DuckDB SQL over these tables) runs in the CLI steps: `pi-lab usage`.


def _export_steps(run: Runner, path: Path, work: Path) -> None:
    try:
        from pi_lab.export import export_html
    except ImportError:
        return
    run.step("export_html", lambda: export_html(path, work / "export.html"))


def run_public_paths(path: Path, work: Path, *, writes: bool = True, cli: bool = True, server: bool = True,
                     corpus: bool = True, export: bool = True) -> list[Finding]:
    """Every public path on one (possibly hostile) session file; the findings, if any."""
    run = Runner()
    sm = run.step("open(read_only)", lambda: _open_read_only(path))
    if sm is not None:
        _engine_steps(run, sm)
        _view_steps(run, sm)
    if writes:
        _write_steps(run, path, work)
    if cli:
        _cli_steps(run, path, work)
    if server:
        run.step("server", lambda: _server_steps(run, path))
        run.step("server listing", lambda: _listing_steps(run, path, work))
    if corpus:
        run.step("corpus", lambda: _corpus_steps(run, path))
    if export:
        run.step("export", lambda: _export_steps(run, path, work))
    return run.findings


def base_sessions(generated: int = 3) -> Iterator[tuple[str, list[bytes]]]:
    """The sessions mutations start from: small real fixtures (if present) and generated ones."""
    if FIXTURES.is_dir():
        for name in SMALL_FIXTURES:
            file = FIXTURES / name
            if file.is_file():
                yield name, file.read_bytes().splitlines()
    import helpers

    yield "seed-section-14", helpers.SEED_SECTION_14.encode().splitlines()
    for seed in range(generated):
        yield f"generated-{seed}", _generated_session(seed)


def _generated_session(seed: int) -> list[bytes]:
    """A session with every entry kind: tools, a compaction, a branch summary, labels, an edit."""
    import helpers as h

    rng = random.Random(seed)
    entries: list[dict[str, Any]] = [h.header(f"G{seed}")]
    parent = None
    ids = []
    for i in range(12):
        uid, aid, tid = f"u{i}", f"a{i}", f"t{i}"
        entries.append(h.msg(uid, parent, h.user_msg(f"question {i} 检查 🙂"), seconds=i * 4 + 1))
        call = {"id": f"c{i}", "name": rng.choice(["read", "bash", "edit"]), "arguments": {"path": f"src/f{i}.ts"}}
        entries.append(h.msg(aid, uid, h.asst_msg(f"answer {i}", tool_calls=[call], thinking="hmm"), seconds=i * 4 + 2))
        entries.append(h.msg(tid, aid, h.tool_result(f"c{i}", call["name"], "output " * 20), seconds=i * 4 + 3))
        parent = tid
        ids.extend([uid, aid, tid])
    entries.append(h.entry("compaction", "cmp", parent, 60, summary="## Goal\nsummary", firstKeptEntryId="u8",
                           tokensBefore=5000))
    entries.append(h.entry("branch_summary", "bs", "a3", 61, fromId="t9", summary="left the branch"))
    entries.append(h.entry("label", "lb", "cmp", 62, targetId="u2", label="checkpoint"))
    entries.append(h.entry("context_edit", "ce", "lb", 63, targetId="a10", replacement=None))
    entries.append(h.entry("model_change", "mc", "ce", 64, provider="anthropic", modelId="claude-opus-4-5"))
    entries.append(h.msg("u99", "mc", h.user_msg("after"), seconds=65))
    return [orjson.dumps(e) for e in entries]


def mutate_line(lines: list[bytes], field_paths: Any, rng: random.Random) -> tuple[bytes, str]:
    """One odd value (or a structure nested 300 or 3,000 levels deep) in one field of one JSON
    line of ``lines``; the line is written as ``json.dumps`` writes it (a lone surrogate as its
    escape, as JavaScript and serde_json read it). Returns the file and what was changed."""
    for _ in range(50):
        index = rng.randrange(len(lines))
        entry = orjson.loads(lines[index])
        path = rng.choice(field_paths)
        deep_text = None
        if rng.random() < 0.15:
            levels = rng.choice([300, 3_000])
            deep_text = deep_list_text(levels) if rng.random() < 0.6 else deep_object_text(levels)
            value: Any = DEEP_MARK
        else:
            value = rng.choice(_odd_values(rng))
        if not _set_path(entry, path, value, rng):
            continue
        text = json.dumps(entry, separators=(",", ":"))
        if deep_text is not None:
            text = text.replace(json.dumps(DEEP_MARK), deep_text, 1)
        out = list(lines)
        out[index] = text.encode()
        return b"\n".join(out) + b"\n", f"line {index + 1} {'.'.join(path)} = {repr(value)[:40]}"
    return b"\n".join(lines) + b"\n", "unchanged"


def agent_file_steps(run: Runner, path: Path) -> None:
    """Every public path over one session file of any agent: ``open_session``, the engine's
    contract, the views and the static export (the other agents' fuzz tests share it)."""
    import pi_lab
    from pi_lab.export.html import render_html

    sm = run.step("open_session", lambda: pi_lab.open_session(path))
    if sm is not None:
        _engine_steps(run, sm)
        _view_steps(run, sm)
        run.step("render_html", lambda: render_html(sm))


def describe_findings(described: str, findings: list[Finding]) -> str:
    return f"{described}: " + "; ".join(f"{f.step}: {f.error} at {f.where}: {f.message}" for f in findings)
