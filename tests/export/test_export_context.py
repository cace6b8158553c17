"""The delta-encoded "what the model sees" of an export equals context_at at every entry."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import copy_fixture, fixture_files, generated_session, write_session  # noqa: E402
from helpers import SEED_SECTION_14  # noqa: E402

from pi_lab.export.context import SCALARS, context_records, messages_of  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.session.flatten import flatten_tree  # noqa: E402
from pi_lab.view.context import context_at  # noqa: E402


def _check(sm, limit: int | None = None) -> int:
    flat = flatten_tree(sm.get_tree(), sm.leaf_id)
    records = context_records(flat.entries, flat.parents)
    assert len(records) == len(flat.entries)
    step = 1 if limit is None else max(1, len(flat.entries) // limit)
    checked = 0
    for i in range(0, len(flat.entries), step):
        want = context_at(sm.get_branch(flat.ids[i]))
        assert records[i]["s"] == [want[k] for k in SCALARS], (i, flat.ids[i])
        assert messages_of(records, i) == want["messages"], (i, flat.ids[i])
        checked += 1
    return checked


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.stem)
def test_fixture_contexts(path, tmp_path):
    sm = SessionManager.open(str(copy_fixture(path, tmp_path)), read_only=True)
    assert _check(sm, None if sm.get_entry_count() <= 300 else 300) > 0


def test_seed_and_generated_contexts(tmp_path):
    seed = [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]
    sessions = [seed] + [generated_session(s, 260) for s in range(20, 32)]
    kinds = set()
    for n, entries in enumerate(sessions):
        sm = SessionManager.open(str(write_session(entries, tmp_path / f"s{n}.jsonl")), read_only=True)
        kinds.update(e.get("type") for e in sm.entries)
        _check(sm)
    # the generated sessions exercise every entry kind the delta encoding treats apart
    assert {"compaction", "context_edit", "branch_summary", "thinking_level_change", "model_change"} <= kinds
