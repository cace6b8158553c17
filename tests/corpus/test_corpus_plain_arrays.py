"""The arrays a pooled scan's own process builds without pa.array (schema.plain_array,
tables.group_by) equal pyarrow's, and that process never imports pandas."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from corpus_builders import build_corpus

from pi_lab.corpus.schema import plain_array, plain_scalar
from pi_lab.corpus.tables import group_by

TYPES = {"str": pa.string(), "f64": pa.float64(), "i64": pa.int64(), "bool": pa.bool_()}

CASES = {
    "str": [[], [None], ["", "a", None, "é😀", "x" * 300], ["\ud83d lone"], ["a", 3], ["a", b"bytes"], [None, None, "z"]],
    "f64": [[], [None], [1.5, None, -0.0, float("nan"), float("inf"), 2, -(2**53)], [2**53 + 1], [True, 1.0],
            ["1.0"], [10**400], [0.1, 0.2, None]],
    "i64": [[], [None], [0, -1, 2**63 - 1, -(2**63), None], [2**63], [True], [1.0], ["1"]],
    "bool": [[], [None], [True, False, None, True], [1, 0], [None, False]],
}


def _reference(values, kind):
    try:
        return pa.array(values, TYPES[kind])
    except (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeEncodeError) as error:
        return type(error)


def _plain(values, kind):
    try:
        return plain_array(values, kind)
    except (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeEncodeError) as error:
        return type(error)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_plain_arrays_equal_pyarrows(kind):
    rng = random.Random(kind)
    pool = {"str": ["", "abc", "ü", "日本", None, "a\nb"], "f64": [0.0, 1.25, -3.0, None, 7, 1e300],
            "i64": [0, 5, -7, None, 2**40], "bool": [True, False, None]}[kind]
    cases = CASES[kind] + [[rng.choice(pool) for _ in range(rng.randint(0, 70))] for _ in range(40)]
    for values in cases:
        want, got = _reference(values, kind), _plain(values, kind)
        if isinstance(want, type):
            assert got is want, values
            continue
        assert got.type == want.type and got.null_count == want.null_count, values
        # (repr: -0.0 and 0.0 differ, nan equals nan; equals() holds nan unequal to itself)
        assert repr(got.to_pylist()) == repr(want.to_pylist()), values
        if not any(v != v for v in values):
            assert got.equals(want), values


def test_plain_scalars_equal_pyarrows():
    assert plain_scalar(None, "str").equals(pa.scalar(None, pa.string()))
    assert plain_scalar(False, "bool").equals(pa.scalar(False, pa.bool_()))


def test_group_by_equals_pyarrows():
    rng = random.Random(5)
    n = 500
    table = pa.table({"file": [rng.choice("abcde") for _ in range(n)],
                      "x": [float(rng.randint(0, 9)) for _ in range(n)],
                      "y": [rng.choice([None, "i"]) for _ in range(n)]})
    aggregations = [("x", "sum"), ("y", "count")]
    got = group_by(table, "file", aggregations).sort_by("file")
    want = table.group_by("file").aggregate(aggregations).sort_by("file")
    assert got.equals(want)


@pytest.mark.parametrize("before", [False, True])
def test_a_pooled_scan_imports_no_pandas(tmp_path, before):
    """Nor do its workers need it; with pandas imported before (``before``), as a notebook
    may, the workers inherit it and read as well."""
    build_corpus(tmp_path / "s")
    # (a worker whose batch is this file alone makes empty tables and an error; the CLI's
    # test_piped_run_has_no_progress_bar_and_reports_bad_files failed when workers were
    # given None for pandas in sys.modules instead of a finder that refuses it)
    (tmp_path / "s" / "zz_broken.jsonl").write_text("nonsense\n", encoding="utf-8")
    script = ("import pandas\n" if before else "") + textwrap.dedent("""
        import sys
        import pi_lab.corpus.batches as batches
        from pi_lab.corpus import Corpus
        batches.POOL_MIN_BYTES = 0
        pooled = Corpus.scan([sys.argv[1]], workers=2, cache=False)
        assert pooled.model_calls.column("copied").to_pylist().count(True)
        print("pandas" in sys.modules)
        alone = Corpus.scan([sys.argv[1]], workers=1, cache=False)
        assert all(pooled.tables[name].equals(alone.tables[name]) for name in alone.tables)
        assert pooled.errors == alone.errors and len(alone.errors) == 1
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "s")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(before)
