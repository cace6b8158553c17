"""How a :class:`~pi_lab.widget.session_widget.SessionWidget` shows without its kernel: the
text picture of its rows, and the snapshot output displayed before the live viewer
(``pi_lab.widget.snapshot``), kept up to date in steps as the leaf moves."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_lab.widget.sendable import sendable

__all__ = ["SnapshotDisplay", "FALLBACK_CSS", "FALLBACK_ROWS"]

FALLBACK_ROWS = 40
# Hide the snapshot (pi_lab/widget/snapshot.py) in an output area where a live viewer (the
# core's ``.pi-lab`` root, outside the snapshot, which draws one of its own) is drawn: JupyterLab,
# Notebook 7 and nbconvert put both outputs of the cell in one ``.jp-OutputArea``. And hide the
# widget's output (displayed right after the snapshot) where it draws no viewer — "model not
# found", or its text/plain without a kernel — once the snapshot's viewer is drawn. The same text is
# src_frontend/labextension/snapshotRenderer.ts SNAPSHOT_CSS (JupyterLab renders no style of
# an output itself there).
FALLBACK_CSS = (".jp-OutputArea:has(.pi-lab:not(.pi-lab-fallback .pi-lab)) > .jp-OutputArea-child:has(.pi-lab-fallback),"
                ".jp-OutputArea:has(.pi-lab:not(.pi-lab-fallback .pi-lab)) .pi-lab-fallback{display:none}"
                ".jp-OutputArea-child:has(.pi-lab-fallback .pi-lab) + .jp-OutputArea-child:not(:has(.pi-lab)){display:none}")


class SnapshotDisplay:
    """The display half of the widget (a mixin before ``anywidget.AnyWidget``): the widget keeps
    ``_snapshot_handles``, ``_snapshot_leaf``, ``_snapshot_timer``, ``_snapshot_pending`` and
    ``_snapshot_build``, calls :meth:`_schedule_snapshot` when its leaf moves, and says how long
    to wait (``_snapshot_delay``: "moved" or "idle", its module's constants)."""

    if TYPE_CHECKING:  # the widget's own traitlets and state, read here
        view: Any
        session: Any
        gauge: Any
        leaf_id: Any
        selected_id: Any
        _closed: bool
        _snapshot_handles: list[Any]
        _snapshot_leaf: str | None
        _snapshot_timer: asyncio.TimerHandle | None
        _snapshot_pending: bool
        _snapshot_build: tuple[Any, Any, int] | None

        def _view_settings(self) -> Any: ...

        def _snapshot_delay(self, which: str) -> float: ...

        @property
        def notes(self) -> Any: ...

    def _snapshot_notes(self) -> dict[str, Any] | None:
        """The widget's notes as a snapshot shows them (read-only); none when the store cannot be
        read (the snapshot is drawn all the same)."""
        from pi_lab.export.html import ExportError, export_notes

        try:
            return export_notes(self.notes, self.view.sm)
        except ExportError:
            return None

    def fallback_text(self, max_rows: int = FALLBACK_ROWS) -> str:
        """A plain-text picture of the session: what a saved notebook shows where the live viewer
        cannot be drawn (reopened without its kernel: "model not found"; a text-only frontend)."""
        info = self.session
        gauge = self.gauge or {}
        name = info.get("name") or (Path(info["file"]).name if info.get("file") else "in-memory session")
        lines = [f"pi session {name}" + (f" — {info['file']}" if info.get("file") else ""),
                 f"{info.get('entries', 0)} entries, leaf {self.leaf_id}, model {info.get('model') or 'unknown'}"
                 + (f", context {gauge['tokens']} of {gauge['context_window']} tokens" if gauge.get("tokens") is not None else "")
                 + (" (read-only)" if info.get("read_only") else "")]
        # Only the rows shown are drawn: a 100k session has tens of thousands.
        lines += self._render_rows(max_rows)
        total = len(self.view.rows.rows)
        if total > max_rows:
            lines.append(f"… {total - max_rows} more rows")
        lines.append("(a snapshot: run the cell with a kernel for the live viewer)")
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]  (AnyWidget's, next in the MRO)
        data = bundle[0] if isinstance(bundle, tuple) else bundle  # (data, metadata) or data
        if isinstance(data, dict):
            data["text/plain"] = sendable(self.fallback_text())
        return bundle

    def _schedule_snapshot(self, delay: float, loop: asyncio.AbstractEventLoop | None = None) -> None:
        try:
            loop = loop or asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._snapshot_timer is not None:
            self._snapshot_timer.cancel()
        self._snapshot_build = None  # a build under way would show what is no longer there
        self._snapshot_timer = loop.call_later(delay, self._update_snapshot)

    def _update_snapshot(self) -> None:
        from pi_lab.widget.snapshot import SNAPSHOT_LIMIT, snapshot_steps

        self._snapshot_timer = None
        sm = self.view.sm
        if self._closed or (sm.leaf_id == self._snapshot_leaf and not self._snapshot_pending):
            return
        # In steps, one per turn of the loop: the kernel answers the viewer in between instead
        # of after the whole build (1.5 s on 10k entries, no step over ~0.5 s).
        steps = snapshot_steps(sm, text=self.fallback_text(), css=FALLBACK_CSS, settings=self._view_settings(),
                               limit=SNAPSHOT_LIMIT, notes=self._snapshot_notes())
        self._snapshot_build = (steps, sm.leaf_id, sm.get_entry_count())
        self._snapshot_step()

    def _snapshot_step(self) -> None:
        build = self._snapshot_build
        if build is None or self._closed:
            return
        steps, leaf, count = build
        sm = self.view.sm
        if sm.leaf_id != leaf or sm.get_entry_count() != count:
            # The session changed between steps: the chunks still to come would not match the
            # tree already built. Start again once it is quiet.
            self._schedule_snapshot(self._snapshot_delay("moved"))
            return
        try:
            next(steps)
        except StopIteration as done:
            self._snapshot_build = None
            data, metadata = done.value
            self._snapshot_leaf = leaf
            self._snapshot_pending = False
            for handle in self._snapshot_handles:
                handle.update(data, raw=True, metadata=metadata)
            return
        asyncio.get_running_loop().call_soon(self._snapshot_step)

    def _snapshot_can_wait(self) -> bool:
        """Whether this display may show a pending snapshot and complete it later (in place).

        Only an update sent while the cell runs is kept by an unattended run: nbclient (and so
        papermill and ``nbconvert --execute``) records the messages of the cell it is running
        and stops listening after the last one. Such a client cannot answer ``input()`` and
        says so in its request (nbclient sets ``allow_stdin`` False); the frontends a person
        reads (JupyterLab, Notebook, VS Code) allow it. So the snapshot waits only for a cell
        run from a client that allows stdin, in a kernel with a running loop; anything else
        (a comm callback, a terminal IPython, a script) gets the whole snapshot at once."""
        import sys

        kernelbase = sys.modules.get("ipykernel.kernelbase")
        if kernelbase is None or not kernelbase.Kernel.initialized():
            return False
        try:
            asyncio.get_running_loop()
            parent = kernelbase.Kernel.instance().get_parent("shell") or {}
        except (RuntimeError, AttributeError, TypeError):
            return False
        header = parent.get("header") or {}
        content = parent.get("content") or {}
        return header.get("msg_type") == "execute_request" and content.get("allow_stdin") is True

    def snapshot_bundle(self, limit: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(data, metadata)`` of the snapshot output (``pi_lab.widget.snapshot``): the read-only
        viewer of the session at its current leaf, for a notebook reopened without its kernel,
        nbconvert's HTML and static sites; at most ``limit`` characters of data."""
        from pi_lab.widget.snapshot import SNAPSHOT_LIMIT, snapshot_bundle

        return snapshot_bundle(self.view.sm, text=self.fallback_text(), css=FALLBACK_CSS,
                               settings=self._view_settings(), limit=SNAPSHOT_LIMIT if limit is None else limit,
                               notes=self._snapshot_notes())

    def _ipython_display_(self, **kwargs: Any) -> None:
        """The viewer, preceded by its snapshot as an output of its own: JupyterLab draws a
        widget output with the widget renderer only (no fallback inside the bundle), so a reopened
        notebook without its kernel showed "model not found" and nothing else. The snapshot hides
        itself (CSS, same output area) wherever the live viewer is drawn."""
        from IPython.display import display

        from pi_lab.widget.snapshot import SNAPSHOT_LIMIT, SNAPSHOT_MIME, snapshot_bundle

        # Building the whole snapshot here would hold back the live viewer's first rows by the
        # same time (1.5 s on 10k entries): where a person reads the output, it is the text
        # picture now and the rest once the viewer has drawn (_snapshot_can_wait).
        wait = self._snapshot_can_wait()
        data, metadata = snapshot_bundle(self.view.sm, text=self.fallback_text(), css=FALLBACK_CSS,
                                         settings=self._view_settings(), limit=SNAPSHOT_LIMIT, pending=wait,
                                         notes=None if wait else self._snapshot_notes())
        pending = bool(data[SNAPSHOT_MIME].get("pending"))
        # A display id: when the leaf moves, the snapshot is updated in place (_update_snapshot),
        # so a notebook saved after navigating shows where the reader left it.
        handle = display(data, raw=True, metadata=metadata, display_id=True)
        if handle is not None:
            self._snapshot_handles.append(handle)
            self._snapshot_leaf = self.view.sm.leaf_id
            if pending:
                self._snapshot_pending = True
                self._schedule_snapshot(self._snapshot_delay("idle"))
        bundle = self._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, None)
        if data:
            display(data, raw=True, metadata=metadata or None)

    def rows_text(self, *, all_rows: bool = True) -> list[str]:
        """The visible rows as pi's /tree draws them (handy in a notebook or a test)."""
        return self._render_rows(None)

    def _render_rows(self, stop: int | None) -> list[str]:
        from dataclasses import replace

        from pi_lab.cli_render import render_row

        rows = self.view.rows
        selected = rows.locate(self.selected_id) if self.selected_id else -1
        # Rows are laid out without their text (the viewer asks for the visible ones): the
        # flattened tree has it, as for the viewer's rows request.
        return [render_row(row if row.text is not None else replace(row, text=rows.flat.display_text(row.index, rows.home)),
                           selected=i == selected) for i, row in enumerate(rows.rows[:stop])]
