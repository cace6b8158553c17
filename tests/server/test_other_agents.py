"""Claude Code and Codex sessions in the viewer's server (issues 24 and 25): the store opens a
file by its content through the agent's adapter and follows it as it grows, the Sessions panel
lists the three agents from their folders and from configured ones, with one search over all of
them, ``detect`` names a file's agent without reading more than its first lines, and nothing is
ever written."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from pi_lab.server.store import SessionStore, view_key

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from generate_claude_sessions import generate_session as generate_claude  # noqa: E402
from generate_codex_sessions import generate_session as generate_codex  # noqa: E402

TINY_AUTH = Path(__file__).resolve().parents[2] / "pi_lab" / "data" / "sessions" / "tiny-auth.jsonl"


def digest(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def extra_dir(tmp_path: Path) -> Path:
    path = tmp_path / "more-sessions"
    path.mkdir()
    return path


@pytest.fixture
def jp_server_config(sessions_dir: Path, extra_dir: Path) -> Config:
    return Config({
        "ServerApp": {"jpserver_extensions": {"pi_lab.server": True}},
        "PiLabConfig": {"sessions_dir": str(sessions_dir), "extra_session_dirs": [str(extra_dir)]},
    })


@pytest.fixture
def three_agents(sessions_dir: Path, other_agents_home: dict[str, Path]) -> dict[str, Path]:
    """A pi session in pi's folder, a Claude Code one (with a sub-agent file) and a Codex one in
    their agents' folders."""
    pi = sessions_dir / "--work-tiny--" / "2026-01-01T10-00-00-000Z_tiny.jsonl"
    pi.parent.mkdir(parents=True)
    shutil.copyfile(TINY_AUTH, pi)
    claude = generate_claude(other_agents_home["claude"] / "projects" / "-home-user-project", seed=3)
    codex = generate_codex(other_agents_home["codex"], seed=4)[0]
    return {"pi": pi, "claude-code": claude, "codex": codex}


def rows_of(listing: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for g in listing["groups"] for s in g["sessions"]]


async def test_the_panel_lists_the_three_agents_by_project_without_sub_agent_files(api, three_agents):
    before = {k: v.read_bytes() for k, v in three_agents.items()}
    assert list((three_agents["claude-code"].parent).rglob("agent-*.jsonl")), "the generator writes a sub-agent file"
    code, listing = await api.get("sessions")
    assert code == 200, listing
    rows = rows_of(listing)
    assert sorted(r["agent"] for r in rows) == ["claude-code", "codex", "pi"]
    by_agent = {r["agent"]: r for r in rows}
    assert by_agent["claude-code"]["location"].startswith("@claude/0/-home-user-project/")
    assert by_agent["codex"]["location"].startswith("@codex/0/")
    assert by_agent["claude-code"]["cwd"] == "/home/user/project"
    # A Codex session is titled by its first prompt, not the instructions Codex put before it.
    assert by_agent["codex"]["title"] == "task 0: fix the failing test"
    # grouped by the cwd each session names
    titles = {g["title"]: g["agents"] for g in listing["groups"]}
    assert titles["/home/user/project"] == ["claude-code"]
    assert titles["/work/project"] == ["codex"]
    assert {k: v.read_bytes() for k, v in three_agents.items()} == before


async def test_one_search_covers_every_agent(api, three_agents):
    # A word of the last assistant text of each file (whole-text search, not the first message).
    code, listing = await api.get("sessions", q="sub-agent")
    assert code == 200
    assert [r["agent"] for r in rows_of(listing)] == ["claude-code"]
    assert all(s["parts"] for r in rows_of(listing) for s in r["hits"]["snippets"])
    code, listing = await api.get("sessions", q="failing test")
    assert "codex" in {r["agent"] for r in rows_of(listing)}
    code, everything = await api.get("sessions")
    code, none = await api.get("sessions", q="zzzz-no-such-word")
    assert everything["total"] == 3 and none["groups"] == []


async def test_a_configured_folder_is_listed_and_readable(api, extra_dir):
    claude = generate_claude(extra_dir / "copied", seed=5)
    shutil.copyfile(TINY_AUTH, extra_dir / "renamed.jsonl")
    (extra_dir / "notes.jsonl").write_text('{"a": 1}\n')
    before = digest(extra_dir)
    code, listing = await api.get("sessions")
    rows = {r["file"]: r for r in rows_of(listing)}
    assert rows["renamed.jsonl"]["agent"] == "pi"
    assert rows[claude.name]["agent"] == "claude-code"
    assert "notes.jsonl" not in rows and not any(n.startswith("agent-") for n in rows)
    state = await api.session("state", rows[claude.name]["location"])
    assert state["session"]["agent"] == "claude-code"
    assert digest(extra_dir) == before


async def test_a_claude_code_session_is_read_only_and_says_why(api, three_agents):
    location = "@claude/0/-home-user-project/" + three_agents["claude-code"].name
    state = await api.session("state", location)
    session = state["session"]
    assert session["agent"] == "claude-code" and session["read_only"]
    assert session["write_refusal"] == "a Claude Code session; pi_lab never writes it."
    assert state["file"]["agent"] == "claude-code"
    assert state["row_count"] > 10
    code, reply = await api.post("session", "navigate", path=location, args={"id": state["leaf_id"]})
    assert code == 403
    codex = await api.session("state", "@codex/0/" + str(three_agents["codex"].relative_to(
        three_agents["codex"].parents[3])))
    assert codex["session"]["write_refusal"] == "a Codex rollout; pi_lab never writes it."
    pi = await api.session("state", "@sessions/--work-tiny--/" + three_agents["pi"].name)
    assert pi["session"]["agent"] == "pi" and pi["session"]["write_refusal"] is None


async def test_detect_names_the_agent_by_content_not_by_name(api, root, three_agents):
    shutil.copyfile(TINY_AUTH, root / "renamed.jsonl")
    shutil.copyfile(three_agents["claude-code"], root / "cc.jsonl")
    shutil.copyfile(three_agents["codex"], root / "codex.jsonl")
    (root / "data.jsonl").write_text('{"type": "row", "x": 1}\n')
    assert await api.get("detect", path="renamed.jsonl") == (200, {"agent": "pi", "path": "renamed.jsonl"})
    assert (await api.get("detect", path="cc.jsonl"))[1]["agent"] == "claude-code"
    assert (await api.get("detect", path="codex.jsonl"))[1]["agent"] == "codex"
    assert (await api.get("detect", path="data.jsonl"))[1]["agent"] is None
    code, reply = await api.get("detect", path="missing.jsonl")
    assert code == 404, reply


def test_the_store_follows_a_growing_claude_code_file_through_its_adapter(tmp_path):
    path = generate_claude(tmp_path / "p", seed=7, broken=False)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-6]))
    store = SessionStore()
    loaded = store.get(str(path))
    assert loaded.agent == "claude-code"
    shared = store.view(loaded, view_key())
    count, generation = len(shared.view.rows.rows), loaded.generation
    with open(path, "ab") as handle:
        handle.write(b"".join(lines[-6:]))
    again = store.get(str(path))
    shared = store.view(again, view_key())
    assert again is loaded and again.generation == generation, "grown in place: refreshed, not reloaded"
    assert len(shared.view.rows.rows) > count
    fresh = SessionStore().view(SessionStore().get(str(path)), view_key())
    assert len(shared.view.rows.rows) == len(fresh.view.rows.rows)
    path.write_bytes(b"".join(lines[:5]))  # shrunk: read again, a new generation
    assert store.get(str(path)).generation != generation


def test_the_widget_session_payload_names_the_agent_and_why_it_never_writes(tmp_path):
    # The notebook widget's session payload carries the same facts as the server's state.
    import pi_lab

    claude = generate_claude(tmp_path / "p", seed=8)
    pi_file = tmp_path / "renamed.jsonl"
    shutil.copyfile(TINY_AUTH, pi_file)
    before = digest(tmp_path)
    widget = pi_lab.open(str(claude))
    assert widget.session["agent"] == "claude-code"
    assert widget.session["write_refusal"] == "a Claude Code session; pi_lab never writes it."
    widget.close()
    widget = pi_lab.open(str(pi_file))
    assert widget.session["agent"] == "pi" and widget.session["write_refusal"] is None
    widget.close()
    assert digest(tmp_path) == before


def test_a_claude_code_sub_agent_start_reads_as_the_sub_agent_and_pi_rows_stay(tmp_path):
    from pi_lab.formats.claude_code import SUBAGENT_START, ClaudeCodeSession
    from pi_lab.session.display import display_text

    sm = ClaudeCodeSession.from_file(generate_claude(tmp_path / "p", seed=9))
    starts = [e for e in sm.get_entries() if (e.get("claudeCode") or {}).get("synthetic") == SUBAGENT_START]
    assert starts, "the generator writes sub-agents"
    texts = [display_text(e) for e in starts]
    assert all(t.startswith("sub-agent ") and "compaction" not in t for t in texts), texts
    assert texts[0] == f"sub-agent {starts[0]['claudeCode']['agentId']}"
    pi_compaction = {"type": "compaction", "id": "c1", "parentId": None, "tokensBefore": 150_000,
                     "summary": "s", "firstKeptEntryId": "x", "details": {"claudeCode": SUBAGENT_START}}
    assert display_text(pi_compaction) == "[compaction: 150k tokens]"


async def test_open_in_notebook_takes_another_agents_session(api, root, three_agents):
    location = "@claude/0/-home-user-project/" + three_agents["claude-code"].name
    code, made = await api.post("open-in-notebook", path=location)
    assert code == 200, made
    assert str(three_agents["claude-code"]) in made["source"] and (root / made["path"]).is_file()
