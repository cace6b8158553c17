"""Shared pytest fixtures for pi_lab.

The conformance fixtures are real pi session files kept outside the repository, in
`../shared/fixtures/pi-sessions` next to the clone. They are read-only, and opening a file may
repair it, so tests work on copies made by `fixture_copy`. Every test that reads them skips when
they are absent (a fresh clone): `PI_LAB_FIXTURES=/nowhere pytest ...` runs the suite as a clone
without `../shared` would (tests/shared_fixtures.py, where every test module finds them).

jupyter_server's own test fixtures (`jp_fetch`, `jp_serverapp`, ...) come with the `test` extra
(pytest-jupyter[server]) but are not loaded here, because that plugin adds autouse fixtures to
every test. A suite that needs them can add
`pytest_plugins = ["pytest_jupyter.jupyter_server"]` to this file.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from shared_fixtures import FIXTURES_DIR, FIXTURES_PRESENT, NO_FIXTURES, REPO_ROOT

__all__ = ["FIXTURES_DIR", "REPO_ROOT"]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The root of this checkout."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The folder of real pi session files; the test is skipped when it is not beside the clone."""
    if not FIXTURES_PRESENT:
        pytest.skip(NO_FIXTURES)
    return FIXTURES_DIR


@pytest.fixture
def fixture_copy(fixtures_dir: Path, tmp_path: Path) -> Callable[..., Path]:
    """Return a function that copies a fixture file into tmp_path and returns the copy's path.

    `fixture_copy("public-twkrash-branching.jsonl")` keeps the name;
    `fixture_copy(name, "2026-01-01T00-00-00-000Z_abc.jsonl")` renames the copy. The copy is
    writable even though the fixtures are not (only the bytes are copied, not the mode).
    """

    def copy(name: str, dest_name: str | None = None) -> Path:
        source = fixtures_dir / name
        if not source.is_file():
            raise FileNotFoundError(f"no fixture named {name!r} in {fixtures_dir}")
        target = tmp_path / (dest_name or Path(name).name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        return target

    return copy


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config, report):
    """A report a pytest-xdist worker sends holds the test's text as is, and a hostile-input test's
    failure can quote a lone surrogate, which the worker's channel cannot encode as UTF-8 (the
    whole run then stops with an internal error instead of naming the failed test). Such
    characters travel as backslash escapes."""
    data = yield
    return _escape_surrogates(data) if data is not None else None


def _escape_surrogates(value):
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {_escape_surrogates(k): _escape_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_escape_surrogates(v) for v in value)
    return value
