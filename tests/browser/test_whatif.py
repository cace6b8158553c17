"""The timeline's "what if" panel in a real JupyterLab (Debian chromium through Playwright), and
in an exported page with no kernel.

The shipped tiny-auth session replayed with a smaller window: the settings typed and run with
Enter, the hypothetical sawtooth and its diamonds drawn over the real strip (legend keys shown),
a diamond clicked and another chosen with the keyboard show what they would summarize and keep
(equal to pi_lab.replay in the kernel), and a call selected shows what the model would see beside
what it did see. Also the teaching helpers' predict-then-reveal exercise, driven by the keyboard
beside a widget. Screenshots go to PI_LAB_SCREENSHOTS (default /tmp/pi-lab-screenshots).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_widget import kernel_json, run_notebook, widget_cell, write_notebook

from pi_lab.data import recorded_session

STRIP = ".pi-lab .pi-timeline"
PANEL = ".pi-lab .pi-whatif"
SETTINGS = {"context_window": 3000, "reserve_tokens": 1500, "keep_recent_tokens": 300}
# The strip's padding (timeline.ts PAD): where a call's boundary is drawn.
PAD_LEFT, PAD_RIGHT, HEIGHT, PAD_BOTTOM = 46, 10, 96, 12


def _open_panel(page, lab_server, open_lab, name: str) -> Path:
    session = lab_server.root_dir / f"{name}.jsonl"
    shutil.copyfile(recorded_session().path, session)
    run_notebook(page, open_lab, write_notebook(lab_server, f"{name}.ipynb", [widget_cell(session)]))
    page.wait_for_function(f"() => Number(document.querySelector('{STRIP}')?.dataset.calls) > 0")
    toggle = page.locator(".pi-lab .pi-whatif-toggle")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    return session


def test_what_if_panel_replays_and_explains(page, lab_server, open_lab, screenshot_dir):
    _open_panel(page, lab_server, open_lab, "whatif_tiny")
    panel = page.locator(PANEL)
    # prefilled with the widget's own settings
    own = kernel_json(page, "{'context_window': w.context_window, 'reserve_tokens': w.reserve_tokens, "
                            "'keep_recent_tokens': w.keep_recent_tokens}")
    for name, value in own.items():
        expect(panel.locator(f"input[name={name}]")).to_have_value(str(value))
    # no hypothesis drawn yet: its legend keys are hidden
    expect(page.locator(".pi-lab .pi-tl-key-whatif")).to_be_hidden()

    for name, value in SETTINGS.items():
        panel.locator(f"input[name={name}]").fill(str(value))
    panel.locator("input[name=keep_recent_tokens]").press("Enter")  # Enter runs
    expect(panel).to_have_attribute("data-state", "done")
    replay = kernel_json(page, "(lambda r: {'ids': [c['id'] for c in r.compactions], "
                               "'summaries': [c['summary'] for c in r.compactions], "
                               "'summarized': [c['summarized_entry_ids'] for c in r.compactions], "
                               "'kept': [c['kept_entry_ids'] for c in r.compactions]})"
                               f"(__import__('pi_lab').replay(w.session_manager, **{SETTINGS!r}))")
    count = len(replay["ids"])
    assert count >= 2
    expect(page.locator(STRIP)).to_have_attribute("data-whatif", str(count))
    expect(panel.locator(".pi-whatif-marker")).to_have_count(count)
    expect(page.locator(".pi-lab .pi-tl-key-whatif")).to_be_visible()
    expect(page.locator(".pi-lab .pi-tl-key-whatif-compaction")).to_be_visible()
    expect(panel.locator(".pi-whatif-status")).to_contain_text(f"{count} compactions would fire")
    page.locator(".pi-lab .pi-timeline").screenshot(path=str(screenshot_dir / "whatif-strip.png"))

    # a click on the first diamond (bottom band of the plot, at its call's boundary)
    first_call = int(kernel_json(page, f"__import__('pi_lab.view.whatif', fromlist=['x']).what_if_payload("
                                       f"w.view, {SETTINGS!r})['compactions'][0]['call']"))
    plot = page.locator(".pi-lab .pi-timeline-plot")
    box = plot.bounding_box()
    calls = int(page.locator(STRIP).get_attribute("data-calls"))
    x = PAD_LEFT + first_call / calls * (box["width"] - PAD_LEFT - PAD_RIGHT)
    plot.click(position={"x": x, "y": HEIGHT - PAD_BOTTOM - 5})
    detail = panel.locator(".pi-whatif-detail")
    expect(detail).to_have_attribute("data-id", replay["ids"][0])
    expect(detail.locator(".pi-whatif-summarized li")).to_have_count(len(replay["summarized"][0]))
    expect(detail.locator(".pi-whatif-kept li")).to_have_count(len(replay["kept"][0]))
    expect(detail.locator(".pi-whatif-summary")).to_have_text(replay["summaries"][0])
    expect(detail).to_contain_text("tokens before")
    expect(detail).to_contain_text(replay["summarized"][0][0][:8])

    # the keyboard: Tab to the second marker button, Enter
    panel.locator(".pi-whatif-marker").nth(0).focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(detail).to_have_attribute("data-id", replay["ids"][1])
    page.locator(".pi-lab .pi-timeline").screenshot(path=str(screenshot_dir / "whatif-compaction.png"))

    # the strip's keyboard: Home, then PageDown over the markers to the first what-if compaction
    # (the session's own markers are stops too), Enter shows it
    plot.focus()
    page.keyboard.press("Home")
    caption = page.locator(".pi-lab .pi-timeline-caption")
    for _ in range(8):
        page.keyboard.press("PageDown")
        if caption.inner_text().startswith("what-if compaction 1"):
            break
    expect(caption).to_contain_text("what-if compaction 1 ·")
    page.keyboard.press("Enter")
    expect(detail).to_have_attribute("data-id", replay["ids"][0])

    # a call selected: what the model would see there beside what it did see
    plot.click(position={"x": box["width"] - PAD_RIGHT - 2, "y": 40})
    compare = panel.locator(".pi-whatif-compare")
    expect(compare.locator(".pi-whatif-real .pi-pane-title")).to_contain_text("What the model did see at")
    expect(compare.locator(".pi-whatif-hypothetical .pi-pane-title")).to_have_text("What it would see under these settings")
    at = compare.get_attribute("data-at")
    both = kernel_json(page, "__import__('pi_lab.view.whatif', fromlist=['x']).what_if_context_payload("
                             f"w.view, {{**{SETTINGS!r}, 'id': {at!r}}})")
    expect(compare.locator(".pi-whatif-hypothetical .pi-context-item")).to_have_count(len(both["hypothetical"]["messages"]))
    expect(compare.locator(".pi-whatif-real .pi-context-item")).to_have_count(len(both["real"]["messages"]))
    assert both["hypothetical"]["messages"] != both["real"]["messages"]
    compare.scroll_into_view_if_needed()
    page.locator(".pi-lab").screenshot(path=str(screenshot_dir / "whatif-context.png"))

    # at the session's own settings the replay's compactions are the real ones
    rec = recorded_session()
    for name in SETTINGS:
        panel.locator(f"input[name={name}]").fill(str(getattr(rec, name)))
    panel.locator(".pi-whatif-run").click()
    expect(panel.locator(".pi-whatif-status")).to_contain_text("the same as the session's own")
    panel.locator(".pi-whatif-marker").first.click()
    expect(panel.locator(".pi-whatif-same-note")).to_contain_text("Same as the real compaction")


def test_bad_settings_and_the_bound_are_said(page, lab_server, open_lab):
    _open_panel(page, lab_server, open_lab, "whatif_bad")
    panel = page.locator(PANEL)
    panel.locator("input[name=context_window]").fill("")
    panel.locator(".pi-whatif-run").click()
    expect(panel.locator(".pi-whatif-status")).to_have_text("context window must be a whole number of tokens")
    panel.locator("input[name=context_window]").fill("3000")
    kernel_json(page, "setattr(__import__('pi_lab.view.whatif', fromlist=['x']), 'MAX_CALLS', 3) or 0")
    panel.locator(".pi-whatif-run").click()
    expect(panel.locator(".pi-whatif-status")).to_contain_text("replays at most 3 in the viewer")
    expect(panel).to_have_attribute("data-state", "error")
    kernel_json(page, "setattr(__import__('pi_lab.view.whatif', fromlist=['x']), 'MAX_CALLS', 1000) or 0")


def test_the_exported_page_says_the_panel_needs_a_kernel(page, tmp_path, screenshot_dir):
    from pi_lab.export import export_html

    session = tmp_path / "tiny.jsonl"
    shutil.copyfile(recorded_session().path, session)
    html = tmp_path / "tiny.html"
    export_html(str(session), str(html))
    page.goto(html.resolve().as_uri())
    page.wait_for_selector(".pi-row", timeout=60_000)
    page.wait_for_function(f"() => Number(document.querySelector('{STRIP}')?.dataset.calls) > 0")
    page.locator(".pi-lab .pi-whatif-toggle").click()
    panel = page.locator(PANEL)
    panel.locator("input[name=context_window]").press("Enter")
    expect(panel).to_have_attribute("data-state", "no-kernel")
    expect(panel.locator(".pi-whatif-status")).to_contain_text("runs in the kernel")
    page.locator(".pi-lab .pi-timeline").screenshot(path=str(screenshot_dir / "whatif-static.png"))


def test_what_if_unfolds_a_folded_strip(page, lab_server, open_lab, screenshot_dir):
    # A narrow widget starts with the strip folded (timeline.ts): the panel lives in its body.
    session = lab_server.root_dir / "whatif_narrow.jsonl"
    shutil.copyfile(recorded_session().path, session)
    cell = widget_cell(session) + "\nw.layout.width = '45%'\nw"
    run_notebook(page, open_lab, write_notebook(lab_server, "whatif_narrow.ipynb", [cell]))
    toggle = page.locator(".pi-lab .pi-timeline-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    page.locator(".pi-lab .pi-whatif-toggle").click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    panel = page.locator(PANEL)
    expect(panel).to_be_visible()
    for name, value in SETTINGS.items():
        panel.locator(f"input[name={name}]").fill(str(value))
    panel.locator(".pi-whatif-run").press("Enter")
    expect(panel).to_have_attribute("data-state", "done")
    page.locator(".pi-lab").screenshot(path=str(screenshot_dir / "whatif-narrow.png"))


def test_a_predict_then_reveal_exercise_by_keyboard(page, lab_server, open_lab, screenshot_dir):
    # pi_lab.teach.exercise in JupyterLab: Tab and Space pick a choice, Tab reaches Reveal, Enter
    # presses it; the verdict is shown and the node is selected in the widget.
    session = lab_server.root_dir / "teach_tiny.jsonl"
    shutil.copyfile(recorded_session().path, session)
    cell = widget_cell(session) + (
        "\nfrom pi_lab.teach import exercise\n"
        "node = [e['id'] for e in w.session_manager.get_branch() if e['type'] == 'compaction'][0]\n"
        "ex = exercise('Which entry type makes the sawtooth drop?', choices=['label', 'compaction', 'model change'],\n"
        "              answer='compaction', widget=w, node=node, explain='The summary replaces what came before.')\n"
        "display(w, ex)")
    run_notebook(page, open_lab, write_notebook(lab_server, "teach_tiny.ipynb", [cell]))
    radios = page.locator(".pi-lab-exercise input[type=radio]")
    expect(radios).to_have_count(3)
    radios.first.focus()
    # ipywidgets' radios are one tab stop each: Tab to the second choice, Space picks it
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    expect(radios.nth(1)).to_be_checked()
    reveal = page.locator(".pi-lab-exercise button")
    for _ in range(3):  # past the last choice to the button
        page.keyboard.press("Tab")
        if reveal.evaluate("b => b === document.activeElement"):
            break
    expect(reveal).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".pi-lab-exercise")).to_contain_text("Right!")
    expect(page.locator(".pi-lab-exercise")).to_contain_text("The summary replaces what came before.")
    node = kernel_json(page, "node")
    expect(page.locator(".pi-lab .pi-row[aria-selected=true]")).to_have_attribute("data-id", node)
    assert kernel_json(page, "[ex.correct, w.selected_id == node]") == [True, True]
    page.locator(".jp-OutputArea").first.screenshot(path=str(screenshot_dir / "teach-exercise.png"))
