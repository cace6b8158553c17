"""The corpus over three agents' sessions (issues #24 and #25): pi, Claude Code and Codex files
in one folder, each recognised by its content, with ``agent`` on every table."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pyarrow.compute as pc
import pytest

import pi_lab.data
from pi_lab.corpus import Corpus
from pi_lab.corpus.schema import TABLE_NAMES
from pi_lab.formats.codex import CodexSession

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import generate_claude_sessions  # noqa: E402
import generate_codex_sessions  # noqa: E402


def three_agents(root: Path) -> dict[str, list[Path]]:
    """pi's tiny-auth, two Claude Code sessions (with sub-agent files) and a Codex session with
    its fork, under ``root``; returns each agent's session files."""
    pi_dir = root / "pi" / "--repo--"
    pi_dir.mkdir(parents=True)
    pi_file = pi_dir / "tiny-auth.jsonl"
    shutil.copy(pi_lab.data.TINY_AUTH.path, pi_file)
    project = root / "claude" / "projects" / "-home-user-project"
    claude = [generate_claude_sessions.generate_session(project, seed=seed, turns=5) for seed in (1, 2)]
    codex = generate_codex_sessions.generate_session(root / "codex", seed=3, turns=4, fork=True)
    return {"pi": [pi_file], "claude-code": claude, "codex": codex}


def _digests(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "sessions"
    files = three_agents(root)
    return root, files


def test_every_table_says_which_agent_wrote_each_row(folder):
    root, files = folder
    c = Corpus.scan([root], workers=1, cache=False)
    assert c.errors == []
    agents = dict(zip(c.sessions.column("file").to_pylist(), c.sessions.column("agent").to_pylist()))
    assert agents == {str(f): agent for agent, paths in files.items() for f in paths}
    for name in TABLE_NAMES:
        table = getattr(c, name)
        assert table.schema.field("agent").type == "string", name
        assert table.column("agent").null_count == 0, name
        if name in ("sessions", "entries", "messages", "model_calls"):
            assert set(table.column("agent").to_pylist()) == {"pi", "claude-code", "codex"}, name
        by_file = dict(zip(table.column("file").to_pylist(), table.column("agent").to_pylist()))
        assert all(agents[f] == a for f, a in by_file.items()), name


def test_claude_code_sub_agent_files_are_not_sessions_and_their_calls_are_the_parents(folder):
    root, files = folder
    subagents = sorted((root / "claude").rglob("agent-*.jsonl"))
    assert subagents  # the generator writes them
    c = Corpus.scan([root], workers=1, cache=False)
    assert not set(map(str, subagents)) & set(c.files)
    assert not set(map(str, subagents)) & set(c.model_calls.column("file").to_pylist())
    # Named one by one, a sub-agent file is still folded into its session, never listed.
    only = Corpus.scan([*subagents, files["claude-code"][0]], workers=1, cache=False)
    assert only.files == [str(files["claude-code"][0])]
    from pi_lab.formats.claude_code import ClaudeCodeSession

    for path in files["claude-code"]:
        sm = ClaudeCodeSession.from_file(path)
        calls = sum(1 for e in sm.get_entries() if e.get("type") == "message" and e["message"].get("role") == "assistant")
        rows = c.model_calls.filter(pc.equal(c.model_calls.column("file"), str(path))).num_rows
        assert rows == calls and sm.subagent_files


def test_a_codex_forks_copies_are_counted_once_and_linked_to_the_parent(folder):
    root, files = folder
    parent, fork = (str(p) for p in files["codex"])
    c = Corpus.scan([root], workers=1, cache=False)
    sessions = {r["file"]: r for r in c.sessions.to_pylist()}
    fork_sm = CodexSession.from_file(fork)
    assert fork_sm.copied_entry_ids
    assert sessions[fork]["parent_session_id"] == sessions[parent]["session_id"] == fork_sm.parent_session_id
    assert sessions[fork]["copied_entries"] == len(fork_sm.copied_entry_ids)
    entries = c.entries.filter(pc.equal(c.entries.column("file"), fork)).to_pylist()
    copied = {e["entry_id"] for e in entries if e["copied"]}
    assert copied == set(fork_sm.copied_entry_ids)
    assert {e["copied_from"] for e in entries if e["copied"]} == {sessions[parent]["session_id"]}
    calls = c.model_calls.filter(pc.equal(c.model_calls.column("file"), fork)).to_pylist()
    assert any(r["copied"] for r in calls) and not all(r["copied"] for r in calls)
    # usage() counts the fork's own calls only: the parent's calls plus the fork's new ones.
    own = [r for r in calls if not r["copied"]]
    by_session = {r["file"]: r for r in c.usage(by="session").to_pylist()}
    assert by_session[fork]["calls"] == len(own)
    assert by_session[fork]["input"] == sum(r["input"] for r in own)
    assert sessions[fork]["input"] == sum(r["input"] for r in own)


def test_usage_by_agent_splits_the_totals(folder):
    root, _files = folder
    c = Corpus.scan([root], workers=1, cache=False)
    rows = {r["agent"]: r for r in c.usage(by="agent").to_pylist()}
    assert set(rows) == {"pi", "claude-code", "codex"}
    calls = c.model_calls.filter(pc.invert(c.model_calls.column("copied")))
    for agent, row in rows.items():
        mine = calls.filter(pc.equal(calls.column("agent"), agent))
        assert row["calls"] == mine.num_rows
        for key in ("input", "output", "cache_read", "cache_write", "total_tokens"):
            assert row[key] == pc.sum(mine.column(key)).as_py(), (agent, key)
    day = c.usage(by="day").to_pylist()
    assert sum(r["calls"] for r in day) == sum(r["calls"] for r in rows.values())


def test_the_cache_serves_the_second_scan_and_the_files_are_unchanged(folder, tmp_path):
    root, _files = folder
    before = _digests(root)
    first = Corpus.scan([root], workers=1, cache=tmp_path / "cache")
    second = Corpus.scan([root], workers=1, cache=tmp_path / "cache")
    assert second.stats["read"] == 0 and second.stats["cached"] == first.stats["files"] > 0
    for name in TABLE_NAMES:
        assert getattr(second, name).equals(getattr(first, name)), name
    assert _digests(root) == before


def test_a_sub_agent_file_that_grows_reads_its_session_again(folder, tmp_path):
    root, files = folder
    sub = sorted((root / "claude").rglob("agent-*.jsonl"))[0]
    Corpus.scan([root], workers=1, cache=tmp_path / "cache")
    with open(sub, "ab") as handle:
        handle.write(b"\n")
    again = Corpus.scan([root], workers=1, cache=tmp_path / "cache")
    assert again.stats["read"] == 1


def test_scan_without_folders_reads_every_agents_default_folder(folder, monkeypatch):
    root, files = folder
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(root / "pi-agent"))
    (root / "pi-agent").mkdir()
    shutil.move(str(root / "pi"), str(root / "pi-agent" / "sessions"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(root / "codex"))
    c = Corpus.scan(workers=1, cache=False)
    assert c.errors == []
    assert sorted(set(c.sessions.column("agent").to_pylist())) == ["claude-code", "codex", "pi"]
    assert c.sessions.num_rows == 1 + len(files["claude-code"]) + len(files["codex"])


def test_pi_lab_usage_by_agent_json(folder, capsys):
    import json

    from pi_lab.cli import main

    root, _files = folder
    assert main(["usage", str(root), "--by", "agent", "--json", "--no-cache"]) in (0, None)
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["agent"] for r in rows) == ["claude-code", "codex", "pi"]


def test_open_shows_a_claude_code_or_codex_session_of_the_corpus(folder):
    root, files = folder
    before = _digests(root)
    c = Corpus.scan([root], workers=1, cache=False)
    for agent in ("claude-code", "codex"):
        path = str(files[agent][0])
        call = c.model_calls.filter(pc.equal(c.model_calls.column("file"), path)).to_pylist()[0]
        widget = c.open(path, call["entry_id"])
        try:
            assert widget.view.sm.agent == agent
            if agent == "claude-code":
                assert widget.selected_id == call["entry_id"]
            # (Codex: the widget selects the reasoning line written before the response, in
            # the same turn; a widget matter, reported, not the corpus's.)
        finally:
            widget.close()
    assert _digests(root) == before


def test_claude_code_compactions_are_the_real_ones_with_their_recorded_trigger(tmp_path):
    """A sub-agent's start (an empty compaction that only starts its context) is no compaction,
    and Claude Code's own record of the trigger is kept (auto: the threshold compaction)."""
    import orjson

    from pi_lab.corpus import Corpus

    out = tmp_path / "claude"
    project = out / "projects" / "-home-user-project"
    files = [generate_claude_sessions.generate_session(project, seed=seed, turns=5) for seed in (1, 2)]
    recorded = []
    for path in files:
        for line in path.read_bytes().splitlines():
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict) and value.get("subtype") == "compact_boundary":
                recorded.append((value.get("compactMetadata") or {}).get("trigger"))
    c = Corpus.scan([out], cache=False)
    triggers = c.compactions.column("trigger").to_pylist()
    assert len(triggers) == len(recorded)
    assert sorted(triggers) == sorted({"auto": "threshold", "manual": "manual"}[t] for t in recorded)
    assert sum(c.sessions.column("compactions").to_pylist()) == len(recorded)


def test_another_agents_file_is_not_parsed_by_pis_rules_first(tmp_path, monkeypatch):
    """A Claude Code or Codex file goes straight to its adapter: pi's line reader (which parsed
    every line of it for nothing, the adapter then parsing each again) is never run on it."""
    import pi_lab.corpus.extract as extract
    import pi_lab.corpus.reading as reading

    def refuse(*args, **kwargs):
        raise AssertionError("pi's line reader ran on another agent's file")

    project = tmp_path / "claude" / "projects" / "-home-user-project"
    claude = generate_claude_sessions.generate_session(project, seed=4, turns=3)
    codex = generate_codex_sessions.generate_session(tmp_path / "codex", seed=5, turns=2)[0]
    expected = {str(p): extract.extract_file(str(p)) for p in (claude, codex)}
    monkeypatch.setattr(reading, "read_complete_lines", refuse)
    for path, columns in expected.items():
        assert extract.extract_file(path)["sessions"] == columns["sessions"]


def test_codex_calls_use_the_context_window_the_rollout_records(tmp_path):
    """Codex records the window it works with (``model_context_window``, 272k for the generated
    rollouts); the catalog's 400k is the model's. The corpus's window and fill ratio are the
    recorded ones; a rollout that records none falls back to the catalog."""
    home = tmp_path / "codex"
    path = generate_codex_sessions.generate_session(home, seed=3, turns=4)[0]
    c = Corpus.scan([home], workers=1, cache=False)
    rows = [r for r in c.model_calls.to_pylist() if r["agent"] == "codex"]
    assert rows and {r["context_window"] for r in rows} == {generate_codex_sessions.WINDOW}
    for r in rows:
        seen = r["input_tokens_measured"] if r["input_tokens_measured"] is not None else r["context_tokens_projected"]
        assert r["fill_ratio"] == pytest.approx(seen / generate_codex_sessions.WINDOW)
    bare = tmp_path / "bare" / path.name
    bare.parent.mkdir()
    bare.write_text(path.read_text().replace('"model_context_window":272000', '"model_context_window":null')
                    .replace('"model_context_window": 272000', '"model_context_window": null'))
    c = Corpus.scan([bare.parent], workers=1, cache=False)
    from pi_lab.llm.catalog import context_window_for

    assert {r["context_window"] for r in c.model_calls.to_pylist()} == {context_window_for(rows[0]["model"])}


def test_a_compaction_without_a_recorded_count_has_none_in_the_table(tmp_path):
    """Codex records no token count before a compaction: the compactions table says null (not
    recorded), never 0, as the views say 'tokens before not recorded'."""
    from pi_lab.corpus import Corpus

    home = tmp_path / "codex"
    for seed in (1, 2, 3, 4):
        generate_codex_sessions.generate_session(home, seed=seed, turns=6)
    c = Corpus.scan([home], workers=1, cache=False)
    rows = c.compactions.to_pylist()
    assert rows, "the generated rollouts compact"
    assert {r["tokens_before"] for r in rows} == {None}
