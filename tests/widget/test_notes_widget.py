"""Notes in the notebook widget (issue 26): a read-only widget annotates any agent's session, the
traitlets notes_version and note_filter, another process's notes, and findings of Corpus.ask."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from widget.test_session_widget import capture, request

import pi_lab
from pi_lab.corpus import Corpus
from pi_lab.data import recorded_session
from pi_lab.llm import OpenAIClient
from pi_lab.llm.model import Model, ModelCost
from pi_lab.research.notes import NoteStore
from tests.llm.provider_server import ProviderServer, Text, Usage

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLAUDE = FIXTURES / "claude-code" / "inspect_scout-compaction_session.jsonl"
CODEX = FIXTURES / "codex" / "inspect_scout-rollout-2026-08-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def tiny(tmp_path) -> Path:
    return Path(shutil.copy(recorded_session().path, tmp_path / "tiny.jsonl"))


def user_ids(widget) -> list[str]:
    return [e["id"] for e in widget.session_manager.get_entries()
            if e.get("type") == "message" and e["message"]["role"] == "user"]


def add_in_another_process(store: Path, session_file: Path, entry_id: str, tag: str) -> None:
    code = textwrap.dedent(f"""
        from pi_lab import open_session
        from pi_lab.research.notes import NoteStore
        NoteStore({str(store)!r}).add(open_session({str(session_file)!r}), {entry_id!r}, "from kernel two", tag={tag!r})
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_read_only_widget_annotates_without_allowing_writes(tiny, tmp_path):
    before = sha(tiny)
    w = pi_lab.open(tiny, notes=tmp_path / "notes.jsonl")
    sent = capture(w)
    assert w.writable is False and isinstance(w.notes, NoteStore) and w.notes_version == 0
    leaf = w.leaf_id
    reply, _ = request(w, sent, "note_add", entry_id=leaf, text="claims the tests pass", tag="claim")
    assert reply["ok"], reply
    payload = reply["result"]
    assert [(n["entry_id"], n["tag"], n["source"]) for n in payload["notes"]] == [(leaf, "claim", "person")]
    assert payload["store"] == str(tmp_path / "notes.jsonl") and payload["writable"] is True
    assert w.notes_version == payload["version"] != 0
    note_id = payload["notes"][0]["id"]
    reply, _ = request(w, sent, "note_edit", id=note_id, tag="unverified")
    assert reply["result"]["tags"] == ["unverified"]
    reply, _ = request(w, sent, "note_remove", id=note_id)
    assert reply["result"]["notes"] == []
    reply, _ = request(w, sent, "note_add", entry_id="not-an-entry", text="x")
    assert reply["ok"] is False and "not in this session" in reply["error"] and "\n" not in reply["error"]
    assert w.writable is False  # notes never needed "allow writes"
    w.close()
    assert sha(tiny) == before


def test_the_default_store_is_beside_the_notebook(tiny, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = pi_lab.open(tiny)
    assert w.notes.path == str(tmp_path / "pi-lab-notes.jsonl")
    w.notes.add(w.session_manager, w.leaf_id, "from a cell")  # in Python: the viewer follows
    sent = capture(w)
    reply, _ = request(w, sent, "notes")
    assert [n["text"] for n in reply["result"]["notes"]] == ["from a cell"]
    assert w.notes_version == reply["result"]["version"]
    w.close()


@pytest.mark.parametrize("source", [CLAUDE, CODEX], ids=["claude-code", "codex"])
def test_other_agents_sessions_take_notes_and_stay_byte_identical(tmp_path, source):
    path = Path(shutil.copy(source, tmp_path / "session.jsonl"))
    before = sha(path)
    w = pi_lab.open(path, notes=NoteStore(tmp_path / "notes.jsonl"))
    sent = capture(w)
    reply, _ = request(w, sent, "note_add", entry_id=w.leaf_id, text="the agent's last step", tag="look")
    assert reply["ok"], reply
    w.filter_mode = "all"  # the leaf may be a setting, which the default mode hides
    w.note_filter = "tag:look"
    assert w.view.rows.ids == [w.leaf_id]
    w.close()
    assert sha(path) == before
    assert [n.agent for n in NoteStore(tmp_path / "notes.jsonl").notes()] == [w.session_manager.agent]


def test_the_note_filter_traitlet_and_a_second_process(tiny, tmp_path):
    store = tmp_path / "notes.jsonl"
    w = pi_lab.open(tiny, notes=store)
    sent = capture(w)
    users = user_ids(w)
    everything = w.row_count
    request(w, sent, "note_add", entry_id=users[0], text="first ask", tag="a")
    w.note_filter = "noted"
    assert w.view.rows.ids == [users[0]] and w.row_count == 1
    version = w.structure_version
    # another kernel notes a second entry: the widget sees it with the viewer's next request,
    # and the filtered rows are laid out again
    add_in_another_process(store, tiny, users[1], "b")
    seen = w.notes_version
    request(w, sent, "rows", start=0, end=10)
    assert w.notes_version != seen
    assert w.view.rows.ids == [users[0], users[1]] and w.structure_version != version
    w.note_filter = "tag:b"
    assert w.view.rows.ids == [users[1]]
    w.note_filter = "starred"  # not a note filter: said, and the rows stay
    assert "note_filter must be" in w.status and w.view.rows.ids == [users[1]]
    w.note_filter = ""
    assert w.row_count == everything
    w.close()


def test_the_widget_polls_the_store_once_a_viewer_is_drawn(tiny, tmp_path):
    store = tmp_path / "notes.jsonl"

    async def scenario() -> tuple[int, int]:
        w = pi_lab.open(tiny, notes=store, poll_interval=0.05)
        sent = capture(w)
        request(w, sent, "hello")
        before = w.notes_version
        await asyncio.to_thread(add_in_another_process, store, tiny, w.leaf_id, "late")
        for _ in range(400):  # until the poll noticed (no request from the viewer meanwhile)
            if w.notes_version != before:
                break
            await asyncio.sleep(0.05)
        after = w.notes_version
        w.close()
        return before, after

    before, after = asyncio.run(scenario())
    assert before == 0 and after == NoteStore(store).version() != 0


def test_a_finding_of_corpus_ask_is_a_note_in_the_viewer(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "sessions"
    folder.mkdir()
    session_file = Path(shutil.copy(recorded_session().path, folder / "2026-03-02T14-00-00-000Z_tiny.jsonl"))
    before = sha(session_file)
    corpus = Corpus.scan([folder], cache=False)
    corpus.notes_path = str(tmp_path / "notes.jsonl")
    w = pi_lab.open(session_file, notes=corpus.notes_path)
    cited = user_ids(w)[:2]
    judge = Model(provider="loopback", id="judge-1", api="openai-completions", context_window=64_000,
                  max_tokens=2_000, cost=ModelCost(input=3.0, output=15.0))
    with ProviderServer() as server:
        server.push(Text(json.dumps({"answer": "yes", "explanation": "edited unread", "cited_entry_ids": cited}),
                         usage=Usage(input=100, output=10)))
        client = OpenAIClient("sk-judge-0123456789abcdefghijklmnop", base_url=server.openai_base_url)
        table = corpus.ask("Did the agent edit a file it had not read?", client=client, model=judge,
                           unit="session", progress=False)
    assert table.column("answer").to_pylist() == ["yes"]
    sent = capture(w)
    reply, _ = request(w, sent, "notes")
    findings = reply["result"]["notes"]
    assert sorted(n["entry_id"] for n in findings) == sorted(cited)
    assert all(n["source"].startswith("model:") and n["missing"] is False for n in findings)
    w.note_filter = "noted"
    assert sorted(w.view.rows.ids) == sorted(cited)
    w.close()
    assert sha(session_file) == before


@pytest.mark.skipif(not (Path(pi_lab.__file__).parent / "static" / "export.js").exists(),
                    reason="pi_lab/static/export.js is not built (jlpm build)")
def test_the_notebook_snapshot_shows_the_notes_read_only(tiny, tmp_path):
    import re

    from pi_lab.export.html import unpack

    w = pi_lab.open(tiny, notes=tmp_path / "notes.jsonl")
    w.notes.add(w.session_manager, w.leaf_id, "saved with the notebook", tag="kept")
    data, _ = w.snapshot_bundle()
    w.close()
    packed = re.search(r'class="pi-main" hidden>([^<]+)<', data["text/html"]).group(1)
    main = unpack(packed)
    header = json.loads(main[8:8 + int.from_bytes(main[4:8], "little")])
    assert header["notes"]["writable"] is False
    assert [(n["tag"], n["text"]) for n in header["notes"]["notes"]] == [("kept", "saved with the notebook")]
