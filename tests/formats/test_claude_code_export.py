"""Continue in pi: a Claude Code branch exported to a NEW pi v3 file that pi 1.6.0 opens as it is.

The differential part runs pi itself (bench/pi_runner/run.mjs dump, pi from bench/.pi, installed
by bench/pi_runner/setup.sh) and skips without node or that package.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pi_lab
from pi_lab.formats.claude_code import SUBAGENT_START
from pi_lab.formats.claude_code_export import export_branch_to_pi
from pi_lab.session import SessionManager

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "bench" / "pi_runner" / "run.mjs"
PI_PKG = ROOT / "bench" / ".pi" / "node_modules" / "@earendil-works" / "pi-coding-agent"
sys.path.insert(0, str(ROOT / "tools"))
from generate_claude_sessions import generate_session  # noqa: E402


def _nodes(session) -> dict[str, str]:
    """The leaf, a node on the rewound branch, one inside each sub-agent, one between the
    microcompaction and the first compaction."""
    entries = session.get_entries()
    out = {"leaf": session.leaf_id}
    starts = [e for e in entries if e["type"] == "compaction" and e["details"]["claudeCode"] == SUBAGENT_START]
    for n, start in enumerate(starts):
        below = [e for e in entries if e.get("parentId") == start["id"]]
        out[f"subagent{n}"] = below[0]["id"]
    edits = [e for e in entries if e["type"] == "context_edit"]
    after = [e for e in entries if e.get("parentId") == edits[-1]["id"]][0]  # the boundary itself
    out["after-microcompaction"] = [e for e in entries if e.get("parentId") == after["id"]][0]["id"]
    rewind = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "user"
              and isinstance(e["message"]["content"], str) and e["message"]["content"].startswith("Edited prompt")]
    out["rewind"] = rewind[0]["id"]
    return out


def _session(tmp_path: Path):
    path = generate_session(tmp_path / "claude" / "p", seed=12, turns=6)
    return path, pi_lab.open_session(path)


def test_export_writes_a_new_pi_file_and_never_the_claude_code_file(tmp_path):
    path, session = _session(tmp_path)
    before = path.read_bytes(), os.stat(path).st_mtime_ns
    out_dir = tmp_path / "pi"
    out_dir.mkdir()
    for name, node in _nodes(session).items():
        exported = export_branch_to_pi(session, out_dir / f"{name}.jsonl", node)
        pi_session = SessionManager.open(exported, read_only=True)
        assert pi_session.leaf_id == node
        assert pi_session.build_session_context().messages == session.build_session_context(node).messages, name
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before
    with pytest.raises(FileExistsError):
        export_branch_to_pi(session, out_dir / "leaf.jsonl")
    named = export_branch_to_pi(session, out_dir)  # a folder: pi's own file name
    assert Path(named).parent == out_dir and named.endswith(".jsonl")


@pytest.mark.skipif(shutil.which("node") is None or not PI_PKG.exists(), reason="needs node and bench/.pi")
def test_pi_opens_the_export_unchanged_and_sees_what_pi_lab_showed(tmp_path):
    _, session = _session(tmp_path)
    out_dir = tmp_path / "pi"
    out_dir.mkdir()
    for name, node in _nodes(session).items():
        exported = export_branch_to_pi(session, out_dir / f"{name}.jsonl", node)
        done = subprocess.run(["node", str(RUNNER), "dump", exported], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        dump = json.loads(done.stdout)
        assert "error" not in dump, dump.get("error")
        # pi neither migrated nor repaired it: the bytes after pi's open are the bytes written.
        assert dump["afterOpen"]["sha256"] == hashlib.sha256(Path(exported).read_bytes()).hexdigest()
        assert dump["leafId"] == node
        assert dump["context"]["messages"] == session.build_session_context(node).messages, name
