"""`pi-lab export` and export_html: one self-contained file, the session file only read."""

from __future__ import annotations

import base64
import hashlib
import re
import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import generated_session, write_session  # noqa: E402
from helpers import SEED_SECTION_14  # noqa: E402

from pi_lab.cli import main  # noqa: E402
from pi_lab.export import export_html  # noqa: E402
from pi_lab.export.html import unpack, viewer_script  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402

STATIC = Path(__file__).resolve().parents[2] / "pi_lab" / "static" / "export.js"
needs_script = pytest.mark.skipif(not STATIC.exists(), reason="pi_lab/static/export.js is not built (jlpm build)")


def _seed(tmp_path: Path) -> Path:
    return write_session([orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()], tmp_path / "seed.jsonl")


@needs_script
def test_cli_writes_one_file_and_never_the_session(tmp_path, capsys):
    src = _seed(tmp_path)
    before = src.read_bytes()
    out = tmp_path / "out.html"
    assert main(["export", str(src), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert src.read_bytes() == before
    text = out.read_text()
    # Nothing is loaded from anywhere: no src/href attributes, no URLs but the CSP's own words.
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", text)
    scripts = re.findall(r"<script>(.*?)</script>", text, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text).group(1)
    assert f"script-src 'sha256-{digest}'" in policy.replace("&#x27;", "'")
    assert "default-src 'none'" in policy.replace("&#x27;", "'")
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    assert scripts[0] == viewer_script()


@needs_script
def test_leaf_option_and_unknown_leaf(tmp_path, capsys):
    src = _seed(tmp_path)
    out = tmp_path / "leaf.html"
    assert main(["export", str(src), "-o", str(out), "--leaf", "A1"]) == 0
    header = _main_header(out)
    assert '"leaf_id":"A1"' in header
    assert '"file":"seed.jsonl"' in header and str(tmp_path) not in header  # the name, not where it lay
    assert main(["export", str(src), "-o", str(tmp_path / "x.html"), "--leaf", "nope"]) == 1
    assert "nope" in capsys.readouterr().err


@needs_script
def test_manager_source_keeps_its_leaf(tmp_path):
    entries = generated_session(5, 60)
    sm = SessionManager.open(str(write_session(entries, tmp_path / "g.jsonl")), read_only=True)
    leaf = sm.leaf_id
    other = entries[10]["id"]
    export_html(sm, tmp_path / "g.html", leaf_id=other)
    assert sm.leaf_id == leaf
    assert f'"leaf_id":"{other}"' in _main_header(tmp_path / "g.html")


def _main_header(path: Path) -> str:
    text = path.read_text()
    packed = re.search(r'id="pi-main">([^<]+)<', text).group(1)
    blob = unpack(packed)
    length = int.from_bytes(blob[4:8], "little")
    return blob[8:8 + length].decode()


AGENT_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@needs_script
@pytest.mark.parametrize("name", [
    "claude-code/inspect_scout-compaction_session.jsonl",
    "codex/inspect_scout-rollout-2026-08-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl",
])
def test_other_agents_files_export_read_only(tmp_path, capsys, name):
    import shutil

    import pi_lab

    src = Path(shutil.copy(AGENT_FIXTURES / name, tmp_path / "session.jsonl"))
    before = src.read_bytes()
    out = tmp_path / "out.html"
    assert main(["export", str(src), "-o", str(out)]) == 0
    assert src.read_bytes() == before
    session = pi_lab.open_session(src)
    header = _main_header(out)
    assert session.session_id in header
    # the exported leaf is the agent's own leaf rule's
    assert main(["export", str(src), "-o", str(out), "--leaf", session.get_branch()[0]["id"]]) == 0
