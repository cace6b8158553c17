"""The whole narrative of the seed explainer, U1 through C2 and then E1, on the offline model.

At every step the four states are asserted: the file's entries, the leaf, the current
branch, and what the model sees (agent.messages).
"""

from __future__ import annotations

import asyncio
import json

from helpers import Clock

from pi_lab.agent import AgentSession
from pi_lab.session.ids import epoch_ms
from pi_lab.compaction import CompactionSettings
from pi_lab.llm import FaultReply, OfflineModel, ToolCallReply
from pi_lab.session import SessionManager

BODY = "x" * 380  # pads every scripted answer to about 100 tokens


def reply(text):
    return f"{text} {BODY}"


def file_types(sm):
    out = []
    for line in open(sm.session_file, encoding="utf-8"):
        entry = json.loads(line)
        role = entry.get("message", {}).get("role") if entry["type"] == "message" else None
        out.append(role or entry["type"])
    return out


def model_view(agent):
    out = []
    for m in agent.messages:
        if m["role"] in ("compactionSummary", "branchSummary"):
            out.append(m["role"])
        else:
            content = m["content"]
            text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content if b.get("type") == "text")
            out.append(f"{m['role']}:{text.split(' ')[0] if text else ''}")
    return out


def branch_roles(sm):
    return [e.get("message", {}).get("role", e["type"]) if e["type"] == "message" else e["type"] for e in sm.get_branch()]


def test_seed_narrative(tmp_path):
    asyncio.run(narrative(tmp_path))


async def narrative(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "auth.ts").write_text("export function login() {}\n")
    from pi_lab.agent import demo_tools

    # One deterministic clock for the file and the model: every reading is a second later, so a
    # response is never stamped in the same millisecond as the compaction before it.
    clock = Clock()
    client = OfflineModel(context_window=100_000, clock=lambda: epoch_ms(clock()))
    settings = CompactionSettings(reserve_tokens=16384, keep_recent_tokens=350)
    sm = SessionManager.create(str(tmp_path / "repo"), tmp_path / "sessions", clock=clock)
    agent = AgentSession(sm, client=client, tools=demo_tools(tmp_path / "repo"), settings=settings,
                         record_startup=False)

    # §2 U1: the first user message creates the file (before the model answers)
    seen_file_at_user_end = []
    agent.subscribe(lambda e: e["type"] == "agent_start" and seen_file_at_user_end.append(sm.flushed))
    client.push(ToolCallReply("read", {"path": "auth.ts"}), reply("认证逻辑已定位"))
    await agent.prompt("检查认证实现")
    assert file_types(sm) == ["session", "system", "user", "assistant", "toolResult", "assistant"]
    u1, _sys_free = sm.get_branch()[1], None
    assert u1["parentId"] == sm.get_branch()[0]["id"]  # the tool-loadout system message comes first
    a1 = sm.get_branch()[2]
    assert a1["parentId"] == u1["id"]
    assert model_view(agent) == ["system:", "user:检查认证实现", "assistant:", "toolResult:export", "assistant:认证逻辑已定位"]

    # §3 restart: reopen from the file; the leaf is the last line
    sm = SessionManager.open(sm.session_file, clock=clock)
    agent = AgentSession(sm, client=client, tools=agent.agent.tools, settings=settings, record_startup=False)
    a2 = sm.get_branch()[-1]
    assert sm.leaf_id == a2["id"] and a2["message"]["role"] == "assistant"
    assert model_view(agent)[1:] == ["user:检查认证实现", "assistant:", "toolResult:export", "assistant:认证逻辑已定位"]

    # U2 → A3 (the JWT path)
    client.push(reply("JWT 方案已完成"))
    await agent.prompt("改成 JWT")
    u2, a3 = sm.get_branch()[-2:]
    assert u2["parentId"] == a2["id"] and sm.leaf_id == a3["id"]

    # §4 navigate to U2 with a summary: BS1 hangs under A2, the text returns for re-editing
    result = await agent.navigate_tree(u2["id"], summarize=True)
    assert result.editor_text == "改成 JWT"
    bs1 = result.summary_entry
    assert bs1["type"] == "branch_summary" and bs1["parentId"] == a2["id"] and bs1["fromId"] == a3["id"]
    assert sm.leaf_id == bs1["id"]
    assert "JWT" in bs1["summary"] and bs1["summary"].startswith("The user explored a different conversation branch")
    assert model_view(agent)[-2:] == ["assistant:认证逻辑已定位", "branchSummary"]
    assert a3 in sm.entries  # the old path stays in the file

    # U2B → A4: the cookie branch continues after BS1
    client.push(reply("cookie 方案已完成"))
    await agent.prompt("改成 session cookie")
    u2b = sm.get_branch()[-2]
    assert u2b["parentId"] == bs1["id"]
    assert "user:改成 JWT" not in model_view(agent)

    # U3 A5, U4 A6, U5 A7 — then the threshold is crossed after A7
    for question, answer in [("补充测试", "测试已补充"), ("检查边界条件", "边界条件已处理")]:
        client.push(reply(answer))
        await agent.prompt(question + " " + BODY)
    assert not any(e["type"] == "compaction" for e in sm.entries)
    tokens_before_a7 = agent.get_context_usage().tokens
    agent.settings = CompactionSettings(reserve_tokens=100_000 - tokens_before_a7 - 150, keep_recent_tokens=350)
    events = []
    agent.subscribe(events.append)
    client.push(reply("收尾完成"))
    await agent.prompt("收尾 " + BODY)
    c1 = sm.get_branch()[-1]
    assert c1["type"] == "compaction" and [e["type"] for e in events if e["type"].startswith("compaction")] == [
        "compaction_start", "compaction_end"]
    end = [e for e in events if e["type"] == "compaction_end"][0]
    assert end["reason"] == "threshold" and end["willRetry"] is False and end["result"]["tokensBefore"] > 0
    u4 = sm.get_entry(c1["firstKeptEntryId"])
    assert u4["message"]["content"][0]["text"].startswith("检查边界条件")
    # C1 is after A7 in the file but first in what the model sees; the old messages remain on disk
    # (the compaction's snapshot of the system state — the tool loadout — comes first)
    assert model_view(agent) == ["system:", "compactionSummary", "user:检查边界条件", "assistant:边界条件已处理",
                                 "user:收尾", "assistant:收尾完成"]
    assert c1["systemMessage"]["toolsAdded"][0]["name"] == "read"
    assert agent.get_context_usage().tokens is None  # unknown until the next response
    assert "## Goal" in c1["summary"] and "auth.ts" in c1["summary"]

    # second compaction consumes the first: the kept region becomes old (manual this time)
    agent.settings = settings
    for question in ("下一步一", "下一步二"):
        client.push(reply("好的"))
        await agent.prompt(question + " " + BODY)
    assert agent.get_context_usage().tokens is not None
    summary_inputs = len(client.calls)
    await agent.compact()
    c2 = sm.get_branch()[-1]
    assert c2["type"] == "compaction" and c2["id"] != c1["id"]
    summary_request = client.calls[summary_inputs].context["messages"][0]["content"][0]["text"]
    assert "<previous-summary>" in summary_request and "检查边界条件" in summary_request
    assert model_view(agent)[1] == "compactionSummary" and sum(m == "compactionSummary" for m in model_view(agent)) == 1

    # E1: an overflow is persisted, omitted with a context_edit, compacted, and the run continues once
    client.push(FaultReply("overflow"), reply("恢复后完成"))
    await agent.prompt("再做一件事 " + BODY)
    tail = sm.get_branch()[-5:]
    assert [e["type"] for e in tail] == ["message", "message", "context_edit", "compaction", "message"]
    user, e1, edit, c3, answer = tail
    assert e1["message"]["stopReason"] == "error" and edit["targetId"] == e1["id"] and edit["replacement"] is None
    assert answer["message"]["content"][0]["text"].startswith("恢复后完成")
    assert all(m.get("stopReason") != "error" for m in agent.messages)
    assert e1 in sm.entries
    assert user["message"]["role"] == "user"
