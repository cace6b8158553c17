"""pi_lab.teach.stepper in a real JupyterLab (Debian chromium through Playwright): the slider,
focused, takes the arrow keys; each step moves the kernel's step and the drawn tree (row count,
the leaf row) to the session after that line. Screenshots go to PI_LAB_SCREENSHOTS (default
/tmp/pi-lab-screenshots)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_widget import kernel_json, run_notebook, write_notebook

from pi_lab.data import recorded_session


def _drawn(page, kernel_step: int) -> None:
    """Wait until the drawn tree is the kernel's at that step: its rows and its leaf row."""
    # ipywidgets sends a dragged or keyed slider's value throttled (the latest one once the
    # kernel has answered the previous): ask until the kernel has the step the slider shows.
    for _ in range(50):
        state = kernel_json(page, "{'rows': s.widget.row_count, 'leaf': s.widget.leaf_id, 'step': s.step}")
        if state["step"] == kernel_step:
            break
        page.wait_for_timeout(200)
    assert state["step"] == kernel_step
    expect(page.locator(".pi-lab .pi-row")).to_have_count(state["rows"])
    expect(page.locator(".pi-lab .pi-row.pi-leaf")).to_have_attribute("data-id", state["leaf"])
    expect(page.locator(".pi-lab-stepper")).to_contain_text(f"after line {kernel_step} of")


def test_arrow_keys_on_the_slider_step_through_time(page, lab_server, open_lab, screenshot_dir):
    session = lab_server.root_dir / "stepper_tiny.jsonl"
    shutil.copyfile(recorded_session().path, session)
    cell = f"from pi_lab.teach import stepper\ns = stepper({str(session)!r}, start=6)\ns"
    run_notebook(page, open_lab, write_notebook(lab_server, "stepper_tiny.ipynb", [cell]))
    _drawn(page, 6)
    page.locator(".pi-lab-stepper").screenshot(path=str(screenshot_dir / "stepper-6.png"))
    handle = page.locator(".pi-lab-stepper .widget-slider .noUi-handle")
    handle.focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelector('.pi-lab-stepper .widget-readout')?.textContent.trim() === '10'")
    _drawn(page, 10)
    page.locator(".pi-lab-stepper").screenshot(path=str(screenshot_dir / "stepper-10.png"))
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => document.querySelector('.pi-lab-stepper .widget-readout')?.textContent.trim() === '9'")
    _drawn(page, 9)
    # the step buttons
    page.locator(".pi-lab-stepper button", has_text="step ▶").click()
    page.wait_for_function("() => document.querySelector('.pi-lab-stepper .widget-readout')?.textContent.trim() === '10'")
    _drawn(page, 10)
    # the kernel's widget equals a fresh one at that step (with the row the viewer selected)
    assert kernel_json(page, "(lambda f: (f.select(s.widget.selected_id) if s.widget.selected_id else None, "
                             "[s.widget.rows_text() == f.rows_text(), s.widget.gauge == f.gauge])[1])"
                             f"(__import__('pi_lab.widget', fromlist=['x']).SessionWidget("
                             f"__import__('pi_lab.teach', fromlist=['x']).session_at({str(session)!r}, 10)))") == [True, True]
