"""The notebook widget's notes (issue 26): its store, the note requests, and noticing other writers.

A widget annotates whether or not it may write its session (notes live in a sidecar
:class:`~pi_lab.research.notes.NoteStore`, never in the session). It publishes the store's
version in the synced traitlet ``notes_version``: after its own note requests at once, and when
another writer (``c.ask``, a second kernel, ``widget.notes.add(...)`` in a cell) changed the file,
on each request from the viewer and on a poll every ``interval`` seconds once a viewer is drawn.
The viewer asks for ``notes`` again when the number changes. With a note filter on, a change of
the notes lays the rows out again (a new structure version), as any view change does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pi_lab.errors import PiLabError
from pi_lab.research.notes import NoteStore
from pi_lab.view.notes import kept_entry_ids, note_filter_arg, note_request

__all__ = ["WidgetNotes"]


class WidgetNotes:
    """The notes side of one :class:`~pi_lab.widget.session_widget.SessionWidget`."""

    def __init__(self, widget: Any, store: NoteStore, change_view: Callable[..., None]) -> None:
        self.widget = widget
        self.store = store
        self._change_view = change_view  # the widget's re-layout (a job of its queue)
        self._task: asyncio.Task[None] | None = None

    def keep(self, note_filter: str, sm: Any = None) -> frozenset[str] | None:
        """The entries ``note_filter`` keeps in the widget's session (None: no filter)."""
        return kept_entry_ids(self.store, self.widget.view.sm if sm is None else sm, note_filter)

    def filter_changed(self, value: Any, sm: Any = None) -> dict[str, Any] | None:
        """The view change for a new ``note_filter`` traitlet value (in session ``sm``, default the
        widget's), or None (and a status line) when it is not one."""
        try:
            note_filter = note_filter_arg(value)
            return {"note_filter": note_filter, "note_keep": self.keep(note_filter, sm)}
        except (PiLabError, OSError) as error:
            self.widget.status = str(error)
            return None

    def answer(self, op: str, args: Any) -> dict[str, Any]:
        """One note request (raises RequestError, NoteStoreError or OSError for the viewer)."""
        payload = note_request(self.store, self.widget.view.sm, op, args)
        self.publish(payload["version"])
        return payload

    def check(self) -> bool:
        """Whether the store changed since the widget last published its version (then published)."""
        try:
            version = self.store.version()
        except OSError:
            return False
        if version == self.widget.notes_version:
            return False
        self.publish(version)
        return True

    def publish(self, version: int) -> None:
        widget = self.widget
        if version == widget.notes_version:
            return
        widget.notes_version = version
        rows = widget.view.rows
        if rows.note_filter:
            try:
                keep = self.keep(rows.note_filter)
            except (PiLabError, OSError) as error:
                widget.status = str(error)
                return
            if keep != rows.note_keep:
                self._change_view(note_filter=rows.note_filter, note_keep=keep)

    def start(self, interval: float, stopped: Callable[[], bool]) -> None:
        """Poll the store every ``interval`` seconds in the kernel's loop (once; none outside one)."""
        if self._task is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._task = loop.create_task(self._poll(interval, stopped))

    async def _poll(self, interval: float, stopped: Callable[[], bool]) -> None:
        while not stopped():
            await asyncio.sleep(interval)
            if not stopped():
                self.check()

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
