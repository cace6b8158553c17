"""``SessionWidget``: a pi session in a notebook (the tree, what the model sees, the gauge).

The whole Python-to-browser contract is on this page:

* traitlets hold everything a view needs to redraw (leaf, selection, filter, search, folds,
  settings, the row structure and its version, the gauge), so a saved notebook and a second
  view of the same widget show the same thing;
* the browser sends ``{"kind": "request", "id", "op", "args"}``; read requests are answered
  at once by ``pi_lab.view.payload.read_request``, actions (``pi_lab.view.actions``:
  navigate, compact, label, fork, clone, cancel) run as asyncio tasks so the kernel stays
  responsive; the answer is ``{"kind": "response", "id", "ok", "result" | "error"}``;
* every change to the rows (a new filter, search or folds, catching up with the session, a
  rebind after a fork) goes through one serial job queue (``jobs.py``); after a fork the
  widget rebinds on the agent's ``session_switch`` event;
* live changes arrive as ``{"kind": "delta"}`` messages (see ``rows.py``) and
  ``{"kind": "event"}`` messages (streaming text, tool progress).

Writing (issue 9). A widget on a path opens the file read-only (``pi_lab.open(path)``,
``SessionWidget(path)``; ``writable=True`` opens it for writing): nothing is ever written to it.

* traitlets ``writable`` (Bool) and ``write_plan`` (Unicode: what allowing writes will do to
  which file, e.g. "Rewrite /p/x.jsonl in format v3 (it is v1), then append"; "" once writable);
* request ``{"op": "allow_writes"}`` -> ``{"writable": true, "session_file", "done": <the plan
  carried out>}``; after it ``writable`` is true and ``write_plan`` "";
* a refused action answers ``{"kind": "response", "ok": false, "error": <message>,
  "refused": true}``: the message names the file and the way to write (read-only), or says
  that another process wrote the file (``"concurrent": true``; its entries are then shown);
  an engine bug answers ``"refused": false`` with ``"error"`` and its traceback goes to the
  kernel log. Navigation without a summary or label is allowed read-only (the leaf moves in
  memory only); summaries, labels and compactions are refused; fork and clone write a new file
  and stay allowed (unless the source would need rewriting first).
* ``session`` lists ``write_actions`` (the requests that act on the session: the one Python
  list, ``pi_lab.view.actions.WRITE_ACTIONS``) and carries ``model`` (the session's own recorded model, e.g.
  ``anthropic/claude-opus-4-5``, or None) and ``answering_model`` (the model that answers in
  this kernel — prompts, summaries, compactions — or None when nothing can answer here).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets as t

from pi_lab.errors import PiLabError
from pi_lab.view.actions import WRITE_ACTIONS, ActionRefused, run_action
from pi_lab.view.gauge import gauge_after_entries, recorded_context_window
from pi_lab.view.header import session_header
from pi_lab.view.notes import NOTE_OPS, store_of
from pi_lab.view.payload import RequestError, SessionView, ViewSettings, read_request, structure_payload
from pi_lab.widget.display import FALLBACK_CSS as FALLBACK_CSS  # (tests and the snapshot read it here)
from pi_lab.widget.display import SnapshotDisplay
from pi_lab.widget.jobs import JobQueue
from pi_lab.widget.live import LiveFeed, follow_file, guard_kernel_parent
from pi_lab.widget.notes import WidgetNotes
from pi_lab.widget.sendable import keep_logs_sendable, sendable

if TYPE_CHECKING:
    from pi_lab.agent import AgentSession

__all__ = ["SessionWidget", "open_session"]

_STATIC = Path(__file__).resolve().parent.parent / "static"
STATE_DELAY_S = 0.5
SNAPSHOT_DELAY_S = 5.0
# A pending snapshot (displayed at once where a person is at the frontend) is completed once the
# kernel has been quiet this long after the viewer's latest request (its first rows are drawn
# by then), or this long after the cell when no viewer asks at all (a frontend that draws no
# widget): building it holds the kernel for a second or two on a large session.
SNAPSHOT_AFTER_REQUEST_S = 0.5
SNAPSHOT_IDLE_DELAY_S = 2.0
keep_logs_sendable()


def _open_path(path: str | os.PathLike[str], writable: bool) -> Any:
    """The session at ``path``: pi's manager (read-only unless ``writable``), or another agent's
    read-only session, recognised from the content (those files are never written)."""
    from pi_lab.formats.detect import UnknownSessionFormat, detect_format
    from pi_lab.session import SessionManager

    try:
        agent = detect_format(path)
    except UnknownSessionFormat:
        agent = "pi"  # pi's reader says what is wrong with the file
    if agent == "pi":
        return SessionManager.open(path, read_only=not writable, lazy=False)
    from pi_lab.formats import open_session

    session = open_session(path)
    if writable and isinstance(session, SessionManager):  # every adapter is a read-only SessionManager
        session.make_writable()  # raises the agent's ReadOnlySession: its files are never written
    return session


def _session_manager_and_agent(source: Any, writable: bool = False, **agent_options: Any) -> tuple[Any, Any]:
    if isinstance(source, (str, os.PathLike)):
        # Inspection never writes the user's file (no migration or repair on disk); writing
        # is asked for with writable=True or the viewer's "allow writes".
        # Bodies are read eagerly: the view's first build (row facts, gauge, search) reads
        # every entry's body anyway, and one parse costs less than a skeleton plus a re-read.
        source = _open_path(source, writable)
    if hasattr(source, "session_manager") and hasattr(source, "navigate_tree"):
        return source.session_manager, source
    if not hasattr(source, "get_branch"):
        raise TypeError(f"SessionWidget needs a path, a SessionManager or an AgentSession, not {type(source).__name__}")
    from pi_lab.agent import AgentSession

    agent_options.setdefault("record_startup", False)
    return source, AgentSession(source, **{k: v for k, v in agent_options.items() if v is not None})


class SessionWidget(SnapshotDisplay, anywidget.AnyWidget):
    """A live view of a pi session. ``SessionWidget(x)``: x is a path, a SessionManager or an
    AgentSession (a path or manager gets an AgentSession on the offline model for actions)."""

    _esm = _STATIC / "widget.js"

    leaf_id = t.Unicode(None, allow_none=True).tag(sync=True)
    selected_id = t.Unicode(None, allow_none=True).tag(sync=True)
    filter_mode = t.Enum(["default", "no-tools", "user-only", "labeled-only", "all"], "default").tag(sync=True)
    search = t.Unicode("").tag(sync=True)
    folded = t.List(t.Unicode()).tag(sync=True)
    show_label_times = t.Bool(False).tag(sync=True)
    tool_output = t.Enum(["none", "preview", "full"], "preview").tag(sync=True)
    side_pane = t.Enum(["detail", "context", "compactions", "compare"], "detail").tag(sync=True)
    structure = t.Bytes(b"").tag(sync=True)
    structure_version = t.Int(0).tag(sync=True)
    row_count = t.Int(0).tag(sync=True)
    gauge = t.Dict().tag(sync=True)
    compactions = t.List().tag(sync=True)  # kept apart from the gauge: it only changes at a checkpoint
    context_window = t.Int(128_000).tag(sync=True)
    reserve_tokens = t.Int(16_384).tag(sync=True)
    keep_recent_tokens = t.Int(20_000).tag(sync=True)
    session = t.Dict().tag(sync=True)
    status = t.Unicode("").tag(sync=True)
    busy = t.Unicode("").tag(sync=True)
    editor_text = t.Unicode("").tag(sync=True)
    height = t.Int(560).tag(sync=True)
    writable = t.Bool(True).tag(sync=True)
    write_plan = t.Unicode("").tag(sync=True)
    # Notes (pi_lab/widget/notes.py): the store's version (the viewer asks for "notes" when it
    # changes) and the note filter ("", "noted", "tag:<tag>").
    notes_version = t.Int(0).tag(sync=True)
    note_filter = t.Unicode("").tag(sync=True)

    def __init__(self, source: Any, *, model: Any = None, client: Any = None, settings: Any = None,
                 context_window: int | None = None, follow: bool = True, poll_interval: float = 1.0,
                 writable: bool = False, notes: Any = None, **kwargs: Any):
        recorded = not hasattr(source, "navigate_tree")
        # A model answers in this kernel when the caller brought one (an AgentSession, model=,
        # client=); a recorded session's stand-in offline model answers only once writing is on.
        self._brought_model = not recorded or model is not None or client is not None
        sm, agent = _session_manager_and_agent(source, writable, model=model, client=client, settings=settings)
        # What the viewer's actions drive (an AgentSession; view.actions.ActingAgent is what they need of it).
        self.agent: AgentSession = agent
        # A recorded session is drawn against the window of the model that answered it (when
        # known); a session this kernel drives, against its own model's window.
        window = (context_window or (recorded_context_window(sm) if recorded and model is None else None)
                  or getattr(agent.model, "context_window", 0) or 128_000)
        compaction = agent.settings
        kwargs.setdefault("reserve_tokens", compaction.reserve_tokens)
        kwargs.setdefault("keep_recent_tokens", compaction.keep_recent_tokens)
        super().__init__(context_window=window, **kwargs)
        self._sync_agent_settings()
        self._notes = WidgetNotes(self, store_of(notes), self._change_view)
        self.view = SessionView.open(sm, self._view_settings(), filter_mode=self.filter_mode,
                                     search=self.search, folded=self.folded,
                                     **(self._notes.filter_changed(self.note_filter, sm) or {}))
        self.notes_version = self._notes.store.version()
        self._follow = follow
        self._poll_interval = poll_interval
        self._follow_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        # The snapshot outputs this widget displayed (_ipython_display_) and the leaf they show.
        self._snapshot_handles: list[Any] = []
        self._snapshot_leaf: str | None = None
        self._snapshot_timer: asyncio.TimerHandle | None = None
        # The displayed snapshot is the pending one (text picture) until _update_snapshot runs.
        self._snapshot_pending = False
        # A snapshot build under way in steps (_snapshot_step): (steps, leaf, entry count).
        self._snapshot_build: tuple[Any, Any, int] | None = None
        # Deltas pause: the small traitlets catch up, then (later) the saved structure blob.
        self._jobs = JobQueue(self._run_job, ((STATE_DELAY_S, self._publish_state),
                                              (SNAPSHOT_DELAY_S - STATE_DELAY_S, self._refresh_snapshot)), self.log)
        self._feed = LiveFeed(agent, sync=self.sync, stream=self._push_event, status=self._set_status)
        self._unsubscribe_switch = agent.subscribe(self._on_agent_event)
        self.on_msg(self._on_msg)
        guard_kernel_parent()  # the viewer's requests must not mislabel the cells that run meanwhile
        self._publish_layout()

    # ------------------------------------------------------------------ engine → traitlets

    @property
    def session_manager(self) -> Any:
        return self.view.sm

    @property
    def notes(self) -> Any:
        """The :class:`~pi_lab.research.notes.NoteStore` this widget's notes go to (``notes=``;
        default ``pi-lab-notes.jsonl`` in the kernel's folder). Notes added here in Python show
        in the viewer too."""
        return self._notes.store

    def _view_settings(self) -> ViewSettings:
        return ViewSettings(self.context_window, self.reserve_tokens, self.keep_recent_tokens,
                            bool(getattr(self.agent.settings, "enabled", True)))

    def _publish_layout(self) -> None:
        view = self.view
        view.refresh_gauge()
        blob = structure_payload(view, self.selected_id)
        header_selected = view.rows.ids[view.rows.locate(self.selected_id)] if (self.selected_id and view.rows.ids) else None
        with self.hold_sync():
            self.structure = blob
            self.structure_version = view.rows.version
            self.row_count = len(view.rows.rows)
            self.leaf_id = view.sm.leaf_id
            self._publish_gauge()
            self.session = self._session_info()
            self._publish_access()
            if header_selected is not None and header_selected != self.selected_id:
                self.selected_id = header_selected

    def _publish_gauge(self) -> None:
        gauge = dict(self.view.gauge)
        compactions = gauge.pop("compactions", [])
        gauge["compaction_count"] = len(compactions)
        self.gauge = gauge
        if compactions != self.compactions:
            self.compactions = compactions

    def _session_info(self) -> dict[str, Any]:
        sm = self.view.sm
        model = self.agent.model
        read_only = bool(getattr(sm, "read_only", False))
        answering = None
        if model is not None and (self._brought_model or not read_only):
            answering = f"{getattr(model, 'provider', '?')}/{getattr(model, 'id', '?')}"
        return session_header(sm, file=sm.session_file, following=bool(self._follow and sm.session_file),
                              read_only=read_only, answering_model=answering)

    def _publish_access(self) -> None:
        sm = self.view.sm
        read_only = bool(getattr(sm, "read_only", False))
        self.writable = not read_only
        self.write_plan = sm.write_plan() if read_only else ""

    def sync(self) -> str:
        """Catch up with the session (appends, a moved leaf); returns ``none``, ``delta`` or
        ``layout``. While a job of the queue runs or waits, the sync is queued behind it
        (and ``none`` returned): the rows are never touched by two jobs at once."""
        if self._closed:
            return "none"
        if self._jobs.pending and self._jobs.submit("sync") is not None:
            return "none"
        return self._apply_sync(self.view.rows.sync())

    async def _run_job(self, kind: str, payload: Any) -> None:
        """One job of the queue. Row work (a re-layout of a large session takes a second)
        runs on a worker thread; publishing runs on the loop."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        if kind == "view":
            await loop.run_in_executor(None, lambda: self.view.rows.set_view(**payload))
            if not self._closed:
                self._publish_layout()
        elif kind == "sync":
            result = await loop.run_in_executor(None, self.view.rows.sync)
            if not self._closed:
                self._apply_sync(result)
        elif kind == "rebind":
            sm = self.agent.session_manager
            if sm is not self.view.sm:  # the new file's rows are laid out off the loop too
                await loop.run_in_executor(None, lambda: self.view.rebind(sm))
                if not self._closed:
                    self._publish_layout()
        else:
            payload()

    def _on_agent_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "session_switch":  # a fork or clone: the agent is on another file
            if self._jobs.submit("rebind") is None:
                self._rebind()

    def _rebind(self) -> None:
        sm = self.agent.session_manager
        if self._closed or sm is self.view.sm:
            return  # an in-memory session starts over in the same manager: a sync reloads it
        self.view.rebind(sm)
        self._publish_layout()

    def _apply_sync(self, result: Any) -> str:
        if result.kind == "layout":
            self._publish_layout()
        elif result.kind == "delta":
            previous = self.view.gauge
            gauge = gauge_after_entries(previous, result.new_entries)
            self.view.gauge = gauge if gauge is not None else self.view.refresh_gauge()
            # One message per append: the row operations plus what changed in the gauge. The
            # traitlets catch up once the session is quiet (the job queue's quiet steps).
            message = result.delta.message()
            message["leaf_id"] = self.view.sm.leaf_id
            message["entries"] = self.view.sm.get_entry_count()
            message["gauge"] = {k: v for k, v in self.view.gauge.items()
                                if k != "compactions" and previous.get(k) != v}
            if self.view.gauge.get("compactions") != previous.get("compactions"):
                message["compactions"] = self.view.gauge.get("compactions")
            self.send(message)
            self._jobs.touched()
        return result.kind

    def _publish_state(self) -> None:
        """The small traitlets after a run of deltas (views already applied the deltas)."""
        with self.hold_sync():
            self.structure_version = self.view.rows.version
            self.row_count = len(self.view.rows.rows)
            self.leaf_id = self.view.sm.leaf_id
            self._publish_gauge()
            self.session = {**self.session, "entries": self.view.sm.get_entry_count()}

    def _refresh_snapshot(self) -> None:
        if not self._closed:
            self.structure = structure_payload(self.view, self.selected_id)

    def _set_status(self, busy: str, text: str) -> None:
        with self.hold_sync():
            self.busy = busy
            if text or not busy:
                self.status = text
            if not busy:
                # The run is over: bring the traitlets up to date now rather than when quiet.
                self._jobs.quiet_now(1)

    def _push_event(self, data: dict[str, Any]) -> None:
        if not self._closed:
            self.send({"kind": "event", **data})

    # ------------------------------------------------------------------ traitlets → engine

    @t.observe("filter_mode", "search")
    def _on_view_filter(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "view") or getattr(self, "_resetting_view", False):
            return  # still in __init__ (the view is built with these values), or a reset
        # Like pi, a new filter or search clears the folds.
        self._change_view(filter_mode=self.filter_mode, search=self.search, folded=())
        self.folded = []

    @t.observe("note_filter")
    def _on_note_filter(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "view"):
            return
        changes = self._notes.filter_changed(change["new"])
        if changes is not None:
            self._change_view(**changes)

    @t.observe("folded")
    def _on_folded(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "view") or getattr(self, "_resetting_view", False):
            return
        if self._jobs.pending_view() or frozenset(self.folded) != self.view.rows.folded:
            self._change_view(folded=tuple(self.folded))

    def _change_view(self, **changes: Any) -> None:
        """Re-filter the rows: a job of the queue inside the kernel's event loop (keystrokes
        that arrive meanwhile are merged into it), at once outside one."""
        if self._jobs.submit("view", changes) is None:
            self.view.rows.set_view(**changes)
            self._publish_layout()

    @t.observe("context_window", "reserve_tokens", "keep_recent_tokens")
    def _on_settings(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "view"):
            return
        self.view.settings = self._view_settings()
        self._sync_agent_settings()
        self.view.refresh_gauge()
        self._publish_gauge()

    def _sync_agent_settings(self) -> None:
        """The agent compacts with the numbers the preview shows."""
        from dataclasses import replace

        try:
            self.agent.settings = replace(self.agent.settings, reserve_tokens=self.reserve_tokens,
                                          keep_recent_tokens=self.keep_recent_tokens)
        except (TypeError, ValueError):
            pass

    # ------------------------------------------------------------------ browser requests

    def _on_msg(self, _widget: Any, content: Any, buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("kind") != "request":
            return
        request_id, op, args = content.get("id"), content.get("op"), content.get("args") or {}
        self._notes.check()  # another writer's notes: the viewer hears of them with this request
        if self._snapshot_pending and self._snapshot_build is None:
            # The viewer is drawing: its requests go first, the pending snapshot once they stop
            # (a build under way goes on: its steps leave room for the requests).
            self._schedule_snapshot(SNAPSHOT_AFTER_REQUEST_S)
        if op == "hello":
            self._start_following()
            self._notes.start(self._poll_interval, lambda: self._closed)
            self._reply(request_id, {"version": self.view.rows.version})
        elif op == "structure":
            blob = structure_payload(self.view, self.selected_id)
            self._reply(request_id, {"version": self.view.rows.version}, [blob])
        elif op in WRITE_ACTIONS:
            self._spawn(self._act(request_id, op, args))
        elif op == "allow_writes":
            self._allow_writes(request_id)
        elif op in NOTE_OPS:  # never refused as a write: notes are not in the session
            try:
                self._reply(request_id, self._notes.answer(op, args))
            except (PiLabError, OSError) as error:
                self._reply_error(request_id, str(error))
        else:
            try:
                self._reply(request_id, read_request(self.view, op, args))
            except RequestError as error:
                self._reply_error(request_id, str(error))

    # The comm's state (at open, in updates) and its custom messages (replies, deltas, events)
    # carry session text, which jupyter_client cannot pack with a lone surrogate (sendable.py).
    def get_state(self, key: Any = None) -> dict[str, Any]:
        return sendable(super().get_state(key))

    def send(self, content: Any, buffers: Any = None) -> None:
        super().send(sendable(content), buffers)

    def _reply(self, request_id: Any, result: Any, buffers: list[bytes] | None = None) -> None:
        self.send({"kind": "response", "id": request_id, "ok": True, "result": result}, buffers)

    def _reply_error(self, request_id: Any, message: str, **extra: Any) -> None:
        self.send({"kind": "response", "id": request_id, "ok": False, "error": message, **extra})

    def allow_writes(self) -> str:
        """Make a read-only session writable (the viewer's button); returns what was done."""
        sm = self.view.sm
        plan = sm.write_plan() if getattr(sm, "read_only", False) else ""
        if plan:
            sm.make_writable()
            self.sync()
        with self.hold_sync():
            self.session = self._session_info()
            self._publish_access()
        return plan

    def _allow_writes(self, request_id: Any) -> None:
        try:
            done = self.allow_writes()
        except (PiLabError, OSError) as error:  # another writer, a full disk: the file is as it was
            self.sync()
            self._set_status("", str(error))
            self._reply_error(request_id, str(error), refused=True)
            return
        self._set_status("", f"Writes allowed: {done}" if done else "")
        self._reply(request_id, {"writable": True, "session_file": self.view.sm.session_file, "done": done})

    def _spawn(self, coroutine: Any) -> None:
        try:
            task = asyncio.get_running_loop().create_task(coroutine)
        except RuntimeError:
            asyncio.run(coroutine)
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _act(self, request_id: Any, op: str, args: dict[str, Any]) -> None:
        if op == "compact":
            self._set_status("compacting", "Compacting…")
        elif op == "navigate" and args.get("summarize"):
            self._set_status("navigating", "Summarizing the branch…")
        try:
            result = await run_action(self.agent, op, args)
        except ActionRefused as error:
            # Another writer's entries (picked up before refusing) are shown at once. Any other
            # refusal changed nothing: answer at once, not behind the syncs of a running agent.
            if error.concurrent:
                await self._jobs.run("sync")
            self._set_status("", str(error))
            self._reply_error(request_id, str(error), refused=True, concurrent=error.concurrent)
            return
        except Exception as error:  # an engine bug: say so, with the traceback in the kernel log
            self.log.exception("pi_lab: %s failed", op)
            message = f"{op} failed with an internal error: {type(error).__name__}: {error} (traceback in the kernel log)"
            self._set_status("", message)
            self._reply_error(request_id, message, refused=False)
            return
        await self._jobs.run("sync")
        if op == "navigate" and not result.get("already_here"):
            with self.hold_sync():
                self.editor_text = result.get("editor_text") or ""
                self.selected_id = self.view.sm.leaf_id or self.selected_id
            if result.get("nothing_to_summarize"):
                self._set_status("", "Nothing to summarize: no entries are left behind on the way there. Navigated")
            else:
                self._set_status("", "Navigated" + (" with a branch summary" if result.get("summary_id") else ""))
        elif op == "compact":
            self._set_status("", f"Compacted: {result['tokens_before']} tokens before")
        elif op in ("fork", "clone"):
            await self._jobs.run("call", self._reset_view_for_new_session)  # after the rebind
            with self.hold_sync():
                # pi puts the forked message's text back in the editor (clone has none).
                self.editor_text = result.get("selected_text") or ""
                self.selected_id = self.view.sm.leaf_id
            done = "Forked" if op == "fork" else "Cloned"
            self._set_status("", f"{done} into {Path(result['session_file']).name if result.get('session_file') else 'a new session'}")
        elif op == "label":
            self._set_status("", "Label saved" if result.get("label") else "Label removed")
        self._reply(request_id, result)

    def _reset_view_for_new_session(self) -> None:
        """A fork or clone shows a new session: the filter, search and folds of the old one
        go back to pi's defaults. A filter kept from the old session could hide every entry of
        the new one ("No entries found" on a session that has entries), and the folds name
        entries of the old file; pi's /tree also opens a new session unfiltered."""
        self.view.rows.set_view(filter_mode="default", search="", folded=())
        with self.hold_sync():
            # Observers see the view already reset and have nothing left to re-filter.
            self._resetting_view = True
            try:
                self.filter_mode, self.search, self.folded = "default", "", []
            finally:
                self._resetting_view = False
        self._publish_layout()

    # ------------------------------------------------------------------ following a file

    def _start_following(self) -> None:
        sm = self.view.sm
        if not self._follow or self._follow_task is not None or not sm.session_file:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._followed_stamp: tuple[int, int, int] | None = None
        self._follow_task = loop.create_task(follow_file(
            self.view.sm, self.sync, interval=self._poll_interval, stopped=lambda: self._closed,
            on_error=lambda message: self._set_status("", message), refresh=self._refresh_in_turn))

    async def _refresh_in_turn(self) -> list[Any]:
        """Read the file's new lines as a job of the queue, so that no re-layout is reading the
        session on a worker thread meanwhile (it would see the new entries, and the change
        feed would then add them a second time); the rows catch up in the same job."""
        added: list[Any] = []
        # Only a changed file is worth a job: a job every poll would keep the queue from ever
        # being quiet, and the traitlets are published when it is.
        try:
            st = os.stat(self.view.sm.session_file)
        except OSError:
            st = None
        stamp = (st.st_size, st.st_mtime_ns, st.st_ino) if st is not None else None
        if stamp is not None and stamp == self._followed_stamp:
            return added
        self._followed_stamp = stamp

        def refresh_and_sync() -> None:
            added.extend(self.view.sm.refresh())
            if added and not self._closed:
                self._apply_sync(self.view.rows.sync())

        await self._jobs.run("call", refresh_and_sync)
        return added

    def close(self) -> None:
        self._closed = True
        if getattr(self, "_feed", None) is not None:
            self._feed.close()
            self._unsubscribe_switch()
        if getattr(self, "_jobs", None) is not None:
            self._jobs.close()
        for pending in (getattr(self, "_follow_task", None), getattr(self, "_snapshot_timer", None)):
            if pending is not None:  # (close may run from a failed __init__, before they were set)
                pending.cancel()
        if getattr(self, "_notes", None) is not None:
            self._notes.close()
        super().close()

    # ------------------------------------------------------------------ display without a kernel

    def to_html(self, path: str | os.PathLike[str], *, leaf_id: str | None = None) -> Any:
        """Write this session as one self-contained HTML file (``pi_lab.export.export_html``):
        the read-only viewer, no kernel and no network needed to open it, with this widget's
        notes (read-only there)."""
        from pi_lab.export import export_html

        return export_html(self.view.sm, path, leaf_id=leaf_id, notes=self.notes)

    def _snapshot_delay(self, which: str) -> float:
        """How long the snapshot waits after the leaf moved, or after a display nobody draws."""
        return SNAPSHOT_DELAY_S if which == "moved" else SNAPSHOT_IDLE_DELAY_S

    @t.observe("leaf_id")
    def _on_leaf_moved(self, change: dict[str, Any]) -> None:
        if not getattr(self, "_snapshot_handles", None):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no kernel loop: the next display carries the new leaf
        # Once the leaf has stayed put for a while: a snapshot of a large session takes a second.
        self._schedule_snapshot(SNAPSHOT_DELAY_S, loop)

    # ------------------------------------------------------------------ notebook helpers

    def select(self, entry_id: str) -> None:
        self.selected_id = entry_id

    def show(self, session: Any) -> None:
        """Show another session in this widget, as when the agent moves to another file: the
        rows laid out anew (same filter, search and folds), the leaf, the gauge and the
        timeline sent the way a rebuilt session's are. ``pi_lab.teach.stepper`` steps through
        time with it, one widget for every step instead of a new one each time. ``session``: a
        path, a SessionManager or an AgentSession; the selection stays when its entry is there."""
        sm, agent = _session_manager_and_agent(session)

        def swap() -> None:
            if self._closed:
                return
            # Actions and live events now belong to the new session's agent.
            self._feed.close()
            self._unsubscribe_switch()
            self.agent = agent
            self._sync_agent_settings()
            self._feed = LiveFeed(agent, sync=self.sync, stream=self._push_event, status=self._set_status)
            self._unsubscribe_switch = agent.subscribe(self._on_agent_event)
            self.view.rebind(sm)
            if self.selected_id is not None and sm.get_entry(self.selected_id) is None:
                self.selected_id = None
            self._publish_layout()

        # Behind a job under way (a re-layout, a sync), never beside it: the rows are not
        # touched by two jobs at once.
        if self._jobs.pending and self._jobs.submit("call", swap) is not None:
            return
        swap()


def open_session(path: str | os.PathLike[str], *, writable: bool = False, **kwargs: Any) -> SessionWidget:
    """``pi_lab.open(path)``: a :class:`SessionWidget` on a session file, read-only unless
    ``writable=True`` (the file is then migrated to the current format if it is older)."""
    return SessionWidget(path, writable=writable, **kwargs)
