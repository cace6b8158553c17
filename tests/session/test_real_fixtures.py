"""Real pi session files (../shared/fixtures/pi-sessions): migrate, project, round-trip."""

from __future__ import annotations

import json

import pytest
from helpers import roles

from pi_lab.session import SessionManager
from pi_lab.session._json import dumps, loads_object

ALL = [
    "before-compaction.jsonl",
    "large-session.jsonl",
    "public-dwsy-real-truncated.jsonl",
    "public-twkrash-branching.jsonl",
    "public-twkrash-uat.jsonl",
    "public-whamp-v1-linear.jsonl",
]
V1 = {"before-compaction.jsonl", "large-session.jsonl", "public-whamp-v1-linear.jsonl"}


@pytest.mark.parametrize("name", sorted(set(ALL) - V1))
def test_lines_reserialise_byte_for_byte(fixtures_dir, name):
    # Files written by JavaScript: our serialiser must reproduce every line exactly.
    for raw in (fixtures_dir / name).read_bytes().splitlines():
        if raw.strip():
            assert dumps(loads_object(raw)) == raw


@pytest.mark.parametrize("name", ALL)
def test_open_project_and_reopen(fixture_copy, name):
    path = fixture_copy(name)
    sm = SessionManager.open(path)
    assert sm.header["version"] == 3 and sm.skipped_lines == []
    branch = sm.get_branch()
    assert branch and branch[-1]["id"] == sm.leaf_id and branch[0]["parentId"] is None
    context = sm.build_session_context()
    assert context.messages
    again = SessionManager.open(path)
    assert dumps(again.entries) == dumps(sm.entries)
    assert dumps(again.build_session_context().messages) == dumps(context.messages)
    assert [json.loads(line)["type"] for line in path.read_text(encoding="utf-8").splitlines()][0] == "session"


@pytest.mark.parametrize("name", sorted(V1))
def test_v1_files_migrate_to_one_linear_chain(fixture_copy, name):
    path = fixture_copy(name)
    original = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    sm = SessionManager.open(path)
    assert len(sm.entries) == len(original) - 1
    assert len(sm.get_tree()) == 1
    assert len(sm.get_branch()) == len(sm.entries)
    for previous, entry in zip(sm.entries, sm.entries[1:]):
        assert entry["parentId"] == previous["id"]
    assert all("firstKeptEntryIndex" not in e for e in sm.entries)
    rewritten = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rewritten[0]["version"] == 3 and rewritten[1:] == sm.entries


def test_whamp_v1_compaction_keeps_from_the_migrated_index(fixture_copy):
    sm = SessionManager.open(fixture_copy("public-whamp-v1-linear.jsonl"))
    compaction = sm.entries[-1]
    assert compaction["type"] == "compaction"
    # firstKeptEntryIndex 2 counts the header: the assistant message
    assert compaction["firstKeptEntryId"] == sm.entries[1]["id"]
    assert roles(sm.build_session_context().messages) == ["compactionSummary", "assistant", "toolResult"]
    assert sm.header["parentSession"] == "/legacy/parent.jsonl"


def test_before_compaction_projection_starts_at_latest_checkpoint(fixture_copy):
    sm = SessionManager.open(fixture_copy("before-compaction.jsonl"))
    messages = sm.build_session_context().messages
    compactions = [e for e in sm.get_branch() if e["type"] == "compaction"]
    assert len(compactions) == 2
    assert messages[0]["role"] == "compactionSummary" and messages[0]["summary"] == compactions[-1]["summary"]
    assert sum(1 for m in messages if m["role"] == "compactionSummary") == 1
    assert "bashExecution" in {e["message"]["role"] for e in sm.entries if e["type"] == "message"}


def test_twkrash_branching_tree_and_unknown_entry(fixture_copy):
    sm = SessionManager.open(fixture_copy("public-twkrash-branching.jsonl"))
    (root,) = sm.get_tree()
    assert root.entry["id"] == "e1"
    model_change = root.children[0]
    assert [c.entry["id"] for c in model_change.children] == ["e3", "e7"]
    assert sm.leaf_id == "e8" and sm.get_entry("e8")["type"] == "future_entry"
    assert [e["id"] for e in sm.get_branch()] == ["e1", "e2", "e7", "e8"]
    at_e6 = sm.build_session_context("e6")
    assert roles(at_e6.messages) == ["compactionSummary", "assistant", "toolResult", "assistant"]
    assert at_e6.model == {"provider": "acme", "modelId": "alpha"}


def test_dwsy_thinking_level_and_model(fixture_copy):
    sm = SessionManager.open(fixture_copy("public-dwsy-real-truncated.jsonl"))
    context = sm.build_session_context()
    assert context.thinking_level == "high"
    assert roles(context.messages)[0] == "user"
