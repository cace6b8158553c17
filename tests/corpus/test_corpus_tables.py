"""Every column of the corpus tables on hand-built sessions where the answer is known."""

from __future__ import annotations

import math

import pytest

from corpus_builders import build_corpus
from pi_lab.corpus import Corpus


@pytest.fixture
def corpus(tmp_path):
    files = build_corpus(tmp_path / "sessions")
    c = Corpus.scan(tmp_path / "sessions", cache=False, workers=1)
    return c, files


def rows(table, **where):
    return [r for r in table.to_pylist() if all(r[k] == v for k, v in where.items())]


def one(table, **where):
    found = rows(table, **where)
    assert len(found) == 1, (where, found)
    return found[0]


def test_sessions_table(corpus):
    c, files = corpus
    assert c.errors == []
    assert sorted(c.sessions.column("session_id").to_pylist()) == ["C", "F", "L", "O", "P"]
    p = one(c.sessions, session_id="P")
    assert p["file"] == str(files["P"])
    assert p["parent_session"] is None and p["parent_session_id"] is None
    assert p["cwd"] == p["project"] == "/repo"
    assert p["name"] == "Parent run"  # trimmed, latest session_info
    assert (p["entries"], p["messages"], p["model_calls"]) == (10, 7, 4)
    assert (p["branch_points"], p["compactions"], p["branch_summaries"], p["context_edits"], p["labels"]) == (1, 0, 1, 0, 1)
    # leaves: a2, a3, n1 (session_info is the file's last entry, on the b1 branch)
    assert p["leaves"] == 3
    assert p["max_depth"] == 5  # u1 b1 u2 a4 l1 n1
    assert p["models"] == ["claude-sonnet-4-5"]
    assert (p["input"], p["output"], p["cache_read"], p["total_tokens"]) == (170, 17, 50, 237)
    assert p["version"] == 3 and p["skipped_lines"] == 0 and p["partial_last_line"] is False
    f = one(c.sessions, session_id="F")
    assert f["parent_session"] == str(files["P"]) and f["parent_session_id"] == "P"
    assert f["copied_entries"] == 3
    assert (f["input"], f["output"]) == (30, 3)  # only its own call a5
    cl = one(c.sessions, session_id="C")
    assert cl["parent_session_id"] == "F" and cl["copied_entries"] == 4
    assert cl["total_tokens"] == 0
    lookalike = one(c.sessions, session_id="L")
    assert lookalike["copied_entries"] == 0 and lookalike["input"] == 10


def test_entries_table(corpus):
    c, _ = corpus
    e = c.entries
    u1 = one(e, session_id="P", entry_id="u1")
    assert (u1["depth"], u1["child_count"], u1["branch_point"], u1["is_leaf"], u1["on_active_path"]) == (0, 3, True, False, True)
    assert u1["type"] == "message" and u1["role"] == "user" and u1["chars"] == 5 and u1["line"] == 1
    a1 = one(e, session_id="P", entry_id="a1")
    assert a1["label"] == "keep" and a1["on_active_path"] is False and a1["parent_id"] == "u1"
    a2 = one(e, session_id="P", entry_id="a2")
    assert a2["is_leaf"] and a2["depth"] == 3
    b1 = one(e, session_id="P", entry_id="b1")
    assert b1["type"] == "branch_summary" and b1["role"] is None and b1["chars"] == 3 and b1["on_active_path"]
    n1 = one(e, session_id="P", entry_id="n1")
    assert n1["is_leaf"] and n1["on_active_path"] and n1["depth"] == 5
    assert str(u1["timestamp"]).startswith("2026-07-29 09:00:01")
    # copies: the fork's three copied entries, the clone's four (one from the fork itself)
    fork = {r["entry_id"]: (r["copied"], r["copied_from"]) for r in rows(e, session_id="F")}
    assert fork == {"u1": (True, "P"), "a1": (True, "P"), "t1": (True, "P"), "a5": (False, None)}
    clone = {r["entry_id"]: (r["copied"], r["copied_from"]) for r in rows(e, session_id="C")}
    assert clone == {"u1": (True, "P"), "a1": (True, "P"), "t1": (True, "P"), "a5": (True, "F")}
    assert all(not r["copied"] for r in rows(e, session_id="L"))  # same ids, no parentSession
    assert all(not r["copied"] for r in rows(e, session_id="P"))


def test_messages_table(corpus):
    c, _ = corpus
    m = c.messages
    a1 = one(m, session_id="P", entry_id="a1")
    assert (a1["role"], a1["text_chars"], a1["stop_reason"], a1["model"], a1["provider"]) == ("assistant", 2, "toolUse", "claude-sonnet-4-5", "anthropic")
    assert (a1["input"], a1["output"], a1["cache_read"], a1["cache_write"], a1["total_tokens"], a1["cost"]) == (10, 5, 0, 0, 15, 0)
    # pi's estimate: "hi" + "read" + {"path":"x"} = 2 + 4 + 12 chars -> 5 tokens
    assert a1["est_tokens"] == 5
    t1 = one(m, session_id="P", entry_id="t1")
    assert (t1["role"], t1["tool_name"], t1["text_chars"], t1["est_tokens"], t1["input"]) == ("toolResult", "read", 3, 1, 0)
    e1 = one(m, session_id="O", entry_id="e1")
    assert e1["stop_reason"] == "error" and e1["error_message"] == "prompt is too long"
    assert one(m, session_id="F", entry_id="a1")["copied"] is True


def test_model_calls_what_the_model_saw(corpus):
    c, _ = corpus
    mc = c.model_calls
    expect = {
        # entry: (context messages, estimate, compaction in effect)
        ("P", "a1"): (1, 2, None),     # [u1 "hello"] = ceil(5/4)
        ("P", "a2"): (3, 16, None),    # a1's usage (15) + t1 "abc" (1)
        ("P", "a3"): (1, 2, None),
        ("P", "a4"): (3, 5, None),     # u1 (2) + branch summary "sum" (1) + u2 "again" (2)
        ("O", "a1"): (1, 10, None),
        ("O", "e1"): (3, 1012, None),  # a1's usage (1010) + u2 (2)
        ("O", "a2"): (2, 7, "k1"),     # summary (5) + u2 (2); e1 omitted by the edit
        ("O", "e2"): (4, 56, "k1"),    # summary, u2, a2, u3: a2's usage (55) + u3 (1)
        ("O", "a3"): (4, 56, "k1"),    # the same context: e2 dropped by ce2
    }
    for (sid, eid), (count, est, comp) in expect.items():
        row = one(mc, session_id=sid, entry_id=eid)
        assert (row["context_messages"], row["context_tokens_est"], row["compaction_id"]) == (count, est, comp), (sid, eid)
        assert row["context_window"] == 200_000
    # pi's gauge (estimate_projected_context_tokens): usage measured before the last edit or
    # compaction is not trusted, so right after them the messages are estimated one by one
    gauge = {eid: one(mc, session_id="O", entry_id=eid)["context_tokens_projected"] for eid in ("a1", "e1", "a2", "e2", "a3")}
    assert gauge == {"a1": 10, "e1": 1012, "a2": 7, "e2": 56, "a3": 9}
    a2 = one(mc, session_id="O", entry_id="a2")
    assert a2["input_tokens_measured"] == 50 and math.isclose(a2["fill_ratio"], 50 / 200_000)
    e1 = one(mc, session_id="O", entry_id="e1")
    assert e1["overflowed"] is True and e1["retried"] is True
    assert e1["input_tokens_measured"] is None and math.isclose(e1["fill_ratio"], 1012 / 200_000)
    assert not a2["overflowed"] and not a2["retried"]
    e2 = one(mc, session_id="O", entry_id="e2")
    assert e2["retried"] is True and e2["overflowed"] is False
    assert one(mc, session_id="P", entry_id="a3")["on_active_path"] is False
    assert one(mc, session_id="P", entry_id="a4")["on_active_path"] is True
    assert one(mc, session_id="P", entry_id="a2")["depth"] == 3
    assert one(mc, session_id="F", entry_id="a5")["context_messages"] == 3


def test_tool_calls_table(corpus):
    c, _ = corpus
    t = one(c.tool_calls, session_id="P", entry_id="a1")
    assert (t["tool_call_id"], t["tool_name"], t["argument_bytes"], t["result_entry_id"], t["result_bytes"], t["is_error"]) == (
        "c1", "read", 12, "t1", 3, False)
    assert t["seconds"] == 2.0 and t["model"] == "claude-sonnet-4-5"
    assert one(c.tool_calls, session_id="F", entry_id="a1")["copied_from"] == "P"


def test_compactions_and_branch_summaries(corpus):
    c, _ = corpus
    k = one(c.compactions, session_id="O")
    assert (k["entry_id"], k["tokens_before"], k["first_kept_entry_id"], k["summary_chars"]) == ("k1", 1012, "u2", 20)
    assert (k["kept_entries"], k["messages_after"], k["tokens_after"]) == (3, 2, 7)
    assert k["trigger"] == "overflow" and k["from_hook"] is False
    b = one(c.branch_summaries, session_id="P")
    assert (b["entry_id"], b["from_id"], b["target_id"], b["summary_chars"]) == ("b1", "a3", "u1", 3)
    assert b["read_files"] == ["x"] and b["modified_files"] == [] and b["from_hook"] is False


def test_usage_counts_each_call_once(corpus):
    c, _ = corpus
    by_session = {r["session_id"]: r for r in c.usage(by="session").to_pylist()}
    assert {k: v["calls"] for k, v in by_session.items()} == {"P": 4, "F": 1, "O": 5, "L": 1}
    total = c.usage(by="model").to_pylist()
    assert len(total) == 1 and total[0]["calls"] == 11
    # P 237 + F 33 + O (1010 + 0 + 55 + 0 + 66) + L 15
    assert total[0]["total_tokens"] == 237 + 33 + 1131 + 15
    for by in ("day", "session", "model", "project"):
        table = c.usage(by=by)
        for column in ("calls", "input", "output", "cache_read", "cache_write", "total_tokens", "cost"):
            assert column in table.column_names
        assert sum(table.column("calls").to_pylist()) == 11
    projects = {r["project"]: r["calls"] for r in c.usage(by="project").to_pylist()}
    assert projects == {"/repo": 6, "/other": 5}
    assert [r["day"] for r in c.usage(by="day").to_pylist()] == ["2026-07-29"]
    with pytest.raises(ValueError):
        c.usage(by="week")


def test_sql_and_parquet(corpus, tmp_path):
    import pyarrow.parquet as pq

    c, _ = corpus
    out = c.sql("select session_id, count(*) as n from entries where copied group by 1 order by 1")
    assert out.to_pylist() == [{"session_id": "C", "n": 4}, {"session_id": "F", "n": 3}]
    written = c.to_parquet(tmp_path / "out")
    assert sorted(p.name for p in written) == sorted(f"{n}.parquet" for n in (
        "sessions", "entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries"))
    assert pq.read_table(tmp_path / "out" / "model_calls.parquet").equals(c.model_calls)


def test_every_per_entry_table_has_the_contract_columns(corpus):
    c, _ = corpus
    for name in ("entries", "messages", "model_calls", "tool_calls", "compactions", "branch_summaries"):
        names = getattr(c, name).column_names
        assert {"session_id", "entry_id", "copied"} <= set(names), name
    assert {"session_id", "file", "parent_session"} <= set(c.sessions.column_names)
