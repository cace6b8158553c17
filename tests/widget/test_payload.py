"""Payloads on the seed example and the real pi fixtures: what the model sees at any entry, the
gauge (measured vs estimated, unknown after a compaction), entry detail and the compaction
preview, each checked against the engine."""

from __future__ import annotations

import json

import orjson
import pytest
from helpers import SEED_SECTION_14, Clock, Ids, asst_msg, cpu_growth, usage, user_msg

from pi_lab.agent import AgentSession
from pi_lab.compaction import CompactionSettings, estimate_projected_context_tokens, prepare_compaction
from pi_lab.session import SessionManager
from pi_lab.view.payload import (
    RequestError,
    SessionView,
    ViewSettings,
    context_payload,
    entry_payload,
    read_request,
    rows_payload,
    structure_payload,
)
from pi_lab.view.preview import ALREADY_COMPACTED, NOTHING_TO_COMPACT

FIXTURES = ["before-compaction.jsonl", "large-session.jsonl", "public-twkrash-branching.jsonl",
            "public-twkrash-uat.jsonl", "public-dwsy-real-truncated.jsonl", "public-whamp-v1-linear.jsonl"]


def seed_view(**view) -> SessionView:
    entries = [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]
    sm = SessionManager.in_memory(entries=entries, uuid_factory=Ids(), clock=Clock())
    return SessionView.open(sm, **view)


def test_context_at_any_entry_is_the_projection_with_the_leaf_there():
    view = seed_view()
    at_c1 = context_payload(view)
    assert at_c1["is_leaf"] and [m["source_id"] for m in at_c1["messages"]] == ["C1", "U4", "A6"]
    assert [m["role"] for m in at_c1["messages"]] == ["compactionSummary", "user", "assistant"]
    at_a4 = context_payload(view, "A4")
    assert not at_a4["is_leaf"]
    assert [m["source_id"] for m in at_a4["messages"]] == ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4"]
    assert at_a4["messages"][4]["role"] == "branchSummary"
    # The JWT branch: what the model saw before going back.
    assert [m["source_id"] for m in context_payload(view, "A3")["messages"]] == ["U1", "A1", "T1", "A2", "U2", "A3"]
    with pytest.raises(RequestError):
        context_payload(view, "nope")


def test_context_tokens_equal_pi_estimates():
    view = seed_view()
    sm = view.sm
    for entry_id in ("A2", "A4", "C1"):
        payload = context_payload(view, entry_id)
        branch = sm.get_branch(entry_id)
        expected = estimate_projected_context_tokens(sm.build_session_projection(entry_id), branch)
        assert payload["context_tokens"] == expected.tokens
        assert payload["estimated_total"] == sum(m["tokens"] for m in payload["messages"])


def test_context_lists_omitted_entries():
    sm = SessionManager.in_memory(clock=Clock(), uuid_factory=Ids())
    sm.append_message(user_msg("please"))
    failed = sm.append_message(asst_msg(None, stop="error", error="boom"))
    sm.append_context_edit(failed, None)
    sm.append_message(asst_msg("fine"))
    payload = context_payload(SessionView.open(sm))
    omitted = [m for m in payload["messages"] if m.get("omitted")]
    assert [m["source_id"] for m in omitted] == [failed] and omitted[0]["tokens"] == 0


def test_gauge_unknown_after_compaction_then_measured(tmp_path):
    view = seed_view()
    g = view.gauge
    assert g["unknown"] and g["tokens"] is None and g["measured"] == 0 and g["estimated"] > 0
    assert g["threshold"] == 128_000 - 16_384 and g["headroom"] == g["threshold"] - g["estimate_total"]
    assert [c["id"] for c in g["compactions"]] == ["C1"]
    assert g["compactions"][0]["tokens_before"] == 115000 and g["compactions"][0]["after_kind"] == "estimated"
    # The next good response after C1 makes the gauge known, measured from its usage.
    view.sm.append_message(user_msg("next"))
    view.sm.append_message(asst_msg("answer", use=usage(3000, 100)))
    g = view.refresh_gauge()
    assert not g["unknown"] and g["measured"] == 3100 and g["estimated"] == 0 and g["tokens"] == 3100
    assert g["compactions"][0]["after"] == 3100 and g["compactions"][0]["after_kind"] == "measured"


def test_gauge_stays_unknown_when_the_answer_after_a_compaction_is_omitted():
    # pi's rule: only an assistant the model still sees measures the context after a
    # compaction; one dropped by a context edit leaves the gauge unknown (as the agent says).
    view = seed_view()
    view.sm.append_message(user_msg("next"))
    answer = view.sm.append_message(asst_msg("answer", use=usage(3000, 100)))
    view.sm.append_context_edit(answer, None)
    g = view.refresh_gauge()
    assert g["unknown"] is True and g["tokens"] is None and g["anchor_id"] is None
    assert g["measured"] == 0 and g["estimated"] == g["estimate_total"] > 0
    agent = AgentSession(view.sm, record_startup=False)
    assert agent.get_context_usage().tokens is None


@pytest.mark.parametrize("name", FIXTURES)
def test_gauge_matches_agent_context_usage_on_real_fixtures(fixture_copy, name):
    sm = SessionManager.open(fixture_copy(name))
    agent = AgentSession(sm, record_startup=False)
    view = SessionView.open(sm, ViewSettings(context_window=agent.model.context_window))
    usage_now = agent.get_context_usage()
    assert view.gauge["tokens"] == usage_now.tokens
    if usage_now.tokens is not None:
        assert view.gauge["measured"] + view.gauge["estimated"] == usage_now.tokens
    # The columns hold every visible row, and each row's text is fetchable.
    header = structure_payload(view)
    assert header[:4] == b"PIR1"
    texts = rows_payload(view, 0, 50)["rows"]
    assert [t["id"] for t in texts] == view.rows.ids[:50]


@pytest.mark.parametrize("name", FIXTURES)
def test_entry_detail_on_real_fixtures(fixture_copy, name):
    sm = SessionManager.open(fixture_copy(name))
    view = SessionView.open(sm)
    for entry in sm.entries[:80]:
        detail = entry_payload(view, entry["id"])
        assert detail["id"] == entry["id"] and detail["type"] == entry["type"]
        assert detail["raw"]["truncated"] or json.loads(detail["raw"]["text"]) == entry
        message = entry.get("message") if entry["type"] == "message" else None
        if message and message.get("role") == "toolResult":
            assert detail["tool_result"]["tool_call_id"] == message.get("toolCallId")
        if message and message.get("role") == "assistant":
            calls = [b for b in message.get("content") or [] if b.get("type") == "toolCall"]
            assert sum(b["type"] == "tool_call" for b in detail["blocks"]) == len(calls)


def test_tool_result_detail_carries_its_call_and_truncates():
    sm = SessionManager.in_memory(clock=Clock(), uuid_factory=Ids())
    sm.append_message(user_msg("read"))
    sm.append_message(asst_msg(None, tool_calls=[{"id": "c1", "name": "read", "arguments": {"path": "big.txt"}}],
                               stop="toolUse"))
    result = sm.append_message({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                                "content": [{"type": "text", "text": "line\n" * 10_000}], "isError": False})
    view = SessionView.open(sm)
    detail = entry_payload(view, result)
    assert detail["tool_result"]["call"]["name"] == "read"
    assert detail["tool_result"]["truncated"] and detail["tool_result"]["length"] == 50_000
    assert detail["tool_result"]["lines"] == 10_001
    assert entry_payload(view, result, full=True)["tool_result"]["truncated"] is False


def test_compaction_preview_matches_prepare_compaction(fixture_copy):
    sm = SessionManager.open(fixture_copy("large-session.jsonl"))
    settings = ViewSettings(keep_recent_tokens=2000)
    view = SessionView.open(sm, settings)
    preview = read_request(view, "compact_preview")
    prep = prepare_compaction(sm.get_branch(), settings.compaction())
    assert preview["ok"] and preview["first_kept_id"] == prep.first_kept_entry_id
    assert preview["summarize"]["count"] == len(prep.messages_to_summarize)
    assert preview["turn_prefix"]["count"] == len(prep.turn_prefix_messages)
    assert preview["is_split_turn"] == prep.is_split_turn
    assert preview["kept"]["tokens"] >= 2000 or preview["kept"]["first_id"] == prep.first_kept_entry_id
    # Rows of the current branch: summarised ones come before the kept ones.
    assert 0 <= preview["summarize"]["first_row"] < preview["kept"]["first_row"]


def test_compaction_preview_refusals_use_pis_messages():
    assert read_request(seed_view(), "compact_preview") == {"ok": False, "reason": ALREADY_COMPACTED}
    sm = SessionManager.in_memory(clock=Clock(), uuid_factory=Ids())
    sm.append_message(user_msg("hi"))
    assert read_request(SessionView.open(sm), "compact_preview") == {"ok": False, "reason": NOTHING_TO_COMPACT}


def test_rows_request_detects_a_stale_version_and_unknown_ops():
    view = seed_view()
    assert rows_payload(view, 0, 5, version=view.rows.version + 1) == {"stale": True, "version": view.rows.version}
    assert len(rows_payload(view, 0, 5000)["rows"]) == len(view.rows.rows)
    assert read_request(view, "locate", {"id": "U2"})["id"] == "U2"
    with pytest.raises(RequestError):
        read_request(view, "explode")


def test_a_bad_request_is_a_pi_lab_error_not_a_bug():
    # A bad id is the user's (shown as is), so it belongs to pi_lab's own error hierarchy.
    from pi_lab.errors import PiLabError

    with pytest.raises(PiLabError, match="no-such-id"):
        read_request(seed_view(), "entry", {"id": "no-such-id"})
    assert issubclass(RequestError, ValueError)  # callers that catch ValueError keep working


def test_locate_follows_pis_nearest_visible_ancestor_rule():
    view = seed_view(filter_mode="user-only")
    # A6 is hidden in the user-only view: its nearest visible ancestor U4 is selected.
    assert read_request(view, "locate", {"id": "A6"})["id"] == "U4"
    assert read_request(view, "locate", {"id": "C1"})["id"] == "U4"


# ---------------------------------------------------------------------------------------------
# The gauge's compactions in one forward pass (issue 16: the prefix was re-projected for every
# compaction without a usage after it, 8k compactions 25 s).


def _compactions_by_reprojection(branch):
    """The former answer, kept as the oracle: project the prefix up to each compaction."""
    from pi_lab.compaction.tokens import calculate_context_tokens, usage_anchor
    from pi_lab.session.projection import project_path

    found = []
    positions = [i for i, e in enumerate(branch) if e.get("type") == "compaction"]
    for n, i in enumerate(positions):
        stop = positions[n + 1] if n + 1 < len(positions) else len(branch)
        after = kind = None
        for j in range(i + 1, stop):
            anchor = usage_anchor(branch[j].get("message")) if branch[j].get("type") == "message" else None
            if anchor is not None:
                after, kind = int(calculate_context_tokens(anchor)), "measured"
                break
        if after is None:
            head = list(branch[: i + 1])
            after, kind = int(estimate_projected_context_tokens(project_path(head), head).tokens), "estimated"
        found.append((branch[i].get("id"), after, kind))
    return found


def _tricky_branch():
    """Compactions whose kept range holds system messages, context edits, an older compaction,
    a compaction whose first kept entry is not on the branch, and a measured usage."""
    entries = []
    parent = None

    def add(entry):
        nonlocal parent
        entry = {"id": f"e{len(entries)}", "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z", **entry}
        entries.append(entry)
        parent = entry["id"]
        return entry["id"]

    first = add({"type": "message", "message": {"role": "user", "content": "question " * 40, "timestamp": 1}})
    add({"type": "message", "message": {"role": "system", "content": "be brief", "timestamp": 1}})
    answer = add({"type": "message", "message": asst_msg("answer " * 80)})
    add({"type": "context_edit", "targetId": answer, "replacement": {"content": "short"}})
    add({"type": "compaction", "summary": "sum one " * 30, "firstKeptEntryId": first, "tokensBefore": 900,
         "systemMessage": {"role": "system", "content": "snapshot " * 20, "timestamp": 2}})
    kept = add({"type": "message", "message": {"role": "user", "content": "more " * 50, "timestamp": 3}})
    add({"type": "compaction", "summary": "sum two", "firstKeptEntryId": first, "tokensBefore": 800})
    add({"type": "context_edit", "targetId": kept, "replacement": None})
    add({"type": "compaction", "summary": "sum three", "firstKeptEntryId": "not-on-branch", "tokensBefore": 700})
    add({"type": "message", "message": asst_msg("measured", use=usage(1234))})
    add({"type": "compaction", "summary": "sum four", "firstKeptEntryId": kept, "tokensBefore": 600})
    return entries


def test_compactions_on_branch_equal_the_reprojection_on_fixtures_and_tricky_branches(fixture_copy):
    from pi_lab.view.gauge import compactions_on_branch

    branches = [_tricky_branch()]
    for name in FIXTURES:
        sm = SessionManager.open(fixture_copy(name))
        branches.append(sm.get_branch())
        for entry in sm.entries[:: max(1, len(sm.entries) // 25)]:
            branches.append(sm.get_branch(entry["id"]))  # other leaves, other kept ranges
    checked = 0
    for branch in branches:
        got = [(c["id"], c["after"], c["after_kind"]) for c in compactions_on_branch(branch)]
        assert got == _compactions_by_reprojection(branch)
        checked += len(got)
    assert checked >= 4 and {kind for _, _, kind in _compactions_by_reprojection(branches[0])} == {"measured", "estimated"}


def test_gauge_with_ten_thousand_compactions_is_one_pass(monkeypatch):
    import pi_lab.view.gauge as gauge_module

    entries = []
    parent = None
    for k in range(10_000):
        user = {"type": "message", "id": f"u{k}", "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": "hello " * 10, "timestamp": 1}}
        compaction = {"type": "compaction", "id": f"c{k}", "parentId": user["id"], "timestamp": "2026-01-01T00:00:01.000Z",
                      "summary": "s", "firstKeptEntryId": user["id"], "tokensBefore": 100}
        entries += [user, compaction]
        parent = compaction["id"]
    calls = 0
    real_estimate = gauge_module.estimate_tokens

    def counting(message):
        nonlocal calls
        calls += 1
        return real_estimate(message)

    monkeypatch.setattr(gauge_module, "estimate_tokens", counting)
    result = gauge_module.gauge(entries, context_window=200_000)
    assert len(result["compactions"]) == 10_000 and result["unknown"]
    assert result["compactions"][-1]["after"] == _compactions_by_reprojection(entries[-2:])[0][1]
    # One pass: the summary and the one kept message of each compaction are estimated once
    # (re-projecting at each compaction would estimate 50 million messages).
    assert calls <= 3 * 10_000


def test_compactions_that_all_keep_from_the_first_entry_stay_linear():
    """A hostile file: every compaction names the session's first entry as its first kept one,
    so each kept range is the whole prefix (re-summing it per compaction is quadratic)."""
    from pi_lab.view.gauge import compactions_on_branch

    def hostile(compactions: int) -> list[dict]:
        entries = []
        parent = None
        for k in range(compactions):
            user = {"type": "message", "id": f"u{k}", "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
                    "message": {"role": "user", "content": "hello " * 10, "timestamp": 1}}
            compaction = {"type": "compaction", "id": f"c{k}", "parentId": user["id"],
                          "timestamp": "2026-01-01T00:00:01.000Z", "summary": "s", "firstKeptEntryId": "u0",
                          "tokensBefore": 100}
            entries += [user, compaction]
            parent = compaction["id"]
        return entries

    branches = {n: hostile(n) for n in (2_500, 10_000)}
    entries = branches[10_000]
    found = compactions_on_branch(entries)
    for n in (0, 1, 17, 500):
        head = entries[: 2 * n + 2]
        assert found[n]["after"] == _compactions_by_reprojection(head)[-1][1]
    assert cpu_growth(lambda n: compactions_on_branch(branches[n]), 2_500, 10_000) < 8
