"""examples/research.ipynb runs headless: without a judge it only estimates; with a loopback
OpenAI-compatible judge it asks, and the findings land in the notes beside the notebook's copy."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from notebook_run import execute_notebook

from tests.llm.provider_server import ProviderServer, Text

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "research.ipynb"


def _run(tmp_path, env):
    return execute_notebook(nbformat.read(NOTEBOOK, as_version=4), tmp_path, env=env)


def _text(nb) -> str:
    out = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert output.get("output_type") != "error", output
            out.append(output.get("text", "") or json.dumps(output.get("data", {}).get("text/plain", "")))
    return "\n".join(out)


def test_without_a_judge_it_only_estimates(tmp_path):
    nb = _run(tmp_path, {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PI_LAB_JUDGE_URL": ""})
    text = _text(nb)
    assert "units" in text and "set JUDGE_BASE_URL to ask" in text


def test_with_a_loopback_judge_the_findings_become_notes(tmp_path):
    with ProviderServer() as server:
        for _ in range(40):
            server.push(Text(json.dumps({"answer": "yes", "explanation": "edited auth.py before reading it",
                                         "cited_entry_ids": []})))
        nb = _run(tmp_path, {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PI_LAB_JUDGE_URL": server.openai_base_url,
                             "OPENAI_API_KEY": "sk-loopback-000000000000000000"})
        assert len(server.requests) > 0
    text = _text(nb)
    assert "edited auth.py before reading it" in text
