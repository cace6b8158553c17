"""examples/corpus.ipynb runs headless (nbclient): on the real fixtures from a checkout, on its
generated folder anywhere else, and on a folder named in its parameters cell (as papermill sets
it); every plot is Vega-Lite for JupyterLab with a PNG beside it for static pages."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from notebook_run import execute_notebook

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
from shared_fixtures import FIXTURES_DIR as FIXTURES  # noqa: E402  (the one place that finds them)

pytest.importorskip("altair")
pytest.importorskip("vl_convert")
pytest.importorskip("pandas")

VEGA_LITE = "application/vnd.vegalite.v5+json"  # the version JupyterLab 4 draws without a network


def execute(cwd: Path, parameters: str | None = None):
    nb = nbformat.read(EXAMPLES / "corpus.ipynb", as_version=4)
    if parameters is not None:
        # What papermill does: a cell with the new values right after the one tagged "parameters".
        (at,) = [i for i, cell in enumerate(nb.cells) if "parameters" in cell.metadata.get("tags", [])]
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(parameters))
    return execute_notebook(nb, cwd)


def outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield from cell.get("outputs", [])


def text_of(nb) -> str:
    parts = []
    for out in outputs(nb):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif "data" in out and "text/plain" in out["data"]:
            parts.append(out["data"]["text/plain"])
    return "\n".join(parts)


def check(nb, source: str):
    assert not [o for o in outputs(nb) if o.get("output_type") == "error"]
    text = text_of(nb)
    assert f"Corpus: {source}" in text
    assert "'cached': " in text and "'read': 0" in text  # the second scan came from the cache
    for table in ("sessions", "entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries"):
        assert table in text
    assert "tool_name" in text and "tokens_before" in text and "copied_calls" in text  # the three questions
    charts = [o["data"] for o in outputs(nb) if "data" in o and VEGA_LITE in o["data"]]
    assert len(charts) == 3  # context fill, tokens per day, tool result bytes
    assert all(c["image/png"] for c in charts)  # each with its picture for nbconvert and static sites
    assert "model_calls.parquet" in text


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="pi session fixtures not beside the clone")
def test_notebook_on_the_real_fixtures():
    nb = execute(EXAMPLES)
    check(nb, "real pi session files")
    assert "claude-opus-4-5" in text_of(nb)


def test_notebook_on_a_generated_folder(tmp_path):
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    assert not any((p / "shared" / "fixtures").exists() for p in (cwd, *cwd.parents))
    nb = execute(cwd)
    check(nb, "a generated folder")
    assert "[{'copied_calls': 6}]" in text_of(nb)  # the fork's copies, left out of usage()


def test_the_parameters_cell_points_the_notebook_at_a_folder(tmp_path):
    """``SESSIONS`` in the cell tagged ``parameters`` is read as it is, never copied or written."""
    from pi_lab.session import SessionManager

    folder = tmp_path / "my sessions"
    sm = SessionManager.create("/home/me/proj", folder)
    for n in range(3):
        sm.append_message({"role": "user", "content": f"question {n}", "timestamp": 0})
        sm.append_message({"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5", "api": "x",
                           "content": [{"type": "text", "text": f"answer {n}"}], "stopReason": "stop", "timestamp": 0,
                           "usage": {"input": 100 * (n + 1), "output": 10, "cacheRead": 5000, "cacheWrite": 0,
                                     "totalTokens": 5110, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                                   "cacheWrite": 0, "total": 0}}})
    before = {p: p.read_bytes() for p in folder.rglob("*")  if p.is_file()}
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    nb = execute(cwd, parameters=f"SESSIONS = {str(folder)!r}")
    assert not [o for o in outputs(nb) if o.get("output_type") == "error"]
    assert f"Corpus: your sessions: {folder} — 1 sessions" in text_of(nb)
    assert len([o for o in outputs(nb) if "data" in o and VEGA_LITE in o["data"]]) == 3
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
