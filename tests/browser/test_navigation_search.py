"""Finding one's way in the read-only viewer of an exported page (the same core the notebook
widget and the JupyterLab viewer draw), in Debian's chromium with every network request
blocked: search hits marked in the rows and the entry pane with next/previous (buttons, F3 and
shift+F3), a row that matched inside a tool result's output saying so, the "go to entry id" box,
the note beside the count under "all", one name for an entry of an unknown type, and a Go-to
dialog that names only what this page has. Each was seen failing on the viewer before it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_export_views import STATIC, Offline  # noqa: E402

from pi_lab.export import export_html  # noqa: E402
from pi_lab.view.kinds import unknown_entry_text  # noqa: E402

SHOTS = Path("/tmp")
VIEWER = ".pi-lab"


@pytest.fixture(autouse=True)
def _built():
    if not STATIC.exists():
        pytest.skip("pi_lab/static/export.js is not built (jlpm build)")


def _message(entry_id: str, parent: str | None, second: int, message: dict) -> dict:
    return {"type": "message", "id": entry_id, "parentId": parent,
            "timestamp": f"2026-01-01T00:00:{second:02d}.000Z", "message": message}


def _session() -> list[dict]:
    """A small session whose word "zebra" sits in two tool results' output (rows show only the
    calls), in a user message twice, and nowhere else; plus an entry of a type pi does not know."""
    call = lambda cid, path: {"role": "assistant", "content": [{"type": "toolCall", "id": cid, "name": "read",  # noqa: E731
                                                                   "arguments": {"path": path}}],
                              "stopReason": "toolUse", "timestamp": 2}
    result = lambda cid, text: {"role": "toolResult", "toolCallId": cid, "toolName": "read",  # noqa: E731
                                "content": [{"type": "text", "text": text}], "isError": False, "timestamp": 3}
    return [
        {"type": "session", "version": 3, "id": "s-nav", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp/p"},
        _message("aa000001", None, 1, {"role": "user", "content": "read the config please", "timestamp": 1}),
        _message("aa000002", "aa000001", 2, call("c1", "cfg.toml")),
        _message("bb000003", "aa000002", 3, result("c1", "name = 'x'\nanimal = 'zebra'\n")),
        _message("bb000004", "bb000003", 4, {"role": "assistant", "content": [{"type": "text", "text": "It names an animal."}],
                                             "stopReason": "stop", "timestamp": 4}),
        _message("cc000005", "bb000004", 5, {"role": "user", "content": "a zebra? which zebra", "timestamp": 5}),
        _message("cc000006", "cc000005", 6, call("c2", "zoo.toml")),
        _message("dd000007", "cc000006", 7, result("c2", "[zoo]\nstripes = 'zebra'\n")),
        {"type": "future_entry", "id": "ee000008", "parentId": "dd000007", "timestamp": "2026-01-01T00:00:08.000Z"},
        _message("ee000009", "ee000008", 9, {"role": "assistant", "content": [{"type": "text", "text": "Done."}],
                                             "stopReason": "stop", "timestamp": 9}),
    ]


@pytest.fixture
def offline(page, tmp_path) -> Offline:
    from export_inputs import write_session  # tests/export, on the path via test_export_views
    path = write_session(_session(), tmp_path / "nav.jsonl")
    html = tmp_path / "nav.html"
    export_html(str(path), str(html))
    return Offline(page, html)


def _row(page, entry_id: str):
    return page.locator(f"{VIEWER} .pi-row[data-id='{entry_id}']")


def _selected(page):
    return page.locator(f"{VIEWER} .pi-row.pi-selected")


def _search(page, words: str) -> None:
    page.locator(f"{VIEWER} .pi-search").fill(words)
    expect(page.locator(f"{VIEWER} .pi-position")).to_contain_text("/")
    page.wait_for_function("() => document.querySelectorAll('.pi-lab .pi-row.pi-kind-tool_result').length > 0")


def test_search_hits_are_marked_and_walked_with_next_and_previous(offline):
    page = offline.page
    _search(page, "zebra")
    # Both tool results matched in output they do not show: each row says where, with the word.
    for entry_id in ("bb000003", "dd000007"):
        why = _row(page, entry_id).locator(".pi-row-why")
        expect(why).to_contain_text("zebra")
        expect(why.locator("mark.pi-hit")).to_have_text("zebra")
        expect(_row(page, entry_id).locator(".pi-row-text")).to_have_text("[read: cfg.toml]" if entry_id == "bb000003" else "[read: zoo.toml]")
    # The user message shows the word: marked in the row, no reason needed.
    expect(_row(page, "cc000005").locator(".pi-row-text mark.pi-hit")).to_have_count(2)
    expect(_row(page, "cc000005").locator(".pi-row-why")).to_have_text("")
    page.screenshot(path=str(SHOTS / "nav-search-rows.png"))

    # The entry pane marks the hits of the selected entry.
    _row(page, "bb000003").click()
    pane = page.locator(f"{VIEWER} .pi-pane")
    expect(pane.locator(".pi-detail-id")).to_have_text("bb000003")
    expect(pane.locator(".pi-detail-body mark.pi-hit").first).to_have_text("zebra")
    expect(pane.locator("mark.pi-hit-current")).to_have_count(1)
    page.screenshot(path=str(SHOTS / "nav-search-pane.png"))

    # F3 from the tree: the next hit; the user message has two, walked inside the pane first.
    rows = page.locator(f"{VIEWER} .pi-rows")
    rows.focus()
    order = page.eval_on_selector_all(f"{VIEWER} .pi-row", "els => els.map(e => e.dataset.id)")
    start = order.index("bb000003")
    page.keyboard.press("F3")
    expect(_selected(page)).to_have_attribute("data-id", order[start + 1])
    user_at = order.index("cc000005")
    for _ in range(user_at - start - 1):
        page.keyboard.press("F3")
    expect(_selected(page)).to_have_attribute("data-id", "cc000005")
    marks = pane.locator(".pi-detail-body mark.pi-hit")
    expect(marks).to_have_count(2)
    expect(marks.nth(0)).to_have_class("pi-hit pi-hit-current")
    page.keyboard.press("F3")
    expect(marks.nth(1)).to_have_class("pi-hit pi-hit-current")
    expect(_selected(page)).to_have_attribute("data-id", "cc000005")
    page.keyboard.press("Shift+F3")
    expect(marks.nth(0)).to_have_class("pi-hit pi-hit-current")
    page.keyboard.press("Shift+F3")
    expect(_selected(page)).to_have_attribute("data-id", order[user_at - 1])
    expect(rows).to_be_focused()  # the keys never took the keyboard away from the tree
    expect(pane.locator(".pi-detail-id")).to_have_text(order[user_at - 1])
    # The buttons beside the search do the same.
    page.locator(f"{VIEWER} .pi-hit-next").click()
    expect(_selected(page)).to_have_attribute("data-id", "cc000005")
    offline.done()


def test_go_to_entry_id_box(offline):
    page = offline.page
    box = page.locator(f"{VIEWER} .pi-goto")
    expect(box).to_have_attribute("placeholder", "go to entry id")
    box.fill("dd00")  # the start of an id
    box.press("Enter")
    expect(_selected(page)).to_have_attribute("data-id", "dd000007")
    expect(page.locator(f"{VIEWER} .pi-rows")).to_be_focused()
    box.fill("ee000009")  # a whole id
    box.press("Enter")
    expect(_selected(page)).to_have_attribute("data-id", "ee000009")
    box.fill("ff")  # names nothing
    box.press("Enter")
    expect(page.locator(f"{VIEWER} .pi-banner")).to_contain_text('No entry has an id starting with "ff"')
    expect(_selected(page)).to_have_attribute("data-id", "ee000009")
    expect(box).to_be_focused()
    box.fill("aa")  # names two
    box.press("Enter")
    expect(page.locator(f"{VIEWER} .pi-banner")).to_have_text('"aa" is the start of 2 entry ids (aa000001, aa000002): type more of it')
    page.screenshot(path=str(SHOTS / "nav-goto.png"))
    box.press("Escape")
    expect(box).to_have_value("")
    expect(page.locator(f"{VIEWER} .pi-rows")).to_be_focused()
    offline.done()


def test_all_filter_says_what_it_still_hides_and_unknown_entries_have_one_name(offline):
    page = offline.page
    note = page.locator(f"{VIEWER} .pi-filter-note")
    expect(note).to_be_hidden()
    page.locator(f"{VIEWER} .pi-filter[data-mode='all']").click()
    expect(note).to_be_visible()
    expect(note).to_contain_text("tool-call-only replies hidden")
    expect(page.locator(f"{VIEWER} .pi-position")).to_contain_text("[all]")
    # An entry of a type pi does not know: the one wording every view uses (kinds.py).
    expect(_row(page, "ee000008").locator(".pi-row-text")).to_have_text(unknown_entry_text("future_entry"))
    page.screenshot(path=str(SHOTS / "nav-all-note.png"))
    offline.done()


def test_go_to_dialog_names_only_what_the_page_has(offline):
    page = offline.page
    _row(page, "bb000004").click()
    page.locator(f"{VIEWER} .pi-rows").press("Enter")
    dialog = page.locator(f"{VIEWER} .pi-dialog")
    expect(dialog).to_be_visible()
    text = dialog.inner_text()
    assert "Open in notebook" not in text and "Allow writing" not in text, text
    expect(dialog).to_contain_text("pi_lab.open(path)")
    show = dialog.locator("button", has_text="What the model sees here")
    expect(show).to_be_focused()
    page.screenshot(path=str(SHOTS / "nav-export-goto-dialog.png"))
    page.keyboard.press("Tab")
    expect(dialog.locator(".pi-close")).to_be_focused()  # Tab stays in the dialog
    page.keyboard.press("Tab")
    expect(show).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.locator(f"{VIEWER} .pi-rows")).to_be_focused()
    page.locator(f"{VIEWER} .pi-rows").press("Enter")
    dialog.locator("button", has_text="What the model sees here").press("Enter")
    expect(page.locator(f"{VIEWER} .pi-pane .pi-pane-title")).to_contain_text("bb000004")
    offline.done()


def test_widget_marks_hits_goes_to_ids_and_names_unknown_entries(page, lab_server, open_lab, tmp_path):
    """The same aids in the notebook widget, whose rows come from the kernel (rows.py)."""
    from export_inputs import write_session
    from test_widget import run_notebook, widget_cell, write_notebook

    path = write_session(_session(), lab_server.root_dir / f"nav_{tmp_path.name[-12:]}.jsonl")
    run_notebook(page, open_lab, write_notebook(lab_server, f"nav_{tmp_path.name[-12:]}.ipynb", [widget_cell(path)]))
    page.locator(f"{VIEWER} .pi-search").fill("zebra")
    why = _row(page, "dd000007").locator(".pi-row-why")
    expect(why).to_contain_text("zebra")
    expect(why.locator("mark.pi-hit")).to_have_text("zebra")
    expect(_row(page, "cc000005").locator(".pi-row-text mark.pi-hit")).to_have_count(2)
    page.screenshot(path=str(SHOTS / "nav-widget-search.png"))
    page.locator(f"{VIEWER} .pi-search").press("Escape")
    expect(page.locator(f"{VIEWER} .pi-position")).to_have_text(re.compile(r"^\(\d+/7\)$"))
    box = page.locator(f"{VIEWER} .pi-goto")
    box.fill("dd00")
    box.press("Enter")
    expect(_selected(page)).to_have_attribute("data-id", "dd000007")
    expect(page.locator(f"{VIEWER} .pi-rows")).to_be_focused()
    box.fill("zz")
    box.press("Enter")
    expect(page.locator(f"{VIEWER} .pi-banner")).to_contain_text('No entry has an id starting with "zz"')
    page.locator(f"{VIEWER} .pi-filter[data-mode='all']").click()
    expect(_row(page, "ee000008").locator(".pi-row-text")).to_have_text(unknown_entry_text("future_entry"))
    expect(page.locator(f"{VIEWER} .pi-filter-note")).to_be_visible()
