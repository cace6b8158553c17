"""Step through time: a session as it was after each line of its file, in one widget.

:func:`stepper` returns a :class:`Stepper`: a Play button, step back / step forward buttons and
a slider (focused, it takes the arrow keys, Home and End) above one
:class:`~pi_lab.widget.SessionWidget`. Moving the slider to ``k`` shows :func:`session_at`
``(session, k)`` in that widget (``SessionWidget.show``): the tree as it had grown, the leaf where
it was then, the gauge and the timeline up to that moment. The widget is not rebuilt per step.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as ipw

from pi_lab.teach.history import TeachError, _manager, session_at

__all__ = ["Stepper", "stepper"]


def _what(entry: dict[str, Any]) -> str:
    """A few words on the entry a line added (the caption under the controls)."""
    kind = entry.get("type", "?")
    if kind == "message":
        message = entry.get("message") or {}
        role = message.get("role", "?")
        if role == "assistant" and message.get("stopReason") == "toolUse":
            return "assistant message (calls a tool)"
        return f"{role} message"
    return str(kind).replace("_", " ")


class Stepper(ipw.VBox):
    """The control :func:`stepper` returns. ``slider.value`` is the step (the line count),
    ``widget`` the SessionWidget showing it, :meth:`go` moves to a step."""

    def __init__(self, source: Any, start: int | None, **options: Any):
        from pi_lab.widget import SessionWidget

        self._source = _manager(source)
        lines = len(self._source.file_entries)
        step = lines if start is None else start
        if step.__class__ is not int or not 1 <= step <= lines:
            raise TeachError(f"start is a line of the session's file, 1 to {lines}, not {start!r}")
        if isinstance(source, SessionWidget):  # the settings the teacher chose are kept
            for name in ("context_window", "reserve_tokens", "keep_recent_tokens"):
                options.setdefault(name, getattr(source, name))
        self.widget = SessionWidget(session_at(self._source, step), **options)
        self.play = ipw.Play(value=step, min=1, max=lines, step=1, interval=700, description="Play",
                             layout=ipw.Layout(width="auto"))
        self.slider = ipw.IntSlider(value=step, min=1, max=lines, step=1, description="after line",
                                    continuous_update=True, layout=ipw.Layout(width="420px"))
        # The play button moves the slider in the browser (and the slider the play button's place).
        ipw.jslink((self.play, "value"), (self.slider, "value"))
        self.back = ipw.Button(description="◀ step", tooltip="the line before", layout=ipw.Layout(width="auto"))
        self.forward = ipw.Button(description="step ▶", tooltip="the next line", layout=ipw.Layout(width="auto"))
        self.back.on_click(lambda _b: self.go(self.slider.value - 1))
        self.forward.on_click(lambda _b: self.go(self.slider.value + 1))
        self.caption = ipw.HTML()
        self.slider.observe(self._on_step, "value")
        self._shown = step
        self._caption()
        super().__init__([ipw.HBox([self.play, self.back, self.slider, self.forward]), self.caption, self.widget])
        self.add_class("pi-lab-stepper")

    @property
    def step(self) -> int:
        return self._shown

    def go(self, step: int) -> None:
        """Show the session after line ``step`` (clamped to the file's lines)."""
        self.slider.value = max(self.slider.min, min(self.slider.max, step))

    def _on_step(self, change: dict[str, Any]) -> None:
        step = change["new"]
        if step == self._shown:
            return
        self._shown = step
        self.widget.show(session_at(self._source, step))
        self._caption()

    def _caption(self) -> None:
        lines = self._source.file_entries
        k = self._shown
        what = _what(lines[k - 1]) if k > 1 else ""
        added = "the header" if k == 1 else ("an " if what[:1] in "aeiou" else "a ") + what
        self.caption.value = (f"<span class='pi-lab-stepper-caption'>The session after line {k} of {len(lines)} "
                              f"(that line added {html.escape(added)}).</span>")


def stepper(path_or_session: Any, *, start: int | None = None, **options: Any) -> Stepper:
    """Step through a session's history: the session after line ``k`` of its file, ``k`` set by
    a slider, Play, or the step buttons (the header is line 1; ``start`` defaults to the last
    line, the session as it is now). ``path_or_session``: a path, a SessionManager, an
    AgentSession or a SessionWidget (its settings are kept); only read. ``options`` go to the
    SessionWidget (``context_window=``...)."""
    return Stepper(path_or_session, start, **options)
