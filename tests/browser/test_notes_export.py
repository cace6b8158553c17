"""Notes in an exported page (issue 26), in Debian's chromium with every network request blocked:
the notes embedded at export time show as marks and in the entry pane and the Notes tab, the note
filter lays the rows out in the page, and nothing offers to write: "Add note" is absent and
shift+N says why, in the one sentence of the protocol. An export made without notes shows no
notes at all."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from browser.test_export_views import STATIC, Offline  # noqa: E402  (the export tests' offline page)
from helpers import SEED_SECTION_14  # noqa: E402

from pi_lab.export import export_html  # noqa: E402
from pi_lab.research.notes import NoteStore  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.view.notes import kept_entry_ids  # noqa: E402
from pi_lab.view.rows import RowState  # noqa: E402

SHOTS = Path("/tmp/notes-shots")
REFUSAL = ("This page is a static export: notes are read-only here. Open the session in JupyterLab or a "
           "notebook to add notes.")
HOSTILE = 'JWT chosen here <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>'


@pytest.fixture(autouse=True)
def _built():
    if not STATIC.exists():
        pytest.skip("pi_lab/static/export.js is not built (jlpm build)")


def _row(page, entry_id: str):
    return page.locator(f".pi-lab .pi-row[data-id='{entry_id}']")


LAID_OUT = """() => {
  const cols = document.getElementById('pi-export').piLabViewer.columns();
  return Array.from({length: cols.length}, (_, r) => [cols.texts[r] ? cols.texts[r].id : null, cols.parent[r], cols.indent[r]]);
}"""
"""Each row of the page's layout: its entry id, its parent row and its indent."""


def test_the_export_lays_the_note_filter_out_as_the_engine_does(page, tmp_path):
    """Ranges and branches cover every entry between their ends (pi_lab.view.notes.covered_ids):
    the page's port of the layout keeps the rows the engine keeps, in the same tree shape."""
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    store = NoteStore(tmp_path / "notes.jsonl")
    store.add("S1", "U2B", "the cookie way, start to end", tag="cookie", end_entry_id="A5")
    store.add("S1", "A3", "the JWT branch", tag="jwt", scope="branch")
    store.add("S1", "U4", "one entry", tag="edge")
    out = export_html(path, tmp_path / "seed.html", notes=store)
    view = Offline(page, out)
    sm = SessionManager.open(str(path), read_only=True)
    for note_filter, filter_mode in (("noted", "default"), ("tag:cookie", "default"), ("tag:jwt", "all"),
                                     ("noted", "user-only"), ("tag:edge", "no-tools")):
        page.locator(f".pi-lab .pi-filter[data-mode='{filter_mode}']").click()
        page.locator(".pi-lab .pi-note-filter").select_option(note_filter)
        engine = RowState(sm, filter_mode=filter_mode, note_filter=note_filter,
                          note_keep=kept_entry_ids(store, sm, note_filter))
        expected = [[engine.ids[r], int(engine.columns.parent[r]), int(engine.columns.indent[r])]
                    for r in range(len(engine.ids))]
        # The page lays out each change in turn: wait for the last one, then compare.
        try:
            page.wait_for_function(f"expected => JSON.stringify(({LAID_OUT})()) === JSON.stringify(expected)", arg=expected,
                                   timeout=10_000)
        except PlaywrightTimeout:
            pass  # the assertion below shows how they differ
        assert page.evaluate(LAID_OUT) == expected, (note_filter, filter_mode)
    view.done()


def test_an_export_shows_its_notes_read_only(page, tmp_path):
    SHOTS.mkdir(exist_ok=True)
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    store = NoteStore(tmp_path / "notes.jsonl")
    store.add("S1", "A3", HOSTILE, tag="jwt", author="ana")
    store.add("S1", "A4", "the cookie branch never ran the tests", tag="claim", author="test/judge",
              source="model:test/judge", question="Were the tests run?")
    store.add("S1", "gone-entry", "an entry this session does not have", tag="stale")
    out = export_html(path, tmp_path / "seed.html", notes=store)
    page.set_viewport_size({"width": 1400, "height": 900})
    view = Offline(page, out)

    # Marks: the reader's note and the model's finding, told apart; the count of notes.
    expect(_row(page, "A3").locator(".pi-row-note")).to_have_text("✎")
    expect(_row(page, "A4").locator(".pi-row-note-finding")).to_have_text("◆")
    expect(page.locator(".pi-lab .pi-note-count")).to_have_text("✎ 2 notes")
    # The entry pane lists the note as text, with nothing to edit it.
    view.select("A3")
    section = page.locator(".pi-lab .pi-notes")
    expect(section.locator(".pi-note-text")).to_have_text(HOSTILE)
    expect(section.locator(".pi-note-tag")).to_have_text("jwt")
    assert section.locator("img, script").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    expect(section.locator(".pi-note-add")).to_be_hidden()
    expect(section.locator(".pi-note-edit, .pi-note-remove")).to_have_count(0)
    page.screenshot(path=str(SHOTS / "export-notes-section.png"))
    # shift+N refuses with the protocol's sentence and opens no editor.
    page.locator(".pi-lab .pi-rows").focus()
    page.keyboard.press("Shift+N")
    expect(page.locator(".pi-lab .pi-banner")).to_have_text(REFUSAL)
    expect(page.locator(".pi-lab .pi-note-editor")).to_have_count(0)

    # The note filter, laid out in the page from the embedded notes.
    page.locator(".pi-lab .pi-note-filter").select_option("noted")
    expect(page.locator(".pi-lab .pi-row")).to_have_count(2)
    assert sorted(page.eval_on_selector_all(".pi-lab .pi-row", "els => els.map(e => e.dataset.id)")) == ["A3", "A4"]
    page.screenshot(path=str(SHOTS / "export-notes-filter.png"))
    page.locator(".pi-lab .pi-note-filter").select_option("tag:claim")
    expect(page.locator(".pi-lab .pi-row")).to_have_count(1)
    expect(page.locator(".pi-lab .pi-row")).to_have_attribute("data-id", "A4")
    page.locator(".pi-lab .pi-note-filter").select_option("")

    # The Notes tab: both notes, the finding under its question, the stale one on its own line.
    view.tab("Notes")
    listing = page.locator(".pi-lab .pi-notes-all")
    expect(listing.locator(".pi-notes-findings .pi-note-question").first).to_have_text("Q: Were the tests run?")
    expect(listing.locator(".pi-notes-missing summary")).to_have_text("1 note on entries not in this session")
    page.screenshot(path=str(SHOTS / "export-notes-list.png"))
    listing.locator(".pi-note-finding[data-entry='A4']").click()
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", "A4")
    view.done()


def test_an_export_without_notes_shows_none(page, tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    out = export_html(path, tmp_path / "plain.html", notes=False)
    view = Offline(page, out)
    view.select("A3")
    expect(page.locator(".pi-lab .pi-detail-id")).to_have_text("A3")
    expect(page.locator(".pi-lab .pi-note-filter-box")).to_be_hidden()
    expect(page.locator(".pi-lab .pi-tab-notes")).to_be_hidden()
    assert page.locator(".pi-lab .pi-notes").count() == 0
    view.done()
