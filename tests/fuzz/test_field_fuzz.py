"""Property: any one-field mutation of a real or generated session gives a result or a pi_lab error.

Findings listed in ``fieldfuzz.KNOWN`` (open ones, each reproduced by a strict xfail; none today)
are left to those xfails; any other finding fails here. The fixed ones are guarded by
``test_fixed_findings.py``.

Hypothesis draws the mutation seed (and so the line, the field and the odd value: a wrong type,
a lone surrogate, a bidi control, content nested thousands of levels deep); ``fieldfuzz`` runs
every public path on the mutated file. CI runs a bounded number of examples
(``PI_LAB_FUZZ_EXAMPLES``, default 300); ``tools/fuzz_fields.py --files 10000`` is the large run.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import fieldfuzz

BASES = list(fieldfuzz.base_sessions(generated=3))
EXAMPLES = int(os.environ.get("PI_LAB_FUZZ_EXAMPLES", "300"))
HEAVY_EVERY = int(os.environ.get("PI_LAB_FUZZ_HEAVY_EVERY", "4"))


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), base=st.integers(min_value=0, max_value=len(BASES) - 1))
def test_one_odd_field_never_raises_a_built_in_error(tmp_path_factory: pytest.TempPathFactory, seed: int, base: int) -> None:
    name, lines = BASES[base]
    data, mutation = fieldfuzz.mutate(lines, random.Random(seed))
    work = tmp_path_factory.mktemp("fuzz")
    path = work / "session.jsonl"
    path.write_bytes(data)
    # The paths that start processes' worth of work (the CLI's five commands, the corpus scan, the
    # static export) run on one example in HEAVY_EVERY; the engine, view, write and server paths on all.
    heavy = seed % HEAVY_EVERY == 0
    findings = fieldfuzz.run_public_paths(path, work, cli=heavy, corpus=heavy, export=heavy)
    new = [f for f in findings if not f.known()]
    assert not new, f"{name}: {mutation.describe()}: " + "; ".join(
        f"{f.step}: {f.error} at {f.where}: {f.message}" for f in new)


def test_the_fuzzer_reports_a_built_in_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness itself can fail: a path that raises TypeError is a finding, a PiLabError is not."""
    from pi_lab.errors import PiLabError

    run = fieldfuzz.Runner()
    run.step("pi_lab error", lambda: (_ for _ in ()).throw(PiLabError("clear")))
    assert run.findings == []
    run.step("bug", lambda: {}[[]])  # unhashable key: TypeError
    assert [(f.step, f.error) for f in run.findings] == [("bug", "TypeError")]


def test_mutations_change_the_file_and_reach_deep_nesting() -> None:
    """The mutator really mutates, and some mutations are thousands of levels deep."""
    rng = random.Random(3)
    name, lines = BASES[-1]
    original = b"\n".join(lines) + b"\n"
    changed = deep = 0
    for _ in range(200):
        data, mutation = fieldfuzz.mutate(lines, rng)
        changed += data != original
        deep += mutation.value.startswith("<nested")
    assert changed >= 190
    assert deep >= 10


def test_known_findings_are_matched_by_exception_and_file_not_line(monkeypatch):
    monkeypatch.setattr(fieldfuzz, "KNOWN", frozenset({("RecursionError", "data.py", "_dumps")}))
    known = fieldfuzz.Finding("export_html", "RecursionError", "export/data.py:999 in _dumps_renamed", "")
    from_cli = fieldfuzz.Finding("cli export", "RecursionError", "data.py:240 in _dumps", "")
    other_error = fieldfuzz.Finding("export_html", "KeyError", "export/data.py:240 in _dumps", "")
    other_file = fieldfuzz.Finding("export_html", "RecursionError", "export/html.py:240 in _dumps", "")
    assert known.known() and from_cli.known() and not other_error.known() and not other_file.known()
