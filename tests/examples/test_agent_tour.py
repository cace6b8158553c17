"""examples/agent-tour.ipynb runs headless and shows each step happening."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from notebook_run import execute_notebook

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "agent-tour.ipynb"


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    return execute_notebook(nb, tmp_path_factory.mktemp("tour"), timeout=120)


@pytest.fixture(scope="module")
def outputs(executed):
    nb = executed
    texts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        out = []
        for item in cell.outputs:
            assert item.output_type != "error", item
            # a display's text/plain (a widget's repr) has no newline of its own
            out.append(item.get("text", "") or str(item.get("data", {}).get("text/plain", "")) + "\n")
        texts.append("".join(out))
    return texts


def test_first_message_creates_the_file(outputs):
    assert "exists: False" in outputs[0]
    assert outputs[1].startswith("file exists: True")
    assert "toolResult: export function login" in outputs[1]


def test_reload_restores_the_leaf(outputs):
    assert "leaf after reopening:" in outputs[2] and "= assistant" in outputs[2]


def test_branch_summary_and_re_edit(outputs):
    assert "text back in the editor: 'Switch it to JWT'" in outputs[3]
    assert "branchSummary: The user explored a different" in outputs[3]


def test_threshold_compaction_and_unknown_usage(outputs):
    assert "context usage right after compaction: None" in outputs[4]
    assert "compactionSummary:" in outputs[4]
    assert outputs[5].startswith("## Goal")
    assert "(not stated in the conversation)" not in outputs[5]


def test_second_compaction_and_overflow_recovery(outputs):
    assert "compactions on the branch: 2" in outputs[6] and "summaries the model sees: 1" in outputs[6]
    lines = [line.split() for line in outputs[7].splitlines() if line.startswith(("message", "context_edit", "compaction"))]
    assert [l[0] for l in lines[-5:]] == ["message", "message", "context_edit", "compaction", "message"]
    assert lines[-4][1:] == ["assistant", "error"]


def test_the_stepper_replays_the_gauge_climbing_and_dropping(executed, outputs):
    """After the run, pi_lab.teach.stepper shows the session line by line; it is left on the line
    before the first compaction, and the compaction's line drops the gauge."""
    seen = re.search(r"line (\d+): (\d+) tokens; line (\d+) \(the compaction\): (\S+)", outputs[8])
    assert seen, outputs[8][:300]
    assert int(seen.group(3)) == int(seen.group(1)) + 1 and int(seen.group(2)) > 2800 - 400
    assert seen.group(4) == "unknown"  # pi reports no usage until the next reply reads the compacted context
    assert "stepper(w, start=first_compaction - 1)" in _code_cells(executed)[8].source


def test_fork_makes_a_new_file(outputs):
    assert "selected text: 'Check the auth implementation'" in outputs[9]
    assert "new file: True | parentSession: True" in outputs[9]


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_no_stderr_and_no_errors(executed):
    noise = [o for c in _code_cells(executed) for o in c.outputs
             if o.output_type == "error" or (o.output_type == "stream" and o.get("name") == "stderr")]
    assert not noise, noise


def test_live_widget_is_shown_beside_the_run(executed):
    """One SessionWidget on the agent, displayed after the restart, in the compaction step and in the
    overflow step; its state at the end shows what happened (3 compactions on the pretend window)."""
    views = {i: [o["data"][WIDGET_VIEW]["model_id"] for o in c.outputs
                 if o.output_type == "display_data" and WIDGET_VIEW in o.get("data", {})]
             for i, c in enumerate(_code_cells(executed))}
    shown = {i: ids for i, ids in views.items() if ids}
    assert sorted(shown) == [2, 4, 7]
    assert len({m for ids in shown.values() for m in ids}) == 1  # the same live widget each time
    # the stepper after the run (the cell's value): a widget of its own, on the same file
    replay = [o["data"][WIDGET_VIEW]["model_id"] for o in _code_cells(executed)[8].outputs
              if o.output_type == "execute_result" and WIDGET_VIEW in o.get("data", {})]
    assert len(replay) == 1 and replay[0] not in shown[2]
    assert "SessionWidget(agent" in _code_cells(executed)[2].source


def test_widget_saw_the_compactions(executed, outputs):
    # after the overflow step: the threshold, the manual and the overflow compaction, on the pretend window
    seen = re.search(r"the widget: (\d+) compactions on the branch; gauge (\d+) of 4000 tokens", outputs[7])
    assert seen and int(seen.group(1)) == 3 and 0 < int(seen.group(2)) < 4000, outputs[7][:300]
    model_id = next(o["data"][WIDGET_VIEW]["model_id"] for o in _code_cells(executed)[2].outputs
                    if WIDGET_VIEW in o.get("data", {}))
    state = executed.metadata["widgets"][WIDGET_STATE]["state"][model_id]["state"]
    # the saved state is the widget's last one: still the watched session (the fork has its own agent)
    assert state["context_window"] == 4000 and state["session"]["entries"] > 60 and state["row_count"] > 0
    assert len(state["compactions"]) == 3


def test_unknown_usage_is_explained_and_known_after_the_next_reply(executed, outputs):
    text = "\n".join(c.source for c in executed.cells if c.cell_type == "markdown")
    assert "Why is the context usage unknown (`None`) right after the compaction?" in text
    assert "unknown until the next model reply" in text and "? / 4k" in text
    assert "context tokens = unknown (a compaction just ran)" in outputs[4]
    assert "context tokens = None" not in outputs[4]
    known = re.search(r"context usage after the next reply: (\d+) tokens of 4000 \(known again\)", outputs[6])
    assert known and 0 < int(known.group(1)) < 4000
