"""The browser fixtures of tests/browser (a real JupyterLab, Debian chromium through Playwright),
for the notebooks' Run All test here: the same fixtures, not a copy."""

from __future__ import annotations

from browser.conftest import (  # noqa: F401  (fixtures, found by name)
    _skip_reason,
    chromium_browser,
    lab_server,
    open_lab,
    page,
    screenshot_dir,
)
