"""pi_lab.replay: pi's automatic compaction under other settings, checked two ways.

1. At the settings a session ran with, the replay fires exactly where its real threshold
   compactions are (sessions recorded by pi_lab's own AgentSession on the offline model, and
   the shipped tiny-auth session).
2. At any settings, every number the incremental replay gives equals a from-scratch
   computation on the hypothetical path: the projection at every call, the corrected call
   tokens, and the threshold decision at every check point.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil

import pytest

import pi_lab
from pi_lab import AgentSession, SessionManager
from pi_lab.agent import demo_tools
from pi_lab.compaction import CompactionSettings, estimate_tokens, should_compact
from pi_lab.compaction.replay import ReplayError, replay as replay_open_session
from pi_lab.compaction.tokens import calculate_context_tokens, estimate_context_tokens, usage_anchor
from pi_lab.data import recorded_session
from pi_lab.llm import OfflineModel, ToolCallReply
from pi_lab.session.projection import build_session_context

from tests.conftest import FIXTURES_DIR

FIXTURES = str(FIXTURES_DIR)


def _digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _record(tmp_path, window: int, reserve: int, keep: int, rounds: int) -> str:
    """A session recorded by AgentSession on the offline model with these settings."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for n in range(4):
        (repo / f"m{n}.py").write_text("".join(f"def f{n}_{i}(x):\n    return x * {i}\n" for i in range(40)))
    model = OfflineModel(context_window=window)
    settings = CompactionSettings(reserve_tokens=reserve, keep_recent_tokens=keep)
    sm = SessionManager.create(str(repo), tmp_path / "sessions")
    agent = AgentSession(sm, client=model, tools=demo_tools(str(repo)), settings=settings)

    async def run():
        for r in range(rounds):
            model.push(ToolCallReply("read", {"path": f"m{r % 4}.py"}), f"Round {r}: the module m{r % 4} multiplies.")
            await agent.prompt(f"Round {r}: read m{r % 4}.py and tell me what it does, in detail please.")

    asyncio.run(run())
    return sm.session_file


def _real_threshold_compactions(path: str) -> list[tuple[str, str]]:
    branch = SessionManager.open(path, read_only=True).get_branch()
    return [(branch[i - 1]["id"], e["firstKeptEntryId"]) for i, e in enumerate(branch) if e["type"] == "compaction"]


@pytest.mark.parametrize("window,reserve,keep", [(3000, 1000, 400), (4000, 1500, 800), (3500, 1500, 300)])
def test_replay_at_the_sessions_own_settings_fires_where_it_compacted(tmp_path, window, reserve, keep):
    path = _record(tmp_path, window, reserve, keep, rounds=12)
    real = _real_threshold_compactions(path)
    assert len(real) >= 2, "the recording must compact at least twice for the test to mean something"
    before = _digest(path)
    result = pi_lab.replay(path, context_window=window, reserve_tokens=reserve, keep_recent_tokens=keep)
    assert [(c["after_entry_id"], c["first_kept_entry_id"]) for c in result.compactions] == real
    assert all(c["real_entry_id"] for c in result.compactions)
    assert result.dropped_real_compactions == []
    assert not any(call["estimated"] for call in result.calls)
    assert _digest(path) == before


def test_replay_of_the_shipped_session_at_its_settings(tmp_path):
    rec = recorded_session()
    path = shutil.copy(rec.path, tmp_path / "tiny-auth.jsonl")
    result = pi_lab.replay(path, context_window=rec.context_window, reserve_tokens=rec.reserve_tokens,
                           keep_recent_tokens=rec.keep_recent_tokens)
    assert [(c["after_entry_id"], c["first_kept_entry_id"]) for c in result.compactions] == \
        _real_threshold_compactions(path)
    assert [c["tokens_before"] for c in result.compactions] == [
        e["tokensBefore"] for e in SessionManager.open(path, read_only=True).get_branch() if e["type"] == "compaction"]


def _sessions(tmp_path) -> list[str]:
    paths = [shutil.copy(recorded_session().path, tmp_path / "tiny.jsonl")]
    if os.path.isdir(FIXTURES):
        for name in ("before-compaction.jsonl", "public-twkrash-branching.jsonl", "public-whamp-v1-linear.jsonl"):
            if os.path.exists(os.path.join(FIXTURES, name)):
                paths.append(shutil.copy(os.path.join(FIXTURES, name), tmp_path / name))
    return paths


def _check_from_scratch(result, real_path) -> None:
    """Recompute every call and check point of ``result`` from scratch on its path."""
    hypo = result.path
    real_by_id = {e["id"]: i for i, e in enumerate(real_path)}
    hypo_compactions = {c["id"]: c for c in result.compactions}
    calls = iter(result.calls)
    for i, entry in enumerate(hypo):
        message = entry.get("message") if entry.get("type") == "message" else None
        if not message or message.get("role") != "assistant":
            continue
        call = next(calls)
        assert call["entry_id"] == entry["id"]
        # the context before this call, hypothetical and real, from scratch
        hypo_ctx = build_session_context(hypo[:i])
        j = real_by_id[entry["id"]]
        real_ctx = build_session_context(real_path[:j])
        original = real_path[j]["message"]
        if usage_anchor(original) is not None:
            measured = calculate_context_tokens(original["usage"])
            difference = sum(map(estimate_tokens, hypo_ctx.messages)) - sum(map(estimate_tokens, real_ctx.messages))
            assert call["context_tokens"] == max(0, measured + difference)
        # the compaction in force is the latest one on the hypothetical path before the call
        in_force = next((e["id"] for e in reversed(hypo[:i]) if e["type"] == "compaction"), None)
        assert call["compaction_id"] == in_force
        assert call["compaction_id"] is None or call["compaction_id"] in hypo_compactions
    assert next(calls, None) is None
    # every hypothetical compaction: the context was over the threshold when it fired
    for record in result.compactions:
        assert should_compact(record["context_tokens_at_check"], result.context_window, result.settings)
        position = next(i for i, e in enumerate(hypo) if e.get("id") == record["id"])
        assert hypo[position - 1]["id"] == record["after_entry_id"]
        # what it keeps starts at its first kept entry, and what the model sees after it is
        # the summary followed by the kept messages
        kept_ctx = build_session_context(hypo[:position + 1])
        assert kept_ctx.messages[0]["role"] == "compactionSummary"
        assert record["kept_entry_ids"][0] == record["first_kept_entry_id"]


@pytest.mark.parametrize("settings", [(200_000, 16_384, 20_000), (120_000, 30_000, 8_000), (60_000, 8_000, 2_000)])
def test_replay_at_other_settings_equals_a_from_scratch_projection(tmp_path, settings):
    window, reserve, keep = settings
    for path in _sessions(tmp_path):
        session = pi_lab.open_session(path)
        real_path = session.get_branch()
        if window == 200_000 and "tiny" in str(path):
            window_here = 2_500  # the small session needs a small window to compact at all
        else:
            window_here = window
        reserve_here = min(reserve, window_here // 2)
        keep_here = min(keep, window_here // 4)
        result = pi_lab.replay(session, context_window=window_here, reserve_tokens=reserve_here,
                               keep_recent_tokens=keep_here)
        _check_from_scratch(result, real_path)


def test_no_compaction_when_the_window_is_huge(tmp_path):
    rec = recorded_session()
    path = shutil.copy(rec.path, tmp_path / "tiny.jsonl")
    result = pi_lab.replay(path, context_window=1_000_000, reserve_tokens=1_000, keep_recent_tokens=600)
    assert result.compactions == []
    assert len(result.dropped_real_compactions) == 2
    # without the real compactions the context only grows
    tokens = [c["context_tokens"] for c in result.calls]
    assert tokens == sorted(tokens)
    assert result.calls[-1]["context_tokens"] > result.calls[-1]["measured_tokens"]


def test_a_smaller_window_compacts_earlier_and_says_what_it_summarizes(tmp_path):
    rec = recorded_session()
    path = shutil.copy(rec.path, tmp_path / "tiny.jsonl")
    result = pi_lab.replay(path, context_window=2_400, reserve_tokens=1_000, keep_recent_tokens=300)
    real_first = _real_threshold_compactions(path)[0][0]
    ids = [e["id"] for e in SessionManager.open(path, read_only=True).get_branch()]
    first = result.compactions[0]
    assert ids.index(first["after_entry_id"]) < ids.index(real_first)
    assert first["id"].startswith("whatif-") and first["real_entry_id"] is None
    assert first["summary"].strip()
    assert first["summarized_entry_ids"] and first["kept_entry_ids"]
    assert set(first["summarized_entry_ids"]).isdisjoint(first["kept_entry_ids"])
    ctx = result.context_at(first["id"])
    assert ctx.messages[0]["role"] == "compactionSummary"
    assert all(e.get("whatIf") is True for e in result.path if e.get("type") == "compaction" and e["id"].startswith("whatif-"))


def test_bad_arguments_are_clear_errors(tmp_path):
    path = shutil.copy(recorded_session().path, tmp_path / "tiny.jsonl")
    with pytest.raises(ReplayError, match="context_window"):
        pi_lab.replay(path, context_window=0, reserve_tokens=10, keep_recent_tokens=10)
    with pytest.raises(ReplayError, match="not in the session"):
        pi_lab.replay(path, context_window=4000, reserve_tokens=10, keep_recent_tokens=10, leaf="nope")
    with pytest.raises(ReplayError, match="path or an open session"):
        pi_lab.replay(42, context_window=4000, reserve_tokens=10, keep_recent_tokens=10)
    # The compaction layer opens no files (the adapters sit above it): only pi_lab.replay does.
    with pytest.raises(ReplayError, match="takes an open session"):
        replay_open_session(path, context_window=4000, reserve_tokens=10, keep_recent_tokens=10)


def test_replay_to_an_earlier_leaf_stops_there(tmp_path):
    path = shutil.copy(recorded_session().path, tmp_path / "tiny.jsonl")
    branch = SessionManager.open(path, read_only=True).get_branch()
    leaf = [e for e in branch if e["type"] == "message" and e["message"]["role"] == "assistant"][5]["id"]
    result = pi_lab.replay(path, context_window=4000, reserve_tokens=2000, keep_recent_tokens=600, leaf=leaf)
    assert result.calls[-1]["entry_id"] == leaf
    assert len(result.calls) == 6
