"""The TypeScript viewer core, run in node (no browser): Markdown stays inert text and always
terminates; prefixes and deltas on a real structure blob agree with the Python side."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
from helpers import SEED_SECTION_14, Clock, Ids

from pi_lab.cli_render import render_row
from pi_lab.session import SessionManager
from pi_lab.view.rows import RowState

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
    texts = json.dumps(state.texts(0, len(state.rows)))  # after the blob: it carries no estimate yet
    run = subprocess.run([node, str(out), blob, texts], capture_output=True, text=True, timeout=60)
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
    assert core_results["new_tokens"] == 7


def test_row_estimates_come_with_the_row_texts(core_results):
    """Issue 11: the structure carries no estimate the kernel has not made; the browser takes
    each row's estimate from its text and shows nothing for a row whose text has not come."""
    state = core_results["state"]
    real = list(state.columns.tokens)
    assert any(real)
    assert core_results["tokens_at_load"] == [None] * len(real)
    assert core_results["tokens_after_even_texts"] == [t if r % 2 == 0 else None for r, t in enumerate(real)]


BIDI_NAMES = {0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF", 0x202D: "LRO", 0x202E: "RLO", 0x2066: "LRI",
              0x2067: "RLI", 0x2068: "FSI", 0x2069: "PDI", 0x200E: "LRM", 0x200F: "RLM", 0x061C: "ALM"}


def test_bidi_controls_are_shown_as_markers_in_rows(core_results):
    cases = core_results["bidi"]
    assert [c["code"] for c in cases] == list(BIDI_NAMES)
    for case in cases:
        assert case["detected"] is True, case
        assert case["controls_left"] is False, case
        assert case["shown"] == f"abc⟨{BIDI_NAMES[case['code']]}⟩def", case
    # Text without controls (CJK, emoji, right-to-left letters) is left exactly as it is.
    assert core_results["bidi_plain"] == "user: 改成 JWT 🚀 שלום"


def test_row_text_is_one_line(core_results):
    assert core_results["row_safe"] == "line one↵line two↵three↵four⟨RLO⟩!"


def test_unknown_entry_type_row_names_its_type(core_results):
    texts = core_results["row_text"]
    assert texts["unknown_with_type"] == "[entry of an unknown type: weird_new_thing]"
    assert texts["unknown_without_type"] == "[entry of an unknown type]"
    assert texts["user_empty"] == ""  # pi's own empty rows are drawn as pi draws them
    assert texts["user"] == "user: hi"


def test_shift_f10_opens_the_action_menu(core_results):
    keys = core_results["keys"]
    assert keys["shift_f10"] is True and keys["context_menu"] is True
    assert keys["f10"] is False
    assert keys["calls"] == ["menu", "menu"]


BRITISH = re.compile(r"\b(?:[Ss]ummaris\w*|[Nn]eutralis\w*|[Cc]olour\w*|[Bb]ehaviour\w*|[Ll]abell(?:ed|ing)|[Cc]ancelled)\b")
TS_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`|\"(?:[^\"\\\n]|\\.)*\"")


def _ts_strings(source: str) -> list[str]:
    source = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    source = "\n".join(line.split("//", 1)[0] if "'//" not in line and '"//' not in line else line for line in source.splitlines())
    return TS_STRING.findall(source)


def test_one_spelling_in_the_viewer_american():
    sources = sorted((REPO / "src_frontend" / "core").glob("*.ts")) + [REPO / "src_frontend" / "widget.ts"]
    # Words a reader sees; a field name inside a template's ${...} (d.bash.cancelled) is not one.
    shown = [(path.name, re.sub(r"[\w$]+(?:\.[\w$]+)+", "", text)) for path in sources for text in _ts_strings(path.read_text(encoding="utf-8"))]
    found = [(name, text) for name, text in shown if BRITISH.search(text)]
    assert found == []
    for name in ("kinds.py", "preview.py", "detail.py", "columns.py"):
        text = (REPO / "pi_lab" / "widget" / name).read_text(encoding="utf-8")
        assert not re.search(r"[Ss]ummaris", text), name
