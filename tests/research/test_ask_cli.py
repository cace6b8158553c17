"""pi-lab ask from a shell, against the loopback provider server."""

from __future__ import annotations

import json
import shutil

from pi_lab.cli import main
from pi_lab.data import recorded_session
from tests.llm.provider_server import ProviderServer, Text


def test_ask_json_dry_run_and_notes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cli-000000000000000000")
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(recorded_session().path, folder / "2026-03-02T14-00-00-000Z_tiny.jsonl")
    notes = tmp_path / "notes.jsonl"
    with ProviderServer() as server:
        base = ["ask", "Was a test run?", str(folder), "--model", "judge", "--base-url", server.openai_base_url,
                "--notes", str(notes), "--json"]
        assert main([*base, "--dry-run"]) == 0
        estimate = json.loads(capsys.readouterr().out)
        assert estimate["units"] == 1 and estimate["requests"] == 1 and server.requests == []
        server.push(Text(json.dumps({"answer": "no", "explanation": "nothing ran", "cited_entry_ids": []})))
        assert main(base) == 0
        rows = json.loads(capsys.readouterr().out)
        assert [r["answer"] for r in rows] == ["no"] and len(server.requests) == 1
    assert not notes.exists()  # a "no" is no finding


def test_bad_where_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(recorded_session().path, folder / "2026-03-02T14-00-00-000Z_tiny.jsonl")
    code = main(["ask", "q", str(folder), "--model", "m", "--base-url", "http://127.0.0.1:9", "--where", "nope = 1"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "where filter" in err
