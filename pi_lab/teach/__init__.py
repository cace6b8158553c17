"""Helpers for teachers: predict-then-reveal exercises on any session, and a session as it was.

* :func:`exercise`: a question the student answers (a choice or a number) before a "Reveal"
  button says whether the prediction was right, explains, and makes it happen in a widget
  (selects the node the question is about, or runs the teacher's own ``reveal`` function).
* :func:`session_at`: a read-only in-memory session holding the first ``k`` lines of a session
  file, with the leaf where it was then; :func:`frozen`: a widget showing it. A page run top to
  bottom then shows each question's session as it was at that question, not its final state.
* :func:`stepper`: one widget stepping through a session's history (slider, Play, step buttons,
  arrow keys), the tree growing and the gauge climbing and dropping as it did.
"""

from pi_lab.teach.exercises import Exercise, exercise
from pi_lab.teach.history import TeachError, frozen, session_at
from pi_lab.teach.stepper import Stepper, stepper

__all__ = ["Exercise", "Stepper", "TeachError", "exercise", "frozen", "session_at", "stepper"]
