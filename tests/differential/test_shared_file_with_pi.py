"""pi 1.6.0 and pi_lab appending to the same session file at the same time.

pi (under Node, its own SessionManager and appendFileSync) appends while pi_lab appends through
its second-writer guard. Afterwards every line of the file is whole, no line of either writer is
missing, and pi_lab's memory (after one refresh) holds exactly the file's entries. Skips without
node or the pi package (bench/.pi).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pi_lab.errors import ConcurrentWriteError
from pi_lab.session import SessionManager

pytestmark = pytest.mark.differential

REPO = Path(__file__).resolve().parents[2]
PI_PKG = REPO / "bench" / ".pi" / "node_modules" / "@earendil-works" / "pi-coding-agent"
APPENDER = Path(__file__).resolve().parent / "pi_appender.mjs"


@pytest.mark.skipif(shutil.which("node") is None or not PI_PKG.exists(), reason="needs node and bench/.pi")
@pytest.mark.parametrize("allow", [False, True])
def test_pi_and_pi_lab_appending_together_lose_and_tear_nothing(tmp_path, allow):
    sm = SessionManager.create("/repo", tmp_path)
    sm.append_message({"role": "user", "content": "start", "timestamp": 1})
    sm.allow_concurrent_writes = allow
    pi_count = 600
    proc = subprocess.Popen(["node", str(APPENDER), str(PI_PKG), sm.session_file, str(pi_count)],
                            stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    mine: list[str] = []
    refused = 0
    reasons: set[str] = set()
    while proc.poll() is None and len(mine) < 5000:
        try:
            mine.append(sm.append_custom_entry("lab", {"n": len(mine), "pad": "l" * (len(mine) % 400)}))
        except ConcurrentWriteError as error:
            refused += 1
            assert sm.session_file in str(error)
            reasons.add(error.what)
    assert proc.wait(timeout=120) == 0
    sm.refresh()
    raw = open(sm.session_file, "rb").read()
    assert raw.endswith(b"\n")
    lines = [json.loads(line) for line in raw.split(b"\n")[:-1]]  # every line whole
    pi_lines = [e for e in lines if e.get("customType") == "pi"]
    assert sorted(e["data"]["i"] for e in pi_lines) == list(range(pi_count))
    assert [e["id"] for e in lines if e.get("customType") == "lab"] == mine
    assert [e.get("id") for e in sm.file_entries] == [e.get("id") for e in lines]
    # pi reads the result as pi_lab does.
    again = SessionManager.open(sm.session_file)
    assert [e["id"] for e in again.entries] == [e["id"] for e in sm.entries]
    print(f"\nallow={allow}: pi {pi_count} lines, pi_lab {len(mine)} lines, {refused} appends refused {sorted(reasons)}")
