"""Every exception class of pi_lab.llm, pi_lab.compaction and pi_lab.agent derives from PiLabError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import pi_lab.agent
import pi_lab.compaction
import pi_lab.llm
from pi_lab.errors import PiLabError, Refused


def own_exception_classes(package):
    found = []
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found.append(value)
    return found


@pytest.mark.parametrize("package", [pi_lab.llm, pi_lab.compaction, pi_lab.agent], ids=lambda p: p.__name__)
def test_every_exception_class_is_a_pi_lab_error(package):
    classes = own_exception_classes(package)
    assert classes, "the scan found nothing: it would pass on any code"
    assert [c.__qualname__ for c in classes if not issubclass(c, PiLabError)] == []


def test_the_old_builtin_bases_are_kept_where_callers_catch_them():
    from pi_lab.agent import CompactionCancelled, InvalidEntry
    from pi_lab.compaction import InvalidSetting, SummarizationError

    assert issubclass(Refused, RuntimeError)
    assert issubclass(CompactionCancelled, RuntimeError) and issubclass(SummarizationError, RuntimeError)
    assert issubclass(InvalidEntry, KeyError) and issubclass(InvalidEntry, ValueError)
    assert issubclass(InvalidSetting, ValueError)


def test_invalid_settings_raise_pis_message():
    from pi_lab.compaction import InvalidSetting, resolve_compaction_settings

    with pytest.raises(InvalidSetting, match="Expected a non-negative safe integer"):
        resolve_compaction_settings({"compaction": {"reserveTokens": -1}})
