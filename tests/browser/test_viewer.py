"""The JupyterLab session viewer in a real JupyterLab and a real browser (Debian chromium).

A pi session file in the file browser opens in the read-only "Pi Session" viewer, fed by the
pi_lab server extension; the Pi Sessions panel lists the server's sessions folder; "Open in
notebook" makes a notebook whose cell opens the widget; a file that grows shows its new entries.
What the page shows is checked against the engine run here on the same file. Screenshots go to
PI_LAB_SCREENSHOTS (default /tmp/pi-lab-screenshots).
"""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from pi_lab.session.readonly import session_from_bytes
from pi_lab.widget.payload import SessionView, read_request

VIEWER = ".jp-PiSessionDocument .pi-lab"


def pi_name(stem: str) -> str:
    """A file name the way pi names its sessions (so the viewer is the default)."""
    return f"2026-01-0{secrets.randbelow(9) + 1}T10-00-00-000Z_{stem}-{secrets.token_hex(3)}.jsonl"


def engine_view(path: Path, **view) -> SessionView:
    return SessionView.open(session_from_bytes(path.read_bytes(), path.name), **view)


def wait_for_texts(page, scope: str) -> None:
    """Row texts arrive after the structure; wait until none is a placeholder."""
    page.locator(f"{scope} .pi-row").first.wait_for()
    page.wait_for_function(
        "(scope) => { const t = [...document.querySelectorAll(scope + ' .pi-row .pi-row-text')];"
        " return t.length > 0 && t.every(e => e.textContent !== '…'); }", arg=scope)


def shown_rows(page, scope: str) -> list[list[str]]:
    """``[id, text]`` of the rows on screen (the list is windowed: only those are in the page)."""
    return page.eval_on_selector_all(
        f"{scope} .pi-row", "els => els.map(e => [e.dataset.id, e.querySelector('.pi-row-text').textContent])")


def engine_rows(view: SessionView) -> list[list[str]]:
    return [[row["id"], row["text"]] for row in read_request(view, "rows", {"start": 0, "end": 2000})["rows"]]


def same_window(shown: list[list[str]], expected: list[list[str]]) -> None:
    """The rows on screen are a contiguous slice of the engine's rows."""
    assert shown, "no rows on screen"
    ids = [row[0] for row in expected]
    start = ids.index(shown[0][0])
    assert shown == expected[start:start + len(shown)]


def open_file(page, open_lab, name: str) -> None:
    open_lab()
    item = page.locator(".jp-DirListing-item", has=page.get_by_text(name, exact=True))
    item.dblclick()


@pytest.fixture
def branching(lab_server, fixtures_dir) -> Path:
    target = lab_server.root_dir / pi_name("branching")
    shutil.copyfile(fixtures_dir / "public-twkrash-branching.jsonl", target)
    return target


def test_double_click_a_real_session_shows_its_tree(page, lab_server, open_lab, branching, screenshot_dir):
    open_file(page, open_lab, branching.name)
    wait_for_texts(page, VIEWER)
    view = engine_view(branching)
    assert shown_rows(page, VIEWER) == engine_rows(view)
    active = [r.entry_id for r in view.rows.rows if r.on_active_path]
    assert page.eval_on_selector_all(f"{VIEWER} .pi-row.pi-active", "els => els.map(e => e.dataset.id)") == active
    expect(page.locator(".lm-TabBar-tab.lm-mod-current", has_text=branching.name)).to_be_visible()
    expect(page.locator(".jp-PiSessionView-note")).to_contain_text("read-only viewer — Open in notebook")
    expect(page.locator(f"{VIEWER} .pi-meta")).to_contain_text(f"{view.sm.get_entry_count()} entries")
    page.screenshot(path=str(screenshot_dir / "viewer-tree.png"))


def test_selecting_a_node_shows_what_the_model_sees_there(page, lab_server, open_lab, branching, screenshot_dir):
    view = engine_view(branching)
    # An entry on the branch that is not the current one: its context differs from the leaf's.
    target = next(r.entry_id for r in view.rows.rows if not r.on_active_path and r.entry.get("type") == "message")
    expected = read_request(view, "context_at", {"id": target})
    open_file(page, open_lab, branching.name)
    wait_for_texts(page, VIEWER)
    page.locator(f"{VIEWER} .pi-row[data-id='{target}']").click()
    page.locator(f"{VIEWER} .pi-tab", has_text="What the model sees").click()
    pane = page.locator(f"{VIEWER} .pi-pane")
    expect(pane.locator(".pi-pane-title")).to_contain_text("What the model would see with the leaf at")
    expect(pane.locator(".pi-context-item")).to_have_count(len(expected["messages"]))
    previews = pane.locator(".pi-context-preview").all_inner_texts()
    assert [p.strip() for p in previews] == [m["preview"].strip() for m in expected["messages"]]
    page.screenshot(path=str(screenshot_dir / "viewer-model-sees.png"))

    # The entry pane shows the entry itself; actions that write are explained, not offered.
    page.locator(f"{VIEWER} .pi-tab", has_text="Entry").click()
    expect(pane).to_contain_text(target[:8])
    page.locator(f"{VIEWER} .pi-row[data-id='{target}'] .pi-row-menu").click()
    expect(page.locator(f"{VIEWER} .pi-dialog")).to_contain_text("read-only")
    expect(page.locator(f"{VIEWER} .pi-dialog .pi-menu-item")).to_have_count(0)


def test_search_and_filters_ask_the_server_for_a_new_layout(page, lab_server, open_lab, fixtures_dir, screenshot_dir):
    target = lab_server.root_dir / pi_name("large")
    shutil.copyfile(fixtures_dir / "large-session.jsonl", target)
    open_file(page, open_lab, target.name)
    wait_for_texts(page, VIEWER)
    page.locator(f"{VIEWER} .pi-filter[data-mode='user-only']").click()
    expected = engine_view(target, filter_mode="user-only")
    expect(page.locator(f"{VIEWER} .pi-position")).to_contain_text(f"/{len(expected.rows.rows)})")
    wait_for_texts(page, VIEWER)
    same_window(shown_rows(page, VIEWER), engine_rows(expected))
    page.locator(f"{VIEWER} .pi-filter[data-mode='default']").click()
    page.locator(f"{VIEWER} .pi-search").fill("readme themes")
    searched = engine_view(target, search="readme themes")
    assert 0 < len(searched.rows.rows) < len(engine_view(target).rows.rows)
    expect(page.locator(f"{VIEWER} .pi-position")).to_contain_text(f"/{len(searched.rows.rows)})")
    page.screenshot(path=str(screenshot_dir / "viewer-search.png"))

    # The compaction preview is a dry run with the engine's numbers; the file is not touched.
    before = target.read_bytes()
    preview = read_request(engine_view(target), "compact_preview", {})
    assert preview["ok"]
    page.locator(".jp-PiSessionDocument .jp-PiSessionView-preview").click()
    dialog = page.locator(".jp-Dialog .jp-PiPreview")
    expect(dialog).to_contain_text(f"Summarized: {preview['summarize']['count']} messages")
    expect(dialog).to_contain_text(f"{preview['kept']['count']} messages")
    expect(dialog).to_contain_text("Nothing was written")
    page.screenshot(path=str(screenshot_dir / "viewer-compaction-preview.png"))
    page.locator(".jp-Dialog button", has_text="Close").click()
    assert target.read_bytes() == before


def test_other_jsonl_files_open_with_pi_session_and_get_a_clear_message(page, lab_server, open_lab, screenshot_dir):
    name = f"notes-{secrets.token_hex(3)}.jsonl"
    (lab_server.root_dir / name).write_text('{"name": "<b>alice</b>"}\n{"name": "bob"}\n')
    open_lab()
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path, factory: 'Pi Session'})", name)
    message = page.locator(".jp-PiSessionDocument .jp-PiSessionView-message")
    expect(message).to_contain_text(f"{name} is not a pi session")
    expect(message).to_contain_text("first JSON line is not a pi session header")
    expect(page.locator(".jp-PiSessionDocument .pi-lab")).to_have_count(0)
    page.screenshot(path=str(screenshot_dir / "viewer-not-a-session.png"))


def write_session(folder: Path, sid: str, cwd: str, texts: list[str], month: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"2026-0{month}-01T00-00-00-000Z_{sid}.jsonl"
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": f"2026-0{month}-01T00:00:00.000Z", "cwd": cwd}]
    parent = None
    for i, text in enumerate(texts):
        entry_id = f"{sid}-{i}"
        role = "user" if i % 2 == 0 else "assistant"
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append({"type": "message", "id": entry_id, "parentId": parent,
                      "timestamp": f"2026-0{month}-01T00:00:0{i}.000Z",
                      "message": {"role": role, "content": content, "timestamp": 1767225600000 + month * 2_600_000_000 + i}})
        parent = entry_id
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_side_panel_lists_the_sessions_folder_and_opens_a_session(page, lab_server, open_lab, screenshot_dir):
    folder = lab_server.sessions_dir
    tag = secrets.token_hex(3)
    write_session(folder / f"--home-ann-proj{tag}--", f"old{tag}", f"/home/ann/proj{tag}", ["fix the parser", "done"], 1)
    newest = write_session(folder / f"--home-ann-proj{tag}--", f"new{tag}", f"/home/ann/proj{tag}",
                           ["add a <b>cache</b>", "added", "thanks"], 6)
    write_session(folder / f"--srv-app{tag}--", f"app{tag}", f"/srv/app{tag}", ["deploy the app"], 3)

    open_lab()
    page.evaluate("() => window.jupyterapp.commands.execute('pi-lab:show-sessions')")
    panel = page.locator("#pi-lab-sessions")
    group = panel.locator(".jp-PiSessions-group", has=page.locator(".jp-PiSessions-project", has_text=f"/home/ann/proj{tag}"))
    expect(group.locator(".jp-PiSessions-item")).to_have_count(2)
    names = group.locator(".jp-PiSessions-name").all_inner_texts()
    assert names == ["add a <b>cache</b>", "fix the parser"]  # newest first; markup stays text
    expect(group.locator(".jp-PiSessions-meta").first).to_contain_text("3 messages")
    page.screenshot(path=str(screenshot_dir / "sessions-panel.png"))

    panel.locator(".jp-PiSessions-search").fill(f"deploy app{tag}")
    expect(panel.locator(".jp-PiSessions-item")).to_have_count(1)
    expect(panel.locator(".jp-PiSessions-project")).to_have_text(f"/srv/app{tag} 1")
    panel.locator(".jp-PiSessions-search").fill("")
    expect(group.locator(".jp-PiSessions-item")).to_have_count(2)

    group.locator(".jp-PiSessions-item").first.click()
    scope = ".lm-DockPanel .jp-PiSessionDocument .pi-lab"
    wait_for_texts(page, scope)
    assert shown_rows(page, scope) == engine_rows(engine_view(newest))
    expect(page.locator(".lm-TabBar-tab.lm-mod-current", has_text=newest.name)).to_be_visible()
    expect(page.locator(f"{scope} b")).to_have_count(0)
    page.screenshot(path=str(screenshot_dir / "sessions-panel-opened.png"))


def test_open_in_notebook_gives_a_working_notebook(page, lab_server, open_lab, branching, screenshot_dir):
    open_file(page, open_lab, branching.name)
    wait_for_texts(page, VIEWER)
    page.locator(".jp-PiSessionDocument .jp-PiSessionView-openNotebook").click()
    notebook_name = branching.name.replace(".jsonl", ".ipynb")
    expect(page.locator(".lm-TabBar-tab.lm-mod-current", has_text=notebook_name)).to_be_visible()
    assert (lab_server.root_dir / notebook_name).is_file()
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'")
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    output = page.locator(".jp-NotebookPanel .pi-lab .pi-row, .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    output.first.wait_for(timeout=60_000)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, errors.first.inner_text()
    wait_for_texts(page, ".jp-NotebookPanel .pi-lab")
    assert [row[0] for row in shown_rows(page, ".jp-NotebookPanel .pi-lab")] == [r[0] for r in engine_rows(engine_view(branching))]
    page.screenshot(path=str(screenshot_dir / "viewer-open-in-notebook.png"))


def test_an_appended_entry_shows_up_while_the_file_is_open(page, lab_server, open_lab, fixtures_dir, screenshot_dir):
    target = lab_server.root_dir / pi_name("live")
    shutil.copyfile(fixtures_dir / "public-twkrash-uat.jsonl", target)
    view = engine_view(target)
    open_file(page, open_lab, target.name)
    wait_for_texts(page, VIEWER)
    count = page.locator(f"{VIEWER} .pi-row").count()
    entry = {"type": "message", "id": "live-entry", "parentId": view.sm.leaf_id, "timestamp": "2026-09-11T09:30:00.000Z",
             "message": {"role": "user", "content": "a message pi wrote just now", "timestamp": 1789119000000}}
    with open(target, "a") as handle:
        handle.write(json.dumps(entry) + "\n")
    row = page.locator(f"{VIEWER} .pi-row[data-id='live-entry']")
    expect(row).to_be_visible(timeout=15_000)
    expect(row.locator(".pi-row-text")).to_contain_text("a message pi wrote just now")
    expect(page.locator(f"{VIEWER} .pi-row")).to_have_count(count + 1)
    expect(page.locator(f"{VIEWER} .pi-meta")).to_contain_text(f"{view.sm.get_entry_count() + 1} entries")
    expect(page.locator(f"{VIEWER} .pi-row.pi-leaf")).to_have_attribute("data-id", "live-entry")
    # The selection followed the leaf, so the entry pane shows the new entry.
    expect(page.locator(f"{VIEWER} .pi-pane")).to_contain_text("a message pi wrote just now")
    page.screenshot(path=str(screenshot_dir / "viewer-live-append.png"))
