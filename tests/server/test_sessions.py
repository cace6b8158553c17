"""The viewer API answers with the engine's own payloads, and follows a file pi is writing.

Each answer is checked against the same payload computed here directly from the engine
(``pi_lab.view.payload`` over a read-only ``SessionManager``), on real pi session files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_lab.session.readonly import session_from_bytes
from pi_lab.view.columns import decode_structure
from pi_lab.view.gauge import recorded_context_window
from pi_lab.view.payload import SessionView, ViewSettings, read_request, structure_payload

FIXTURES = [
    "public-twkrash-branching.jsonl",
    "public-twkrash-uat.jsonl",
    "public-dwsy-real-truncated.jsonl",
    "public-whamp-v1-linear.jsonl",
    "large-session.jsonl",
    "before-compaction.jsonl",
]


def engine_view(path: Path, **view) -> SessionView:
    """The engine's own view, with the gauge window the server picks for a recorded session."""
    sm = session_from_bytes(path.read_bytes(), path.name)
    window = recorded_context_window(sm) or ViewSettings().context_window
    return SessionView.open(sm, ViewSettings(context_window=window), **view)


def same_structure(served: bytes, expected: bytes) -> None:
    served_head, served_cols = decode_structure(served)
    head, cols = decode_structure(expected)
    assert served_cols == cols
    for key in ("row_count", "leaf_id", "leaf_row", "anchor_row", "entry_count", "selected_row", "session_id",
                "filter_mode", "search", "multiple_roots"):
        assert served_head[key] == head[key], key


def line(entry: dict) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


def user(entry_id: str, parent: str | None, text: str, second: int = 0) -> dict:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": f"2026-02-01T00:00:{second:02d}.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1769904000000 + second * 1000}}


@pytest.mark.parametrize("name", FIXTURES)
async def test_rows_entries_and_context_match_the_engine(api, root, copy_fixture, name):
    path = copy_fixture(name, root / "logs")
    key = f"logs/{path.name}"
    view = engine_view(path)
    sm = view.sm

    state = await api.session("state", key)
    assert state["session"]["id"] == sm.session_id
    assert state["session"]["entries"] == sm.get_entry_count()
    assert state["row_count"] == len(view.rows.rows)
    assert state["leaf_id"] == sm.leaf_id
    assert state["gauge"] == view.gauge

    same_structure(await api.session("structure", key), structure_payload(view))

    rows = await api.session("rows", key, args={"start": 0, "end": 100, "version": state["version"]})
    expected = read_request(view, "rows", {"start": 0, "end": 100})
    assert rows["rows"] == expected["rows"]
    assert rows["version"] == state["version"]

    ids = [r["id"] for r in expected["rows"]]
    for entry_id in {ids[0], ids[len(ids) // 2], ids[-1]}:
        assert await api.session("entry", key, args={"id": entry_id}) == read_request(view, "entry", {"id": entry_id})
        assert await api.session("context_at", key, args={"id": entry_id}) == read_request(view, "context_at", {"id": entry_id})
        located = await api.session("locate", key, args={"id": entry_id})
        assert located["row"] == ids.index(entry_id)
    assert await api.session("compact_preview", key) == read_request(view, "compact_preview", {})


async def test_a_stale_version_gets_a_stale_answer(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-branching.jsonl", root)
    state = await api.session("state", path.name)
    rows = await api.session("rows", path.name, args={"start": 0, "end": 10, "version": state["version"] - 1})
    assert rows["stale"] is True


@pytest.mark.parametrize("view", [
    {"filter_mode": "user-only"},
    {"filter_mode": "no-tools"},
    {"filter_mode": "all"},
    {"search": "read file"},
])
async def test_filters_search_and_folds_lay_out_like_the_engine(api, root, copy_fixture, view):
    path = copy_fixture("large-session.jsonl", root)
    expected = engine_view(path, **view)
    state = await api.session("state", path.name, view=view)
    assert state["row_count"] == len(expected.rows.rows)
    same_structure(await api.session("structure", path.name, view=view), structure_payload(expected))
    rows = await api.session("rows", path.name, view=view, args={"start": 0, "end": 40, "version": state["version"]})
    assert rows["rows"] == read_request(expected, "rows", {"start": 0, "end": 40})["rows"]


async def test_folds_hide_a_branch(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-branching.jsonl", root)
    full = engine_view(path)
    foldable = [full.rows.ids[i] for i, row in enumerate(full.rows.rows) if row.foldable]
    assert foldable
    view = {"folded": foldable[:1]}
    state = await api.session("state", path.name, view=view)
    assert state["row_count"] == len(engine_view(path, folded=foldable[:1]).rows.rows) < len(full.rows.rows)


async def test_the_gauge_uses_the_requested_settings(api, root, copy_fixture):
    path = copy_fixture("large-session.jsonl", root)
    small = await api.session("gauge", path.name, settings={"context_window": 20_000, "reserve_tokens": 4_000,
                                                            "keep_recent_tokens": 2_000})
    assert (small["context_window"], small["reserve_tokens"], small["threshold"]) == (20_000, 4_000, 16_000)
    # without a chosen window, the published window of the recorded model (claude-sonnet-4-5)
    default = await api.session("gauge", path.name)
    assert default["context_window"] == 200_000


async def test_appended_entries_arrive_as_deltas(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-uat.jsonl", root)
    key = path.name
    state = await api.session("state", key)
    leaf = state["leaf_id"]

    quiet = await api.session("poll", key, version=state["version"], generation=state["generation"])
    assert quiet == {"kind": "none", "version": state["version"], "generation": state["generation"], "notes_version": 0}

    with open(path, "ab") as handle:
        handle.write(line(user("new-1", leaf, "a question that arrived while the viewer was open")))
    grown = await api.session("poll", key, version=state["version"], generation=state["generation"])
    assert grown["kind"] == "delta"
    assert grown["generation"] == state["generation"]
    assert grown["leaf_id"] == "new-1"
    assert grown["session"]["entries"] == state["session"]["entries"] + 1
    inserted = [op for d in grown["deltas"] for op in d["ops"] if op["op"] in ("insert", "replace")]
    assert [op["text"]["id"] for op in inserted] == ["new-1"]
    assert "arrived while the viewer was open" in inserted[0]["text"]["text"]
    assert grown["deltas"][0]["from"] == state["version"] and grown["deltas"][-1]["to"] == grown["version"]

    # The new entry is readable, and the rows agree with a fresh read of the whole file.
    assert (await api.session("entry", key, args={"id": "new-1"}))["id"] == "new-1"
    fresh = engine_view(path)
    rows = await api.session("rows", key, args={"start": 0, "end": 100, "version": grown["version"]})
    assert rows["rows"] == read_request(fresh, "rows", {"start": 0, "end": 100})["rows"]

    # A second viewer still at the old version gets the same deltas, not the whole structure.
    late = await api.session("poll", key, version=state["version"], generation=state["generation"])
    assert late["kind"] == "delta" and late["deltas"] == grown["deltas"]


async def test_a_line_being_written_waits_for_its_newline(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-uat.jsonl", root)
    state = await api.session("state", path.name)
    whole = line(user("half", state["leaf_id"], "written in two parts"))
    with open(path, "ab") as handle:
        handle.write(whole[:25])
    first = await api.session("poll", path.name, version=state["version"], generation=state["generation"])
    assert first["kind"] == "none"
    with open(path, "ab") as handle:
        handle.write(whole[25:])
    second = await api.session("poll", path.name, version=state["version"], generation=state["generation"])
    assert second["kind"] == "delta" and second["leaf_id"] == "half"
    assert second["file"]["skipped_lines"] == 0


async def test_a_finished_last_line_without_newline_is_read_once(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-uat.jsonl", root)
    data = path.read_bytes()
    leaf = engine_view(path).sm.leaf_id
    path.write_bytes(data + line(user("tail", leaf, "no newline yet")).rstrip(b"\n"))
    state = await api.session("state", path.name)
    assert state["leaf_id"] == "tail"
    with open(path, "ab") as handle:
        handle.write(b"\n" + line(user("after", "tail", "next one", 1)))
    grown = await api.session("poll", path.name, version=state["version"], generation=state["generation"])
    assert grown["leaf_id"] == "after"
    assert grown["session"]["entries"] == state["session"]["entries"] + 1


async def test_a_new_branch_point_lays_the_rows_out_again(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-uat.jsonl", root)
    sm = engine_view(path).sm
    first_user = next(e for e in sm.entries if e.get("type") == "message")
    state = await api.session("state", path.name)
    with open(path, "ab") as handle:
        handle.write(line(user("side", first_user["parentId"], "another way", 5)))
    polled = await api.session("poll", path.name, version=state["version"], generation=state["generation"])
    assert polled["kind"] in ("delta", "layout")
    same_structure(await api.session("structure", path.name), structure_payload(engine_view(path)))


async def test_a_replaced_file_is_read_again(api, root, copy_fixture, fixtures_dir):
    path = copy_fixture("large-session.jsonl", root, dest="2026-01-01T00-00-00-000Z_x.jsonl")
    state = await api.session("state", path.name)
    path.write_bytes((fixtures_dir / "public-twkrash-branching.jsonl").read_bytes())  # shorter: shrunk
    polled = await api.session("poll", path.name, version=state["version"], generation=state["generation"])
    assert polled["kind"] == "layout"
    assert polled["generation"] != state["generation"]
    assert polled["session"]["id"] == "fixture-session"
    same_structure(await api.session("structure", path.name), structure_payload(engine_view(path)))


async def test_a_file_that_is_not_a_session_gets_a_clear_message(api, root):
    cases = {
        "data.jsonl": b'{"name":"alice","age":3}\n{"name":"bob"}\n',
        "empty.jsonl": b"",
        "blank.jsonl": b"\n\n   \n",
        "garbage.jsonl": b"\x00\xff\xfe not json at all\n",
        "array.jsonl": b"[1,2,3]\n",
    }
    for name, data in cases.items():
        (root / name).write_bytes(data)
        code, body = await api.post("session", "state", path=name)
        assert code == 422, (name, body)
        assert body["reason"] == "not-a-session"
        assert f"{name} is not a pi session" in body["message"]
    code, body = await api.post("session", "state", path="data.jsonl")
    assert "its first JSON line is not a pi session header" in body["message"]
    code, body = await api.post("session", "state", path="missing.jsonl")
    assert code == 404 and "no such file" in body["message"]
    (root / "folder.jsonl").mkdir()
    code, body = await api.post("session", "state", path="folder.jsonl")
    assert code == 422 and "folder" in body["message"]


async def test_broken_lines_are_skipped_and_counted(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-branching.jsonl", root)
    lines = path.read_bytes().splitlines(keepends=True)
    broken = lines[:3] + [b'{"type":"message","id":"cut-off\n', b"\xff\xfe\n", b"not json\n"] + lines[3:]
    path.write_bytes(b"".join(broken))
    state = await api.session("state", path.name)
    assert state["file"]["skipped_lines"] == 3
    assert state["file"]["first_skipped_lines"] == [4, 5, 6]
    view = engine_view(path)
    assert state["row_count"] == len(view.rows.rows)
    same_structure(await api.session("structure", path.name), structure_payload(view))


async def test_the_glance_endpoint_gives_the_state(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-branching.jsonl", root)
    code, state = await api.get("session", path=path.name)
    assert code == 200 and state["session"]["id"] == "fixture-session"
