"""A corpus table's row link opens its session in the Lab viewer with that entry selected."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from playwright.sync_api import expect

from pi_lab.data import recorded_session

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_widget import write_notebook  # noqa: E402


def test_a_row_link_opens_the_session_at_its_entry(page, lab_server, open_lab, screenshot_dir):
    folder = lab_server.root_dir / "linked"
    folder.mkdir(exist_ok=True)
    session = folder / "2026-03-02T14-00-00-000Z_linked.jsonl"
    shutil.copyfile(recorded_session().path, session)
    before = session.read_bytes()
    name = write_notebook(lab_server, "links.ipynb", [
        "from pi_lab.corpus import Corpus\n"

        "c = Corpus.scan(['linked'], cache=False)\n"
        "tool_results = c.sql(\"select file, entry_id, role from messages where role = 'toolResult' order by timestamp\")\n"
        "target = tool_results.column('entry_id')[2].as_py()\n"
        "c.links(tool_results)",
    ])
    open_lab(name)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'")
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    links = page.locator(".jp-OutputArea-output a", has_text="open")
    links.nth(2).wait_for(timeout=60_000)
    target = links.nth(2).get_attribute("href").split("#", 1)[1]
    links.nth(2).click()
    # a tool result is hidden by the default filter: the link shows every row and selects it
    viewer = page.locator(".jp-MainAreaWidget .pi-lab").last
    row = viewer.locator(f".pi-row[data-id='{target}']")
    expect(row).to_have_attribute("aria-selected", "true", timeout=60_000)
    page.screenshot(path=str(screenshot_dir / "corpus-link-opened.png"))
    assert session.read_bytes() == before
