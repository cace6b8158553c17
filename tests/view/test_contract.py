"""The shared constants: contract.ts is what tools/gen_contract.py writes, and the modules that
use the tables agree with pi_lab/view/contract.py."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from pi_lab.view import contract

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "tools" / "gen_contract.py"
TARGET = ROOT / "src_frontend" / "core" / "contract.ts"


def _generator():
    spec = importlib.util.spec_from_file_location("_gen_contract", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_contract_ts_is_what_the_generator_writes():
    assert TARGET.read_text(encoding="utf-8") == _generator().render()


def test_check_mode_fails_on_a_stale_file(tmp_path, monkeypatch):
    generator = _generator()
    stale = tmp_path / "contract.ts"
    stale.write_text("// old\n", encoding="utf-8")
    monkeypatch.setattr(generator, "TARGET", stale)
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0
    assert generator.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == generator.render()


def test_check_runs_without_pi_lab_on_the_path():
    # What the front-end build runs: the system interpreter, isolated from site-packages and the
    # working directory, so only the script and contract.py are needed.
    done = subprocess.run([sys.executable, "-I", str(GENERATOR), "--check"], cwd="/", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_modules_that_use_the_tables_agree():
    from pi_lab.export.views import FACT_BITS, ROLES
    from pi_lab.session import facts, flatten
    from pi_lab.view import composition, kinds, payload
    from pi_lab.view.actions import WRITE_ACTIONS

    assert kinds.KIND_NAMES is contract.KIND_NAMES and kinds.FLAG_BITS is contract.FLAG_BITS
    assert flatten.FILTER_MODES is contract.FILTER_MODES
    assert [contract.FILTER_CATEGORIES[name] for name in
                                                   ("usage", "tool_only", "settings", "tool_result", "user", "other")] == [facts._CAT_USAGE, facts._CAT_TOOL_ONLY, facts._CAT_SETTINGS, facts._CAT_TOOL_RESULT,
            facts._CAT_USER, facts._CAT_OTHER]
    assert composition.PART_ORDER is contract.PART_ORDER
    assert (payload.MAX_ROWS_PER_REQUEST, payload.MAX_WHOLE, payload.MAX_PREFIX_MATCHES) == (
        contract.MAX_ROWS_PER_REQUEST, contract.MAX_WHOLE, contract.MAX_PREFIX_MATCHES)
    assert tuple(payload.READ_OPS) == contract.READ_OP_NAMES
    assert frozenset(contract.WRITE_OP_NAMES) == WRITE_ACTIONS
    assert ROLES == contract.ROLES and FACT_BITS == contract.FACT_BITS
