"""``Corpus.usage(by="day")`` beside ``ccusage claude daily`` and ``ccusage codex daily`` on the
same folders (issues #24 and #25): equal token for token on the sessions the agents write, and
each known difference pinned here with its reason.

The ccusage runs skip cleanly without node/npm (the setup and report helpers are the formats
tests'); the pinned differences compare with pi_lab's own copy of ccusage's rules
(``pi_lab.formats.*_usage``, itself checked against ccusage), so they run everywhere.
"""

from __future__ import annotations

import shutil
import sys
from datetime import timezone
from pathlib import Path

import pyarrow.compute as pc
from formats.test_claude_code_ccusage import FIXTURES as CLAUDE_FIXTURES
from formats.test_claude_code_ccusage import _ccusage, _odd_lines
from formats.test_claude_code_ccusage import _report as claude_report
from formats.test_codex_ccusage import FIXTURES as CODEX_FIXTURES
from formats.test_codex_ccusage import _report as codex_report

from pi_lab.corpus import Corpus
from pi_lab.formats import claude_code_usage, codex_usage

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import generate_claude_sessions  # noqa: E402
import generate_codex_sessions  # noqa: E402


def _claude_config(tmp_path: Path) -> Path:
    """Claude Code sessions as Claude Code writes them (compact JSON, streamed responses,
    sub-agent files), on three days."""
    config = tmp_path / "claude"
    project = config / "projects" / "-home-user-project"
    for seed in (1, 30, 47):
        generate_claude_sessions.generate_session(project, seed=seed, turns=6)
    return config


def _codex_home(tmp_path: Path) -> Path:
    home = tmp_path / "codex"
    generate_codex_sessions.generate_session(home, seed=1, turns=4, fork=True)
    generate_codex_sessions.generate_session(home, seed=2, turns=5, hostile=True, torn=True)
    generate_codex_sessions.generate_session(home, seed=30, turns=3)
    return home


def _corpus_days(folder: Path) -> dict[str, tuple[int, ...]]:
    c = Corpus.scan([folder], workers=1, cache=False)
    assert c.errors == []
    return {r["day"]: (int(r["input"]), int(r["output"]), int(r["cache_write"]), int(r["cache_read"]),
                       int(r["total_tokens"])) for r in c.usage(by="day").to_pylist()}


def _claude_rule_days(config: Path) -> dict[str, tuple[int, ...]]:
    return {day: (t.input, t.output, t.cache_write, t.cache_read, t.total)
            for day, t in claude_code_usage.folder_usage(config, by="day", tz=timezone.utc).items()}


def _codex_rule_days(home: Path) -> dict[str, tuple[int, ...]]:
    return {day: (t.input, t.output, 0, t.cache_read, t.total)
            for day, t in codex_usage.folder_usage(home, by="day", tz=timezone.utc).items()}


def test_claude_code_daily_totals_equal_ccusage_token_for_token(tmp_path):
    binary = _ccusage()
    config = _claude_config(tmp_path)
    theirs = {d["date"]: (d["inputTokens"], d["outputTokens"], d["cacheCreationTokens"], d["cacheReadTokens"],
                          d["totalTokens"]) for d in claude_report(binary, config)["daily"]}
    assert _corpus_days(config / "projects") == theirs and len(theirs) >= 2


def test_codex_daily_totals_equal_ccusage_token_for_token(tmp_path):
    binary = _ccusage()
    home = _codex_home(tmp_path)
    theirs = {d["date"]: (d["inputTokens"], d["outputTokens"], 0, d["cacheReadTokens"], d["totalTokens"])
              for d in codex_report(binary, home)["daily"]}
    assert _corpus_days(home) == theirs and len(theirs) >= 2


def test_the_same_folders_by_ccusages_rules_without_ccusage(tmp_path):
    config, home = _claude_config(tmp_path), _codex_home(tmp_path)
    assert _corpus_days(config / "projects") == _claude_rule_days(config)
    assert _corpus_days(home) == _codex_rule_days(home)


def test_sub_agent_calls_count_in_their_session_as_ccusage_counts_them(tmp_path):
    config = _claude_config(tmp_path)
    c = Corpus.scan([config / "projects"], workers=1, cache=False)
    subagent_files = sorted(config.rglob("agent-*.jsonl"))
    assert subagent_files
    in_subagents = sum(1 for f in subagent_files for _ in claude_code_usage.calls_of_file(f))
    assert in_subagents > 0
    assert c.model_calls.num_rows == len(claude_code_usage.usage_calls(claude_code_usage.usage_files([config])))


# ---------------------------------------------------------------------------- differences


def test_difference_claude_lines_written_with_spaces_are_counted_by_the_corpus_not_by_ccusage(tmp_path):
    """ccusage reads a line only when it holds the bytes ``"usage":{``; a file written with a
    space after the colons (hand-made, as Python's json.dumps writes; Claude Code writes compact
    JSON) is read by pi_lab's views and so by the corpus."""
    config = tmp_path / "claude"
    project = config / "projects" / "p"
    project.mkdir(parents=True)
    spaced = CLAUDE_FIXTURES / "claude-code-log-representative_messages.jsonl"
    shutil.copy(spaced, project / spaced.name)
    assert b'"usage": {' in spaced.read_bytes()
    assert _claude_rule_days(config) == {}
    days = _corpus_days(config / "projects")
    assert days and all(total > 0 for *_, total in days.values())


def test_difference_claude_lines_ccusage_drops_by_their_bytes_are_calls_in_the_corpus(tmp_path):
    """ccusage drops a line with ``:null`` after some fields, an empty sessionId, requestId or
    model, a version not starting N.N.N; keeps the largest of lines sharing (message.id,
    requestId) and drops a sidechain replay of a main-file response. The corpus counts every
    assistant message the session view shows (the adapter merges only a streamed response's
    lines), so on such hand-made lines it counts more."""
    config = tmp_path / "claude"
    project = config / "projects" / "p"
    project.mkdir(parents=True)
    (project / "odd.jsonl").write_bytes(_odd_lines())
    c = Corpus.scan([config / "projects"], workers=1, cache=False)
    ours = c.model_calls.filter(pc.invert(c.model_calls.column("copied")))
    rules = claude_code_usage.usage_calls(claude_code_usage.usage_files([config]))
    assert ours.num_rows > len(rules)
    assert _corpus_days(config / "projects") != _claude_rule_days(config)


def test_a_resumed_claude_sessions_copied_history_counts_once_as_in_ccusage(tmp_path):
    """A resumed session's file starts with the lines of the history it continues: the same
    response in two files is one call for ccusage (message id and request id) and for the
    corpus (the later file's copies are marked ``copied``, same uuid and timestamp)."""
    config = _claude_config(tmp_path)
    project = config / "projects" / "-home-user-project"
    first = sorted(project.glob("*.jsonl"))[0]
    shutil.copy(first, project / "copy-of-a-session.jsonl")
    assert _corpus_days(config / "projects") == _claude_rule_days(config)
    c = Corpus.scan([config / "projects"], workers=1, cache=False)
    sessions = {r["file"]: r for r in c.sessions.to_pylist()}
    copy = sessions[str(project / "copy-of-a-session.jsonl")]
    assert copy["copied_entries"] == copy["entries"] and copy["input"] == 0  # (its sub-agents stayed with the first)
    calls = c.model_calls.filter(pc.equal(c.model_calls.column("file"), str(project / "copy-of-a-session.jsonl")))
    assert calls.num_rows and all(calls.column("copied").to_pylist())
    assert set(calls.column("copied_from").to_pylist()) == {sessions[str(first)]["session_id"]}


def test_difference_codex_token_counts_without_a_model_response_are_no_calls_in_the_corpus(tmp_path):
    """A corpus call is an assistant message; a ``token_count`` with no response before it (a
    hand-made file of counts only, as ccusage's own test fixtures) is counted by ccusage and
    not by the corpus. Codex writes the response before its count."""
    home = tmp_path / "codex"
    folder = home / "sessions" / "2026" / "05" / "12"
    folder.mkdir(parents=True)
    for fixture in sorted(CODEX_FIXTURES.glob("ccusage-branch-history-*.jsonl")):
        shutil.copy(fixture, folder / fixture.name)
    assert _codex_rule_days(home)
    c = Corpus.scan([home], workers=1, cache=False)
    assert c.errors == [] and c.sessions.num_rows >= 1 and c.model_calls.num_rows == 0


def test_difference_codex_rollouts_written_with_spaces_are_counted_by_the_corpus_not_by_ccusage(tmp_path):
    """ccusage's prefilter looks for the bytes ``"type":"event_msg"``; the inspect_scout
    fixtures are written with spaces, which JSON allows and Codex does not write."""
    home = tmp_path / "codex"
    folder = home / "sessions" / "2026" / "08" / "01"
    folder.mkdir(parents=True)
    for fixture in sorted(CODEX_FIXTURES.glob("inspect_scout-*.jsonl")):
        shutil.copy(fixture, folder / fixture.name)
    assert _codex_rule_days(home) == {}
    assert _corpus_days(home)
