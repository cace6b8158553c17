"""Differential tests against pi 1.6.0 itself.

Random session branches (every entry type, context edits, compactions, unicode, images, tool
calls, failed attempts) go through pi_lab and through pi's own compaction modules
(``pi_oracle.mjs``, run with node on the package installed by ``bench/pi_runner/setup.sh``);
the answers must be equal. Skipped when node or the pi package is not available.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cbuild import FakeClient, model
from oracle import Gen, OracleUnavailable, ask, plain

from pi_lab.compaction import (
    CompactionSettings,
    FileOperations,
    collect_entries_for_branch_summary,
    compact,
    compute_file_lists,
    convert_to_llm,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
    find_cut_point,
    find_turn_start_index,
    generate_branch_summary,
    prepare_branch_entries,
    prepare_compaction,
    serialize_conversation,
)
from pi_lab.session import build_session_projection, entry_to_messages

SEEDS = range(150)
KEEPS = (0, 1, 50, 300, 2000, 20000)
BUDGETS = (0, 100, 1000)


def _estimate(e) -> dict:
    return {"tokens": e.tokens, "usageTokens": e.usage_tokens, "trailingTokens": e.trailing_tokens,
            "lastUsageIndex": e.last_usage_index}


def _ops(ops: FileOperations) -> dict:
    return {"read": list(ops.read), "written": list(ops.written), "edited": list(ops.edited)}


def _preparation(p) -> Any:
    if p is None:
        return None
    return plain({
        "firstKeptEntryId": p.first_kept_entry_id,
        "messagesToSummarize": p.messages_to_summarize,
        "turnPrefixMessages": p.turn_prefix_messages,
        "isSplitTurn": p.is_split_turn,
        "tokensBefore": p.tokens_before,
        "previousSummary": p.previous_summary,
        "fileOps": _ops(p.file_ops),
    })


class Cases:
    """Pairs of (oracle request, pi_lab answer), answered by pi in one batch."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.expected: list[Any] = []
        self.labels: list[str] = []

    def add(self, label: str, request: dict, mine: Any) -> None:
        self.labels.append(label)
        self.requests.append(request)
        self.expected.append(mine)

    def check(self) -> None:
        try:
            answers = ask(self.requests)
        except OracleUnavailable as exc:
            pytest.skip(f"pi 1.6.0 not available for differential tests: {exc}")
        mismatches = []
        for label, request, answer, mine in zip(self.labels, self.requests, answers, self.expected):
            if "error" in answer:
                mismatches.append(f"{label}: pi raised {answer['error'][:200]}")
            elif answer["ok"] != mine:
                mismatches.append(f"{label}: pi {str(answer['ok'])[:300]} != pi_lab {str(mine)[:300]}")
        assert not mismatches, f"{len(mismatches)} of {len(self.requests)} differ:\n" + "\n".join(mismatches[:10])


def test_token_estimates_serialisation_and_projected_estimates_match_pi():
    cases = Cases()
    for seed in SEEDS:
        g = Gen(seed)
        entries = g.branch(g.r.randint(3, 60))
        projection = build_session_projection(entries)
        messages = list(projection.messages) + [m for e in entries for m in entry_to_messages(e)]
        cases.add(f"estimateTokens/{seed}", {"op": "estimateTokens", "messages": messages},
                  [estimate_tokens(m) for m in messages])
        cases.add(f"estimateContextTokens/{seed}", {"op": "estimateContextTokens", "messages": projection.messages},
                  _estimate(estimate_context_tokens(projection.messages)))
        cases.add(f"estimateProjected/{seed}", {"op": "estimateProjected", "entries": entries},
                  _estimate(estimate_projected_context_tokens(projection, entries)))
        cases.add(f"serialize/{seed}", {"op": "serialize", "messages": projection.messages},
                  serialize_conversation(convert_to_llm(projection.messages)))
    cases.check()


def test_prepare_compaction_matches_pi():
    cases = Cases()
    for seed in SEEDS:
        g = Gen(1000 + seed)
        entries = g.branch(g.r.randint(3, 60))
        for keep in KEEPS:
            settings = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": keep}
            cases.add(f"prepare/{1000 + seed}/{keep}", {"op": "prepare", "entries": entries, "settings": settings},
                      _preparation(prepare_compaction(entries, CompactionSettings(keep_recent_tokens=keep))))
    cases.check()


def test_failed_attempt_tails_match_pi():
    # Overflow recovery shapes: … U (big) E(error) CE(E→null) [metadata] — the recovery-omission rule.
    cases = Cases()
    for seed in range(60):
        g = Gen(5000 + seed)
        entries = g.branch(g.r.randint(2, 20), edits=False)
        parent = entries[-1]["id"]
        big = {"type": "message", "id": g.new_id(), "parentId": parent, "timestamp": g.ts(),
               "message": {"role": "user", "content": "h" * g.r.randint(100, 40000), "timestamp": 1}}
        failed = {"type": "message", "id": g.new_id(), "parentId": big["id"], "timestamp": g.ts(),
                  "message": {"role": "assistant", "content": [], "api": "x", "provider": "p", "model": "m",
                              "usage": g.usage(), "stopReason": "error", "errorMessage": "prompt is too long",
                              "timestamp": 2}}
        edit = {"type": "context_edit", "id": g.new_id(), "parentId": failed["id"], "timestamp": g.ts(),
                "targetId": failed["id"], "replacement": None}
        tail = [big, failed, edit]
        if g.r.random() < 0.3:
            tail.append({"type": "model_change", "id": g.new_id(), "parentId": edit["id"], "timestamp": g.ts(),
                         "provider": "p", "modelId": "m"})
        if g.r.random() < 0.2:
            target = g.r.choice([e["id"] for e in entries if e["type"] == "message"])
            tail.append({"type": "context_edit", "id": g.new_id(), "parentId": tail[-1]["id"], "timestamp": g.ts(),
                         "targetId": target, "replacement": {"content": "x"}})
        path = entries + tail
        for keep in (1, 100, 5000, 50000):
            settings = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": keep}
            cases.add(f"recovery/{5000 + seed}/{keep}", {"op": "prepare", "entries": path, "settings": settings},
                      _preparation(prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep))))
    cases.check()


def test_entry_based_cut_points_match_pi():
    cases = Cases()
    for seed in SEEDS:
        g = Gen(2000 + seed)
        entries = g.branch(g.r.randint(3, 50))
        for keep in KEEPS:
            start = g.r.randint(0, len(entries) - 1)
            end = g.r.randint(start, len(entries))
            c = find_cut_point(entries, start, end, keep)
            cases.add(
                f"findCutPoint/{2000 + seed}/{start}:{end}/{keep}",
                {"op": "findCutPoint", "entries": entries, "start": start, "end": end, "keep": keep},
                {"firstKeptEntryIndex": c.first_kept_entry_index, "turnStartIndex": c.turn_start_index,
                 "isSplitTurn": c.is_split_turn},
            )
        index = g.r.randint(0, len(entries) - 1)
        start = g.r.randint(0, index)
        cases.add(f"findTurnStartIndex/{2000 + seed}",
                  {"op": "findTurnStartIndex", "entries": entries, "index": index, "start": start},
                  find_turn_start_index(entries, index, start))
    cases.check()


def test_branch_preparation_matches_pi():
    cases = Cases()
    for seed in SEEDS:
        g = Gen(3000 + seed)
        entries = g.branch(g.r.randint(1, 50))
        for budget in BUDGETS:
            b = prepare_branch_entries(entries, budget)
            cases.add(f"prepareBranch/{3000 + seed}/{budget}", {"op": "prepareBranch", "entries": entries, "budget": budget},
                      plain({"messages": b.messages, "totalTokens": b.total_tokens, "fileOps": _ops(b.file_ops)}))
    cases.check()


class _Session:
    def __init__(self, entries):
        self.by_id = {e["id"]: e for e in entries}

    def get_entry(self, entry_id):
        return self.by_id.get(entry_id)

    def get_branch(self, from_id):
        path = []
        current = self.by_id.get(from_id)
        while current is not None:
            path.append(current)
            current = self.by_id.get(current.get("parentId")) if current.get("parentId") else None
        path.reverse()
        return path


def test_collect_entries_for_branch_summary_matches_pi():
    cases = Cases()
    for seed in SEEDS:
        g = Gen(4000 + seed)
        entries: list[dict] = []
        for i in range(g.r.randint(2, 40)):
            parent = None if (not entries or g.r.random() < 0.05) else g.r.choice(entries[-8:])["id"]
            entries.append({"type": "message", "id": g.new_id(), "parentId": parent, "timestamp": g.ts(),
                            "message": {"role": "user", "content": str(i), "timestamp": i}})
        old = g.r.choice([e["id"] for e in entries] + [None])
        target = g.r.choice(entries)["id"]
        found, ancestor = collect_entries_for_branch_summary(_Session(entries), old, target)
        cases.add(f"collect/{4000 + seed}", {"op": "collect", "entries": entries, "oldLeafId": old, "targetId": target},
                  {"entries": [e["id"] for e in found], "commonAncestorId": ancestor})
    cases.check()


def test_file_lists_match_pi():
    cases = Cases()
    g = Gen(7)
    names = ["a", "B", "b", "é", "😀", "\uff5e", "Z", "z1", "z10", "z2", "_", "-"]
    for i in range(40):
        read = g.r.sample(names, g.r.randint(0, 6))
        written = g.r.sample(names, g.r.randint(0, 3))
        edited = g.r.sample(names, g.r.randint(0, 3))
        ops = FileOperations()
        ops.read.update(read)
        ops.written.update(written)
        ops.edited.update(edited)
        read_files, modified_files = compute_file_lists(ops)
        cases.add(f"fileLists/{i}", {"op": "fileLists", "read": read, "written": written, "edited": edited},
                  {"readFiles": read_files, "modifiedFiles": modified_files})
    cases.check()


# --- summary requests: same structure and results as pi, with our own prompt wording ----------------


def _reply(text: str, inp: int, out: int, stop: str = "stop", total_from_provider: bool | None = None) -> dict:
    cost = {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75}
    if total_from_provider is not None:
        cost["totalFromProvider"] = total_from_provider
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "x", "provider": "anthropic",
            "model": "claude-test", "usage": {"input": inp, "output": out, "cacheRead": 1, "cacheWrite": 2,
                                              "totalTokens": inp + out + 3, "cost": cost},
            "stopReason": stop, "timestamp": 1}


def _conversation_part(prompt: str, marker: str) -> str:
    assert marker in prompt
    return prompt[: prompt.index(marker) + len(marker)]


def test_compact_requests_and_results_match_pi():
    pi_model = {"provider": "anthropic", "id": "claude-test", "api": "anthropic-messages", "reasoning": True,
                "contextWindow": 200000, "maxTokens": 64000}
    cases: list[tuple] = []
    requests = []
    for seed in range(40):
        g = Gen(6000 + seed)
        entries = g.branch(g.r.randint(5, 50))
        prep = prepare_compaction(entries, CompactionSettings(keep_recent_tokens=g.r.choice([1, 50, 300])))
        if prep is None:
            continue
        custom = g.r.choice([None, "focus on the tests"])
        level = g.r.choice([None, "off", "high"])
        replies = [_reply("## Goal\nHISTORY " + str(seed), 10, 5, total_from_provider=True),
                   _reply("## Original Request\nPREFIX", 7, 3, total_from_provider=g.r.random() < 0.5)]
        client = FakeClient(*[dict(r) for r in replies])
        result = asyncio.run(compact(prep, client, model(reasoning=True), custom_instructions=custom,
                                     thinking_level=level))
        payload = plain({
            "firstKeptEntryId": prep.first_kept_entry_id, "messagesToSummarize": prep.messages_to_summarize,
            "turnPrefixMessages": prep.turn_prefix_messages, "isSplitTurn": prep.is_split_turn,
            "tokensBefore": prep.tokens_before, "fileOps": _ops(prep.file_ops),
            **({"previousSummary": prep.previous_summary} if prep.previous_summary is not None else {}),
        })
        requests.append({"op": "compact", "preparation": payload, "model": pi_model, "replies": replies,
                         "customInstructions": custom, "thinkingLevel": level})
        cases.append((seed, result, client))
    try:
        answers = ask(requests)
    except OracleUnavailable as exc:
        pytest.skip(str(exc))
    assert len(cases) >= 20
    for (seed, result, client), answer in zip(cases, answers):
        pi = answer["ok"]
        assert "thrown" not in pi, (seed, pi)
        assert plain(result.to_dict()) == pi["result"], seed
        assert len(client.calls) == len(pi["requests"]), seed
        for mine, theirs in zip(client.calls, pi["requests"]):
            assert mine["reasoning"] == theirs["reasoning"]
            assert mine["max_tokens"] is None and theirs["maxTokens"] is None
            assert theirs["cacheRetention"] == "none" and theirs["hasSessionId"]
            assert mine["session_id"]
            my_prompt = mine["context"]["messages"][0]["content"][0]["text"]
            pi_prompt = theirs["messages"][-1]["content"][0]["text"]
            marker = "# Instructions\n" if pi_prompt.startswith("# Conversation\n") else "</conversation>\n\n"
            assert _conversation_part(my_prompt, marker) == _conversation_part(pi_prompt, marker), seed
            if "<previous-summary>" in pi_prompt:
                block = pi_prompt[pi_prompt.index("<previous-summary>"): pi_prompt.index("</previous-summary>")]
                assert block in my_prompt
            if theirs["messages"][-1]["content"][0]["text"].endswith("Additional focus: focus on the tests"):
                assert my_prompt.endswith("\n\nAdditional focus: focus on the tests")


def test_branch_summary_requests_and_results_match_pi():
    requests = []
    cases = []
    for seed in range(40):
        g = Gen(8000 + seed)
        entries = g.branch(g.r.randint(1, 40))
        window = g.r.choice([0, 20000, 200000])
        reserve = g.r.choice([16384, 1000])
        custom = g.r.choice([None, "only the API"])
        replace = g.r.random() < 0.3
        level = g.r.choice([None, "off", "medium"])
        replies = [_reply("## Goal\nBRANCH " + str(seed), 4, 2, stop=g.r.choice(["stop", "stop", "length"]))]
        client = FakeClient(dict(replies[0]))
        result = asyncio.run(generate_branch_summary(
            entries, client, model(reasoning=True, context_window=window), custom_instructions=custom,
            replace_instructions=replace, reserve_tokens=reserve, thinking_level=level))
        pi_model = {"provider": "anthropic", "id": "claude-test", "api": "anthropic-messages", "reasoning": True,
                    "contextWindow": window, "maxTokens": 64000}
        requests.append({"op": "branchSummary", "entries": entries, "model": pi_model, "replies": replies,
                         "thinkingLevel": level, "customInstructions": custom, "replaceInstructions": replace,
                         "reserveTokens": reserve})
        cases.append((seed, result, client, custom, replace))
    try:
        answers = ask(requests)
    except OracleUnavailable as exc:
        pytest.skip(str(exc))
    for (seed, result, client, custom, replace), answer in zip(cases, answers):
        pi = answer["ok"]
        assert plain(result.to_dict()) == pi["result"], seed
        assert len(client.calls) == len(pi["requests"]), seed
        for my_call, theirs in zip(client.calls, pi["requests"]):
            assert my_call["reasoning"] == theirs["reasoning"]
            my_prompt = my_call["context"]["messages"][0]["content"][0]["text"]
            pi_prompt = theirs["messages"][-1]["content"][0]["text"]
            assert _conversation_part(my_prompt, "</conversation>\n\n") == _conversation_part(pi_prompt, "</conversation>\n\n")
            if custom and replace:
                assert my_prompt == pi_prompt  # the custom text alone: identical requests
