"""Regression tests for the fuzz findings of issue #15 in the session engine and the view (helper F1)."""

from __future__ import annotations

import pytest

from pi_lab.session._text import safe_repr


def _nested(depth: int, leaf=None):
    value = [] if leaf is None else leaf
    for _ in range(depth):
        value = [value]
    return value


class TestSafeRepr:
    def test_deep_list_is_cut_without_recursion(self):
        text = safe_repr(_nested(3000, "x"))
        assert "…" in text and len(text) <= 80

    def test_cyclic_dict_is_cut(self):
        cyclic: dict = {}
        cyclic["a"] = cyclic
        assert safe_repr(cyclic).startswith("{'a': {'a':")

    def test_lone_surrogate_is_escaped(self):
        text = safe_repr({"\ud800": "a\udc00"})
        assert text == "{'\\ud800': 'a\\udc00'}"
        text.encode("utf-8")  # printable anywhere

    def test_plain_values_read_as_repr(self):
        assert safe_repr("abc") == "'abc'"
        assert safe_repr({"a": [1, 2.5, None, True]}) == "{'a': [1, 2.5, None, True]}"

    @pytest.mark.parametrize("limit", [1, 10, 80])
    def test_bounded(self, limit):
        assert len(safe_repr("x" * 10_000, limit=limit)) <= limit
        assert len(safe_repr(list(range(10_000)), limit=limit)) <= limit

    def test_huge_int(self):
        assert safe_repr(10**5000).startswith("<int")
