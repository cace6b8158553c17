"""pi_lab.teach.exercise without a browser: the prediction set, the Reveal button clicked (as
ipywidgets' Button.click fires its handlers), the verdict, the explanation, the node selected in
the widget and the teacher's reveal function run."""

from __future__ import annotations

import shutil

import ipywidgets as ipw
import pytest

import pi_lab
from pi_lab.data import recorded_session
from pi_lab.teach import Exercise, TeachError, exercise


def test_a_right_choice_is_said_right_and_explained():
    ex = exercise("Which entry does the model see first?", choices=["the header", "the summary"],
                  answer="the summary", explain="After a compaction the summary comes first.")
    assert isinstance(ex, Exercise) and isinstance(ex.prediction, ipw.RadioButtons)
    assert ex.prediction.value is None  # nothing is predicted for the student
    ex.prediction.value = "the summary"
    ex.reveal_button.click()
    assert ex.revealed and ex.correct is True
    assert "Right!" in ex.result.value and "the summary comes first" in ex.result.value
    assert ex.prediction.disabled  # the prediction stands once revealed


def test_a_wrong_choice_and_no_choice():
    ex = exercise("?", choices=["a", "b"], answer="b")
    ex.prediction.value = "a"
    ex.reveal_button.click()
    assert ex.correct is False and "Not quite" in ex.result.value and "<b>b</b>" in ex.result.value
    ex = exercise("?", choices=["a", "b"], answer="b")
    ex.reveal_button.click()
    assert ex.correct is None and "No prediction made" in ex.result.value


@pytest.mark.parametrize("typed,right", [("12000", True), ("12,000", True), ("12k", True), ("11950", True),
                                         ("11000", False), ("lots", False)])
def test_number_predictions(typed, right):
    ex = exercise("How many tokens?", number=True, answer=12_000, tolerance=50)
    assert isinstance(ex.prediction, ipw.Text) and not ex.prediction.continuous_update  # Enter/Tab commit
    ex.prediction.value = typed
    ex.reveal_button.click()
    assert ex.correct is right
    assert "12000" in ex.result.value
    if typed == "lots":
        assert "is not a number" in ex.result.value


def test_reveal_selects_the_node_in_the_widget_and_runs_the_teachers_function(tmp_path):
    path = shutil.copy(recorded_session().path, tmp_path / "t.jsonl")
    widget = pi_lab.open(str(path))
    try:
        node = widget.session_manager.get_branch()[3]["id"]
        ran = []
        ex = exercise("Where?", choices=["here", "there"], answer="here", widget=widget, node=node,
                      reveal=lambda: ran.append(True))
        assert widget.selected_id != node
        ex.prediction.value = "here"
        ex.reveal_button.click()
        assert widget.selected_id == node
        assert ran == [True]
    finally:
        widget.close()


@pytest.mark.parametrize("kwargs,text", [
    ({"answer": 1}, "either choices"),
    ({"choices": ["a"], "number": True, "answer": "a"}, "either choices"),
    ({"choices": ["a"], "answer": "b"}, "not one of the choices"),
    ({"number": True, "answer": "many"}, "needs a number"),
    ({"number": True, "answer": 3, "node": "x"}, "both widget= and node="),
])
def test_mistakes_in_an_exercise_are_said(kwargs, text):
    with pytest.raises(TeachError, match=text):
        exercise("?", **kwargs)
