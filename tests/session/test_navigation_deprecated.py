"""pi_lab.session.navigation is the old name of flatten/display/cli_render: it still answers,
with a DeprecationWarning for code outside pi_lab, and pi_lab itself no longer imports it."""

from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import pytest

import pi_lab
from pi_lab import cli_render
from pi_lab.session import display, flatten


@pytest.mark.parametrize(
    ("name", "home"),
    [("flatten_tree", flatten), ("FILTER_MODES", flatten), ("display_text", display), ("render_row", cli_render)],
)
def test_an_outside_import_warns_and_gets_the_same_object(name, home):
    navigation = importlib.import_module("pi_lab.session.navigation")
    with pytest.warns(DeprecationWarning, match=rf"import {name} from {home.__name__}"):
        value = getattr(navigation, name)
    assert value is getattr(home, name)


def test_a_from_import_warns_at_the_importing_line():
    with pytest.warns(DeprecationWarning) as caught:
        from pi_lab.session.navigation import navigation_rows  # noqa: F401
    assert caught[0].filename == __file__


def test_pi_lab_modules_get_no_warning():
    navigation = importlib.import_module("pi_lab.session.navigation")
    namespace = {"__name__": "pi_lab.some_module", "navigation": navigation}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        exec("value = navigation.flatten_tree", namespace)
    assert namespace["value"] is flatten.flatten_tree


def test_an_unknown_name_is_an_attribute_error():
    navigation = importlib.import_module("pi_lab.session.navigation")
    with pytest.raises(AttributeError):
        navigation.no_such_name  # noqa: B018


# Modules still owned elsewhere when the module was deprecated; they move to the real modules.
_NOT_YET_MOVED: set[str] = set()  # every pi_lab module imports the real ones now


def test_pi_lab_imports_the_real_modules():
    root = Path(pi_lab.__file__).parent
    users = set()
    for path in root.rglob("*.py"):
        if path.name == "navigation.py" and path.parent.name == "session":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "pi_lab.session.navigation":
                users.add(path.relative_to(root).as_posix())
    assert users <= _NOT_YET_MOVED
