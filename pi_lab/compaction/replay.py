"""What if the session had been compacted under other settings? (teaching: issue "what if").

:func:`replay` walks one path of a session (root to leaf) as pi's agent lived it, model call by
model call, and applies pi's automatic threshold compaction with the settings it is given
(context window, reserve tokens, keep recent tokens) instead of the ones the session ran with.
It answers, at every model call, what the model would have seen and pi's estimate of it, and
for every compaction that would have fired, where (pi's own check points and threshold rule),
the cut point, what is summarized and what is kept (split turns included), and the summary.

It writes nothing: the session is only read; the hypothetical entries live in the returned
:class:`Replay` and carry ``"whatIf": True``.

How each number is made (every rule is the engine's own function):

* The path is the session's path with its real compactions taken out; hypothetical
  compactions are put where the rules fire. Branch summaries, labels, model and thinking
  changes, context edits stay where they were.
* Check points, as pi's ``AgentSession`` has them (agent-loop.md §9): after a model call that
  ends a run (stop reason other than ``toolUse``), with the call's measured usage
  (``calculate_context_tokens``) or, without usable usage, pi's estimate of the messages;
  and before the next model call inside a run, with pi's projected estimate
  (``estimate_projected_context_tokens``). ``should_compact`` decides; ``prepare_compaction``
  finds the cut point on the hypothetical path.
* Where the hypothetical path and the real one agree (same compactions so far), a call's
  measured usage is exact. Where they differ, the provider never measured the hypothetical
  context: the call's tokens are its measured usage corrected by pi's estimate of the
  difference between the two contexts (``estimated`` is then True). So at the session's own
  settings the replay fires where the session's real threshold compactions are, and reuses
  their summaries (``real_entry_id``) instead of writing new ones.
* A hypothetical compaction that the session never had gets its summary from ``summarizer``:
  the offline model's extractive summary by default (no network), or a real client.

Not modelled: overflow recovery (a real compaction after a context-overflow error is dropped
from the path like any other, and listed in :attr:`Replay.dropped_real_compactions`), and
model calls that would have gone differently because the model saw something else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from pi_lab.compaction.context_walk import ContextWalk
from pi_lab.compaction.preparation import CompactionPreparation, prepare_compaction
from pi_lab.compaction.settings import CompactionSettings
from pi_lab.compaction.tokens import (
    calculate_context_tokens,
    estimate_context_tokens,
    should_compact,
    usage_anchor,
    whole_tokens,
)
from pi_lab.errors import PiLabError
from pi_lab.session.projection import SessionContext, build_session_context

if TYPE_CHECKING:  # annotations only; typing has Unpack and NotRequired from 3.11
    from typing_extensions import NotRequired, Unpack

__all__ = ["replay", "Replay", "ReplayError"]

Entry = dict[str, Any]


class ReplayError(PiLabError, ValueError):
    """The replay cannot run: an unknown leaf, or settings pi would reject."""


@dataclass
class Replay:
    """The result of :func:`replay`: what the model would have seen under other settings.

    ``calls``: one dict per model call on the path (``entry_id``, ``context_tokens``: the
    tokens of the context it would have been sent, ``measured_tokens``: what the provider
    measured for the real call, ``estimated``: True when ``context_tokens`` is corrected by an
    estimate, ``compaction_id``: the hypothetical compaction in force or None).
    ``compactions``: in path order, one dict per compaction that would fire (``id``,
    ``after_entry_id``, ``first_kept_entry_id``, ``tokens_before``, ``is_split_turn``,
    ``check_point``, ``summary``, ``summarized_entry_ids``, ``kept_entry_ids``,
    ``real_entry_id``: the session's own compaction it coincides with, or None).
    """

    settings: CompactionSettings
    context_window: int
    leaf_id: str | None
    calls: list[dict[str, Any]] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    dropped_real_compactions: list[str] = field(default_factory=list)
    path: list[Entry] = field(default_factory=list, repr=False)
    """The hypothetical path, root to leaf: the session's entries (some with corrected usage)
    and the hypothetical compactions."""

    @property
    def threshold(self) -> int:
        """The context size above which compaction fires: window minus reserve."""
        return self.context_window - self.settings.reserve_tokens

    def context_at(self, entry_id: str | None = None) -> SessionContext:
        """What the model would have seen with the leaf at ``entry_id`` (default: the end)."""
        end = len(self.path)
        if entry_id is not None:
            end = next((i + 1 for i, e in enumerate(self.path) if e.get("id") == entry_id), 0)
            if not end:
                raise ReplayError(f"entry {entry_id!r} is not on the replayed path")
        return build_session_context(self.path[:end])

    def compaction(self, compaction_id: str) -> dict[str, Any]:
        """The compaction record with this id."""
        for record in self.compactions:
            if record["id"] == compaction_id:
                return record
        raise ReplayError(f"no hypothetical compaction {compaction_id!r}")


class ReplaySettings(TypedDict):
    """The keywords of :func:`replay` (Python checks them in :func:`replay_async`)."""

    context_window: int
    reserve_tokens: int
    keep_recent_tokens: int
    leaf: NotRequired[str | None]
    summarizer: NotRequired[Any]


def replay(session: Any, **settings: Unpack[ReplaySettings]) -> Replay:
    """Replay ``session``'s path to ``leaf`` under other compaction settings; writes nothing.

    ``session`` is a :class:`~pi_lab.session.SessionManager` or what :func:`pi_lab.open_session`
    returns (:func:`pi_lab.replay` also takes a path). ``summarizer`` writes the summaries of compactions
    the session never had: a model client with a ``model`` attribute (``OfflineModel()``, the
    default) or a ``(client, model)`` pair."""
    from pi_lab.llm.protocol import run_sync

    return run_sync(replay_async(session, **settings))


async def replay_async(
    session: Any,
    *,
    context_window: int,
    reserve_tokens: int,
    keep_recent_tokens: int,
    leaf: str | None = None,
    summarizer: Any = None,
) -> Replay:
    """:func:`replay` for a caller already inside an event loop."""
    try:
        settings = CompactionSettings(reserve_tokens=reserve_tokens, keep_recent_tokens=keep_recent_tokens)
    except PiLabError as error:
        raise ReplayError(str(error)) from error
    if not isinstance(context_window, int) or context_window <= 0:
        raise ReplayError(f"context_window must be a positive whole number of tokens, not {context_window!r}")
    session = _as_session(session)
    leaf_id = leaf if leaf is not None else session.leaf_id
    if leaf is not None and session.get_entry(leaf) is None:
        raise ReplayError(f"entry {leaf!r} is not in the session")
    real_path = list(session.get_branch(leaf_id)) if leaf_id is not None else []
    result = Replay(settings=settings, context_window=context_window, leaf_id=leaf_id)
    await _Walker(result, real_path, summarizer).run()
    return result


def _as_session(session: Any) -> Any:
    # Opening a path needs the format adapters, a layer above this one: pi_lab.replay opens it.
    if isinstance(session, (str, os.PathLike)):
        raise ReplayError("pi_lab.compaction.replay takes an open session; pi_lab.replay takes a "
                          "session file's path or an open session")
    if not hasattr(session, "get_branch") or not hasattr(session, "leaf_id"):
        raise ReplayError(f"replay needs a session file's path or an open session, not {type(session).__name__}")
    return session


def _message(entry: Entry) -> dict[str, Any] | None:
    if entry.get("type") != "message":
        return None
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def _is_call(entry: Entry) -> bool:
    message = _message(entry)
    return message is not None and message.get("role") == "assistant"


class _Walker:
    """One replay: the real path walked once, the hypothetical path built beside it."""

    def __init__(self, result: Replay, real_path: list[Entry], summarizer: Any):
        self.result = result
        self.real_path = real_path
        self.summarizer = summarizer
        self.real = ContextWalk()  # the session as it was (with its real compactions)
        self.hypo = ContextWalk()  # the session under the replay's settings
        self.in_sync = True  # the hypothetical compactions so far are the real ones
        self.re_parent: str | None = None  # the next real entry hangs under this hypothetical entry

    async def run(self) -> None:
        path = self.real_path
        i = 0
        while i < len(path):
            entry = path[i]
            if entry.get("type") == "compaction":
                self.real.enter(entry)
                # A real compaction the replay did not reproduce right here: the paths now differ.
                if not self._reproduced(entry):
                    self.result.dropped_real_compactions.append(entry["id"])  # a path entry has an id
                    self.in_sync = False
                    # the entries that hung under it hang under the hypothetical path's last one
                    if self.re_parent is None and self.result.path:
                        self.re_parent = self.result.path[-1].get("id")
                i += 1
                continue
            call_tokens = self._enter(entry)
            upcoming = path[i + 1] if i + 1 < len(path) else None
            real_next = upcoming if upcoming is not None and upcoming.get("type") == "compaction" else None
            if _is_call(entry):
                await self._after_call(entry, call_tokens, real_next)
            elif self._before_next_call(path, i):
                tokens = self.hypo.projected()
                if should_compact(tokens, self.result.context_window, self.result.settings):
                    await self._compact(entry, tokens, "before the next model call", real_next)
            i += 1

    # ------------------------------------------------------------------ entering entries

    def _enter(self, entry: Entry) -> int | None:
        """Enter a real entry into both walks; returns the hypothetical call's context tokens."""
        is_call = _is_call(entry)
        # pi's estimates of the two contexts before this entry (only needed once they differ)
        real_before = self.real.context.plain_tokens if is_call and not self.in_sync else 0
        hypo_before = self.hypo.context.plain_tokens if is_call and not self.in_sync else 0
        self.real.enter(entry)
        hypo_entry = entry
        if self.re_parent is not None:
            hypo_entry = {**entry, "parentId": self.re_parent}
            self.re_parent = None
        if not is_call:
            self._hypo_enter(hypo_entry)
            return None
        message = _message(entry)
        assert message is not None
        measured = (whole_tokens(calculate_context_tokens(message["usage"]))
                    if usage_anchor(message) is not None else None)
        tokens = measured
        estimated = False
        if measured is not None and not self.in_sync:
            # The provider measured the real context; move that measurement by pi's estimate of
            # how the hypothetical context differs from the real one before this call.
            tokens = max(0, measured + (hypo_before - real_before))
            estimated = tokens != measured
            if estimated:
                hypo_entry = _with_context_tokens(hypo_entry, tokens, measured)
        self._hypo_enter(hypo_entry)
        if tokens is None:
            # No usable usage (an error, an aborted call): pi's estimate of what was sent.
            tokens = whole_tokens(estimate_context_tokens(self._hypo_messages_before()).tokens)
            estimated = True
        self.result.calls.append({
            "entry_id": entry.get("id"),
            "context_tokens": tokens,
            "measured_tokens": measured,
            "estimated": estimated,
            "compaction_id": self.hypo.compaction_id,
        })
        return tokens

    def _hypo_enter(self, entry: Entry) -> None:
        self.hypo.enter(entry)
        self.result.path.append(entry)

    def _hypo_messages_before(self) -> list[dict[str, Any]]:
        return build_session_context(self.result.path[:-1]).messages

    # ------------------------------------------------------------------ check points

    @staticmethod
    def _before_next_call(path: list[Entry], i: int) -> bool:
        """pi's check point 2: entry ``i`` ends a tool round inside a run, and the next entry
        that sends anything is a model call."""
        for later in path[i + 1:]:
            kind = later.get("type")
            if kind == "compaction":
                continue
            message = _message(later)
            if message is None:
                return False
            return message.get("role") == "assistant" and _inside_run(path, i)
        return False

    async def _after_call(self, entry: Entry, call_tokens: int | None, real_next: Entry | None) -> None:
        """pi's check point 3: after the last model call of a run (threshold only)."""
        message = _message(entry)
        assert message is not None
        stop = message.get("stopReason")
        if stop in ("toolUse", "aborted"):
            return
        tokens: Any = call_tokens
        if stop == "error" or usage_anchor(message) is None:
            tokens = estimate_context_tokens(build_session_context(self.result.path).messages).tokens
        if tokens is not None and should_compact(tokens, self.result.context_window, self.result.settings):
            await self._compact(entry, tokens, "after the run", real_next)

    def _reproduced(self, real_compaction: Entry) -> bool:
        last = self.result.compactions[-1] if self.result.compactions else None
        return last is not None and last["real_entry_id"] == real_compaction.get("id")

    # ------------------------------------------------------------------ compacting

    async def _compact(self, after: Entry, tokens: Any, check_point: str, real_next: Entry | None) -> None:
        preparation = prepare_compaction(self.result.path, self.result.settings)
        if preparation is None:
            return  # nothing to compact (pi starts no compaction either)
        coincides = (real_next is not None and self.in_sync
                     and real_next.get("firstKeptEntryId") == preparation.first_kept_entry_id)
        if coincides:
            assert real_next is not None
            summary, details = real_next.get("summary"), real_next.get("details")
            entry_id = real_next.get("id")
            entry: Entry = {**real_next, "parentId": after.get("id")}
        else:
            self.in_sync = False
            summary, details = await self._summarize(preparation)
            entry_id = f"whatif-{len(self.result.compactions) + 1}"
            entry = {
                "type": "compaction",
                "id": entry_id,
                "parentId": after.get("id"),
                "timestamp": after.get("timestamp"),
                "summary": summary,
                "firstKeptEntryId": preparation.first_kept_entry_id,
                "tokensBefore": preparation.tokens_before,
                "details": details,
                "whatIf": True,
            }
        summarized, kept = self._split(preparation)
        self.result.compactions.append({
            "id": entry_id,
            "after_entry_id": after.get("id"),
            "first_kept_entry_id": preparation.first_kept_entry_id,
            "tokens_before": whole_tokens(preparation.tokens_before),
            "context_tokens_at_check": whole_tokens(tokens),
            "check_point": check_point,
            "is_split_turn": preparation.is_split_turn,
            "summary": summary,
            "summarized_entry_ids": summarized,
            "kept_entry_ids": kept,
            "real_entry_id": real_next.get("id") if coincides and real_next is not None else None,
        })
        self._hypo_enter(entry)
        self.re_parent = entry_id

    def _split(self, preparation: CompactionPreparation) -> tuple[list[str], list[str]]:
        """Ids of the path entries the compaction summarizes, and of those it keeps."""
        # Every entry of a path has an id: the path was found by following them.
        ids: list[str] = [e["id"] for e in self.result.path]
        first_kept = preparation.first_kept_entry_id
        cut = ids.index(first_kept) if first_kept in ids else len(ids)
        start = 0
        for i in range(cut - 1, -1, -1):
            if self.result.path[i].get("type") == "compaction":
                start = i + 1
                break
        summarized = [ids[i] for i in range(start, cut) if self.result.path[i].get("type") == "message"]
        kept = [ids[i] for i in range(cut, len(ids)) if self.result.path[i].get("type") == "message"]
        return summarized, kept

    async def _summarize(self, preparation: CompactionPreparation) -> tuple[str, Any]:
        from pi_lab.compaction.summarize import compact

        client, model = _summarizer(self.summarizer)
        result = await compact(preparation, client, model)
        return result.summary, result.details


def _inside_run(path: list[Entry], i: int) -> bool:
    """True when the last model call before entry ``i`` asked for tools (the run goes on)."""
    for j in range(i, -1, -1):
        message = _message(path[j])
        if message is None:
            continue
        role = message.get("role")
        if role == "assistant":
            return message.get("stopReason") == "toolUse"
        if role == "user":
            return False
    return False


def _summarizer(summarizer: Any) -> tuple[Any, Any]:
    if summarizer is None:
        from pi_lab.llm import OfflineModel

        summarizer = OfflineModel()
    if isinstance(summarizer, tuple) and len(summarizer) == 2:
        return summarizer
    model = getattr(summarizer, "model", None)
    if model is None:
        raise ReplayError("summarizer must be a model client with a `model` attribute or a (client, model) pair")
    return summarizer, model


def _with_context_tokens(entry: Entry, tokens: int, measured: int) -> Entry:
    """A copy of an assistant entry whose usage says ``tokens`` of context (the hypothetical
    context), so pi's estimates on the hypothetical path anchor on it; the real measurement is
    kept beside it."""
    message = dict(entry["message"])
    usage = dict(message["usage"])
    output = usage.get("output")
    if not isinstance(output, (int, float)):
        output = 0
    usage.update({"input": max(0, tokens - output), "cacheRead": 0, "cacheWrite": 0, "totalTokens": tokens})
    message["usage"] = usage
    return {**entry, "message": message, "whatIf": {"measuredContextTokens": measured}}
