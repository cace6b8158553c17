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


def _scan_reasons(path: Path) -> list[str]:
    """The corpus scan of one file: the reasons that say "internal error" (a bug, not bad input)."""
    from pi_lab.corpus import Corpus

    corpus = Corpus.scan([path], workers=1, cache=False)
    return [reason for _, reason in corpus.errors if "internal error" in reason]


def _corpus_bug(reason: str) -> Any:
    return pytest.mark.xfail(strict=True, raises=(TypeError, UnicodeEncodeError, OverflowError, AssertionError),
                             reason=reason)


@pytest.mark.parametrize("case", [
    "list id",  # fixed by the corpus owner (it was an ArrowTypeError in corpus/schema.py)
    pytest.param("surrogate id", marks=_corpus_bug("corpus/schema.py:96: UnicodeEncodeError (a lone surrogate in an id)")),
    pytest.param("file name", marks=_corpus_bug("corpus/schema.py:96: UnicodeEncodeError (a file name not UTF-8)")),
    pytest.param("version 2**63", marks=_corpus_bug("corpus/schema.py:96: OverflowError (header version 2**63)")),
    pytest.param("label target list", marks=_corpus_bug("corpus/extract.py:202 run: TypeError (a label's targetId "
                                                        "that is a list)")),
    pytest.param("header type deep", marks=_corpus_bug("corpus/extract.py:122 extract_bytes: RecursionError (repr of "
                                                       "the header's type nested 3,000 deep)")),
])
def test_corpus_scan_of_odd_fields_and_names(tmp_path, case):
    if case == "list id":
        path = write(tmp_path, session_bytes(user("u1", None), assistant(["x"], "u1")))
    elif case == "surrogate id":
        path = write(tmp_path, session_bytes(user("u1", None), assistant("\ud800", "u1")))
    elif case == "file name":
        path = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xff.jsonl"))
        path.write_bytes(session_bytes(user("u1", None)))
    elif case == "version 2**63":
        path = write(tmp_path, session_bytes(user("u1", None)).replace(b'"version": 3', b'"version": %d' % 2**63))
    elif case == "label target list":
        label = {"type": "label", "id": "l1", "parentId": "u1", "timestamp": "2026-01-01T00:00:03.000Z",
                 "targetId": ["x"], "label": "a"}
        path = write(tmp_path, session_bytes(user("u1", None), label))
    else:
        path = write(tmp_path, ('{"type":' + "[" * 3000 + '"x"' + "]" * 3000 + ',"id":"s1","version":3}\n').encode())
    assert _scan_reasons(path) == []


@pytest.mark.xfail(strict=True, raises=RecursionError, reason="session/storage.py:175 _header_problem: RecursionError "
                                                              "(repr of a header type nested 3,000 deep)")
def test_opening_a_file_whose_header_type_is_nested_deep(tmp_path):
    from pi_lab.session import SessionManager

    path = write(tmp_path, ('{"type":' + "[" * 3000 + '"x"' + "]" * 3000 + ',"id":"s1","version":3}\n').encode())
    result_or_pi_lab_error(lambda: SessionManager.open(path, read_only=True))


@pytest.mark.xfail(strict=True, raises=RecursionError, reason="export/context.py:69 (genexpr) or export/data.py "
                                                              "_dumps: RecursionError (a role nested 3,000 deep)")
def test_export_of_a_role_nested_deep(tmp_path):
    from pi_lab.export import export_html

    odd = user("u2", "u1")
    odd["message"]["role"] = DEEP
    path = write(tmp_path, session_bytes(user("u1", None), odd))
    result_or_pi_lab_error(lambda: export_html(path, tmp_path / "o.html"))


@pytest.mark.xfail(strict=True, raises=TypeError, reason="session/flatten.py _visible_rows: TypeError unhashable 'list' (a root whose "
                                       "id is a list nested deep, with a child folded)")
def test_folding_under_a_root_whose_id_is_a_list():
    from pi_lab.view.rows import RowState

    sm = session_from_bytes(session_bytes(user(DEEP, None), assistant("a1", DEEP), user("u3", "a1")), "s.jsonl")
    result_or_pi_lab_error(lambda: RowState(sm, folded=["a1"]))


@pytest.mark.xfail(strict=True, raises=ValueError, reason="session/_json.py:55 _normalise: ValueError 'lone surrogate "
                                                          "in an object key cannot be written' (pi's JSON.stringify "
                                                          "writes the key with a \\ud800 escape): the file cannot be forked")
def test_forking_an_entry_with_a_lone_surrogate_key(tmp_path):
    from pi_lab.session import SessionManager

    odd = user("u1", None)
    odd["message"]["details"] = {"\ud800": 1}
    sm = SessionManager.open(write(tmp_path, session_bytes(odd)), session_dir=tmp_path / "forks")
    result_or_pi_lab_error(lambda: sm.create_branched_session("u1"))


@pytest.mark.xfail(strict=True, raises=ValueError, reason="session/_json.py:55 _normalise: the same refusal reached "
                                                          "from pi's token estimate (JSON.stringify of a tool call's "
                                                          "arguments): the viewer, the server and the corpus fail")
def test_estimating_a_tool_call_whose_arguments_have_a_lone_surrogate_key():
    from pi_lab.view.payload import SessionView

    call = assistant("a1", "u1")
    call["message"]["content"] = [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"\ud800": 1}}]
    sm = session_from_bytes(session_bytes(user("u1", None), call), "s.jsonl")
    result_or_pi_lab_error(lambda: SessionView.open(sm))
