"""Lazy entry bodies (issue 11): message lines off the current branch stay in the file until read.

Laziness must be invisible. Every query of the conformance contract answers the same with
``lazy=True`` as with ``lazy=False`` on random sessions (branches, returns to old branches,
labels, compactions, context edits, odd lines), also when the body budget lets every parsed
body go at once; after appends, after a refresh that read another process's lines, with a
line malformed only in its body. A file rewritten under a lazy session gives a clear error,
never another entry's body.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
from helpers import Clock, Ids
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_lab.session import SessionManager
from pi_lab.session import bodies as bodies_module
from pi_lab.session.bodies import LazyEntry, SessionFileChanged
from pi_lab.session.tree import get_branch
from session.conformance import answers, tree_rows

HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
REPO = Path(__file__).resolve().parents[2]

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


def _stamp(n: int) -> str:
    return f"2025-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def _message(entry_id: str, parent: str | None, n: int, role: str, text: str) -> dict:
    message: dict = {"role": role, "content": text, "timestamp": n}
    if role == "assistant":
        message = {"role": "assistant", "content": [{"type": "text", "text": text}], "provider": "p",
                   "model": f"m{n % 3}", "usage": {"input": n, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                                   "totalTokens": n + 1}, "stopReason": "stop", "timestamp": n}
    elif role == "toolResult":
        message = {"role": "toolResult", "toolCallId": f"c{n}", "toolName": "bash",
                   "content": [{"type": "text", "text": text}], "isError": n % 2 == 0, "timestamp": n}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": _stamp(n), "message": message}


@st.composite
def sessions(draw):
    """(lines of a session file as bytes, whether every line is one pi writes)."""
    lines: list[bytes] = [json.dumps(HEADER).encode()]
    path: list[str] = []  # the current branch, root first
    written: list[str] = []
    usual = True

    def put(entry: dict) -> None:
        lines.append(json.dumps(entry, ensure_ascii=draw(st.booleans())).encode())
        if entry.get("type") != "session" and isinstance(entry.get("id"), str):
            written.append(entry["id"])
            path.append(entry["id"])

    n = 0
    for role in ("user", "assistant"):  # every session has a branch to leave
        n += 1
        put(_message(f"x{n}", path[-1] if path else None, n, role, f"{role} {n}"))
    for _ in range(draw(st.integers(0, 24))):
        n += 1
        parent = path[-1] if path else None
        kind = draw(st.sampled_from(["user", "assistant", "toolResult", "user", "assistant", "branch", "back",
                                     "label", "compaction", "model", "edit", "name", "odd"]))
        if kind in ("user", "assistant", "toolResult"):
            text = draw(TEXT) * draw(st.sampled_from([1, 1, 30]))
            put(_message(f"x{n}", parent, n, kind, text))
        elif kind == "branch" and path:
            # Back up the current branch: the next line is a sibling of a later entry.
            cut = draw(st.integers(1, len(path)))
            del path[cut:]
        elif kind == "back" and written:
            # Continue an older branch (or a root): the path is that entry's ancestors.
            target = draw(st.sampled_from([None, *written]))
            path.clear()
            if target is not None:
                path.append(target)  # the walk below only needs the last id
        elif kind == "label" and written:
            put({"type": "label", "id": f"x{n}", "parentId": parent, "timestamp": _stamp(n),
                 "targetId": draw(st.sampled_from(written)), "label": draw(st.sampled_from(["", "L", "M"]))})
        elif kind == "compaction" and path:
            put({"type": "compaction", "id": f"x{n}", "parentId": parent, "timestamp": _stamp(n),
                 "summary": "s", "firstKeptEntryId": draw(st.sampled_from(path)), "tokensBefore": n})
        elif kind == "model":
            put({"type": "model_change", "id": f"x{n}", "parentId": parent, "timestamp": _stamp(n),
                 "provider": "p", "modelId": f"m{n}"})
        elif kind == "edit" and path:
            put({"type": "context_edit", "id": f"x{n}", "parentId": parent, "timestamp": _stamp(n),
                 "targetId": draw(st.sampled_from(path)), "replacement": None})
        elif kind == "name":
            put({"type": "session_info", "id": f"x{n}", "parentId": parent, "timestamp": _stamp(n), "name": "n"})
        elif kind == "odd":
            odd = draw(st.sampled_from(["blank", "crlf", "broken_body", "bad_utf8", "surrogate", "duplicate",
                                        "number_id", "array"]))
            if odd == "blank":
                lines.append(b"   ")
            elif odd == "crlf":
                lines.append(json.dumps(_message(f"x{n}", parent, n, "user", "crlf")).encode() + b"\r")
                written.append(f"x{n}")
                path.append(f"x{n}")
            elif odd == "broken_body":  # skipped by both, as pi's JSON.parse fails on it
                good = json.dumps(_message(f"x{n}", parent, n, "user", "lost")).encode()
                lines.append(good[:-3] + b",}}")
            elif odd == "bad_utf8":
                raw = json.dumps(_message(f"x{n}", parent, n, "user", "BAD"), ensure_ascii=False).encode()
                lines.append(raw.replace(b"BAD", b"B\xffD"))
                written.append(f"x{n}")
                path.append(f"x{n}")
            elif odd == "surrogate":
                lines.append(json.dumps(_message(f"x{n}", parent, n, "user", "S")).encode().replace(b'"S"', b'"\\ud800"'))
                written.append(f"x{n}")
                path.append(f"x{n}")
            else:
                usual = False
                if odd == "duplicate" and written:
                    put(_message(draw(st.sampled_from(written)), parent, n, "user", "again"))
                elif odd == "number_id":
                    lines.append(json.dumps({**_message("z", parent, n, "user", "7"), "id": 7}).encode())
                else:
                    lines.append(b"[1, 2]")
    # Leave the first branch for good, so that there is something to read back.
    n += 1
    put(_message(f"x{n}", "x1", n, "user", "a new branch from the first message " * 20))
    tail = draw(st.sampled_from([b"\n", b"\n", b""]))  # an unterminated last line too
    return b"\n".join(lines) + tail, usual


def _write(directory: Path, data: bytes) -> str:
    path = directory / "s.jsonl"
    path.write_bytes(data)
    return str(path)


def _stubs(sm: SessionManager) -> list[LazyEntry]:
    return [e for e in sm._entries_view() if e.__class__ is LazyEntry]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session=sessions(), budget=st.sampled_from([None, 0]), steps=st.sampled_from([None, 0]))
def test_lazy_and_eager_answer_every_query_alike(tmp_path_factory, monkeypatch, session, budget, steps):
    data, usual = session
    path = _write(tmp_path_factory.mktemp("lazy"), data)
    with monkeypatch.context() as patch:  # (one example's setting, not the next one's)
        if budget is not None:  # every parsed body let go at once: each read parses again
            patch.setattr(bodies_module, "BODY_BUDGET_BYTES", budget)
        if steps is not None:  # no budget for the reader's path: it starts afresh at each old branch
            patch.setattr(bodies_module, "_PATH_STEPS_AT_START", steps)
            patch.setattr(bodies_module, "_PATH_STEPS_PER_LINE", steps)
        _check_alike(path, data, usual and steps is None)


def _check_alike(path: str, data: bytes, usual: bool) -> None:
    eager = SessionManager.open(path, read_only=True, lazy=False)
    lazy = SessionManager.open(path, read_only=True, lazy=True)
    assert not eager.lazy_bodies
    if usual and data.endswith(b"\n"):  # (an unfinished last line is parsed apart: no branch left)
        assert lazy.lazy_bodies and _stubs(lazy), "the left branch's messages stay in the file"
        assert all(stub.body is None for stub in _stubs(lazy))  # nothing parsed back yet
    if lazy.leaf_id:  # the leaf's path as the reader followed it is the one the walk finds
        walked = get_branch(lazy._by_id, lazy.leaf_id)
        assert [e.get("id") for e in lazy._raw_path(lazy.leaf_id)] == [e.get("id") for e in walked]
    assert answers(lazy) == answers(eager)
    # The same answers a second time (bodies now parsed, or parsed again after the budget).
    assert answers(lazy) == answers(eager)
    # Nothing handed out is a skeleton.
    handed = [*lazy.get_entries(), *lazy.file_entries, *lazy.get_branch(), *(row[0] for row in tree_rows(lazy.get_tree())),
              *(p.source for p in lazy.build_session_projection().entries)]
    assert not any(isinstance(e, LazyEntry) for e in handed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session=sessions(), ops=st.lists(st.tuples(st.sampled_from(["user", "branch", "label", "edit"]),
                                                   st.integers(0, 10_000)), min_size=1, max_size=8))
def test_appends_while_bodies_are_unparsed(tmp_path_factory, session, ops):
    data, _ = session
    if not data.endswith(b"\n"):
        data += b"\n"  # a writable open repairs an unterminated line (after a pause); not the point here
    directory = tmp_path_factory.mktemp("appends")
    (directory / "a").mkdir()
    (directory / "b").mkdir()
    lazy_path, eager_path = _write(directory / "a", data), _write(directory / "b", data)
    managers = [SessionManager.open(p, lazy=flag, uuid_factory=Ids(), clock=Clock())
                for p, flag in ((lazy_path, True), (eager_path, False))]
    for op, pick in ops:
        outcomes = []
        for sm in managers:
            known = [e["id"] for e in sm.entries if isinstance(e.get("id"), str)]
            try:
                if op == "user":
                    sm.append_message({"role": "user", "content": f"appended {pick}", "timestamp": pick})
                elif op == "branch" and known:
                    sm.branch(known[pick % len(known)])
                elif op == "label" and known:
                    sm.append_label_change(known[pick % len(known)], f"l{pick}")
                elif op == "edit":
                    on_path = [e["id"] for e in sm.get_branch()]
                    if on_path:
                        sm.append_context_edit(on_path[pick % len(on_path)], None)
                outcomes.append(None)
            except (ValueError, KeyError) as error:
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1]
    lazy, eager = managers
    assert answers(lazy) == answers(eager)
    assert Path(lazy_path).read_bytes() == Path(eager_path).read_bytes()  # the same lines written
    reopened = SessionManager.open(lazy_path, read_only=True, lazy=True)
    _check_alike(lazy_path, Path(lazy_path).read_bytes(), False)
    assert answers(reopened) == answers(SessionManager.open(eager_path, read_only=True, lazy=False))


def _big_session(tmp_path: Path) -> tuple[str, list[str]]:
    """A session whose first branch is left: its messages become skeletons."""
    lines = [HEADER]
    parent = None
    first_branch = []
    for n in range(1, 41):
        entry = _message(f"m{n}", parent, n, "user" if n % 2 else "assistant", f"text {n} " * 80)
        lines.append(entry)
        first_branch.append(entry["id"])
        parent = entry["id"]
    lines.append(_message("b1", "m1", 50, "user", "the kept branch " * 40))
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path), first_branch[1:]


def test_a_body_first_read_after_a_refresh_that_read_another_writers_lines(tmp_path):
    path, left = _big_session(tmp_path)
    sm = SessionManager.open(path, read_only=True, lazy=True)
    assert sm.lazy_bodies and {s.skeleton["id"] for s in _stubs(sm)} == set(left)
    # Another process appends: a reply on the kept branch and a return to the left branch.
    script = (
        "import json, sys\n"
        "with open(sys.argv[1], 'a') as f:\n"
        "    for line in json.loads(sys.argv[2]):\n"
        "        f.write(json.dumps(line) + '\\n')\n")
    more = [_message("b2", "b1", 60, "assistant", "reply " * 50), _message("m41", "m40", 61, "user", "back " * 50)]
    subprocess.run([sys.executable, "-c", script, path, json.dumps(more)], check=True)
    assert [e["id"] for e in sm.refresh()] == ["b2", "m41"]
    assert all(stub.body is None for stub in _stubs(sm))  # still unparsed
    assert answers(sm) == answers(SessionManager.open(path, read_only=True, lazy=False))
    assert sm.get_entry("m21")["message"]["content"] == "text 21 " * 80


def test_a_line_malformed_only_in_its_body_is_skipped_alike(tmp_path):
    path, _ = _big_session(tmp_path)
    raw = Path(path).read_bytes().split(b"\n")
    # Line 11 (m10): its id, type and parentId are fine, its message is not JSON.
    raw[10] = raw[10].replace(b"text 10 ", b"\\q", 1)
    Path(path).write_bytes(b"\n".join(raw))
    lazy = SessionManager.open(path, read_only=True, lazy=True)
    eager = SessionManager.open(path, read_only=True, lazy=False)
    assert lazy.skipped_lines == eager.skipped_lines == [11]
    assert lazy.get_entry("m10") is None
    assert answers(lazy) == answers(eager)


def test_a_file_rewritten_in_place_gives_a_clear_error_not_another_body(tmp_path):
    path, left = _big_session(tmp_path)
    sm = SessionManager.open(path, lazy=True)
    data = Path(path).read_bytes()
    with open(path, "r+b") as handle:  # the same file, every line one byte later
        handle.write(b"\n" + data)
    with pytest.raises(SessionFileChanged) as raised:
        sm.get_entry(left[5])
    assert path in str(raised.value) and left[5] in str(raised.value) and "Open it again" in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_bodies_still_read_after_the_path_is_renamed_or_deleted(tmp_path):
    path, left = _big_session(tmp_path)
    expected = SessionManager.open(path, read_only=True, lazy=False).get_entry(left[3])
    sm = SessionManager.open(path, read_only=True, lazy=True)
    os.rename(path, path + ".moved")
    assert sm.get_entry(left[3]) == expected
    os.unlink(path + ".moved")
    assert sm.get_entry(left[4])["id"] == left[4]


def test_lazy_is_decided_by_size_and_format(tmp_path, monkeypatch):
    path, _ = _big_session(tmp_path)
    assert not SessionManager.open(path).lazy_bodies  # small: every entry a dict
    monkeypatch.setattr(bodies_module, "LAZY_MIN_FILE_BYTES", 1)
    monkeypatch.setattr(bodies_module, "LAZY_MIN_LINE_BYTES", 1)
    assert SessionManager.open(path).lazy_bodies
    # An older format is migrated in memory (ids and fields change): read eagerly.
    old = tmp_path / "v2.jsonl"
    old.write_text(Path(path).read_text().replace('"version": 3', '"version": 2', 1))
    sm = SessionManager.open(old, read_only=True, lazy=True)
    assert not sm.lazy_bodies
    assert sm.get_entries() == SessionManager.open(old, read_only=True, lazy=False).get_entries()


def test_a_dropped_lazy_session_frees_its_file_and_entries(tmp_path):
    path, left = _big_session(tmp_path)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    skeletons = []
    for _ in range(20):
        sm = SessionManager.open(path, read_only=True, lazy=True)
        sm.get_entry(left[0])  # a parsed body on the budget queue
        skeletons.append(weakref.ref(_stubs(sm)[0]))
        del sm
    # Freed by reference counting alone: the loader froze them, so a cycle would keep them.
    assert all(ref() is None for ref in skeletons)
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) <= before + 1


def test_appends_to_a_lazy_session_keep_a_bounded_number_of_paths(tmp_path):
    path, _ = _big_session(tmp_path)
    sm = SessionManager.open(path, lazy=True, uuid_factory=Ids(), clock=Clock())
    assert sm.lazy_bodies
    for n in range(20):
        sm.build_session_context()  # the projection at the leaf reads the leaf's path
        sm.append_message({"role": "user", "content": f"more {n}", "timestamp": n})
    assert 1 <= len(sm._raw_paths) <= 8
    assert sm.build_session_context().messages == SessionManager.open(
        path, read_only=True, lazy=False).build_session_context().messages


_MEMORY_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
path, mode = sys.argv[2], sys.argv[3]
# Three branches of 3,000 messages from the first one (2 KB each): two are left behind.
with open(path, "w") as f:
    f.write(json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z",
                        "cwd": "/w"}) + "\n")
    f.write(json.dumps({"type": "message", "id": "root", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
                        "message": {"role": "user", "content": "start", "timestamp": 0}}) + "\n")
    for branch in range(3):
        parent = "root"
        for n in range(3000):
            entry_id = f"b{branch}-{n}"
            text = f"{entry_id} " + "lorem ipsum dolor sit amet " * 75
            role = "user" if n % 2 else "assistant"
            content = text if role == "user" else [{"type": "text", "text": text}]
            f.write(json.dumps({"type": "message", "id": entry_id, "parentId": parent,
                                "timestamp": "2025-01-01T00:00:01.000Z",
                                "message": {"role": role, "content": content, "timestamp": n}}) + "\n")
            parent = entry_id
import gc; gc.collect()
from pi_lab.session import SessionManager, bodies
bodies.BODY_BUDGET_BYTES = 2 << 20 if mode == "lazy" else 1 << 40
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
base = rss()
sm = SessionManager.open(path, read_only=True, lazy=mode != "eager")
opened = rss()
ids = [e.get("id") for e in sm._entries_view()]
# Read every entry once, in file order, as a viewer scrolling through the session would.
grown = 0.0
for start in range(0, len(ids), 500):
    for entry_id in ids[start:start + 500]:
        assert sm.get_entry(entry_id)["id"] == entry_id
    grown = max(grown, rss() - opened)
stubs = sum(e.__class__ is bodies.LazyEntry for e in sm._entries_view())
print(json.dumps({"opened": opened - base, "grown": grown, "stubs": stubs}))
"""


def _memory(tmp_path: Path, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, str(REPO), str(tmp_path / f"{mode}.jsonl"), mode],
                         check=True, capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout)


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from /proc")
def test_memory_stays_bounded_while_reading_every_body(tmp_path):
    lazy, unbounded, eager = (_memory(tmp_path, mode) for mode in ("lazy", "unbounded", "eager"))
    assert lazy["stubs"] == unbounded["stubs"] == 6000 and eager["stubs"] == 0
    # Open holds the skeletons and the current branch: about a third of the eager whole.
    assert lazy["opened"] < 0.7 * eager["opened"], (lazy, eager)
    # Reading every body once keeps a 2 MiB budget of line bytes parsed, not the left tree.
    assert lazy["grown"] < 0.5 * unbounded["grown"], (lazy, unbounded)
    assert unbounded["grown"] > 0.5 * (eager["opened"] - lazy["opened"]), (unbounded, eager, lazy)


def test_load_bodies_makes_a_lazy_session_eager_in_place(tmp_path, monkeypatch):
    path, left = _big_session(tmp_path)
    monkeypatch.setattr(bodies_module, "BODY_BUDGET_BYTES", 0)  # nothing parsed is kept
    sm = SessionManager.open(path, read_only=True, lazy=True)
    tree = sm.get_tree()
    before = answers(sm)
    sm.load_bodies()
    assert not sm.lazy_bodies and not _stubs(sm)
    assert answers(sm) == before == answers(SessionManager.open(path, read_only=True, lazy=False))
    # One dict per entry from now on: the index, the list and the nodes handed out agree.
    assert all(sm.get_entry(e["id"]) is e for e in sm.get_entries())
    nodes = {}
    stack = list(tree)
    while stack:
        node = stack.pop()
        nodes[node.entry["id"]] = node
        stack.extend(node.children)
    assert all(nodes[i].entry is sm.get_entry(i) for i in left)


def test_the_views_read_a_lazy_session_with_its_bodies_in_memory(tmp_path):
    from pi_lab.view.rows import RowState
    from pi_lab.view.timeline import context_timeline

    path, _ = _big_session(tmp_path)
    sm = SessionManager.open(path, read_only=True, lazy=True)
    assert sm.lazy_bodies
    state = RowState(sm, home="/h")
    assert not sm.lazy_bodies  # the rows' facts and caches key on entry identity
    eager = SessionManager.open(path, read_only=True, lazy=False)
    assert [r.text for r in state.rows] == [r.text for r in RowState(eager, home="/h").rows]
    lazy_again = SessionManager.open(path, read_only=True, lazy=True)
    assert context_timeline(lazy_again) == context_timeline(eager)
    assert not lazy_again.lazy_bodies


def test_a_branch_continued_from_a_line_parsed_apart_keeps_its_path(tmp_path):
    """Lines with invalid UTF-8 are parsed by the slower reader, not the lazy one; a later line
    continuing from such a line must still find its whole path (found by the property tests:
    the reader's id lookup once missed lines parsed apart after it was built)."""
    lines = [json.dumps(HEADER).encode()]
    parent = None
    for n in range(1, 8):
        raw = json.dumps(_message(f"x{n}", parent, n, "user", "BAD" if n in (3, 6) else f"t{n}" * 40)).encode()
        lines.append(raw.replace(b"BAD", b"B\xffD"))
        parent = f"x{n}"
    lines.append(json.dumps(_message("y1", "x1", 8, "user", "other branch " * 40)).encode())
    lines.append(json.dumps(_message("y2", "x6", 9, "user", "back to x6 " * 40)).encode())
    path = _write(tmp_path, b"\n".join(lines) + b"\n")
    lazy = SessionManager.open(path, read_only=True, lazy=True)
    assert lazy.lazy_bodies
    assert [e["id"] for e in lazy.get_branch()] == ["x1", "x2", "x3", "x4", "x5", "x6", "y2"]
    assert answers(lazy) == answers(SessionManager.open(path, read_only=True, lazy=False))


def test_resolve_all_of_a_path_without_skeletons_is_a_copy_and_with_them_reads_them(tmp_path):
    # resolve_all copies a list holding no skeleton at C speed (issue 28); with skeletons
    # among the dicts it still reads each back, in order.
    from pi_lab.session.bodies import resolve_all

    path, left = _big_session(tmp_path)
    sm = SessionManager.open(path, lazy=True)
    raw = sm._entries_view()
    plain = [e for e in raw if e.__class__ is not LazyEntry]
    copy = resolve_all(plain)
    assert copy == plain and copy is not plain and all(a is b for a, b in zip(copy, plain))
    mixed = resolve_all(raw)
    assert [e.__class__ for e in mixed] == [dict] * len(raw)
    assert [e["id"] for e in mixed] == [e.get("id") for e in raw]
    assert {e["id"] for e in mixed if e["message"]["content"]} >= set(left)
