"""pi's session summary (buildSessionInfo) as one incremental builder: SessionManager.list
(through session_info) and the Lab's listing read a file by the same rules."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from pi_lab.session import SessionManager
from pi_lab.session.paths import session_info
from pi_lab.session.summary import SummaryBuilder

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/p"}


def _message(entry_id, parent, role, text, stamp, entry_time="2026-01-02T03:05:00.000Z"):
    message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": stamp}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": entry_time, "message": message}


def _write(path, entries):
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")


def test_a_message_time_no_date_can_hold_does_not_drop_the_session(tmp_path):
    # pi lists this session (its `modified` is an Invalid Date); a datetime cannot hold 10**20 ms,
    # so the entry's own time stands for the activity and the session is listed.
    _write(tmp_path / "a.jsonl", [HEADER, _message("u1", None, "user", "hi", 10**20)])
    infos = SessionManager.list("/p", tmp_path)
    assert [info.id for info in infos] == ["s1"]
    assert infos[0].modified == datetime(2026, 1, 2, 3, 5, tzinfo=timezone.utc)
    assert infos[0].first_message == "hi"


def test_pi_rule_kept_for_times_a_date_can_show(tmp_path):
    # A time in 1970 is pi's time of activity (seconds taken for milliseconds by some writer).
    _write(tmp_path / "a.jsonl", [HEADER, _message("u1", None, "user", "hi", 7)])
    info = session_info(str(tmp_path / "a.jsonl"))
    assert info is not None and info.modified == datetime.fromtimestamp(0.007, tz=timezone.utc)


def test_fed_in_pieces_equals_fed_at_once():
    entries = [HEADER, _message("u1", None, "user", "first", 1_767_323_100_000),
               {"type": "session_info", "id": "n1", "parentId": "u1", "name": "  named  "},
               _message("a1", "n1", "assistant", "answer", 1_767_323_200_000)]
    whole, pieces = SummaryBuilder(), SummaryBuilder()
    texts = [whole.add(e) for e in entries]
    assert texts == [None, "first", None, "answer"]
    for entry in entries[:2]:
        pieces.add(entry)
    for entry in entries[2:]:
        pieces.add(entry)
    assert whole.info("f", 0.0) == pieces.info("f", 0.0)
    info = whole.info("f", 0.0)
    assert info is not None
    assert (info.name, info.message_count, info.all_messages_text) == ("named", 2, "first answer")


def test_listing_rule_options():
    builder = SummaryBuilder(first_ms=365 * 86_400_000, title_chars=3, keep_texts=False)
    builder.add(HEADER)
    builder.add(_message("u1", None, "user", "hello", 7))
    info = builder.info("f", 0.0, all_messages_text="")
    assert info is not None
    assert info.first_message == "hel" and builder.texts == []
    assert info.modified == datetime(2026, 1, 2, 3, 5, tzinfo=timezone.utc)


def test_not_a_session():
    builder = SummaryBuilder()
    builder.add({"type": "message"})
    builder.add(HEADER)
    assert builder.not_session and builder.info("f", 0.0) is None
