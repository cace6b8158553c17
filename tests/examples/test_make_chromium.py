"""`make chromium` (run by `make test` and .ci/run) installs the CJK and emoji fonts the screenshots
need, also on a machine that already has chromium.

dpkg and apt-get are replaced by stand-ins on PATH that answer "installed or not" from a list and log
what would be installed, so the test runs the real Makefile recipe without touching the system.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FONTS = ("fonts-noto-cjk", "fonts-noto-color-emoji")


def _run_make(tmp_path: Path, installed: set[str]) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    (tmp_path / "installed").write_text("\n".join(sorted(installed)) + "\n")
    (bin_dir / "dpkg").write_text(
        "#!/bin/sh\n"
        '[ "$1" = "-s" ] || exit 2\n'
        f'grep -qx "$2" "{tmp_path / "installed"}"\n')
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> "{log}"\n')
    for tool in ("dpkg", "apt-get"):
        (bin_dir / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "chromium", "SUDO="],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.skipif(not os.access("/usr/bin/chromium", os.X_OK), reason="needs an installed /usr/bin/chromium")
def test_fonts_are_installed_when_chromium_already_is(tmp_path):
    calls = _run_make(tmp_path, installed={"chromium"})
    install = [c.split() for c in calls if c.split()[:1] == ["install"]]
    assert len(install) == 1, calls
    assert set(FONTS) <= set(install[0]) and "chromium" not in install[0]


def test_nothing_is_installed_when_everything_is_there(tmp_path):
    if not os.access("/usr/bin/chromium", os.X_OK):
        pytest.skip("needs an installed /usr/bin/chromium")
    assert _run_make(tmp_path, installed={"chromium", *FONTS}) == []
