"""Regression tests for the fuzz findings of issue #15 in the session engine and the view (helper F1)."""

from __future__ import annotations

import pytest

from pi_lab.session._text import safe_repr


def _nested(depth: int, leaf=None):
    value = [] if leaf is None else leaf
    for _ in range(depth):
        value = [value]
    return value


class TestSafeRepr:
    def test_deep_list_is_cut_without_recursion(self):
        text = safe_repr(_nested(3000, "x"))
        assert "…" in text and len(text) <= 80

    def test_cyclic_dict_is_cut(self):
        cyclic: dict = {}
        cyclic["a"] = cyclic
        assert safe_repr(cyclic).startswith("{'a': {'a':")

    def test_lone_surrogate_is_escaped(self):
        text = safe_repr({"\ud800": "a\udc00"})
        assert text == "{'\\ud800': 'a\\udc00'}"
        text.encode("utf-8")  # printable anywhere

    def test_plain_values_read_as_repr(self):
        assert safe_repr("abc") == "'abc'"
        assert safe_repr({"a": [1, 2.5, None, True]}) == "{'a': [1, 2.5, None, True]}"

    @pytest.mark.parametrize("limit", [1, 10, 80])
    def test_bounded(self, limit):
        assert len(safe_repr("x" * 10_000, limit=limit)) <= limit
        assert len(safe_repr(list(range(10_000)), limit=limit)) <= limit

    def test_huge_int(self):
        assert safe_repr(10**5000).startswith("<int")


# ---------------------------------------------------------------------------------------------
# Small hostile sessions (the same shapes as tests/fuzz/test_known_findings.py).

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from pi_lab.errors import PiLabError  # noqa: E402
from pi_lab.session._json import dumps, loads_object  # noqa: E402
from pi_lab.session.readonly import session_from_bytes  # noqa: E402

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
DEEP = "\u0000DEEP\u0000"  # replaced by a list nested 3,000 levels deep in the file text
ROOT = Path(__file__).resolve().parents[2]
PI_COMPACTION = ROOT / "bench/.pi/node_modules/@earendil-works/pi-coding-agent/dist/core/compaction/compaction.js"


def user(entry_id: Any, parent: Any, text: str = "hi") -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1}}


def assistant(entry_id: Any, parent: Any) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p", "model": "m",
                        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
                        "stopReason": "stop", "timestamp": 2}}


def session_bytes(*entries: dict[str, Any]) -> bytes:
    text = "".join(json.dumps(e) + "\n" for e in (HEADER, *entries))
    return text.replace(json.dumps(DEEP), "[" * 3000 + '"x"' + "]" * 3000).encode()


def write(tmp_path: Path, data: bytes, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _node(script: str, stdin: str) -> str:
    if shutil.which("node") is None or not PI_COMPACTION.exists():
        pytest.skip("node or pi 1.6.0 (bench/.pi) not available")
    done = subprocess.run(["node", "--input-type=module", "-e", script], input=stdin.encode(), capture_output=True,
                          timeout=60, check=True)
    return done.stdout.decode()


SURROGATE_KEYS = [
    {"\ud800": 1},
    {"a\udc00b": {"\ud800x": ["\udfff", 1.5, {"k\ud800": None}]}, "plain": "é"},
    {"\U0010ffff": 1, "\udbff": 2.0, "\n\u0001\"\\": 3},
]


class TestLoneSurrogateKeys:
    """pi's JSON.stringify writes a lone surrogate in an object key as a \\udXXX escape."""

    @pytest.mark.parametrize("value", SURROGATE_KEYS)
    def test_written_as_json_stringify_writes_it(self, value):
        # JSON.stringify in node on the value read back from the standard library's ASCII text.
        script = "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(JSON.stringify(JSON.parse(s))))"
        if shutil.which("node") is None:
            pytest.skip("node not available")
        done = subprocess.run(["node", "-e", script], input=json.dumps(value).encode(), capture_output=True, timeout=60,
                              check=True)
        assert dumps(value) == done.stdout.decode("utf-8", "surrogatepass").encode("utf-8", "surrogatepass")
        assert b"\\ud800" in dumps({"\ud800": 1})

    @pytest.mark.parametrize("value", SURROGATE_KEYS)
    def test_round_trips(self, value):
        assert loads_object(dumps(value)) == value
        assert dumps(loads_object(dumps(value))) == dumps(value)

    def test_deep_value_under_a_surrogate_key(self):
        deep: Any = "x"
        for _ in range(3000):
            deep = [deep]
        text = dumps({"\ud800": deep})
        assert text.startswith(b'{"\\ud800":[[[') and text.endswith(b"]]]}")

    def test_fork_keeps_the_entry_byte_exact(self, tmp_path):
        from pi_lab.session import SessionManager

        odd = user("u1", None)
        odd["message"]["details"] = {"\ud800": 1}
        source = write(tmp_path, session_bytes(odd))
        sm = SessionManager.open(source, session_dir=tmp_path / "forks")
        fork = Path(sm.create_branched_session("u1"))
        lines = fork.read_bytes().splitlines()
        assert b'"details":{"\\ud800":1}' in lines[-1]
        assert loads_object(lines[-1])["message"]["details"] == {"\ud800": 1}

    def test_token_estimate_equals_pis(self):
        from pi_lab.compaction import estimate_tokens

        messages = [
            {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read",
                                                "arguments": {"\ud800": 1, "p\udc00": "a" * 7}}]},
            {"role": "assistant", "content": [{"type": "toolCall", "id": "c2", "name": "w", "arguments": {"\udbff": 1}}]},
        ]
        script = (f"import {{ estimateTokens }} from {json.dumps(PI_COMPACTION.as_uri())};"
                  "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>"
                  "process.stdout.write(JSON.stringify(JSON.parse(s).map(estimateTokens))))")
        assert [estimate_tokens(m) for m in messages] == json.loads(_node(script, json.dumps(messages)))

    def test_the_viewer_opens_it(self):
        from pi_lab.view.payload import SessionView

        call = assistant("a1", "u1")
        call["message"]["content"] = [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"\ud800": 1}}]
        sm = session_from_bytes(session_bytes(user("u1", None), call), "s.jsonl")
        SessionView.open(sm)
