"""A real jupyter_server with the pi_lab.server extension, through jupyter_server's test tools.

pytest-jupyter's fixtures (``jp_serverapp``, ``jp_fetch``, ...) are imported into this conftest
rather than enabled with ``pytest_plugins``: its autouse fixtures (a fresh event loop per test,
server cleanup) and its async-test hooks then apply to the tests in this folder only.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F401,F403  (fixtures and hooks, this folder only)
from traitlets.config import Config

from pi_lab.server.handlers import API_ROOT as API

# pi's file name: the header timestamp with ":" and "." as "-", then the session id.
PI_NAME = "2026-01-0{n}T10-00-00-000Z_{stem}.jsonl"


@pytest.fixture
def sessions_dir(tmp_path: Path) -> Path:
    """pi's sessions folder for the server under test (outside its root)."""
    path = tmp_path / "agent" / "sessions"
    path.mkdir(parents=True)
    return path


@pytest.fixture(autouse=True)
def other_agents_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Claude Code's and Codex's folders for the server under test: empty ones of the test's own
    (never the user's ~/.claude or ~/.codex), which a test may fill."""
    claude = tmp_path / "claude-config"
    codex = tmp_path / "codex-home"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    return {"claude": claude, "codex": codex}


@pytest.fixture
def jp_server_config(sessions_dir: Path) -> Config:
    return Config({
        "ServerApp": {"jpserver_extensions": {"pi_lab.server": True}},
        "PiLabConfig": {"sessions_dir": str(sessions_dir)},
    })


@pytest.fixture
def root(jp_root_dir: Path) -> Path:
    """The server's root folder (what JupyterLab's file browser shows)."""
    return jp_root_dir


@pytest.fixture
def copy_fixture(fixtures_dir: Path) -> Callable[..., Path]:
    """Copy a real pi session into ``folder`` under a name that follows pi's pattern."""

    def copy(name: str, folder: Path, dest: str | None = None, n: int = 1) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / (dest or PI_NAME.format(n=n, stem=Path(name).stem))
        shutil.copyfile(fixtures_dir / name, target)
        return target

    return copy


@pytest.fixture
def api(jp_fetch) -> Any:
    """Small helpers over ``jp_fetch`` that return (status, parsed body) and never raise."""

    class Api:
        async def get(self, *parts: str, **params: str) -> tuple[int, Any]:
            response = await jp_fetch(API, *parts, params=params, raise_error=False)
            return response.code, json.loads(response.body or b"null")

        async def post_raw(self, *parts: str, body: Any, headers: dict[str, str] | None = None):
            return await jp_fetch(API, *parts, method="POST", body=json.dumps(body), headers=headers,
                                  raise_error=False)

        async def post(self, *parts: str, **body: Any) -> tuple[int, Any]:
            response = await self.post_raw(*parts, body=body)
            if response.headers.get("Content-Type", "").startswith("application/octet-stream"):
                return response.code, response.body
            return response.code, json.loads(response.body or b"null")

        async def session(self, op: str, path: str, **body: Any) -> Any:
            code, result = await self.post("session", op, path=path, **body)
            assert code == 200, result
            return result

    return Api()
