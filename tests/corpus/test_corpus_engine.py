"""The corpus tables equal what the session engine gives, file by file (real fixtures and
generated sessions), and the per-call context is computed without a projection per call."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from pi_lab.compaction.tokens import estimate_context_tokens, estimate_projected_context_tokens
from pi_lab.corpus import Corpus
from pi_lab.corpus.extract import extract_file
from pi_lab.session.projection import build_session_context, build_session_projection
from pi_lab.session.readonly import session_from_bytes
from pi_lab.session.tree import get_branch, index_by_id

REPO = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("bench_generate", REPO / "bench" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_generate", module)
    spec.loader.exec_module(module)
    return module


def generated(folder: Path, sizes=(400, 1500, 3000)) -> list[Path]:
    gen = _generator()
    out = []
    for seed, size in enumerate(sizes, start=1):
        lines, _ = gen.generate(size, seed)
        path = folder / f"gen-{seed}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out.append(path)
    return out


def check_against_engine(path: Path) -> int:
    """Compare one file's rows with the engine; returns the number of model calls checked."""
    cols = extract_file(path)
    sm = session_from_bytes(path.read_bytes(), path)
    entries = sm.get_entries()
    by_id = index_by_id(entries)
    ec = cols["entries"]
    assert ec["entry_id"] == [e.get("id") for e in entries]
    assert ec["parent_id"] == [e.get("parentId") for e in entries]
    assert ec["type"] == [e.get("type") for e in entries]
    active = {e["id"] for e in sm.get_branch()}
    assert [i in active for i in ec["entry_id"]] == ec["on_active_path"]
    assert [sm.get_label(i) for i in ec["entry_id"]] == ec["label"]
    assert ec["depth"] == [len(get_branch(by_id, i)) - 1 for i in ec["entry_id"]]
    children = {}
    for e in entries:
        children[e.get("parentId")] = children.get(e.get("parentId"), 0) + 1
    assert ec["child_count"] == [children.get(i, 0) for i in ec["entry_id"]]
    assert cols["sessions"]["name"] == [sm.session_name]
    message_entries = [e for e in entries if e.get("type") == "message"]
    assert cols["messages"]["entry_id"] == [e["id"] for e in message_entries]
    assert cols["messages"]["est_tokens"] == [_estimate(e["message"]) for e in message_entries]
    mc = cols["model_calls"]
    assistants = [e for e in entries if e.get("type") == "message" and e["message"].get("role") == "assistant"]
    assert sorted(mc["entry_id"]) == sorted(e["id"] for e in assistants)  # one row per call, walk order
    for eid, parent, count, est, plain in zip(mc["entry_id"], mc["parent_id"], mc["context_messages"], mc["context_tokens_est"], mc["context_tokens_plain"]):
        context = build_session_context(entries, parent, by_id)
        estimate = estimate_context_tokens(context.messages)
        assert (count, est) == (len(context.messages), float(estimate.tokens)), (path.name, eid)
        assert plain == sum(_estimate(m) for m in context.messages)
    for eid, parent, gauge in zip(mc["entry_id"], mc["parent_id"], mc["context_tokens_projected"]):
        projection = build_session_projection(entries, parent, by_id)
        branch = get_branch(by_id, parent) if parent else []
        assert gauge == float(estimate_projected_context_tokens(projection, branch).tokens), (path.name, eid)
    return len(mc["entry_id"])


def _estimate(message):
    from pi_lab.compaction.tokens import estimate_tokens

    return estimate_tokens(message)


def test_real_fixtures_equal_the_engine(fixtures_dir, tmp_path):
    checked = 0
    for source in sorted(fixtures_dir.glob("*.jsonl")):
        target = tmp_path / source.name
        shutil.copyfile(source, target)
        checked += check_against_engine(target)
    assert checked > 900  # the two large fixtures have hundreds of calls each


def test_generated_sessions_equal_the_engine(tmp_path):
    checked = sum(check_against_engine(p) for p in generated(tmp_path))
    assert checked > 1000


def test_branch_points_leaves_and_compactions_count_like_the_engine(tmp_path):
    paths = generated(tmp_path, sizes=(2000,))
    c = Corpus.scan(tmp_path, cache=False, workers=1)
    sm = session_from_bytes(paths[0].read_bytes(), paths[0])
    entries = sm.get_entries()
    kids = {}
    for e in entries:
        kids[e.get("parentId")] = kids.get(e.get("parentId"), 0) + 1
    row = c.sessions.to_pylist()[0]
    assert row["branch_points"] == sum(1 for e in entries if kids.get(e["id"], 0) > 1)
    assert row["leaves"] == sum(1 for e in entries if kids.get(e["id"], 0) == 0)
    assert row["compactions"] == sum(1 for e in entries if e["type"] == "compaction") == c.compactions.num_rows
    assert row["context_edits"] == sum(1 for e in entries if e["type"] == "context_edit")
    assert c.branch_summaries.num_rows == sum(1 for e in entries if e["type"] == "branch_summary")


def test_calls_are_projected_incrementally(tmp_path, monkeypatch):
    """A 20,000-entry chain has 10,000 calls; a projection per call would walk 10^8 entries."""
    import pi_lab.session.projection as projection

    def refuse(*args, **kwargs):
        raise AssertionError("the extractor must not project from scratch per call")

    monkeypatch.setattr(projection, "build_session_context", refuse)
    monkeypatch.setattr(projection, "build_session_projection", refuse)
    # The work, counted rather than timed: each message is estimated a bounded number of times
    # (the walk once, the messages table once), where a scan of the path per call would
    # estimate about 10^8 messages.
    import pi_lab.compaction.context_walk as walk_module
    import pi_lab.corpus.extract as extract_module

    estimates = 0
    real = walk_module.estimate_tokens

    def counted(message):
        nonlocal estimates
        estimates += 1
        return real(message)

    monkeypatch.setattr(walk_module, "estimate_tokens", counted)
    monkeypatch.setattr(extract_module, "estimate_tokens", counted)
    gen = _generator()
    path = tmp_path / "chain.jsonl"
    path.write_text("\n".join(gen.linear_lines(20_000, 3)) + "\n", encoding="utf-8")
    cols = extract_file(path)
    mc = cols["model_calls"]
    assert len(mc["entry_id"]) == 10_000
    assert mc["context_messages"][-1] == 19_999
    assert 0 < estimates <= 3 * 20_000, estimates


def test_gauge_fallback_with_system_messages_equals_the_engine(tmp_path, monkeypatch):
    """After a compaction or context_edit the usage anchor no longer counts; with system
    messages in the context pi's gauge replays them into one state. The walk keeps the
    system and non-system sums instead of projecting the path: the generated sessions take
    that branch, and every such call equals the engine's estimate (check_against_engine)."""
    import pi_lab.compaction.context_walk as walk_module  # the walk the extractor runs

    replays = []
    real = walk_module.replay_system_state

    def counted(messages):
        replays.append(len(messages))
        return real(messages)

    monkeypatch.setattr(walk_module, "replay_system_state", counted)
    checked = sum(check_against_engine(p) for p in generated(tmp_path, sizes=(1500, 3000)))
    assert checked > 1000 and len(replays) > 10 and min(replays) >= 1
