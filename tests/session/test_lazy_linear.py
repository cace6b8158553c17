"""A lazy open is linear in the file, whatever its lines hold (issue 21).

The 221 MB bench session with 500 lone-surrogate escapes took 58.4 s to open lazily (1.74 s
clean): every line parsed apart (lone surrogates, invalid UTF-8) was missing from the reader's
path, so each of its children searched the whole path and walked its branch up to the root.
Counted in Python lines run by the reader (no clock), on files of n and 2n lines.
"""

from __future__ import annotations

import json

from pi_lab.session import SessionManager
from pi_lab.session import bodies as bodies_module
from session.conformance import tree_rows
from session.test_lazy_bodies import HEADER, _message, _write
from session.work_counts import lines_run


def _chain(n: int, spoil: bytes) -> bytes:
    """One branch of ``n`` messages, every fourth holding ``spoil`` (parsed apart by the
    loader), with a side branch every 50 lines (so that there are bodies to leave)."""
    lines = [json.dumps(HEADER).encode()]
    parent = None
    for i in range(n):
        raw = json.dumps(_message(f"m{i}", parent, i, "user", "SPOIL" if i % 4 == 1 else f"text {i} " * 60))
        lines.append(raw.encode().replace(b"SPOIL", spoil))
        if i % 50 == 10:
            lines.append(json.dumps(_message(f"side{i}", f"m{i - 1}", i, "user", "side " * 200)).encode())
        parent = f"m{i}"
    return b"\n".join(lines) + b"\n"


def _two_branches(n: int) -> bytes:
    """Two branches written in turns, each line continuing the other branch's last one (two
    writers sharing a file): every line leaves the path the reader was on."""
    lines = [json.dumps(HEADER).encode(), json.dumps(_message("r", None, 0, "user", "root")).encode()]
    last = {"a": "r", "b": "r"}
    for i in range(n):
        side = "ab"[i % 2]
        lines.append(json.dumps(_message(f"{side}{i}", last[side], i, "user", f"{side} {i} " * 60)).encode())
        last[side] = f"{side}{i}"
    return b"\n".join(lines) + b"\n"


def _work(tmp_path, name: str, data: bytes) -> tuple[int, SessionManager]:
    directory = tmp_path / name
    directory.mkdir()
    path = _write(directory, data)
    return lines_run(bodies_module, lambda: SessionManager.open(path, read_only=True, lazy=True))


def _check_linear(tmp_path, make, n: int) -> None:
    small, _ = _work(tmp_path, "small", make(n))
    large, sm = _work(tmp_path, "large", make(2 * n))
    assert sm.lazy_bodies
    assert large < 2.5 * small, (small, large)  # a quadratic reader gave 4x and more
    eager = SessionManager.open(sm.session_file, read_only=True, lazy=False)
    assert _summary(sm) == _summary(eager)


def _summary(sm: SessionManager) -> tuple:
    """The answers that cover every entry once (the conformance set asks at every entry:
    quadratic on these long branches)."""
    return (sm.get_entries(), sm.leaf_id, sm.get_branch(), tree_rows(sm.get_tree()),
            sm.build_session_context().messages, sm.skipped_lines)


def test_lines_with_lone_surrogates_keep_the_lazy_open_linear(tmp_path):
    _check_linear(tmp_path, lambda n: _chain(n, b"cut \\\\ud83d".replace(b"\\\\", b"\\")), 800)


def test_lines_with_invalid_utf8_keep_the_lazy_open_linear(tmp_path):
    _check_linear(tmp_path, lambda n: _chain(n, b"bad \xff byte"), 800)


def test_lines_that_keep_changing_branch_keep_the_lazy_open_linear(tmp_path):
    _check_linear(tmp_path, _two_branches, 1600)
