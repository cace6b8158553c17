"""The viewer's layout when it is narrow: two notebook widgets side by side, each half as wide as
the output area (real JupyterLab, Debian chromium through Playwright).

At that width the viewer stacks the entry pane under the tree; the context timeline then starts
folded to its one-line head (its summary still says what it holds) so the tree keeps most of the
height, and the toggle unfolds it. Screenshots go to PI_LAB_SCREENSHOTS (default
/tmp/pi-lab-screenshots).
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_widget import copy_session, run_notebook, write_notebook  # noqa: E402

# Two widgets in one row, each 50 % of the output area: the layout of two sessions compared.
SIDE_BY_SIDE = (
    "import ipywidgets as ipw\n"
    "from pi_lab.widget import SessionWidget\n"
    "w = SessionWidget({path!r})\n"
    "w2 = SessionWidget({path!r})\n"
    "for _w in (w, w2):\n"
    "    _w.layout.width = '50%'\n"
    "ipw.HBox([w, w2], layout=ipw.Layout(width='100%'))"
)
FIRST = ".pi-lab >> nth=0"


def _side_by_side(page, lab_server, open_lab, fixtures_dir, name: str) -> None:
    session = copy_session(lab_server, fixtures_dir / "before-compaction.jsonl")
    run_notebook(page, open_lab, write_notebook(lab_server, name, [SIDE_BY_SIDE.format(path=str(session))]))
    expect(page.locator(".pi-lab")).to_have_count(2)
    page.locator(".pi-lab").nth(1).locator(".pi-row").first.wait_for()


def _heights(page) -> dict:
    return page.eval_on_selector(".pi-lab", """root => {
        const h = e => e ? e.getBoundingClientRect().height : 0;
        const rows = root.querySelector('.pi-rows');
        return {root: h(root), width: root.getBoundingClientRect().width, timeline: h(root.querySelector('.pi-timeline')),
                rows: h(rows), rowsShown: Math.floor(h(rows) / 22)};
    }""")


def test_half_width_widgets_fold_the_timeline_and_show_more_rows(page, lab_server, open_lab, fixtures_dir, screenshot_dir):
    _side_by_side(page, lab_server, open_lab, fixtures_dir, "layout_half.ipynb")
    first = page.locator(".pi-lab").first
    strip = first.locator(".pi-timeline")
    toggle = strip.locator(".pi-timeline-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    page.wait_for_timeout(300)
    sizes = _heights(page)
    page.screenshot(path=str(screenshot_dir / "layout-half-width.png"))
    assert sizes["width"] < 760, sizes  # the narrow layout is the one under test
    # the folded strip is one thin line; the tree gets the height it gave up
    assert sizes["timeline"] <= 0.08 * sizes["root"], sizes
    assert sizes["rowsShown"] >= 10, sizes  # about six before (issue 22)
    # the folded strip still says what it holds
    expect(strip.locator(".pi-timeline-summary")).to_contain_text("model calls on this branch")

    # the keyboard unfolds it, and folds it again
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(strip.locator(".pi-timeline-plot")).to_be_visible()
    page.wait_for_function("() => Number(document.querySelector('.pi-lab .pi-timeline').dataset.calls) > 0")
    page.screenshot(path=str(screenshot_dir / "layout-half-width-timeline-open.png"))
    unfolded = _heights(page)
    # unfolded, its legend wraps under the head instead of standing in a column beside the plot
    assert unfolded["timeline"] <= 0.35 * unfolded["root"], unfolded
    assert unfolded["rowsShown"] >= 4, unfolded
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    # the other widget was left as it was
    expect(page.locator(".pi-lab").nth(1).locator(".pi-timeline-toggle")).to_have_attribute("aria-expanded", "false")


def test_full_width_widget_keeps_the_timeline_open(page, lab_server, open_lab, fixtures_dir, screenshot_dir):
    session = copy_session(lab_server, fixtures_dir / "before-compaction.jsonl")
    cell = f"from pi_lab.widget import SessionWidget\nw = SessionWidget({str(session)!r})\nw"
    run_notebook(page, open_lab, write_notebook(lab_server, "layout_full.ipynb", [cell]))
    toggle = page.locator(".pi-lab .pi-timeline-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator(".pi-lab .pi-timeline-plot")).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "layout-full-width.png"))
