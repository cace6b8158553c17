"""The differential tier: pi_lab compared with pi itself (Node) on the same files.

Opt-in by nature: it needs Node and the pi package in bench/.pi. When they are missing the
tests skip; with PI_LAB_DIFFERENTIAL=1 the package is installed first (npm must be reachable).
Select or deselect with `-m differential` / `-m "not differential"`.
"""

from __future__ import annotations


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "differential: compares pi_lab with pi 1.6.0 run under Node (skips without node and bench/.pi; "
        "PI_LAB_DIFFERENTIAL=1 installs pi on first use)",
    )
