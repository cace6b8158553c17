"""Predict, then reveal: a question the student answers before the answer is shown.

:func:`exercise` returns an ipywidgets box: the question, the student's prediction (radio
buttons for ``choices``, a text box for a number), and a "Reveal" button (Tab reaches it, Enter
or Space presses it). The reveal says whether the prediction was right, explains, and makes the
answer happen: the node selected in a widget, and the teacher's own ``reveal`` function run.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as ipw

from pi_lab.teach.history import TeachError

__all__ = ["Exercise", "exercise"]


def _number(text: str) -> float | None:
    """The number the student typed ("12,000", " 3.5 ", "12k"), or None."""
    cleaned = text.strip().replace(",", "").replace("_", "").replace(" ", "")
    scale = 1.0
    if cleaned[-1:].lower() == "k":
        cleaned, scale = cleaned[:-1], 1000.0
    try:
        value = float(cleaned) * scale
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class Exercise(ipw.VBox):
    """One exercise (see :func:`exercise`). ``prediction`` is the input, ``reveal_button`` the
    button, ``result`` the HTML the reveal fills; :meth:`reveal` is what the button does."""

    def __init__(self, question: str, *, choices: Sequence[Any] | None, number: bool, answer: Any,
                 reveal: Callable[[], Any] | None, widget: Any, node: str | None, explain: str,
                 tolerance: float):
        self.answer = answer
        self.explain = explain
        self.tolerance = tolerance
        self._reveal_fn = reveal
        self._widget = widget
        self._node = node
        self.revealed = False
        self.correct: bool | None = None
        self.question = ipw.HTML(f"<b>{html.escape(question)}</b>")
        if choices is not None:
            # the full width: a choice is a sentence, and ipywidgets cuts a radio label to its box
            self.prediction: ipw.RadioButtons | ipw.Text = ipw.RadioButtons(
                options=list(choices), value=None, layout=ipw.Layout(width="100%"))
        else:
            # continuous_update=False: the value is committed by Enter or by leaving the box (Tab)
            self.prediction = ipw.Text(placeholder="your prediction (a number)", continuous_update=False)
        self.reveal_button = ipw.Button(description="Reveal", button_style="info",
                                        tooltip="show the answer (predict first)")
        self.reveal_button.on_click(lambda _button: self.reveal())
        self.result = ipw.HTML("")
        self.output = ipw.Output()
        # choices stacked above the button (a row beside it squeezed the sentences to a few letters)
        answer_row = (ipw.VBox([self.prediction, self.reveal_button]) if choices is not None
                      else ipw.HBox([self.prediction, self.reveal_button]))
        super().__init__([self.question, answer_row, self.result, self.output])
        self.add_class("pi-lab-exercise")

    def predicted(self) -> Any:
        """The student's prediction (None: none made)."""
        if isinstance(self.prediction, ipw.RadioButtons):
            return self.prediction.value
        text = self.prediction.value
        return _number(text) if text.strip() else None

    def is_right(self, prediction: Any) -> bool:
        if isinstance(self.prediction, ipw.RadioButtons):
            return prediction == self.answer
        return prediction is not None and abs(prediction - float(self.answer)) <= self.tolerance

    def reveal(self) -> None:
        """Say whether the prediction was right, explain, and make it happen in the widget."""
        prediction = self.predicted()
        if prediction is None and isinstance(self.prediction, ipw.Text) and self.prediction.value.strip():
            verdict = f"“{html.escape(self.prediction.value)}” is not a number. "
            self.correct = False
        elif prediction is None:
            verdict = "No prediction made. "
            self.correct = None
        else:
            self.correct = self.is_right(prediction)
            verdict = "Right! " if self.correct else "Not quite. "
        shown = self.answer if not isinstance(self.answer, float) or not self.answer.is_integer() else int(self.answer)
        parts = [f"<b>{verdict}</b>The answer: <b>{html.escape(str(shown))}</b>."]
        if self.explain:
            parts.append(html.escape(self.explain))
        self.result.value = " ".join(parts)
        self.revealed = True
        self.prediction.disabled = True
        if self._widget is not None and self._node is not None:
            self._widget.select(self._node)
        if self._reveal_fn is not None:
            with self.output:
                self._reveal_fn()


def exercise(question: str, *, choices: Sequence[Any] | None = None, number: bool = False, answer: Any,
             reveal: Callable[[], Any] | None = None, widget: Any = None, node: str | None = None,
             explain: str = "", tolerance: float = 0) -> Exercise:
    """A predict-then-reveal exercise.

    Give ``choices`` (the student picks one) or ``number=True`` (the student types a number; a
    prediction within ``tolerance`` of ``answer`` is right). On reveal: right or not, the
    answer, ``explain``; with ``widget`` and ``node``, the node is selected in that widget
    (``SessionWidget.select``); ``reveal`` (no arguments) runs, its output shown under it.
    """
    if (choices is None) == (not number):
        raise TeachError("an exercise takes either choices=[...] or number=True")
    if choices is not None and answer not in list(choices):
        raise TeachError(f"the answer {answer!r} is not one of the choices")
    if number and (isinstance(answer, bool) or not isinstance(answer, (int, float))):
        raise TeachError(f"a number exercise needs a number as its answer, not {answer!r}")
    if (widget is None) != (node is None):
        raise TeachError("give both widget= and node= to select the node on reveal")
    return Exercise(question, choices=choices, number=number, answer=answer, reveal=reveal, widget=widget,
                    node=node, explain=explain, tolerance=tolerance)
