"""Property: any one-field mutation of a Claude Code session gives a result or a pi_lab error.

The field fuzzer of pi files (``fieldfuzz``) extended to Claude Code lines: one field of one line
(a uuid, a parentUuid, a message's content block, a usage counter, compaction metadata, a
microcompaction's tool ids, a sub-agent link) takes an odd value (a wrong type, a lone
surrogate, a bidi control, nesting thousands of levels deep) and everything a user can reach on
the result runs: ``open_session``, the engine's contract, the views' payloads and context views,
the static export. The file is never written. ``PI_LAB_FUZZ_EXAMPLES`` bounds the run (default 300).
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import fieldfuzz

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from generate_claude_sessions import generate_session  # noqa: E402

EXAMPLES = int(os.environ.get("PI_LAB_FUZZ_EXAMPLES", "300"))

CLAUDE_FIELD_PATHS: list[tuple[str, ...]] = [
    ("type",), ("uuid",), ("parentUuid",), ("logicalParentUuid",), ("timestamp",), ("sessionId",), ("cwd",),
    ("isSidechain",), ("agentId",), ("requestId",), ("subtype",), ("isCompactSummary",), ("isMeta",),
    ("message",), ("message", "id"), ("message", "role"), ("message", "model"), ("message", "content"),
    ("message", "content", "#"), ("message", "content", "#", "type"), ("message", "content", "#", "text"),
    ("message", "content", "#", "id"), ("message", "content", "#", "name"), ("message", "content", "#", "input"),
    ("message", "content", "#", "tool_use_id"), ("message", "content", "#", "content"),
    ("message", "content", "#", "is_error"), ("message", "content", "#", "thinking"),
    ("message", "content", "#", "source"), ("message", "stop_reason"), ("message", "usage"),
    ("message", "usage", "input_tokens"), ("message", "usage", "cache_read_input_tokens"),
    ("message", "usage", "output_tokens"), ("compactMetadata",), ("compactMetadata", "preTokens"),
    ("microcompactMetadata",), ("microcompactMetadata", "compactedToolIds"), ("toolUseResult",),
    ("toolUseResult", "agentId"), ("data",), ("data", "agentId"), ("parentToolUseID",), ("messageId",),
    ("leafUuid",), ("summary",), ("customTitle",), ("snapshot",), ("content",), ("isApiErrorMessage",),
]


def _base() -> list[bytes]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = generate_session(Path(folder), seed=9, turns=5, broken=False)
        return path.read_bytes().splitlines()


BASE = _base()


def _mutate(lines: list[bytes], rng: random.Random) -> tuple[bytes, str]:
    return fieldfuzz.mutate_line(lines, CLAUDE_FIELD_PATHS, rng)


def _run(path: Path) -> list[fieldfuzz.Finding]:
    run = fieldfuzz.Runner()
    fieldfuzz.agent_file_steps(run, path)
    return run.findings


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_one_odd_field_of_a_claude_code_line_never_raises_a_built_in_error(
        tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    data, described = _mutate(BASE, random.Random(seed))
    path = tmp_path_factory.mktemp("ccfuzz") / "session.jsonl"
    path.write_bytes(data)
    findings = _run(path)
    assert not findings, fieldfuzz.describe_findings(described, findings)
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(data).digest()


def test_the_mutator_changes_claude_code_lines() -> None:
    changed = sum(_mutate(BASE, random.Random(seed))[0] != b"\n".join(BASE) + b"\n" for seed in range(20))
    assert changed >= 18
