#!/usr/bin/env python3
"""Benchmark of the session widget (issue 5), in the kernel and in headless chromium.

    python bench/widget_bench.py [--session bench/out/s100k.jsonl] [--compare bench/out/s10k.jsonl]
                                 [--appends 100] [--no-browser] [--out bench/out/widget_results.md]

Figures, with the issue's budgets:

* kernel: time to build the widget, the state sent when it is displayed (JSON + binary buffers,
  budget < 2 MB), the first text request, and for appended entries the kernel time of
  ``append + sync`` (budget < 20 ms) and the bytes the widget sends (budget < 2 KB);
* browser (real JupyterLab + /usr/bin/chromium): display → interactive time (budget < 2 s), the
  websocket bytes received while displaying, scroll frame times and selection (keydown) times
  (budget: one frame, 16.7 ms), and one appended entry measured on the websocket;
* context views (issue 13): the ``timeline`` request and ``context_diff`` of two leaves in the
  kernel (budget < 200 ms for the diff), and in the browser the context timeline strip drawn
  after the tree (budget: within 300 ms of the tree's first rows);
* pi's own viewer for comparison: ``exportFromFile`` of pi 1.6.0 (bench/.pi, see
  bench/pi_runner/setup.sh) on the ``--compare`` session: HTML size, load time in chromium, and a
  screenshot of its tree sidebar next to ours.

Session files are copied to a temporary folder first (opening may migrate a file in place).
Results go to ``--out`` (Markdown) and screenshots to ``--screens``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
PI_EXPORT = HERE / ".pi" / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "core" / "export-html" / "index.js"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def user_message(n: int) -> dict:
    return {"role": "user", "content": f"step {n}: please look at the parser again " + "and check the edge cases " * 4,
            "timestamp": 1_780_000_000_000 + n}


def assistant_message(n: int) -> dict:
    text = f"Answer {n}: " + "the parser handles this case by skipping the torn line; " * 10
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
            "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop",
            "usage": {"input": 40_000 + n, "output": 150, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 40_150 + n,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "timestamp": 1_780_000_000_500 + n}


# ---------------------------------------------------------------------------------------------
# kernel side


def kernel_figures(session: Path, appends: int) -> dict:
    from ipywidgets.widgets.widget import _remove_buffers

    from pi_lab.widget import SessionWidget
    from pi_lab.view.payload import read_request

    work = Path(tempfile.mkdtemp(prefix="widget-bench-"))
    copy = Path(shutil.copyfile(session, work / session.name))
    t0 = time.perf_counter()
    w = SessionWidget(copy, follow=False)
    build_s = time.perf_counter() - t0
    state, _paths, buffers = _remove_buffers(w.get_state())
    state_json = len(json.dumps(state, separators=(",", ":")).encode())
    buffer_bytes = sum(len(b) for b in buffers)
    esm = len(state.get("_esm", "").encode()) if isinstance(state.get("_esm"), str) else 0
    rows = read_request(w.view, "rows", {"start": 0, "end": 100, "version": w.view.rows.version})
    first_rows = len(json.dumps(rows, ensure_ascii=False).encode())

    sent: list[int] = []

    def capture(msg, buffers=None):
        sent.append(len(json.dumps(msg, separators=(",", ":"), default=str).encode()) + sum(len(b) for b in buffers or []))

    w._send = capture
    times: list[float] = []
    sizes: list[int] = []
    kinds: dict[str, int] = {}
    catch_up: list[int] = []

    async def run() -> None:
        sm = w.session_manager
        if getattr(sm, "read_only", False):
            sm.make_writable()  # the widget opens a file read-only; the appends are an explicit write
        for n in range(appends):
            message = user_message(n) if n % 2 == 0 else assistant_message(n)
            before = len(sent)
            t = time.perf_counter()
            sm.append_message(message)
            kind = w.sync()
            times.append((time.perf_counter() - t) * 1000)
            sizes.append(sum(sent[before:]))
            kinds[kind] = kinds.get(kind, 0) + 1
            await asyncio.sleep(0)
        before = len(sent)
        w._publish_state()  # what the traitlets send once the burst is over
        catch_up.append(sum(sent[before:]))
        w.close()

    asyncio.run(run())
    shutil.rmtree(work, ignore_errors=True)
    return {
        "entries": w.session_manager.get_entry_count(),
        "rows": len(w.view.rows.rows),
        "build_s": build_s,
        "display_state_json": state_json,
        "display_buffers": buffer_bytes,
        "display_total": state_json + buffer_bytes,
        "esm": esm,
        "first_rows_bytes": first_rows,
        "append_ms_median": statistics.median(times),
        "append_ms_p95": percentile(times, 0.95),
        "append_ms_max": max(times),
        "append_bytes_median": statistics.median(sizes),
        "append_bytes_max": max(sizes),
        "append_kinds": kinds,
        "catch_up_bytes": catch_up[0] if catch_up else None,
    }


def context_figures(session: Path, repeat: int = 5) -> dict:
    """Kernel time of the context views on ``session``: the timeline of the current branch (as
    the ``timeline`` request sends it) and ``context_diff`` of two leaves on different branches:
    the current leaf and the leaf whose path shares the least with it (the largest diff)."""
    from pi_lab.session import SessionManager
    from pi_lab.view import context_diff
    from pi_lab.view.payload import SessionView, read_request

    work = Path(tempfile.mkdtemp(prefix="widget-bench-context-"))
    try:
        copy = Path(shutil.copyfile(session, work / session.name))
        sm = SessionManager.open(copy)
        view = SessionView.open(sm)
        leaf = sm.leaf_id
        on_path = {e["id"] for e in sm.get_branch()}
        parents = {e.get("parentId") for e in sm.get_entries()}
        leaves = [e["id"] for e in sm.get_entries() if e["id"] not in parents and e["id"] != leaf]
        # the other leaf: the longest branch off the current path (a real "two branches" diff)
        other = max(leaves, key=lambda i: sum(1 for e in sm.get_branch(i) if e["id"] not in on_path), default=leaf)

        def timed(fn) -> tuple[list[float], object]:
            times, result = [], None
            for _ in range(repeat):
                t = time.perf_counter()
                result = fn()
                times.append((time.perf_counter() - t) * 1000)
            return times, result

        from pi_lab.view import timeline_requests

        def cold():
            timeline_requests._CACHE.clear()  # a first display: the walk of the whole branch
            return read_request(view, "timeline", {})

        timeline_ms, reply = timed(cold)
        diff_ms, diff = timed(lambda: context_diff(sm, leaf, other))
        # a live run: one user message and one reply appended, then the strip's follow-up request
        if getattr(sm, "read_only", False):
            sm.make_writable()
        append_ms: list[float] = []
        since = {"serial": reply["serial"], "calls": reply["call_count"], "markers": len(reply["markers"])}
        sizes: list[int] = []
        for n in range(repeat):
            sm.append_message(user_message(n))
            sm.append_message(assistant_message(n))
            t = time.perf_counter()
            more = read_request(view, "timeline", {"since": since})
            append_ms.append((time.perf_counter() - t) * 1000)
            sizes.append(len(json.dumps(more, separators=(",", ":")).encode()))
            since = {"serial": more["serial"], "calls": more["call_count"], "markers": since["markers"] + len(more["markers"])}
        return {
            "branch_entries": len(on_path),
            "timeline_calls": reply["call_count"],
            "timeline_bytes": len(json.dumps(reply, separators=(",", ":")).encode()),
            "timeline_ms_median": statistics.median(timeline_ms),
            "timeline_ms_max": max(timeline_ms),
            "timeline_append_ms_median": statistics.median(append_ms),
            "timeline_append_bytes_median": statistics.median(sizes),
            "diff_leaves": (leaf, other),
            "diff_sizes": (len(diff["both"]), len(diff["only_a"]), len(diff["only_b"])),
            "diff_ms_median": statistics.median(diff_ms),
            "diff_ms_max": max(diff_ms),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# browser side


class Lab:
    """A JupyterLab server on a free port, as in tests/browser/conftest.py."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="widget-bench-lab-"))
        self.root = self.base / "root"
        settings = self.base / "settings" / "@jupyterlab" / "apputils-extension"
        for d in (self.root, settings, self.base / "config", self.base / "runtime", self.base / "ws"):
            d.mkdir(parents=True, exist_ok=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.token = secrets.token_hex(16)
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(self.base / "config"), JUPYTER_RUNTIME_DIR=str(self.base / "runtime"))
        self.log = open(self.base / "server.log", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={self.port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
             f"--ServerApp.root_dir={self.root}", "--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             f"--LabApp.workspaces_dir={self.base / 'ws'}", f"--LabApp.user_settings_dir={self.base / 'settings'}",
             "--LabApp.expose_app_in_browser=True"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=self.base)
        import httpx

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(self.url("api/status"), timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("jupyter lab did not start; see " + str(self.base / "server.log"))
            time.sleep(0.2)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.base, ignore_errors=True)


KERNEL_EVAL = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, store_history: false});
  let out = '';
  future.onIOPub = msg => { if (msg.header.msg_type === 'stream') out += msg.content.text;
                            if (msg.header.msg_type === 'error') out += 'ERROR ' + msg.content.evalue; };
  await future.done;
  return out;
}"""

WATCH_DISPLAY = """() => {
  const b = window.__bench = {t0: performance.now()};
  const obs = new MutationObserver(() => {
    if (!b.render && document.querySelector('.pi-lab')) b.render = performance.now();
    const pos = document.querySelector('.pi-lab .pi-position');
    const text = document.querySelector('.pi-lab .pi-row .pi-row-text');
    if (!b.rows && text && text.textContent !== '…' && pos && pos.textContent.includes('/')) {
      b.rows = performance.now();
      obs.disconnect();
    }
  });
  obs.observe(document.body, {subtree: true, childList: true, characterData: true});
}"""

SCROLL = """async () => {
  const el = document.querySelector('.pi-lab .pi-rows');
  const longTasks = [];
  const po = new PerformanceObserver(list => list.getEntries().forEach(e => longTasks.push(e.duration)));
  try { po.observe({entryTypes: ['longtask']}); } catch (e) {}
  const deltas = [];
  const renders = [];
  let last = performance.now();
  for (let i = 0; i < 150; i++) {
    el.scrollTop += 660;  // 30 rows per frame
    await new Promise(r => requestAnimationFrame(r));
    const now = performance.now();
    deltas.push(now - last);
    renders.push(Number(el.dataset.renderMs || 0));
    last = now;
  }
  po.disconnect();
  return {deltas, renders, longTasks};
}"""

SELECT = """async () => {
  const el = document.querySelector('.pi-lab .pi-rows');
  el.focus();
  const costs = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    el.dispatchEvent(new KeyboardEvent('keydown', {key: i % 50 === 49 ? 'PageDown' : 'ArrowDown', bubbles: true}));
    void el.offsetHeight;  // force the layout the key caused
    costs.push(performance.now() - t);
    await new Promise(r => requestAnimationFrame(r));
  }
  return costs;
}"""


def browser_figures(session: Path, screens: Path, name: str) -> dict:
    import nbformat
    from playwright.sync_api import sync_playwright

    lab = Lab()
    try:
        copy = Path(shutil.copyfile(session, lab.root / session.name))
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        # pi_lab.open as a user calls it (the widget's modules imported by the first cell, so the
        # figure is the session's own cost, not the first import of ipywidgets and anywidget).
        nb.cells = [nbformat.v4.new_code_cell("import time\nimport pi_lab\nfrom pi_lab.widget import SessionWidget"),
                    nbformat.v4.new_code_cell(
                        f"t = time.perf_counter()\nw = pi_lab.open({str(copy)!r}, follow=False)\n"
                        "print('build', time.perf_counter() - t)\ndisplay(w)")]
        nbformat.write(nb, lab.root / "bench.ipynb")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            page.set_default_timeout(300_000)
            frames: list[tuple[float, int, bool]] = []

            def on_ws(ws):
                def received(payload):
                    data = payload if isinstance(payload, bytes) else payload.encode()
                    frames.append((time.perf_counter(), len(data), b"comm_msg" in data))
                ws.on("framereceived", received)

            page.on("websocket", on_ws)
            page.goto(lab.url(f"lab/workspaces/b{secrets.token_hex(3)}/tree/bench.ipynb"))
            page.wait_for_function("() => window.jupyterapp !== undefined")
            page.evaluate("async () => { await window.jupyterapp.restored; }")
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'")
            page.evaluate("() => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = 0; }")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
            page.evaluate("() => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = 1; }")
            page.evaluate(WATCH_DISPLAY)
            wall0 = time.perf_counter()
            page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-cell'); }")
            page.wait_for_function("() => window.__bench.rows !== undefined", timeout=300_000)
            wall1 = time.perf_counter()
            marks = page.evaluate("() => window.__bench")
            kernel_rss = page.evaluate(KERNEL_EVAL, "import resource as _r\nprint(int(open('/proc/self/statm').read().split()[1]) "
                                                    "* 4096, _r.getrusage(_r.RUSAGE_SELF).ru_maxrss * 1024)").split()
            build_out = page.locator(".jp-OutputArea-output", has_text="build").first.inner_text()
            build_ms = float(build_out.split()[-1]) * 1000
            display_bytes = sum(size for t, size, _ in frames if wall0 <= t <= wall1 + 0.5)
            # the context timeline strip: when its first drawing landed, against the tree's rows
            page.wait_for_function("() => document.querySelector('.pi-lab .pi-timeline')?.dataset.drawn !== undefined",
                                   timeout=120_000)
            strip = page.evaluate("() => { const d = document.querySelector('.pi-lab .pi-timeline').dataset;"
                                  " return {drawn: Number(d.drawn), fetch: Number(d.fetchMs), draw: Number(d.drawMs || 0),"
                                  " calls: Number(d.calls)}; }")
            # interactive: a key moves the selection right away
            page.locator(".pi-lab .pi-rows").focus()
            page.keyboard.press("ArrowUp")
            page.wait_for_function("() => document.querySelector('.pi-lab .pi-row.pi-selected') !== null")
            page.screenshot(path=str(screens / f"{name}-widget.png"))
            scroll = page.evaluate(SCROLL)
            select = page.evaluate(SELECT)
            page.screenshot(path=str(screens / f"{name}-widget-scrolled.png"))
            # one appended entry on the wire
            # A burst of 20 appended entries, 100 ms apart, as a live agent run produces them: each
            # sends one delta; the traitlets catch up once, 0.5 s after the last one.
            # (a session opened from a path is read-only until writing is allowed)
            code = ("import asyncio as _a, time as _t\n_times = []\nw.allow_writes()\n"
                    "async def _burst():\n"
                    "    for _n in range(20):\n"
                    "        _m = (" + repr(user_message(0)) + " if _n % 2 == 0 else " + repr(assistant_message(1)) + ")\n"
                    "        _s = _t.perf_counter(); w.session_manager.append_message(dict(_m)); w.sync()\n"
                    "        _times.append((_t.perf_counter() - _s) * 1000)\n"
                    "        await _a.sleep(0.1)\n"
                    "await _burst()\nprint(' '.join(f'{x:.3f}' for x in _times))")
            page.wait_for_timeout(1500)
            before = len(frames)
            out = page.evaluate(KERNEL_EVAL, code)
            page.wait_for_timeout(1500)
            burst = [(size, frames_payload) for frames_payload, (_, size, is_comm) in
                     zip(range(before, len(frames)), frames[before:]) if is_comm]
            comm_sizes = [size for size, _ in burst]
            kernel_ms = [float(x) for x in out.split()]
            browser.close()
        deltas = scroll["deltas"][3:]
        return {
            "build_out": build_out.strip(),
            "kernel_rss": int(kernel_rss[0]),
            "kernel_max_rss": int(kernel_rss[1]),
            "run_to_render_ms": marks["render"] - marks["t0"],
            "run_to_interactive_ms": marks["rows"] - marks["t0"],
            "display_ws_bytes": display_bytes,
            "scroll_frame_ms_median": statistics.median(deltas),
            "scroll_frame_ms_p95": percentile(deltas, 0.95),
            "scroll_frame_ms_max": max(deltas),
            "scroll_long_tasks": len(scroll["longTasks"]),
            "select_ms_median": statistics.median(select),
            "select_ms_p95": percentile(select, 0.95),
            "select_ms_max": max(select),
            "build_ms": build_ms,
            "display_after_build_ms": marks["rows"] - marks["t0"] - build_ms,
            "render_ms_max": max(scroll["renders"]),
            "render_ms_p95": percentile(scroll["renders"], 0.95),
            "burst_comm_frames": len(comm_sizes),
            "burst_comm_bytes": sum(comm_sizes),
            "append_ws_bytes_per_entry": sum(comm_sizes) / 20,
            "append_ws_delta_median": statistics.median(sorted(comm_sizes)[: 20]) if len(comm_sizes) >= 20 else None,
            "append_ws_catch_up": max(comm_sizes) if comm_sizes else None,
            "append_kernel_ms_median": statistics.median(kernel_ms),
            "append_kernel_ms_max": max(kernel_ms),
            "timeline_after_rows_ms": strip["drawn"] - marks["rows"],
            "timeline_request_ms": strip["fetch"],
            "timeline_draw_ms": strip["draw"],
            "timeline_calls": strip["calls"],
        }
    finally:
        lab.close()


WATCH_VIEWER = """() => {
  const b = window.__viewer = {t0: performance.now()};
  const obs = new MutationObserver(() => {
    const doc = document.querySelector('.jp-MainAreaWidget:not(.lm-mod-hidden) .pi-lab');
    if (!doc) return;
    const pos = doc.querySelector('.pi-position');
    const text = doc.querySelector('.pi-row .pi-row-text');
    if (!b.rows && text && text.textContent !== '…' && pos && pos.textContent.includes('/')) {
      b.rows = performance.now();
      obs.disconnect();
    }
  });
  obs.observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def viewer_figures(session: Path, repeat: int = 2) -> dict:
    """The JupyterLab viewer (the "Pi Session" document, served by pi_lab.server): open the file
    as a double-click does, until its first rows are drawn with text. The first open is cold
    (the server reads and lays out the file); later opens of the same unchanged file are served
    from the server's cache (a fresh Lab each time would measure the server's start instead)."""
    from playwright.sync_api import sync_playwright

    lab = Lab()
    try:
        copy = Path(shutil.copyfile(session, lab.root / session.name))
        times: list[float] = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            for _ in range(repeat):
                page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
                page.set_default_timeout(300_000)
                page.goto(lab.url(f"lab/workspaces/v{secrets.token_hex(3)}/tree"))
                page.wait_for_function("() => window.jupyterapp !== undefined")
                page.evaluate("async () => { await window.jupyterapp.restored; }")
                page.evaluate(WATCH_VIEWER)
                page.evaluate(f"() => {{ void window.jupyterapp.commands.execute('docmanager:open', "
                              f"{{path: {copy.name!r}, factory: 'Pi Session'}}); }}")
                page.wait_for_function("() => window.__viewer.rows !== undefined", timeout=300_000)
                marks = page.evaluate("() => window.__viewer")
                times.append(marks["rows"] - marks["t0"])
                page.close()
            browser.close()
        return {"open_to_rows_ms": times}
    finally:
        lab.close()


def pi_export_figures(session: Path, screens: Path) -> dict | None:
    if not PI_EXPORT.exists() or shutil.which("node") is None:
        return None
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="pi-export-"))
    copy = Path(shutil.copyfile(session, work / session.name))
    html = work / "export.html"
    script = work / "export.mjs"
    script.write_text("import { pathToFileURL } from 'node:url';\n"
                      "const mod = await import(pathToFileURL(process.argv[2]).href);\n"
                      "const t = Date.now(); await mod.exportFromFile(process.argv[3], { outputPath: process.argv[4] });\n"
                      "console.log(Date.now() - t);\n")
    run = subprocess.run(["node", str(script), str(PI_EXPORT), str(copy), str(html)], capture_output=True, text=True,
                         timeout=600)
    if run.returncode != 0:
        return {"error": run.stderr[-500:]}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        page.set_default_timeout(300_000)
        t = time.perf_counter()
        page.goto(html.as_uri(), wait_until="load")
        page.wait_for_function("() => document.querySelectorAll('#tree-container .tree-node').length > 0")
        load_s = time.perf_counter() - t
        nodes = page.evaluate("() => document.querySelectorAll('#tree-container .tree-node').length")
        page.screenshot(path=str(screens / "pi-export-sidebar.png"))
        browser.close()
    size = html.stat().st_size
    shutil.rmtree(work, ignore_errors=True)
    return {"export_ms": int(run.stdout.strip() or 0), "html_bytes": size, "load_s": load_s, "tree_nodes": nodes}


# ---------------------------------------------------------------------------------------------


def mb(n: float) -> str:
    return f"{n / 1_000_000:.2f} MB"


def report(args, session_k, session_b, compare_k, compare_b, pi) -> str:
    lines = [
        "# Session widget benchmark (issue 5)",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- command: `python bench/widget_bench.py {' '.join(sys.argv[1:])}`",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, chromium {CHROMIUM}",
        "",
        f"## {args.session.name}: {session_k['entries']} entries, {session_k['rows']} rows in the default view",
        "",
        "| figure | measured | budget |",
        "| --- | ---: | ---: |",
        f"| widget build in the kernel (open + layout) | {session_k['build_s']:.2f} s | — |",
        f"| state sent at display (JSON {mb(session_k['display_state_json'])}, of which _esm {session_k['esm'] / 1000:.0f} kB; "
        f"binary {mb(session_k['display_buffers'])}) | {mb(session_k['display_total'])} | < 2 MB |",
        f"| first 100 row texts | {session_k['first_rows_bytes'] / 1000:.1f} kB | — |",
        f"| append + sync in the kernel, median / p95 / max ({args.appends} entries) | "
        f"{session_k['append_ms_median']:.2f} / {session_k['append_ms_p95']:.2f} / {session_k['append_ms_max']:.2f} ms | < 20 ms |",
        f"| bytes the widget sends per appended entry (one delta), median / max; then once per burst | "
        f"{session_k['append_bytes_median']:.0f} / {session_k['append_bytes_max']} B; {session_k['catch_up_bytes']} B | < 2 KB |",
    ]
    if session_b:
        lines += [
            f"| display → first rows drawn with text (headless chromium, real JupyterLab; the cell's run minus the "
            f"kernel build of {session_b['build_ms'] / 1000:.2f} s) | {session_b['display_after_build_ms']:.0f} ms | < 2000 ms |",
            f"| `pi_lab.open()` → first rows drawn (the cell's run: kernel build + display) | "
            f"{session_b['run_to_interactive_ms']:.0f} ms | < 1500 ms |",
            f"| kernel memory with the session displayed: RSS / peak | {session_b['kernel_rss'] / 2**20:.0f} / "
            f"{session_b['kernel_max_rss'] / 2**20:.0f} MB | < 600 MB |",
            f"| JupyterLab viewer (\"Pi Session\" document): open → first rows drawn, cold / from the server's cache | "
            f"{' / '.join(f'{t:.0f}' for t in session_b['viewer']['open_to_rows_ms'])} ms | < 1500 ms |",
            f"| websocket bytes received for the cell (state, view, first rows) | {mb(session_b['display_ws_bytes'])} | < 2 MB |",
            f"| scroll (30 rows per frame): frame interval median / p95 / max | {session_b['scroll_frame_ms_median']:.1f} / "
            f"{session_b['scroll_frame_ms_p95']:.1f} / {session_b['scroll_frame_ms_max']:.1f} ms; long tasks: "
            f"{session_b['scroll_long_tasks']} | < 16.7 ms |",
            f"| scroll: the list's own redraw per frame p95 / max | {session_b['render_ms_p95']:.2f} / "
            f"{session_b['render_ms_max']:.2f} ms | < 16.7 ms |",
            f"| selection (keydown + layout) median / p95 / max | {session_b['select_ms_median']:.2f} / "
            f"{session_b['select_ms_p95']:.2f} / {session_b['select_ms_max']:.2f} ms | < 16.7 ms |",
            f"| appended entries on the websocket: a burst of 20 → {session_b['burst_comm_frames']} comm frames, "
            f"{session_b['burst_comm_bytes']} B; one delta (median) / the traitlet catch-up | "
            f"{session_b['append_ws_delta_median']:.0f} / {session_b['append_ws_catch_up']} B "
            f"({session_b['append_ws_bytes_per_entry']:.0f} B per entry) | < 2 KB |",
            f"| append + sync in the Lab kernel, median / max | {session_b['append_kernel_ms_median']:.2f} / "
            f"{session_b['append_kernel_ms_max']:.2f} ms | < 20 ms |",
        ]
    if session_b and "timeline_after_rows_ms" in session_b:
        after = session_b["timeline_after_rows_ms"]
        lines.append(
            f"| context timeline strip ({session_b['timeline_calls']} calls) drawn after the tree's first rows "
            f"(negative: before them); its request round trip / the canvas drawing | "
            f"{after:.0f} ms; {session_b['timeline_request_ms']:.0f} / {session_b['timeline_draw_ms']:.1f} ms | < 300 ms |")
    context = getattr(args, "context_k", None)
    if context:
        lines += [
            f"| `timeline` request in the kernel ({context['timeline_calls']} calls on a {context['branch_entries']}-entry "
            f"branch, {context['timeline_bytes'] / 1000:.0f} kB JSON), median / max | {context['timeline_ms_median']:.0f} / "
            f"{context['timeline_ms_max']:.0f} ms | — |",
            f"| the same after a user message and a reply were appended (the walk continues; `since` sends the new "
            f"call only): kernel median, answer size | {context['timeline_append_ms_median']:.1f} ms, "
            f"{context['timeline_append_bytes_median']:.0f} B | — |",
            f"| `context_diff` of two leaves ({context['diff_leaves'][0]} vs {context['diff_leaves'][1]}: "
            f"{context['diff_sizes'][0]} in both, {context['diff_sizes'][1]} only in A, {context['diff_sizes'][2]} only in B), "
            f"median / max | {context['diff_ms_median']:.0f} / {context['diff_ms_max']:.0f} ms | < 200 ms |",
        ]
    if compare_k:
        lines += ["", f"## {args.compare.name} beside pi's own HTML export", "",
                  "| | pi 1.6.0 `exportFromFile` | pi_lab widget |", "| --- | ---: | ---: |"]
        if pi and "error" not in pi:
            lines.append(f"| bytes to the browser | {mb(pi['html_bytes'])} (one HTML page) | "
                         f"{mb(compare_b['display_ws_bytes']) if compare_b else mb(compare_k['display_total'])} |")
            ours = f"{compare_b['display_after_build_ms'] / 1000:.2f} s (display → rows)" if compare_b else "—"
            lines.append(f"| load until the tree is drawn | {pi['load_s']:.2f} s | {ours} |")
            lines.append(f"| tree rows in the DOM | {pi['tree_nodes']} | < 120 (virtualized) |")
            lines.append(f"| export / widget build | {pi['export_ms'] / 1000:.2f} s (node) | {compare_k['build_s']:.2f} s (kernel) |")
        else:
            lines.append(f"| pi export | not available ({(pi or {}).get('error', 'bench/.pi not installed')}) | |")
    lines += ["", f"Screenshots: {args.screens}/"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--session", type=Path, default=HERE / "out" / "s100k.jsonl")
    parser.add_argument("--compare", type=Path, default=HERE / "out" / "s10k.jsonl")
    parser.add_argument("--appends", type=int, default=100)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--context-only", action="store_true",
                        help="only the context views' figures (kernel, and the strip in the browser); no report file")
    parser.add_argument("--viewer-only", action="store_true",
                        help="only the JupyterLab viewer's open -> first rows (cold, then from the server's cache) "
                             "and the load average around it; no report file")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "widget_results.md")
    parser.add_argument("--screens", type=Path, default=Path("/tmp/pi-lab-bench"))
    args = parser.parse_args()
    args.screens.mkdir(parents=True, exist_ok=True)
    for path, entries in ((args.session, 100_000), (args.compare, 10_000)):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, str(HERE / "generate.py"), "--entries", str(entries), "--out", str(path)],
                           check=True)
    if args.viewer_only:
        load_before = os.getloadavg()
        viewer = viewer_figures(args.session, repeat=3)
        load_after = os.getloadavg()
        print(json.dumps({"session": args.session.name, "open_to_rows_ms (cold, then cached)": viewer["open_to_rows_ms"],
                          "load_before": load_before, "load_after": load_after}, indent=1))
        return
    print("context views:", args.session.name, flush=True)
    args.context_k = context_figures(args.session)
    print(json.dumps(args.context_k, indent=1), flush=True)
    if args.context_only:
        session_b = None if args.no_browser else browser_figures(args.session, args.screens, "s100k")
        keys = ("timeline_after_rows_ms", "timeline_request_ms", "timeline_draw_ms", "timeline_calls",
                "display_after_build_ms")
        print(json.dumps({k: session_b[k] for k in keys} if session_b else None, indent=1))
        return
    print("kernel figures:", args.session.name, flush=True)
    session_k = kernel_figures(args.session, args.appends)
    print(json.dumps(session_k, indent=1), flush=True)
    compare_k = kernel_figures(args.compare, 10)
    session_b = compare_b = pi = None
    if not args.no_browser:
        print("browser figures …", flush=True)
        session_b = browser_figures(args.session, args.screens, "s100k")
        session_b["viewer"] = viewer_figures(args.session)
        print(json.dumps(session_b, indent=1), flush=True)
        compare_b = browser_figures(args.compare, args.screens, "s10k")
        pi = pi_export_figures(args.compare, args.screens)
        print(json.dumps(pi, indent=1), flush=True)
    text = report(args, session_k, session_b, compare_k, compare_b, pi)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
