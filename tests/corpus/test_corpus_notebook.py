"""examples/corpus.ipynb runs headless (nbclient): on the real fixtures from a checkout, and on
its generated folder anywhere else; every plot renders as an image."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FIXTURES = EXAMPLES.parent.parent / "shared" / "fixtures" / "pi-sessions"

pytest.importorskip("matplotlib")
pytest.importorskip("pandas")


def execute(cwd: Path):
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(EXAMPLES / "corpus.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    marker = os.environ.pop("PYTEST_CURRENT_TEST", None)  # a kernel with a user's environment
    try:
        client.execute()
    finally:
        if marker is not None:
            os.environ["PYTEST_CURRENT_TEST"] = marker
    return nb


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
    images = [o for o in outputs(nb) if "data" in o and "image/png" in o["data"]]
    assert len(images) == 3  # context fill, tokens per day, tool result bytes
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
