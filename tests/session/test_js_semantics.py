"""One answer per JavaScript question: every helper pair that had drifted apart agrees now.

Expected values are what pi's JavaScript gives (checked with node for the same inputs); each
character class that separates Python's ``str.strip`` from JavaScript's ``trim`` has a case.
"""

from __future__ import annotations

import math

import pytest

from pi_lab.compaction.settings import resolve_compaction_settings, InvalidSetting
from pi_lab.compaction.tokens import js_json
from pi_lab.llm.tokens import compact_json, message_chars, utf16_len
from pi_lab.session import _js, _json
from pi_lab.session.entries import display_kind, has_visible_text, is_error_entry
from pi_lab.session.flatten import flatten_tree
from pi_lab.session.tree import get_tree
from pi_lab.view import kinds

# (text, visible in pi's tree selector): String.prototype.trim's white space vs str.strip's
TRIM_CLASSES = [
    pytest.param("\ufeff", False, id="BOM-is-JS-whitespace-not-Python"),
    pytest.param("\x1c", True, id="FS-is-Python-whitespace-not-JS"),
    pytest.param("\x1d\x1e\x1f", True, id="GS-RS-US-Python-only"),
    pytest.param("\x85", True, id="NEL-is-Python-whitespace-not-JS"),
    pytest.param(" \t\n\r\x0b\x0c", False, id="ASCII-whitespace-both"),
    pytest.param("\xa0\u3000\u2028\u2029\u205f", False, id="Unicode-space-both"),
    pytest.param("\u200b", True, id="zero-width-space-neither"),
    pytest.param(" x ", True, id="text"),
]


def _assistant_entry(text: str) -> dict:
    return {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"}}


@pytest.mark.parametrize(("text", "visible"), TRIM_CLASSES)
def test_visible_text_is_one_answer(text: str, visible: bool) -> None:
    assert has_visible_text(text) is visible
    assert has_visible_text([{"type": "text", "text": text}]) is visible
    # the widget's kinds and the tree list's filter used to answer with str.strip
    assert kinds.has_visible_text(text) is visible
    assert kinds.has_visible_text([{"type": "text", "text": text}]) is visible
    entry = _assistant_entry(text)
    assert display_kind(entry) == ("assistant" if visible else "assistant")  # no tool call: plain reply
    flat = flatten_tree(get_tree([entry, {**_assistant_entry("x"), "id": "a2", "parentId": "a1"}]), "a2")
    # a text-less reply that ended normally is hidden in `default` unless it is the leaf
    assert (flat._categories[0] == 1) is (not visible)


@pytest.mark.parametrize(("text", "visible"), TRIM_CLASSES)
def test_js_trim_per_class(text: str, visible: bool) -> None:
    assert (_js.js_trim(text) != "") is visible


@pytest.mark.parametrize(
    ("text", "units"),
    [("abc", 3), ("é", 1), ("😀", 2), ("\ud800", 1), ("a\udc00b", 3), ("\ud83d\ude00", 2)],
    ids=["ascii", "bmp", "astral", "lone-high", "lone-low", "pair-as-surrogates"],
)
def test_utf16_length_is_one_answer(text: str, units: int) -> None:
    assert _js.js_len(text) == units
    assert utf16_len(text) == units  # raised UnicodeEncodeError on a lone surrogate


def test_message_chars_with_a_lone_surrogate() -> None:
    assert message_chars({"role": "user", "content": "a\ud800"}) == 2


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        ([1.0, 2.5], "[1,2.5]"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (123456789012345680000.0, "123456789012345680000"),
        (-0.0, "0"),
        (math.nan, "null"),
        ({"a": "é", "b": None}, '{"a":"é","b":null}'),
    ],
    ids=["integral-float", "list", "big", "small", "no-exponent", "minus-zero", "nan", "non-ascii"],
)
def test_json_text_is_one_answer(value: object, text: str) -> None:
    assert _json.js_json(value) == text
    assert js_json(value) == text
    assert compact_json(value) == text  # json.dumps wrote 1.0, 1e+21 as 1e+21 but NaN as NaN


def test_json_text_of_a_lone_surrogate_is_escaped() -> None:
    assert compact_json("\ud800") == '"\\ud800"'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"), (True, "true"), (1.0, "1"), (1e-7, "1e-7"), (math.inf, "Infinity"),
        ([[1, [2, None]], [], 3], "1,2,,,3"), ({"a": 1}, "[object Object]"), ([{"a": 1}], "[object Object]"),
    ],
)
def test_js_string(value: object, text: str) -> None:
    assert _js.js_string(value) == text


def test_js_string_of_deep_nesting_does_not_recurse() -> None:
    value: list = [7]
    for _ in range(5000):
        value = [value]
    assert _js.js_string(value) == "7"
    value = [1, value, None]
    assert _js.js_string(value) == "1,7,"


def test_settings_message_formats_numbers_as_javascript() -> None:
    # the compaction settings' own String() wrote Python's repr: 1e-07
    with pytest.raises(InvalidSetting, match=r"Invalid compaction\.reserveTokens setting: 1e-7\."):
        resolve_compaction_settings({"compaction": {"reserveTokens": 1e-7}})


@pytest.mark.parametrize(
    "entry",
    [
        {"type": ["message"], "id": "x"},
        {"type": {"a": 1}, "id": "x"},
        {"type": "message", "message": {"role": ["assistant"], "content": "hi"}},
        {"type": "message", "message": {"role": {"r": 1}, "stopReason": ["error"]}},
        {"type": "message", "message": ["not", "an", "object"]},
    ],
)
def test_display_kind_of_odd_values(entry: dict) -> None:
    assert display_kind(entry) in ("unknown", "other_message")
    assert is_error_entry(entry) is False
    assert kinds.entry_kind(entry) == kinds.KIND[display_kind(entry)]
