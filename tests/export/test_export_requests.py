"""Every read request the kernel answers (pi_lab.view.payload.READ_OPS) is answered by the static
page's transport (src_frontend/export/staticTransport.ts, run in node), or refused with a
sentence the reader can act on: never "unknown request"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import generated_session, node_bundle, write_packed_parts, write_session  # noqa: E402

from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.view.contract import READ_OP_NAMES  # noqa: E402
from pi_lab.view.payload import READ_OPS  # noqa: E402


@pytest.fixture(scope="module")
def checker(tmp_path_factory) -> Path:
    return node_bundle(Path(__file__).with_name("requests_check.ts"), tmp_path_factory.mktemp("requests"))


def test_the_check_asks_every_read_request_of_the_kernel():
    assert set(READ_OPS) == set(READ_OP_NAMES)


def test_the_static_page_answers_or_refuses_every_read_request_in_words(checker, tmp_path):
    sm = SessionManager.open(str(write_session(generated_session(3, 60), tmp_path / "g.jsonl")), read_only=True)
    write_packed_parts(sm, tmp_path / "parts.json")
    run = subprocess.run(["node", str(checker), str(tmp_path / "parts.json")], capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 1), run.stderr
    answers = json.loads(run.stdout)
    assert [a["op"] for a in answers] == list(READ_OP_NAMES)
    broken = [a for a in answers if "broken" in a or a.get("result") == "undefined"]
    assert not broken
    assert run.returncode == 0
