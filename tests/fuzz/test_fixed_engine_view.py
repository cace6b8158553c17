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

    def test_tuples_read_as_repr(self):
        assert [safe_repr(t) for t in [(), (1,), (1, "a")]] == ["()", "(1,)", "(1, 'a')"]

    def test_huge_int(self):
        assert safe_repr(10**5000).startswith("<int")


# ---------------------------------------------------------------------------------------------
# Small hostile sessions (the same shapes as tests/fuzz/test_fixed_findings.py).

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from pi_lab.errors import PiLabError  # noqa: E402
from pi_lab.session._json import dumps, loads_object  # noqa: E402
from pi_lab.session.readonly import session_from_bytes  # noqa: E402

from fuzz.hostile import DEEP, assistant, session_bytes, user, write  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PI_COMPACTION = ROOT / "bench/.pi/node_modules/@earendil-works/pi-coding-agent/dist/core/compaction/compaction.js"


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

    def test_halves_of_a_pair_are_one_character(self):
        # A Python caller may build "\ud83d" + "\ude00"; JavaScript sees one character there.
        halves = "\ud83d" + "\ude00"
        value = {"k": halves, halves + "x": ["\ud800" + halves]}
        assert dumps(value) == '{"k":"😀","😀x":["\\ud800😀"]}'.encode()

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


DEEP_ID = (user("u1", None), assistant("a1", "u1"), user(DEEP, "a1"), user("u3", "a1"))


def _deep_list(leaf: Any = "x", depth: int = 3000) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


class TestOddIds:
    @pytest.mark.parametrize("view", ["context_diff", "compare_branches"])
    def test_a_deep_id_is_named_in_the_error(self, view):
        import pi_lab.view as views
        from pi_lab.view.errors import UnknownEntry

        sm = session_from_bytes(session_bytes(*DEEP_ID), "s.jsonl")
        with pytest.raises(UnknownEntry, match=r"must be an entry id \(a string\), not list \[\[\["):
            getattr(views, view)(sm, "u3", sm.file_entries[3]["id"])

    def test_unknown_entry_message_is_short(self):
        from pi_lab.view.errors import UnknownEntry

        message = str(UnknownEntry(_deep_list(), "b"))
        assert message.startswith("b must be an entry id (a string), not list [[[") and len(message) < 200

    def test_context_at_an_entry_whose_id_is_a_list(self):
        from pi_lab.view.context import context_at

        sm = session_from_bytes(session_bytes(user("u1", None), assistant(["x"], "u1")), "s.jsonl")
        context = context_at(sm.file_entries)
        assert context["at"] == ["x"]
        assert [m["source_id"] for m in context["messages"]] == ["u1", ["x"]]
        assert not any(m.get("replaced") or m.get("omitted") for m in context["messages"])

    def test_folding_under_a_root_whose_id_is_a_list(self):
        from pi_lab.view.rows import RowState

        sm = session_from_bytes(session_bytes(user(DEEP, None), assistant("a1", DEEP), user("u3", "a1")), "s.jsonl")
        rows = RowState(sm, folded=["a1"]).rows
        # a1 is folded (u3 below it hidden); the root with the list id stays, not folded.
        assert [(r.entry_id, r.folded) for r in rows if isinstance(r.entry_id, str)] == [("a1", True)]
        assert [r.folded for r in rows if not isinstance(r.entry_id, str)] == [False]
        assert "u3" in [r.entry_id for r in RowState(sm, folded=[]).rows]

    def test_a_header_type_nested_deep_is_an_invalid_file(self, tmp_path):
        from pi_lab.session import SessionManager
        from pi_lab.session.storage import InvalidSessionFile

        path = write(tmp_path, ('{"type":' + "[" * 3000 + '"x"' + "]" * 3000 + ',"id":"s1","version":3}\n').encode())
        with pytest.raises(InvalidSessionFile, match=r"not a session header \(type \[\[\["):
            SessionManager.open(path, read_only=True)


class TestStructureHeader:
    """The blob header is written for any value and read back by the browser's JSON.parse."""

    VALUES = {"deep": _deep_list(), "lone": "a\ud800b\udfff", "file": os.fsdecode(b"/tmp/\xff.jsonl"),
              "wide": "é\U0001f600", "nan": float("nan"), "one": 1.0}

    @pytest.mark.parametrize("ensure_ascii", [True, False])
    def test_written_for_any_value(self, ensure_ascii):
        from pi_lab.view.columns import MAGIC, decode_structure, pack_blob

        blob = pack_blob(MAGIC, dict(self.VALUES), [("entry", "u32", 1, b"\x07\0\0\0")], ensure_ascii=ensure_ascii)
        header, columns = decode_structure(blob)
        assert columns == {"entry": [7]}
        expected = dict(self.VALUES, nan=None, one=1)
        # Compared as JSON text: == on a 3,000-level list recurses.
        assert dumps({k: header[k] for k in expected}) == dumps(expected)
        if ensure_ascii:
            blob[: 8 + int.from_bytes(blob[4:8], "little")].decode("ascii")

    def test_the_browser_reads_it(self):
        from pi_lab.view.columns import MAGIC, pack_blob

        if shutil.which("node") is None:
            pytest.skip("node not available")
        values = {k: v for k, v in self.VALUES.items() if k != "deep"}
        for ensure_ascii in (True, False):
            blob = pack_blob(MAGIC, dict(values), [], ensure_ascii=ensure_ascii)
            # What src_frontend/core/row.ts and export/data.ts do with the header bytes.
            script = ("const b=require('fs').readFileSync(0);const n=b.readUInt32LE(4);"
                      "const h=JSON.parse(new TextDecoder().decode(b.subarray(8,8+n)));"
                      "process.stdout.write(JSON.stringify(h))")
            done = subprocess.run(["node", "-e", script], input=blob, capture_output=True, timeout=60, check=True)
            header = json.loads(done.stdout)
            assert {k: header[k] for k in values} == dict(values, nan=None, one=1)

    @pytest.mark.parametrize("case", ["deep id", "list id", "surrogate id", "surrogate text", "file name"])
    def test_export_html(self, tmp_path, case):
        from pi_lab.export import export_html

        if case == "deep id":
            path = write(tmp_path, session_bytes(*DEEP_ID))
        elif case == "list id":
            path = write(tmp_path, session_bytes(user("u1", None), assistant(["x"], "u1")))
        elif case == "surrogate id":
            path = write(tmp_path, session_bytes(user("u1", None), assistant("\ud800", "u1")))
        elif case == "surrogate text":
            path = write(tmp_path, session_bytes(user("u1", None, "a\ud800")))
        else:
            path = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xff.jsonl"))
            path.write_bytes(session_bytes(user("u1", None)))
        try:
            export_html(path, tmp_path / "o.html")
        except PiLabError:
            return
        assert (tmp_path / "o.html").stat().st_size > 0
