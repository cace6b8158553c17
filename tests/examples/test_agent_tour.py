"""examples/agent-tour.ipynb runs headless and shows each step happening."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "agent-tour.ipynb"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path_factory.mktemp("tour"))}}).execute()
    texts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        out = []
        for item in cell.outputs:
            assert item.output_type != "error", item
            out.append(item.get("text", "") or str(item.get("data", {}).get("text/plain", "")))
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


def test_fork_makes_a_new_file(outputs):
    assert "selected text: 'Check the auth implementation'" in outputs[8]
    assert "new file: True | parentSession: True" in outputs[8]
