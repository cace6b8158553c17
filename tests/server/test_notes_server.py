"""Notes in the JupyterLab viewer's server (issue 26): the read-only viewer annotates any agent's
session through the server's one notes store, never touching the session file; the note filter
is a view parameter; another process's note shows in the next poll; bad requests are 400s."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from jupyter_server.auth.authorizer import Authorizer

from pi_lab.research.notes import NoteStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from generate_claude_sessions import generate_session as generate_claude  # noqa: E402
from generate_codex_sessions import generate_session as generate_codex  # noqa: E402

TINY_AUTH = Path(__file__).resolve().parents[2] / "pi_lab" / "data" / "sessions" / "tiny-auth.jsonl"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def tiny(root: Path) -> Path:
    target = root / "tiny.jsonl"
    target.write_bytes(TINY_AUTH.read_bytes())
    return target


async def test_the_read_only_viewer_annotates_and_the_session_is_untouched(api, root, tiny):
    before = sha(tiny)
    state = await api.session("state", "tiny.jsonl")
    assert state["notes_version"] == 0
    empty = await api.session("notes", "tiny.jsonl")
    assert empty == {"notes": [], "tags": [], "store": "pi-lab-notes.jsonl", "writable": True, "version": 0}
    leaf = state["leaf_id"]
    added = await api.session("note_add", "tiny.jsonl", args={"entry_id": leaf, "text": "claims tests pass",
                                                              "tag": "claim"})
    [note] = added["notes"]
    assert (note["entry_id"], note["tag"], note["source"], note["missing"]) == (leaf, "claim", "person", False)
    edited = await api.session("note_edit", "tiny.jsonl", args={"id": note["id"], "text": "never ran them"})
    assert edited["notes"][0]["text"] == "never ran them"
    poll = await api.session("poll", "tiny.jsonl", version=state["version"], generation=state["generation"])
    assert poll["kind"] == "none" and poll["notes_version"] == edited["version"] != 0
    removed = await api.session("note_remove", "tiny.jsonl", args={"id": note["id"]})
    assert removed["notes"] == []
    assert sha(tiny) == before
    lines = [json.loads(line)["op"] for line in (root / "pi-lab-notes.jsonl").read_text().splitlines()]
    assert lines == ["add", "edit", "remove"]
    # the session's writes stay refused: notes never need "allow writes"
    code, body = await api.post("session", "label", path="tiny.jsonl", args={"id": leaf, "label": "x"})
    assert code == 403 and sha(tiny) == before


async def test_claude_code_and_codex_sessions_take_notes_too(api, root):
    claude = generate_claude(root / "cc", seed=2)
    codex = generate_codex(root / "cx", seed=5)[0]
    for path in (claude, codex):
        before = sha(path)
        location = str(path.relative_to(root))
        state = await api.session("state", location)
        added = await api.session("note_add", location, args={"entry_id": state["leaf_id"], "text": "seen"})
        assert [n["entry_id"] for n in added["notes"]] == [state["leaf_id"]]
        rows = await api.session("state", location, view={"note_filter": "noted", "filter_mode": "all"})
        assert rows["row_count"] == 1
        assert sha(path) == before, path
    stored = NoteStore(root / "pi-lab-notes.jsonl").notes()
    assert sorted(n.agent for n in stored) == ["claude-code", "codex"]


def _add_from_another_process(store: Path, session_file: Path, entry_id: str, tag: str) -> None:
    code = textwrap.dedent(f"""
        from pi_lab.research.notes import NoteStore
        from pi_lab.session import SessionManager
        sm = SessionManager.open({str(session_file)!r}, read_only=True)
        NoteStore({str(store)!r}).add(sm, {entry_id!r}, "from the other kernel", tag={tag!r})
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


async def test_the_note_filter_follows_notes_another_process_adds(api, root, tiny):
    view = {"note_filter": "tag:late"}
    state = await api.session("state", "tiny.jsonl", view=view)
    assert state["row_count"] == 0
    structure = await api.session("structure", "tiny.jsonl", view=view)
    assert isinstance(structure, bytes)
    entries = [json.loads(line) for line in tiny.read_text().splitlines()]
    users = [e["id"] for e in entries if e.get("type") == "message" and e["message"]["role"] == "user"]
    _add_from_another_process(root / "pi-lab-notes.jsonl", tiny, users[1], "late")
    poll = await api.session("poll", "tiny.jsonl", view=view, version=state["version"],
                             generation=state["generation"])
    assert poll["notes_version"] != state["notes_version"]
    assert poll["kind"] == "layout" and poll["row_count"] == 1 and poll["version"] != state["version"]
    rows = await api.session("rows", "tiny.jsonl", view=view, args={"start": 0, "end": 5})
    assert [r["id"] for r in rows["rows"]] == [users[1]]
    # the unfiltered view is not laid out again for a note
    plain = await api.session("state", "tiny.jsonl")
    again = await api.session("poll", "tiny.jsonl", version=plain["version"], generation=plain["generation"])
    assert again["kind"] == "none"


BAD = [
    ("note_add", {"args": {"entry_id": 7, "text": "x"}}, "entry_id must be an entry id"),
    ("note_add", {"args": {"entry_id": "nope", "text": "x"}}, "not in this session"),
    ("note_add", {"args": {"entry_id": ["a"], "text": "x"}}, "entry_id must be an entry id"),
    ("note_add", {"args": "entry"}, "arguments must be an object"),
    ("note_add", {"args": {"text": "x"}}, "entry_id must be"),
    ("note_edit", {"args": {"id": {"deep": [1]}}}, "id must be a note id"),
    ("note_edit", {"args": {"id": "unknown", "text": "x"}}, "no note"),
    ("note_remove", {"args": {"id": None}}, "id must be a note id"),
    ("notes", {"args": [1, 2]}, "arguments must be an object"),
    ("state", {"view": {"note_filter": 3}}, "view.note_filter must be a string"),
    ("state", {"view": {"note_filter": "starred"}}, "view.note_filter must be"),
    ("rows", {"view": {"note_filter": ["noted"]}, "args": {"start": 0, "end": 5}}, "view.note_filter must be"),
    ("poll", {"view": {"note_filter": "tag:" + "t" * 200}}, "at most 100"),
]


@pytest.mark.parametrize("op,body,reason", BAD, ids=[f"{i}-{case[0]}" for i, case in enumerate(BAD)])
async def test_bad_note_requests_are_400_with_one_line(api, root, tiny, op, body, reason):
    code, reply = await api.post("session", op, path="tiny.jsonl", **body)
    assert code == 400, reply
    assert reason in reply["message"] and "\n" not in reply["message"] and reply["reason"] == "bad-request"
    assert not (root / "pi-lab-notes.jsonl").exists()


async def test_a_symlink_or_fifo_at_the_notes_path_is_refused_never_followed(api, root, tiny, tmp_path):
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    os.symlink(target, root / "pi-lab-notes.jsonl")
    state = await api.session("state", "tiny.jsonl")  # the viewer still works
    code, reply = await api.post("session", "note_add", path="tiny.jsonl",
                                 args={"entry_id": state["leaf_id"], "text": "x"})
    assert code == 422 and reply["reason"] == "notes-unavailable" and "symbolic link" in reply["message"]
    code, reply = await api.post("session", "notes", path="tiny.jsonl")
    assert code == 422 and "symbolic link" in reply["message"]
    code, reply = await api.post("session", "state", path="tiny.jsonl", view={"note_filter": "noted"})
    assert code == 422 and reply["reason"] == "notes-unavailable"
    assert target.read_text() == ""
    os.unlink(root / "pi-lab-notes.jsonl")
    os.mkfifo(root / "pi-lab-notes.jsonl")
    code, reply = await api.post("session", "note_add", path="tiny.jsonl",
                                 args={"entry_id": state["leaf_id"], "text": "x"})
    assert code == 422 and "not a regular file" in reply["message"]


class ReadOnlyUsers(Authorizer):
    """Every user may read, none may write."""

    def is_authorized(self, handler, user, action, resource):
        return action == "read"


async def test_notes_follow_jupyter_authentication_and_write_permission(api, root, tiny, jp_serverapp,
                                                                        http_server_client, jp_base_url,
                                                                        monkeypatch):
    state = await api.session("state", "tiny.jsonl")
    url = jp_base_url + "pi-lab/api/session/note_add"
    body = json.dumps({"path": "tiny.jsonl", "args": {"entry_id": state["leaf_id"], "text": "x"}})
    response = await http_server_client.fetch(url, method="POST", body=body, raise_error=False,
                                              follow_redirects=False)
    assert response.code == 403
    monkeypatch.setitem(jp_serverapp.web_app.settings, "authorizer", ReadOnlyUsers(parent=jp_serverapp))
    code, _ = await api.post("session", "note_add", path="tiny.jsonl", args={"entry_id": state["leaf_id"], "text": "x"})
    assert code == 403
    seen = await api.session("notes", "tiny.jsonl")  # reading is allowed, and says writing is not
    assert seen["notes"] == [] and seen["writable"] is False
    assert not (root / "pi-lab-notes.jsonl").exists()


async def test_the_notes_file_setting(api, root, tiny, tmp_path, jp_serverapp):
    state = jp_serverapp.web_app.settings["pi_lab"]
    assert state.notes.path == os.path.join(str(root), "pi-lab-notes.jsonl")
    from pi_lab.server.config import PiLabConfig

    config = PiLabConfig(notes_file="team/notes.jsonl")
    assert config.notes_path(str(root)) == os.path.join(str(root), "team", "notes.jsonl")
    assert config.notes_label(config.notes_path(str(root)), str(root)) == os.path.join("team", "notes.jsonl")
    outside = str(tmp_path / "shared-notes.jsonl")
    assert PiLabConfig(notes_file=outside).notes_path(str(root)) == outside
    assert PiLabConfig.notes_label(outside, str(root)) == outside
