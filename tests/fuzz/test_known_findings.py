"""Findings of the field fuzzer in code that other owners keep, each reduced to a few lines.

Every test here states the contract ("a result or a pi_lab error") on one small hostile session
and is marked ``xfail(strict=True)`` with the innermost pi_lab frame where it fails today: the day
the owner fixes it the test passes, strict xfail turns that into a failure, and the mark is
removed (the test then guards the fix). ``KNOWN`` in ``fieldfuzz`` lists the same findings so the
bounded fuzz run in CI can tell them from new ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pi_lab.errors import PiLabError
from pi_lab.session.readonly import session_from_bytes

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
DEEP = "\u0000DEEP\u0000"  # replaced by a list nested 3,000 levels deep in the file text


def user(entry_id: Any, parent: Any, text: str = "hi") -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1}}


def assistant(entry_id: Any, parent: Any) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p", "model": "m",
                        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
                        "stopReason": "stop", "timestamp": 2}}


def session_bytes(*entries: dict[str, Any]) -> bytes:
    # json.dumps writes a lone surrogate as a \ud800 escape, as JSON.stringify does.
    text = "".join(json.dumps(e) + "\n" for e in (HEADER, *entries))
    return text.replace(json.dumps(DEEP), "[" * 3000 + '"x"' + "]" * 3000).encode()


def write(tmp_path: Path, data: bytes, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def result_or_pi_lab_error(fn: Any) -> None:
    try:
        fn()
    except PiLabError:
        pass


DEEP_ID = (user("u1", None), assistant("a1", "u1"), user(DEEP, "a1"), user("u3", "a1"))


@pytest.mark.xfail(strict=True, raises=RecursionError, reason="view/errors.py:27 UnknownEntry.__init__: RecursionError (repr of an id "
                                       "nested 3,000 deep in the message)")
@pytest.mark.parametrize("view", ["context_diff", "compare_branches"])
def test_a_node_id_nested_deep_is_named_not_recursed(view):
    import pi_lab.view as views

    sm = session_from_bytes(session_bytes(*DEEP_ID), "s.jsonl")
    deep_id = sm.file_entries[3]["id"]
    result_or_pi_lab_error(lambda: getattr(views, view)(sm, "u3", deep_id))


@pytest.mark.xfail(strict=True, raises=RecursionError, reason="view/columns.py:166 pack_blob: RecursionError on an id nested 3,000 deep "
                                       "(reached from export_html)")
def test_export_of_an_id_nested_deep(tmp_path):
    from pi_lab.export import export_html

    result_or_pi_lab_error(lambda: export_html(write(tmp_path, session_bytes(*DEEP_ID)), tmp_path / "o.html"))


@pytest.mark.xfail(strict=True, raises=UnicodeEncodeError, reason="view/columns.py:167 pack_blob: UnicodeEncodeError on a lone surrogate "
                                       "(an id, a text, a file name that is not UTF-8), reached from export_html")
@pytest.mark.parametrize("case", ["id", "text", "file name"])
def test_export_of_a_lone_surrogate(tmp_path, case):
    from pi_lab.export import export_html

    if case == "id":
        path = write(tmp_path, session_bytes(user("u1", None), assistant("\ud800", "u1")))
    elif case == "text":
        path = write(tmp_path, session_bytes(user("u1", None, "a\ud800")))
    else:
        path = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xff.jsonl"))
        path.write_bytes(session_bytes(user("u1", None)))
    result_or_pi_lab_error(lambda: export_html(path, tmp_path / "o.html"))


@pytest.mark.xfail(strict=True, raises=TypeError, reason="view/context.py:135 context_at: TypeError unhashable 'list' (an id that is "
                                       "a list), reached from export_html")
def test_export_of_an_id_that_is_a_list(tmp_path):
    from pi_lab.export import export_html

    path = write(tmp_path, session_bytes(user("u1", None), assistant(["x"], "u1")))
    result_or_pi_lab_error(lambda: export_html(path, tmp_path / "o.html"))


@pytest.mark.xfail(strict=True, raises=TypeError, reason="export/context.py:147 context_records: TypeError unhashable 'dict' (a type "
                                       "that is an object)")
def test_export_of_a_type_that_is_an_object(tmp_path):
    from pi_lab.export import export_html

    odd = user("u2", "u1")
    odd["type"] = {"a": 1}
    path = write(tmp_path, session_bytes(user("u1", None), odd))
    result_or_pi_lab_error(lambda: export_html(path, tmp_path / "o.html"))


@pytest.mark.xfail(strict=True, raises=RecursionError, reason="export/data.py:240 _dumps: RecursionError (a stopReason nested 3,000 deep; "
                                       "the standard library's json recurses)")
def test_export_of_a_field_nested_deep(tmp_path):
    from pi_lab.export import export_html

    odd = assistant("a1", "u1")
    odd["message"]["stopReason"] = DEEP
    path = write(tmp_path, session_bytes(user("u1", None), odd))
    result_or_pi_lab_error(lambda: export_html(path, tmp_path / "o.html"))


@pytest.mark.xfail(strict=True, raises=(TypeError, UnicodeEncodeError), reason="corpus/schema.py:96: ArrowTypeError (an id that is a list) / "
                                       "UnicodeEncodeError (an id with a lone surrogate, a file name that is not UTF-8)")
@pytest.mark.parametrize("case", ["list id", "surrogate id", "file name"])
def test_corpus_scan_of_odd_ids_and_names(tmp_path, case):
    from pi_lab.corpus import Corpus

    if case == "list id":
        path = write(tmp_path, session_bytes(user("u1", None), assistant(["x"], "u1")))
    elif case == "surrogate id":
        path = write(tmp_path, session_bytes(user("u1", None), assistant("\ud800", "u1")))
    else:
        path = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xff.jsonl"))
        path.write_bytes(session_bytes(user("u1", None)))
    corpus = None

    def scan() -> None:
        nonlocal corpus
        corpus = Corpus.scan([path], workers=1, cache=False)

    result_or_pi_lab_error(scan)
    assert corpus is None or not any("internal error" in reason for _, reason in corpus.errors)


@pytest.mark.xfail(strict=True, raises=TypeError, reason="session/flatten.py _visible_rows: TypeError unhashable 'list' (a root whose "
                                       "id is a list nested deep, with a child folded)")
def test_folding_under_a_root_whose_id_is_a_list():
    from pi_lab.view.rows import RowState

    sm = session_from_bytes(session_bytes(user(DEEP, None), assistant("a1", DEEP), user("u3", "a1")), "s.jsonl")
    result_or_pi_lab_error(lambda: RowState(sm, folded=["a1"]))
