"""The token estimate's shortcuts for the common shapes (issue 11) give the general rule's
answer: a tool call's flat arguments are measured without the float scan, an ASCII text
block without a call to the text rule. Odd values still take the general rule."""

from __future__ import annotations

import pytest

from pi_lab.compaction import tokens
from pi_lab.session._json import dumps
from pi_lab.session._text import js_len

ODD_ARGUMENTS = [
    {"path": "/a.py", "offset": 10, "limit": 20},
    {"command": "ls", "timeout": None, "background": True},
    {"path": "/é/日本.txt", "content": "emoji 😀 and ß"},
    {"value": 0.1, "whole": 2.0, "n": 1e21},  # floats: JSON.stringify writes 2.0 as 2
    {"big": 2**70, "neg": -(2**64)},  # past 64 bits: orjson refuses, the writer writes them
    {"lone": "\ud800 half"},  # a lone surrogate: orjson refuses it
    {"nested": {"x": [1.5, 2, "three"]}},
    {1: "int key"},  # not a JSON key: the writer's rule, whatever it is
    [1, 2.5, "list"],
    "plain string",
    {},
]


def _general(value):
    raw = dumps(value)
    return len(raw) if raw.isascii() else js_len(raw.decode("utf-8"))


@pytest.mark.parametrize("value", ODD_ARGUMENTS, ids=range(len(ODD_ARGUMENTS)))
def test_argument_length_is_the_writers(value):
    try:
        expected = _general(value)
    except Exception as exc:  # noqa: BLE001  (the same error either way)
        with pytest.raises(type(exc)):
            tokens._json_len(value)
        return
    assert tokens._json_len(value) == expected


@pytest.mark.parametrize("text", ["plain", "", "é", "😀x", "\udc00", None, 7, ["x"]])
def test_block_text_shortcut_is_the_text_rule(text):
    for role, kind, key in (("assistant", "text", "text"), ("assistant", "thinking", "thinking"), ("user", "text", "text")):
        message = {"role": role, "content": [{"type": kind, key: text}, {"type": "text", "text": "abc"}]}
        expected = -(-(tokens._text_len(text) + 3) // 4)
        assert tokens.estimate_tokens(message) == expected, (role, kind, text)
