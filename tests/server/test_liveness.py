"""Nothing hangs the server (issue 16): a FIFO named like a session, a request still working
when the server is told to stop."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from pi_lab.server.handlers import API_ROOT as API

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


async def test_a_fifo_is_refused_at_once_and_blocks_no_worker(api, root, sessions_dir, copy_fixture):
    os.mkfifo(root / "pipe.jsonl")
    os.mkfifo(sessions_dir / "pipe.jsonl")
    good = copy_fixture("public-twkrash-branching.jsonl", root, "good.jsonl")
    started = time.monotonic()
    # More requests than workers (4): were the FIFO opened, every worker would block on it.
    answers = await asyncio.wait_for(asyncio.gather(*(
        api.post("session", "state", path=path)
        for path in ["pipe.jsonl", "@sessions/pipe.jsonl"] * 4)), timeout=20)
    for code, body in answers:
        assert code == 422, body
    code, body = await api.post("open-in-notebook", path="pipe.jsonl")
    assert code == 422
    assert time.monotonic() - started < 10
    code, state = await api.post("session", "state", path=good.name)
    assert code == 200 and state["row_count"] > 0  # the workers are free


async def test_the_fifo_error_says_what_the_file_is(api, root, jp_fetch):
    os.mkfifo(root / "pipe.jsonl")
    response = await jp_fetch(API, "session", "state", method="POST", body=json.dumps({"path": "pipe.jsonl"}),
                              raise_error=False)
    assert response.code == 422 and b"fifo" in response.body.lower(), response.body


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _big_session(path: Path, entries: int) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"type":"session","version":3,"id":"big","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}\n')
        parent = "null"
        for k in range(entries):
            out.write(f'{{"type":"message","id":"e{k}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z",'
                      f'"message":{{"role":"user","content":"q{k}","timestamp":1}}}}\n')
            parent = f'"e{k}"'


def test_sigterm_stops_the_server_while_a_request_is_still_working(tmp_path):
    """A real ``jupyter server`` with the extension: a request whose layout takes many seconds
    (300,000 rows, a search of 450 words every row matches) is running when SIGTERM arrives."""
    root = tmp_path / "root"
    root.mkdir()
    _big_session(root / "big.jsonl", 300_000)
    port, token = _free_port(), "pi-lab-test-token"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", f"--ServerApp.root_dir={root}", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", "--allow-root", f"--IdentityProvider.token={token}", "--ServerApp.open_browser=False",
         "--ServerApp.jpserver_extensions={'pi_lab.server': True}", "--PiLabConfig.workers=1",
         f"--PiLabConfig.sessions_dir={tmp_path / 'sessions'}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    try:
        base = f"http://127.0.0.1:{port}/{API}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"{base}/sessions", headers={"Authorization": f"token {token}"}),
                                       timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"the server did not start: {server.stderr.read().decode()[-2000:] if server.poll() is not None else ''}")
                time.sleep(0.3)
        body = json.dumps({"path": "big.jsonl", "view": {"search": " ".join(["q"] * 450)}}).encode()
        request = urllib.request.Request(f"{base}/session/state", data=body, method="POST",
                                         headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
        answered: list[object] = []
        worker = threading.Thread(target=lambda: answered.append(_try(lambda: urllib.request.urlopen(request, timeout=120).read())),
                                  daemon=True)
        worker.start()
        time.sleep(4)  # parsed by now, and deep in the layout
        assert not answered, "the request finished too early to test anything"
        server.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        try:
            server.wait(timeout=8)
        except subprocess.TimeoutExpired:
            pytest.fail("the server was still running 8 s after SIGTERM")
        elapsed = time.monotonic() - stopped
        print(f"exited {elapsed:.2f} s after SIGTERM")
        assert elapsed < 4, f"the server took {elapsed:.1f} s to exit after SIGTERM"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _try(fn):
    try:
        return fn()
    except Exception as error:  # the server went away mid-request: that is the point
        return error
