"""The Compare pane of the notebook widget in a real JupyterLab and a real browser.

The seed's worked example (section 14): the JWT leaf A3 against the cookie leaf A4 (what each
side holds, the fork at A2, the branch summary BS1), the leaf before and after the compaction C1
(what C1 summarised, what it kept, whether auth.ts is still in what the model sees); a real
fixture's two tips; refusals shown in the pane; every new control reached and used by keyboard.
Each answer in the page is checked against the Python functions run in the same kernel.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from browser.test_widget import copy_session, kernel, kernel_json, run_notebook, seed_file, write_notebook  # noqa: E402,F401

PANE = ".pi-lab .pi-compare"


@pytest.fixture
def shots(screenshot_dir) -> Path:
    """Screenshots of the pane, in PI_LAB_SCREENSHOTS as every browser test saves them."""
    return screenshot_dir


def open_widget(page, lab_server, open_lab, session: Path, name: str) -> None:
    notebook = write_notebook(lab_server, name, [
        "from pi_lab.widget import SessionWidget\n"
        "from pi_lab.view import context_diff, compare_branches, context_search\n"
        f"w = SessionWidget({str(session)!r}, side_pane='compare', filter_mode='all', height=760)\n"
        "w",
    ])
    run_notebook(page, open_lab, notebook)
    expect(page.locator(PANE)).to_be_visible()


def pick(page, side: str, entry_id: str) -> None:
    """Select `entry_id` in the tree with a click, then press "<side> = selected entry"."""
    page.locator(f".pi-lab .pi-row[data-id='{entry_id}']").click()
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", entry_id)
    button = page.locator(f"{PANE} .pi-cmp-set[data-side='{side}']")
    # The button names the entry it will pick once the selection has reached the view state.
    expect(button).to_have_attribute("title", f"pick the selected entry ({entry_id}) as {side.upper()}")
    button.click()
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='{side}']")).to_have_attribute("data-picked", entry_id)


def group_ids(page, group: str) -> list[str]:
    return page.eval_on_selector_all(f"{PANE} .pi-cmp-{group} > .pi-cmp-list > .pi-cmp-item",
                                     "els => els.map(e => e.dataset.source)")


def test_seed_jwt_against_cookie_and_before_after_c1(page, lab_server, open_lab, seed_file, shots):
    open_widget(page, lab_server, open_lab, seed_file, "compare_seed.ipynb")
    expect(page.locator(f"{PANE} .pi-cmp-hint")).to_contain_text("Pick two entries")
    pick(page, "a", "A3")
    pick(page, "b", "A4")
    # The picks are named by short id, kind and text.
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='a'] .pi-cmp-node-text")).to_have_text("assistant: JWT 方案已完成")
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='b'] .pi-cmp-kind")).to_have_text("assistant")
    expect(page.locator(f"{PANE} .pi-cmp-both")).to_be_visible()
    engine = kernel_json(page, "context_diff(w.session_manager, 'A3', 'A4')")
    for group in ("both", "only_a", "only_b"):
        assert group_ids(page, group) == [r["source_id"] for r in engine[group]], group
    assert group_ids(page, "both") == ["U1", "A1", "T1", "A2"]
    assert group_ids(page, "only_a") == ["U2", "A3"] and group_ids(page, "only_b") == ["BS1", "U2B", "A4"]
    expect(page.locator(f"{PANE} .pi-cmp-tokens")).to_have_text(f"{engine['tokens_a']} → {engine['tokens_b']}")
    expect(page.locator(f"{PANE} .pi-cmp-only_b .pi-cmp-item[data-source='BS1'] .pi-role")).to_have_text("branch summary")
    expect(page.locator(f"{PANE} .pi-cmp-only_b .pi-cmp-item[data-source='BS1'] .pi-cmp-preview")).to_have_text(
        "离开的 JWT 路径已完成认证改造。")
    page.screenshot(path=str(shots / "widget-seed-diff-A3-A4.png"))

    # Branches: the fork point A2, the two segments side by side, BS1 on side B.
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    expect(page.locator(f"{PANE} .pi-cmp-fork")).to_contain_text("Common ancestor")
    expect(page.locator(f"{PANE} .pi-cmp-fork .pi-cmp-id")).to_have_text("A2")
    side_a = page.eval_on_selector_all(f"{PANE} .pi-cmp-side-a .pi-cmp-item", "els => els.map(e => e.dataset.id)")
    side_b = page.eval_on_selector_all(f"{PANE} .pi-cmp-side-b .pi-cmp-item", "els => els.map(e => e.dataset.id)")
    engine = kernel_json(page, "compare_branches(w.session_manager, 'A3', 'A4')")
    assert side_a == engine["a"] == ["U2", "A3"] and side_b == engine["b"] == ["BS1", "U2B", "A4"]
    summary = page.locator(f"{PANE} .pi-cmp-summary")
    expect(summary).to_have_count(1)
    expect(summary.locator(".pi-cmp-id")).to_have_text("BS1")
    expect(summary).to_contain_text("on side B")
    expect(summary.locator(".pi-cmp-summary-text")).to_have_text("离开的 JWT 路径已完成认证改造。")
    # The seed records no usage: the pane says so instead of showing zeros.
    expect(page.locator(f"{PANE} .pi-cmp-note").first).to_contain_text("no recorded usage")
    expect(page.locator(f"{PANE} .pi-cmp-stats")).to_contain_text("no usage recorded")
    # B (A4) is not a leaf: the comparison runs to it.
    expect(page.locator(f"{PANE} .pi-cmp-note", has_text="B (A4) is not a leaf")).to_be_visible()
    page.screenshot(path=str(shots / "widget-seed-branches-A3-A4.png"))
    # An entry button selects that entry in the tree.
    page.locator(f"{PANE} .pi-cmp-side-b .pi-cmp-item[data-id='U2B'] .pi-cmp-id").click()
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", "U2B")
    # "Go to A's leaf…" opens the viewer's Go-here dialog for A3.
    page.locator(f"{PANE} .pi-cmp-goto[data-side='a']").click()
    dialog = page.locator(".pi-lab .pi-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".pi-dialog-target")).to_contain_text("JWT 方案已完成")
    page.screenshot(path=str(shots / "widget-seed-goto-dialog.png"))
    dialog.locator(".pi-close").click()
    expect(dialog).to_be_hidden()

    # Before and after C1: A = A6, B = the current leaf C1.
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='diff']").click()
    pick(page, "a", "A6")
    page.locator(f"{PANE} .pi-cmp-leaf").click()
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='b']")).to_have_attribute("data-picked", "C1")
    expect(page.locator(f"{PANE} .pi-cmp-replaced")).to_be_visible()
    assert group_ids(page, "both") == ["U4", "A6"]  # what C1 kept
    summarized = ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5"]
    under = page.eval_on_selector_all(f"{PANE} .pi-cmp-only_b .pi-cmp-item[data-source='C1'] .pi-cmp-replaced .pi-cmp-item",
                                      "els => els.map(e => e.dataset.source)")
    assert under == summarized
    expect(page.locator(f"{PANE} .pi-cmp-replaced-title")).to_contain_text("summarized 9 entries that A holds verbatim")
    assert int(page.locator(f"{PANE} .pi-cmp-headline").get_attribute("data-delta")) == kernel_json(
        page, "context_diff(w.session_manager, 'A6', 'C1')['delta']") < 0
    # Is auth.ts still in what the model sees?  In A (A1's read call), not in B.
    page.locator(f"{PANE} .pi-cmp-search-input").fill("auth.ts")
    page.locator(f"{PANE} .pi-cmp-search-input").press("Enter")
    expect(page.locator(f"{PANE} .pi-cmp-search-a .pi-cmp-search-verdict")).to_contain_text("1 hit in 1 message")
    expect(page.locator(f"{PANE} .pi-cmp-search-b .pi-cmp-search-verdict")).to_contain_text("not in what the model sees")
    expect(page.locator(f"{PANE} .pi-cmp-search-a .pi-cmp-id")).to_have_text("A1")
    assert kernel_json(page, "context_search(w.session_manager, 'A6', 'C1', 'auth.ts')['in_b']") is False
    page.screenshot(path=str(shots / "widget-seed-diff-A6-C1-search.png"))

    # Swap: B is A6 now, and the summary replaced what B holds.
    page.locator(f"{PANE} .pi-cmp-swap").click()
    expect(page.locator(f"{PANE} .pi-cmp-replaced-title")).to_contain_text("that B holds verbatim")
    # The search is asked again for the new sides.
    expect(page.locator(f"{PANE} .pi-cmp-search-b .pi-cmp-search-verdict")).to_contain_text("1 hit")


def test_go_to_a_leaf_with_a_summary_of_the_other_appends_a_branch_summary(page, lab_server, open_lab, seed_file, shots):
    notebook = write_notebook(lab_server, "compare_goto.ipynb", [
        "from pi_lab.widget import SessionWidget\n"
        f"w = SessionWidget({str(seed_file)!r}, side_pane='compare', filter_mode='all', height=760, writable=True)\n"
        "w",
    ])
    run_notebook(page, open_lab, notebook)
    lines_before = seed_file.read_text(encoding="utf-8").splitlines()
    pick(page, "a", "A3")
    page.locator(f"{PANE} .pi-cmp-leaf").click()  # B = C1, the cookie branch's leaf
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    expect(page.locator(f"{PANE} .pi-cmp-goto[data-side='b']")).to_be_disabled()  # B is the leaf already
    page.locator(f"{PANE} .pi-cmp-goto[data-side='a']").click()
    page.locator(".pi-lab .pi-dialog button", has_text="Summarize").first.click()
    expect(page.locator(".pi-lab .pi-row.pi-leaf .pi-row-text")).to_contain_text("branch summary", timeout=30_000)
    lines = seed_file.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(lines_before) + 1
    summary = json.loads(lines[-1])
    assert summary["type"] == "branch_summary"
    assert (summary["parentId"], summary["fromId"]) == ("A3", "C1")  # at A3, summarising the branch left
    assert kernel_json(page, "w.session_manager.leaf_id") == summary["id"]
    # The pane follows: C1 is no longer the current leaf, so B's Go-to is offered again.
    expect(page.locator(f"{PANE} .pi-cmp-goto[data-side='b']")).to_be_enabled()
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='b'] .pi-cmp-pick-node")).not_to_contain_text("current leaf")
    page.screenshot(path=str(shots / "widget-seed-goto-summarized.png"))


def test_go_to_an_entry_the_filter_hides_says_so_and_opens_no_dialog(page, lab_server, open_lab, seed_file, shots):
    """Go to a side whose entry the current filter hides: the tree shows the nearest visible
    ancestor, and the banner says why no Go-here dialog opened (it would act on the wrong node)."""
    open_widget(page, lab_server, open_lab, seed_file, "compare_goto_hidden.ipynb")
    pick(page, "a", "A3")
    pick(page, "b", "A4")
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    page.locator(".pi-lab .pi-filter[data-mode='user-only']").click()
    expect(page.locator(".pi-lab .pi-filter[data-mode='user-only']")).to_have_attribute("aria-checked", "true")
    expect(page.locator(".pi-lab .pi-row[data-id='A3']")).to_have_count(0)
    page.locator(f"{PANE} .pi-cmp-goto[data-side='a']").click()
    banner = page.locator(".pi-lab .pi-banner")
    expect(banner).to_be_visible()
    expect(banner).to_have_text('A3 is hidden by the filter: choose "all" to go there')
    expect(banner).to_have_class(re.compile(r"\bpi-banner-error\b"))
    expect(page.locator(".pi-lab .pi-dialog")).to_be_hidden()
    # The selection moved to A3's nearest visible ancestor, the prompt U2 that led to it.
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", "U2")
    page.screenshot(path=str(shots / "widget-seed-goto-hidden-by-filter.png"))
    # With every entry shown, the same button opens the dialog on A3 itself.
    page.locator(".pi-lab .pi-filter[data-mode='all']").click()
    # (wait for the new layout: a go-to while it is on its way acts on the old one)
    expect(page.locator(".pi-lab .pi-filter[data-mode='all']")).to_have_attribute("aria-checked", "true")
    expect(page.locator(".pi-lab .pi-row[data-id='A3']")).to_have_count(1)
    page.locator(f"{PANE} .pi-cmp-goto[data-side='a']").click()
    expect(page.locator(".pi-lab .pi-dialog .pi-dialog-target")).to_contain_text("JWT 方案已完成")


def test_refusals_are_shown_in_the_pane(page, lab_server, open_lab, seed_file):
    open_widget(page, lab_server, open_lab, seed_file, "compare_errors.ipynb")
    pick(page, "a", "A3")
    pick(page, "b", "A3")
    error = page.locator(f"{PANE} .pi-cmp-error")
    expect(error).to_have_text("A and B are the same entry (A3): pick two different entries to compare")
    expect(error).to_have_attribute("role", "alert")
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    expect(error).to_contain_text("same entry")
    # Another B: the comparison runs again and the message goes away.
    pick(page, "b", "A4")
    expect(error).to_have_count(0)
    expect(page.locator(f"{PANE} .pi-cmp-fork .pi-cmp-id")).to_have_text("A2")


def test_unrelated_roots_are_said_in_the_pane(page, lab_server, open_lab):
    lines = [
        {"type": "session", "version": 3, "id": "s-orphans", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/repo"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": "first root", "timestamp": 1}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "one"}], "stopReason": "stop", "timestamp": 2}},
        {"type": "message", "id": "u2", "parentId": None, "timestamp": "2026-01-01T00:00:03.000Z",
         "message": {"role": "user", "content": "second root <img src=x onerror=\"window.__piPwned=1\"><b>bold</b>",
                     "timestamp": 3}},
        {"type": "message", "id": "a2", "parentId": "u2", "timestamp": "2026-01-01T00:00:04.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "two"}], "stopReason": "stop", "timestamp": 4}},
    ]
    session = lab_server.root_dir / "orphans_compare.jsonl"
    session.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    open_widget(page, lab_server, open_lab, session, "compare_orphans.ipynb")
    pick(page, "a", "a1")
    pick(page, "b", "a2")
    expect(page.locator(f"{PANE} .pi-cmp-note")).to_contain_text("the two contexts share no message (the entries are on unrelated roots)")
    assert group_ids(page, "only_a") == ["u1", "a1"] and group_ids(page, "only_b") == ["u2", "a2"]
    # Session text stays text: the markup is shown, never parsed.
    expect(page.locator(f"{PANE} .pi-cmp-only_b .pi-cmp-item[data-source='u2'] .pi-cmp-preview")).to_contain_text("<img src=x")
    page.locator(f"{PANE} .pi-cmp-search-input").fill("onerror")
    page.locator(f"{PANE} .pi-cmp-search-go").click()
    expect(page.locator(f"{PANE} .pi-cmp-search-b .pi-cmp-preview")).to_contain_text("<img src=x")
    assert page.locator(f"{PANE} img, {PANE} b").count() == 0
    assert page.evaluate("() => window.__piPwned") is None
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    expect(page.locator(f"{PANE} .pi-cmp-fork")).to_contain_text("No common ancestor: A and B are on unrelated roots")
    expect(page.locator(f"{PANE} .pi-cmp-note").first).to_contain_text("no common ancestor")
    # No usage recorded on either side: said, not shown as zeros.
    expect(page.locator(f"{PANE} .pi-cmp-stats")).to_contain_text("no usage recorded")


def test_a_focused_pick_keeps_the_focus_when_its_name_arrives(page, lab_server, open_lab, seed_file, screenshot_dir):
    open_widget(page, lab_server, open_lab, seed_file, "compare_focus.ipynb")
    # The kernel names a pick slowly, so that the box is drawn again while its button has focus.
    kernel(page, "import time as _t\nfrom pi_lab.view import payload as _p\n"
                 "_named = _p.READ_OPS['compare_node']\n"
                 "_p.READ_OPS['compare_node'] = lambda view, a: (_t.sleep(1.5), _named(view, a))[1]\n")
    try:
        set_a = page.locator(f"{PANE} .pi-cmp-set[data-side='a']")
        expect(set_a).to_have_attribute("title", "pick the selected entry (C1) as A")
        set_a.focus()
        page.keyboard.press("Enter")
        pick = page.locator(f"{PANE} .pi-cmp-pick[data-side='a'] .pi-cmp-pick-id")
        pick.focus()
        expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='a'] .pi-cmp-kind")).to_be_visible()  # redrawn
        expect(pick).to_be_focused()
        page.locator(PANE).screenshot(path=str(screenshot_dir / "compare-pick-focus.png"))
        page.keyboard.press("Tab")
        expect(set_a).to_be_focused()  # the tab order goes on from the pick
    finally:
        kernel(page, "_p.READ_OPS['compare_node'] = _named")


def test_every_control_by_keyboard(page, lab_server, open_lab, seed_file):
    open_widget(page, lab_server, open_lab, seed_file, "compare_keys.ipynb")
    # The leaf C1 is selected on open: pick it as A with the keyboard.
    set_a = page.locator(f"{PANE} .pi-cmp-set[data-side='a']")
    # As in pick(): the button names the entry once the selection has reached the view state
    # (under load the key could otherwise arrive before it and pick nothing).
    expect(set_a).to_have_attribute("title", "pick the selected entry (C1) as A")
    set_a.focus()
    page.keyboard.press("Enter")
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='a']")).to_have_attribute("data-picked", "C1")
    # The pick box is drawn again when the node's kind and text arrive: focus it after that,
    # or the focused button is replaced and the focus falls back to the page.
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='a'] .pi-cmp-kind")).to_be_visible()
    # Tab order: A's pick, A =, B =, B = leaf, swap, the mode radio (one stop), compare again.
    order = []
    page.locator(f"{PANE} .pi-cmp-pick-id").focus()
    for _ in range(7):
        order.append(page.evaluate("() => document.activeElement.className"))
        page.keyboard.press("Tab")
    expected = ["pi-cmp-pick-id", "pi-cmp-set", "pi-cmp-set", "pi-cmp-leaf", "pi-cmp-swap", "pi-cmp-mode", "pi-cmp-refresh"]
    assert [next((c for c in expected if c in cls.split()), cls) for cls in order] == expected, order
    # Focus is visible (the outline of :focus-visible) on a button reached by Tab.
    page.locator(f"{PANE} .pi-cmp-swap").focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"
    # Pick A4 as B from the tree by keyboard: select it in the tree, tab to "B = selected entry".
    page.locator(".pi-lab .pi-row[data-id='A4']").click()
    page.locator(f"{PANE} .pi-cmp-set[data-side='b']").focus()
    page.keyboard.press("Space")
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='b']")).to_have_attribute("data-picked", "A4")
    expect(page.locator(f"{PANE} .pi-cmp-both")).to_be_visible()
    # With a diff drawn, the search comes next after the headline, then the lists' entry buttons.
    page.locator(f"{PANE} .pi-cmp-refresh").focus()
    expect(page.locator(f"{PANE} .pi-cmp-both")).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.locator(f"{PANE} .pi-cmp-search-input")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator(f"{PANE} .pi-cmp-search-go")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator(f"{PANE} .pi-cmp-group .pi-cmp-id").first).to_be_focused()
    # The mode radio group moves with the arrow keys.
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='diff']").focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']")).to_have_attribute("aria-checked", "true")
    expect(page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']")).to_be_focused()
    # C1 descends from A4: the fork point is A4 itself and side B is empty.
    expect(page.locator(f"{PANE} .pi-cmp-fork .pi-cmp-id")).to_have_text("A4")
    expect(page.locator(f"{PANE} .pi-cmp-side-b .pi-cmp-empty")).to_contain_text("stops at the fork point")
    # Entry buttons and Go-to buttons answer Enter.
    page.locator(f"{PANE} .pi-cmp-side-a .pi-cmp-item[data-id='U3'] .pi-cmp-id").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", "U3")
    goto_b = page.locator(f"{PANE} .pi-cmp-goto[data-side='b']")
    goto_b.focus()
    page.keyboard.press("Enter")
    expect(page.locator(".pi-lab .pi-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator(".pi-lab .pi-dialog")).to_be_hidden()
    # Back to the diff, search by keyboard.
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").focus()
    page.keyboard.press("ArrowLeft")
    search = page.locator(f"{PANE} .pi-cmp-search-input")
    search.focus()
    page.keyboard.type("cookie")
    page.keyboard.press("Enter")
    expect(page.locator(f"{PANE} .pi-cmp-search-b .pi-cmp-search-verdict")).to_contain_text("hit")
    expect(page.locator(f"{PANE} .pi-cmp-search-a .pi-cmp-search-verdict")).to_contain_text("hit")  # C1's summary
    page.keyboard.press("Escape")
    expect(page.locator(f"{PANE} .pi-cmp-search-answer")).to_have_count(0)
    # Every button and field of the pane has an accessible name.
    unnamed = page.eval_on_selector_all(
        f"{PANE} button, {PANE} input",
        "els => els.filter(e => !(e.getAttribute('aria-label') || e.textContent.trim())).length")
    assert unnamed == 0


def test_real_fixture_two_tips(page, lab_server, open_lab, fixtures_dir, shots):
    session = copy_session(lab_server, fixtures_dir / "public-twkrash-branching.jsonl")
    open_widget(page, lab_server, open_lab, session, "compare_fixture.ipynb")
    tips = kernel_json(page, "[e['id'] for e in w.session_manager.entries if isinstance(e.get('id'), str) "
                             "and not w.session_manager.get_children(e['id'])]")
    leaf = kernel_json(page, "w.session_manager.leaf_id")
    other = next(t for t in tips if t != leaf)
    pick(page, "a", other)
    page.locator(f"{PANE} .pi-cmp-leaf").click()
    expect(page.locator(f"{PANE} .pi-cmp-both")).to_be_visible()
    engine = kernel_json(page, f"context_diff(w.session_manager, {other!r}, {leaf!r})")
    for group in ("both", "only_a", "only_b"):
        assert group_ids(page, group) == [r["source_id"] for r in engine[group]][:200], group
    page.screenshot(path=str(shots / "widget-fixture-diff.png"))
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    engine = kernel_json(page, f"compare_branches(w.session_manager, {other!r}, {leaf!r})")
    expect(page.locator(f"{PANE} .pi-cmp-fork .pi-cmp-id")).to_have_count(1 if engine["common_ancestor"] else 0)
    side_b = page.eval_on_selector_all(f"{PANE} .pi-cmp-side-b .pi-cmp-item", "els => els.map(e => e.dataset.id)")
    assert side_b == engine["b"][:200]
    tools = page.locator(f"{PANE} .pi-cmp-stats .pi-cmp-tools td").all_inner_texts()
    for text, side in zip(tools, ("a_stats", "b_stats")):
        for name, count in engine[side]["tools"].items():
            assert f"{name} ×{count}" in text
    page.screenshot(path=str(shots / "widget-fixture-branches.png"))


def test_show_more_on_a_long_branch(page, lab_server, open_lab, repo_root, shots):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_generate", repo_root / "bench" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines, _ = module.generate(3000, 5)
    session = lab_server.root_dir / "long_compare.jsonl"
    session.write_text("\n".join(lines) + "\n", encoding="utf-8")
    open_widget(page, lab_server, open_lab, session, "compare_long.ipynb")
    first = kernel_json(page, "w.session_manager.get_branch()[1]['id']")
    leaf = kernel_json(page, "w.session_manager.leaf_id")
    kernel(page, f"w.selected_id = {first!r}")
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", first)
    page.locator(f"{PANE} .pi-cmp-set[data-side='a']").click()
    page.locator(f"{PANE} .pi-cmp-leaf").click()
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    count = kernel_json(page, f"len(compare_branches(w.session_manager, {first!r}, {leaf!r})['b'])")
    assert count > 200
    items = page.locator(f"{PANE} .pi-cmp-side-b .pi-cmp-item")
    expect(items).to_have_count(200)
    more = page.locator(f"{PANE} .pi-cmp-side-b .pi-cmp-more")
    expect(more).to_contain_text(f"{count - 200} not shown")
    more.click()
    expect(items).to_have_count(min(count, 1000))
    page.screenshot(path=str(shots / "widget-long-branches.png"))


# An identifier a user never typed: snake_case (an argument or a JSON field), a camelCase field
# name of the file, or a Python type.
CODE_WORD = re.compile(r"\b[a-z]+_[a-z_]+\b|\b(?:fromId|parentId|firstKeptEntryId|int|str|dict|list|NoneType)\b")


def pick_by_id(page, side: str, entry_id: str) -> None:
    """Select `entry_id` from the kernel (it may be far from the rows in view), then press
    "<side> = selected entry" with the keyboard."""
    kernel(page, f"w.selected_id = {entry_id!r}")
    button = page.locator(f"{PANE} .pi-cmp-set[data-side='{side}']")
    expect(button).to_have_attribute("title", f"pick the selected entry ({entry_id}) as {side.upper()}")
    button.focus()
    page.keyboard.press("Enter")
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='{side}']")).to_have_attribute("data-picked", entry_id)


def test_an_earlier_entry_against_the_leaf_is_said_in_the_users_words(page, lab_server, open_lab, fixtures_dir, shots):
    """Issue 22: A = an earlier entry of the current branch, B = the current leaf. The Branches
    note said 'leaf_a is an ancestor of leaf_b: side a is empty'; the diff showed 'Tokens A → B'
    beside 'context estimate at each node' with nothing saying why they differ."""
    session = copy_session(lab_server, fixtures_dir / "before-compaction.jsonl")
    open_widget(page, lab_server, open_lab, session, "compare_words.ipynb")
    leaf = kernel_json(page, "w.session_manager.leaf_id")
    # an assistant reply in the middle of the branch: its context is anchored on reported usage
    # (one the tree shows as a row: a reply that only calls tools is folded into the next row)
    earlier = kernel_json(page, "(lambda rows: [e['id'] for e in w.session_manager.get_branch() if e['id'] in rows "
                                "and e['type'] == 'message' and e['message']['role'] == 'assistant' "
                                "and e['message'].get('usage')][40])({r.entry_id for r in w.view.rows.rows})")
    pick_by_id(page, "a", earlier)
    leaf_button = page.locator(f"{PANE} .pi-cmp-leaf")
    leaf_button.focus()
    page.keyboard.press("Enter")
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='b']")).to_have_attribute("data-picked", leaf)

    # The context diff: two figures, each named, and a caption saying which is which.
    engine = kernel_json(page, f"context_diff(w.session_manager, {earlier!r}, {leaf!r})")
    assert (engine["context_a"], engine["context_b"]) != (engine["tokens_a"], engine["tokens_b"])
    head = page.locator(f"{PANE} .pi-cmp-headline")
    expect(head).to_contain_text("Messages listed A → B: ")
    assert (int(head.get_attribute("data-a")), int(head.get_attribute("data-b"))) == (engine["tokens_a"], engine["tokens_b"])
    context = page.locator(f"{PANE} .pi-cmp-context")
    expect(context).to_contain_text("Context size A → B: ")
    assert (int(context.get_attribute("data-a")), int(context.get_attribute("data-b"))) == (engine["context_a"], engine["context_b"])
    caption = page.locator(f"{PANE} .pi-cmp-figures-caption")
    expect(caption).to_contain_text("Messages listed: pi's estimate (characters / 4) of the messages below")
    expect(caption).to_contain_text("Context size: what the gauge shows")
    assert "system prompt" in context.get_attribute("title") and "characters / 4" in head.get_attribute("title")
    page.screenshot(path=str(shots / "widget-compare-two-figures.png"))

    # Branches, reached by keyboard: the note says what happened in the pane's words.
    mode = page.locator(f"{PANE} .pi-cmp-mode[data-mode='diff']")
    mode.focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']")).to_have_attribute("aria-checked", "true")
    note = page.locator(f"{PANE} .pi-cmp-note").first
    expect(note).to_have_text("A comes before B on the same branch: A is the fork point, so A's side is empty "
                              "and B's side is what followed A")
    assert kernel_json(page, f"compare_branches(w.session_manager, {earlier!r}, {leaf!r})['notes'][0]") == note.inner_text()
    for text in page.locator(f"{PANE} .pi-cmp-result").all_inner_texts():
        assert not CODE_WORD.search(text), CODE_WORD.search(text)
    page.screenshot(path=str(shots / "widget-compare-ancestor-note.png"))


def test_a_summary_that_records_its_target_is_said_without_field_names(page, lab_server, open_lab, seed_file, shots):
    """The seed's BS1 records the entry navigated to (A2) where pi ≥ 0.87 records the leaf left:
    the pane said 'records fromId A2'; it names no field of the file."""
    open_widget(page, lab_server, open_lab, seed_file, "compare_fromid.ipynb")
    pick(page, "a", "A3")
    pick(page, "b", "A4")
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    summary = page.locator(f"{PANE} .pi-cmp-summary")
    expect(summary).to_contain_text("names A2 as where it came from: the entry navigated to, not the leaf left behind")
    assert not CODE_WORD.search(summary.inner_text())
