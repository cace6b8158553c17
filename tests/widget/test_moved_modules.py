"""The widget's old module names for what moved to pi_lab.view (``pi_lab.widget.payload``,
``rows``...) still answer code outside pi_lab, with a DeprecationWarning naming the new home, and
pi_lab itself, its tests, tools and examples import pi_lab.view."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pi_lab

MOVED = ("actions", "columns", "context", "detail", "gauge", "kinds", "payload", "preview", "rows")
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", MOVED)
def test_an_old_name_warns_and_is_the_moved_module(name):
    # A fresh interpreter: in this one an earlier import may have aliased the name already.
    code = f"""
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import pi_lab.widget.{name} as old
import pi_lab.view.{name} as new
print(json.dumps([old is new, [str(w.message) for w in caught if w.category is DeprecationWarning],
                  [w.filename for w in caught]]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    same, messages, where = json.loads(done.stdout.strip().splitlines()[-1])
    assert same
    assert messages == [f"pi_lab.widget.{name} is deprecated: import pi_lab.view.{name} instead"]
    assert where == ["<string>"]  # the importing line, not pi_lab's alias helper


def test_pi_lab_and_its_repository_import_the_view_modules():
    old = {f"pi_lab.widget.{name}" for name in MOVED}
    users = set()
    roots = [Path(pi_lab.__file__).parent, REPO / "tests", REPO / "tools", REPO / "bench"]
    for root in roots:
        for path in root.rglob("*.py"):
            if path.parent.name == "widget" and path.stem in MOVED and path.parent.parent.name == "pi_lab":
                continue  # the aliases themselves
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if _imports_an_old_name(node, old):
                    users.add(path.relative_to(REPO).as_posix())
    assert users == set()


def _imports_an_old_name(node: ast.AST, old: set[str]) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.module in old or (node.module == "pi_lab.widget" and any(a.name in MOVED for a in node.names))
    return isinstance(node, ast.Import) and any(a.name in old for a in node.names)
