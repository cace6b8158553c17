"""A real JupyterLab server and Debian's chromium, driven by Playwright, for the `browser` tests.

Every test in this folder is marked `browser` (deselect with `-m "not browser"`). The tests are
skipped when /usr/bin/chromium or the playwright package is missing; Playwright never downloads a
browser here, it always launches the system chromium.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # required as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
SERVER_START_BUDGET_S = 60.0
DEFAULT_TIMEOUT_MS = 60_000
HERE = Path(__file__).resolve().parent


def _skip_reason() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees every collected item, so act only on the ones in this folder.
    reason = _skip_reason()
    for item in items:
        # this folder's tests, and any test elsewhere that uses its browser
        uses_browser = "chromium_browser" in getattr(item, "fixturenames", ())
        if HERE not in Path(item.path).resolve().parents and not uses_browser:
            continue
        item.add_marker(pytest.mark.browser)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
    # (They used to be moved to the end of the run, after every test that starts its own event
    # loop; a browser for each module, see chromium_browser, makes the order free, which
    # pytest-xdist's workers need.)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabServer:
    base_url: str
    token: str
    root_dir: Path
    log_path: Path
    sessions_dir: Path | None = None  # pi's sessions folder the server lists (PiLabConfig.sessions_dir)

    def url(self, path: str = "lab", **query: str) -> str:
        """A URL on the server with the token attached, e.g. url("lab/tree/x.ipynb")."""
        params = "&".join([f"token={self.token}", *(f"{k}={v}" for k, v in query.items())])
        return f"{self.base_url}/{path.lstrip('/')}?{params}"

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A JupyterLab server on a free loopback port with a random token and throw-away dirs."""
    yield from serve_lab(tmp_path_factory.mktemp("lab"))


def serve_lab(base: Path) -> Iterator[LabServer]:
    """Run JupyterLab on ``base``: the file browser's root is ``base/root``, pi's sessions folder
    ``base/pi-agent/sessions``, Claude Code's ``base/claude`` and Codex's ``base/codex`` (a test
    may put sessions there first); every other folder is a throw-away one under ``base``."""
    import httpx

    root_dir = base / "root"
    settings_dir = base / "user-settings"
    notification = settings_dir / "@jupyterlab" / "apputils-extension"
    # pi's sessions folder for the Pi Sessions panel: a throw-away one, never the real ~/.pi.
    sessions_dir = base / "pi-agent" / "sessions"
    for d in (root_dir, notification, sessions_dir, base / "config", base / "runtime", base / "workspaces"):
        d.mkdir(parents=True, exist_ok=True)
    # Keep the "get notified about Jupyter news?" toast from covering the page.
    (notification / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))

    port = _free_port()
    token = secrets.token_hex(16)
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        IPYTHONDIR=str(base / "ipython"),
        PI_CODING_AGENT_DIR=str(base / "pi-agent"),
        # the panel also lists Claude Code's and Codex's folders: never the machine's real ones
        CLAUDE_CONFIG_DIR=str(base / "claude"),
        CODEX_HOME=str(base / "codex"),
    )
    cmd = [
        sys.executable, "-m", "jupyter", "lab",
        "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
        f"--LabApp.user_settings_dir={settings_dir}",
        "--LabApp.expose_app_in_browser=True",
        f"--PiLabConfig.sessions_dir={sessions_dir}",
    ]
    log_path = base / "server.log"
    server = LabServer(f"http://127.0.0.1:{port}", token, root_dir, log_path, sessions_dir)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=base)
    try:
        deadline = time.monotonic() + SERVER_START_BUDGET_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                if httpx.get(server.url("api/status"), timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab did not answer in {SERVER_START_BUDGET_S:.0f} s:\n{server.log_tail()}")
            time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[object]:
    """Debian's chromium launched headless by Playwright, one for each test module.

    Not one for the session: Playwright's sync API keeps its event loop marked as running in the
    main thread while it is open, so every later test in the process that calls ``asyncio.run``
    (the model clients, the agent over HTTP, jupyter_server's fixtures) would fail. Under
    pytest-xdist a worker runs browser modules and such tests in any order."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium_browser) -> Iterator[object]:
    """A fresh page in its own browser context, with generous timeouts for a 2-core machine."""
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    """Where browser tests save screenshots (PI_LAB_SCREENSHOTS, default /tmp/pi-lab-screenshots)."""
    path = Path(os.environ.get("PI_LAB_SCREENSHOTS", "/tmp/pi-lab-screenshots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def open_lab(page, lab_server: LabServer):
    """Return a function that loads JupyterLab in `page` and waits until the app is restored.

    `open_lab()` shows the file browser; `open_lab("x.ipynb")` also opens a document. Each call
    uses a new workspace, so tabs left open by an earlier test are not restored.
    """

    def load(path: str = "") -> None:
        route = f"lab/workspaces/t{secrets.token_hex(4)}" + (f"/tree/{path}" if path else "")
        page.goto(lab_server.url(route))
        page.wait_for_function("() => window.jupyterapp !== undefined")
        page.evaluate("async () => { await window.jupyterapp.restored; }")

    return load
