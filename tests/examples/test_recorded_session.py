"""The session shipped in pi_lab/data: what it contains, that it re-records byte for byte, and
that pi itself reads it as pi_lab does.

It is what the tour shows wherever pi's own fixtures are absent (every pip install, a fresh
clone), so it must hold what the tour's text promises: real tool calls on real files, a branch
with a branch summary, two compactions, a known context usage at the end, a small file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pi_lab.data import TINY_AUTH, recorded_session

REPO = Path(__file__).resolve().parents[2]
RECORDER = REPO / "tools" / "record_sample_session.py"
RUNNER = REPO / "bench" / "pi_runner" / "run.mjs"
PI_PKG = REPO / "bench" / ".pi" / "node_modules" / "@earendil-works" / "pi-coding-agent"


def _entries():
    return [json.loads(line) for line in TINY_AUTH.path.read_text(encoding="utf-8").splitlines()]


def test_packaged_session_is_small_and_found_by_name():
    assert recorded_session("tiny-auth") is TINY_AUTH
    assert TINY_AUTH.path.is_file() and TINY_AUTH.path.parent.parent == Path(__file__).resolve().parents[2] / "pi_lab" / "data"
    assert TINY_AUTH.path.stat().st_size < 200_000
    with pytest.raises(KeyError, match="tiny-auth"):
        recorded_session("nope")


def test_recorder_reproduces_the_packaged_bytes(tmp_path):
    out = tmp_path / "again.jsonl"
    done = subprocess.run([sys.executable, str(RECORDER), "--out", str(out)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # Fails by design when pi_lab starts writing these entries differently (agent, offline model,
    # SessionManager): check the difference is intended, then run the recorder and commit the file.
    assert out.read_bytes() == TINY_AUTH.path.read_bytes(), (
        "a fresh recording differs from pi_lab/data/sessions/tiny-auth.jsonl; if the change is intended, "
        "run `python tools/record_sample_session.py` and commit the file")
    check = subprocess.run([sys.executable, str(RECORDER), "--check"], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
    assert check.returncode == 0 and "up to date" in check.stdout, check.stdout + check.stderr


def test_recorded_session_holds_what_the_tour_says():
    entries = _entries()
    header, body = entries[0], entries[1:]
    assert header["type"] == "session" and header["version"] == 3
    kinds = [e["type"] for e in body]
    assert kinds.count("compaction") == 2 and kinds.count("branch_summary") == 1
    assert kinds.count("label") == 1 and kinds[-1] == "session_info"
    messages = [e["message"] for e in body if e["type"] == "message"]
    calls = [b for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "toolCall"]
    results = [m for m in messages if m["role"] == "toolResult"]
    assert {c["name"] for c in calls} == {"ls", "read", "edit"}
    assert len(results) == len(calls) and not any(r["isError"] for r in results)
    assert {r["durationMs"] for r in results} == {0}  # recorded without the machine's timing (see the recorder)
    # The tool results are the project's real files: the first read shows the original auth.py.
    first_read = next(r for r in results if r["toolName"] == "read")
    assert "def login(username: str, password: str)" in first_read["content"][0]["text"]
    assistants = [m for m in messages if m["role"] == "assistant"]
    assert {(m["provider"], m["model"]) for m in assistants} == {("pi-lab", "offline")}
    assert all(m["usage"]["input"] < TINY_AUTH.context_window for m in assistants)
    # The branch summary hangs at the point the user went back to, and a compaction summarises
    # the path that goes through it.
    summary = next(e for e in body if e["type"] == "branch_summary")
    assert summary["parentId"] != summary["fromId"] and "auth.py" in summary["details"]["modifiedFiles"]
    by_id = {e["id"]: e for e in body}
    leaf = body[-1]
    path, node = [], leaf
    while node is not None:
        path.append(node["id"])
        node = by_id.get(node.get("parentId"))
    assert summary["id"] in path and sum(by_id[i]["type"] == "compaction" for i in path) == 2
    last_message = next(by_id[i] for i in path if by_id[i]["type"] == "message")
    assert last_message["message"]["role"] == "assistant" and last_message["message"]["usage"]["totalTokens"] > 0


def test_recorded_session_gauge_uses_the_recording_window():
    """A viewer must be told the offline model's window: the file does not record it."""
    from pi_lab.compaction import CompactionSettings
    from pi_lab.widget import SessionWidget

    w = SessionWidget(TINY_AUTH.path, context_window=TINY_AUTH.context_window,
                      settings=CompactionSettings(reserve_tokens=TINY_AUTH.reserve_tokens,
                                                  keep_recent_tokens=TINY_AUTH.keep_recent_tokens))
    try:
        assert w.gauge["context_window"] == TINY_AUTH.context_window
        assert 0 < w.gauge["tokens"] < TINY_AUTH.context_window
        assert len(w.compactions) == 2
    finally:
        w.close()


def test_pi_reads_the_packaged_session_as_pi_lab_does(tmp_path):
    """Differential: skips without node and pi 1.6.0 in bench/.pi (make pi-reference)."""
    if shutil.which("node") is None or not (PI_PKG / "dist" / "core" / "session-manager.js").exists():
        pytest.skip("pi 1.6.0 (node + bench/.pi) not installed")
    sys.path.insert(0, str(REPO / "tests" / "differential"))
    try:
        from pi_lab_dump import dump
    finally:
        sys.path.pop(0)
    pi_copy, lab_copy = tmp_path / "pi.jsonl", tmp_path / "lab.jsonl"
    shutil.copyfile(TINY_AUTH.path, pi_copy)
    shutil.copyfile(TINY_AUTH.path, lab_copy)
    done = subprocess.run(["node", str(RUNNER), "dump", str(pi_copy), "--inplace"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    pi = json.loads(done.stdout)
    lab = dump(lab_copy, inplace=True, keeps=(1, 100, 2000, 20000))
    assert pi_copy.read_bytes() == TINY_AUTH.path.read_bytes()  # pi opens it without rewriting a byte
    for field in ("header", "entries", "leafId", "branch", "sessionName", "tree", "contextEntries",
                  "projection", "context", "estimate"):
        assert pi[field] == lab[field], field
