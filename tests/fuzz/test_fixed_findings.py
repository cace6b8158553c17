"""Findings of the field fuzzer, each reduced to a few lines (issue 15).

Every test here states the contract ("a result or a pi_lab error") on one small hostile session
that once raised a built-in exception in pi_lab (the test names say which). They were strict
xfails while their fixes were under way; all are fixed now, and the tests guard the fixes.
``KNOWN`` in ``fieldfuzz`` lists findings still open (none today), so the bounded fuzz run in CI
can tell them from new ones.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pi_lab.errors import PiLabError
from pi_lab.session.readonly import session_from_bytes

from fuzz.hostile import DEEP, assistant, session_bytes, user, write


def result_or_pi_lab_error(fn: Any) -> None:
    try:
        fn()
    except PiLabError:
        pass


DEEP_ID = (user("u1", None), assistant("a1", "u1"), user(DEEP, "a1"), user("u3", "a1"))


@pytest.mark.parametrize("view", ["context_diff", "compare_branches"])
def test_a_node_id_nested_deep_is_named_not_recursed(view):
    import pi_lab.view as views

    sm = session_from_bytes(session_bytes(*DEEP_ID), "s.jsonl")
    deep_id = sm.file_entries[3]["id"]
    result_or_pi_lab_error(lambda: getattr(views, view)(sm, "u3", deep_id))


def test_export_of_an_id_nested_deep(tmp_path):
    from pi_lab.export import export_html

    result_or_pi_lab_error(lambda: export_html(write(tmp_path, session_bytes(*DEEP_ID)), tmp_path / "o.html"))


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


def test_export_of_an_id_that_is_a_list(tmp_path):
    from pi_lab.export import export_html

    path = write(tmp_path, session_bytes(user("u1", None), assistant(["x"], "u1")))
    result_or_pi_lab_error(lambda: export_html(path, tmp_path / "o.html"))


def test_export_of_a_type_that_is_an_object(tmp_path):
    from pi_lab.export import export_html

    odd = user("u2", "u1")
    odd["type"] = {"a": 1}
    path = write(tmp_path, session_bytes(user("u1", None), odd))
    result_or_pi_lab_error(lambda: export_html(path, tmp_path / "o.html"))


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


@pytest.mark.parametrize("case", [
    "list id",  # fixed by the corpus owner (it was an ArrowTypeError in corpus/schema.py)
    "surrogate id",
    "file name",
    "version 2**63",
    "label target list",
    "header type deep",
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


def test_opening_a_file_whose_header_type_is_nested_deep(tmp_path):
    from pi_lab.session import SessionManager

    path = write(tmp_path, ('{"type":' + "[" * 3000 + '"x"' + "]" * 3000 + ',"id":"s1","version":3}\n').encode())
    result_or_pi_lab_error(lambda: SessionManager.open(path, read_only=True))


def test_export_of_a_role_nested_deep(tmp_path):
    from pi_lab.export import export_html

    odd = user("u2", "u1")
    odd["message"]["role"] = DEEP
    path = write(tmp_path, session_bytes(user("u1", None), odd))
    result_or_pi_lab_error(lambda: export_html(path, tmp_path / "o.html"))


def test_folding_under_a_root_whose_id_is_a_list():
    from pi_lab.view.rows import RowState

    sm = session_from_bytes(session_bytes(user(DEEP, None), assistant("a1", DEEP), user("u3", "a1")), "s.jsonl")
    result_or_pi_lab_error(lambda: RowState(sm, folded=["a1"]))


def test_forking_an_entry_with_a_lone_surrogate_key(tmp_path):
    from pi_lab.session import SessionManager

    odd = user("u1", None)
    odd["message"]["details"] = {"\ud800": 1}
    sm = SessionManager.open(write(tmp_path, session_bytes(odd)), session_dir=tmp_path / "forks")
    result_or_pi_lab_error(lambda: sm.create_branched_session("u1"))


def test_estimating_a_tool_call_whose_arguments_have_a_lone_surrogate_key():
    from pi_lab.view.payload import SessionView

    call = assistant("a1", "u1")
    call["message"]["content"] = [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"\ud800": 1}}]
    sm = session_from_bytes(session_bytes(user("u1", None), call), "s.jsonl")
    result_or_pi_lab_error(lambda: SessionView.open(sm))
