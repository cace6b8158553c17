"""The layers of DESIGN.md, checked on the source: one direction of dependency between the
packages of pi_lab, and no package reaching for another's private names.

Every ``import`` counts, also one inside a function: a lazy import still ties two packages
together (it only moves the circle from import time to call time). Imports under
``if TYPE_CHECKING:`` do not count, since they never run.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pi_lab"

#: Lowest first: a package may import only the ones before it. The top-level modules
#: ``errors``, ``_version`` and ``_text_out`` sit under everything; ``pi_lab/__init__.py`` and
#: ``cli.py`` over everything.
LAYERS = (
    "session",
    "cli_render",
    "llm",
    "compaction",
    "formats",
    "agent",
    "research",
    "view",
    "export",
    "widget",
    "corpus",
    "teach",
    "data",
    "server",
)
FLOOR = {"errors", "_version", "_text_out"}
TOP = {"__init__", "cli"}
#: Modules every layer may read: the constants the engine, the views and the TypeScript front end
#: share (issue 23's contract). Each imports nothing from pi_lab (checked below), so reading one
#: cannot tie two packages together.
SHARED_LEAVES = {"pi_lab.view.contract"}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module's path under pi_lab/
    line: int
    target: str  # the imported module, dotted
    names: tuple[str, ...]  # the names taken from it (from-imports)


def _layer(module: str) -> str:
    """The package (or top-level module) of a dotted module name inside pi_lab."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(inner) for inner in ast.walk(node))
    return skip


def _imports_of(path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _module_name(path)
    skip = _type_checking_nodes(tree)
    found: list[Import] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base.pop()
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append(Import(str(path.relative_to(PACKAGE)), node.lineno, target,
                                tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.Import):
            found.extend(Import(str(path.relative_to(PACKAGE)), node.lineno, alias.name, ())
                         for alias in node.names)
    return [imp for imp in found if imp.target == "pi_lab" or imp.target.startswith("pi_lab.")]


def _all_imports() -> list[Import]:
    if not PACKAGE.is_dir():
        pytest.skip("pi_lab's source is not beside the tests")
    generated = {PACKAGE / "labextension", PACKAGE / "static"}
    return [imp for path in sorted(PACKAGE.rglob("*.py"))
            if not any(folder in path.parents for folder in generated)
            for imp in _imports_of(path)]


def _rank(layer: str) -> int:
    if layer in FLOOR:
        return -1
    if layer in TOP:
        return len(LAYERS)
    return LAYERS.index(layer)


def test_every_package_has_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    unplaced = (packages | modules) - set(LAYERS) - FLOOR - TOP
    assert not unplaced, f"add these to LAYERS (DESIGN.md's order): {sorted(unplaced)}"


def test_no_package_imports_a_higher_one():
    upward = []
    for imp in _all_imports():
        source = _layer("pi_lab." + imp.source.removesuffix(".py").replace("/", "."))
        target = _layer(imp.target)
        if imp.target in SHARED_LEAVES:
            continue
        if source != target and _rank(target) > _rank(source):
            upward.append(f"pi_lab/{imp.source}:{imp.line} ({source}) imports {imp.target} ({target})")
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_the_shared_leaves_import_nothing_from_pi_lab():
    for leaf in sorted(SHARED_LEAVES):
        path = PACKAGE.parent / (leaf.replace(".", "/") + ".py")
        assert path.exists(), leaf
        assert _imports_of(path) == [], f"{leaf} must stay a leaf: every layer reads it"


def test_no_package_imports_another_packages_private_names():
    reaching = []
    for imp in _all_imports():
        source = _layer("pi_lab." + imp.source.removesuffix(".py").replace("/", "."))
        if _layer(imp.target) == source:
            continue
        # A private module of another package (pi_lab.session._js) is that package's published
        # helper for its neighbours only when named so on purpose; a private NAME is never.
        private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
        if private:
            reaching.append(f"pi_lab/{imp.source}:{imp.line} takes {', '.join(private)} from {imp.target}")
    assert not reaching, "private names used across packages:\n" + "\n".join(reaching)


def test_the_checker_sees_a_lazy_upward_import(tmp_path, monkeypatch):
    # The checks above would pass on anything if the import walk missed function bodies.
    fake = tmp_path / "pi_lab"
    (fake / "session").mkdir(parents=True)
    (fake / "view").mkdir()
    (fake / "session" / "__init__.py").write_text("")
    (fake / "view" / "__init__.py").write_text("")
    (fake / "session" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pi_lab.view import fine\n"
        "def f():\n    from pi_lab.view.rows import _private\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    imports = _all_imports()
    assert [(i.source, i.line, i.target, i.names) for i in imports] == [
        ("session/bad.py", 5, "pi_lab.view.rows", ("_private",)),
    ]
