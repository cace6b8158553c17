"""Sessions for the view tests: the seed's worked example, the real fixtures, generated ones.

Real fixtures are read as bytes and opened with ``session_from_bytes`` (in memory), so
nothing can write to them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from helpers import SEED_SECTION_14

from pi_lab.session.readonly import session_from_bytes

REPO = Path(__file__).resolve().parents[2]
from shared_fixtures import FIXTURES_DIR as FIXTURES  # noqa: E402  (the one place that finds them)
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.glob("*.jsonl")) if FIXTURES.is_dir() else []


def seed_session():
    return session_from_bytes(SEED_SECTION_14.encode("utf-8"), "seed.jsonl")


def fixture_session(name: str, tmp_path: Path):
    """A fixture copied to tmp_path and read from the copy (the original is never opened)."""
    copy = tmp_path / name
    copy.write_bytes((FIXTURES / name).read_bytes())
    return session_from_bytes(copy.read_bytes(), copy)


def _generator():
    name = "bench_generate"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def generated_session(entries: int, seed: int):
    """A synthetic pi 1.6.0 session (compactions, edits, errors, branch summaries, system)."""
    lines, _ = _generator().generate(entries, seed)
    return session_from_bytes(("\n".join(lines) + "\n").encode("utf-8"), f"gen-{seed}.jsonl")




def needs_fixtures():
    return pytest.mark.skipif(not FIXTURE_NAMES, reason=f"pi session fixtures not found at {FIXTURES}")
