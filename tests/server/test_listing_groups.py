"""The Pi Sessions panel's groups and dates (issue 22): a session is listed under the cwd its
own header names, in the listing and in search results alike, no two groups share a title, and
no session is dated 1970-01-01."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pi_lab.server.listing import SessionListing

NO_FOLDER_TITLE = "(sessions folder)"  # the panel's heading for the sessions folder itself


def _iso(ms: float) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def write(folder: Path, sid: str, cwd: Any, texts: list[str], *, header_time: Any = "2026-03-01T00:00:00.000Z",
          times: list[tuple[Any, Any]] | None = None) -> Path:
    """A session; ``times`` gives each message's (numeric timestamp, entry ISO timestamp)."""
    folder.mkdir(parents=True, exist_ok=True)
    header: dict[str, Any] = {"type": "session", "version": 3, "id": sid, "cwd": cwd}
    if header_time is not None:
        header["timestamp"] = header_time
    lines = [header]
    parent = None
    for i, text in enumerate(texts):
        numeric, iso = times[i] if times else (1772323200000 + i * 1000, f"2026-03-01T00:00:0{i}.000Z")
        message: dict[str, Any] = {"role": "user" if i % 2 == 0 else "assistant", "content": text}
        if numeric is not None:
            message["timestamp"] = numeric
        entry: dict[str, Any] = {"type": "message", "id": f"{sid}-{i}", "parentId": parent, "message": message}
        if iso is not None:
            entry["timestamp"] = iso
        lines.append(entry)
        parent = entry["id"]
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def shown_title(group: dict[str, Any]) -> str:
    # What the panel writes as the group's heading (sessionsPanel.ts renderGroup).
    return group["cwd"] or group["dir"] or NO_FOLDER_TITLE


def titles(listing: dict[str, Any]) -> dict[str, list[str]]:
    shown = [shown_title(g) for g in listing["groups"]]
    assert len(set(shown)) == len(shown), f"two groups with one title: {shown}"
    return {shown_title(g): [s["id"] for s in g["sessions"]] for g in listing["groups"]}


def test_sessions_are_grouped_by_their_own_cwd_and_no_title_appears_twice(tmp_path):
    sessions = tmp_path / "sessions"
    # pi's folder for /fixture, holding its own session and two recorded elsewhere (copied in).
    write(sessions / "--fixture--", "own", "/fixture", ["fixture work"])
    write(sessions / "--fixture--", "mac1", "/Users/ann/proj", ["mac work"])
    write(sessions / "--fixture--", "mac2", "/Users/ann/proj", ["more mac work"])
    # Another folder whose session names /fixture too (a second copy of the fixtures).
    write(sessions / "--copy--", "copy", "/fixture", ["copied fixture"])
    write(sessions / "--nocwd--", "nocwd", 42, ["no cwd here"])
    write(sessions, "flat", "", ["in the folder itself"])
    listing = SessionListing().list(str(sessions))
    groups = titles(listing)
    assert {k: sorted(v) for k, v in groups.items()} == {
        "/fixture": ["copy", "own"], "/Users/ann/proj": ["mac1", "mac2"],
        "--nocwd--": ["nocwd"], NO_FOLDER_TITLE: ["flat"]}
    assert [shown_title(g) for g in listing["groups"]] == [g["title"] for g in listing["groups"]]
    by_title = {g["title"]: g for g in listing["groups"]}
    assert by_title["/fixture"]["dir"] == ""  # two folders
    assert by_title["/Users/ann/proj"]["dir"] == "--fixture--" and by_title["/Users/ann/proj"]["cwd"] == "/Users/ann/proj"
    assert by_title["--nocwd--"]["cwd"] == ""


def test_search_results_put_a_session_in_the_group_the_listing_does(tmp_path):
    sessions = tmp_path / "sessions"
    write(sessions / "--fixture--", "own", "/fixture", ["fixture work on the parser"])
    write(sessions / "--fixture--", "mac", "/Users/ann/proj", ["mac work on the parser"])
    write(sessions / "--fixture--", "mac-old", "/Users/ann/proj", ["unrelated"],
          times=[(1700000000000, "2023-11-14T22:13:20.000Z")])
    listing = SessionListing()
    everything = titles(listing.list(str(sessions)))
    for query in ("parser", "mac", "fixture", "unrelated"):
        found = titles(listing.list(str(sessions), query))
        assert found, query
        for title, ids in found.items():
            assert set(ids) <= set(everything[title]), (query, title)


def test_no_session_is_dated_1970(tmp_path):
    sessions = tmp_path / "sessions" / "--p--"
    # Numeric message timestamps that count 1, 2, 3 (a fixture's): the entries' own times are taken.
    counters = write(sessions, "counters", "/p", ["a", "b", "c"],
                     times=[(1, "2026-01-01T00:00:01.000Z"), (2, "2026-01-01T00:00:02.000Z"), (3, "2026-01-01T00:00:03.000Z")])
    # Seconds taken for milliseconds, and no entry times: the header's time.
    seconds = write(sessions, "seconds", "/p", ["a", "b"], header_time="2026-02-02T00:00:00.000Z",
                    times=[(1767225600, None), (1767225601, None)])
    # No usable time anywhere (an epoch header, 0 and garbage): the file's mtime, as pi falls back to.
    nothing = write(sessions, "nothing", "/p", ["a", "b"], header_time="1970-01-01T00:00:00.000Z",
                    times=[(0, "not a time"), (None, None)])
    mtime = datetime(2026, 4, 4, 12, 0, tzinfo=timezone.utc).timestamp()
    os.utime(nothing, (mtime, mtime))
    # A real time stays as pi takes it: the message's numeric timestamp, not the entry's.
    real = write(sessions, "real", "/p", ["a", "b"], times=[(1767225600000, "2026-01-01T00:00:05.000Z"),
                                                            (1767225601000, "2026-01-01T00:00:09.000Z")])
    rows = {s["id"]: s for g in SessionListing().list(str(sessions.parent))["groups"] for s in g["sessions"]}
    assert rows["counters"]["modified"] == "2026-01-01T00:00:03Z" and rows["counters"]["created"] == "2026-03-01T00:00:00Z"
    assert rows["seconds"]["modified"] == "2026-02-02T00:00:00Z"
    assert rows["nothing"]["modified"] == _iso(mtime * 1000) == rows["nothing"]["created"]
    assert rows["real"]["modified"] == _iso(1767225601000)
    assert not [r for r in rows.values() if r["modified"].startswith("1970") or r["created"].startswith("1970")]
    assert all(path.exists() for path in (counters, seconds, real))
