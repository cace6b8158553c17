"""pi_lab.teach.session_at / frozen: the session as it was after its k-th line equals the file cut
after line k and opened (entries, leaf, branch, tree, labels), on pi's fixtures and the shipped
tiny-auth session; the file is never written."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from pi_lab.data import recorded_session
from pi_lab.session import SessionManager
from pi_lab.teach import TeachError, frozen, session_at
from tests.shared_fixtures import FIXTURES_DIR

NAMES = ["before-compaction.jsonl", "public-twkrash-branching.jsonl", "public-twkrash-uat.jsonl",
         "public-dwsy-real-truncated.jsonl"]


def _sessions(tmp_path):
    paths = [shutil.copy(recorded_session().path, tmp_path / "tiny-auth.jsonl")]
    for name in NAMES:
        if (FIXTURES_DIR / name).exists():
            paths.append(shutil.copy(FIXTURES_DIR / name, tmp_path / name))
    return paths


def _state(sm):
    def tree(nodes):
        out, stack = [], [(n, 0) for n in reversed(nodes)]
        while stack:
            node, depth = stack.pop()
            out.append((depth, node.entry.get("id"), node.label))
            stack.extend((c, depth + 1) for c in reversed(node.children))
        return out

    return json.loads(json.dumps({"entries": sm.get_entries(), "leaf": sm.leaf_id, "branch": sm.get_branch(),
                                  "labels": sm.labels, "header": sm.header, "tree": tree(sm.get_tree())}))


def _same_ids(at, cut, path):
    """``at``'s state; for a version-1 file (no ids: pi makes them when it reads it), with the
    ids the cut file got, line for line: session_at keeps the whole session's ids, so a node
    id names the same entry in the full widget and the frozen one."""
    state = _state(at)
    if b'"version"' in Path(path).read_bytes().split(b"\n", 1)[0]:
        return state  # ids from the file: compared as they are
    mapping = {a.get("id"): c.get("id") for a, c in zip(at.file_entries[1:], cut.file_entries[1:], strict=True)}
    text = json.dumps(state, default=repr)
    for old, new in mapping.items():
        if isinstance(old, str) and old != new:
            text = text.replace(json.dumps(old), json.dumps(new))
    return json.loads(text)


def _steps(count: int) -> list[int]:
    # every line of a small file; a spread of lines (first, last, around the middle) of a big one
    if count <= 60:
        return list(range(1, count + 1))
    return sorted({1, 2, 3, count // 3, count // 2, count // 2 + 1, 2 * count // 3, count - 1, count})


def test_session_at_equals_the_file_cut_after_line_k(tmp_path):
    paths = _sessions(tmp_path)
    assert len(paths) >= 2 or not FIXTURES_DIR.exists()
    for path in paths:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        lines = Path(path).read_bytes().splitlines(keepends=True)
        whole = SessionManager.open(str(path), read_only=True)
        for k in _steps(len(lines)):
            cut = tmp_path / f"cut-{k}.jsonl"
            cut.write_bytes(b"".join(lines[:k]))
            expected = _state(SessionManager.open(str(cut), read_only=True))
            cut_sm = SessionManager.open(str(cut), read_only=True)
            for source in (str(path), whole):
                at = session_at(source, k)
                assert _same_ids(at, cut_sm, path) == expected, (path, k)
                assert at.read_only
        assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == digest


def test_session_at_refuses_steps_out_of_range(tmp_path):
    path = shutil.copy(recorded_session().path, tmp_path / "t.jsonl")
    count = len(Path(path).read_bytes().splitlines())
    for bad in (0, -1, count + 1, "3", 2.0):
        with pytest.raises(TeachError):
            session_at(path, bad)
    with pytest.raises(TeachError, match="needs a pi session"):
        session_at(object(), 2)


def test_the_past_state_is_its_own_copy(tmp_path):
    path = shutil.copy(recorded_session().path, tmp_path / "t.jsonl")
    whole = SessionManager.open(str(path), read_only=True)
    at = session_at(whole, 5)
    at.get_entries()[-1]["mutated"] = True
    assert "mutated" not in whole.get_entries()[4 - 1]


def test_frozen_widget_shows_the_state_and_keeps_the_widgets_settings(tmp_path):
    import pi_lab

    path = shutil.copy(recorded_session().path, tmp_path / "t.jsonl")
    widget = pi_lab.open(str(path), context_window=5000, reserve_tokens=1000, keep_recent_tokens=300)
    past = frozen(widget, step=10)
    try:
        cut = session_at(str(path), 10)
        assert past.leaf_id == cut.leaf_id
        assert past.session_manager.get_entries() == cut.get_entries()
        assert (past.context_window, past.reserve_tokens, past.keep_recent_tokens) == (5000, 1000, 300)
        assert past.gauge and past.row_count > 0
        # the frozen widget is read-only: the whole session's widget is not moved by it
        assert widget.leaf_id == widget.session_manager.leaf_id
        assert frozen(str(path), 3).leaf_id == session_at(str(path), 3).leaf_id
    finally:
        past.close()
        widget.close()
