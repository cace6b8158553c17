"""The context views of an export (src_frontend/export/views.ts, run in node over the real
StaticTransport and ChunkStore) answer as the kernel does: the composition bar at every entry,
the timeline's point, the Compare pane's node names, the context diff and the branch
comparison for many pairs of nodes, on the real fixtures, the worked example and generated
sessions."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import generated_session, node_bundle, standard_sessions, write_packed_parts, write_session  # noqa: E402

from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.view.payload import RequestError, read_request  # noqa: E402
from pi_lab.view.gauge import recorded_context_window  # noqa: E402
from pi_lab.view.payload import SessionView, ViewSettings  # noqa: E402


@pytest.fixture(scope="module")
def checker(tmp_path_factory) -> Path:
    return node_bundle(Path(__file__).with_name("views_check.ts"), tmp_path_factory.mktemp("views"))


def _sessions(tmp: Path) -> list[tuple[str, Path]]:
    found = standard_sessions(tmp, (1, 2, 3, 4, 5, 6), 220)
    found.append(("edits", write_session(_edits_session(), tmp / "edits.jsonl")))
    return found


def _edits_session() -> list[dict]:
    """One message replaced differently on two branches (and once by its own content), a
    second root, and a tool result whose tool has no name."""
    def entry(kind: str, entry_id: str, parent: str | None, **fields) -> dict:
        return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z", **fields}

    def message(entry_id: str, parent: str | None, role: str, content, **fields) -> dict:
        return entry("message", entry_id, parent, message={"role": role, "content": content, "timestamp": 1, **fields})

    answer = [{"type": "thinking", "thinking": "let me see"}, {"type": "text", "text": "the answer is 42"},
              {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "/r/a.ts"}}]
    return [
        {"type": "session", "version": 3, "id": "S-edits", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/r"},
        message("u1", None, "user", "what is it? Straße ΣΑΣ σας   spaced\u2003out"),
        message("a1", "u1", "assistant", answer, stopReason="toolUse", provider="p", model="m",
                usage={"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": {"total": 0.5}}),
        message("t1", "a1", "toolResult", [{"type": "text", "text": "file text"}], toolCallId="c1", toolName="", isError=False),
        entry("context_edit", "x1", "t1", targetId="a1", replacement={"content": [{"type": "text", "text": "[one edit]"}]}),
        message("u2", "x1", "user", "and then?"),
        entry("context_edit", "x2", "t1", targetId="a1", replacement={"content": "[another edit]"}),
        message("u3", "x2", "user", "and else?"),
        entry("context_edit", "x3", "t1", targetId="a1", replacement={"content": answer}),
        message("u4", "x3", "user", "and so?"),
        message("sy", None, "system", "You are a coding agent inside a harness. " * 8),
        message("r2", "sy", "user", "a second root"),
        message("r3", "r2", "assistant", [{"type": "text", "text": "on its own"}], stopReason="stop", provider="p", model="m"),
    ]


def _view(sm) -> SessionView:
    window = recorded_context_window(sm)
    return SessionView.open(sm, ViewSettings(context_window=window) if window else ViewSettings())


def _asks(sm, rng: random.Random, budget: int) -> list[dict]:
    ids = [e["id"] for e in sm.get_entries() if isinstance(e.get("id"), str)]
    ids = list(dict.fromkeys(ids))
    parents = {e.get("parentId") for e in sm.get_entries() if isinstance(e.get("parentId"), str)}
    tips = [i for i in ids if i not in parents] or ids
    special = [e["id"] for e in sm.get_entries() if e.get("type") in ("compaction", "branch_summary", "context_edit")]
    leaf = sm.leaf_id
    some = ids if len(ids) <= budget else rng.sample(ids, budget)
    asks: list[dict] = []
    for entry_id in some:
        asks.append({"op": "composition", "args": {"id": entry_id}})
        asks.append({"op": "timeline_at", "args": {"id": entry_id, "leaf_id": leaf}})
        asks.append({"op": "timeline_at", "args": {"id": entry_id, "leaf_id": rng.choice(tips)}})
        asks.append({"op": "compare_node", "args": {"id": entry_id, "side": rng.choice("ab")}})
    pairs: list[tuple[str, str]] = []
    for tip in tips[:12]:
        for other in tips[:6]:
            if other != tip:
                pairs.append((tip, other))
        if tip != leaf and leaf is not None:
            pairs.append((tip, leaf))
    for entry_id in special[:12]:
        entry = sm.get_entry(entry_id)
        parent = entry.get("parentId") if entry else None
        if isinstance(parent, str):
            pairs.append((parent, entry_id))  # before and after a compaction, an edit, a summary
        if leaf is not None and entry_id != leaf:
            pairs.append((entry_id, leaf))
    for _ in range(min(budget, 30)):
        a, b = rng.sample(ids, 2) if len(ids) > 1 else (ids[0], ids[0])
        pairs.append((a, b))
    for n, (a, b) in enumerate(pairs):
        limit = 2 if n % 5 == 0 else 200  # the cut lists, the counts beside them
        asks.append({"op": "context_diff", "args": {"a": a, "b": b, "limit": limit}})
        asks.append({"op": "compare_branches", "args": {"a": a, "b": b, "limit": limit}})
        query = QUERIES[n % len(QUERIES)]
        asks.append({"op": "context_search", "args": {"a": a, "b": b, "query": query, "limit": limit,
                                                      "case_sensitive": n % 3 == 0}})
    # refusals the pane shows as they are
    asks.append({"op": "context_diff", "args": {"a": None, "b": leaf}})
    asks.append({"op": "compare_branches", "args": {"a": leaf, "b": leaf}})
    asks.append({"op": "compare_node", "args": {"id": "no-such-entry", "side": "b"}})
    asks.append({"op": "compare_node", "args": {"id": leaf, "side": "c'd"}})
    asks.append({"op": "context_diff", "args": {"a": ids[0], "b": leaf, "limit": "it's 5"}})
    asks.append({"op": "compare_branches", "args": {"a": ids[0], "b": leaf, "limit": 0}})
    asks.append({"op": "compare_branches", "args": {"a": ids[0], "b": leaf, "limit": True}})
    asks.append({"op": "context_search", "args": {"a": leaf, "b": ids[0], "query": " \u3000 "}})
    return asks


def _static(checker: Path, sm, asks: list[dict], tmp: Path) -> list[dict]:
    write_packed_parts(sm, tmp / "parts.json")
    (tmp / "asks.json").write_text(json.dumps(asks))
    run = subprocess.run(["node", str(checker), str(tmp / "parts.json"), str(tmp / "asks.json")],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _kernel(view, ask: dict) -> dict:
    try:
        return {"result": json.loads(json.dumps(read_request(view, ask["op"], ask["args"])))}
    except RequestError as error:
        return {"error": str(error)}


# Words of the sessions, in other cases, across white space, and a folding only casefold does.
QUERIES = ("auth", "AUTH", "read", "x", "answer 1", "the", "STRASSE", "ΣΑΣ", "path\":", "(thinking)", "→ read", "认证",
           "question", "Done", "zzz-nowhere", "HARNESS")
FEATURES = ("tool result part", "split assistant", "edited", "replaced", "only a", "only b", "no common", "summary",
            "error", "retry", "aborted", "files", "usage", "tip", "off branch", "call", "search hit",
            "search count")


def _features(op: str, r: dict) -> list[str]:
    out = []
    if op == "composition":
        parts = [p["part"] for p in r["parts"]]
        out += ["tool result part"] * any(p.startswith("tool result: ") for p in parts)
        out += ["split assistant"] * ("tool calls" in parts and "assistant text" in parts)
    elif op == "context_diff":
        out += ["edited"] * any(row.get("edited") for row in r["both"])
        out += ["replaced"] * any(x["source_ids"] for x in r["replaced"])
        out += ["only a"] * bool(r["only_a"]) + ["only b"] * bool(r["only_b"])
    elif op == "compare_branches":
        out += ["no common"] * (r["common_ancestor"] is None)
        out += ["summary"] * bool(r["summaries"])
        for s in (r["a_stats"], r["b_stats"]):
            out += ["error"] * bool(s["errors"]) + ["retry"] * bool(s["retries"]) + ["aborted"] * bool(s["aborted"])
            out += ["files"] * bool(s["files_read"] or s["files_modified"]) + ["usage"] * s["usage_known"]
    elif op == "context_search":
        out += ["search hit"] * bool(r["a"] or r["b"])
        out += ["search count"] * any(h["count"] > 1 for h in r["a"] + r["b"])
    elif op == "compare_node":
        out += ["tip"] * r["is_tip"]
    elif op == "timeline_at":
        out += ["off branch"] * (not r["on_branch"]) + ["call"] * (r["call_id"] is not None)
    return out


def test_static_views_answer_like_the_kernel(checker, tmp_path):
    rng = random.Random(14)
    checked: dict[str, int] = {}
    seen: dict[str, int] = {}
    for name, path in _sessions(tmp_path):
        sm = SessionManager.open(str(path), read_only=True)
        asks = _asks(sm, rng, 120)
        got = _static(checker, sm, asks, tmp_path)
        view = _view(sm)
        for ask, answer in zip(asks, got, strict=True):
            want = _kernel(view, ask)
            assert ("error" in answer) == ("error" in want), (name, ask, answer, want)
            if "error" in want:
                assert answer["error"] == want["error"], (name, ask)
                continue
            assert answer["result"] == want["result"], (name, ask)
            checked[ask["op"]] = checked.get(ask["op"], 0) + 1
            for feature in _features(ask["op"], want["result"]):
                seen[feature] = seen.get(feature, 0) + 1
    # every view was answered, many times, with something to compare
    assert min(checked.values()) > 50 and len(checked) == 6, checked
    # and the answers hold the cases the embedded facts treat apart
    assert set(seen) == set(FEATURES), seen


def test_an_export_without_the_views_facts_still_says_it_needs_a_kernel(checker, tmp_path):
    """An export written before the views' facts (no ``views`` in its header) keeps answering
    as it did: the views need a kernel."""
    import pi_lab.export.data as data

    sm = SessionManager.open(str(write_session(generated_session(3, 60), tmp_path / "g.jsonl")), read_only=True)
    real = data.views_header
    try:
        data.views_header = lambda *args: None  # type: ignore[assignment]
        got = _static(checker, sm, [{"op": "composition", "args": {"id": sm.leaf_id}}], tmp_path)
    finally:
        data.views_header = real  # type: ignore[assignment]
    assert "needs a kernel" in got[0]["error"]


def test_static_views_on_fixtures_with_one_odd_field(checker, tmp_path):
    """One field of one line of a real fixture made an odd value (tests/fuzz/fieldfuzz.py: a
    number for a string, an object for an id, content nested 3,000 deep, ...): the page still
    answers every view as the kernel does, refusals included."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
    import fieldfuzz

    rng = random.Random(1406)
    if not fieldfuzz.FIXTURES.is_dir():
        pytest.skip(f"pi session fixtures not found at {fieldfuzz.FIXTURES}")
    lines = {name: (fieldfuzz.FIXTURES / name).read_bytes().splitlines()[:120] for name in fieldfuzz.SMALL_FIXTURES}
    answered = 0
    for trial in range(30):
        name = rng.choice(fieldfuzz.SMALL_FIXTURES)
        data, mutation = fieldfuzz.mutate(lines[name], rng)
        path = tmp_path / f"m{trial}.jsonl"
        path.write_bytes(data)
        sm = SessionManager.open(str(path), read_only=True)
        if not [e for e in sm.get_entries() if isinstance(e.get("id"), str)]:
            continue
        asks = _asks(sm, rng, 20)
        got = _static(checker, sm, asks, tmp_path)
        view = _view(sm)
        for ask, answer in zip(asks, got, strict=True):
            assert answer == _kernel(view, ask), (mutation.describe(), ask)
            answered += "result" in answer
    assert answered > 1000
