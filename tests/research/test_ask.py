"""ask: one question over many units, against a real loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil

import pytest

from pi_lab import SessionManager
from pi_lab.compaction.retry import RetryPolicy
from pi_lab.corpus import Corpus
from pi_lab.data import recorded_session
from pi_lab.errors import Refused
from pi_lab.llm import OfflineModel, OpenAIClient
from pi_lab.llm.model import Model, ModelCost
from pi_lab.research import NoteStore
from pi_lab.research.ask import AskEstimate, AskError, _AnswerCache, ask_units, select_units
from pi_lab.research.transcript import call_transcript, split_parts
from pi_lab.session.projection import build_session_projection
from tests.llm.provider_server import Drop, HttpError, ProviderServer, Text, Usage

KEY = "sk-judge-0123456789abcdefghijklmnop"
JUDGE = Model(provider="loopback", id="judge-1", api="openai-completions", context_window=64_000, max_tokens=2_000,
              cost=ModelCost(input=3.0, output=15.0))


@pytest.fixture
def corpus_dir(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(recorded_session().path, folder / "2026-03-02T14-00-00-000Z_tiny.jsonl")
    return folder


@pytest.fixture
def corpus(corpus_dir):
    return Corpus.scan([corpus_dir], cache=False)


@pytest.fixture
def server():
    with ProviderServer() as srv:
        yield srv


def _digests(folder) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def _answer(answer, explanation="because", cited=()):
    return Text(json.dumps({"answer": answer, "explanation": explanation, "cited_entry_ids": list(cited)}),
                usage=Usage(input=1000, output=50))


def _ask(units, server, tmp_path, **kw):
    client = OpenAIClient(KEY, base_url=server.openai_base_url)
    options = dict(client=client, model=JUDGE, notes=NoteStore(tmp_path / "notes.jsonl"),
                   cache=_AnswerCache(tmp_path / "cache"), progress=False,
                   retry=RetryPolicy(base_delay_ms=1, max_retry_delay_ms=1))
    options.update(kw)
    return asyncio.run(ask_units(units, "Did the agent edit a file it had not read?", **options))


def test_call_unit_reads_what_the_model_saw_at_that_call(corpus_dir):
    sm = SessionManager.open(next(corpus_dir.iterdir()), read_only=True)
    branch = sm.get_branch()
    calls = [e for e in branch if e["type"] == "message" and e["message"]["role"] == "assistant"]
    for call in calls:
        transcript = call_transcript(sm, call["id"])
        path = sm.get_branch(call["id"])
        projection = build_session_projection(path[:-1])
        expected = [item.source["id"] for item in projection.entries if item.messages] + [call["id"]]
        assert [b.entry_id for b in transcript.blocks] == expected
    # after a compaction the replaced messages are not in the call's transcript
    after = [c for c in calls if any(e["type"] == "compaction" for e in sm.get_branch(c["id"]))][0]
    transcript = call_transcript(sm, after["id"])
    assert "COMPACTION" in transcript.blocks[0].text
    assert branch[4]["id"] not in transcript.entry_ids


def test_long_units_are_split_and_each_part_says_where_it_is(corpus_dir):
    sm = SessionManager.open(next(corpus_dir.iterdir()), read_only=True)
    from pi_lab.research.transcript import session_transcript

    transcript = session_transcript(sm)
    parts = split_parts(transcript, 800)
    assert len(parts) > 2
    assert all(f"Part {n} of {len(parts)}" in part for n, part in enumerate(parts, start=1))
    # every block lands in exactly one part, in order
    seen = [b.entry_id for b in transcript.blocks if any(f"[entry {b.entry_id}]" in p for p in parts)]
    assert seen == [b.entry_id for b in transcript.blocks]


def test_findings_with_citations_notes_and_a_free_second_run(corpus, corpus_dir, server, tmp_path):
    before = _digests(corpus_dir)
    units = select_units(corpus, "branch")
    assert len(units) >= 2
    first_leaf = units[0].unit_id
    sm = SessionManager.open(units[0].file, read_only=True)
    real_ids = [e["id"] for e in sm.get_branch(first_leaf) if e["type"] == "message"][:2]
    server.push(_answer("yes", "it edited auth.py unread", [*real_ids, "not-an-id"]),
                *[_answer("no") for _ in units[1:]])
    table = _ask(units, server, tmp_path, concurrency=1)
    assert table.num_rows == len(units)
    rows = {r["unit_id"]: r for r in table.to_pylist()}
    first = rows[first_leaf]
    assert first["answer"] == "yes"
    assert first["cited_entry_ids"] == [*real_ids, "not-an-id"]
    assert first["invalid_citations"] == ["not-an-id"]
    assert first["input_tokens"] == 1000 and first["output_tokens"] == 50
    assert first["cost"] == pytest.approx((3.0 * 1000 + 15.0 * 50) / 1e6)
    assert all(r["answer"] == "no" for u, r in rows.items() if u != first_leaf)
    requests = len(server.requests)
    assert requests == len(units)
    # the findings are notes on the cited entries, naming the model and the question
    notes = NoteStore(tmp_path / "notes.jsonl").notes()
    assert sorted(n.entry_id for n in notes) == sorted(real_ids)
    assert all("Did the agent edit a file it had not read?" in n.source and "judge-1" in n.source for n in notes)
    # asking again costs nothing
    again = _ask(units, server, tmp_path, concurrency=1)
    assert len(server.requests) == requests
    assert again.column("answer").to_pylist() == table.column("answer").to_pylist()
    assert all(again.column("cached").to_pylist())
    assert _digests(corpus_dir) == before


def test_malformed_answers_are_recorded_never_guessed(corpus, server, tmp_path):
    units = select_units(corpus, "session")
    server.push(Text("Yes, I think so."))
    row = _ask(units, server, tmp_path).to_pylist()[0]
    assert row["malformed"] is True
    assert row["answer"] is None
    assert row["raw_text"] == "Yes, I think so."
    assert "not one JSON object" in row["error"]
    server.push(_answer("maybe"))
    row = _ask(units, server, tmp_path, cache=_AnswerCache(tmp_path / "c2")).to_pylist()[0]
    assert row["malformed"] and "not yes or no" in row["error"]


def test_retries_on_429_and_a_dropped_stream(corpus, server, tmp_path):
    units = select_units(corpus, "session")
    server.push(HttpError(429, {"error": {"message": "slow down"}}), Drop(), _answer("no"))
    row = _ask(units, server, tmp_path).to_pylist()[0]
    assert row["answer"] == "no" and row["error"] is None
    assert len(server.requests) == 3


def test_a_key_echoed_by_the_server_appears_nowhere(corpus, server, tmp_path):
    units = select_units(corpus, "session")
    server.push(Text(json.dumps({"answer": "yes", "explanation": f"your key is {KEY}", "cited_entry_ids": []})))
    table = _ask(units, server, tmp_path)
    assert KEY[:12] not in json.dumps(table.to_pylist())
    assert KEY[:12] not in (tmp_path / "notes.jsonl").read_text()
    for cached in (tmp_path / "cache").iterdir():
        assert KEY[:12] not in cached.read_text()


def test_dry_run_and_max_cost(corpus, server, tmp_path):
    units = select_units(corpus, "call", where="stop_reason = 'stop'")
    assert len(units) >= 3
    estimate = _ask(units, server, tmp_path, dry_run=True)
    assert isinstance(estimate, AskEstimate)
    assert estimate.units == len(units) and estimate.requests == len(units)
    assert estimate.cost > 0 and estimate.input_tokens > 0
    assert server.requests == []
    # room for about two requests: the rest are not asked, and say why
    per_request = estimate.cost / estimate.requests
    server.push(*[_answer("no") for _ in units])
    table = _ask(units, server, tmp_path, dry_run=False, max_cost=per_request * 2.2, concurrency=1)
    asked = len(server.requests)
    assert 1 <= asked < len(units)
    errors = [e for e in table.column("error").to_pylist() if e]
    assert len(errors) == len(units) - asked and all("max_cost" in e for e in errors)
    # resuming asks only what was not answered
    table = _ask(units, server, tmp_path, concurrency=1)
    assert len(server.requests) == len(units)
    assert table.column("answer").to_pylist() == ["no"] * len(units)


def test_where_filter_and_bad_arguments(corpus, server, tmp_path):
    calls = select_units(corpus, "call")
    stops = select_units(corpus, "call", where="stop_reason = 'stop'")
    assert 0 < len(stops) < len(calls)
    with pytest.raises(AskError, match="where filter"):
        select_units(corpus, "call", where="no_such_column = 1")
    with pytest.raises(AskError, match="unit"):
        select_units(corpus, "galaxy")
    with pytest.raises(AskError, match="labels"):
        _ask(stops, server, tmp_path, answer="label")


def test_the_offline_model_is_refused_and_names_real_clients(corpus, tmp_path):
    offline = OfflineModel()
    with pytest.raises(Refused, match="OpenAI-compatible") as info:
        asyncio.run(ask_units(select_units(corpus, "session"), "q", client=offline, model=offline.model,
                              progress=False, cache=_AnswerCache(tmp_path / "c")))
    assert "Anthropic" in str(info.value)
