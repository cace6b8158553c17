"""Compaction of real pi session files (../shared/fixtures/pi-sessions; copies only), compared
with pi 1.6.0 where it is installed, plus a scale check on a 100,000-entry branch."""

from __future__ import annotations

import asyncio
import time

import pytest
from cbuild import FakeClient, model, reply, usage
from oracle import OracleUnavailable, ask, plain

from pi_lab.compaction import (
    CompactionSettings,
    compact,
    estimate_tokens,
    find_cut_point,
    prepare_compaction,
    serialize_conversation,
)
from pi_lab.compaction import convert_to_llm
from pi_lab.session import SessionManager

FIXTURES = [
    "before-compaction.jsonl",
    "large-session.jsonl",
    "public-dwsy-real-truncated.jsonl",
    "public-twkrash-branching.jsonl",
    "public-twkrash-uat.jsonl",
    "public-whamp-v1-linear.jsonl",
]


def open_copy(fixture_copy, name: str) -> SessionManager:
    return SessionManager.open(fixture_copy(name))


def test_large_session_compacts(fixture_copy):
    sm = open_copy(fixture_copy, "large-session.jsonl")  # v1, migrated on load
    branch = sm.get_branch()
    context = sm.build_session_context()
    assert len(sm.entries) > 100 and len(context.messages) > 100
    assert context.model is not None

    prep = prepare_compaction(branch, CompactionSettings())
    assert prep is not None
    kept = sm.get_entry(prep.first_kept_entry_id)
    assert kept["type"] == "message" and kept["message"]["role"] in ("user", "assistant")
    assert len(prep.messages_to_summarize) > 100
    assert prep.tokens_before > 100000
    # the entry-based variant also lands on a user/assistant message
    raw_cut = find_cut_point(branch, 0, len(branch), 20000)
    assert branch[raw_cut.first_kept_entry_index]["message"]["role"] in ("user", "assistant")

    client = FakeClient(reply("## Goal\n" + "Summary of a long coding session. " * 5, use=usage(50000, 800)),
                        reply("## Original Request\nThe turn so far.", use=usage(3000, 200)))
    result = asyncio.run(compact(prep, client, model()))
    assert len(result.summary) > 100
    assert "[Tool result]:" in client.prompt(0)  # real tool output reached the summariser …
    assert "more characters truncated]" in client.prompt(0)  # … cut to 2000 units where long
    sm.append_compaction(result.summary, result.first_kept_entry_id, result.tokens_before, result.details, False,
                         result.usage)
    after = sm.build_session_context().messages
    assert after[0]["role"] == "compactionSummary" and after[0]["summary"] == result.summary
    assert len(after) < len(context.messages)
    assert sum(estimate_tokens(m) for m in after) < prep.tokens_before
    # reload keeps the compacted view
    assert SessionManager.open(sm.session_file).build_session_context().messages == after


def test_before_compaction_fixture_second_compaction(fixture_copy):
    sm = open_copy(fixture_copy, "before-compaction.jsonl")
    branch = sm.get_branch()
    assert any(e["type"] == "compaction" for e in branch)
    prep = prepare_compaction(branch, CompactionSettings())
    assert prep is not None
    assert prep.previous_summary  # the file's own compaction is carried forward
    text = serialize_conversation(convert_to_llm(prep.messages_to_summarize))
    assert prep.previous_summary not in text


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_prepare_matches_pi(fixture_copy, name):
    sm = open_copy(fixture_copy, name)
    branch = sm.get_branch()
    requests, mine = [], []
    for keep in (1, 100, 2000, 20000):
        prep = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=keep))
        mine.append(None if prep is None else plain({
            "firstKeptEntryId": prep.first_kept_entry_id, "messagesToSummarize": prep.messages_to_summarize,
            "turnPrefixMessages": prep.turn_prefix_messages, "isSplitTurn": prep.is_split_turn,
            "tokensBefore": prep.tokens_before, "previousSummary": prep.previous_summary,
            "fileOps": {"read": list(prep.file_ops.read), "written": list(prep.file_ops.written),
                        "edited": list(prep.file_ops.edited)},
        }))
        requests.append({"op": "prepare", "entries": branch,
                         "settings": {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": keep}})
    try:
        answers = ask(requests)
    except OracleUnavailable as exc:
        pytest.skip(str(exc))
    for keep, answer, expected in zip((1, 100, 2000, 20000), answers, mine):
        if "error" in answer:
            # pi 1.6.0 crashes on some hand-made third-party fixtures (a message without
            # content); pi_lab answers instead of raising
            assert name == "public-twkrash-uat.jsonl", answer["error"]
            continue
        assert answer["ok"] == expected, (name, keep)


def _linear_branch(n: int) -> list[dict]:
    entries, parent = [], None
    for i in range(n):
        kind = i % 4
        if kind == 0:
            message = {"role": "user", "content": f"question {i} " + "x" * 200, "timestamp": i}
        elif kind == 1:
            message = {"role": "assistant", "content": [
                {"type": "text", "text": "y" * 100},
                {"type": "toolCall", "id": f"c{i}", "name": "read", "arguments": {"path": f"f{i % 50}.py"}}],
                "usage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 110},
                "stopReason": "toolUse", "timestamp": i}
        elif kind == 2:
            message = {"role": "toolResult", "toolCallId": f"c{i - 1}", "toolName": "read",
                       "content": [{"type": "text", "text": "z" * 300}], "isError": False, "timestamp": i}
        else:
            message = {"role": "assistant", "content": [{"type": "text", "text": "done"}],
                       "usage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 110},
                       "stopReason": "stop", "timestamp": i}
        entry_id = f"{i:08x}"
        entries.append({"type": "message", "id": entry_id, "parentId": parent,
                        "timestamp": "2026-01-01T00:00:00.000Z", "message": message})
        parent = entry_id
    return entries


def _best_time(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def test_prepare_scales_linearly_on_a_100k_branch():
    small, large = _linear_branch(25_000), _linear_branch(100_000)
    settings = CompactionSettings()
    prep = prepare_compaction(large, settings)
    assert prep is not None and len(prep.messages_to_summarize) > 99_000
    kept_index = next(i for i, e in enumerate(large) if e["id"] == prep.first_kept_entry_id)
    assert large[kept_index]["message"]["role"] in ("user", "assistant")
    t_small = _best_time(lambda: prepare_compaction(small, settings))
    t_large = _best_time(lambda: prepare_compaction(large, settings))
    # 4x the entries: linear work takes ~4x; quadratic would take ~16x
    assert t_large < 8 * t_small + 0.5, (t_small, t_large)
    assert t_large < 15.0
