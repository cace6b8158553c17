"""The context timeline strip and the composition bar in the notebook widget (real JupyterLab,
Debian chromium through Playwright), checked against the Python functions they draw.

The seed's worked example (section 14): the cookie branch has five model calls (A1, A2, A4, A5,
A6), the branch summary BS1 before A4 and the compaction C1 at the end; the JWT leaf A3 has three.
Screenshots go to PI_LAB_SCREENSHOTS (default /tmp/pi-lab-screenshots).
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_widget import copy_session, kernel, kernel_json, run_notebook, seed_file, write_notebook  # noqa: E402,F401

STRIP = ".pi-lab .pi-timeline"
PLOT = f"{STRIP} .pi-timeline-plot"


def widget_notebook(lab_server, name: str, session: Path, *extra: str) -> str:
    return write_notebook(lab_server, name, [
        "from pi_lab.widget import SessionWidget\n"
        "from pi_lab.view import context_timeline, context_composition\n"
        f"w = SessionWidget({str(session)!r}{''.join(', ' + e for e in extra)})\n"
        "w",
    ])


def strip_state(page) -> dict:
    return page.eval_on_selector(STRIP, "e => ({calls: e.dataset.calls, leaf: e.dataset.leaf, "
                                        "selected: e.dataset.selectedCall, drawn: e.dataset.drawn})")


def click_call(page, index: int, count: int) -> None:
    """Click the middle of call `index` of `count` (the plot's geometry: 46 px left, 10 px right)."""
    box = page.locator(PLOT).bounding_box()
    width = box["width"] - 46 - 10
    page.mouse.click(box["x"] + 46 + (index + 0.5) / count * width, box["y"] + 60)


def test_seed_timeline_selection_keyboard_and_live(page, lab_server, open_lab, seed_file, screenshot_dir):
    run_notebook(page, open_lab, widget_notebook(lab_server, "tl_seed.ipynb", seed_file))
    expect(page.locator(STRIP)).to_have_attribute("data-calls", "5")
    calls = [r["entry_id"] for r in kernel_json(page, "context_timeline(w.session_manager)") if r["kind"] == "call"]
    assert calls == ["A1", "A2", "A4", "A5", "A6"]
    summary = page.locator(f"{STRIP} .pi-timeline-summary")
    expect(summary).to_contain_text("5 model calls on this branch")
    expect(summary).to_contain_text("no usage recorded: estimates only")
    expect(summary).to_contain_text("1 compaction")
    expect(summary).to_contain_text("1 branch summary")
    # the default 128k window is far above a 29-token context: its threshold is named, not drawn
    above = page.locator(f"{STRIP} .pi-timeline-above")
    expect(above).to_have_text("auto-compaction at 112k, above the plot")
    # a "pretend" window (the gauge's settings) brings the threshold line into the plot
    kernel(page, "w.context_window = 60; w.reserve_tokens = 40")
    expect(above).to_have_text("")
    kernel(page, "w.context_window = 128000; w.reserve_tokens = 16384")
    expect(above).to_have_text("auto-compaction at 112k, above the plot")

    # tree → strip: any entry highlights the nearest call at or before it on the branch
    kernel(page, "w.selected_id = 'T1'")
    expect(page.locator(STRIP)).to_have_attribute("data-selected-call", "0")
    expect(page.locator(f"{STRIP} .pi-timeline-caption")).to_contain_text("call 1 of 5")
    kernel(page, "w.selected_id = 'U3'")
    expect(page.locator(STRIP)).to_have_attribute("data-selected-call", "2")  # A4
    kernel(page, "w.selected_id = 'A3'")  # the JWT branch is not the current one
    expect(page.locator(STRIP)).to_have_attribute("data-selected-call", "-1")
    expect(page.locator(f"{STRIP} .pi-timeline-caption")).to_contain_text("not on this branch")

    # strip → tree: a click selects the call's entry
    click_call(page, 3, 5)
    page.wait_for_function("() => document.querySelector('.pi-lab .pi-row.pi-selected')?.dataset.id === 'A5'")
    assert kernel_json(page, "w.selected_id") == "A5"
    expect(page.locator(STRIP)).to_have_attribute("data-selected-call", "3")
    page.screenshot(path=str(screenshot_dir / "timeline-seed.png"))

    # keyboard: focusable, ←/→ move, Enter selects, PageUp/PageDown reach the markers
    plot = page.locator(PLOT)
    assert plot.get_attribute("role") == "slider" and plot.get_attribute("tabindex") == "0"
    plot.focus()
    page.keyboard.press("End")
    expect(plot).to_have_attribute("aria-valuetext", "call 5 of 5 · not measured · estimated 29 tokens · entry A6")
    expect(plot).to_have_attribute("aria-valuenow", "5")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(page.locator(f"{STRIP} .pi-timeline-caption")).to_contain_text("call 3 of 5")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('.pi-lab .pi-row.pi-selected')?.dataset.id === 'A4'")
    assert page.evaluate("() => document.activeElement.classList.contains('pi-timeline-plot')")  # focus stays
    page.keyboard.press("PageUp")
    expect(plot).to_have_attribute("aria-valuetext", "branch summary BS1 · context 16 after it")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('.pi-lab .pi-row.pi-selected')?.dataset.id === 'BS1'")
    page.keyboard.press("PageDown")
    expect(plot).to_have_attribute("aria-valuetext", "compaction C1 · 115k tokens before → 13 after (estimated)")
    page.screenshot(path=str(screenshot_dir / "timeline-seed-keyboard.png"))

    # live appends: a new call appears; a leaf move redraws the other branch
    kernel(page, "w.allow_writes()\n"
                 "w.session_manager.append_message({'role': 'user', 'content': '再检查一次 🔍', 'timestamp': 7})\n"
                 "w.session_manager.append_message({'role': 'assistant', 'content': [{'type': 'text', 'text': '好的 ✅'}],"
                 " 'stopReason': 'stop', 'timestamp': 8})\n"
                 "w.sync(); _tip = w.session_manager.leaf_id")
    expect(page.locator(STRIP)).to_have_attribute("data-calls", "6", timeout=10_000)
    # the kernel sent only the new call, not the branch again
    expect(page.locator(STRIP)).to_have_attribute("data-reply", "append 1")
    kernel(page, "w.session_manager.branch('A3'); w.sync()")
    expect(page.locator(STRIP)).to_have_attribute("data-leaf", "A3", timeout=10_000)
    expect(page.locator(STRIP)).to_have_attribute("data-calls", "3")
    expect(page.locator(STRIP)).to_have_attribute("data-reply", "full")  # another branch: all of it
    kernel(page, "w.selected_id = 'A3'")
    expect(page.locator(STRIP)).to_have_attribute("data-selected-call", "2")

    # it can be collapsed, and comes back with the data it missed
    toggle = page.locator(f"{STRIP} .pi-timeline-toggle")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(plot).to_be_hidden()
    kernel(page, "w.session_manager.branch(_tip); w.sync()")
    page.wait_for_timeout(600)
    expect(page.locator(STRIP)).to_have_attribute("data-leaf", "A3")  # not fetched while collapsed
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator(STRIP)).to_have_attribute("data-calls", "6", timeout=10_000)


def test_seed_composition_filters_the_message_list(page, lab_server, open_lab, seed_file, screenshot_dir):
    run_notebook(page, open_lab, widget_notebook(lab_server, "comp_seed.ipynb", seed_file))
    kernel(page, "w.side_pane = 'context'; w.selected_id = 'A2'")
    legend = page.locator(".pi-lab .pi-pane .pi-composition-item")
    expect(legend).to_have_count(4)
    parts = kernel_json(page, "context_composition(w.session_manager, 'A2')")
    assert [b.get_attribute("data-part") for b in legend.all()] == [p["part"] for p in parts]
    total = sum(p["tokens"] for p in parts)
    expect(page.locator(".pi-lab .pi-composition-head")).to_contain_text(f"{total} tokens estimated")
    sources = ".pi-lab .pi-context .pi-source"
    assert page.eval_on_selector_all(sources, "els => els.map(e => e.textContent)") == ["U1", "A1", "T1", "A2"]
    # a click on a part's button filters the list to that part
    page.locator(".pi-lab .pi-composition-item[data-part='tool calls']").click()
    expect(page.locator(sources)).to_have_count(1)
    assert page.eval_on_selector_all(sources, "els => els.map(e => e.textContent)") == ["A1"]
    expect(page.locator(".pi-lab .pi-composition-filter")).to_contain_text("tool calls")
    expect(page.locator(".pi-lab .pi-composition-item[data-part='tool calls']")).to_have_attribute("aria-pressed", "true")
    page.screenshot(path=str(screenshot_dir / "composition-seed-filtered.png"))
    # keyboard: the focus stays on the part; Enter on it again shows every message
    assert page.evaluate("() => document.activeElement.dataset.part") == "tool calls"
    page.keyboard.press("Enter")
    expect(page.locator(sources)).to_have_count(4)
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.dataset.part") == "tool result: read"
    page.keyboard.press("Enter")
    assert page.eval_on_selector_all(sources, "els => els.map(e => e.textContent)") == ["T1"]
    # the bar's segments do the same for the pointer
    page.locator(".pi-lab .pi-composition-segment[data-part='user']").click()
    assert page.eval_on_selector_all(sources, "els => els.map(e => e.textContent)") == ["U1"]
    # after C1: the summary, the kept U4 and A6 (what the model sees after the compaction). The
    # part chosen on A2 is A2's: C1 shows every message (issue 22: it said "Showing the 1
    # message of user" on the next entry).
    kernel(page, "w.selected_id = 'C1'")
    expect(legend).to_have_count(3)
    assert [b.get_attribute("data-part") for b in legend.all()] == ["compaction summary", "user", "assistant text"]
    expect(page.locator(sources)).to_have_count(3)
    assert page.eval_on_selector_all(sources, "els => els.map(e => e.textContent)") == ["C1", "U4", "A6"]
    expect(page.locator(".pi-lab .pi-composition-filter")).to_have_count(0)
    expect(page.locator(".pi-lab .pi-composition-item[aria-pressed='true']")).to_have_count(0)
    page.screenshot(path=str(screenshot_dir / "composition-seed-c1.png"))
    # nor does it come back with A2
    kernel(page, "w.selected_id = 'A2'")
    expect(legend).to_have_count(4)
    expect(page.locator(sources)).to_have_count(4)
    expect(page.locator(".pi-lab .pi-composition-filter")).to_have_count(0)
    # a part chosen here, by keyboard, filters here; "show all" by keyboard clears it
    page.locator(".pi-lab .pi-composition-item[data-part='assistant text']").focus()
    page.keyboard.press("Enter")
    assert page.eval_on_selector_all(sources, "els => els.map(e => e.textContent)") == ["A2"]
    page.locator(".pi-lab .pi-composition-filter button", has_text="show all").focus()
    page.keyboard.press("Enter")
    expect(page.locator(sources)).to_have_count(4)


def test_branch_without_calls_says_so(page, lab_server, open_lab, tmp_path):
    session = lab_server.root_dir / "no_calls.jsonl"
    session.write_text(
        '{"type":"session","version":3,"id":"S9","timestamp":"2026-07-29T09:00:00Z","cwd":"/repo"}\n'
        '{"type":"message","id":"U1","parentId":null,"timestamp":"2026-07-29T09:00:01Z",'
        '"message":{"role":"user","content":"只有一个问题 🙂","timestamp":1}}\n', encoding="utf-8")
    run_notebook(page, open_lab, widget_notebook(lab_server, "tl_empty.ipynb", session))
    expect(page.locator(f"{STRIP} .pi-timeline-message")).to_have_text(
        "No model calls on this branch yet: the timeline starts with the first assistant reply.")
    expect(page.locator(PLOT)).to_be_hidden()


def test_real_fixture_timeline_matches_the_engine(page, lab_server, open_lab, fixtures_dir, screenshot_dir):
    session = copy_session(lab_server, fixtures_dir / "before-compaction.jsonl")
    run_notebook(page, open_lab, widget_notebook(lab_server, "tl_fixture.ipynb", session))
    rows = kernel_json(page, "context_timeline(w.session_manager)")
    calls = [r for r in rows if r["kind"] == "call"]
    expect(page.locator(STRIP)).to_have_attribute("data-calls", str(len(calls)), timeout=20_000)
    compactions = sum(1 for r in rows if r["kind"] == "compaction")
    expect(page.locator(f"{STRIP} .pi-timeline-summary")).to_contain_text(f"{compactions} compactions")
    # hovering reads the real row under the pointer (never a downsampled column)
    box = page.locator(PLOT).bounding_box()
    width = box["width"] - 46 - 10
    # a call the default filter shows as a row (replies that only call tools are folded away)
    visible = set(kernel_json(page, "[r.entry_id for r in w.view.rows.rows]"))
    index = next(i for i in range(len(calls) // 3, len(calls)) if calls[i]["entry_id"] in visible)
    page.mouse.move(box["x"] + 46 + (index + 0.5) / len(calls) * width, box["y"] + 60)
    tip = page.locator(f"{STRIP} .pi-timeline-tip")
    expect(tip).to_be_visible()
    assert f"call {index + 1} of {len(calls)}" in tip.inner_text()
    call = calls[index]
    assert f"entry {call['entry_id'][:8]}" in tip.inner_text()
    page.screenshot(path=str(screenshot_dir / "timeline-before-compaction.png"))
    # clicking it selects it
    page.mouse.click(box["x"] + 46 + (index + 0.5) / len(calls) * width, box["y"] + 60)
    page.wait_for_function(f"() => document.querySelector('.pi-lab .pi-row.pi-selected')?.dataset.id === {call['entry_id']!r}")
    kernel(page, "w.side_pane = 'context'")
    expect(page.locator(".pi-lab .pi-composition-item").first).to_be_visible()
    parts = kernel_json(page, f"context_composition(w.session_manager, {call['entry_id']!r})")
    shown = page.eval_on_selector_all(".pi-lab .pi-composition-item", "els => els.map(e => e.dataset.part)")
    assert shown == [p["part"] for p in parts]
    page.screenshot(path=str(screenshot_dir / "composition-before-compaction.png"))


def test_session_text_in_the_views_stays_inert_and_bidi_safe(page, lab_server, open_lab):
    import json

    tool = '<img src=x onerror="window.__pwned=1">\u202eevil'
    model = "<b>m\u202e</b>"
    lines = [
        {"type": "session", "version": 3, "id": "S7", "timestamp": "2026-07-29T09:00:00Z", "cwd": "/repo"},
        {"type": "message", "id": "U1", "parentId": None, "timestamp": "2026-07-29T09:00:01Z",
         "message": {"role": "user", "content": "go", "timestamp": 1}},
        {"type": "message", "id": "A1", "parentId": "U1", "timestamp": "2026-07-29T09:00:02Z",
         "message": {"role": "assistant", "model": model, "stopReason": "toolUse",
                     "content": [{"type": "toolCall", "id": "c1", "name": tool, "arguments": {}}]}},
        {"type": "message", "id": "T1", "parentId": "A1", "timestamp": "2026-07-29T09:00:03Z",
         "message": {"role": "toolResult", "toolCallId": "c1", "toolName": tool, "content": [{"type": "text", "text": "ok"}],
                     "isError": False}},
    ]
    session = lab_server.root_dir / "hostile_views.jsonl"
    session.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    run_notebook(page, open_lab, widget_notebook(lab_server, "tl_hostile.ipynb", session))
    expect(page.locator(STRIP)).to_have_attribute("data-calls", "1")
    kernel(page, "w.side_pane = 'context'; w.selected_id = 'T1'")
    item = page.locator(".pi-lab .pi-composition-item").last
    expect(item).to_contain_text('tool result: <img src=x onerror="window.__pwned=1">⟨RLO⟩evil')
    assert page.locator(".pi-lab .pi-composition img, .pi-lab .pi-timeline img").count() == 0
    page.locator(PLOT).focus()
    page.keyboard.press("End")
    expect(page.locator(PLOT)).to_have_attribute("aria-valuetext", "call 1 of 1 · not measured · estimated 1 tokens · <b>m⟨RLO⟩</b> · entry A1")
    assert page.evaluate("() => window.__pwned") is None


def test_a_selected_user_message_shows_the_context_it_was_sent_with(page, lab_server, open_lab, seed_file, screenshot_dir):
    """Issue 22: selecting a user message must show the context the model received with it (the
    context before it, then the message), and say so; pi's rule for the leaf stays in the text."""
    run_notebook(page, open_lab, widget_notebook(lab_server, "sent_seed.ipynb", seed_file))
    kernel(page, "w.side_pane = 'context'; w.selected_id = 'U3'")
    pane = page.locator(".pi-lab .pi-pane")
    title = pane.locator(".pi-pane-title")
    expect(title).to_have_text("The context sent with this message")
    expect(pane.locator(".pi-context-sent")).to_contain_text("What the model received with user message U3")
    expect(pane.locator(".pi-context-sent")).to_contain_text("puts the leaf on the entry before it")
    sources = ".pi-lab .pi-context .pi-source"
    # pi's projection with the leaf on U3: the same rows, U3 last and marked
    engine = kernel_json(page, "[m['source_id'] for m in __import__('pi_lab.view.context', fromlist=['x'])"
                               ".context_at(w.session_manager.get_branch('U3'))['messages']]")
    expect(page.locator(sources)).to_have_count(len(engine))
    assert page.eval_on_selector_all(sources, "els => els.map(e => e.textContent)") == engine
    assert engine[-1] == "U3"
    expect(pane.locator(".pi-context-sent-item .pi-source")).to_have_text("U3")
    page.screenshot(path=str(screenshot_dir / "context-sent-with-U3.png"))
    # by keyboard in the tree: the next row (A5, an assistant reply) has the usual title
    page.locator(".pi-lab .pi-row[data-id='U3']").click()
    page.keyboard.press("ArrowDown")
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", "A5")
    expect(title).to_have_text("What the model would see with the leaf at A5")
    expect(pane.locator(".pi-context-sent")).to_have_count(0)
    page.keyboard.press("ArrowUp")
    expect(title).to_have_text("The context sent with this message")
    # a user message that is the current leaf says both
    kernel(page, "w.allow_writes(); w.session_manager.branch('A6'); "
                 "w.session_manager.append_message({'role': 'user', 'content': '再来', 'timestamp': 9}); w.sync(); "
                 "w.selected_id = w.session_manager.leaf_id")
    expect(title).to_have_text("The context sent with this message (the current leaf)")
