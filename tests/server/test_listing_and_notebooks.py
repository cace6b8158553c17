"""The Pi Sessions panel's listing, and "Open in notebook"."""

from __future__ import annotations

import ast
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from pi_lab.server.notebook import cell_source, python_string

SESSION = '{{"type":"session","version":3,"id":"{id}","timestamp":"2026-0{m}-01T00:00:00.000Z","cwd":"{cwd}"}}\n'
MESSAGE = ('{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-0{m}-01T00:00:0{s}.000Z",'
           '"message":{{"role":"{role}","content":"{text}","timestamp":{ms}}}}}\n')
NAME = '{{"type":"session_info","id":"n{id}","parentId":"{parent}","timestamp":"2026-0{m}-01T00:00:09.000Z","name":"{name}"}}\n'


def write_session(folder: Path, sid: str, month: int, cwd: str, texts: list[str], name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"2026-0{month}-01T00-00-00-000Z_{sid}.jsonl"
    lines = [SESSION.format(id=sid, m=month, cwd=cwd)]
    parent = "null"
    for i, text in enumerate(texts):
        entry_id = f"{sid}-{i}"
        lines.append(MESSAGE.format(id=entry_id, parent=parent, m=month, s=i, role="user" if i % 2 == 0 else "assistant",
                                    text=text, ms=int(datetime(2026, month, 1, 0, 0, i, tzinfo=timezone.utc).timestamp() * 1000)))
        parent = json.dumps(entry_id)
    if name:
        lines.append(NAME.format(id=sid, parent=json.loads(parent), m=month, name=name))
    path.write_text("".join(lines))
    return path


async def test_sessions_are_grouped_by_project_newest_first(api, sessions_dir, copy_fixture):
    proj = sessions_dir / "--home-ann-proj--"
    other = sessions_dir / "--srv-app--"
    write_session(proj, "a-old", 1, "/home/ann/proj", ["fix the parser", "done"])
    write_session(proj, "a-new", 5, "/home/ann/proj", ["add a cache", "ok", "thanks"], name="Cache work")
    write_session(other, "b", 3, "/srv/app", ["deploy it"])
    (proj / "notes.jsonl").write_text('{"not": "a session"}\n')
    (proj / "readme.txt").write_text("ignored")
    copy_fixture("public-twkrash-branching.jsonl", sessions_dir / "--fixture--")

    code, listing = await api.get("sessions")
    assert code == 200
    assert listing["exists"] and listing["total"] == 4
    dirs = [g["dir"] for g in listing["groups"]]
    assert dirs == ["--home-ann-proj--", "--srv-app--", "--fixture--"]  # by newest activity
    proj_group = listing["groups"][0]
    assert proj_group["cwd"] == "/home/ann/proj"
    first, second = proj_group["sessions"]
    assert (first["id"], first["name"], first["first_message"], first["message_count"]) == ("a-new", "Cache work", "add a cache", 3)
    assert (second["id"], second["name"], second["first_message"], second["message_count"]) == ("a-old", None, "fix the parser", 2)
    assert first["location"] == f"@sessions/--home-ann-proj--/{Path(first['file']).name}"
    assert first["modified"] == "2026-05-01T00:00:02Z"


async def test_the_listing_is_searchable_by_every_word(api, sessions_dir):
    proj = sessions_dir / "--p--"
    write_session(proj, "one", 1, "/p", ["parse the config", "the config parser now handles comments"])
    write_session(proj, "two", 2, "/p", ["write docs"], name="Docs day")
    write_session(sessions_dir / "--q--", "three", 3, "/q", ["unrelated"])

    async def ids(q: str) -> list[str]:
        code, listing = await api.get("sessions", q=q)
        assert code == 200
        return [s["id"] for g in listing["groups"] for s in g["sessions"]]

    assert await ids("comments parser") == ["one"]  # words from the assistant's reply count too
    assert await ids("DOCS day") == ["two"]
    assert await ids("/q") == ["three"]
    assert await ids("nothing-matches") == []
    assert sorted(await ids("")) == ["one", "three", "two"]


async def test_listing_leaves_out_links_that_lead_out(api, sessions_dir, tmp_path):
    outside = tmp_path / "elsewhere"
    write_session(outside, "secret", 1, "/x", ["private"])
    os.symlink(outside, sessions_dir / "--linked--")
    write_session(sessions_dir / "--ok--", "ok", 2, "/ok", ["fine"])
    code, listing = await api.get("sessions")
    assert code == 200
    assert [s["id"] for g in listing["groups"] for s in g["sessions"]] == ["ok"]


async def test_a_missing_sessions_folder_is_reported(api, sessions_dir):
    shutil.rmtree(sessions_dir)
    code, listing = await api.get("sessions")
    assert code == 200 and listing["exists"] is False and listing["groups"] == []


async def test_sessions_folder_files_open_through_their_key(api, sessions_dir):
    path = write_session(sessions_dir / "--p--", "k", 1, "/p", ["hello there", "hi"])
    code, listing = await api.get("sessions")
    assert code == 200
    location = listing["groups"][0]["sessions"][0]["location"]
    state = await api.session("state", location)
    assert state["session"]["id"] == "k"
    assert state["location"] == {"path": location, "area": "sessions", "name": path.name}


def test_python_literals_round_trip():
    for text in ["plain.jsonl", 'quote"s.jsonl', "back\\slash.jsonl", "it's.jsonl", "new\nline.jsonl", "tab\t.jsonl",
                 "ünïcødé 会话.jsonl", "\u2028sep.jsonl"]:
        assert ast.literal_eval(python_string(text)) == text
    assert python_string("a.jsonl") == '"a.jsonl"'
    assert cell_source("x.jsonl") == 'import pi_lab\n\npi_lab.open("x.jsonl")'


async def test_open_in_notebook_writes_a_notebook_next_to_the_file(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-branching.jsonl", root / "runs", dest='2026-01-01T00-00-00-000Z_we"ird.jsonl')
    code, made = await api.post("open-in-notebook", path=f"runs/{path.name}")
    assert code == 200, made
    assert made["created"] is True
    assert made["path"] == 'runs/2026-01-01T00-00-00-000Z_we"ird.ipynb'
    nb = nbformat.read(root / made["path"], as_version=4)
    assert len(nb.cells) == 1
    source = nb.cells[0].source
    call = ast.parse(source).body[-1].value
    assert ast.literal_eval(call.args[0]) == path.name  # relative to the notebook's folder
    assert nb.metadata["kernelspec"]["name"] == "python3"

    again = (await api.post("open-in-notebook", path=f"runs/{path.name}"))[1]
    assert again == {**made, "created": False}

    # A notebook of the same name that opens something else is left alone.
    (root / "runs" / "2026-01-01T00-00-00-000Z_we\"ird.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    other = (await api.post("open-in-notebook", path=f"runs/{path.name}"))[1]
    assert other["path"] == 'runs/2026-01-01T00-00-00-000Z_we"ird-1.ipynb' and other["created"]


async def test_open_in_notebook_for_the_sessions_folder_uses_the_absolute_path(api, root, sessions_dir):
    path = write_session(sessions_dir / "--p--", "abs", 1, "/p", ["hi"])
    code, made = await api.post("open-in-notebook", path=f"@sessions/--p--/{path.name}")
    assert code == 200, made
    assert made["path"] == path.name.replace(".jsonl", ".ipynb")  # at the root: the folder is out of reach
    source = nbformat.read(root / made["path"], as_version=4).cells[0].source
    assert ast.literal_eval(ast.parse(source).body[-1].value.args[0]) == str(path.resolve())


async def test_open_in_notebook_refuses_what_is_not_a_session(api, root):
    (root / "data.jsonl").write_text('{"a": 1}\n')
    code, body = await api.post("open-in-notebook", path="data.jsonl")
    assert code == 422 and "not a pi session" in body["message"]
    code, body = await api.post("open-in-notebook", path="../x.jsonl")
    assert code == 400
    assert sorted(p.name for p in root.iterdir()) == ["data.jsonl"]
