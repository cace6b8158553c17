"""The session widget in a real JupyterLab and a real browser (Debian chromium via Playwright).

Each test writes a notebook that displays a SessionWidget on a copy of a session file, runs it,
and then checks the page against the engine: the rows, the active path and the gauge match what
Python computes, clicks change the session in the kernel, and session text stays inert.
Screenshots go to PI_LAB_SCREENSHOTS (default /tmp/pi-lab-screenshots).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import SEED_SECTION_14  # noqa: E402

KERNEL_EVAL = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, store_history: false});
  let out = '';
  future.onIOPub = msg => {
    const t = msg.header.msg_type;
    if (t === 'stream') out += msg.content.text;
    if (t === 'error') out += 'ERROR ' + msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  return out;
}"""


def kernel(page, code: str) -> str:
    """Run `code` in the notebook's kernel and return what it printed."""
    out = page.evaluate(KERNEL_EVAL, code)
    assert "ERROR" not in out, out
    return out


def kernel_json(page, expression: str):
    return json.loads(kernel(page, f"import json as _j; print(_j.dumps({expression}))"))


def write_notebook(lab_server, name: str, cells: list[str]) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path = lab_server.root_dir / name
    nbformat.write(nb, path)
    return name


def run_notebook(page, open_lab, name: str) -> None:
    open_lab(name)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'"
    )
    # Not awaited: the promise only settles when every cell has finished.
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    page.locator(".pi-lab .pi-row, .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").first.wait_for(
        timeout=60_000)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    if errors.count():
        raise AssertionError("a notebook cell failed:\n" + errors.first.inner_text())
    page.locator(".pi-lab .pi-row").first.wait_for(timeout=60_000)


def click_until_selected(row, attempts: int = 4) -> None:
    """Click ``row`` until it is the selected row.

    On a loaded machine the page may still replace the output it just drew (Lab and marimo
    re-render a widget's view as its first messages arrive): a click that lands on a node
    being replaced is lost, as a person's would be, and they would click again."""
    for attempt in range(attempts):
        row.click()
        try:
            expect(row).to_have_attribute("aria-selected", "true", timeout=10_000)
            return
        except AssertionError:
            if attempt == attempts - 1:
                raise


def widget_cell(path: Path, *options: str) -> str:
    """The cell that shows a SessionWidget on `path` (writable where the test needs to act)."""
    args = ", ".join([repr(str(path)), *options])
    return f"from pi_lab.widget import SessionWidget\nw = SessionWidget({args})\nw"


NO_ELLIPSIS = "() => ![...document.querySelectorAll('.pi-lab .pi-row-text')].some(e => e.textContent === '…')"
"""Every drawn row has its text (a row whose text has not arrived shows an ellipsis)."""


def choose_filter(page, mode: str) -> None:
    """Click a filter and wait until the kernel's row count for it is the one shown (the button
    turns on before the new structure is drawn)."""
    page.locator(f".pi-lab .pi-filter[data-mode='{mode}']").click()
    page.wait_for_function(f"() => document.querySelector('.pi-lab .pi-filter.pi-on')?.dataset.mode === '{mode}'")
    expected = kernel_json(page, "len(__import__('pi_lab.session.flatten', fromlist=['x'])"
                                 f".navigation_rows(w.session_manager, filter_mode={mode!r}))")
    page.wait_for_function(f"() => document.querySelector('.pi-lab .pi-position')?.textContent.includes('/{expected})')")


def copy_session(lab_server, source: Path, name: str | None = None) -> Path:
    target = lab_server.root_dir / (name or f"{secrets.token_hex(4)}_{source.name}")
    shutil.copyfile(source, target)
    return target


@pytest.fixture
def seed_file(lab_server) -> Path:
    path = lab_server.root_dir / f"seed_{secrets.token_hex(4)}.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    return path


def visible_row_texts(page, widget=".pi-lab") -> list[str]:
    return page.locator(f"{widget} .pi-row .pi-row-text").all_inner_texts()


# The row text the engine sends, as a row shows it: pi leaves an entry of a type it does not know
# blank; the viewer names it the one way every view does (pi_lab.view.kinds.unknown_entry_text).
ENGINE_ROW_TEXTS = ("[(t['text'] or __import__('pi_lab.view.kinds', fromlist=['x']).unknown_entry_text("
                    "str(w.session_manager.get_entry(t['id'])['type'])))"
                    " for t in w.view.rows.texts(0, len(w.view.rows.rows))]")


def test_seed_tree_active_path_and_gauge_match_the_engine(page, lab_server, open_lab, seed_file, screenshot_dir):
    name = write_notebook(lab_server, "seed.ipynb", [
        "from pi_lab.widget import SessionWidget\n"
        f"w = SessionWidget({str(seed_file)!r})\n"
        "w",
    ])
    run_notebook(page, open_lab, name)
    expect(page.locator(".pi-lab .pi-row")).to_have_count(13)
    page.wait_for_function("() => !document.querySelector('.pi-lab .pi-row-text')?.textContent.includes('…')")
    engine = kernel_json(page, "[r.text for r in w.view.rows.rows]")
    assert visible_row_texts(page) == engine
    active = kernel_json(page, "[r.entry_id for r in w.view.rows.rows if r.on_active_path]")
    shown_active = page.eval_on_selector_all(".pi-lab .pi-row.pi-active", "els => els.map(e => e.dataset.id)")
    assert shown_active == active
    # C1 summarised U1..A5: they are dimmed; U4 is marked as the first kept entry.
    out_ids = page.eval_on_selector_all(".pi-lab .pi-row.pi-out", "els => els.map(e => e.dataset.id)")
    assert set(out_ids) == {"U1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5"}
    expect(page.locator(".pi-lab .pi-row.pi-first-kept")).to_have_attribute("data-id", "U4")
    # Right after the compaction the context size is unknown, as pi shows it.
    gauge = kernel_json(page, "w.gauge")
    assert gauge["unknown"] is True and gauge["tokens"] is None
    expect(page.locator(".pi-lab .pi-gauge-value")).to_contain_text("?")
    expect(page.locator(".pi-lab .pi-gauge-headroom")).to_contain_text("until auto-compaction")
    # Selection set from Python moves the view; the context pane shows the projection at that entry.
    kernel(page, "w.side_pane = 'context'; w.selected_id = 'A4'")
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", "A4")
    expect(page.locator(".pi-lab .pi-pane .pi-pane-title")).to_contain_text("leaf at A4")
    sources = page.eval_on_selector_all(".pi-lab .pi-context .pi-source", "els => els.map(e => e.textContent)")
    assert sources == [m["source_id"] for m in kernel_json(page, "__import__('pi_lab.view.payload', fromlist=['x']).context_payload(w.view, 'A4')['messages']")]
    kernel(page, "w.selected_id = 'C1'")
    expect(page.locator(".pi-lab .pi-pane .pi-pane-title")).to_contain_text("at the leaf")
    page.screenshot(path=str(screenshot_dir / "widget-seed.png"))


def open_row_menu(page, entry_id: str) -> None:
    row = page.locator(f".pi-lab .pi-row[data-id='{entry_id}']")
    row.click()
    row.locator(".pi-row-menu").click()
    expect(page.locator(".pi-lab .pi-dialog")).to_be_visible()


def test_real_fixture_rows_match_and_clicking_a_node_moves_the_leaf(
    page, lab_server, open_lab, fixtures_dir, screenshot_dir
):
    session = copy_session(lab_server, fixtures_dir / "public-twkrash-branching.jsonl")
    name = write_notebook(lab_server, "branching.ipynb", [widget_cell(session, "filter_mode='all'")])
    run_notebook(page, open_lab, name)
    engine = kernel_json(page, "[[r.entry_id, r.text, r.indent] for r in w.view.rows.rows]")
    expect(page.locator(".pi-lab .pi-row")).to_have_count(len(engine))
    page.wait_for_function(NO_ELLIPSIS)
    shown = page.eval_on_selector_all(".pi-lab .pi-row", "els => els.map(e => e.dataset.id)")
    assert shown == [row[0] for row in engine]
    page.wait_for_function("() => ![...document.querySelectorAll('.pi-lab .pi-row-text')].some(e => e.textContent === '[entry of an unknown type]')")
    assert visible_row_texts(page) == kernel_json(page, ENGINE_ROW_TEXTS)
    assert [t for t, row in zip(visible_row_texts(page), engine) if row[1]] == [row[1] for row in engine if row[1]]
    # Pick an entry off the current leaf and go there without a summary (pi's /tree Enter).
    leaf = kernel_json(page, "w.session_manager.leaf_id")
    target = next(row[0] for row in engine if row[0] != leaf and not row[1].startswith("user:"))
    page.locator(f".pi-lab .pi-row[data-id='{target}']").dblclick()
    page.locator(".pi-lab .pi-dialog button", has_text="No summary").click()
    page.wait_for_function(f"() => document.querySelector('.pi-lab .pi-row.pi-leaf')?.dataset.id === '{target}'")
    assert kernel_json(page, "w.session_manager.leaf_id") == target
    assert kernel_json(page, "w.leaf_id") == target
    page.screenshot(path=str(screenshot_dir / "widget-branching-navigated.png"))


def test_navigation_with_summary_and_compaction_append_entries(page, lab_server, open_lab, seed_file, screenshot_dir):
    name = write_notebook(lab_server, "actions.ipynb", [
        "from pi_lab.widget import SessionWidget\n"
        f"w = SessionWidget({str(seed_file)!r}, keep_recent_tokens=4, writable=True)\n"
        "w",
    ])
    run_notebook(page, open_lab, name)
    lines_before = seed_file.read_text().splitlines()
    # Re-edit the JWT request U2 with a summary of the cookie branch that is left behind.
    page.locator(".pi-lab .pi-row[data-id='U2']").wait_for()
    page.locator(".pi-lab .pi-row[data-id='U2']").dblclick()
    page.locator(".pi-lab .pi-dialog button", has_text="Summarize").first.click()
    expect(page.locator(".pi-lab .pi-editor-text")).to_contain_text("改成 JWT", timeout=30_000)
    lines = seed_file.read_text().splitlines()
    assert len(lines) == len(lines_before) + 1
    summary = json.loads(lines[-1])
    assert summary["type"] == "branch_summary"
    assert summary["parentId"] == "A2"  # a user message is re-edited from its parent
    assert summary["fromId"] == "C1"  # the abandoned leaf
    expect(page.locator(f".pi-lab .pi-row.pi-leaf[data-id='{summary['id']}']")).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "widget-navigated-with-summary.png"))

    # Compact the new branch with the offline model: a preview first, then the checkpoint.
    kernel(page, "w.session_manager.append_message({'role': 'user', 'content': 'now add refresh tokens ' * 20, 'timestamp': 1})\n"
                 "w.session_manager.append_message({'role': 'assistant', 'content': [{'type': 'text', 'text': 'done ' * 40}], 'stopReason': 'stop', 'timestamp': 2})\n"
                 "w.sync()")
    leaf = kernel_json(page, "w.session_manager.leaf_id")
    open_row_menu(page, leaf)
    page.locator(".pi-lab .pi-dialog .pi-menu-item", has_text="Compact").click()
    expect(page.locator(".pi-lab .pi-dialog .pi-part-kept")).to_be_visible()
    preview = kernel_json(page, "__import__('pi_lab.view.payload', fromlist=['x']).preview_payload(w.view)")
    assert preview["ok"]
    page.screenshot(path=str(screenshot_dir / "widget-compaction-preview.png"))
    page.locator(".pi-lab .pi-dialog button", has_text="Compact").last.click()
    expect(page.locator(".pi-lab .pi-dialog")).to_be_hidden(timeout=30_000)
    last = json.loads(seed_file.read_text().splitlines()[-1])
    assert last["type"] == "compaction"
    assert last["firstKeptEntryId"] == preview["first_kept_id"]
    expect(page.locator(".pi-lab .pi-row.pi-leaf .pi-row-text")).to_contain_text("[compaction:")
    expect(page.locator(".pi-lab .pi-gauge-value")).to_contain_text("?")  # unknown until the next response
    page.screenshot(path=str(screenshot_dir / "widget-compacted.png"))


def test_search_and_filters(page, lab_server, open_lab, fixtures_dir, screenshot_dir):
    session = copy_session(lab_server, fixtures_dir / "large-session.jsonl")
    name = write_notebook(lab_server, "filters.ipynb", [widget_cell(session)])
    run_notebook(page, open_lab, name)
    for mode in ("user-only", "no-tools", "all", "default"):
        choose_filter(page, mode)
        if mode == "user-only":
            kinds = page.eval_on_selector_all(".pi-lab .pi-row", "els => els.map(e => e.dataset.kind)")
            assert set(kinds) == {"user"}
    page.locator(".pi-lab .pi-search").fill("mode")
    expected = kernel_json(page, "[r.entry_id for r in __import__('pi_lab.session.flatten', fromlist=['x']).navigation_rows(w.session_manager, search='mode')]")
    page.wait_for_function(f"() => document.querySelector('.pi-lab .pi-position')?.textContent.includes('/{len(expected)})')")
    assert kernel_json(page, "w.search") == "mode"
    page.wait_for_function(NO_ELLIPSIS)
    # pi matches the search against role, label and message text (not only the row's text).
    shown = page.eval_on_selector_all(".pi-lab .pi-row", "els => els.map(e => e.dataset.id)")
    assert shown == expected[: len(shown)] and shown
    page.screenshot(path=str(screenshot_dir / "widget-search.png"))


INJECTION = [
    {"type": "session", "version": 3, "id": "inject", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp"},
    {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
     "message": {"role": "user", "content": "<script>window.__piPwned = 'script'</script> hi <b>bold?</b>", "timestamp": 1}},
    {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
     "message": {"role": "assistant", "content": [
         {"type": "text", "text": "Here: <img src=x onerror=\"window.__piPwned='img'\"> and [click](javascript:window.__piPwned='link') **bold** `<svg onload=window.__piPwned=1>`"},
         {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "echo '<iframe src=javascript:alert(1)>'"}}],
         "stopReason": "toolUse", "timestamp": 2}},
    {"type": "message", "id": "t1", "parentId": "a1", "timestamp": "2026-01-01T00:00:03.000Z",
     "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                 "content": [{"type": "text", "text": "<img src=y onerror=\"window.__piPwned='result'\">"}], "isError": False, "timestamp": 3}},
    {"type": "label", "id": "l1", "parentId": "t1", "timestamp": "2026-01-01T00:00:04.000Z", "targetId": "a1",
     "label": "<img src=z onerror=\"window.__piPwned='label'\">"},
]


def test_script_and_html_injection_stay_inert_text(page, lab_server, open_lab, screenshot_dir):
    path = lab_server.root_dir / "inject.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in INJECTION), encoding="utf-8")
    name = write_notebook(lab_server, "inject.ipynb", [
        "from pi_lab.widget import SessionWidget\n"
        f"w = SessionWidget({str(path)!r}, filter_mode='all')\n"
        "w",
    ])
    run_notebook(page, open_lab, name)
    page.wait_for_function(NO_ELLIPSIS)
    texts = visible_row_texts(page)
    assert any("<script>window.__piPwned = 'script'</script>" in t for t in texts)
    for entry_id in ("u1", "a1", "t1"):
        page.locator(f".pi-lab .pi-row[data-id='{entry_id}']").click()
        expect(page.locator(".pi-lab .pi-detail-id")).to_have_text(entry_id)
    page.locator(".pi-lab .pi-row[data-id='a1']").click()
    detail = page.locator(".pi-lab .pi-pane")
    expect(detail).to_contain_text("<img src=x onerror=")
    page.locator(".pi-lab .pi-tab", has_text="What the model sees").click()
    expect(detail).to_contain_text("<script>")
    page.wait_for_timeout(500)
    assert page.evaluate("() => window.__piPwned") is None
    # No element from session text made it into the DOM; the only link is not a javascript: URL.
    assert page.locator(".pi-lab script, .pi-lab img, .pi-lab iframe, .pi-lab svg, .pi-lab b").count() == 0
    assert page.locator(".pi-lab a[href^='javascript']").count() == 0
    page.locator(".pi-lab .pi-tab", has_text="Entry").click()
    page.screenshot(path=str(screenshot_dir / "widget-injection.png"))


def test_tool_call_refuses_navigation_and_live_rows_follow_the_run(page, lab_server, open_lab, seed_file, screenshot_dir):
    name = write_notebook(lab_server, "live.ipynb", [
        "import asyncio\n"
        "from pi_lab.session import SessionManager\n"
        "from pi_lab.agent import AgentSession, tool\n"
        "from pi_lab.llm import OfflineModel, ToolCallReply\n"
        "from pi_lab.widget import SessionWidget\n"
        "gate = asyncio.Event()\n"
        "@tool\n"
        "async def wait_for_gate() -> str:\n"
        "    '''Wait until the test opens the gate.'''\n"
        "    await gate.wait()\n"
        "    return 'opened'\n"
        f"sm = SessionManager.open({str(seed_file)!r})\n"
        "sm.branch('A4')\n"
        "agent = AgentSession(sm, client=OfflineModel(script=[ToolCallReply('wait_for_gate', {}), 'all done']), tools=[wait_for_gate])\n"
        "w = SessionWidget(agent)\n"
        "w",
    ])
    run_notebook(page, open_lab, name)
    rows_before = page.locator(".pi-lab .pi-row").count()
    kernel(page, "task = agent.start('please wait for the gate')")
    expect(page.locator(".pi-lab .pi-busy")).to_contain_text("running")
    page.wait_for_function("() => document.querySelector('.pi-lab .pi-live')?.textContent.includes('wait_for_gate')")
    # While the tool runs, navigating is refused with a visible reason.
    page.locator(".pi-lab .pi-row[data-id='U2']").dblclick()
    page.locator(".pi-lab .pi-dialog button", has_text="No summary").click()
    alert = page.locator(".pi-lab .pi-dialog .pi-error-box")
    expect(alert).to_contain_text("tool call is still running")
    page.screenshot(path=str(screenshot_dir / "widget-refused-while-tool-runs.png"))
    page.keyboard.press("Escape")
    expect(page.locator(".pi-lab .pi-dialog")).to_be_hidden()
    assert kernel_json(page, "sm.leaf_id") != "U2"
    kernel(page, "gate.set()")
    expect(page.locator(".pi-lab .pi-row .pi-row-text", has_text="all done")).to_be_visible(timeout=30_000)
    kernel(page, "import asyncio as _a\n_a.ensure_future(task)")
    page.wait_for_function("() => !document.querySelector('.pi-lab .pi-busy')?.textContent")
    assert page.locator(".pi-lab .pi-row").count() > rows_before
    engine = kernel_json(page, "[r.text for r in w.view.rows.rows]")
    assert visible_row_texts(page) == engine
    expect(page.locator(".pi-lab .pi-row.pi-leaf .pi-row-text")).to_contain_text("all done")
    expect(page.locator(".pi-lab .pi-live")).to_be_hidden()  # the streaming strip closes after the reply
    page.screenshot(path=str(screenshot_dir / "widget-live-run.png"))


def test_widget_follows_a_file_another_process_appends_to(page, lab_server, open_lab, seed_file):
    name = write_notebook(lab_server, "follow.ipynb", [
        "from pi_lab.widget import SessionWidget\n"
        f"w = SessionWidget({str(seed_file)!r}, poll_interval=0.3)\n"
        "w",
    ])
    run_notebook(page, open_lab, name)
    entry = {"type": "message", "id": "EXT1", "parentId": "C1", "timestamp": "2026-07-29T09:06:00.000Z",
             "message": {"role": "user", "content": "written by another process", "timestamp": 9}}
    with open(seed_file, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    expect(page.locator(".pi-lab .pi-row[data-id='EXT1'] .pi-row-text")).to_have_text(
        "user: written by another process", timeout=15_000)
    expect(page.locator(".pi-lab .pi-row.pi-leaf")).to_have_attribute("data-id", "EXT1")
    # A live entry of a type pi does not know (arriving as a delta) is named by its type as well.
    page.locator(".pi-lab .pi-filter[data-mode='all']").click()
    page.wait_for_function("() => document.querySelector('.pi-lab .pi-position')?.textContent.includes('[all]')")
    with open(seed_file, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "future_thing", "id": "EXT2", "parentId": "EXT1",
                                 "timestamp": "2026-07-29T09:07:00.000Z"}) + "\n")
    expect(page.locator(".pi-lab .pi-row[data-id='EXT2'] .pi-row-text")).to_have_text("[entry of an unknown type: future_thing]", timeout=15_000)


def test_hundred_thousand_entry_session_opens(page, lab_server, open_lab, repo_root, screenshot_dir, tmp_path_factory):
    big = repo_root / "bench" / "out" / "s100k.jsonl"
    if not big.exists():
        out = tmp_path_factory.mktemp("big") / "s100k.jsonl"
        import subprocess
        subprocess.run([sys.executable, str(repo_root / "bench" / "generate.py"), "--entries", "100000", "--out", str(out)],
                       check=True, timeout=600)
        big = out
    name = write_notebook(lab_server, "big.ipynb", [
        "from pi_lab.widget import SessionWidget\n"
        f"w = SessionWidget({str(big)!r}, follow=False)\n"
        "w",
    ])
    run_notebook(page, open_lab, name)
    count = kernel_json(page, "len(w.view.rows.rows)")
    assert count > 50_000
    expect(page.locator(".pi-lab .pi-position")).to_contain_text(f"/{count})")
    # Virtualized: only the rows in view exist in the DOM.
    assert page.locator(".pi-lab .pi-row").count() < 120
    page.locator(".pi-lab .pi-rows").focus()
    page.keyboard.press("End")
    page.keyboard.press("Home")
    page.keyboard.press("PageDown")
    page.wait_for_function(NO_ELLIPSIS)
    selected = page.locator(".pi-lab .pi-row.pi-selected").get_attribute("data-id")
    expect(page.locator(".pi-lab .pi-detail-id")).to_have_text(selected)
    page.locator(".pi-lab .pi-tab", has_text="What the model sees").click()
    expect(page.locator(".pi-lab .pi-context-item").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "widget-100k.png"))


def test_keyboard_folds_label_and_clone(page, lab_server, open_lab, seed_file, screenshot_dir):
    name = write_notebook(lab_server, "keys.ipynb", [
        "from pi_lab.widget import SessionWidget\n"
        f"w = SessionWidget({str(seed_file)!r}, writable=True)\n"
        "w",
    ])
    run_notebook(page, open_lab, name)
    selected = page.locator(".pi-lab .pi-row.pi-selected")
    expect(selected).to_have_attribute("data-id", "C1")  # the leaf is selected on open
    rows = page.locator(".pi-lab .pi-rows")
    rows.focus()
    page.keyboard.press("ArrowDown")
    expect(selected).to_have_attribute("data-id", "U2")
    page.keyboard.press("End")
    page.keyboard.press("ArrowDown")  # wraps around, as in pi
    expect(selected).to_have_attribute("data-id", "U1")
    page.locator(".pi-lab .pi-row[data-id='A4']").click()
    rows.focus()
    # ctrl+left: A4 is not foldable, so jump up to the start of its branch segment (BS1) ...
    page.keyboard.press("Control+ArrowLeft")
    expect(selected).to_have_attribute("data-id", "BS1")
    # ... then fold it: its subtree disappears, in the browser and in the kernel's view state.
    page.keyboard.press("Control+ArrowLeft")
    expect(page.locator(".pi-lab .pi-row")).to_have_count(6)
    assert kernel_json(page, "w.folded") == ["BS1"]
    expect(page.locator(".pi-lab .pi-row[data-id='BS1'] .pi-row-prefix")).to_contain_text("⊞")
    page.keyboard.press("Control+ArrowRight")
    expect(page.locator(".pi-lab .pi-row")).to_have_count(13)
    # shift+L edits the label of the selected entry (appended at the leaf, as pi does).
    page.keyboard.press("Shift+L")
    page.locator(".pi-lab .pi-dialog input").fill("cookie branch")
    page.keyboard.press("Enter")
    expect(page.locator(".pi-lab .pi-row[data-id='BS1'] .pi-row-label")).to_have_text("[cookie branch]")
    assert kernel_json(page, "w.session_manager.get_label('BS1')") == "cookie branch"
    # Typing searches.
    page.keyboard.type("jwt")
    expect(page.locator(".pi-lab .pi-search")).to_have_value("jwt")
    page.wait_for_function("() => document.querySelector('.pi-lab .pi-position')?.textContent.includes('/3)')")
    page.locator(".pi-lab .pi-search").press("Escape")
    expect(page.locator(".pi-lab .pi-row")).not_to_have_count(3)
    # Clone up to A4 from the row menu: a new file with that path, and the view follows it.
    old_file = kernel_json(page, "w.session_manager.session_file")
    open_row_menu(page, "A4")
    page.locator(".pi-lab .pi-dialog .pi-menu-item", has_text="Clone up to here").click()
    page.locator(".pi-lab .pi-dialog button", has_text="Clone").last.click()
    expect(page.locator(".pi-lab .pi-dialog")).to_be_hidden()
    new_file = kernel_json(page, "w.session_manager.session_file")
    assert new_file != old_file and Path(new_file).exists()
    expect(page.locator(".pi-lab .pi-row[data-id='U2']")).to_have_count(0)
    # The header names the session as every viewer does (its name, else its first user message)
    # and its tooltip gives the file: the new one.
    expect(page.locator(".pi-lab .pi-title")).to_have_attribute("title", re.compile(re.escape(new_file) + "$"))
    page.screenshot(path=str(screenshot_dir / "widget-after-clone.png"))


@pytest.fixture
def notebook7(tmp_path):
    """A Jupyter Notebook 7 server (skipped when the `notebook` package is not installed)."""
    pytest.importorskip("notebook", minversion="7")
    import os
    import socket
    import subprocess
    import time

    import httpx

    root = tmp_path / "root"
    root.mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(8)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "notebook", "--no-browser", "--allow-root", "--ip=127.0.0.1",
                             f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
                             "--JupyterNotebookApp.expose_app_in_browser=True"], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield root, f"http://127.0.0.1:{port}", token
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()


def test_widget_in_notebook_7(page, notebook7, screenshot_dir):
    root, base, token = notebook7
    seed = root / "seed.jsonl"
    seed.write_text(SEED_SECTION_14, encoding="utf-8")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(f"from pi_lab.widget import SessionWidget\nw = SessionWidget({str(seed)!r})\nw")]
    nbformat.write(nb, root / "nb7.ipynb")
    page.goto(f"{base}/notebooks/nb7.ipynb?token={token}")
    page.wait_for_function("() => window.jupyterapp?.shell?.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'")
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    expect(page.locator(".pi-lab .pi-row")).to_have_count(13)
    page.locator(".pi-lab .pi-row[data-id='U2']").click()
    page.locator(".pi-lab .pi-rows").focus()
    page.keyboard.press("ArrowDown")  # Notebook 7 handles keys in the capture phase: ours must win
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", "A3")
    page.keyboard.type("jwt")  # goes to the search box, not to notebook shortcuts (no new cells)
    expect(page.locator(".pi-lab .pi-search")).to_have_value("jwt")
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.content.widgets.length") == 1
    page.screenshot(path=str(screenshot_dir / "widget-notebook7.png"))


# A session with the rough edges of issue 9: a label of several lines, bidi controls in a
# message and a label, an entry type pi does not know, and a compaction summary in Markdown.
RLO, PDF = "\u202e", "\u202c"
ROUGH_TAIL = [
    {"type": "message", "id": "U5", "parentId": "C1", "timestamp": "2026-07-29T09:06:00Z",
     "message": {"role": "user", "content": f"rename {RLO}exe.txt{PDF} 改成 JWT 🚀", "timestamp": 6}},
    {"type": "message", "id": "A7", "parentId": "U5", "timestamp": "2026-07-29T09:06:01Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "好的 👍 renamed"}], "timestamp": 7}},
    {"type": "weird_new_thing", "id": "W1", "parentId": "A7", "timestamp": "2026-07-29T09:06:02Z", "payload": 1},
    {"type": "label", "id": "L1", "parentId": "W1", "timestamp": "2026-07-29T09:06:03Z", "targetId": "A7",
     "label": f"first line\nsecond line\nthird 🚀 {RLO}abc"},
    {"type": "message", "id": "U6", "parentId": "L1", "timestamp": "2026-07-29T09:07:00Z",
     "message": {"role": "user", "content": "继续 " + "add refresh tokens " * 30, "timestamp": 8}},
    {"type": "message", "id": "A8", "parentId": "U6", "timestamp": "2026-07-29T09:07:01Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "done " * 60}], "timestamp": 9}},
    {"type": "compaction", "id": "C2", "parentId": "A8", "timestamp": "2026-07-29T09:08:00Z",
     "summary": "## Goal\n\n**JWT** auth with `refresh` tokens\n\n- tests added\n- 改成 cookie 🍪",
     "firstKeptEntryId": "U6", "tokensBefore": 5000},
    {"type": "message", "id": "U7", "parentId": "C2", "timestamp": "2026-07-29T09:09:00Z",
     "message": {"role": "user", "content": "再检查一次 " + "the edge cases " * 30, "timestamp": 10}},
    {"type": "message", "id": "A9", "parentId": "U7", "timestamp": "2026-07-29T09:09:01Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "checked " * 60}], "timestamp": 11}},
]


@pytest.fixture
def rough_file(lab_server) -> Path:
    path = lab_server.root_dir / f"rough_{secrets.token_hex(4)}.jsonl"
    path.write_text(SEED_SECTION_14 + "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in ROUGH_TAIL), encoding="utf-8")
    return path


FOCUS_IN_DIALOG = "() => !!document.activeElement && !!document.activeElement.closest('.pi-lab .pi-dialog')"
FOCUS_ON_TREE = "() => document.activeElement?.classList.contains('pi-rows')"


def check_keyboard_modal(page, first_control: str, opener: str) -> None:
    """The open dialog holds the keyboard: its first control has focus, Tab and shift+Tab stay
    inside, Escape closes it and gives the focus back to the tree on the row that opened it."""
    dialog = page.locator(".pi-lab .pi-dialog")
    expect(dialog).to_be_visible()
    page.wait_for_function(FOCUS_IN_DIALOG)
    focused = page.evaluate("() => document.activeElement.textContent || document.activeElement.placeholder || ''")
    assert first_control in focused, (first_control, focused)
    seen = set()
    for key in ["Tab"] * 8 + ["Shift+Tab"] * 8:
        page.keyboard.press(key)
        assert page.evaluate(FOCUS_IN_DIALOG), f"{key} left the dialog"
        seen.add(page.evaluate("() => document.activeElement.outerHTML.slice(0, 80)"))
    assert len(seen) >= 2  # Tab moved between the dialog's controls
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.wait_for_function(FOCUS_ON_TREE)
    expect(page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", opener)


def test_every_dialog_is_keyboard_modal(page, lab_server, open_lab, rough_file, screenshot_dir):
    name = write_notebook(lab_server, "dialog-keys.ipynb", [widget_cell(rough_file, "keep_recent_tokens=4", "filter_mode='all'", "writable=True")])
    run_notebook(page, open_lab, name)
    before = rough_file.read_bytes()
    page.locator(".pi-lab .pi-row[data-id='U2']").click()  # the only mouse use: pick the row
    rows = page.locator(".pi-lab .pi-rows")
    rows.focus()
    # Enter: pi's /tree choice.
    page.keyboard.press("Enter")
    expect(page.locator(".pi-lab .pi-dialog-title")).to_have_text("Go to this entry")
    page.screenshot(path=str(screenshot_dir / "widget-dialog-navigate-keyboard.png"))
    check_keyboard_modal(page, "No summary", "U2")
    # shift+F10: the action menu; arrows move between its items.
    page.keyboard.press("Shift+F10")
    check_keyboard_modal(page, "Go here", "U2")
    items = {"Compact": 1, "Label": 2, "Fork before this message": 3, "Clone up to here": 4}
    firsts = {"Compact": "Optional instructions", "Label": "label", "Fork before this message": "Fork", "Clone up to here": "Clone"}
    for item, downs in items.items():
        page.keyboard.press("Shift+F10")
        expect(page.locator(".pi-lab .pi-dialog .pi-menu-item").first).to_be_focused()
        for _ in range(downs):
            page.keyboard.press("ArrowDown")
        expect(page.locator(".pi-lab .pi-dialog .pi-menu-item", has_text=item)).to_be_focused()
        page.keyboard.press("Enter")
        if item == "Compact":
            expect(page.locator(".pi-lab .pi-dialog .pi-part-kept")).to_be_visible()
            page.wait_for_function(FOCUS_IN_DIALOG)
            page.screenshot(path=str(screenshot_dir / "widget-dialog-compact-keyboard.png"))
        check_keyboard_modal(page, firsts[item], "U2")
    # shift+L: the label dialog straight from the tree.
    page.keyboard.press("Shift+L")
    check_keyboard_modal(page, "label", "U2")
    assert rough_file.read_bytes() == before  # every dialog was closed without acting


def test_rows_stay_one_line_and_bidi_controls_cannot_reverse_them(page, lab_server, open_lab, rough_file, screenshot_dir):
    name = write_notebook(lab_server, "rough-rows.ipynb", [widget_cell(rough_file, "filter_mode='all'")])
    run_notebook(page, open_lab, name)
    page.wait_for_function(NO_ELLIPSIS)
    # The label of three lines is one line in its row: every row is 22 px and they do not overlap.
    label = page.locator(".pi-lab .pi-row[data-id='A7'] .pi-row-label")
    expect(label).to_contain_text("first line↵second line↵third 🚀 ⟨RLO⟩abc")
    boxes = page.eval_on_selector_all(
        ".pi-lab .pi-row", "els => els.map(e => [...e.children].map(c => c.getBoundingClientRect()).filter(r => r.width > 0)"
        ".map(r => [r.top, r.bottom]).concat([[e.getBoundingClientRect().top, e.getBoundingClientRect().bottom]]))")
    for row_index, parts in enumerate(boxes):
        row_top, row_bottom = parts[-1]
        assert round(row_bottom - row_top) == 22, row_index
        for top, bottom in parts[:-1]:
            assert top >= row_top - 0.5 and bottom <= row_bottom + 0.5, (row_index, top, bottom, row_top, row_bottom)
    # Bidi controls are visible markers in rows (the row reads in its own order) ...
    text = page.locator(".pi-lab .pi-row[data-id='U5'] .pi-row-text")
    expect(text).to_have_text("user: rename ⟨RLO⟩exe.txt⟨PDF⟩ 改成 JWT 🚀")
    shown = page.eval_on_selector_all(".pi-lab .pi-row", "els => els.map(e => e.textContent).join('')")
    assert not any(ch in shown for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
    # ... and intact, but isolated, in the detail pane.
    page.locator(".pi-lab .pi-row[data-id='A7']").click()
    detail_label = page.locator(".pi-lab .pi-detail-label")
    expect(detail_label).to_have_text(f"[first line\nsecond line\nthird 🚀 {RLO}abc]")
    assert detail_label.evaluate("e => e.tagName") == "BDI"
    assert detail_label.evaluate("e => getComputedStyle(e).unicodeBidi") == "isolate"
    page.locator(".pi-lab .pi-row[data-id='U5']").click()
    expect(page.locator(".pi-lab .pi-detail-body")).to_contain_text(f"rename {RLO}exe.txt{PDF}")
    expect(page.locator(".pi-lab .pi-bidi-note")).to_contain_text("RLO, PDF")
    # The id next to the label still reads left to right: the override did not leak into it.
    expect(page.locator(".pi-lab .pi-detail-id")).to_have_text("U5")
    page.screenshot(path=str(screenshot_dir / "widget-rough-rows.png"))
    # An entry of a type pi does not know says what it is (row and detail) instead of a blank "·".
    expect(page.locator(".pi-lab .pi-row[data-id='W1'] .pi-row-text")).to_have_text("[entry of an unknown type: weird_new_thing]")
    page.locator(".pi-lab .pi-row[data-id='W1']").click()
    expect(page.locator(".pi-lab .pi-kind-tag")).to_have_text("type: weird_new_thing")
    page.screenshot(path=str(screenshot_dir / "widget-unknown-entry.png"))


def test_context_window_commits_on_enter_and_summaries_render_markdown(page, lab_server, open_lab, rough_file, screenshot_dir):
    name = write_notebook(lab_server, "rough-compactions.ipynb", [widget_cell(rough_file)])
    run_notebook(page, open_lab, name)
    page.locator(".pi-lab .pi-tab", has_text="Compactions").click()
    window = page.locator(".pi-lab .pi-setting input[data-setting='context_window']")
    window.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("200000")
    page.keyboard.press("Enter")  # no blur: Enter commits
    expect(window).to_be_focused()
    page.wait_for_function("() => document.querySelector('.pi-lab .pi-gauge-value')?.textContent.includes('/ 200k')")
    assert kernel_json(page, "w.context_window") == 200000
    # The whole number is visible: the field is wide enough for it (nothing scrolled out of view).
    window = page.locator(".pi-lab .pi-setting input[data-setting='context_window']")
    expect(window).to_have_value("200000")
    assert window.evaluate("e => e.scrollWidth <= e.clientWidth")
    room = window.evaluate("""e => { const c = document.createElement('canvas').getContext('2d');
        const s = getComputedStyle(e); c.font = s.font;
        return [c.measureText('2000000').width, e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight), s.font]; }""")
    assert room[0] + 16 <= room[1], room  # seven digits and the spin buttons fit
    # The latest summary is rendered as Markdown (heading, bold, code, list), never as raw marks.
    summary = page.locator(".pi-lab .pi-compaction-summary").last
    expect(summary.locator("h3, h4, h2").first).to_have_text("Goal")
    expect(summary.locator("strong")).to_have_text("JWT")
    expect(summary.locator("code")).to_have_text("refresh")
    expect(summary.locator("li")).to_have_count(2)
    assert "**" not in summary.inner_text() and "##" not in summary.inner_text()
    preview = page.locator(".pi-lab .pi-compactions td.pi-preview").last
    expect(preview.locator("strong")).to_have_text("JWT")
    assert "**" not in preview.inner_text() and "##" not in preview.inner_text()
    # The older summary opens on demand and is rendered the same way.
    older = page.locator(".pi-lab .pi-compaction-summary").first
    older.locator("summary").click()
    expect(older.locator(".pi-md p")).to_contain_text("目标是完成认证改造")
    page.screenshot(path=str(screenshot_dir / "widget-compactions-markdown.png"))


def test_read_only_viewer_says_so_before_any_choice(page, lab_server, open_lab, fixtures_dir, screenshot_dir):
    # The JupyterLab "Pi Session" document never writes: double-click (or Enter) on a row says
    # so at once, with the way to a writable notebook, instead of offering choices it refuses;
    # what it offers is to move the leaf in this view only.
    name = f"2026-01-02T10-00-00-000Z_readonly-{secrets.token_hex(3)}.jsonl"
    shutil.copyfile(fixtures_dir / "public-twkrash-branching.jsonl", lab_server.root_dir / name)
    open_lab()
    page.locator(".jp-DirListing-item", has=page.get_by_text(name, exact=True)).dblclick()
    viewer = ".jp-PiSessionDocument .pi-lab"
    page.locator(f"{viewer} .pi-row").nth(1).wait_for()
    row = page.locator(f"{viewer} .pi-row").nth(1)
    expect(row).to_have_attribute("data-id", re.compile(r".+"))  # the row's text (and id) has arrived
    row_id = row.get_attribute("data-id")
    row.dblclick()
    dialog = page.locator(f"{viewer} .pi-dialog")
    expect(dialog.locator(".pi-view-only-note")).to_contain_text("read-only")
    expect(dialog.locator(".pi-view-only-note")).to_contain_text("notebook")
    expect(dialog.locator(".pi-dialog-target")).not_to_have_text("")  # also for an entry of an unknown type
    # This row is the file's leaf (the viewer says "Already at this point"): no move is offered.
    expect(dialog).to_contain_text("Already at this point.")
    expect(dialog.get_by_role("button", name="Move the leaf here (this view only)")).to_have_count(0)
    expect(dialog.get_by_role("button", name="Open in notebook")).to_be_visible()
    for choice in ("No summary", "Summarize"):
        expect(dialog.get_by_role("button", name=choice)).to_have_count(0)
    expect(page.locator(f"{viewer} .pi-readonly-badge")).to_be_visible()
    page.wait_for_function(FOCUS_IN_DIALOG)
    page.screenshot(path=str(screenshot_dir / "viewer-read-only-dialog.png"))
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.wait_for_function(FOCUS_ON_TREE)
    expect(page.locator(f"{viewer} .pi-row.pi-selected")).to_have_attribute("data-id", row_id)


def test_widget_is_read_only_until_writing_is_allowed(page, lab_server, open_lab, seed_file, screenshot_dir):
    name = write_notebook(lab_server, "allow-writes.ipynb", [widget_cell(seed_file, "follow=False")])
    run_notebook(page, open_lab, name)
    before = seed_file.read_bytes()
    assert kernel_json(page, "w.writable") is False
    badge = page.locator(".pi-lab .pi-readonly-badge")
    expect(badge).to_be_visible()
    # Double-click says read-only at once: the leaf may move in this view (nothing is written),
    # a summary is not offered; the way to writing is right there.
    page.locator(".pi-lab .pi-row[data-id='U2']").dblclick()
    dialog = page.locator(".pi-lab .pi-dialog")
    expect(dialog.locator(".pi-readonly-note")).to_contain_text("read-only")
    expect(dialog.get_by_role("button", name="Summarize")).to_have_count(0)
    page.wait_for_function(FOCUS_IN_DIALOG)
    expect(dialog.get_by_role("button", name="No summary")).to_be_focused()
    page.keyboard.press("Tab")
    expect(dialog.get_by_role("button", name="Allow writing…")).to_be_focused()
    page.screenshot(path=str(screenshot_dir / "widget-read-only-navigate.png"))
    page.keyboard.press("Enter")
    # The confirmation quotes what writing will do, to which file.
    plan = kernel_json(page, "w.write_plan")
    assert seed_file.name in plan
    expect(dialog.locator(".pi-write-plan")).to_have_text(plan)
    page.screenshot(path=str(screenshot_dir / "widget-allow-writes.png"))
    assert seed_file.read_bytes() == before  # nothing written before the choice
    expect(dialog.get_by_role("button", name="Allow writing", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    expect(dialog).to_be_hidden()
    page.wait_for_function("() => document.querySelector('.pi-lab .pi-access')?.hidden === true")
    assert kernel_json(page, "w.writable") is True
    page.locator(".pi-lab .pi-row[data-id='U2']").dblclick()
    expect(dialog.get_by_role("button", name="Summarize", exact=True)).to_be_visible()
    expect(dialog.locator(".pi-readonly-note")).to_have_count(0)
    page.keyboard.press("Escape")
    page.screenshot(path=str(screenshot_dir / "widget-writable.png"))
    # Another process appends meanwhile: the kernel refuses the next write, and the refusal
    # (naming the file) is shown in the dialog and in the status banner.
    entry = {"type": "message", "id": "EXT9", "parentId": "C1", "timestamp": "2026-07-29T09:06:00.000Z",
             "message": {"role": "user", "content": "written by pi meanwhile", "timestamp": 9}}
    with open(seed_file, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    page.locator(".pi-lab .pi-rows").focus()
    page.keyboard.press("Shift+L")
    page.keyboard.type("mine")
    page.keyboard.press("Enter")
    expect(dialog.locator(".pi-error-box")).to_contain_text(seed_file.name)
    expect(page.locator(".pi-lab .pi-banner.pi-banner-error")).to_contain_text(seed_file.name)
    page.wait_for_function(FOCUS_IN_DIALOG)  # the keyboard stays in the dialog after a refusal
    page.screenshot(path=str(screenshot_dir / "widget-refused-concurrent-write.png"))
    page.keyboard.press("Escape")
    expect(page.locator(".pi-lab .pi-row[data-id='EXT9']")).to_be_visible()  # the other writer's entry is shown


def test_header_shows_the_sessions_model_and_the_answering_model_apart(page, lab_server, open_lab, seed_file, screenshot_dir):
    recorded = seed_file.with_name(f"opus_{secrets.token_hex(3)}.jsonl")
    # The seed's replies, as pi records them: each assistant message names its model.
    entries = [json.loads(line) for line in seed_file.read_text(encoding="utf-8").splitlines()]
    for entry in entries:
        if entry.get("type") == "message" and entry["message"]["role"] == "assistant":
            entry["message"].update(provider="anthropic", model="claude-opus-4-5", api="anthropic-messages")
    recorded.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    name = write_notebook(lab_server, "models.ipynb", [
        widget_cell(recorded),
        "from pi_lab.agent import AgentSession\nfrom pi_lab.llm import OfflineModel\nfrom pi_lab.session import SessionManager\n"
        f"w2 = SessionWidget(AgentSession(SessionManager.open({str(recorded)!r}, read_only=True), client=OfflineModel(script=['ok'])))\n"
        "w2",
        "w3 = SessionWidget(SessionManager.in_memory())\nw3",
    ])
    run_notebook(page, open_lab, name)
    expect(page.locator(".pi-lab")).to_have_count(3)
    recorded_meta = page.locator(".pi-lab").nth(0).locator(".pi-meta")
    session = kernel_json(page, "w.session")
    assert "claude-opus-4-5" in session["model"]
    expect(recorded_meta).to_contain_text(session["model"])
    answering_here = kernel_json(page, "w.session.get('answering_model')")
    if answering_here:  # a model answers summaries here: it is named apart from the session's own
        expect(recorded_meta).to_contain_text(f"answered here by {answering_here}")
    else:
        expect(recorded_meta).not_to_contain_text("offline")
    # A kernel that drives a session with the offline model says so, beside the session's model.
    live_meta = page.locator(".pi-lab").nth(1).locator(".pi-meta")
    answering = kernel_json(page, "w2.session.get('answering_model')")
    assert answering and "offline" in answering
    expect(live_meta).to_contain_text(f"answered here by {answering}")
    expect(live_meta).to_contain_text("anthropic/claude-opus-4-5 · answered here by pi-lab/offline")
    # A session that names no model says so.
    assert kernel_json(page, "w3.session.get('model')") is None
    expect(page.locator(".pi-lab").nth(2).locator(".pi-meta")).to_contain_text("model unknown")
    page.locator(".pi-lab").nth(0).scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / "widget-header-model.png"))


def test_fork_offers_the_message_back_and_summarize_says_when_there_is_nothing(
    page, lab_server, open_lab, seed_file, screenshot_dir
):
    name = write_notebook(lab_server, "fork-text.ipynb", [widget_cell(seed_file, "writable=True", "filter_mode='user-only'")])
    run_notebook(page, open_lab, name)
    # Fork before U2: the new session holds the path before it, and its text comes back to edit.
    page.locator(".pi-lab .pi-row[data-id='U2']").click()
    page.locator(".pi-lab .pi-rows").focus()
    page.keyboard.press("Shift+F10")
    fork = page.locator(".pi-lab .pi-dialog .pi-menu-item", has_text="Fork before this message")
    while not fork.evaluate("e => e === document.activeElement"):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator(".pi-lab .pi-dialog-title")).to_have_text("Fork before this message")
    page.keyboard.press("Enter")  # the Fork button has the focus
    expect(page.locator(".pi-lab .pi-dialog")).to_be_hidden()
    expect(page.locator(".pi-lab .pi-editor-text")).to_be_visible()
    expect(page.locator(".pi-lab .pi-editor-value")).to_have_text("改成 JWT")
    assert kernel_json(page, "w.editor_text") == "改成 JWT"
    page.screenshot(path=str(screenshot_dir / "widget-fork-editor-text.png"))
    # The new session shows its entries (the filter of the old one does not hide them all).
    expect(page.locator(".pi-lab .pi-row").first).to_be_visible()
    expect(page.locator(".pi-lab .pi-position")).not_to_have_text("No entries found")

    # Summarize with nothing left behind (the target is below the leaf): the reason is shown.
    kernel(page, "w.filter_mode = 'all'")
    leaf = kernel_json(page, "w.session_manager.leaf_id")
    page.locator(f".pi-lab .pi-row[data-id='{leaf}']").wait_for()
    parent = kernel_json(page, "w.session_manager.get_entry(w.session_manager.leaf_id)['parentId']")
    page.locator(f".pi-lab .pi-row[data-id='{parent}']").dblclick()
    page.locator(".pi-lab .pi-dialog button", has_text="No summary").click()
    page.wait_for_function(f"() => document.querySelector('.pi-lab .pi-row.pi-leaf')?.dataset.id === '{parent}'")
    lines = len(Path(kernel_json(page, "w.session_manager.session_file")).read_text(encoding="utf-8").splitlines())
    page.locator(f".pi-lab .pi-row[data-id='{leaf}']").dblclick()
    page.locator(".pi-lab .pi-dialog button", has_text="Summarize").first.click()
    expect(page.locator(".pi-lab .pi-dialog")).to_be_hidden()
    expect(page.locator(".pi-lab .pi-banner")).to_contain_text("othing to summarize")
    assert len(Path(kernel_json(page, "w.session_manager.session_file")).read_text(encoding="utf-8").splitlines()) == lines
    page.screenshot(path=str(screenshot_dir / "widget-nothing-to-summarize.png"))
