"""The widget without pi_lab's lab extension, as in VS Code and other front ends that load only
the widget's own JavaScript: JupyterLab started with the `pi-lab` extension disabled
(`jupyter labextension disable pi-lab` in a throw-away config folder), and `pi_lab.open(path)`
still draws the tree, the gauge and the timeline (anywidget's front end loads the widget's ESM),
a click still selects a row and the kernel sees it. Screenshot: no-labextension.png in
PI_LAB_SCREENSHOTS (default /tmp/pi-lab-screenshots)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import lab_server as _lab_server_fixture
from test_widget import click_until_selected, kernel_json, run_notebook, write_notebook

from pi_lab.data import recorded_session


@pytest.fixture(scope="module")
def bare_lab(tmp_path_factory):
    """A second JupyterLab, started as the shared one is (the same fixture code), with the
    `pi-lab` lab extension disabled in a throw-away config folder on JUPYTER_CONFIG_PATH."""
    disabled = tmp_path_factory.mktemp("labconfig-disabled")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(disabled)}
    subprocess.run([sys.executable, "-m", "jupyter", "labextension", "disable", "pi-lab", "--level=user"],
                   env=env, check=True, capture_output=True)
    page_config = json.loads((disabled / "labconfig" / "page_config.json").read_text())
    assert page_config["disabledExtensions"].get("pi-lab") is True, page_config
    saved = os.environ.get("JUPYTER_CONFIG_PATH")
    os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(filter(None, [str(disabled), saved]))
    # The shared fixture's own code, called for a server of this module's (it reads os.environ).
    servers = _lab_server_fixture.__wrapped__(tmp_path_factory)
    try:
        yield next(servers)
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_CONFIG_PATH", None)
        else:
            os.environ["JUPYTER_CONFIG_PATH"] = saved
        servers.close()


def test_the_widget_draws_without_the_lab_extension(page, bare_lab, screenshot_dir):
    def open_bare(path: str = "") -> None:
        route = f"lab/workspaces/t{secrets.token_hex(4)}" + (f"/tree/{path}" if path else "")
        page.goto(bare_lab.url(route))
        page.wait_for_function("() => window.jupyterapp !== undefined")
        page.evaluate("async () => { await window.jupyterapp.restored; }")

    session = shutil.copyfile(recorded_session().path, bare_lab.root_dir / "tiny-auth.jsonl")
    name = write_notebook(bare_lab, "bare.ipynb", [f"import pi_lab\nw = pi_lab.open({str(session)!r})\nw"])
    run_notebook(page, open_bare, name)
    # the lab extension really is off: its plugin is not in the app
    assert page.evaluate("() => window.jupyterapp.hasPlugin('pi-lab:session-viewer')") is False
    assert page.evaluate("() => JSON.parse(document.getElementById('jupyter-config-data').textContent)"
                         ".disabledExtensions") in (["pi-lab"], {"pi-lab": True})

    widget = page.locator(".pi-lab")
    rows = widget.locator(".pi-row")
    rows.first.wait_for()
    assert rows.count() > 10
    expect(widget.locator(".pi-gauge")).to_be_visible()
    expect(widget.locator(".pi-timeline")).to_have_attribute("data-calls", "23")
    # a click selects a row, and the kernel sees the selection
    entry = rows.nth(2).get_attribute("data-id")
    row = widget.locator(f".pi-row[data-id='{entry}']")
    click_until_selected(row)
    page.wait_for_function(f"() => document.querySelector('.pi-lab .pi-row[aria-selected=true]')?.dataset.id === {entry!r}")
    assert kernel_json(page, "w.selected_id") == entry
    page.screenshot(path=str(screenshot_dir / "no-labextension.png"))
