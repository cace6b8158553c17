"""``pi-lab usage --no-cache`` imports only what a usage read needs (issue 28: its start-up was a
third of a small folder's time), and the package names made lazy for it stay importable.

Each folder kind (Codex with a fork, Claude Code, pi with forks) is read by ``pi_lab.cli.main``
in a fresh interpreter, which then lists its loaded modules: none of the scan's (the cache, the
spill, the extractor, pyarrow, DuckDB), the engine's session manager or an adapter may be among
them. The same listing after a cached ``pi-lab usage``, which does scan, shows the check sees
them when they are loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from corpus_builders import build_corpus

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import generate_claude_sessions  # noqa: E402
import generate_codex_sessions  # noqa: E402

# What a usage read without the cache never needs: the scan and its storage, the tables'
# libraries, the extractor and the engine it walks with, the adapters, forked readers.
HEAVY = ("pyarrow", "duckdb", "pandas", "numpy", "pi_lab.corpus.corpus", "pi_lab.corpus.cache", "pi_lab.corpus.spill",
         "pi_lab.corpus.batches", "pi_lab.corpus.extract", "pi_lab.corpus.other_agents", "pi_lab.corpus.columns",
         "pi_lab.corpus.measures", "pi_lab.session.manager", "pi_lab.session.tree", "pi_lab.session.protocol",
         "pi_lab.compaction", "pi_lab.formats.codex", "pi_lab.formats.claude_code", "multiprocessing", "tempfile")

# Runs the command in this interpreter, then prints its exit status and every loaded module.
_RUN = """
import contextlib, io, json, sys
from pi_lab.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    status = main(sys.argv[1:])
print(json.dumps({"status": status, "report": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _loaded(args: list[str], cache: Path) -> dict:
    env = {"XDG_CACHE_HOME": str(cache), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300, check=True)
    return json.loads(done.stdout)


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def _codex(root: Path) -> Path:
    home = root / "codex"
    generate_codex_sessions.generate_session(home, seed=1, turns=4, fork=True)
    generate_codex_sessions.generate_session(home, seed=2, turns=3)
    return home


def _claude(root: Path) -> Path:
    project = root / "claude" / "projects" / "-home-user-project"
    for seed in range(2):
        generate_claude_sessions.generate_session(project, seed=seed, turns=4)
    return root / "claude"


def _pi(root: Path) -> Path:
    build_corpus(root / "pi")
    return root / "pi"


@pytest.mark.parametrize("folder", [_codex, _claude, _pi], ids=["codex", "claude-code", "pi"])
def test_usage_without_the_cache_loads_no_scan_engine_or_adapter(tmp_path, folder):
    path = folder(tmp_path)
    loaded = _loaded(["usage", str(path), "--no-cache", "--workers", "1", "--json"], tmp_path / "xdg")
    assert loaded["status"] == 0
    assert json.loads(loaded["report"]), "the folder's calls were read"
    assert _heavy(loaded["modules"]) == []


def test_the_check_sees_the_scan_when_it_is_loaded(tmp_path):
    """The cached command scans (the tables are cached for the next run): the same listing then
    holds the scan's modules and pyarrow."""
    path = _codex(tmp_path)
    loaded = _loaded(["usage", str(path), "--json"], tmp_path / "xdg")
    assert loaded["status"] == 0
    assert {"pyarrow", "pi_lab.corpus.corpus", "pi_lab.corpus.cache"} <= set(_heavy(loaded["modules"]))


def test_the_lazy_names_of_the_corpus_and_formats_packages():
    import pi_lab.corpus as corpus_package
    from pi_lab.corpus import (
        TABLE_NAMES,
        Corpus,
        corpus,
        default_cache_dir,
        default_session_paths,
        extract,
        extract_file,
        list_session_files,
        schema,
    )
    from pi_lab.formats import AGENTS, ReadableSession, UnknownSessionFormat, detect_format
    from pi_lab.session import protocol

    assert (Corpus, default_cache_dir, default_session_paths, list_session_files) == (
        corpus.Corpus, corpus.default_cache_dir, corpus.default_session_paths, corpus.list_session_files)
    assert TABLE_NAMES is schema.TABLE_NAMES and extract_file is extract.extract_file
    assert (AGENTS, ReadableSession) == (protocol.AGENTS, protocol.ReadableSession)
    assert UnknownSessionFormat.__module__ == detect_format.__module__ == "pi_lab.formats.detect"
    assert set(corpus_package.__all__) <= set(dir(corpus_package))
    with pytest.raises(AttributeError):
        corpus_package.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        from pi_lab.formats import no_such_name  # noqa: F401


def test_the_usage_reader_groups_as_the_corpus():
    from pi_lab.corpus import corpus, usage_fast

    assert usage_fast._BY == corpus._BY
    with pytest.raises(ValueError, match="by must be one of"):
        usage_fast.usage_report([], "week")
