"""A cached `pi-lab usage`: the report of an unchanged folder is served from the cache without
importing what it does not need, and never when anything it was computed from changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from corpus_builders import build_corpus
from pi_lab.cli import main
from pi_lab.corpus import Corpus
from helpers import asst_msg, msg, usage

# What a usage report never needs (the brief of issue 12: a cold `pi-lab usage` must not import
# the model clients or Jupyter; a cached one not even the table and SQL engines).
NEVER = ("httpx", "anywidget", "traitlets", "ipywidgets", "jupyter_server", "jupyterlab", "IPython")
NOT_WHEN_CACHED = ("pyarrow", "duckdb", "pandas", "numpy", "pi_lab.corpus.extract")

RUN_AND_LIST_MODULES = """
import json, sys
from pi_lab.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def run_usage(folder: Path, cache: Path, *extra: str) -> tuple[str, set[str]]:
    """`pi-lab usage` in a fresh interpreter: its stdout and the modules it imported."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES, "usage", str(folder), "--json", "--workers", "1", *extra],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    modules = set(json.loads(done.stderr.strip().splitlines()[-1]))
    return done.stdout, modules


def imported(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_cached_usage_is_served_without_pyarrow_or_duckdb(tmp_path):
    build_corpus(tmp_path / "s")
    cold, cold_modules = run_usage(tmp_path / "s", tmp_path / "cache")
    assert imported(cold_modules, NEVER) == []
    assert "pyarrow" in cold_modules and "pi_lab.corpus.extract" in cold_modules  # it did read the files
    cached, cached_modules = run_usage(tmp_path / "s", tmp_path / "cache")
    assert cached == cold
    assert imported(cached_modules, NEVER + NOT_WHEN_CACHED) == []
    assert json.loads(cached) == Corpus.scan(tmp_path / "s", cache=False, workers=1).usage(by="day").to_pylist()


def test_a_changed_folder_is_never_answered_from_a_kept_report(tmp_path, capsys):
    files = build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"

    def report(by: str = "session") -> list[dict]:
        assert main(["usage", str(tmp_path / "s"), "--by", by, "--json", "--cache-dir", str(cache), "--workers", "1"]) == 0
        return json.loads(capsys.readouterr().out)

    def truth(by: str = "session") -> list[dict]:
        return Corpus.scan(tmp_path / "s", cache=False, workers=1).usage(by=by).to_pylist()

    first = report()
    assert first == truth() and report() == first  # kept, then served
    # A file grows: a new call is counted.
    with open(files["O"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(msg("late", "a3", asst_msg("more", model="claude-sonnet-4-5", use=usage(7, 1)), 30)) + "\n")
    grown = report()
    assert grown != first and grown == truth()
    # A file goes away, then a new one appears.
    removed = files["O"]
    kept_text = removed.read_text(encoding="utf-8")
    removed.unlink()
    assert report() == truth() != grown
    (tmp_path / "s" / "again.jsonl").write_text(kept_text, encoding="utf-8")
    assert report() == truth()
    # Each grouping is its own report; the text table is served as well.
    assert report("model") == truth("model")
    assert main(["usage", str(tmp_path / "s"), "--by", "model", "--cache-dir", str(cache)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[-1].startswith("total")
    assert main(["usage", str(tmp_path / "s"), "--by", "model", "--cache-dir", str(cache)]) == 0
    assert capsys.readouterr().out == text


def test_a_corrupt_kept_report_is_computed_again(tmp_path, capsys):
    build_corpus(tmp_path / "s")
    cache = tmp_path / "cache"
    args = ["usage", str(tmp_path / "s"), "--json", "--cache-dir", str(cache), "--workers", "1"]
    assert main(args) == 0
    first = capsys.readouterr().out
    (kept,) = cache.glob("*/gen-*/usage-day.json")
    kept.write_text('{"columns": ["day"', encoding="utf-8")
    assert main(args) == 0
    assert capsys.readouterr().out == first


def test_the_llm_package_imports_its_clients_only_when_asked():
    code = (
        "import sys, pi_lab.llm as llm, pi_lab.llm.catalog; "
        "assert 'httpx' not in sys.modules, 'httpx imported by pi_lab.llm'; "
        "names = [getattr(llm, n) for n in llm.__all__]; "
        "from pi_lab.llm import AnthropicClient, OfflineModel, convert; "
        "assert AnthropicClient.__module__ == 'pi_lab.llm.anthropic' and convert.__name__ == 'pi_lab.llm.convert'; "
        "assert set(llm.__all__) <= set(dir(llm)); print(len(names), len(set(llm.__all__)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    resolved, public = map(int, done.stdout.split())
    # Every public name resolves (41 before StreamOptions joined them), each listed once.
    assert resolved == public >= 42
