"""Files pi_lab writes are byte-for-byte the files pi 1.6.0 writes for the same calls.

pi runs under Node with its entry-id source (crypto.randomUUID) and its clock replaced by the
same deterministic sequences that pi_lab's ``uuid_factory`` and ``clock`` receive, so every id
and timestamp lines up. Skips without node or the pi package (bench/.pi).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pi_lab.session import SessionManager

pytestmark = pytest.mark.differential

REPO = Path(__file__).resolve().parents[2]
PI_PKG = REPO / "bench" / ".pi" / "node_modules" / "@earendil-works" / "pi-coding-agent"
WRITER = Path(__file__).resolve().parent / "pi_writer.mjs"
FIXED = datetime(2026, 7, 29, 9, 0, 0, 123000, tzinfo=timezone.utc)

USAGE = {"input": 10, "output": 20, "cacheRead": 30, "cacheWrite": 40, "totalTokens": 100,
         "cost": {"input": 0.001, "output": 0.0025, "cacheRead": 0, "cacheWrite": 1e-7, "total": 0.0035001}}


def user(text, ts=1_785_315_601_000):
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant(text, calls=()):
    content = [{"type": "text", "text": text}] + [
        {"type": "toolCall", "id": c, "name": "read", "arguments": {"path": f"{c}.py", "limit": 2.0}} for c in calls]
    return {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude-x", "usage": USAGE, "stopReason": "toolUse" if calls else "stop",
            "timestamp": 1_785_315_602_000}


SCENARIOS = {
    "lazy_flush_and_every_entry_kind": [
        {"op": "create", "cwd": "/repo", "id": "sess-a"},
        {"op": "model", "args": ["anthropic", "claude-x"]},
        {"op": "thinking", "args": ["high"]},
        {"op": "message", "args": [{"role": "system", "content": "", "sections": {"base": "You are pi ✓"},
                                    "timestamp": 1_785_315_600_000}]},
        {"op": "custom", "args": ["ext-state", {"n": 1.5, "deep": {"k": [1, 2.0, None]}}]},
        {"op": "message", "args": [user("héllo 😀 \u2028 \u0007 \"quoted\"")]},
        {"op": "message", "args": [assistant("reading", ["c1"])]},
        {"op": "message", "args": [{"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                                    "content": [{"type": "text", "text": "x = 1\n"}], "isError": False,
                                    "timestamp": 1_785_315_603_000}]},
        {"op": "custom_message", "args": ["note", "remember", False, {"why": "test"}]},
        {"op": "label", "args": ["00000004", "start"]},
        {"op": "label", "args": ["00000004", ""]},
        {"op": "name", "args": ["  My\r\nsession  "]},
        {"op": "edit", "args": ["00000005", {"content": "short"}]},
        {"op": "edit", "args": ["00000004", None]},
        {"op": "compaction", "args": ["summary text", "00000004", 12345, {"readFiles": ["c1.py"], "modifiedFiles": []}, False, USAGE]},
        {"op": "compaction", "args": ["keep nothing", None, 99]},
        {"op": "message", "args": [user("after")]},
    ],
    "branching_summaries_and_roots": [
        {"op": "create", "cwd": "/repo", "id": "sess-b"},
        {"op": "message", "args": [user("one")]},
        {"op": "message", "args": [assistant("two")]},
        {"op": "message", "args": [user("three")]},
        {"op": "branch", "args": ["00000002"]},
        {"op": "summary", "args": ["00000001", "went back", {"readFiles": [], "modifiedFiles": ["a.py"]}, False, USAGE]},
        {"op": "message", "args": [user("new direction")]},
        {"op": "reset"},
        {"op": "summary", "args": [None, "from the root"]},
        {"op": "reset"},
        {"op": "message", "args": [user("second root")]},
        {"op": "label", "args": ["00000001", "first"]},
        {"op": "edit", "args": ["missing", None]},
        {"op": "edit", "args": ["00000001", {"text": "bad"}]},
    ],
    "extract_a_branch_with_labels": [
        {"op": "create", "cwd": "/repo", "id": "sess-d"},
        {"op": "message", "args": [user("one")]},
        {"op": "label", "args": ["00000001", "mark"]},
        {"op": "model", "args": ["openai", "gpt-x"]},
        {"op": "message", "args": [assistant("two")]},
        {"op": "compaction", "args": ["sum", "00000002", 7]},
        {"op": "message", "args": [user("three")]},
        {"op": "label", "args": ["00000004", "reply"]},
        {"op": "extract", "args": ["00000006"]},
        {"op": "message", "args": [assistant("in the new file")]},
    ],
    "errors_leave_nothing_behind": [
        {"op": "create", "cwd": "/repo", "id": "sess-c"},
        {"op": "label", "args": ["nope", "x"]},
        {"op": "branch", "args": ["nope"]},
        {"op": "message", "args": [user("only")]},
        {"op": "edit", "args": ["00000001", {"content": 5}]},
    ],
}


def run_pi(ops, out_dir):
    ops_file = out_dir.parent / f"{out_dir.name}.json"
    ops_file.write_text(json.dumps(ops))
    done = subprocess.run(["node", str(WRITER), str(PI_PKG), str(ops_file), str(out_dir)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def run_pi_lab(ops, out_dir):
    counter = iter(range(1, 10_000))
    uuid_factory = lambda: f"{next(counter):08x}-0000-4000-8000-000000000000"  # noqa: E731
    sm = None
    results = []
    for op in ops:
        a = op.get("args", [])
        try:
            kind = op["op"]
            if kind == "create":
                sm = SessionManager.create(op["cwd"], out_dir, id=op["id"], uuid_factory=uuid_factory, clock=lambda: FIXED)
            elif kind == "message":
                results.append(sm.append_message(a[0]))
            elif kind == "thinking":
                results.append(sm.append_thinking_level_change(a[0]))
            elif kind == "model":
                results.append(sm.append_model_change(*a))
            elif kind == "compaction":
                results.append(sm.append_compaction(*a))
            elif kind == "custom":
                results.append(sm.append_custom_entry(*a))
            elif kind == "custom_message":
                results.append(sm.append_custom_message_entry(*a))
            elif kind == "label":
                results.append(sm.append_label_change(*a))
            elif kind == "name":
                results.append(sm.append_session_info(*a))
            elif kind == "edit":
                results.append(sm.append_context_edit(*a))
            elif kind == "branch":
                sm.branch(*a)
            elif kind == "reset":
                sm.reset_leaf()
            elif kind == "summary":
                results.append(sm.branch_with_summary(*a))
            elif kind == "extract":
                results.append("path" if sm.create_branched_session(*a) else None)
        except Exception as error:  # compared by message
            results.append({"error": str(error)})
    files = {p.name: p.read_text(encoding="utf-8") for p in Path(out_dir).iterdir()}
    return {"results": results, "files": files, "leaf": sm.leaf_id, "sessionId": sm.session_id}


@pytest.fixture(scope="module")
def node_ready():
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if not PI_PKG.is_dir():
        pytest.skip("pi is not installed in bench/.pi (bash bench/pi_runner/setup.sh)")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_calls_write_the_same_bytes(node_ready, tmp_path, name):
    ops = SCENARIOS[name]
    (tmp_path / "pi").mkdir()
    (tmp_path / "lab").mkdir()
    pi = run_pi(ops, tmp_path / "pi")
    lab = run_pi_lab(ops, tmp_path / "lab")
    pi, lab = normalise_new_session(pi), normalise_new_session(lab)
    assert lab["files"].keys() == pi["files"].keys()
    for file_name, text in pi["files"].items():
        assert lab["files"][file_name] == text, file_name
    assert lab["leaf"] == pi["leaf"] and lab["sessionId"] == pi["sessionId"]
    assert lab["results"] == pi["results"]


def normalise_new_session(run):
    """A branched session gets a random UUIDv7 id on both sides: name it NEW in the output."""
    new_ids = set()
    for text in run["files"].values():
        header = json.loads(text.splitlines()[0])
        if "parentSession" in header:
            new_ids.add(header["id"])
    def fix(value):
        for new_id in new_ids:
            value = value.replace(new_id, "NEW")
        return value
    parent_dir = None
    files = {}
    for name, text in run["files"].items():
        header = json.loads(text.splitlines()[0])
        if "parentSession" in header:
            parent_dir = os.path.dirname(header["parentSession"])
        files[fix(name)] = text
    if parent_dir:
        files = {name: text.replace(parent_dir, "DIR") for name, text in files.items()}
    return {**run, "files": {name: fix(text) for name, text in files.items()}, "sessionId": fix(run["sessionId"])}
