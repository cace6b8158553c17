"""Numbers past the float range in a hand-edited file (found by probing beside the field fuzzer).

JavaScript reads the digits of 10**400 as Infinity and JSON.stringify writes Infinity as
``null``; Python keeps the exact integer, whose first conversion to float raises
OverflowError. Every public path must answer such a file with a result or a pi_lab error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzz.fieldfuzz import run_public_paths

HUGE = "1" + "0" * 400  # 10**400: past the float range, well inside what JSON allows
HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
USER = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1}}


def assistant(usage_total: object = 2, arguments: object = None) -> dict:
    content: list[dict] = [{"type": "text", "text": "ok"}]
    if arguments is not None:
        content.append({"type": "toolCall", "id": "c1", "name": "read", "arguments": arguments})
    return {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": content, "provider": "p", "model": "m",
                        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": usage_total},
                        "stopReason": "stop", "timestamp": 2}}


def with_input(entry: dict, value: object) -> dict:
    message = {**entry["message"], "usage": {**entry["message"]["usage"], "input": value}}
    return {**entry, "message": message}


CASES = {
    "usage totalTokens": (HEADER, USER, assistant(usage_total="HUGE")),
    # the branch comparison sums each counter (math.isfinite raised OverflowError on it)
    "usage input": (HEADER, USER, with_input(assistant(), "HUGE")),
    "tool call argument": (HEADER, USER, assistant(arguments={"limit": "HUGE"})),
    "header version": ({**HEADER, "version": "HUGE"}, USER, assistant()),
    # String(10**400) is "Infinity" in JavaScript (a text block whose text is a number)
    "text that is a number": (HEADER, {**USER, "message": {**USER["message"], "content": [{"type": "text", "text": "HUGE"}]}},
                              assistant()),
    # the Pi Sessions panel's last activity: no date can hold it
    "message timestamp": (HEADER, {**USER, "message": {**USER["message"], "timestamp": "HUGE"}}, assistant()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_number_past_the_float_range_is_never_a_built_in_error(case, tmp_path: Path):
    text = "".join(json.dumps(entry) + "\n" for entry in CASES[case]).replace('"HUGE"', HUGE)
    assert HUGE in text
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    work = tmp_path / "work"
    work.mkdir()
    findings = run_public_paths(path, work)
    assert not findings, [f.key() for f in findings]
