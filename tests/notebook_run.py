"""Run a notebook headless as a user's kernel runs it (nbclient), for the example tests."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest


def execute_notebook(nb: Any, cwd: Path, *, timeout: int = 300, env: Mapping[str, str] | None = None) -> Any:
    """Execute ``nb`` (a notebook node, changed in place and returned) in the folder ``cwd``.

    The kernel starts with a user's environment: without pytest's PYTEST_CURRENT_TEST (ipykernel
    stops capturing the process's own fd 1/2 when it sees it, which would hide exactly the stderr
    noise a reader sees in JupyterLab), plus ``env`` for this run only."""
    nbclient = pytest.importorskip("nbclient")
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(cwd)}})
    saved = {key: os.environ.get(key) for key in (*(env or {}), "PYTEST_CURRENT_TEST")}
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    os.environ.update(env or {})
    try:
        client.execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb
