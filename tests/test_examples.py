"""The tour notebook runs headless (nbclient) and every one of its checks holds.

examples/tour.ipynb answers the explainer's 22 comprehension questions by producing each
situation on the offline model; every answer ends with `check(n, ...)`, which prints
"✓ Q<n>: ..." only when the statement holds in the state just produced.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def executed_tour():
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(EXAMPLES / "tour.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(EXAMPLES)}})
    client.execute()
    return nb


def _outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield from cell.get("outputs", [])


def test_tour_runs_without_errors(executed_tour):
    errors = [o for o in _outputs(executed_tour) if o.get("output_type") == "error"]
    assert not errors, errors


def test_every_comprehension_question_is_demonstrated(executed_tour):
    text = "".join(o.get("text", "") for o in _outputs(executed_tour) if o.get("output_type") == "stream")
    answered = {int(n) for n in re.findall(r"^✓ Q(\d+):", text, flags=re.M)}
    assert answered == set(range(1, 23))


def test_tour_displays_session_widgets(executed_tour):
    views = [o for o in _outputs(executed_tour) if WIDGET_VIEW in o.get("data", {})]
    assert len(views) >= 3  # the worked example beside a real session (one HBox), the live session, the branch story
    state = executed_tour.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    sessions = [m["state"] for m in state.values() if "structure_version" in m.get("state", {})]
    assert len(sessions) >= 4
    assert all(s["row_count"] > 0 for s in sessions)


def test_tour_is_committed_without_outputs():
    nb = nbformat.read(EXAMPLES / "tour.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")
    questions = [c.source for c in nb.cells if c.cell_type == "markdown" and re.search(r"\*\*Q\d+\.", c.source)]
    assert len(questions) == 22
