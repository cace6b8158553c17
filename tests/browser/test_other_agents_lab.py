"""Claude Code and Codex sessions in JupyterLab (issues 24 and 25), in a real server and chromium:
the Sessions panel lists pi, Claude Code and Codex sessions with one search over them, a
renamed pi file opens in the viewer by double-click (its content, not its name) while another
.jsonl keeps JupyterLab's own viewer, and another agent's session shows read-only with the reason.

The server here is this module's own (started by conftest's serve_lab), with generated Claude
Code and Codex folders where its environment (CLAUDE_CONFIG_DIR, CODEX_HOME) points.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import expect  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import serve_lab  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from generate_claude_sessions import generate_session as generate_claude  # noqa: E402
from generate_codex_sessions import generate_session as generate_codex  # noqa: E402

TINY_AUTH = Path(__file__).resolve().parents[2] / "pi_lab" / "data" / "sessions" / "tiny-auth.jsonl"


def _digest(folder: Path) -> dict[str, str]:
    # (JupyterLab's own checkpoints of an opened document are its copies, not the user's files)
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.jsonl"))
            if ".ipynb_checkpoints" not in p.parts}


@pytest.fixture(scope="module")
def agents_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    base = tmp_path_factory.mktemp("agents-lab")
    root = base / "root"
    pi_sessions = base / "pi-agent" / "sessions" / "--work-tiny--"
    claude = base / "claude"
    codex = base / "codex"
    for d in (root, pi_sessions):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TINY_AUTH, pi_sessions / "2026-01-01T10-00-00-000Z_tiny.jsonl")
    claude_file = generate_claude(claude / "projects" / "-home-user-project", seed=11)
    codex_file = generate_codex(codex, seed=12)[0]
    shutil.copyfile(TINY_AUTH, root / "renamed.jsonl")
    (root / "data.jsonl").write_text('{"row": 1, "value": "not a session"}\n{"row": 2}\n')
    with contextlib.contextmanager(serve_lab)(base) as server:
        before = {**_digest(root), **_digest(base / "pi-agent"), **_digest(claude), **_digest(codex)}
        yield {"url": server.base_url, "token": server.token, "root": root, "claude_file": claude_file,
               "codex_file": codex_file}
        after = {**_digest(root), **_digest(base / "pi-agent"), **_digest(claude), **_digest(codex)}
        assert after == before, "a session file changed"


def _load(page, lab: dict, path: str = "") -> None:
    route = f"lab/workspaces/t{secrets.token_hex(4)}" + (f"/tree/{path}" if path else "")
    page.goto(f"{lab['url']}/{route}?token={lab['token']}")
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")


def _show_sessions(page) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('pi-lab:show-sessions')")
    expect(page.locator("#pi-lab-sessions .jp-PiSessions-item").first).to_be_visible()


def test_the_panel_lists_three_agents_and_searches_them_all(page, agents_lab, screenshot_dir):
    _load(page, agents_lab)
    _show_sessions(page)
    panel = page.locator("#pi-lab-sessions")
    for agent, label in (("pi", "pi"), ("claude-code", "Claude Code"), ("codex", "Codex")):
        item = panel.locator(f".jp-PiSessions-item[data-agent='{agent}']")
        expect(item).to_have_count(1)
        expect(item.locator(".jp-PiSessions-agent")).to_have_text(label)
    expect(panel.locator(".jp-PiSessions-project", has_text="/home/user/project")).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "other-agents-panel.png"))
    search = panel.locator("input")
    search.fill("sub-agent")
    expect(panel.locator(".jp-PiSessions-item")).to_have_count(1)
    expect(panel.locator(".jp-PiSessions-item[data-agent='claude-code'] mark").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "other-agents-panel-search.png"))
    search.fill("failing test")
    expect(panel.locator(".jp-PiSessions-item[data-agent='codex']")).to_have_count(1)


def test_a_renamed_pi_file_opens_in_the_viewer_by_double_click(page, agents_lab, screenshot_dir):
    _load(page, agents_lab)
    item = page.locator(".jp-DirListing-item", has=page.get_by_text("renamed.jsonl", exact=True))
    item.dblclick()
    view = page.locator(".jp-PiSessionDocument .jp-PiSessionView .pi-lab")
    expect(view.locator(".pi-row").first).to_be_visible()
    expect(view.locator(".pi-meta")).to_contain_text("entries")
    page.screenshot(path=str(screenshot_dir / "other-agents-renamed-pi.png"))
    # Another .jsonl: handed back to JupyterLab's own viewer, no Pi Session document stays open.
    other = page.locator(".jp-DirListing-item", has=page.get_by_text("data.jsonl", exact=True))
    other.dblclick()
    tab = page.locator(".lm-TabBar-tab.lm-mod-current[data-type='document-title'] .lm-TabBar-tabLabel")
    expect(tab).to_have_text("data.jsonl")
    expect(page.locator(".jp-PiSessionDocument")).to_have_count(1)
    # JupyterLab's own default for .jsonl (its JSON Lines document), not the Pi Session viewer
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget?.node.querySelector('.jp-MimeDocument') !== null")
    page.screenshot(path=str(screenshot_dir / "other-agents-data-jsonl.png"))


def _open_from_panel(page, agent: str):
    _show_sessions(page)
    page.locator(f"#pi-lab-sessions .jp-PiSessions-item[data-agent='{agent}']").click()
    view = page.locator(".jp-PiSessionDocument .pi-lab").last
    expect(view.locator(".pi-row").first).to_be_visible()
    return view


def test_a_claude_code_session_in_the_viewer_is_read_only_with_its_tree(page, agents_lab, screenshot_dir):
    _load(page, agents_lab)
    view = _open_from_panel(page, "claude-code")
    expect(view.locator(".pi-readonly-badge")).to_contain_text("a Claude Code session; pi_lab never writes it.")
    expect(view.locator("button:visible", has_text="Allow writing")).to_have_count(0)
    # a sub-agent's run, folded in under the call that started it, named by its agent id
    expect(view.locator(".pi-row", has_text="sub-agent a0").first).to_be_visible()
    expect(view.locator(".pi-row", has_text="[compaction: 0k tokens]")).to_have_count(0)
    expect(view.locator(".pi-row", has_text="[compaction: 150k tokens]").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "other-agents-claude-viewer.png"))
    # What the model saw after the compaction: the summary and what followed, and no guess at
    # what the file does not record.
    view.locator(".pi-row", has_text="user: Resume: one last check.").first.click()
    view.get_by_text("What the model sees", exact=True).click()
    note = view.locator(".pi-context-unrecorded")
    expect(note).to_contain_text("Claude Code does not record its system prompt or tool schemas")
    pane = note.locator("xpath=..")
    expect(pane).to_contain_text("Resume: one last check.")
    expect(pane).not_to_contain_text("Module 5 is fixed.")
    page.screenshot(path=str(screenshot_dir / "other-agents-claude-context.png"))


def test_a_codex_session_in_the_viewer(page, agents_lab, screenshot_dir):
    _load(page, agents_lab)
    view = _open_from_panel(page, "codex")
    expect(view.locator(".pi-readonly-badge")).to_contain_text("a Codex rollout; pi_lab never writes it.")
    page.screenshot(path=str(screenshot_dir / "other-agents-codex-viewer.png"))


def test_a_claude_code_session_in_the_notebook_widget_is_read_only(page, agents_lab, screenshot_dir):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(f"import pi_lab\nw = pi_lab.open({str(agents_lab['claude_file'])!r})\nw")]
    nbformat.write(nb, agents_lab["root"] / "claude.ipynb")
    _load(page, agents_lab, "claude.ipynb")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'")
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    widget = page.locator(".jp-OutputArea .pi-lab")
    expect(widget.locator(".pi-row").first).to_be_visible(timeout=90_000)
    expect(widget.locator(".pi-readonly-badge")).to_contain_text("a Claude Code session; pi_lab never writes it.")
    expect(widget.locator("button:visible", has_text="Allow writing")).to_have_count(0)
    expect(widget.locator(".pi-row", has_text="sub-agent a0").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "other-agents-claude-widget.png"))
