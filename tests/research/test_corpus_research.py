"""The research methods on Corpus: ask, annotations (joinable in sql), find; files untouched."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from pi_lab.corpus import Corpus
from pi_lab.data import recorded_session
from pi_lab.llm import OpenAIClient
from pi_lab.llm.model import Model, ModelCost
from pi_lab.research.ask import AskEstimate, _AnswerCache
from tests.llm.provider_server import ProviderServer, Text, Usage

JUDGE = Model(provider="loopback", id="judge-2", api="openai-completions", context_window=64_000, max_tokens=2_000,
              cost=ModelCost(input=1.0, output=2.0))


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(recorded_session().path, folder / "2026-03-02T14-00-00-000Z_tiny.jsonl")
    monkeypatch.chdir(tmp_path)  # the default notes file is beside the notebook (here: tmp_path)
    c = Corpus.scan([folder], cache=False)
    return c, folder


def _digest(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def test_ask_writes_findings_that_annotations_and_sql_see(corpus, tmp_path):
    c, folder = corpus
    before = _digest(folder)
    session_id = c.sessions.column("session_id")[0].as_py()
    cited = [r["entry_id"] for r in c.sql("select entry_id from messages where role = 'user' limit 2").to_pylist()]
    question = "Did the user change their mind about JWT?"
    with ProviderServer() as server:
        server.push(Text(json.dumps({"answer": "yes", "explanation": "went back to cookies",
                                     "cited_entry_ids": cited}), usage=Usage(input=900, output=40)))
        client = OpenAIClient("sk-test-aaaaaaaaaaaaaaaaaaaaaaaa", base_url=server.openai_base_url)
        estimate = c.ask(question, client=client, model=JUDGE, unit="session", dry_run=True,
                         cache=_AnswerCache(tmp_path / "cache"))
        assert isinstance(estimate, AskEstimate) and estimate.units == 1 and server.requests == []
        table = c.ask(question, client=client, model=JUDGE, unit="session", progress=False,
                      cache=_AnswerCache(tmp_path / "cache"))
        assert len(server.requests) == 1
        row = table.to_pylist()[0]
        assert (row["session_id"], row["answer"], row["cited_entry_ids"]) == (session_id, "yes", cited)
        assert (row["input_tokens"], row["output_tokens"]) == (900, 40)
        assert row["cost"] == pytest.approx((900 * 1.0 + 40 * 2.0) / 1e6)
        again = c.ask(question, client=client, model=JUDGE, unit="session", progress=False,
                      cache=_AnswerCache(tmp_path / "cache"))
        assert len(server.requests) == 1 and again.column("answer").to_pylist() == ["yes"]
    notes = c.annotations
    assert notes.num_rows == 2
    assert all(question in s for s in notes.column("source").to_pylist())
    joined = c.sql("select a.entry_id, m.role from annotations a join messages m using (entry_id)").to_pylist()
    assert sorted(r["entry_id"] for r in joined) == sorted(cited) and {r["role"] for r in joined} == {"user"}
    assert (tmp_path / "pi-lab-notes.jsonl").exists()
    assert _digest(folder) == before


def test_find_with_notes(corpus):
    c, folder = corpus
    table = c.find("jwt", note="jwt-mention")
    assert table.num_rows > 0
    assert c.annotations.num_rows == table.num_rows
    assert set(c.annotations.column("tag").to_pylist()) == {"jwt-mention"}


def test_a_person_note_shows_in_annotations(corpus):
    c, folder = corpus
    session_id = c.sessions.column("session_id")[0].as_py()
    entry = c.entries.column("entry_id")[3].as_py()
    c.notes.add(session_id, entry, "interesting", tag="look", author="ada")
    row = c.annotations.to_pylist()[0]
    assert (row["entry_id"], row["tag"], row["note"], row["author"], row["source"]) == (entry, "look", "interesting", "ada", "person")
