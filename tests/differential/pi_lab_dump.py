"""pi_lab's side of the differential comparison: the same JSON document that
`bench/pi_runner/run.mjs dump` prints for pi, computed with pi_lab.

    python tests/differential/pi_lab_dump.py session.jsonl [--inplace]

Field names follow run.mjs (pi's camelCase). Only public pi_lab names are used; where the
engine's result objects could reasonably be dataclasses or dicts, both are accepted.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_KEEPS = (1, 100, 2000, 20000)


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    """Attribute or key lookup under the first name that exists (snake_case or camelCase)."""
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return default


def js_clean(value: Any) -> Any:
    """What JSON.stringify would make of a value: NaN/Infinity become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if type(value).__name__ == "NonObjectLine":  # a line like 7 or "x": JSON.stringify gives the value
        return js_clean(value.value)
    if isinstance(value, dict):
        return {k: js_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [js_clean(v) for v in value]
    return value


def _projected(source: dict[str, Any], messages: int) -> dict[str, Any]:
    """One projection row as run.mjs writes it (an entry without an id: the key is absent)."""
    return {"id": source["id"], "messages": messages} if "id" in source else {"messages": messages}


def tree_rows(roots: list[Any]) -> list[dict[str, Any]]:
    """Pre-order rows (id, parent row index, label, labelTimestamp) without recursion; a node
    reached twice is emitted again but not descended into (same rule as run.mjs)."""
    rows: list[dict[str, Any]] = []
    seen: set[int] = set()
    stack = [(node, -1) for node in reversed(list(roots))]
    while stack:
        node, parent = stack.pop()
        index = len(rows)
        entry = _get(node, "entry")
        rows.append({
            "id": entry.get("id"),
            "parent": parent,
            "label": _get(node, "label"),
            "labelTimestamp": _get(node, "label_timestamp", "labelTimestamp"),
        })
        if id(node) in seen:
            continue
        seen.add(id(node))
        for child in reversed(list(_get(node, "children", default=[]))):
            stack.append((child, index))
    return rows


def branch_messages(branch: list[dict]) -> list[dict]:
    return [e["message"] for e in branch if e.get("type") == "message" and e.get("message")]


def _estimate_dict(est: Any) -> dict[str, Any]:
    return {
        "tokens": _get(est, "tokens"),
        "usageTokens": _get(est, "usage_tokens", "usageTokens"),
        "trailingTokens": _get(est, "trailing_tokens", "trailingTokens"),
        "lastUsageIndex": _get(est, "last_usage_index", "lastUsageIndex"),
    }


def _describe_preparation(compaction: Any, prep: Any) -> dict[str, Any] | None:
    if prep is None:
        return None
    summarize = _get(prep, "messages_to_summarize", "messagesToSummarize")
    prefix = _get(prep, "turn_prefix_messages", "turnPrefixMessages")
    ops = _get(prep, "file_ops", "fileOps")
    est = compaction.estimate_tokens
    return {
        "firstKeptEntryId": _get(prep, "first_kept_entry_id", "firstKeptEntryId"),
        "isSplitTurn": _get(prep, "is_split_turn", "isSplitTurn"),
        "tokensBefore": _get(prep, "tokens_before", "tokensBefore"),
        "messagesToSummarize": len(summarize),
        "turnPrefixMessages": len(prefix),
        "messagesToSummarizeTokens": sum(est(m) for m in summarize),
        "turnPrefixTokens": sum(est(m) for m in prefix),
        "previousSummary": _get(prep, "previous_summary", "previousSummary"),
        "fileOps": {k: sorted(_get(ops, k, default=[]) or []) for k in ("read", "written", "edited")},
    }


def _guard(fn):
    try:
        return fn()
    except Exception as exc:  # report like run.mjs does, the comparison decides
        return {"error": f"{type(exc).__name__}: {exc}"}


def dump(path: str | os.PathLike[str], inplace: bool = False, keeps=DEFAULT_KEEPS) -> dict[str, Any]:
    from pi_lab.session import SessionManager

    try:
        import pi_lab.compaction as compaction
    except Exception:  # not written yet: compaction fields are absent
        compaction = None

    tmp = None
    if inplace:
        target = str(path)
    else:
        tmp = tempfile.mkdtemp(prefix="pi-lab-dump-")
        target = os.path.join(tmp, os.path.basename(str(path)))
        shutil.copyfile(path, target)
    out: dict[str, Any] = {"impl": "pi_lab", "file": str(path)}
    try:
        sm = None
        try:
            sm = SessionManager.open(target)
            sm.end_unfinished_line()  # pi ends an unfinished last line on open; pi_lab when asked (issue 21)
        except Exception as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        data = Path(target).read_bytes()
        out["afterOpen"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        if sm is None:
            return out
        branch = sm.get_branch()
        out["lazyBodies"] = getattr(sm, "lazy_bodies", False)  # pi_lab only (not compared with pi)
        out["header"] = sm.get_header()
        out["entries"] = sm.get_entries()
        if sm.leaf_id is not None or sm._leaf_id is None:
            # pi's leaf is undefined (the key is then absent from its JSON) when the last line
            # has no id, e.g. a line that is a JSON number; pi_lab keeps that state as UNSET.
            out["leafId"] = sm.leaf_id
        out["branch"] = [e.get("id") for e in branch]
        out["sessionName"] = sm.get_session_name()
        out["tree"] = _guard(lambda: tree_rows(sm.get_tree()))
        out["contextEntries"] = _guard(lambda: [e.get("id") for e in sm.build_context_entries()])
        out["projection"] = _guard(lambda: [
            _projected(_get(p, "source_entry", "source"), len(_get(p, "messages")))
            for p in sm.build_session_projection().entries
        ])
        ctx = _guard(sm.build_session_context)
        if isinstance(ctx, dict) and "error" in ctx:
            out["context"] = ctx
            messages: list = []
        else:
            messages = list(ctx.messages)
            out["context"] = {
                "messages": messages,
                "thinkingLevel": _get(ctx, "thinking_level", "thinkingLevel"),
                "model": _get(ctx, "model"),
            }
        if compaction is not None:
            out["estimate"] = _guard(lambda: {
                "context": _estimate_dict(compaction.estimate_context_tokens(messages)),
                "projected": _estimate_dict(
                    compaction.estimate_projected_context_tokens(sm.build_session_projection(), branch)),
                "perMessage": [compaction.estimate_tokens(m) for m in messages],
                "branchMessages": _estimate_dict(compaction.estimate_context_tokens(branch_messages(branch))),
            })
            settings = compaction.CompactionSettings()
            prepare = {"default": _guard(lambda: _describe_preparation(
                compaction, compaction.prepare_compaction(branch, settings)))}
            for k in keeps:
                prepare[str(k)] = _guard(lambda k=k: _describe_preparation(
                    compaction, compaction.prepare_compaction(branch, compaction.CompactionSettings(keep_recent_tokens=k))))
            out["prepareCompaction"] = prepare
        return js_clean(out)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(dump(args[0], inplace="--inplace" in args), ensure_ascii=False))
