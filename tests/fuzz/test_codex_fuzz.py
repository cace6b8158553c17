"""Property: any one-field mutation of a Codex rollout gives a result or a pi_lab error.

The field fuzzer of pi files (``fieldfuzz``) extended to Codex lines: one field of one line (a
line's type or timestamp, a session_meta id or fork link, a response item's type, role, content
part, call id, arguments, output, a reasoning summary, a token count's usage, a compaction's
replacement history) takes an odd value (a wrong type, a lone surrogate, a bidi control, nesting
thousands of levels deep) and everything a user can reach on the result runs: ``open_session``,
the engine's contract, the views' payloads and context views, the static export, the usage
totals. The file is never written. ``PI_LAB_FUZZ_EXAMPLES`` bounds the run (default 300).
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import fieldfuzz

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from generate_codex_sessions import generate_session  # noqa: E402

EXAMPLES = int(os.environ.get("PI_LAB_FUZZ_EXAMPLES", "300"))

CODEX_FIELD_PATHS: list[tuple[str, ...]] = [
    ("type",), ("timestamp",), ("payload",), ("payload", "type"), ("payload", "id"), ("payload", "cwd"),
    ("payload", "timestamp"), ("payload", "forked_from_id"), ("payload", "source"), ("payload", "model_provider"),
    ("payload", "model"), ("payload", "role"), ("payload", "content"), ("payload", "content", "#"),
    ("payload", "content", "#", "type"), ("payload", "content", "#", "text"), ("payload", "content", "#", "image_url"),
    ("payload", "summary"), ("payload", "summary", "#", "text"), ("payload", "encrypted_content"),
    ("payload", "call_id"), ("payload", "name"), ("payload", "arguments"), ("payload", "input"), ("payload", "output"),
    ("payload", "action"), ("payload", "action", "command"), ("payload", "info"),
    ("payload", "info", "last_token_usage"), ("payload", "info", "last_token_usage", "input_tokens"),
    ("payload", "info", "last_token_usage", "cached_input_tokens"), ("payload", "info", "total_token_usage"),
    ("payload", "info", "model_context_window"), ("payload", "message"), ("payload", "replacement_history"),
    ("payload", "replacement_history", "#"), ("payload", "replacement_history", "#", "content"),
]


def _base() -> tuple[list[bytes], list[bytes]]:
    with tempfile.TemporaryDirectory() as folder:
        parent, fork = generate_session(Path(folder), seed=9, turns=4, fork=True)
        return parent.read_bytes().splitlines(), fork.read_bytes().splitlines()


PARENT, FORK = _base()
PARENT_ID, FORK_ID = (orjson.loads(lines[0])["payload"]["id"] for lines in (PARENT, FORK))


def _mutate(lines: list[bytes], rng: random.Random) -> tuple[bytes, str]:
    return fieldfuzz.mutate_line(lines, CODEX_FIELD_PATHS, rng)


def _run(path: Path, home: Path) -> list[fieldfuzz.Finding]:
    from pi_lab.formats.codex_usage import folder_usage

    run = fieldfuzz.Runner()
    fieldfuzz.agent_file_steps(run, path)
    run.step("usage", lambda: folder_usage(home))
    return run.findings


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_one_odd_field_of_a_codex_line_never_raises_a_built_in_error(
        tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    rng = random.Random(seed)
    mutate_fork = rng.random() < 0.3
    data, described = _mutate(FORK if mutate_fork else PARENT, rng)
    home = tmp_path_factory.mktemp("codexfuzz")
    folder = home / "sessions" / "2026" / "01" / "10"
    folder.mkdir(parents=True)
    # The fork finds its parent beside it (the copied prefix is compared line by line).
    parent = folder / f"rollout-2026-01-10T09-00-00-{PARENT_ID}.jsonl"
    fork = folder / f"rollout-2026-01-10T09-30-00-{FORK_ID}.jsonl"
    parent.write_bytes(b"\n".join(PARENT) + b"\n" if mutate_fork else data)
    fork.write_bytes(data if mutate_fork else b"\n".join(FORK) + b"\n")
    target = fork if mutate_fork else parent
    findings = _run(target, home)
    assert not findings, fieldfuzz.describe_findings(described, findings)
    assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(data).digest()


def test_the_mutator_changes_codex_lines() -> None:
    changed = sum(_mutate(PARENT, random.Random(seed))[0] != b"\n".join(PARENT) + b"\n" for seed in range(20))
    assert changed >= 18
