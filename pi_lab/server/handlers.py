"""REST handlers of the session viewer, under ``<base_url>/pi-lab/api/``.

=========================================  ==================================================
``GET  sessions?q=``                       the Pi Sessions panel: sessions grouped by project
``GET  session?path=``                     state of a session (default layout), for a glance
``POST session/state``                     state: version, rows, leaf, session info, gauge, file
``POST session/structure``                 the row structure, binary (``pi_lab/view/columns.py``)
``POST session/poll``                      catch up with the file: ``none``, ``delta`` or ``layout``
``POST session/rows|locate|entry|context_at|gauge|compact_preview``
                                           the widget's read requests, same payloads
``POST session/notes|note_add|note_edit|note_remove``
                                           the notes of the session (``pi_lab.view.notes``):
                                           a read-only viewer annotates too (a sidecar store)
``POST open-in-notebook``                  make (or reuse) a notebook that opens the session
``GET  detect?path=``                       which agent's session a file is, from its content
=========================================  ==================================================

A session request's JSON body names the file (``path``, see ``locations.py``), the layout
(``view``: ``filter_mode``, ``search``, ``folded``, ``note_filter``), the gauge settings
(``settings``) and the request's own ``args``. Every handler requires Jupyter's authentication,
and POSTs follow its XSRF rules; a note write needs Jupyter's write permission (it writes the
notes file, ``PiLabConfig.notes_file``). Parsing and layout run in worker threads so the server
keeps answering while a large file is read. Nothing here writes a session file.
"""

from __future__ import annotations

import asyncio
import errno
import json
import math
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import ensure_async, url_path_join
from tornado import web

from pi_lab.errors import NotARegularFile, PiLabError, where_it_failed
from pi_lab.formats.detect import UnknownSessionFormat, detect_format
from pi_lab.research.notes import NoteStore, NoteStoreError
from pi_lab.server.config import PiLabConfig
from pi_lab.server.listing import SessionListing
from pi_lab.server.locations import Location, PathRefused, resolve_location
from pi_lab.server.notebook import make_notebook, notebook_plan, notebook_source
from pi_lab.server.store import (
    FileTooLarge,
    LoadedSession,
    NotASession,
    SessionStore,
    SharedView,
    view_key,
)
from pi_lab.session._json import dumps as json_dumps
from pi_lab.session.flatten import FILTER_MODES
from pi_lab.session.storage import check_regular_file, read_session_header
from pi_lab.view.actions import WRITE_ACTIONS
from pi_lab.view.gauge import recorded_context_window
from pi_lab.view.notes import NOTE_OPS, note_filter_arg, note_request
from pi_lab.view.payload import (
    READ_OPS,
    RequestError,
    SessionView,
    ViewSettings,
    entry_id_arg,
    gauge_at_leaf,
    kind_of,
    preview_payload,
    read_request,
    request_args,
    structure_payload,
    whole_number,
)

__all__ = ["PiLabState", "make_handlers", "READ_ONLY_MESSAGE", "API_ROOT"]

API_ROOT = "pi-lab/api"
READ_ONLY_MESSAGE = "read-only viewer — Open in notebook to navigate or compact"
WRITE_OPS = WRITE_ACTIONS  # answered "read-only" here; the widget runs them
SESSION_OPS = frozenset({"state", "structure", "poll", "gauge", "compact_preview", *READ_OPS, *NOTE_OPS})
NOTE_WRITES = NOTE_OPS - {"notes"}
_LIMITS = {"context_window": (1_000, 100_000_000), "reserve_tokens": (0, 100_000_000),
           "keep_recent_tokens": (0, 100_000_000)}

MAX_FOLDS = 10_000
MAX_SEARCH_CHARS = 1_000
# A request body is a few small objects; anything nested deeper is refused before a handler (or
# the text of an error message) walks it.
MAX_BODY_DEPTH = 32
# A reason is one line a person reads in the viewer's status bar.
MAX_REASON_CHARS = 300
T = TypeVar("T")
_DEFAULT_SETTINGS = ViewSettings()


@dataclass
class PiLabState:
    """What the handlers share, kept in the tornado settings under ``pi_lab``."""

    config: PiLabConfig
    store: SessionStore
    listing: SessionListing
    executor: Any
    notes: NoteStore | None = None  # PiLabConfig.notes_file; None: no notes (an embedding without one)
    notes_label: str | None = None  # its path as the user should see it (PiLabConfig.notes_label)


def _json_bytes(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        # Lone surrogates, integers beyond 64 bits or content nested past orjson's 255 levels,
        # straight from a session file: the engine's writer handles all three, at any depth,
        # as JSON.stringify would (the standard library would recurse).
        return json_dumps(value)
    except ValueError:
        # A lone surrogate in an object key (a view keyed by a tool name from the file), which
        # the engine's writer refuses: the standard library escapes it (nesting stays shallow there).
        return json.dumps(value, ensure_ascii=True, default=str).encode("ascii")


def one_line(message: str) -> str:
    """``message`` as one short line: control characters become spaces, the tail is cut."""
    text = "".join(" " if ch < " " or ch == "\x7f" else ch for ch in message).strip()
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


class ApiError(web.HTTPError):
    """An HTTP error whose reason is shown to the user: one line, logged as data.

    Tornado logs ``log_message % args``; the reason is passed as an argument so that a ``%``
    in it (a file name, a search) can never break the log line, and the reply carries it as is.
    """

    def __init__(self, status: int, message: str, *, reason: str) -> None:
        self.message = one_line(message)
        super().__init__(status, "%s", self.message, reason=reason)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("a number too large for a double")
    return value


def _refuse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _depth_at_most(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects at most ``limit`` levels deep (an explicit stack)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def parse_body(raw: bytes | None) -> dict[str, Any]:
    """The JSON object of a request body, or :class:`ApiError` 400 saying what is wrong with it.

    Strict JSON: no NaN or Infinity, no number beyond a double's range (JavaScript would not send
    them); UTF-8; an object at the top, nested at most ``MAX_BODY_DEPTH`` levels.
    """
    try:
        value = json.loads(raw or b"{}", parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise ApiError(400, f"the request body is nested deeper than {MAX_BODY_DEPTH} levels",
                       reason="bad-request") from None
    except UnicodeDecodeError:
        raise ApiError(400, "the request body is not UTF-8 text", reason="bad-request") from None
    except ValueError as error:
        raise ApiError(400, f"the request body is not JSON: {error}", reason="bad-request") from None
    if not isinstance(value, dict):
        raise ApiError(400, f"the request body must be a JSON object, not {kind_of(value)}", reason="bad-request")
    if not _depth_at_most(value, MAX_BODY_DEPTH):
        raise ApiError(400, f"the request body is nested deeper than {MAX_BODY_DEPTH} levels", reason="bad-request")
    return value


def internal_error_text(error: BaseException) -> str:
    """One line for a bug: the exception, its innermost frame and the innermost pi_lab frame."""
    return f"internal error: {type(error).__name__}{where_it_failed(error)} (a bug: please report it)"


class PiLabHandler(APIHandler):
    auth_resource = "contents"

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error = (kwargs.get("exc_info") or (None, None, None))[1]
        if not isinstance(error, ApiError):
            super().write_error(status_code, **kwargs)
            return
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": error.message, "reason": error.reason}))

    @property
    def pi_lab(self) -> PiLabState:
        return self.settings["pi_lab"]

    def location(self, value: Any) -> Location:
        config = self.pi_lab.config
        try:
            return resolve_location(value, root_dir=self.settings["server_root_dir"], sessions_dir=config.sessions_dir,
                                    allow_hidden=bool(getattr(self.contents_manager, "allow_hidden", False)),
                                    folders=[(prefix, folder) for prefix, folder, _ in config.session_folders()])
        except PathRefused as error:
            raise ApiError(error.status, error.message, reason="path-refused") from None

    def body(self) -> dict[str, Any]:
        return parse_body(self.request.body)

    async def in_thread(self, fn: Callable[[], T], location: Location | None = None) -> T:
        """Run ``fn`` in a worker thread, turning engine errors into clear JSON errors."""
        loop = asyncio.get_running_loop()
        name = location.key if location else "the file"
        try:
            return await loop.run_in_executor(self.pi_lab.executor, fn)
        except web.HTTPError:
            raise
        except FileNotFoundError:
            raise ApiError(404, f"{name}: no such file", reason="not-found") from None
        except NotASession as error:
            raise ApiError(422, f"{name} is not a pi session: {error}", reason="not-a-session") from None
        except FileTooLarge as error:
            raise ApiError(413, f"{name} is too large for the viewer: {error}", reason="too-large") from None
        except RequestError as error:
            raise ApiError(400, str(error), reason="bad-request") from None
        except NoteStoreError as error:  # the server's notes file: a symbolic link, a FIFO, newer
            raise ApiError(422, f"notes: {error}", reason="notes-unavailable") from None
        except PermissionError:
            raise ApiError(403, f"{name}: permission denied", reason="permission-denied") from None
        except IsADirectoryError:
            raise ApiError(422, f"{name} is a folder, not a session file", reason="not-a-session") from None
        except NotARegularFile as error:
            raise ApiError(422, f"{name} is a {error.kind}, not a session file", reason="not-a-regular-file") from None
        except PiLabError as error:  # pi_lab's own errors carry a message meant for the user
            raise ApiError(422, f"{name}: {error}", reason="not-a-session") from None
        except OSError as error:
            if error.errno in (errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR):
                # The path the request named cannot be a readable file: the request's mistake.
                raise ApiError(404, f"{name}: no such file ({error.strerror})", reason="not-found") from None
            raise ApiError(500, f"{name}: {error.strerror or error}", reason="os-error") from None
        except Exception as error:  # noqa: BLE001  a bug met on this file: say so in the viewer, log it
            # Not a 500 with "Unhandled error": the viewer shows which file and what failed, and
            # the log keeps the traceback for the bug report.
            self.log.warning("pi_lab: internal error while answering for %s", name, exc_info=error)
            raise ApiError(422, f"pi_lab cannot show {name}: {internal_error_text(error)}",
                           reason="internal-error") from None

    def send_json(self, value: Any) -> None:
        self.set_header("Cache-Control", "no-store")
        self.finish(_json_bytes(value))


# ---------------------------------------------------------------------------------------------
# sessions of one file


def _settings(raw: Any, recorded_window: int | None = None) -> ViewSettings:
    """Gauge settings from the request; a window the reader has not chosen defaults to the
    published window of the session's model."""
    defaults = {"context_window": recorded_window or _DEFAULT_SETTINGS.context_window}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise RequestError(f"settings must be an object, not {kind_of(raw)}")
    values: dict[str, int] = {}
    for name, (low, high) in _LIMITS.items():
        value = raw.get(name, defaults.get(name, getattr(_DEFAULT_SETTINGS, name)))
        values[name] = whole_number(value, f"settings.{name}", low=low, high=high)
    return ViewSettings(context_window=values["context_window"], reserve_tokens=values["reserve_tokens"],
                        keep_recent_tokens=values["keep_recent_tokens"])


def _view(raw: Any) -> tuple[str, str, tuple[str, ...], str]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise RequestError(f"view must be an object, not {kind_of(raw)}")
    filter_mode = raw.get("filter_mode", "default")
    if not isinstance(filter_mode, str):
        raise RequestError(f"view.filter_mode must be a string, not {kind_of(filter_mode)}")
    if filter_mode not in FILTER_MODES:
        raise RequestError(f"unknown filter mode {filter_mode[:40]!r} (one of {', '.join(FILTER_MODES)})")
    folded = raw.get("folded")
    if folded is None:
        folded = []
    if not isinstance(folded, list):
        raise RequestError(f"view.folded must be a list of entry ids, not {kind_of(folded)}")
    # Bounded work per request: a layout is linear in the session, and so must be its inputs.
    if len(folded) > MAX_FOLDS:
        raise RequestError(f"view.folded may name at most {MAX_FOLDS} entries")
    odd = [f for f in folded if not isinstance(f, str)]
    if odd:
        raise RequestError(f"view.folded must be a list of entry ids (strings), not a list holding {kind_of(odd[0])}")
    search = raw.get("search")
    if search is None:
        search = ""
    if not isinstance(search, str):
        raise RequestError(f"view.search must be a string, not {kind_of(search)}")
    if len(search) > MAX_SEARCH_CHARS:
        raise RequestError(f"view.search may have at most {MAX_SEARCH_CHARS} characters")
    return view_key(filter_mode, search, folded, note_filter_arg(raw.get("note_filter"), "view.note_filter"))


def _optional_version(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    return None if value is None else whole_number(value, name)


def _notes_version(notes: NoteStore | None) -> int:
    return notes.version() if notes is not None else 0


def _state(store: SessionStore, loaded: LoadedSession, shared: SharedView, location: Location,
           settings: ViewSettings, notes_version: int = 0) -> dict[str, Any]:
    rows = shared.view.rows
    session = store.session_info(loaded)
    session["file"] = location.key
    return {
        "generation": loaded.generation,
        "version": rows.version,
        "row_count": len(rows.rows),
        "leaf_id": loaded.sm.leaf_id,
        "session": session,
        "gauge": store.gauge(loaded, shared, settings),
        "file": store.file_facts(loaded),
        "location": {"path": location.key, "area": location.area, "name": location.name},
        "notes_version": notes_version,
    }


def session_answer(state: PiLabState, location: Location, op: str, body: dict[str, Any], *,
                   notes_writable: bool | None = None) -> tuple[Any, bytes | None]:
    """Answer one session request (blocking; runs in a worker thread). ``notes_writable``: whether
    the user may add notes (False when Jupyter lets them read only), for the notes payload."""
    store = state.store
    key = _view(body.get("view"))
    raw_settings = body.get("settings")
    if raw_settings is not None and not isinstance(raw_settings, dict):
        raise RequestError(f"settings must be an object, not {kind_of(raw_settings)}")
    args = request_args(body.get("args"))
    selected = body.get("selected_id")
    if selected is not None and not isinstance(selected, str):
        raise RequestError(f"selected_id must be an entry id (a string), not {kind_of(selected)}")
    version, generation = _optional_version(body, "version"), _optional_version(body, "generation")
    loaded = store.get(location.real, refresh=op in ("state", "poll"))
    recorded = None
    if not (raw_settings or {}).get("context_window"):
        with loaded.lock:
            recorded = recorded_context_window(loaded.sm)
    settings = _settings(raw_settings, recorded)
    notes = getattr(state, "notes", None)  # a state without notes: an embedding of the handlers
    if op in NOTE_OPS:
        if notes is None:
            raise RequestError("this server keeps no notes")
        with loaded.lock:
            return note_request(notes, loaded.sm, op, args, store_label=getattr(state, "notes_label", None),
                                writable=notes_writable), None
    notes_version = _notes_version(notes)  # before the layout: a note added meanwhile is seen next poll
    shared = store.view(loaded, key, notes)
    with loaded.lock:
        if op == "structure":
            return {"version": shared.version}, structure_payload(shared.view, selected)
        if op == "state":
            return _state(store, loaded, shared, location, settings, notes_version), None
        if op == "poll":
            if generation == loaded.generation and version == shared.version:
                return {"kind": "none", "version": shared.version, "generation": loaded.generation,
                        "notes_version": notes_version}, None
            chain = shared.deltas_since(version) if generation == loaded.generation and version is not None else None
            reply = _state(store, loaded, shared, location, settings, notes_version)
            if chain:
                reply.update(kind="delta", deltas=chain)
            else:
                reply["kind"] = "layout"
            return reply, None
        if op == "gauge":
            leaf = entry_id_arg(args, "leaf_id", optional=True)
            if leaf is not None and leaf != loaded.sm.leaf_id:
                # A leaf moved in the viewer only: the branch to it, not kept (the file is untouched).
                return gauge_at_leaf(loaded.sm, settings, leaf, facts=shared.view.rows.facts), None
            return store.gauge(loaded, shared, settings), None
        if op == "compact_preview":
            return preview_payload(SessionView(loaded.sm, shared.view.rows, settings)), None
        return read_request(shared.view, op, args), None


class SessionHandler(PiLabHandler):
    """``POST session/<op>`` (see the module docstring) and ``GET session?path=``."""

    @web.authenticated
    @authorized(action="read")
    async def get(self, op: str | None = None) -> None:
        if op:
            raise ApiError(405, "use POST for session requests", reason="bad-request")
        location = self.location(self.get_query_argument("path", ""))
        result, _ = await self.in_thread(lambda: session_answer(self.pi_lab, location, "state", {}), location)
        self.send_json(result)

    @web.authenticated
    @authorized(action="read")
    async def post(self, op: str | None = None) -> None:
        if op in WRITE_OPS:
            raise ApiError(403, READ_ONLY_MESSAGE, reason="read-only")
        if op not in SESSION_OPS:
            raise ApiError(404, f"unknown session request {op!r}", reason="bad-request")
        notes_writable = None
        if op in NOTE_WRITES:
            await self._may_write_notes()
        elif op == "notes":  # the payload says whether this user may add notes (Jupyter's write permission)
            allowed = await ensure_async(self.authorizer.is_authorized(self, self.current_user, "write",
                                                                       self.auth_resource))
            notes_writable = None if allowed else False
        body = self.body()
        location = self.location(body.get("path"))
        result, blob = await self.in_thread(
            lambda: session_answer(self.pi_lab, location, op, body, notes_writable=notes_writable), location)
        if blob is not None:
            self.set_header("Cache-Control", "no-store")
            self.set_header("X-Pi-Lab-Version", str(result["version"]))
            self.finish(blob, set_content_type="application/octet-stream")
        else:
            self.send_json(result)

    @authorized(action="write")
    async def _may_write_notes(self) -> None:
        """A note is written to a file on the server: Jupyter's write permission, as for saving
        a file (a user allowed to read only sees the notes and cannot add any). The decorator
        checks it (and makes even a plain method a coroutine); async says so to the types."""


# ---------------------------------------------------------------------------------------------
# the sessions folder and notebooks


class SessionsListHandler(PiLabHandler):
    """``GET sessions?q=``: the Pi Sessions panel."""

    @web.authenticated
    @authorized(action="read")
    async def get(self) -> None:
        query = self.get_query_argument("q", "")
        config = self.pi_lab.config
        result = await self.in_thread(lambda: self.pi_lab.listing.list(config.sessions_dir, query,
                                                                       others=config.session_folders()))
        self.send_json(result)


class DetectHandler(PiLabHandler):
    """``GET detect?path=``: ``{"agent": "pi" | "claude-code" | "codex" | null}`` from the file's
    first lines (never its name), so that a double-click opens any agent's session in the viewer
    and leaves other JSONL files to JupyterLab. Reads at most the first MiB; writes nothing."""

    @web.authenticated
    @authorized(action="read")
    async def get(self) -> None:
        location = self.location(self.get_query_argument("path", ""))

        def agent() -> str | None:
            check_regular_file(location.real)  # missing: 404; a FIFO or a folder: said, never opened
            try:
                return detect_format(location.real)
            except (UnknownSessionFormat, TypeError):  # TypeError: a line's type is a list (store._agent_of)
                return None

        self.send_json({"agent": await self.in_thread(agent, location), "path": location.key})


class OpenInNotebookHandler(PiLabHandler):
    """``POST open-in-notebook`` ``{"path"}``: ``{"path": notebook, "created": bool}``."""

    @web.authenticated
    @authorized(action="write")
    async def post(self) -> None:
        location = self.location(self.body().get("path"))

        def header_of() -> Any:
            check_regular_file(location.real)  # a FIFO would block the open; say what it is
            try:
                # Another agent's session opens in the widget too (read-only, by that agent's rules).
                if detect_format(location.real) != "pi":
                    return {}
            except (UnknownSessionFormat, TypeError):  # TypeError: see store._agent_of
                pass
            return read_session_header(location.real)

        header = await self.in_thread(header_of, location)
        if header is None:
            raise ApiError(422, f"{location.key} is not a pi session (its first line is not a session header)",
                                reason="not-a-session")
        folder, stem, target = notebook_plan(location, self.pi_lab.config.notebook_dir)
        source = notebook_source(target)
        cm = self.contents_manager
        if folder and not await ensure_async(cm.dir_exists(folder)):
            await ensure_async(cm.save({"type": "directory"}, folder))
        for attempt in range(1000):
            name = f"{stem}.ipynb" if attempt == 0 else f"{stem}-{attempt}.ipynb"
            path = posixpath.join(folder, name) if folder else name
            if await ensure_async(cm.file_exists(path)):
                if await self._opens(path, source):
                    self.send_json({"path": path, "created": False, "source": source})
                    return
                continue
            await ensure_async(cm.save({"type": "notebook", "format": "json", "content": make_notebook(source)}, path))
            self.send_json({"path": path, "created": True, "source": source})
            return
        raise ApiError(409, f"too many notebooks named {stem}-N.ipynb already", reason="conflict")

    async def _opens(self, path: str, source: str) -> bool:
        """Whether the notebook at ``path`` is one this handler made for the same file."""
        try:
            model = await ensure_async(self.contents_manager.get(path, content=True, type="notebook"))
        except Exception:  # not a readable notebook: leave it alone and pick another name
            return False
        cells = (model.get("content") or {}).get("cells") or []
        return bool(cells) and cells[0].get("source") == source


def make_handlers(base_url: str) -> list[tuple[str, type[PiLabHandler]]]:
    root = url_path_join(base_url, API_ROOT)
    return [
        (url_path_join(root, "sessions"), SessionsListHandler),
        (url_path_join(root, "session"), SessionHandler),
        (url_path_join(root, "session", r"([a-z_]+)"), SessionHandler),
        (url_path_join(root, "open-in-notebook"), OpenInNotebookHandler),
        (url_path_join(root, "detect"), DetectHandler),
    ]
