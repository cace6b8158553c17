"""The tour notebook runs headless (nbclient) and every one of its checks holds.

examples/tour.ipynb answers the explainer's 22 comprehension questions by producing each
situation on the offline model; every answer ends with `check(n, ...)`, which prints
"✓ Q<n>: ..." only when the statement holds in the state just produced.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import nbformat
import pytest
from notebook_run import execute_notebook

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


from shared_fixtures import FIXTURES_DIR  # noqa: E402  (the one place that finds them)

FIXTURE = FIXTURES_DIR / "before-compaction.jsonl"


_FILES_AROUND_RUN: dict[str, tuple[dict[str, str], dict[str, str]]] = {}


def _snapshot(cwd: Path) -> dict[str, str]:
    """Every file the tour might be tempted to write outside its WORK folder: the folder it runs in
    and the session shipped with pi_lab."""
    from pi_lab.data import TINY_AUTH

    files = [TINY_AUTH.path, *(p for p in cwd.rglob("*") if p.is_file())]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _execute(cwd: Path):
    before = _snapshot(cwd)
    nb = nbformat.read(EXAMPLES / "tour.ipynb", as_version=4)
    execute_notebook(nb, cwd)
    _FILES_AROUND_RUN[str(cwd)] = (before, _snapshot(cwd))
    return nb


@pytest.fixture(scope="module")
def executed_tour():
    """Run where `make lab` runs it: examples/ of the checkout (pi's fixtures beside it, if any)."""
    return _execute(EXAMPLES)


@pytest.fixture(scope="module")
def executed_elsewhere(tmp_path_factory):
    """Run as a pip user runs it: in a folder with no pi fixtures anywhere above it."""
    cwd = tmp_path_factory.mktemp("elsewhere")
    assert not any((p / "shared" / "fixtures").exists() for p in (cwd, *cwd.parents))
    return _execute(cwd)


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


def _stream(nb, name="stdout"):
    return "".join(o.get("text", "") for o in _outputs(nb) if o.get("output_type") == "stream" and o.get("name") == name)


def _right_hand_session(nb) -> str:
    cell = next(c for c in nb.cells if c.cell_type == "code" and "real_session()" in c.source)
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


@pytest.mark.parametrize("where", ["executed_tour", "executed_elsewhere"])
def test_tour_writes_nothing_to_stderr(where, request):
    nb = request.getfixturevalue(where)
    noise = [o for o in _outputs(nb) if o.get("output_type") == "error"
             or (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    assert not noise, noise


def test_without_pi_fixtures_the_tour_shows_the_recorded_session(executed_elsewhere):
    shown = _right_hand_session(executed_elsewhere)
    assert shown.startswith("Right: tiny-auth.jsonl, shipped with pi_lab: recorded by pi_lab's AgentSession")
    # two compactions, one branch summary, and the gauge on the window it was recorded with
    assert "compactions 2, branch summaries 1; model pi-lab/offline;" in shown
    assert re.search(r"gauge [\d,]+ of 4,000 tokens", shown), shown
    # the widget shows a copy in the tour's temporary folder, read-only as every session opened from a path
    state = executed_elsewhere.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    shown_files = [m["state"] for m in state.values() if str(m["state"].get("session", {}).get("file", "")).endswith("tiny-auth.jsonl")]
    assert len(shown_files) == 1 and shown_files[0]["writable"] is False
    assert Path(shown_files[0]["session"]["file"]).parent.name.startswith("pi-lab-tour-")
    answered = {int(n) for n in re.findall(r"^✓ Q(\d+):", _stream(executed_elsewhere), flags=re.M)}
    assert answered == set(range(1, 23))


def test_in_the_checkout_the_tour_shows_pis_own_session(executed_tour):
    if not FIXTURE.is_file():
        pytest.skip("pi's fixtures are not beside this checkout (../shared)")
    shown = _right_hand_session(executed_tour)
    assert shown.startswith("Right: before-compaction.jsonl, written by pi itself")
    assert "compactions 2," in shown and "model anthropic/claude-opus-4-5;" in shown
    assert re.search(r"gauge [\d,]+ of 200,000 tokens", shown), shown


def test_tour_text_says_which_session_it_shows():
    nb = nbformat.read(EXAMPLES / "tour.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "written by pi" not in text.split("before-compaction.jsonl")[0]  # no claim before naming the file
    for fact in ("before-compaction.jsonl", "tiny-auth.jsonl", "recorded by pi_lab's own `AgentSession`",
                 "tools/record_sample_session.py", "copy in `WORK`", "only reads it", "writable=True"):
        assert fact in text, fact


@pytest.mark.parametrize("where", ["executed_tour", "executed_elsewhere"])
def test_tour_writes_only_in_its_temporary_folder(where, request):
    request.getfixturevalue(where)
    cwd = str(EXAMPLES) if where == "executed_tour" else next(k for k in _FILES_AROUND_RUN if k != str(EXAMPLES))
    before, after = _FILES_AROUND_RUN[cwd]
    assert after == before  # nothing created, changed or removed beside the notebook or in pi_lab/data


def _quiz_widgets(nb) -> dict[int, dict]:
    """Question n's exercise (tools/make_tour.py quiz): the state of the widget frozen beside it
    after Run All, with the exercise's question text."""
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    out = {}
    for cell in nb.cells:
        match = re.match(r"# Q(\d+): predict, then Reveal", cell.source) if cell.cell_type == "code" else None
        if not match:
            continue
        box = next(o["data"][WIDGET_VIEW]["model_id"] for o in cell.outputs if WIDGET_VIEW in o.get("data", {}))
        exercise_ref, widget_ref = state[box]["state"]["children"]
        exercise = state[exercise_ref.removeprefix("IPY_MODEL_")]["state"]
        question = state[exercise["children"][0].removeprefix("IPY_MODEL_")]["state"]["value"]
        out[int(match.group(1))] = {"question": question, **state[widget_ref.removeprefix("IPY_MODEL_")]["state"]}
    return out


def test_every_question_is_an_exercise_beside_the_session_at_that_moment(executed_tour):
    quizzes = _quiz_widgets(executed_tour)
    assert sorted(quizzes) == list(range(1, 23))
    assert all(q["row_count"] > 0 and not q["writable"] for q in quizzes.values())  # frozen: read-only
    # the state each question talks about, not the session's final state
    assert quizzes[5]["leaf_id"] == "C1" and quizzes[17]["leaf_id"] == "C1"
    assert quizzes[7]["leaf_id"] == "A2"  # re-editing U2 moved the leaf to its parent (no append)
    story_entries = [quizzes[n]["session"]["entries"] for n in (8, 9, 13)]
    assert story_entries[0] < story_entries[1] == story_entries[2]  # BS1 appended, then the cookie turn
    live = [quizzes[n]["session"]["entries"] for n in (1, 2, 12, 16, 19, 22)]
    assert live == sorted(live) and len(set(live)) == len(live)  # the live session grows question by question
    assert len(quizzes[19]["compactions"]) < len(quizzes[22]["compactions"])
    # the answer is not shown before Reveal: the question's markdown holds the question only
    text = "\n".join(c.source for c in executed_tour.cells if c.cell_type == "markdown")
    assert "simply the **leaf at the\nmoment of the append**" not in text
