"""A Codex rollout in the notebook widget (issue 25), in a real JupyterLab and chromium: the rows
are drawn down to the leaf, "What the model sees" at the leaf lists what the rollout recorded
after its compaction, the widget says it is read-only because the file is a Codex rollout and
offers no way to write it, and the file is byte-identical afterwards."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

pytest.importorskip("playwright")
from browser.test_widget import click_until_selected, run_notebook, write_notebook  # noqa: E402  (the widget tests' helpers)
from playwright.sync_api import expect  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from generate_codex_sessions import generate_session as generate_codex  # noqa: E402


def test_a_codex_session_in_the_widget(page, lab_server, open_lab, screenshot_dir, tmp_path):
    import pi_lab

    rollout = generate_codex(tmp_path / "codex", seed=12, turns=4)[0]
    before = hashlib.sha256(rollout.read_bytes()).hexdigest()
    session = pi_lab.open_session(str(rollout))
    assert session.agent == "codex"
    seen = session.build_session_context().messages
    name = write_notebook(lab_server, "codex-widget.ipynb", [f"import pi_lab\nw = pi_lab.open({str(rollout)!r})\nw"])
    run_notebook(page, open_lab, name)

    widget = page.locator(".jp-OutputArea .pi-lab")
    expect(widget.locator(".pi-row").first).to_be_visible()
    expect(widget.locator(".pi-readonly-badge")).to_contain_text("a Codex rollout; pi_lab never writes it.")
    expect(widget.locator("button:visible", has_text="Allow writing")).to_have_count(0)
    # The leaf is the rollout's last line, an item type pi has no message for (a ghost snapshot):
    # the default filter hides such rows, "all" shows every line of the file.
    widget.locator(".pi-filter[data-mode='all']").click()
    leaf = widget.locator(".pi-row.pi-leaf")
    expect(leaf).to_have_count(1)
    expect(leaf).to_have_attribute("data-id", session.leaf_id)
    page.screenshot(path=str(screenshot_dir / "codex-widget.png"))

    # What the model saw at the leaf: the compaction's replacement history and the turn after it,
    # one item per message the engine builds, and nothing the compaction dropped.
    leaf.click()
    expect(widget.locator(".pi-detail-id")).to_have_text(session.leaf_id)
    widget.locator(".pi-tab", has_text="What the model sees").click()
    items = widget.locator(".pi-context-item")
    expect(items).to_have_count(len(seen))
    pane = widget.locator(".pi-pane")
    expect(pane).to_contain_text("Summary: the tests pass; a.py was patched.")
    expect(pane).to_contain_text("task 3: fix the failing test")
    expect(pane).not_to_contain_text("Done with task 1.")
    page.screenshot(path=str(screenshot_dir / "codex-widget-context.png"))

    # A rollout records no token count before a compaction: the row, the Compactions tab and
    # the entry pane say so, never "0k tokens".
    compaction = widget.locator(".pi-row", has_text="[compaction: tokens not recorded]")
    expect(compaction).to_have_count(1)
    widget.locator(".pi-tab", has_text="Compactions").click()
    expect(pane).to_contain_text("tokens before not recorded")
    expect(pane).not_to_contain_text("? tokens")
    click_until_selected(compaction)
    widget.locator(".pi-tab", has_text="Entry").click()
    expect(pane).to_contain_text("tokens before not recorded")
    page.screenshot(path=str(screenshot_dir / "codex-widget-compaction.png"))

    assert hashlib.sha256(rollout.read_bytes()).hexdigest() == before
