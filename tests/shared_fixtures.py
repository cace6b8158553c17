"""Where the real pi session fixtures are: the one place every test module asks.

They live outside the repository, in ``../shared/fixtures/pi-sessions`` next to the clone, and a
fresh clone has no ``../shared``: every test that reads them skips when ``FIXTURES_PRESENT`` is
false. ``PI_LAB_FIXTURES=/nowhere pytest ...`` runs the suite as such a clone would (a folder
that does not exist hides them; another folder takes their place).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES_DIR = Path(os.environ.get("PI_LAB_FIXTURES")
                    or REPO_ROOT / ".." / "shared" / "fixtures" / "pi-sessions").resolve()
FIXTURES_PRESENT = FIXTURES_DIR.is_dir()
NO_FIXTURES = f"pi session fixtures not found at {FIXTURES_DIR}"
