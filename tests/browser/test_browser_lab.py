"""End-to-end checks of the packaged front end in a real JupyterLab and a real browser."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import nbformat
from playwright.sync_api import expect

PI_FILE_NAME = "2026-01-01T00-00-00-000Z_abc.jsonl"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_lab_loads_with_pi_lab_extension(page, lab_server, open_lab, screenshot_dir):
    listing = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True, text=True, timeout=120,
    )
    text = ANSI.sub("", listing.stdout + listing.stderr)
    assert re.search(r"pi-lab v0\.1\.0 .*enabled.*OK", text), text

    open_lab()
    info = page.evaluate(
        """() => {
          const app = window.jupyterapp;
          const reg = app.docRegistry;
          const cfg = JSON.parse(document.getElementById('jupyter-config-data').textContent);
          const types = path => reg.getFileTypesForPath(path).map(ft => ft.name);
          return {
            federated: (cfg.federated_extensions || []).map(e => e.name),
            activated: app.isPluginActivated('pi-lab:session-viewer'),
            piTypes: types('%(pi)s'),
            piDefault: reg.defaultWidgetFactory('%(pi)s').name,
            plainTypes: types('notes.jsonl'),
            plainDefault: reg.defaultWidgetFactory('notes.jsonl').name,
            plainChoices: reg.preferredWidgetFactories('notes.jsonl').map(f => f.name),
          };
        }""" % {"pi": PI_FILE_NAME}
    )
    page.screenshot(path=str(screenshot_dir / "lab-loaded.png"))
    assert "pi-lab" in info["federated"]
    assert info["activated"] is True
    # A file named like pi names its sessions opens in the viewer by default ...
    assert info["piTypes"][0] == "pi-session"
    assert info["piDefault"] == "Pi Session"
    # ... while any other .jsonl is not typed as a session: it opens in the viewer on trial, and
    # the server's detect hands it back to JupyterLab's own viewer when it is no session
    # (tests/browser/test_other_agents_lab.py).
    assert "pi-session" not in info["plainTypes"]
    assert "Pi Session" in info["plainChoices"]


def test_notebook_renders_anywidget_header(page, lab_server, open_lab, repo_root, screenshot_dir):
    widget_js = repo_root / "pi_lab" / "static" / "widget.js"
    assert widget_js.is_file(), "front end not built: run `jlpm build` (make install does)"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from pi_lab.session import SessionManager\n"
            "from pi_lab.widget import SessionWidget\n"
            "sm = SessionManager.in_memory()\n"
            "sm.append_session_info('pi browser smoke <b>not bold</b>')\n"
            "sm.append_message({'role': 'user', 'content': 'hello', 'timestamp': 1})\n"
            "w = SessionWidget(sm)\n"
            "w"
        ),
        nbformat.v4.new_code_cell(
            "w.session_manager.append_message({'role': 'assistant', 'content': [{'type': 'text', 'text': 'hi'}],"
            " 'stopReason': 'stop', 'timestamp': 2})\nw.sync()"
        ),
    ]
    nbformat.write(nb, lab_server.root_dir / "widget.ipynb")

    open_lab("widget.ipynb")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'"
    )
    page.locator(".jp-Cell").first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")

    title = page.locator(".pi-lab .pi-title")
    count = page.locator(".pi-lab .pi-meta")
    # Markup in session text is shown as text, never parsed.
    expect(title).to_have_text("pi browser smoke <b>not bold</b>")
    expect(page.locator(".pi-lab b")).to_have_count(0)
    expect(count).to_contain_text("2 entries")

    page.keyboard.press("Shift+Enter")  # the second cell appends from Python
    expect(count).to_contain_text("3 entries")
    page.screenshot(path=str(screenshot_dir / "notebook-widget.png"))


def test_double_click_pi_session_file_opens_viewer(page, lab_server, open_lab, fixtures_dir, screenshot_dir):
    source = fixtures_dir / "public-twkrash-branching.jsonl"
    shutil.copyfile(source, lab_server.root_dir / PI_FILE_NAME)
    lines = [line for line in source.read_text().splitlines() if line.strip()]
    # (the server's folder is the session's: other modules' files may be there already)
    files_before = sorted(p.name for p in lab_server.root_dir.iterdir() if p.suffix == ".jsonl")

    open_lab()
    item = page.locator(".jp-DirListing-item", has=page.get_by_text(PI_FILE_NAME, exact=True))
    item.dblclick()

    # The viewer itself is tested in ui-tests/tests/viewer.spec.ts; here: the packaged front end opens it.
    view = page.locator(".jp-PiSessionDocument .jp-PiSessionView .pi-lab")
    expect(view.locator(".pi-meta")).to_contain_text(f"{len(lines) - 1} entries")
    expect(view.locator(".pi-row").first).to_be_visible()
    # The tab shows the session's title (its first user message here), not the timestamp file name.
    label = page.locator(".lm-TabBar-tab.lm-mod-current[data-type='document-title'] .lm-TabBar-tabLabel")
    expect(label).to_have_text(re.compile(r"\S"))
    expect(label).not_to_have_text(PI_FILE_NAME)
    # Naming the tab must not rename the file (a DocumentWidget renames on a label change).
    page.wait_for_timeout(1000)
    assert sorted(p.name for p in lab_server.root_dir.iterdir() if p.suffix == ".jsonl") == files_before
    page.screenshot(path=str(screenshot_dir / "pi-session-viewer.png"))
