"""examples/agents.ipynb runs headless: from examples/ in a checkout it writes a sample session of
each agent, reads them into one corpus and draws its plots (Vega-Lite with a PNG beside each) and
a widget per agent; run where tools/ is out of reach, it says so and shows pi's session alone."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from notebook_run import execute_notebook

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOK = EXAMPLES / "agents.ipynb"
VEGA_LITE = "application/vnd.vegalite.v5+json"
WIDGET = "application/vnd.jupyter.widget-view+json"


def _run(cwd: Path):
    pytest.importorskip("altair")
    pytest.importorskip("vl_convert")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    execute_notebook(nb, cwd)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert output.get("output_type") != "error", output
            assert output.get("name") != "stderr" or "Warning" in output.get("text", ""), output
    return nb


def _outputs(nb, source_contains: str) -> list[dict]:
    cell = next(c for c in nb.cells if c.cell_type == "code" and source_contains in c.source)
    return cell.outputs


def _printed(nb) -> str:
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_three_agents_side_by_side(tmp_path):
    nb = _run(EXAMPLES)
    parameters = next(c for c in nb.cells if c.cell_type == "code")
    assert parameters.metadata.get("tags") == ["parameters"] and "FOLDERS = None" in parameters.source
    usage = _outputs(nb, 'usage = c.usage(by="agent")')[0]["data"]["text/html"]
    for agent in ("pi", "claude-code", "codex"):
        assert f"<td>{agent}</td>" in usage, usage
    plots = [o["data"] for c in nb.cells if c.cell_type == "code" for o in c.outputs if VEGA_LITE in o.get("data", {})]
    assert len(plots) == 4
    for data in plots:
        assert data["image/png"], "a plot without its PNG"
    titles = " ".join(str(p[VEGA_LITE].get("title", "")) for p in plots)
    assert "Tokens per model call" in titles and "Compactions per agent" in titles
    widgets = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if WIDGET in o.get("data", {})]
    assert len(widgets) == 3
    printed = _printed(nb)
    # what the model saw at each session's last call, by role, for all three agents
    for agent in ("pi", "claude-code", "codex"):
        assert f"\n{agent}" in printed


def test_without_the_generators_it_shows_pi_alone_and_says_why(tmp_path):
    nb = _run(tmp_path)
    printed = _printed(nb)
    assert "No session generators here" in printed
    usage = _outputs(nb, 'usage = c.usage(by="agent")')[0]["data"]["text/html"]
    assert "<td>pi</td>" in usage and "codex" not in usage
