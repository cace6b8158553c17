"""The export against hostile input (issue #15): it never writes over a session, and odd fields
give a page or a pi_lab error, never a built-in exception."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_lab.cli import main
from pi_lab.errors import PiLabError
from pi_lab.export import ExportError, export_html
from pi_lab.session import SessionManager

STATIC = Path(__file__).resolve().parents[2] / "pi_lab" / "static" / "export.js"
needs_script = pytest.mark.skipif(not STATIC.exists(), reason="pi_lab/static/export.js is not built (jlpm build)")

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
USER = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1}}
SESSION = "".join(json.dumps(e) + "\n" for e in (HEADER, USER)).encode()


def _session(tmp_path: Path, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(SESSION)
    return path


# --- the session file is never the output --------------------------------------------------

def test_export_error_is_a_pi_lab_error():
    assert issubclass(ExportError, PiLabError)


def test_cli_refuses_to_write_the_export_over_its_session(tmp_path, capsys):
    session = _session(tmp_path)
    assert main(["export", str(session), "-o", str(session)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "session file itself" in err, err
    assert session.read_bytes() == SESSION


@pytest.mark.parametrize("how", ["relative", "dotted", "symlink", "hard link"])
def test_export_html_refuses_the_session_under_another_name(tmp_path, monkeypatch, how):
    session = _session(tmp_path)
    if how == "relative":
        monkeypatch.chdir(tmp_path)
        out: Path = Path("s.jsonl")
    elif how == "dotted":
        (tmp_path / "sub").mkdir()
        out = tmp_path / "sub" / ".." / "s.jsonl"
    elif how == "symlink":
        out = tmp_path / "link.html"
        out.symlink_to(session)
    else:
        out = tmp_path / "hard.html"
        os.link(session, out)
    with pytest.raises(ExportError, match="session file itself"):
        export_html(session, out)
    assert session.read_bytes() == SESSION


def test_a_managers_export_refuses_its_own_file(tmp_path):
    session = _session(tmp_path)
    sm = SessionManager.open(str(session), read_only=True)
    with pytest.raises(ExportError, match="session file itself"):
        export_html(sm, session)
    assert session.read_bytes() == SESSION


def test_the_widgets_to_html_refuses_its_own_file(tmp_path):
    from pi_lab.widget.session_widget import SessionWidget

    session = _session(tmp_path)
    widget = SessionWidget(str(session))
    with pytest.raises(ExportError, match="session file itself"):
        widget.to_html(session)
    assert session.read_bytes() == SESSION


@pytest.mark.parametrize("content", [
    SESSION,  # another session
    b"\xef\xbb\xbf" + SESSION,  # with a byte order mark
    b'{"type":"session","cwd":"' + b"x" * 100_000 + b'"}\n',  # a header longer than what is read
    json.dumps(USER).encode() + b"\n",  # a session whose header line is gone: entries only
])
def test_export_html_refuses_to_replace_another_session(tmp_path, content):
    session = _session(tmp_path)
    other = tmp_path / "other.jsonl"
    other.write_bytes(content)
    with pytest.raises(ExportError, match="already holds a pi session"):
        export_html(session, other)
    assert other.read_bytes() == content


@needs_script
@pytest.mark.parametrize("content", [b"<!DOCTYPE html>\n<html></html>\n", b"", b"[1, 2]\n", b'{"a": 1}\n', b"\xff\xfe"])
def test_export_html_replaces_a_file_that_is_not_a_session(tmp_path, content):
    session = _session(tmp_path)
    out = tmp_path / "old.html"
    out.write_bytes(content)
    export_html(session, out)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# --- odd fields: a page, never a built-in exception --------------------------------------

DEEP_TEXT = "[" * 3000 + '"x"' + "]" * 3000


def _deep(depth: int = 3000) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal JSON values, compared without recursion (``==`` on 3,000 nested lists recurses)."""
    from pi_lab.session._json import dumps

    return dumps(a) == dumps(b)


def _assistant(entry_id: str, parent: str) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p",
                        "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                                "totalTokens": 2}, "stopReason": "stop", "timestamp": 2}}


def _file(tmp_path: Path, *entries: dict[str, Any]) -> Path:
    marker = '"\\u0000DEEP\\u0000"'
    text = "".join(json.dumps(e) + "\n" for e in (HEADER, USER, *entries)).replace(marker, DEEP_TEXT)
    path = tmp_path / "odd.jsonl"
    path.write_bytes(text.encode())
    return path


def _chunk_values(page: Path) -> list[Any]:
    """The chunks of an export page, parsed without recursion (they hold the deep values)."""
    import re

    from pi_lab.export.html import unpack
    from pi_lab.session._json import loads_iterative

    text = page.read_text(encoding="utf-8")
    offsets = json.loads(re.search(r'id="pi-chunk-offsets">([^<]*)<', text).group(1))
    packed = re.search(r'id="pi-chunks">([^<]*)</script>', text).group(1)
    return [loads_iterative(unpack(packed[a:b]).decode("utf-8")) for a, b in zip(offsets, offsets[1:])]


@needs_script
def test_an_entry_whose_type_is_an_object_is_exported(tmp_path):
    odd = dict(USER, id="u2", parentId="u1")
    odd["type"] = {"a": 1}
    out = export_html(_file(tmp_path, odd), tmp_path / "o.html")
    assert len(_chunk_values(out)[0]["r"]) == 2  # both entries have their record


def test_context_records_take_a_type_that_is_an_object():
    from pi_lab.export.context import context_records

    odd = dict(USER, id="u2", parentId="u1", type={"a": 1})
    records = context_records([USER, odd], [-1, 0])
    assert [r["b"] for r in records] == [-1, 0]


@needs_script
@pytest.mark.parametrize("where", ["stopReason", "role"])
def test_a_field_nested_3000_deep_is_exported_whole(tmp_path, where):
    odd = _assistant("a1", "u1")
    odd["message"][where] = "\u0000DEEP\u0000"
    out = export_html(_file(tmp_path, odd), tmp_path / "o.html")
    record = _chunk_values(out)[0]["r"][1]
    # The detail shows the deep field as it is (the chunk carries it whole, at full depth).
    assert _same(record["f"]["stop_reason" if where == "stopReason" else "role"], _deep())


def test_the_chunk_writer_takes_any_depth_lone_surrogates_and_nan():
    from pi_lab.export.data import _dumps
    from pi_lab.session._json import loads_iterative

    written = _dumps({"deep": _deep(), "text": "a\ud800b", "nan": float("nan"), "inf": float("inf"), "n": 1.5})
    text = written.decode("utf-8")  # valid UTF-8: the lone surrogate is an escape
    assert "\\ud800" in text and '"nan":null' in text and '"inf":null' in text
    value = loads_iterative(text)
    assert value["text"] == "a\ud800b" and value["n"] == 1.5 and _same(value["deep"], _deep())


def test_the_chunk_writer_writes_what_json_has_no_form_for_as_text():
    from pi_lab.export.data import _dumps

    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert _dumps({"a": [Odd(), (1, 2)], 3: None}) == b'{"a":["odd",[1,2]],"3":null}'


def test_the_context_diff_copies_deep_rows_without_recursion():
    from pi_lab.export.context import _diff, messages_of

    deep, other = _deep(), _deep()
    other_inner = other
    for _ in range(2999):
        other_inner = other_inner[0]
    other_inner[0] = "y"  # differs from ``deep`` only 3,000 levels down
    base = [{"role": deep, "text": "a"}, {"role": "user", "text": "b"}]
    rows = [{"role": deep, "text": "a"}, {"role": "user", "text": "b"}, {"role": other, "text": "a"}]
    ops = _diff(base, rows)
    assert ops[0] == [0, 2] and len(ops) == 2 and ops[1] is rows[2]
    records = [{"b": -1, "m": base, "s": []}, {"b": 0, "d": ops, "s": []}]
    assert _same(messages_of(records, 1), rows)
