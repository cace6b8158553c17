"""The static export carries the session's notes (issue 26): the header's ``notes`` is the viewers'
notes payload, read-only, with the entries each tag covers; ``pi-lab export --notes/--no-notes``
and ``export_html(notes=)`` choose them; the session file is only read."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from pi_lab.cli import main
from pi_lab.data import recorded_session
from pi_lab.export import export_html
from pi_lab.export.data import export_data
from pi_lab.export.html import ExportError, unpack
from pi_lab.research.notes import NoteStore
from pi_lab.session import SessionManager

STATIC = Path(__file__).resolve().parents[2] / "pi_lab" / "static" / "export.js"
needs_script = pytest.mark.skipif(not STATIC.exists(), reason="pi_lab/static/export.js is not built (jlpm build)")


def header_of_bytes(main_part: bytes) -> dict:
    length = int.from_bytes(main_part[4:8], "little")
    return json.loads(main_part[8:8 + length])


def header_of_page(path: Path) -> dict:
    packed = re.search(r'id="pi-main">([^<]+)<', path.read_text()).group(1)
    return header_of_bytes(unpack(packed))


@pytest.fixture
def tiny(tmp_path) -> Path:
    return Path(shutil.copy(recorded_session().path, tmp_path / "tiny.jsonl"))


def noted(tiny: Path, store: Path) -> tuple[SessionManager, list[str]]:
    sm = SessionManager.open(tiny, read_only=True)
    branch = [e["id"] for e in sm.get_branch()]
    notes = NoteStore(store)
    notes.add(sm, branch[2], "asked for the fix", tag="ask")
    notes.add(sm, branch[4], "the detour", tag="detour", end_entry_id=branch[6])
    notes.add(sm, branch[-1], "the end")
    notes.add_many([{"session_id": "another-session", "entry_id": branch[1], "text": "not this one"}])
    return sm, branch


def test_the_header_carries_a_read_only_notes_payload(tiny, tmp_path):
    from pi_lab.export.html import export_notes

    sm, branch = noted(tiny, tmp_path / "notes.jsonl")
    payload = export_notes(tmp_path / "notes.jsonl", sm)
    assert payload is not None
    header = header_of_bytes(export_data(sm, notes=payload)[0])
    notes = header["notes"]
    assert notes["writable"] is False and notes["store"] == "notes.jsonl"  # its name, not where it lay
    assert [n["text"] for n in notes["notes"]] == ["asked for the fix", "the detour", "the end"]
    assert notes["tags"] == ["ask", "detour"] and notes["version"] == NoteStore(tmp_path / "notes.jsonl").version()
    # what the page marks and filters with: the tags covering each entry (a range: its whole path)
    assert notes["covered"] == {branch[2]: ["ask"], branch[4]: ["detour"], branch[5]: ["detour"],
                                branch[6]: ["detour"], branch[-1]: [""]}
    assert header_of_bytes(export_data(sm)[0])["notes"] is None
    assert export_notes(False, sm) is None and export_notes(None, sm) is None


@needs_script
def test_export_html_and_the_cli_choose_the_notes(tiny, tmp_path, monkeypatch, capsys):
    sm, branch = noted(tiny, tmp_path / "notes.jsonl")
    before = hashlib.sha256(tiny.read_bytes()).hexdigest()
    page = export_html(tiny, tmp_path / "a.html", notes=NoteStore(tmp_path / "notes.jsonl"))
    assert len(header_of_page(page)["notes"]["notes"]) == 3
    assert header_of_page(export_html(tiny, tmp_path / "b.html"))["notes"] is None
    # the CLI: --notes FILE; by default pi-lab-notes.jsonl in the current folder when it is there
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(tiny), "-o", "c.html"]) == 0
    assert header_of_page(tmp_path / "c.html")["notes"] is None
    shutil.copy(tmp_path / "notes.jsonl", tmp_path / "pi-lab-notes.jsonl")
    assert main(["export", str(tiny), "-o", "d.html"]) == 0
    assert header_of_page(tmp_path / "d.html")["notes"]["store"] == "pi-lab-notes.jsonl"
    assert main(["export", str(tiny), "-o", "e.html", "--no-notes"]) == 0
    assert header_of_page(tmp_path / "e.html")["notes"] is None
    assert main(["export", str(tiny), "-o", "f.html", "--notes", "notes.jsonl"]) == 0
    assert header_of_page(tmp_path / "f.html")["notes"]["store"] == "notes.jsonl"
    capsys.readouterr()
    assert main(["export", str(tiny), "-o", "g.html", "--notes", "missing.jsonl"]) == 1
    assert "no notes file missing.jsonl" in capsys.readouterr().err
    assert not (tmp_path / "g.html").exists()
    assert hashlib.sha256(tiny.read_bytes()).hexdigest() == before


@needs_script
def test_a_notes_path_that_is_a_symlink_is_refused(tiny, tmp_path):
    target = tmp_path / "real-notes.jsonl"
    noted(tiny, target)
    os.symlink(target, tmp_path / "link.jsonl")
    with pytest.raises(ExportError, match="symbolic link"):
        export_html(tiny, tmp_path / "x.html", notes=tmp_path / "link.jsonl")
    assert not (tmp_path / "x.html").exists()


@needs_script
def test_the_widget_exports_with_its_notes(tiny, tmp_path):
    import pi_lab

    noted(tiny, tmp_path / "notes.jsonl")
    w = pi_lab.open(tiny, notes=tmp_path / "notes.jsonl")
    page = w.to_html(tmp_path / "w.html")
    w.close()
    assert [n["tag"] for n in header_of_page(page)["notes"]["notes"]] == ["ask", "detour", ""]
