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
