"""Run All of each example notebook in a real JupyterLab in Debian chromium (issue 22): every
cell runs without an error or a stderr line, every plot and widget is drawn, and each output
with a plot or a viewer is saved as a screenshot (PI_LAB_SCREENSHOTS) for a person to look at."""

from __future__ import annotations

import json
import shutil

import pytest
from browser.conftest import _skip_reason

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))]

# The notebook, and what its outputs must draw: (CSS selector, how many at least).
NOTEBOOKS = {
    # every exercise answered (the last is Q22), the live session's compactions, four viewers at least
    "tour.ipynb": [(".pi-lab .pi-row", 1), (".pi-lab", 4),
                   (".jp-OutputArea-output:has-text('compactions on the branch')", 1),
                   (".jp-OutputArea-output:has-text('✓ Q22')", 1)],
    # agent-tour.ipynb runs headless in tests/examples/test_agent_tour.py, every output checked;
    # its Run All here (about a minute of CI) added only "the widgets draw", which the tour's does.
    # Altair's Vega-Lite, drawn by JupyterLab's own renderer (no network), as SVG or canvas.
    "corpus.ipynb": [(".jp-RenderedVegaCommon5 svg, .jp-RenderedVegaCommon5 canvas", 3)],
}

FINISHED = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel?.sessionContext?.session?.kernel;
  if (!panel?.content || kernel?.status !== 'idle') return false;
  const code = panel.content.widgets.filter(c => c.model.type === 'code');
  return code.length > 0 && code.every(c => c.model.executionCount !== null && !c.hasClass('jp-mod-pending'));
}"""

PROBLEMS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code')
  .flatMap((c, i) => c.model.outputs.toJSON().map(o => [i, o]))
  .filter(([, o]) => o.output_type === 'error' || (o.output_type === 'stream' && o.name === 'stderr'))
  .map(([i, o]) => `cell ${i}: ${o.ename || ''} ${o.evalue || ''} ${o.text || ''}`)"""


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_run_all_in_lab(page, lab_server, open_lab, repo_root, screenshot_dir, name):
    shutil.copyfile(repo_root / "examples" / name, lab_server.root_dir / name)
    open_lab(name)
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'")
    # Not awaited: the promise settles only when every cell has run.
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    page.wait_for_function(FINISHED, timeout=600_000, polling=1000)
    problems = page.evaluate(PROBLEMS)
    assert not problems, "\n".join(problems)
    stem = name.removesuffix(".ipynb")
    for selector, at_least in NOTEBOOKS[name]:
        drawn = page.locator(selector)
        drawn.nth(at_least - 1).wait_for(timeout=120_000)
        assert drawn.count() >= at_least
    # One screenshot per output that draws a plot or a viewer, in a window tall enough for each.
    page.set_viewport_size({"width": 1280, "height": 2000})
    outputs = page.locator(".jp-OutputArea-child:has(.jp-RenderedVegaCommon5, .pi-lab:not(.pi-lab-fallback .pi-lab))")
    shots = []
    for n in range(outputs.count()):
        output = outputs.nth(n)
        output.scroll_into_view_if_needed()
        page.wait_for_timeout(1000)  # let the scrolled-in rows and plots paint (off-screen cells are not drawn)
        path = screenshot_dir / f"run-all-{stem}-{n + 1:02d}.png"
        output.screenshot(path=str(path))
        shots.append(path.name)
    assert shots
    print(json.dumps({"notebook": name, "screenshots": shots}))


def test_an_odd_session_opens_in_lab(page, lab_server, open_lab, screenshot_dir):
    """Issue 22's notebook in a real browser: ``pi_lab.open()`` on a session with lone surrogates
    everywhere (text, label, name, tool arguments, an id) draws the viewer, with no error, and
    every row's entry opens (but the one whose id itself holds a lone surrogate, see below)."""
    import nbformat
    from widget.test_sendable import odd_session

    path = lab_server.root_dir / "odd.jsonl"
    path.write_bytes(odd_session())
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import pi_lab\npi_lab.open({str(path)!r})")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab_server.root_dir / "odd.ipynb")
    open_lab("odd.ipynb")
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'")
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    page.wait_for_function(FINISHED, timeout=300_000, polling=1000)
    assert not page.evaluate(PROBLEMS)
    rows = page.locator(".pi-lab .pi-row")
    rows.first.wait_for()
    page.wait_for_function("() => ![...document.querySelectorAll('.pi-lab .pi-row-text')].some(e => e.textContent === '…')")
    detail = page.locator(".pi-lab .pi-detail-id")
    ids = [rows.nth(n).get_attribute("data-id") for n in range(rows.count())]
    odd = [n for n, i in enumerate(ids) if not i.isascii() or "\\" in i]
    assert len(odd) == 1  # the hand-edited id
    for n in [n for n in range(len(ids)) if n not in odd] + odd + [0]:
        rows.nth(n).click()
        if n in odd:
            # Known limit: the reply names this entry as "odd\\ud800" (its escape text: a lone
            # surrogate cannot be sent as UTF-8), the tree as the id itself, so its detail is not
            # drawn; the next row opens as before (checked by the last step, row 0 again).
            page.wait_for_timeout(1000)
            continue
        try:
            page.wait_for_function("id => document.querySelector('.pi-lab .pi-detail-id')?.textContent === id", arg=ids[n])
        except Exception as error:
            raise AssertionError(f"row {n} ({ids[n]!r}) did not open; order {ids}; shown {detail.all_inner_texts()}") from error
        assert detail.inner_text() == ids[n]
    assert not page.evaluate(PROBLEMS)
    assert page.locator(".pi-lab .pi-row-text", has_text="look at a\\ud800b").count() == 1
    page.locator(".jp-OutputArea-child:has(.pi-lab:not(.pi-lab-fallback .pi-lab))").first.screenshot(
        path=str(screenshot_dir / "run-all-odd-session.png"))
