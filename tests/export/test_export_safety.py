"""The export never destroys a session or an earlier export (issue #21): the target is judged
by the engine's own reading rules, checked again at the rename, never written through a link,
and written beside the target first, so a kill -9 leaves the previous file whole."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pi_lab.cli import main
from pi_lab.export import ExportError, export_html
from pi_lab.session import SessionManager

STATIC = Path(__file__).resolve().parents[2] / "pi_lab" / "static" / "export.js"
needs_script = pytest.mark.skipif(not STATIC.exists(), reason="pi_lab/static/export.js is not built (jlpm build)")

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
USER = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1}}
BODY = json.dumps(USER).encode() + b"\n"
LONG_HEADER = json.dumps({"id": "s2", "type": "session", "version": 3, "timestamp": "2026-01-01T00:00:00.000Z",
                          "cwd": "/" + "x" * 70_000}).encode()

# Sessions whose first line is not the header: pi 1.6.0 opens every one of them.
OPENED_BY_PI = {
    "a blank first line": b"\n" + json.dumps(HEADER).encode() + b"\n" + BODY,
    "a first line of spaces": b"  \t \n" + json.dumps(HEADER).encode() + b"\n" + BODY,
    "a blank CR LF first line": b"\r\n" + json.dumps(HEADER).encode() + b"\r\n" + BODY.replace(b"\n", b"\r\n"),
    "spaces before the header": b"   " + json.dumps(HEADER).encode() + b"\n" + BODY,
    "a garbage first line": b"not json at all\n" + json.dumps(HEADER).encode() + b"\n" + BODY,
    "a header over 64 KB with id before type": LONG_HEADER + b"\n" + BODY,
}


def _source(tmp_path: Path) -> Path:
    path = tmp_path / "a.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n" + BODY)
    return path


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("case", sorted(OPENED_BY_PI))
def test_a_session_pi_opens_is_never_replaced(tmp_path, capsys, case):
    content = OPENED_BY_PI[case]
    source = _source(tmp_path)
    target = tmp_path / "b.jsonl"
    target.write_bytes(content)
    copy = tmp_path / "check.jsonl"
    shutil.copyfile(target, copy)
    assert SessionManager.open(str(copy), read_only=True).get_entries()  # the engine opens it: a session
    assert main(["export", str(source), "-o", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already holds a pi session" in err, err
    assert target.read_bytes() == content
    with pytest.raises(ExportError, match="already holds a pi session"):
        export_html(source, target)
    assert target.read_bytes() == content
    assert _leftovers(tmp_path) == []


def test_a_symlink_at_the_output_is_never_followed(tmp_path):
    source = _source(tmp_path)
    elsewhere = tmp_path / "notes.txt"
    elsewhere.write_bytes(b"my notes\n")
    link = tmp_path / "out.html"
    link.symlink_to(elsewhere)
    with pytest.raises(ExportError, match="symbolic link"):
        export_html(source, link)
    assert link.is_symlink() and elsewhere.read_bytes() == b"my notes\n"


def test_a_fifo_at_the_output_is_refused_without_blocking(tmp_path):
    source = _source(tmp_path)
    fifo = tmp_path / "out.html"
    os.mkfifo(fifo)
    with pytest.raises(ExportError, match="FIFO"):
        export_html(source, fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@needs_script
def test_a_session_put_at_the_output_during_the_build_is_kept(tmp_path, monkeypatch):
    import pi_lab.export.html as html_module

    source = _source(tmp_path)
    target = tmp_path / "out.html"
    content = OPENED_BY_PI["a garbage first line"]
    build = html_module.page_pieces

    def slow_build(sm, **kwargs):
        yield from build(sm, **kwargs)
        target.write_bytes(content)  # a session copied there while the page was being built

    monkeypatch.setattr(html_module, "page_pieces", slow_build)
    with pytest.raises(ExportError, match="already holds a pi session"):
        export_html(source, target)
    assert target.read_bytes() == content
    assert _leftovers(tmp_path) == []


@needs_script
def test_a_new_export_gets_an_ordinary_mode_and_a_replaced_one_keeps_its_own(tmp_path):
    source = _source(tmp_path)
    fresh = tmp_path / "fresh.html"
    export_html(source, fresh)
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask
    old = tmp_path / "old.html"
    old.write_bytes(b"<!DOCTYPE html>\n<p>an earlier export</p>\n")
    old.chmod(0o640)
    export_html(source, old)
    assert stat.S_IMODE(old.stat().st_mode) == 0o640
    assert old.read_text(encoding="utf-8").startswith("<!DOCTYPE html>") and b"earlier" not in old.read_bytes()
    assert _leftovers(tmp_path) == []


# The export of a page big enough that its write takes a while, in its own process.
SLOW_EXPORT = """
import sys
import pi_lab.export.html as html_module
page = "<!DOCTYPE html>\\n" + "x" * (64 << 20)
html_module.page_pieces = lambda sm, **kwargs: iter([page])
html_module.export_html(sys.argv[1], sys.argv[2])
"""


def _kill_while_writing(source: Path, target: Path) -> bool:
    """Start the export in another process and kill -9 it as soon as anything of the new
    page reaches the disk (the target or a file beside it changes). False: it finished first."""
    before = os.stat(target)
    folder = target.parent
    known = set(os.listdir(folder))
    child = subprocess.Popen([sys.executable, "-c", SLOW_EXPORT, str(source), str(target)])
    try:
        while child.poll() is None:
            now = os.stat(target)
            changed = (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns)
            written = any(os.stat(folder / n).st_size > 0 for n in set(os.listdir(folder)) - known
                          if (folder / n).exists())
            if changed or written:
                os.kill(child.pid, signal.SIGKILL)
                child.wait()
                return True
            time.sleep(0.0005)
        return False
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_an_export_killed_while_writing_leaves_the_previous_one_whole(tmp_path):
    source = _source(tmp_path)
    target = tmp_path / "out.html"
    previous = b"<!DOCTYPE html>\n<p>the previous export</p>\n"
    target.write_bytes(previous)
    killed = 0
    for _ in range(5):  # a machine fast enough to finish first gets another try
        if _kill_while_writing(source, target):
            killed += 1
            assert target.read_bytes() == previous
            break
        target.write_bytes(previous)
    assert killed == 1, "the export always finished before it could be killed"
    # The file the killed process left beside the target is removed by the next export.
    assert _leftovers(tmp_path)
    if STATIC.exists():
        export_html(source, target)
        assert _leftovers(tmp_path) == []
