"""The TypeScript viewer core, run in node (no browser): Markdown stays inert text and always
terminates; prefixes and deltas on a real structure blob agree with the Python side."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
from helpers import SEED_SECTION_14, Clock, Ids

from pi_lab.session import SessionManager
from pi_lab.session.navigation import render_row
from pi_lab.widget.rows import RowState

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ESBUILD = REPO / "node_modules" / ".bin" / "esbuild"


@pytest.fixture(scope="module")
def core_results(tmp_path_factory) -> dict:
    node = shutil.which("node")
    if node is None or not ESBUILD.exists():
        pytest.skip("node and the front-end toolchain (jlpm install) are needed")
    out = tmp_path_factory.mktemp("core") / "check.js"
    subprocess.run([str(ESBUILD), str(HERE / "frontend_core_check.ts"), "--bundle", "--platform=node",
                    f"--outfile={out}", "--log-level=warning"], check=True, cwd=REPO, timeout=120)
    entries = [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]
    state = RowState(SessionManager.in_memory(entries=entries, uuid_factory=Ids(), clock=Clock()))
    blob = base64.b64encode(state.structure(selected_row=0)).decode()
    run = subprocess.run([node, str(out), blob], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    result["state"] = state
    return result


def test_markdown_never_creates_elements_from_session_markup(core_results):
    for case in core_results["hostile"]:
        assert set(case["tags"]) <= {"div", "p", "#text", "strong", "em", "code", "a"}, case
        for link in case["links"]:
            assert link.startswith("https://"), link
    assert "<script>alert(1)</script>" in core_results["hostile"][0]["text"]
    assert 'onerror="window.__p=1"' in core_results["hostile"][1]["text"]
    # window.__p inside a word is not emphasis; the javascript: link stays text.
    assert "[click](javascript:w.__p='link')" in core_results["hostile"][2]["text"]


def test_markdown_terminates_quickly_on_hostile_nesting(core_results):
    assert core_results["hostile_ms"] < 3000


def test_markdown_block_structure(core_results):
    tags = core_results["sample_tags"]
    for tag in ("h3", "em", "strong", "code", "ul", "ol", "li", "pre", "blockquote"):
        assert tag in tags, tag
    assert "snake_case_name" in core_results["sample_text"]
    assert 'print("<b>")' in core_results["sample_text"]


def test_prefixes_match_pi_rendering(core_results):
    state: RowState = core_results["state"]
    for row, prefix in zip(state.rows, core_results["prefixes"]):
        line = render_row(row)
        # render_row = cursor (2) + prefix + markers...; the TS prefix is the same characters.
        assert line[2:].startswith(prefix), (line, prefix)
    assert core_results["deep"] == {"elided": 0, "text": ""}


def test_delta_application_shifts_parents(core_results):
    assert core_results["applied"] is True
    assert core_results["applied_again"] is False
    before, after = core_results["parents_before"], core_results["parents_after"]
    assert len(after) == len(before) + 1
    assert after[1] == 0
    assert after[2:] == [p + 1 if p >= 1 else p for p in before[1:]]
    assert core_results["new_text"] == "user: new"
