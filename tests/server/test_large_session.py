"""The 100,000-entry synthetic session: a usable view, and a server that keeps answering.

Uses ``bench/out/s100k.jsonl`` when the benchmark left it there, else generates it (about 9 s).
The whole test stays under about 20 s on two cores.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pi_lab.server.handlers import API_ROOT

pytestmark = pytest.mark.slow

NAME = "2026-03-01T00-00-00-000Z_s100k.jsonl"


@pytest.fixture(scope="session")
def big_session(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    ready = repo_root / "bench" / "out" / "s100k.jsonl"
    if ready.is_file() and ready.stat().st_size > 100_000_000:
        return ready
    out = tmp_path_factory.mktemp("big") / "s100k.jsonl"
    subprocess.run([sys.executable, str(repo_root / "bench" / "generate.py"), "--entries", "100000", "--out", str(out),
                    "--quiet"], check=True, timeout=120)
    return out


async def test_a_100k_session_is_usable_and_the_server_keeps_answering(jp_fetch, root, big_session):
    target = root / NAME
    shutil.copyfile(big_session, target)  # a copy: the test appends to it
    (root / "small.jsonl").write_text('{"type":"session","version":3,"id":"small","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n')

    async def post(op: str, timeout: float = 120, **body):
        response = await jp_fetch(API_ROOT, "session", op, method="POST", body=json.dumps({"path": NAME, **body}),
                                  request_timeout=timeout)
        return json.loads(response.body) if op != "structure" else response.body

    loading = asyncio.ensure_future(post("state"))
    await asyncio.sleep(0.3)
    # While the big file is parsed in a worker thread, other requests are answered: a parse on the
    # server's event loop would hold the first of them until the session is loaded (answered == 1).
    answered = 0
    while not loading.done():
        status = await jp_fetch("api", "status", request_timeout=10)
        small = await jp_fetch(API_ROOT, "session", "state", method="POST", body=json.dumps({"path": "small.jsonl"}),
                               request_timeout=10)
        assert status.code == 200 and json.loads(small.body)["session"]["id"] == "small"
        answered += 1
        await asyncio.sleep(0.5)
    assert answered >= 2
    state = await loading
    assert state["session"]["entries"] == 100_000
    assert state["row_count"] > 50_000

    blob = await post("structure")
    assert blob[:4] == b"PIR1" and len(blob) < 4_000_000
    rows = await post("rows", args={"start": state["row_count"] - 100, "end": state["row_count"],
                                          "version": state["version"]})
    assert len(rows["rows"]) == 100
    context = await post("context_at", args={"id": state["leaf_id"]})
    assert context["messages"]
    quiet = await post("poll", version=state["version"], generation=state["generation"])
    assert quiet["kind"] == "none"

    with open(target, "ab") as handle:
        handle.write(json.dumps({"type": "message", "id": "live-1", "parentId": state["leaf_id"],
                                 "timestamp": "2030-01-01T00:00:00.000Z",
                                 "message": {"role": "user", "content": "still here", "timestamp": 1893456000000}}).encode() + b"\n")
    grown = await post("poll", version=state["version"], generation=state["generation"])
    assert grown["leaf_id"] == "live-1" and grown["session"]["entries"] == 100_001

