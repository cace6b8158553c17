"""A notebook saved with widget outputs still shows the session without its kernel.

The notebook is executed for real (nbclient, a python3 kernel), saved, and the kernel is gone.
Then (a) JupyterLab opens it with no kernel: pi_lab's own renderer draws the snapshot (the
notebook is not trusted); (b) nbconvert turns it into HTML, opened in chromium from disk with
every request blocked: the snapshot's script draws the tree, and nothing it does leaves the
page; (c) the snapshot's HTML alone in a plain page (a static site) makes no request at all.
A hostile session in a snapshot runs none of its text. Beside a live widget the snapshot
steps aside (no second viewer).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "export"))
from export_inputs import hostile_session, write_session  # noqa: E402
from helpers import SEED_SECTION_14  # noqa: E402

SNAPSHOT = "[data-pi-lab-snapshot]"


def _cell(path: Path) -> str:
    return f"from pi_lab.widget import SessionWidget\nSessionWidget({str(path)!r})"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    """The executed, saved notebook (seed session, hostile session) and its nbconvert HTML."""
    import nbclient
    from nbconvert import HTMLExporter

    base = tmp_path_factory.mktemp("saved")
    seed = base / "seed.jsonl"
    seed.write_text(SEED_SECTION_14, encoding="utf-8")
    hostile = write_session(hostile_session(), base / "hostile.jsonl")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(_cell(seed)), nbformat.v4.new_code_cell(_cell(hostile))]
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(base)}}).execute()
    for cell in nb.cells:
        kinds = [o.get("output_type") for o in cell.outputs]
        assert kinds == ["display_data", "display_data"], cell.outputs
    path = base / "saved.ipynb"
    nbformat.write(nb, path)
    exporter = HTMLExporter(template_name="lab")
    body, _ = exporter.from_notebook_node(nb)
    html = base / "saved.html"
    html.write_text(body, encoding="utf-8")
    # nbconvert's own page loads require.js, MathJax and the widget manager from CDNs (they are
    # the template's, not pi_lab's, and are blocked here like everything else).
    template = [exporter.require_js_url, exporter.mathjax_url, exporter.jupyter_widgets_base_url]
    return {"notebook": path, "nb": nb, "html": html, "template_urls": template, "dir": base}


class OfflinePage:
    """A page opened from disk with every other request aborted and recorded."""

    def __init__(self, browser, path: Path):
        self.url = path.resolve().as_uri()
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.context.set_default_timeout(60_000)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(self.url)

    def _route(self, route):
        if route.request.url.split("#")[0] == self.url:
            route.continue_()
        else:
            self.requests.append(route.request.url)
            route.abort()

    def close(self):
        self.context.close()


def test_nbconvert_html_shows_the_tree_offline(chromium_browser, saved, screenshot_dir):
    page = OfflinePage(chromium_browser, saved["html"])
    try:
        p = page.page
        seed = p.locator(SNAPSHOT).first
        seed.locator(".pi-row").first.wait_for()
        texts = seed.locator(".pi-row .pi-row-text").all_inner_texts()
        assert any("改成 session cookie" in t for t in texts), texts
        assert any("[compaction: 115k tokens]" in t for t in texts), texts
        # The text picture steps aside for the viewer; the note stays.
        assert not seed.locator(".pi-lab-snapshot-text").is_visible()
        assert "saved with the notebook" in seed.locator(".pi-lab-snapshot-note").inner_text()
        # Entry detail and what the model sees come from the embedded data.
        seed.locator(".pi-row", has_text="改成 session cookie").first.click()
        seed.locator(".pi-tab", has_text="What the model sees").click()
        p.wait_for_timeout(300)
        assert "改成 session cookie" in seed.locator(".pi-lab").inner_text()
        p.screenshot(path=str(screenshot_dir / "saved-notebook-nbconvert.png"))
        ours = [u for u in page.requests if not any(u.startswith(t) for t in saved["template_urls"] if t)]
        assert ours == [], ours
    finally:
        page.close()


def test_the_snapshot_html_alone_makes_no_request(chromium_browser, saved, tmp_path):
    """A static site puts the output's HTML in its own page: the snapshot needs nothing else."""
    output = saved["nb"].cells[0].outputs[0]
    site = tmp_path / "site.html"
    site.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>site</title></head><body>"
                    f"<h1>A static site</h1>{output['data']['text/html']}</body></html>", encoding="utf-8")
    page = OfflinePage(chromium_browser, site)
    try:
        page.page.locator(f"{SNAPSHOT} .pi-row").first.wait_for()
        page.page.wait_for_timeout(500)
        assert page.page.locator(f"{SNAPSHOT} .pi-row").count() >= 10
        assert page.requests == []
    finally:
        page.close()


def test_a_hostile_session_in_the_snapshot_runs_no_script(chromium_browser, saved, screenshot_dir):
    page = OfflinePage(chromium_browser, saved["html"])
    try:
        p = page.page
        hostile = p.locator(SNAPSHOT).nth(1)
        hostile.scroll_into_view_if_needed()
        hostile.locator(".pi-row").first.wait_for()
        hostile.locator(".pi-filter", has_text="all").click()
        p.wait_for_timeout(200)
        count = hostile.locator(".pi-row").count()
        assert count >= 10
        for tab in ("Entry", "What the model sees", "Compactions"):
            for row in range(count):
                hostile.locator(".pi-row").nth(row).click()
                hostile.locator(".pi-tab", has_text=tab).click()
                p.evaluate("() => document.querySelectorAll('.pi-lab details').forEach(d => { d.open = true; })")
                p.evaluate("() => document.querySelectorAll('.pi-lab a').forEach(a => a.click())")
                p.wait_for_timeout(20)
        p.screenshot(path=str(screenshot_dir / "saved-notebook-hostile.png"))
        assert p.evaluate("() => window.__pwned === undefined")
        assert page.dialogs == []
        assert not p.evaluate("() => !!document.querySelector("
                              "'.pi-lab script, .pi-lab iframe, .pi-lab svg [onload], .pi-lab img[onerror]')")
    finally:
        page.close()


def test_jupyterlab_without_a_kernel_shows_the_tree(page, lab_server, saved, screenshot_dir):
    """JupyterLab opens the saved notebook and can start no kernel (the server refuses):
    the widget has no model, and pi_lab's renderer draws the snapshot instead."""
    nb = nbformat.read(saved["notebook"], as_version=4)
    name = "saved_without_kernel.ipynb"
    nbformat.write(nb, lab_server.root_dir / name)
    started: list[str] = []

    def refuse_kernels(route):
        if route.request.method == "POST":
            started.append(route.request.url)
            route.fulfill(status=503, body="no kernels here")
        else:
            route.continue_()

    page.route("**/api/sessions**", refuse_kernels)
    page.route("**/api/kernels**", refuse_kernels)
    page.goto(lab_server.url(f"lab/workspaces/saved/tree/{name}"))
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    # JupyterLab says the kernel could not start: dismiss that and look at the outputs.
    try:
        page.locator(".jp-Dialog").wait_for(timeout=10_000)
        page.locator(".jp-Dialog button", has_text="No Kernel").click()
    except Exception:
        pass
    snapshot = page.locator(f".jp-OutputArea {SNAPSHOT}").first
    snapshot.locator(".pi-row").first.wait_for(timeout=60_000)
    texts = snapshot.locator(".pi-row .pi-row-text").all_inner_texts()
    assert any("改成 session cookie" in t for t in texts), texts
    assert not snapshot.locator(".pi-lab-snapshot-text").is_visible()
    # The widget's own output (no model without its kernel) is hidden beside the drawn snapshot.
    widget_out = page.locator(f".jp-OutputArea-child:has({SNAPSHOT}) + .jp-OutputArea-child")
    assert widget_out.count() == 2  # one per cell
    assert not widget_out.first.is_visible()
    # No kernel was started for it.
    assert page.evaluate("() => !window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel")
    # The notebook is not trusted: its own scripts did not run (the viewer is pi_lab's renderer).
    assert page.locator(f".jp-OutputArea {SNAPSHOT} script").count() == 0
    accept = page.locator(".jp-Dialog button.jp-mod-accept")
    if accept.count():
        accept.first.click()
    page.screenshot(path=str(screenshot_dir / "saved-notebook-lab.png"))


def test_beside_a_live_widget_the_snapshot_steps_aside(page, lab_server, saved, screenshot_dir):
    """With a kernel the cell runs again: the live viewer draws, the snapshot output is hidden
    and its viewer never mounted (one viewer per widget on the page)."""
    nb = nbformat.read(saved["notebook"], as_version=4)
    nb.cells = nb.cells[:1]
    name = "saved_with_kernel.ipynb"
    nbformat.write(nb, lab_server.root_dir / name)
    page.goto(lab_server.url(f"lab/workspaces/live/tree/{name}"))
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'",
        timeout=90_000)
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    live = page.locator(".jp-OutputArea .pi-lab:not(.pi-lab-fallback .pi-lab)")
    live.locator(".pi-row").first.wait_for(timeout=90_000)
    page.wait_for_timeout(2500)  # longer than the renderer waits before it would mount
    snapshot_child = page.locator(f".jp-OutputArea-child:has({SNAPSHOT})")
    assert snapshot_child.count() == 1
    assert not snapshot_child.first.is_visible()
    assert page.locator("[data-pi-lab-mounted]").count() == 0
    assert page.locator(".jp-OutputArea .pi-lab").count() == 1
    page.screenshot(path=str(screenshot_dir / "saved-notebook-live.png"))
    # The cell displayed a pending snapshot (a person's frontend: it allows stdin); once the
    # viewer's requests stop, the kernel completes it in place, and a save now keeps it whole.
    page.wait_for_function(
        """() => {
          const output = window.jupyterapp.shell.currentWidget.content.model.cells.get(0).outputs.get(0);
          const info = output && output.data['application/vnd.pi-lab.snapshot+json'];
          return info && !info.pending && info.complete === true
            && String(output.data['text/html']).includes('class="pi-main"');
        }""", timeout=60_000)
    assert not snapshot_child.first.is_visible()
    assert page.locator("[data-pi-lab-mounted]").count() == 0
