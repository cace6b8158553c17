"""The explainer's story told with a real SessionManager: branch summary, threshold, first
compaction, reload, second compaction consuming the first, split turns, overflow recovery,
and the seed's section 14 example (explainer §4, §6–§11, §12, §14)."""

from __future__ import annotations

import asyncio
import itertools
from datetime import datetime, timedelta, timezone

from cbuild import FakeClient, asst, call, model, reply, result, usage, user
from helpers import SEED_SECTION_14

from pi_lab.compaction import (
    BRANCH_PREFIX,
    CompactionSettings,
    collect_entries_for_branch_summary,
    compact,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
    generate_branch_summary,
    prepare_branch_entries,
    prepare_compaction,
    should_compact,
)
from pi_lab.session import SessionManager

run = asyncio.run
T100 = "x" * 400  # 100 tokens


def deterministic(tmp_path):
    counter = itertools.count(1)
    moment = [datetime(2026, 7, 29, 9, 0, 0, tzinfo=timezone.utc)]

    def ids() -> str:
        return f"{next(counter):08x}-0000-4000-8000-000000000000"

    def clock() -> datetime:
        moment[0] += timedelta(seconds=1)
        return moment[0]

    return SessionManager.create(tmp_path, tmp_path / "sessions", uuid_factory=ids, clock=clock)


def roles(messages):
    return [m["role"] for m in messages]


def text_of(message) -> str:
    if message["role"] in ("compactionSummary", "branchSummary"):
        return message["summary"]
    content = message["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content if b["type"] == "text")


class Story:
    """Appends the explainer's entries and remembers their ids by name."""

    def __init__(self, sm: SessionManager) -> None:
        self.sm = sm
        self.ids: dict[str, str] = {}

    def add(self, name: str, message: dict) -> str:
        self.ids[name] = self.sm.append_message(message)
        return self.ids[name]

    def name_of(self, entry_id: str) -> str:
        return next(name for name, value in self.ids.items() if value == entry_id)


def test_explainer_story_end_to_end(tmp_path):
    sm = deterministic(tmp_path)
    s = Story(sm)
    s.add("S0", {"role": "system", "content": "", "sections": {"base": "You are pi."}, "timestamp": 1})
    s.add("U1", user("检查认证实现"))
    s.add("A1", asst(None, calls=[call("c1", "read", path="src/auth.ts")], stop="toolUse"))
    s.add("T1", result("c1", "read", "export function login() {}"))
    s.add("A2", asst("认证逻辑已定位"))
    s.add("U2", user("改成 JWT"))
    s.add("A3", asst("JWT 方案已完成", calls=[call("c2", "edit", path="src/jwt.ts")]))

    # §4: back to U2 — only A3 is abandoned; U2's text would go back to the editor
    entries, ancestor = collect_entries_for_branch_summary(sm, s.ids["A3"], s.ids["U2"])
    assert ancestor == s.ids["U2"] and [s.name_of(e["id"]) for e in entries] == ["A3"]
    branch = run(generate_branch_summary(entries, FakeClient(reply("## Goal\nJWT 路径")), model()))
    assert branch.modified_files == ["src/jwt.ts"]
    s.ids["BS1"] = sm.branch_with_summary(s.ids["A2"], branch.summary, details={
        "readFiles": branch.read_files, "modifiedFiles": branch.modified_files}, from_hook=False, usage=branch.usage)
    assert sm.get_entry(s.ids["BS1"])["fromId"] == s.ids["A3"]

    s.add("U2B", user("改成 session cookie " + T100))
    s.add("A4", asst("cookie 方案已完成 " + T100, calls=[call("c3", "edit", path="src/auth.ts")]))
    s.add("U3", user("补充测试 " + T100))
    s.add("A5", asst("测试已补充 " + T100, calls=[call("c4", "write", path="test/auth.test.ts")]))
    s.add("U4", user("检查边界条件 " + T100))
    s.add("A6", asst("边界条件已处理 " + T100))
    s.add("U5", user("再看一遍 " + T100))
    s.add("A7", asst("完成 " + T100, use=usage(100000, 15000)))

    # §6: the threshold decides that, keepRecentTokens decides where
    settings = CompactionSettings(reserve_tokens=16384, keep_recent_tokens=350)
    context_tokens = estimate_context_tokens(sm.build_session_context().messages).tokens
    assert context_tokens == 115000 and should_compact(context_tokens, 128000, settings)

    # §7: cut at U4; the JWT sibling is not on the branch
    prep = prepare_compaction(sm.get_branch(), settings)
    assert s.name_of(prep.first_kept_entry_id) == "U4" and not prep.is_split_turn
    assert roles(prep.messages_to_summarize) == [
        "user", "assistant", "toolResult", "assistant", "branchSummary", "user", "assistant", "user", "assistant"]
    assert prep.tokens_before == 115000

    # §9: compact() produces the result, AgentSession appends it
    client = FakeClient(reply("## Goal\n完成认证改造", use=usage(2000, 300)))
    first = run(compact(prep, client, model(), thinking_level="high"))
    prompt = client.prompt()
    assert "[User]: " + BRANCH_PREFIX + "The user explored a different conversation branch" in prompt
    assert "JWT 方案已完成" not in prompt and "You are pi." not in prompt
    # src/jwt.ts was touched on the abandoned branch: it lives in BS1's details and summary text,
    # and compaction carries only an earlier compaction's lists, not a branch summary's
    assert first.details == {"readFiles": [], "modifiedFiles": ["src/auth.ts", "test/auth.test.ts"]}
    c1 = sm.append_compaction(first.summary, first.first_kept_entry_id, first.tokens_before, first.details, False,
                              first.usage)

    # §10: history stays on disk, the model sees summary + kept region
    assert [s.name_of(e["id"]) if e["id"] != c1 else "C1" for e in sm.get_branch()][-3:] == ["U5", "A7", "C1"]
    projection = sm.build_session_projection()
    assert roles(projection.messages) == ["system", "compactionSummary", "user", "assistant", "user", "assistant"]
    assert projection.messages[0]["sections"] == {"base": "You are pi."}
    assert [text_of(m).split(" ")[0] for m in projection.messages[2:]] == ["检查边界条件", "边界条件已处理", "再看一遍", "完成"]
    # §11.2: A7's usage measured the old context; right after the compaction it is not trusted
    after = estimate_projected_context_tokens(projection, sm.get_branch())
    assert after.last_usage_index is None
    assert after.tokens == sum(estimate_tokens(m) for m in projection.messages)
    assert prepare_compaction(sm.get_branch(), settings) is None  # already compacted

    # the file reopens to the same view
    reopened = SessionManager.open(sm.session_file)
    assert reopened.build_session_projection().messages == projection.messages

    # §11: the second compaction consumes the first one's kept region
    s.add("U8", user("继续 " + T100))
    s.add("A9", asst("好的 " + T100))
    s.add("U10", user("最后一步 " + T100))
    s.add("A11", asst("全部完成 " + T100, use=usage(9000, 500)))
    second_prep = prepare_compaction(sm.get_branch(), settings)
    assert s.name_of(second_prep.first_kept_entry_id) == "U8"
    assert second_prep.previous_summary == first.summary
    assert [text_of(m).split(" ")[0] for m in second_prep.messages_to_summarize] == [
        "检查边界条件", "边界条件已处理", "再看一遍", "完成"]
    assert list(second_prep.file_ops.edited) == ["src/auth.ts", "test/auth.test.ts"]  # from C1's details
    client = FakeClient(reply("## Goal\n第二次"))
    second = run(compact(second_prep, client, model()))
    assert "<previous-summary>\n" + first.summary + "\n</previous-summary>" in client.prompt()
    assert "检查认证实现" not in client.prompt()
    sm.append_compaction(second.summary, second.first_kept_entry_id, second.tokens_before, second.details, False,
                         second.usage)
    final = sm.build_session_projection()
    assert roles(final.messages) == ["system", "compactionSummary", "user", "assistant", "user", "assistant"]
    assert final.messages[1]["summary"].startswith("## Goal\n第二次")
    assert [text_of(m).split(" ")[0] for m in final.messages[2:]] == ["继续", "好的", "最后一步", "全部完成"]


def test_split_turn_story(tmp_path):
    sm = deterministic(tmp_path)
    s = Story(sm)
    s.add("U5", user("设计改造方案"))
    s.add("A5", asst("给出方案"))
    s.add("U6", user("按方案修改并测试 " + T100))
    s.add("A8", asst(T100, calls=[call("c8", "read", path="a.py")], stop="toolUse"))
    s.add("T2", result("c8", "read", T100))
    s.add("A9", asst(T100, calls=[call("c9", "edit", path="a.py")], stop="toolUse"))
    s.add("T3", result("c9", "edit", T100))
    s.add("A10", asst(T100, calls=[call("c10", "bash", command="pytest")], stop="toolUse"))
    s.add("T4", result("c10", "bash", T100))
    s.add("A11", asst("测试通过 " + T100))
    prep = prepare_compaction(sm.get_branch(), CompactionSettings(keep_recent_tokens=250))
    assert s.name_of(prep.first_kept_entry_id) == "A10" and prep.is_split_turn
    client = FakeClient(reply("HISTORY", use=usage(5, 5)), reply("PREFIX", use=usage(6, 6)))
    out = run(compact(prep, client, model()))
    # a.py was read and edited: it is listed once, as modified
    assert out.summary == (
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n<modified-files>\na.py\n</modified-files>"
    )
    assert out.usage["totalTokens"] == 22
    sm.append_compaction(out.summary, out.first_kept_entry_id, out.tokens_before, out.details, False, out.usage)
    messages = sm.build_session_projection().messages
    # the kept suffix starts at the assistant whose tool results follow it
    assert roles(messages) == ["compactionSummary", "assistant", "toolResult", "assistant"]


def test_overflow_recovery_tail(tmp_path):
    sm = deterministic(tmp_path)
    s = Story(sm)
    s.add("U1", user("first " + T100))
    s.add("A1", asst("first answer " + T100))
    s.add("U2", user("h" * 40000))
    s.add("E1", asst(None, stop="error", error="prompt is too long: 210000 tokens > 200000 maximum",
                     use=usage(0, 0)))
    sm.append_context_edit(s.ids["E1"], None)
    prep = prepare_compaction(sm.get_branch(), CompactionSettings(keep_recent_tokens=100))
    # the recovery-omission rule: U2 is summarised as the split turn's prefix, E1 starts the kept part
    assert s.name_of(prep.first_kept_entry_id) == "E1"
    assert prep.is_split_turn
    assert [text_of(m)[:5] for m in prep.messages_to_summarize] == ["first", "first"]
    assert [text_of(m)[:5] for m in prep.turn_prefix_messages] == ["hhhhh"]
    out = run(compact(prep, FakeClient(reply("HIST"), reply("PREFIX")), model()))
    sm.append_compaction(out.summary, out.first_kept_entry_id, out.tokens_before, out.details, False, out.usage)
    # the retried request holds the checkpoint only: E1 stays omitted by its edit
    assert roles(sm.build_session_projection().messages) == ["compactionSummary"]


def test_seed_section_14(tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    sm = SessionManager.open(path)
    messages = sm.build_session_context().messages
    assert roles(messages) == ["compactionSummary", "user", "assistant"]
    assert [text_of(m) for m in messages[1:]] == ["检查边界条件", "边界条件已处理"]
    assert prepare_compaction(sm.get_branch(), CompactionSettings()) is None  # C1 is the leaf

    # after C1 the kept U4 A6 become summarisable again
    sm.append_message(user("新需求 " + T100))
    sm.append_message(asst("已完成 " + T100))
    prep = prepare_compaction(sm.get_branch(), CompactionSettings(keep_recent_tokens=150))
    assert prep.previous_summary == "目标是完成认证改造；当前采用 session cookie；测试已补充。"
    assert [text_of(m) for m in prep.messages_to_summarize] == ["检查边界条件", "边界条件已处理"]
    # the new assistant's usage (10 + 5) was measured after C1, so it is trusted
    assert prep.tokens_before == 15

    # navigating from the compacted cookie branch back to the JWT branch (target U2)
    entries, ancestor = collect_entries_for_branch_summary(sm, sm.leaf_id, "U2")
    assert ancestor == "A2"
    assert [e["id"] for e in entries][:8] == ["BS1", "U2B", "A4", "U3", "A5", "U4", "A6", "C1"]
    prepared = prepare_branch_entries(entries)
    assert roles(prepared.messages) == [
        "branchSummary", "user", "assistant", "user", "assistant", "user", "assistant", "compactionSummary", "user",
        "assistant"]
