"""Hand-built session folders whose every corpus value is known (used by the corpus tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import asst_msg, entry, header, msg, tool_result, usage, user_msg

MODEL = "claude-sonnet-4-5"  # llm.catalog: 200,000 tokens


def write_session(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines), encoding="utf-8")
    return path


def a(text: str, use: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return asst_msg(text, model=MODEL, use=use, **kw)


def parent_entries() -> list[dict[str, Any]]:
    """P: a tool call, a branch point at u1 (abandoned a3), a branch summary, a label, a name."""
    call = {"id": "c1", "name": "read", "arguments": {"path": "x"}}
    return [
        msg("u1", None, user_msg("hello"), 1),
        msg("a1", "u1", a("hi", usage(10, 5), tool_calls=[call], stop="toolUse"), 2),
        msg("t1", "a1", tool_result("c1", "read", "abc"), 4),
        msg("a2", "t1", a("done", usage(100, 7, cache_read=50)), 5),
        msg("a3", "u1", a("other", usage(20, 3)), 6),
        entry("branch_summary", "b1", "u1", 7, fromId="a3", summary="sum", details={"readFiles": ["x"], "modifiedFiles": []}, fromHook=False),
        msg("u2", "b1", user_msg("again"), 8),
        msg("a4", "u2", a("ok", usage(40, 2)), 9),
        entry("label", "l1", "a4", 10, targetId="a1", label="keep"),
        entry("session_info", "n1", "l1", 11, name="  Parent run "),
    ]


def overflow_entries() -> list[dict[str, Any]]:
    """O: a call overflows, pi drops it (context_edit null), compacts, and retries; later an
    ordinary failure is dropped and retried without compaction."""
    return [
        msg("u1", None, user_msg("x" * 40), 1),
        msg("a1", "u1", a("ok", usage(1000, 10)), 2),
        msg("u2", "a1", user_msg("y" * 8), 3),
        msg("e1", "u2", a(None, usage(0, 0), stop="error", error="prompt is too long"), 4),
        entry("context_edit", "ce1", "e1", 5, targetId="e1", replacement=None),
        entry("compaction", "k1", "ce1", 6, summary="S" * 20, firstKeptEntryId="u2", tokensBefore=1012, fromHook=False),
        msg("a2", "k1", a("back", usage(50, 5)), 7),
        # an ordinary retry: the failed attempt is dropped by an edit, no compaction
        msg("u3", "a2", user_msg("zzzz"), 8),
        msg("e2", "u3", a(None, usage(0, 0), stop="error", error="overloaded"), 9),
        entry("context_edit", "ce2", "e2", 10, targetId="e2", replacement=None),
        msg("a3", "ce2", a("again", usage(60, 6)), 11),
    ]


def build_corpus(folder: Path) -> dict[str, Path]:
    """P (parent), F (fork of P), C (clone of F), O (overflow), L (look-alike of P, no parentSession)."""
    p_entries = parent_entries()
    p = write_session(folder / "p.jsonl", [header("P"), *p_entries])
    by_id = {e["id"]: e for e in p_entries}
    fork_copy = [by_id["u1"], by_id["a1"], by_id["t1"]]
    f_new = msg("a5", "t1", a("fork", usage(30, 3)), 20)
    f = write_session(folder / "f.jsonl", [header("F", parentSession=str(p)), *fork_copy, f_new])
    c = write_session(folder / "sub" / "c.jsonl", [header("C", parentSession=str(f)), *fork_copy, f_new])
    o = write_session(folder / "o.jsonl", [header("O", cwd="/other"), *overflow_entries()])
    # The same ids and timestamps as P, but no parentSession: counted on its own.
    lookalike = write_session(folder / "l.jsonl", [header("L"), by_id["u1"], by_id["a1"]])
    return {"P": p, "F": f, "C": c, "O": o, "L": lookalike}
