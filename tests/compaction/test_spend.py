"""What a session spent, by the one rule of pi_lab.compaction.spend (issue #23: the spend was
summed three times with different rules and no test comparing them).

The agent's session statistics, the branch comparison's per-side usage and the corpus's tables
agree on real and generated sessions, each within its documented scope; odd counters are left
out of every sum the same way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.compute as pc
import pytest
from shared_fixtures import FIXTURES_DIR, FIXTURES_PRESENT, NO_FIXTURES
from view.view_sessions import generated_session

from pi_lab.agent import AgentSession
from pi_lab.compaction import CompactionSettings
from pi_lab.compaction.spend import Spend, spend_usage, sum_spend, usage_numbers
from pi_lab.corpus import Corpus
from pi_lab.llm import OfflineModel
from pi_lab.llm.model import Model
from pi_lab.session import SessionManager
from pi_lab.view.branches import compare_branches

FIXTURE_FILES = sorted(FIXTURES_DIR.glob("*.jsonl")) if FIXTURES_PRESENT else []


def _stats(sm):
    model = Model("anthropic", "claude-test", "anthropic-messages", context_window=200_000, max_tokens=1_000)
    agent = AgentSession(sm, model=model, client=OfflineModel(context_window=200_000), settings=CompactionSettings(),
                         record_startup=False)
    return agent.get_session_stats()


def _copy_generated(tmp_path: Path, seed: int) -> Path:
    sm = generated_session(600, seed)
    folder = tmp_path / "sessions" / "--gen--"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"2026-01-0{seed}T00-00-00-000Z_gen-{seed}.jsonl"
    path.write_text("".join(__import__("orjson").dumps(e).decode() + "\n" for e in [sm.get_header(), *sm.entries]))
    return path


def _sessions(tmp_path: Path) -> list[Path]:
    paths = [_copy_generated(tmp_path, seed) for seed in (1, 2, 3)]
    folder = tmp_path / "sessions" / "--fixtures--"
    folder.mkdir(parents=True, exist_ok=True)
    for source in FIXTURE_FILES:
        paths.append(Path(shutil.copy(source, folder / source.name)))
    return paths


def test_the_agents_statistics_are_the_session_scope_spend(tmp_path):
    for path in _sessions(tmp_path):
        sm = SessionManager.open(path, read_only=True)
        stats = _stats(sm)
        spend = sum_spend(sm.entries)
        assert (stats.input, stats.output, stats.cache_read, stats.cache_write) == (
            spend.input, spend.output, spend.cache_read, spend.cache_write), path.name
        assert stats.cost == pytest.approx(spend.cost) and stats.total_tokens == spend.tokens


def test_a_branch_comparison_side_sums_its_path_by_the_same_rule(tmp_path):
    for path in _sessions(tmp_path):
        sm = SessionManager.open(path, read_only=True)
        path_entries = sm.get_branch()
        if len(path_entries) < 2:
            continue
        # From the first entry to the leaf: side A is the path after the first entry.
        side = compare_branches(sm, sm.leaf_id, path_entries[0]["id"])["a_stats"]
        spend = sum_spend(path_entries[1:])
        tokens = side["tokens"]
        assert (tokens["input"], tokens["output"], tokens["cache_read"], tokens["cache_write"], tokens["total"]) == (
            spend.input, spend.output, spend.cache_read, spend.cache_write, spend.tokens), path.name
        assert side["cost"] == pytest.approx(spend.cost) and side["usage_known"] == (spend.records > 0)


def test_the_corpus_tables_hold_the_same_spend_split_by_scope(tmp_path):
    """Session scope = model calls (the corpus's usage, ccusage's scope) + tool results' usage
    (the messages table) + the summary calls of compactions + what the corpus keeps no table for
    (usage entries and branch summaries' own calls)."""
    paths = _sessions(tmp_path)
    corpus = Corpus.scan([tmp_path / "sessions"], workers=1, cache=False)
    for path in paths:
        sm = SessionManager.open(path, read_only=True)
        here = pc.equal(corpus.model_calls.column("file"), str(path))
        calls_cost = pc.sum(corpus.model_calls.filter(here).column("cost")).as_py() or 0.0
        messages = corpus.messages.filter(pc.and_(pc.equal(corpus.messages.column("file"), str(path)),
                                                  pc.equal(corpus.messages.column("role"), "toolResult")))
        results_cost = pc.sum(messages.column("cost")).as_py() or 0.0
        compactions = corpus.compactions.filter(pc.equal(corpus.compactions.column("file"), str(path)))
        summaries_cost = pc.sum(compactions.column("summary_cost")).as_py() or 0.0
        untabled = Spend()
        for entry in sm.entries:
            if entry.get("type") in ("usage", "branch_summary"):
                untabled.add(usage_numbers(spend_usage(entry)))
        assert sum_spend(sm.entries).cost == pytest.approx(calls_cost + results_cost + summaries_cost + untabled.cost,
                                                           abs=1e-9), path.name


def test_odd_counters_are_left_out_of_every_sum():
    entries = [
        {"type": "message", "id": "a", "message": {"role": "assistant", "usage": {
            "input": 10, "output": "7", "cacheRead": True, "cacheWrite": float("nan"), "cost": {"total": 0.5}}}},
        {"type": "message", "id": "b", "message": {"role": "user", "usage": {"input": 1000}}},  # users spend nothing
        {"type": "compaction", "id": "c", "usage": {"input": 5, "output": 10**400, "cost": {"total": "x"}}},
        {"type": "label", "id": "d", "usage": {"input": 99}},  # not a spending entry
        {"type": "message", "id": "e", "message": {"role": "toolResult", "usage": "none"}},
    ]
    spend = sum_spend(entries)
    assert (spend.input, spend.output, spend.cache_read, spend.cache_write, spend.cost, spend.records) == (
        15, 0, 0, 0, 0.5, 2)
    # The agent's statistics of a file holding them: the same sums (pi would concatenate "7").
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    parented = [{**e, "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z"} for e in entries]
    stats = _stats(SessionManager.in_memory(entries=[header, *parented]))
    assert (stats.input, stats.output, stats.cost, stats.total_tokens) == (15, 0, 0.5, 15)


@pytest.mark.skipif(not FIXTURES_PRESENT, reason=NO_FIXTURES)
def test_the_real_fixtures_are_in_the_comparison():
    assert FIXTURE_FILES
