"""Notes in the notebook widget (issue 26), in a real JupyterLab and chromium: a note added with
the keyboard alone (shift+N on the selected row, type, ctrl+Enter) lands in the widget's notes
file and marks its row, and a note added from Python (`w.notes.add(...)`) shows in the view
without a reload; the session file is byte-identical afterwards (notes never go into it)."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("playwright")
from browser.test_widget import kernel, kernel_json, run_notebook, write_notebook  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import SEED_SECTION_14  # noqa: E402

SHOTS = Path("/tmp/notes-shots")


def test_notes_in_the_widget(page, lab_server, open_lab, screenshot_dir, tmp_path):
    SHOTS.mkdir(exist_ok=True)
    session = tmp_path / "seed.jsonl"
    session.write_text(SEED_SECTION_14, encoding="utf-8")
    before = hashlib.sha256(session.read_bytes()).hexdigest()
    notes = tmp_path / "notes.jsonl"
    name = write_notebook(lab_server, "notes-widget.ipynb",
                          [f"import pi_lab\nw = pi_lab.open({str(session)!r}, notes={str(notes)!r})\nw"])
    run_notebook(page, open_lab, name)
    widget = page.locator(".jp-OutputArea .pi-lab")
    # No notes yet: the Notes tab is there, the note filter waits for a first note.
    expect(widget.locator(".pi-tab-notes")).to_be_visible()
    expect(widget.locator(".pi-note-filter-box")).to_be_hidden()

    # Keyboard only: the leaf row is selected; one up, shift+N, type, ctrl+Enter.
    selected = widget.locator(".pi-row.pi-selected")
    expect(selected).to_have_attribute("data-id", "C1")  # the leaf, a compaction
    widget.locator(".pi-rows").focus()
    page.keyboard.press("ArrowUp")
    target = "A6"
    expect(selected).to_have_attribute("data-id", target)
    page.keyboard.press("Shift+N")
    editor = widget.locator(".pi-note-editor")
    expect(editor.locator("textarea")).to_be_focused()
    page.keyboard.type("the summary drops the JWT decision")
    page.keyboard.press("Shift+Tab")
    page.keyboard.type("lost-context")
    page.screenshot(path=str(SHOTS / "widget-notes-editor.png"))
    page.keyboard.press("Control+Enter")
    expect(editor).to_have_count(0)
    expect(widget.locator(".pi-rows")).to_be_focused()
    row = widget.locator(f".pi-row[data-id='{target}']")
    expect(row.locator(".pi-row-note")).to_have_text("✎")
    expect(widget.locator(".pi-notes .pi-note-text")).to_have_text("the summary drops the JWT decision")
    expect(widget.locator(".pi-note-count")).to_have_text("✎ 1 note")
    assert kernel_json(page, "[(n.entry_id, n.tag, n.text) for n in w.notes.notes()]") == [
        [target, "lost-context", "the summary drops the JWT decision"]]
    page.screenshot(path=str(SHOTS / "widget-notes-marks.png"))

    # From Python: the view follows the store without a reload.
    kernel(page, "w.notes.add(w.view.sm.session_id, 'A3', 'added from the notebook', tag='py')")
    expect(widget.locator(".pi-row[data-id='A3'] .pi-row-note")).to_have_text("✎")
    expect(widget.locator(".pi-note-count")).to_have_text("✎ 2 notes")
    # The note filter is the kernel's layout (the note_filter traitlet), as the search is.
    widget.locator(".pi-note-filter").select_option("noted")
    expect(widget.locator(".pi-row")).to_have_count(2)
    assert kernel_json(page, "w.note_filter") == "noted"
    widget.locator(".pi-note-filter").select_option("tag:py")
    expect(widget.locator(".pi-row")).to_have_count(1)
    expect(widget.locator(".pi-row")).to_have_attribute("data-id", "A3")
    page.screenshot(path=str(SHOTS / "widget-notes-filter.png"))
    widget.locator(".pi-note-filter").select_option("")
    widget.locator(".pi-tab-notes").click()
    expect(widget.locator(".pi-notes-all .pi-note")).to_have_count(2)
    page.screenshot(path=str(SHOTS / "widget-notes-list.png"))
    shutil.copy(SHOTS / "widget-notes-list.png", screenshot_dir / "widget-notes-list.png")

    assert hashlib.sha256(session.read_bytes()).hexdigest() == before
