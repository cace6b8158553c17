"""Read requests of the timeline's "what if" panel: pi's compaction replayed under other settings.

:func:`pi_lab.replay` does the work; this module sends what the panel draws. Registered in
``timeline_requests.OPS``, so the widget and the Lab viewer answer them with no change of their
own (a static export has no kernel and refuses them as unknown requests: the panel says so).

* ``what_if`` ``{context_window?, reserve_tokens?, keep_recent_tokens?, leaf_id?}`` (an absent
  setting is the viewer's own): the replay of
  the branch to ``leaf_id`` (default: the current leaf), the calls as columns (``tokens`` per
  call, ``estimated`` flags, the hypothetical compaction in force as an index into
  ``compactions`` or -1) and the compactions that would fire, each with the index of the first
  call after it.
* ``what_if_compaction`` ``{...settings, leaf_id?, id?}``: one hypothetical compaction in full
  (``id``: its id, or an entry of the branch for the one in force there; default: the last):
  the entries it would summarize and keep (ids and row text), its split-turn flag, tokens
  before, the summary, and the real compaction it coincides with.
* ``what_if_context`` ``{...settings, leaf_id?, id?}``: what the model would see with the leaf on
  entry ``id`` (default: the branch's end) under those settings (``hypothetical``, the shape of ``context_at``) beside what it
  did see (``real``).

The replay runs inside the request (the widget answers read requests on the kernel's thread), so
it is bounded: a branch with more than :data:`MAX_CALLS` model calls is refused with a message
saying so (a 450-call session with 170 hypothetical compactions replays in about 2 s on the
offline model's summaries). The last replay per session is kept (weakly), so the compaction and
context requests that follow a ``what_if`` reuse it instead of replaying again.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pi_lab.compaction.replay import Replay, ReplayError, replay
from pi_lab.session.protocol import ReadableSession
from pi_lab.view._common import ViewOfSession, manager_of, require_entry
from pi_lab.view.compare_requests import row_text
from pi_lab.view.context import context_at, context_payload
from pi_lab.view.errors import ViewError, user_text
from pi_lab.view.requests import RequestError, entry_id_arg, kind_of, request_args

__all__ = [
    "MAX_CALLS",
    "MAX_LISTED",
    "OPS",
    "what_if_compaction_payload",
    "what_if_context_payload",
    "what_if_payload",
]

MAX_CALLS = 1000
"""The most model calls on a branch the panel replays inside one request."""
MAX_LISTED = 200
"""The most summarized (or kept) entries a compaction's detail lists by name."""
_SUMMARY_CHARS = 20_000

_SETTINGS = ("context_window", "reserve_tokens", "keep_recent_tokens")

# Per session (weakly), the last replay: (key, Replay). The key holds the settings, the leaf and
# the entry count, so a session that grew or moved its leaf is replayed again.
_LAST: weakref.WeakKeyDictionary[Any, tuple[tuple[Any, ...], Replay]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _settings(view: ViewOfSession, args: Mapping[str, Any]) -> dict[str, int]:
    values = {}
    for name in _SETTINGS:
        # An absent setting is the viewer's own (the gauge's), as the panel is prefilled.
        value = args.get(name, getattr(view.settings, name))
        if value.__class__ is not int:
            raise RequestError(f"{name.replace('_', ' ')} must be a whole number of tokens, not {kind_of(value)}")
        values[name] = value
    return values


def _leaf(view: ViewOfSession, args: Mapping[str, Any]) -> str | None:
    leaf = args.get("leaf_id")
    if leaf is None or leaf == "":
        return view.sm.leaf_id
    try:
        require_entry(view.sm, leaf, "leaf_id")
    except ViewError as error:
        raise RequestError(user_text(error)) from None
    return leaf


def _count_calls(path: Sequence[Mapping[str, Any]]) -> int:
    count = 0
    for entry in path:
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "assistant":
            count += 1
    return count


def replay_for(view: ViewOfSession, args: Mapping[str, Any]) -> Replay:
    """The replay the request names: the cached one when the session, leaf and settings are
    unchanged; refused past :data:`MAX_CALLS` calls or with settings pi would reject."""
    settings = _settings(view, args)
    sm = manager_of(view.sm)
    leaf = _leaf(view, args)
    key = (leaf, len(sm.get_entries()), *settings.values())
    with _LOCK:
        try:
            held = _LAST.get(sm)
        except TypeError:  # not weakly referenceable: no cache
            held = None
        if held is not None and held[0] == key:
            return held[1]
        path = sm.get_branch(leaf) if leaf is not None else []
        calls = _count_calls(path)
        if calls > MAX_CALLS:
            raise RequestError(f"this branch has {calls:,} model calls; the what-if panel replays at most "
                         f"{MAX_CALLS:,} in the viewer (run pi_lab.replay(...) in a cell for longer ones)")
        try:
            result = replay(sm, leaf=leaf, **settings)
        except ReplayError as error:
            raise RequestError(str(error)) from None
        with contextlib.suppress(TypeError):  # not weakly referenceable: not kept
            _LAST[sm] = (key, result)
        return result


def what_if_payload(view: ViewOfSession, args: Any = None) -> dict[str, Any]:
    """The hypothetical sawtooth and its compactions (see the module docstring)."""
    result = replay_for(view, request_args(args))
    position = {record["id"]: k for k, record in enumerate(result.compactions)}
    ids: list[Any] = []
    tokens: list[int] = []
    estimated: list[bool] = []
    compaction: list[int] = []
    first_call: dict[Any, int] = {}
    for call in result.calls:
        in_force = position.get(call["compaction_id"], -1) if call["compaction_id"] is not None else -1
        if in_force >= 0 and in_force not in first_call:
            first_call[in_force] = len(ids)
        ids.append(call["entry_id"])
        tokens.append(call["context_tokens"])
        estimated.append(bool(call["estimated"]))
        compaction.append(in_force)
    compactions = []
    for k, record in enumerate(result.compactions):
        compactions.append({**_facts(record), "call": first_call.get(k, len(ids))})
    return {
        "leaf_id": result.leaf_id,
        "context_window": result.context_window,
        "reserve_tokens": result.settings.reserve_tokens,
        "keep_recent_tokens": result.settings.keep_recent_tokens,
        "threshold": result.threshold,
        "calls": {"id": ids, "tokens": tokens, "estimated": estimated, "compaction": compaction},
        "compactions": compactions,
        "dropped_real_compactions": list(result.dropped_real_compactions),
        "max_calls": MAX_CALLS,
    }


_FACTS = ("id", "after_entry_id", "first_kept_entry_id", "tokens_before", "context_tokens_at_check", "check_point",
          "is_split_turn", "real_entry_id")


def _facts(record: Mapping[str, Any]) -> dict[str, Any]:
    """A hypothetical compaction's scalars, and how many entries it summarizes and keeps."""
    return {**{key: record[key] for key in _FACTS}, "summarized_count": len(record["summarized_entry_ids"]),
            "kept_count": len(record["kept_entry_ids"])}


def _listed(sm: ReadableSession, ids: list[str]) -> list[dict[str, Any]]:

    listed = []
    for entry_id in ids[:MAX_LISTED]:
        entry = sm.get_entry(entry_id)
        listed.append({"id": entry_id, "text": row_text(entry) if entry is not None else ""})
    return listed


def what_if_compaction_payload(view: ViewOfSession, args: Any = None) -> dict[str, Any]:
    """One hypothetical compaction: what it would summarize and keep, and its summary."""
    args = request_args(args)
    result = replay_for(view, args)
    compaction_id = args.get("id")
    if compaction_id is None:
        # none named: the last one on the branch (the one in force at its leaf), as the
        # Compactions pane starts with the latest
        if not result.compactions:
            return {"id": None}
        compaction_id = result.compactions[-1]["id"]
    if not isinstance(compaction_id, str):
        raise RequestError("name the hypothetical compaction by its id")
    if all(record["id"] != compaction_id for record in result.compactions):
        # an entry of the branch names the compaction in force at it (the last one before it)
        in_force = _in_force(result, compaction_id)
        if in_force is None:
            return {"id": None}
        compaction_id = in_force
    try:
        record = result.compaction(compaction_id)
    except ReplayError as error:
        raise RequestError(str(error)) from None
    summary = record["summary"] if isinstance(record["summary"], str) else ""
    return {
        **_facts(record),
        "summary": summary[:_SUMMARY_CHARS],
        "summary_truncated": len(summary) > _SUMMARY_CHARS,
        "summarized": _listed(view.sm, record["summarized_entry_ids"]),
        "kept": _listed(view.sm, record["kept_entry_ids"]),
    }


def _in_force(result: Replay, entry_id: str) -> str | None:
    """The id of the hypothetical compaction in force at ``entry_id`` on the replayed path
    (None: none yet); an id that is not on it is refused."""
    ids = {record["id"] for record in result.compactions}
    in_force = None
    for entry in result.path:
        if entry.get("id") in ids:
            in_force = entry.get("id")
        if entry.get("id") == entry_id:
            return in_force
    raise RequestError(f"no hypothetical compaction {entry_id!r}, and no entry of that id on the replayed branch")


def what_if_context_payload(view: ViewOfSession, args: Any = None) -> dict[str, Any]:
    """What the model would see at entry ``id`` under the settings, beside what it did see."""
    args = request_args(args)
    result = replay_for(view, args)
    # none named: the end of the replayed branch (as context_at defaults to the leaf)
    entry_id = entry_id_arg(args, optional=True) or result.leaf_id
    if entry_id is None:
        return {"id": None, "hypothetical": context_at([]), "real": context_at([])}
    path = result.path
    end = next((i + 1 for i, entry in enumerate(path) if entry.get("id") == entry_id), 0)
    if not end:
        raise RequestError(f"entry {entry_id} is not on the replayed branch")
    return {"id": entry_id, "hypothetical": context_at(path[:end]), "real": context_payload(view, entry_id)}


OPS: dict[str, Callable[[Any, Any], Any]] = {
    "what_if": what_if_payload,
    "what_if_compaction": what_if_compaction_payload,
    "what_if_context": what_if_context_payload,
}
