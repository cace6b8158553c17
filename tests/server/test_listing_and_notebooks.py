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
from pi_lab.session._text import content_text

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


async def test_the_state_carries_the_sessions_title(api, sessions_dir):
    # The viewer's header reads session.title: the name when set, else the first user message.
    write_session(sessions_dir / "--p--", "named", 1, "/p", ["hello there", "hi"], name="Bug hunt")
    write_session(sessions_dir / "--p--", "plain", 2, "/p", ["fix the parser", "ok"])
    code, listing = await api.get("sessions")
    assert code == 200
    by_id = {s["id"]: s["location"] for g in listing["groups"] for s in g["sessions"]}
    named = (await api.session("state", by_id["named"]))["session"]
    plain = (await api.session("state", by_id["plain"]))["session"]
    assert (named["title"], named["first_message"]) == ("Bug hunt", "hello there")
    assert (plain["title"], plain["first_message"]) == ("fix the parser", "fix the parser")


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


# ---------------------------------------------------------------------------------------------
# search over the whole text, the per-file index, and files that are not regular


def _ids(listing: dict) -> list[str]:
    return [s["id"] for g in listing["groups"] for s in g["sessions"]]


def test_search_sees_the_whole_text_of_a_large_real_session(sessions_dir, copy_fixture):
    from pi_lab.server.listing import SessionListing
    from pi_lab.session.paths import session_info

    path = copy_fixture("before-compaction.jsonl", sessions_dir / "--pi--")
    text = session_info(str(path)).all_messages_text
    assert text.find("pendingBashMessages") > 64 * 1024  # past the 64 KiB the panel used to keep
    listing = SessionListing().list(str(sessions_dir), "pendingBashMessages")
    (row,) = [s for g in listing["groups"] for s in g["sessions"]]
    hits = row["hits"]
    messages = [json.loads(line)["message"] for line in path.read_text().splitlines() if '"type":"message"' in line]
    having = [m for m in messages if m["role"] in ("user", "assistant")
              and "pendingbashmessages" in content_text(m["content"], " ").lower()]
    assert hits["count"] == len(having) == 5  # messages that have the word, in any letter case
    assert len(hits["snippets"]) == 3
    for piece, message in zip(hits["snippets"], having):
        marked = [t for t, m in piece["parts"] if m]
        assert marked and all(t.lower() == "pendingbashmessages" for t in marked)
        assert all(t in content_text(message["content"], " ") for t in marked)  # the file's own letter case
        assert piece["role"] == message["role"]
    assert SessionListing().list(str(sessions_dir), "pendingBashMessages nothing-like-this")["groups"] == []


def test_the_index_summary_equals_session_info_on_every_real_file(sessions_dir, copy_fixture, fixtures_dir):
    from pi_lab.server.listing import SessionListing
    from pi_lab.session.paths import session_info

    names = sorted(p.name for p in fixtures_dir.glob("*.jsonl"))
    for n, name in enumerate(names):
        copy_fixture(name, sessions_dir / "--all--", n=n + 1)
    listing = SessionListing().list(str(sessions_dir))
    rows = {s["file"]: s for g in listing["groups"] for s in g["sessions"]}
    assert len(rows) == len(names)
    name_of_1970: list[str] = []
    for file, row in rows.items():
        info = session_info(str(sessions_dir / "--all--" / file))
        assert (row["id"], row["name"], row["cwd"], row["message_count"], row["first_message"]) == (
            info.id, info.name, info.cwd, info.message_count, info.first_message[:300])
        if info.modified.year == 1970:
            # pi's list() dates a session whose message timestamps count 1, 2, 3 on 1970-01-01
            # (as session_info does); the panel takes the entries' own times (test_listing_groups.py).
            name_of_1970.append(file)
            assert row["modified"] > "2000"
        else:
            assert row["modified"] == info.modified.isoformat().replace("+00:00", "Z")
        assert row["created"] == info.created.isoformat().replace("+00:00", "Z")
        assert row["title"] == (info.name or info.first_message[:300])
    assert [f.split("_", 1)[1] for f in name_of_1970] == ["public-twkrash-branching.jsonl"]


def test_a_growing_file_is_indexed_by_its_new_bytes_only(sessions_dir, monkeypatch):
    from pi_lab.server import listing as listing_module

    path = write_session(sessions_dir / "--p--", "grow", 1, "/p", ["first words", "reply"] * 25)
    listing = listing_module.SessionListing()
    assert _ids(listing.list(str(sessions_dir), "zebra")) == []
    size = path.stat().st_size
    read: list[int] = []
    real_pread = os.pread

    def counting(fd, n, offset):
        data = real_pread(fd, n, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counting)
    line = MESSAGE.format(id="grow-new", parent='"grow-49"', m=1, s=9, role="user", text="a zebra crossing", ms=1767225700000)
    with open(path, "a") as handle:
        handle.write(line)
    found = listing.list(str(sessions_dir), "zebra")
    assert _ids(found) == ["grow"]
    assert found["groups"][0]["sessions"][0]["message_count"] == 51
    # the new line, plus the two anchors that prove the old bytes are unchanged, plus the snippet's line
    assert sum(read) <= len(line) * 2 + 2 * 256 + 1, (sum(read), size)

    # Rewritten in place (a migration would do this): read again from the start.
    read.clear()
    path.write_text(path.read_text().replace("first words", "FIRST WORDS"))
    listing.list(str(sessions_dir), "")
    assert sum(read) >= size
    # Replaced by another file of the same name: the old text is gone.
    replacement = path.with_suffix(".tmp")
    write_session(sessions_dir / "--p--", "other", 1, "/p", ["only this"]).rename(replacement)
    os.replace(replacement, path)
    assert _ids(listing.list(str(sessions_dir), "zebra")) == []
    assert _ids(listing.list(str(sessions_dir), "only this")) == ["other"]


def test_a_last_line_still_being_written_is_read_when_complete(sessions_dir):
    from pi_lab.server.listing import SessionListing

    path = write_session(sessions_dir / "--p--", "tail", 1, "/p", ["hello"])
    line = MESSAGE.format(id="tail-1", parent='"tail-0"', m=1, s=1, role="assistant", text="kangaroo", ms=1767225601000)
    listing = SessionListing()
    with open(path, "a") as handle:
        handle.write(line[:40])
    assert _ids(listing.list(str(sessions_dir), "kangaroo")) == []
    with open(path, "a") as handle:
        handle.write(line[40:])
    found = listing.list(str(sessions_dir), "kangaroo")
    assert _ids(found) == ["tail"] and found["groups"][0]["sessions"][0]["message_count"] == 2


def test_snippets_are_text_with_the_match_marked(sessions_dir):
    from pi_lab.server.listing import SessionListing, snippet

    long_text = "x " * 100 + "the <b>Parser</b> broke " + "y " * 100
    write_session(sessions_dir / "--p--", "snip", 1, "/p", ["hi", long_text])
    row = SessionListing().list(str(sessions_dir), "parser")["groups"][0]["sessions"][0]
    (piece,) = row["hits"]["snippets"]
    text = "".join(t for t, _ in piece["parts"])
    assert "<b>Parser</b>" in text and text.startswith("…") and text.endswith("…")
    assert [t for t, m in piece["parts"] if m] == ["Parser"]
    assert piece["entry_id"] == "snip-1" and piece["role"] == "assistant"
    assert len(text) < 160
    # Every word is marked; a match only in the cwd gives a snippet of the cwd.
    assert [t for t, m in snippet("Alpha beta ALPHA", ["alpha", "beta"])["parts"] if m] == ["Alpha", "beta", "ALPHA"]
    row = SessionListing().list(str(sessions_dir), "/p")["groups"][0]["sessions"][0]
    assert row["hits"]["snippets"][0]["role"] == "session"
    assert [t for t, m in row["hits"]["snippets"][0]["parts"] if m] == ["/p"]


def _within(seconds: float, fn):
    """Run ``fn`` in a daemon thread; fail (instead of hanging) if it blocks."""
    import threading

    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(value=fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"blocked for more than {seconds} s"
    return box["value"]


def test_a_fifo_named_like_a_session_blocks_neither_listing_nor_search(sessions_dir):
    from pi_lab.server.listing import SessionListing

    write_session(sessions_dir / "--p--", "fine", 1, "/p", ["hello there"])
    os.mkfifo(sessions_dir / "--p--" / "2026-01-02T00-00-00-000Z_pipe.jsonl")
    os.mkdir(sessions_dir / "--p--" / "2026-01-03T00-00-00-000Z_dir.jsonl")
    listing = SessionListing()
    plain = _within(10, lambda: listing.list(str(sessions_dir)))
    assert _ids(plain) == ["fine"]
    assert {s["file"]: s["reason"] for s in plain["skipped"]} == {
        "--p--/2026-01-02T00-00-00-000Z_pipe.jsonl": "a FIFO (named pipe)",
        "--p--/2026-01-03T00-00-00-000Z_dir.jsonl": "a folder"}
    assert _ids(_within(10, lambda: listing.list(str(sessions_dir), "hello"))) == ["fine"]


def test_a_file_swapped_for_a_fifo_after_the_type_check_is_not_opened_for_a_blocking_read(sessions_dir, monkeypatch):
    from pi_lab.server.listing import SessionListing

    regular = write_session(sessions_dir / "--p--", "real", 1, "/p", ["hello"])
    fifo = sessions_dir / "--p--" / "2026-01-02T00-00-00-000Z_swapped.jsonl"
    os.mkfifo(fifo)
    real_stat = os.stat
    # The listing's stat sees a regular file (it was one a moment ago); the path is a FIFO now.
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: real_stat(regular) if str(p) == str(fifo) else real_stat(p, *a, **k))
    listing = _within(10, lambda: SessionListing().list(str(sessions_dir), "hello"))
    assert _ids(listing) == ["real"]


def test_the_index_of_many_sessions_stays_small(sessions_dir, copy_fixture):
    from pi_lab.server.listing import SessionListing

    for n in range(40):
        copy_fixture("large-session.jsonl", sessions_dir / f"--p{n % 4}--", dest=f"2026-01-01T00-00-{n:02d}-000Z_s{n}.jsonl")
    listing = SessionListing()
    assert listing.list(str(sessions_dir))["total"] == 40
    memory = listing.memory()
    assert memory["files"] == 40
    assert memory["text_bytes"] >= 40 * 64305
    assert memory["index_bytes"] < memory["text_bytes"] / 2  # compressed text plus 12 bytes per message
    assert len(_ids(listing.list(str(sessions_dir), "mode"))) == 40


def test_titles_follow_the_session_name_else_the_first_user_message():
    from pi_lab.server.listing import first_user_message, session_title, title_fields

    entries = [{"type": "session"}, {"type": "message", "message": {"role": "assistant", "content": "hi"}},
               {"type": "message", "message": {"role": "user", "content": [{"type": "image"}]}},
               {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "fix the bug"}]}}]
    assert first_user_message(entries) == "fix the bug"
    assert first_user_message([]) == "(no messages)"
    assert session_title(None, "fix the bug") == "fix the bug"
    assert session_title("Bug hunt", "fix the bug") == "Bug hunt"
    assert title_fields(None, entries) == {"title": "fix the bug", "first_message": "fix the bug"}


async def test_open_in_notebook_says_it_opens_read_only_and_how_to_write(api, root, copy_fixture, monkeypatch):
    path = copy_fixture("public-whamp-v1-linear.jsonl", root, "old.jsonl")
    before = path.read_bytes()
    code, made = await api.post("open-in-notebook", path=path.name)
    assert code == 200, made
    source = nbformat.read(root / made["path"], as_version=4).cells[0].source
    assert source.startswith("# Read-only:") and "writable=True" in source and "Allow writing…" in source
    namespace: dict = {}
    monkeypatch.chdir(root / (made["path"].rpartition("/")[0] or "."))  # a kernel starts beside its notebook
    head, call, tail = source.rpartition("pi_lab.open(")
    exec(compile(head + "widget = " + call + tail, "cell", "exec"), namespace)  # noqa: S102
    assert namespace["widget"].writable is False  # opened read-only from the notebook's folder
    assert path.read_bytes() == before  # running the generated cell does not migrate the file


async def test_open_in_notebook_on_a_fifo_does_not_block(api, root):
    import os

    os.mkfifo(root / "pipe.jsonl")
    code, body = await api.post("open-in-notebook", path="pipe.jsonl")
    assert code == 422 and "FIFO" in body["message"].upper()
