"""pi_lab's widget in marimo, run headless by marimo itself (``marimo run`` on a loopback port)
and driven in Debian's chromium through Playwright: ``mo.ui.anywidget(pi_lab.open(path))`` draws
the tree rows, a click selects a row (the kernel learns it: a cell shows the selection), the gauge
and the timeline are drawn and the what-if panel is answered through marimo's widget messages;
and examples/tour_marimo.py runs. Screenshots go to PI_LAB_SCREENSHOTS (default
/tmp/pi-lab-screenshots)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser.conftest import _skip_reason
from test_widget import click_until_selected

from pi_lab.data import recorded_session

pytest.importorskip("marimo")
if _skip_reason():
    pytest.skip(_skip_reason(), allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
START_BUDGET_S = 60.0

APP = '''import marimo

app = marimo.App(width="full")


@app.cell
def _():
    import marimo as mo
    import pi_lab

    view = mo.ui.anywidget(pi_lab.open({path!r}, context_window=4000, reserve_tokens=2000,
                                       keep_recent_tokens=600))
    view
    return mo, view


@app.cell
def _(mo, view):
    mo.md("selected: " + str(view.value.get("selected_id")))
    return
'''


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Marimo:
    """``marimo run app`` on a free loopback port, stopped (its process only) when done."""

    def __init__(self, app: Path, log: Path):
        import httpx

        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = log
        env = {**os.environ, "MARIMO_SKIP_UPDATE_CHECK": "1"}
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "marimo", "run", str(app), "--host", "127.0.0.1", "--port", str(self.port),
                 "--headless", "--no-token"], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=app.parent)
        deadline = time.monotonic() + START_BUDGET_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"marimo exited with {self.proc.returncode}:\n{log.read_text(errors='replace')}")
            try:
                if httpx.get(self.url, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"marimo did not answer in {START_BUDGET_S:.0f} s:\n{log.read_text(errors='replace')}")
            time.sleep(0.3)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


@pytest.fixture
def browser(chromium_browser):
    return chromium_browser  # the session's one chromium (tests/browser/conftest.py)


@pytest.fixture
def shots(screenshot_dir) -> Path:
    return screenshot_dir


def _page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(60_000)
    return context, context.new_page()


def test_the_widget_works_in_marimo(browser, tmp_path, shots):
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)  # a loaded 2-core machine: marimo's round trips are slow
    session = shutil.copyfile(recorded_session().path, tmp_path / "tiny-auth.jsonl")
    app = tmp_path / "app.py"
    app.write_text(APP.format(path=str(session)), encoding="utf-8")
    server = Marimo(app, tmp_path / "marimo.log")
    context, page = _page(browser)
    try:
        page.goto(server.url)
        rows = page.locator(".pi-lab .pi-row")
        rows.first.wait_for()
        assert rows.count() > 10
        # the gauge is drawn against the window given in the cell
        expect(page.locator(".pi-lab .pi-gauge")).to_contain_text("/ 4k")
        strip = page.locator(".pi-lab .pi-timeline")
        # (marimo draws a widget in a shadow root: Playwright's locators look inside it)
        expect(strip).to_have_attribute("data-calls", "23")
        # a click selects the row, and the kernel learns it (the next cell shows the selection)
        # (rows are recycled as the list scrolls: the row is found again by its entry id)
        selected = rows.nth(3).get_attribute("data-id")
        row = page.locator(f".pi-lab .pi-row[data-id='{selected}']")
        # (marimo may still be hydrating the output on a loaded machine)
        click_until_selected(row)
        expect(page.get_by_text(f"selected: {selected}")).to_be_visible()
        page.screenshot(path=str(shots / "marimo-widget.png"), full_page=True)
        # the widget's own requests go through marimo's messages: the what-if replay answers
        page.locator(".pi-lab .pi-whatif-toggle").click()
        page.locator(".pi-lab .pi-whatif input[name=context_window]").fill("3000")
        page.locator(".pi-lab .pi-whatif input[name=reserve_tokens]").fill("1500")
        page.locator(".pi-lab .pi-whatif input[name=keep_recent_tokens]").fill("300")
        page.locator(".pi-lab .pi-whatif input[name=keep_recent_tokens]").press("Enter")
        expect(page.locator(".pi-lab .pi-whatif")).to_have_attribute("data-state", "done")
        expect(strip).to_have_attribute("data-whatif", __import__("re").compile(r"^[2-9]|^\d\d"))
        page.locator(".pi-lab .pi-timeline").screenshot(path=str(shots / "marimo-whatif.png"))
    finally:
        context.close()
        server.stop()
    assert Path(session).read_bytes() == recorded_session().path.read_bytes()


def test_the_marimo_tour_runs(browser, tmp_path, shots):
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)
    folder = tmp_path / "examples"
    folder.mkdir()
    for name in ("tour_marimo.py", "tour.ipynb"):
        shutil.copyfile(REPO / "examples" / name, folder / name)
    server = Marimo(folder / "tour_marimo.py", tmp_path / "marimo.log")
    context, page = _page(browser)
    try:
        page.goto(server.url)
        widgets = page.locator(".pi-lab")
        expect(widgets).to_have_count(2)
        widgets.nth(0).locator(".pi-row").first.wait_for()
        widgets.nth(1).locator(".pi-row").first.wait_for()
        expect(page.get_by_role("heading", name="The four states of the worked example")).to_be_visible()
        expect(widgets.nth(0)).to_contain_text("compaction: 115k tokens")
        # the worked example: U1 first; click A4 and the app's cell names it
        a4 = widgets.nth(0).locator(".pi-row[data-id='A4']")
        if a4.count():
            a4.click()
            expect(page.get_by_text("Selected in the left widget: A4")).to_be_visible()
        expect(page.get_by_role("heading", name="What if the window had been 3,000 tokens?")).to_be_visible()
        assert "Traceback" not in page.content()
        page.screenshot(path=str(shots / "marimo-tour.png"), full_page=True)
    finally:
        context.close()
        server.stop()
