""""What the model sees" at every entry of a session, delta-encoded, without a kernel.

``context_at`` (pi_lab/view/context.py) projects a whole root→entry path; doing that for
every entry costs O(n·depth). Here the tree is walked once in pi's flattened order (a
pre-order walk: each entry's ancestors are the entries on the stack), and for most entries
the context is the parent's plus the entry's own projected messages:

* the token estimate (pi's estimateProjectedContextTokens) comes from the incremental walker
  of ``pi_lab.view.timeline`` (``SharedContextWalk``), snapshotted at branch points so a sibling
  branch resumes from its parent's state;
* the entry's own message rows are ``context_at([entry])`` — the same function on a one-entry
  path, so there is no second copy of the row format.

An entry whose projection is not an append (a compaction, a context edit, a branch summary,
an entry an earlier context edit targets, a system message) gets ``context_at`` of its whole
path, stored as a diff of its parent's rows (runs copied from them, plus new rows). ``tests/export/test_export_context.py`` checks every scalar against
``context_at`` on every entry. A row may carry ``"v"``, what the context views read of it
(views.row_extras); :func:`messages_of` leaves it out unless asked.
"""

from __future__ import annotations

import copy
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pi_lab.compaction.tokens import calculate_context_tokens, usage_anchor, whole_tokens
from pi_lab.export.views import FlatNames, projected_pairs, row_extras
from pi_lab.session._json import dumps
from pi_lab.session.projection import entry_to_messages
from pi_lab.view.context import context_at
from pi_lab.view.timeline import SharedContextWalk

__all__ = ["ContextRecord", "context_records", "iter_context_records", "messages_of", "SCALARS"]

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)

# The per-entry numbers, in the order they travel (see staticTransport.ts).
SCALARS = ("message_count", "estimated_total", "context_tokens", "measured_tokens", "trailing_tokens",
           "thinking_level", "model", "system_tokens", "compaction_id")

_FULL_TYPES = frozenset({"compaction", "context_edit", "branch_summary"})

# {"b": parent flat index (-1 for a root), "s": scalars, and either "m": the rows added after the
# parent's, or "d": the rows as a diff of the parent's (see _diff)}
ContextRecord = dict[str, Any]


def messages_of(records: Sequence[ContextRecord], index: int,
                known: dict[int, list[dict[str, Any]]] | None = None, *, extras: bool = False) -> list[dict[str, Any]]:
    """The rows of "what the model sees" at flat entry ``index`` (staticTransport.ts does the same).

    ``known`` maps flat indexes to their rows already computed: the walk back stops at the
    nearest one (on a deep session, the last compaction) instead of the root. The rows are
    context_at's; with ``extras`` they keep the ``"v"`` the context views read (views.py)."""
    chain: list[ContextRecord] = []
    rows: list[dict[str, Any]] = []
    while index >= 0:
        if known is not None and index in known:
            rows = list(known[index])
            break
        record = records[index]
        chain.append(record)
        index = record["b"]
    for record in reversed(chain):
        if "d" in record:
            base = rows
            rows = []
            for op in record["d"]:
                if isinstance(op, list):
                    rows.extend(base[op[0]:op[1]])
                else:
                    rows.append(op)
        else:
            rows.extend(record["m"])
    if extras:
        return rows
    return [{k: x for k, x in row.items() if k != "v"} if isinstance(row, dict) and "v" in row else row for row in rows]


def _key(row: Any) -> Any:
    """A row's JSON text, which the chunk writer produces for it anyway: two rows with the same
    text reach the page as the same row, so one may be copied for the other. Written without
    recursion (a field can nest thousands deep; ``repr`` and ``==`` recurse); a row the writer
    refuses gets a key of its own (it is then sent as a new row, never copied)."""
    try:
        return dumps(row)
    except (TypeError, ValueError):
        return object()


def _diff(base: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[Any]:
    """``rows`` as runs copied from ``base`` (``[start, end]``) and new rows (dicts).

    A compaction keeps a tail of the rows, a context edit changes one row, a branch summary
    appends one: greedy matching in order finds those runs."""
    keys = [_key(row) for row in base]
    where: dict[Any, list[int]] = {}
    for position, key in enumerate(keys):
        where.setdefault(key, []).append(position)
    ops: list[Any] = []
    at = 0
    for row in rows:
        key = _key(row)
        if at < len(base) and keys[at] == key and ops and isinstance(ops[-1], list) and ops[-1][1] == at:
            ops[-1][1] = at + 1
            at += 1
            continue
        found = -1
        for q in where.get(key, ()):
            if q >= at:
                found = q
                break
        if found < 0:
            ops.append(row)
        else:
            ops.append([found, found + 1])
            at = found + 1
    return ops


def _snapshot(walk: SharedContextWalk) -> SharedContextWalk:
    """A copy of the walker's state that later additions on another branch do not touch."""
    twin = copy.copy(walk)
    twin.position = dict(walk.position)
    twin.edits = dict(walk.edits)
    twin.pending = set(walk.pending)
    twin.system_sources = list(walk.system_sources)
    return twin


def _call(entry: Entry) -> tuple[dict[str, Any], Any] | None:
    message = entry.get("message") if entry.get("type") == "message" else None
    if isinstance(message, dict) and message.get("role") == "assistant":
        usage = usage_anchor(message)
        return message, (calculate_context_tokens(usage) if usage is not None else None)
    return None


def context_records(entries: Sequence[Entry], parents: Sequence[int]) -> list[ContextRecord]:
    """One record per entry of a flattened tree (``FlatTree.entries`` / ``parents``)."""
    return list(iter_context_records(entries, parents))


def iter_context_records(entries: Sequence[Entry], parents: Sequence[int],
                         embedded: Callable[[int], bool] | None = None,
                         texts: dict[str, int] | None = None) -> Iterator[ContextRecord]:
    """The records of :func:`context_records` one at a time, in flat order: a notebook
    snapshot that stops at its size limit computes only the records it embeds. ``embedded``
    (views.row_extras) says which entries the page gets whole, ``texts`` which long texts its
    header holds.

    Nothing is kept per entry once its children are done: a record's scalars and the walk's
    state at a branch point live until its last child is reached, and the rows a rewriting
    record is diffed against are projected again from its parent's path (the rows the page
    rebuilds there, which tests/export/test_export_context.py checks equal context_at's). A
    linear session of a million entries would otherwise hold every record until the end."""
    count = len(entries)
    left = array("l", bytes(array("l").itemsize * count))  # children still to come
    for p in parents:
        if p >= 0:
            left[p] += 1
    path: list[Entry] = []
    path_flat = array("l")  # the flat index of each entry of ``path``
    depth = array("l", bytes(array("l").itemsize * count))
    saved: dict[int, SharedContextWalk] = {}
    scalars: dict[int, list[Any]] = {}
    walk = SharedContextWalk(path)
    # Which flat entry the page finds for an id (the last with it), a bit per entry: the
    # maps of every entry's object and id to its flat index held 0.15 KB an entry to the end.
    names = FlatNames([entry.get("id") for entry in entries])

    def rows_of(rows: list[dict[str, Any]], branch: list[Entry], flat: Sequence[int]) -> list[dict[str, Any]]:
        """``rows`` (context_at's at the end of ``branch``, whose entries are at ``flat``) with
        what the context views read."""
        pairs = projected_pairs(branch)
        sources = {id(source) for source, _k, _message in pairs}
        flat_of = {id(entry): at for entry, at in zip(branch, flat) if id(entry) in sources}
        return row_extras(rows, pairs, flat_of, names, embedded, texts)

    for i in range(count):
        entry = entries[i]
        p = parents[i]
        if i > 0 and p != i - 1:
            # Back up to the parent (pre-order: the previous entry ended another branch).
            if p < 0:  # another root: an empty path
                walk = SharedContextWalk(path)
                del path[:]
                del path_flat[:]
            else:
                walk = _snapshot(saved[p])
                del path[depth[p] + 1:]
                del path_flat[depth[p] + 1:]
            walk.path = path
        depth[i] = depth[p] + 1 if p >= 0 else 0
        index = len(path)
        path.append(entry)
        path_flat.append(i)
        edited = walk._edit_for(entry) if isinstance(entry.get("id"), str) else None
        own_messages = entry_to_messages(entry)
        kind = entry.get("type")
        # A type can be any JSON value (an object is unhashable): only a string names one.
        full = (p < 0 or (isinstance(kind, str) and kind in _FULL_TYPES) or edited is not None
                or any(m.get("role") == "system" for m in own_messages))
        call = _call(entry)
        walk.add(index, entry, call) if call is not None else walk.add(index, entry)
        record: ContextRecord
        if full:
            result = context_at(path)
            rows = rows_of(result["messages"], path, path_flat)
            values = [result[k] for k in SCALARS]
            if p < 0:
                record = {"b": -1, "m": rows, "s": values}
            else:
                before = path[:-1]
                record = {"b": p, "d": _diff(rows_of(context_at(before)["messages"], before, path_flat), rows), "s": values}
        else:
            own = context_at([entry])
            own["messages"] = rows_of(own["messages"], [entry], (i,))
            base = scalars[p]
            anchored = walk.anchor_tokens is not None
            tokens, _ = walk.estimate()
            tokens = whole_tokens(tokens)
            measured = whole_tokens(walk.anchor_tokens) if anchored else 0
            trailing = whole_tokens(walk.trailing) if anchored else tokens
            thinking = own["thinking_level"] if entry.get("type") == "thinking_level_change" else base[5]
            model = own["model"] if own["model"] is not None else base[6]
            record = {"b": p, "m": own["messages"],
                      "s": [base[0] + own["message_count"], base[1] + own["estimated_total"], tokens,
                            measured, trailing, thinking, model, base[7], base[8]]}
        if p >= 0:
            left[p] -= 1
            if not left[p]:  # its last child: nothing comes back to it
                scalars.pop(p, None)
                saved.pop(p, None)
        if left[i]:
            scalars[i] = record["s"]
            if left[i] > 1:
                saved[i] = _snapshot(walk)
        yield record
