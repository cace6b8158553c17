"""Producing compaction summaries with a model (compaction.md §6).

``compact`` turns a :class:`~pi_lab.compaction.preparation.CompactionPreparation` into a
:class:`CompactionResult`. It never writes the session: the caller appends the result (and
must check its own abort signal first, since an aborted summary call returns whatever text
came back).

Requests carry the summarisation system prompt and one user message holding the serialised
conversation plus instructions. No ``max_tokens`` is sent (the provider layer uses the
model's own limit); ``reasoning`` is the caller's thinking level when the model reasons; each
call gets a fresh session id so nothing is cached between summary calls.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from pi_lab.compaction import prompts  # pi's summarisation texts, named where they are used
from pi_lab.compaction.file_ops import compute_file_lists, format_file_operations
from pi_lab.compaction.retry import retry_assistant_call
from pi_lab.compaction.serialization import serialize_conversation
from pi_lab.errors import PiLabError
from pi_lab.llm.protocol import check_options

if TYPE_CHECKING:  # annotations only; typing has Unpack from 3.11
    from typing_extensions import Unpack

__all__ = [
    "SummarizationError",
    "SummaryResult",
    "CompactionResult",
    "summarization_failure",
    "has_tool_call",
    "response_text",
    "reasoning_for",
    "build_summarization_context",
    "complete_summarization",
    "SummaryRequestOptions",
    "request_summary",
    "history_prompt",
    "turn_prefix_prompt",
    "generate_summary_with_usage",
    "generate_summary",
    "generate_turn_prefix_summary",
    "compact",
    "FIRST_KEPT_ENTRY_MISSING",
]

FIRST_KEPT_ENTRY_MISSING = "First kept entry has no UUID - session may need migration"


class SummarizationError(PiLabError, RuntimeError):
    """A summary request (compaction or branch summary) failed, was truncated, or tried to call a tool.

    Also a ``RuntimeError``, the type it had before."""


@dataclass(frozen=True, slots=True)
class SummaryResult:
    text: str
    usage: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What ``compact`` returns; ``AgentSession`` appends it as a ``compaction`` entry.

    ``details`` is ``{"readFiles": [...], "modifiedFiles": [...]}`` for pi-generated results.
    ``estimated_tokens_after`` is filled in by the caller after appending (never stored).
    """

    summary: str
    first_kept_entry_id: str
    tokens_before: int | float
    usage: dict[str, Any] | None = None
    details: dict[str, Any] | None = field(default=None)
    estimated_tokens_after: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """pi's ``CompactionResult`` object (camelCase keys, unset optional fields left out)."""
        out: dict[str, Any] = {
            "summary": self.summary,
            "firstKeptEntryId": self.first_kept_entry_id,
            "tokensBefore": self.tokens_before,
        }
        if self.estimated_tokens_after is not None:
            out["estimatedTokensAfter"] = self.estimated_tokens_after
        if self.usage is not None:
            out["usage"] = self.usage
        if self.details is not None:
            out["details"] = self.details
        return out


# --- response checks ------------------------------------------------------------------------


def summarization_failure(response: Mapping[str, Any], label: str) -> str | None:
    """Why a summary response cannot be used (error or token-cap truncation), else None."""
    stop_reason = response.get("stopReason")
    if stop_reason == "error":
        return f"{label} failed: {response.get('errorMessage') or 'Unknown error'}"
    if stop_reason == "length":
        return f"{label} failed: generation hit the token cap and the summary is incomplete"
    return None


def has_tool_call(response: Mapping[str, Any]) -> bool:
    content = response.get("content")
    return isinstance(content, list) and any(
        isinstance(block, Mapping) and block.get("type") == "toolCall" for block in content
    )


def response_text(response: Mapping[str, Any]) -> str:
    """The text blocks of a response joined with newlines."""
    content = response.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        block.get("text") or ""
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text"
    )


def _checked_summary(response: Mapping[str, Any], label: str) -> SummaryResult:
    """The summary in ``response``, or :class:`SummarizationError` under compaction's rules."""
    failure = summarization_failure(response, label)
    if failure:
        raise SummarizationError(failure)
    if has_tool_call(response):
        raise SummarizationError(f"{label} attempted to call a tool")
    return SummaryResult(response_text(response), response.get("usage"))


# --- requests -------------------------------------------------------------------------------


def _model_flag(model: Any, attr: str, json_key: str) -> Any:
    if isinstance(model, Mapping):
        return model.get(json_key, model.get(attr))
    return getattr(model, attr, None)


def reasoning_for(model: Any, thinking_level: str | None) -> str | None:
    """The ``reasoning`` option: the thinking level, for reasoning models, unless unset or ``off``."""
    if thinking_level and thinking_level != "off" and _model_flag(model, "reasoning", "reasoning"):
        return thinking_level
    return None


def build_summarization_context(prompt_text: str) -> dict[str, Any]:
    """System prompt plus one user message carrying ``prompt_text``."""
    return {
        "system_prompt": prompts.SUMMARIZATION_SYSTEM_PROMPT,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": prompt_text}], "timestamp": int(time.time() * 1000)}
        ],
        "tools": None,
    }


def _new_session_id() -> str:
    from pi_lab.session.ids import uuid7

    return uuid7()


async def complete_summarization(
    client: Any,
    model: Any,
    context: dict[str, Any],
    *,
    reasoning: str | None = None,
    session_id: str | None = None,
    signal: Any = None,
    retry: Any = None,
    callbacks: Any = None,
) -> dict[str, Any]:
    """One summary request through ``client.complete``, retried per ``retry`` (§6.6)."""
    sid = session_id or _new_session_id()

    async def produce() -> dict[str, Any]:
        return await client.complete(model, context, reasoning=reasoning, cancel=signal, session_id=sid)

    return await retry_assistant_call(produce, retry, signal, callbacks)


def _convert(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    from pi_lab.llm.convert import convert_to_llm

    return convert_to_llm(list(messages))


def history_prompt(
    messages: Sequence[Mapping[str, Any]],
    previous_summary: str | None = None,
    custom_instructions: str | None = None,
) -> str:
    """The user-message text of a history summary request (initial or update form)."""
    base = prompts.UPDATE_SUMMARIZATION_PROMPT if previous_summary else prompts.SUMMARIZATION_PROMPT
    if custom_instructions:
        base = base + prompts.ADDITIONAL_FOCUS + custom_instructions
    text = "<conversation>\n" + serialize_conversation(_convert(messages)) + "\n</conversation>\n\n"
    if previous_summary:
        text += "<previous-summary>\n" + previous_summary + "\n</previous-summary>\n\n"
    return text + base


def turn_prefix_prompt(messages: Sequence[Mapping[str, Any]], custom_instructions: str | None = None) -> str:
    """The user-message text of a split-turn prefix summary request."""
    text = (
        "# Conversation\n"
        + serialize_conversation(_convert(messages))
        + "\n\n# Instructions\n"
        + prompts.TURN_PREFIX_SUMMARIZATION_PROMPT
    )
    if custom_instructions:
        text += prompts.ADDITIONAL_FOCUS + custom_instructions
    return text


class SummaryRequestOptions(TypedDict, total=False):
    """How a summary request is made: the keywords of every function here that makes one, and
    of ``generate_branch_summary``.

    ``thinking_level`` (sent as ``reasoning`` to reasoning models), ``retry`` (a
    ``RetryPolicy``), ``callbacks`` (``RetryCallbacks``), ``signal`` (abort flag), ``cancel``
    (the older name of ``signal``, used when ``signal`` is not given), ``session_id`` (default:
    a fresh one per request).
    """

    thinking_level: str | None
    retry: Any
    callbacks: Any
    signal: Any
    cancel: Any
    session_id: str | None


SUMMARY_REQUEST_OPTION_NAMES = frozenset(SummaryRequestOptions.__annotations__)


async def request_summary(
    prompt_text: str, client: Any, model: Any, **options: Unpack[SummaryRequestOptions]
) -> dict[str, Any]:
    """One summarisation request (history, turn prefix or branch) with its retries; the
    response is returned unchecked, each caller applies its own failure rules (§6.5)."""
    check_options(options, SUMMARY_REQUEST_OPTION_NAMES, "request_summary")
    signal = options.get("signal")
    return await complete_summarization(
        client,
        model,
        build_summarization_context(prompt_text),
        reasoning=reasoning_for(model, options.get("thinking_level")),
        session_id=options.get("session_id"),
        signal=signal if signal is not None else options.get("cancel"),
        retry=options.get("retry"),
        callbacks=options.get("callbacks"),
    )


async def generate_summary_with_usage(
    messages: Sequence[Mapping[str, Any]],
    client: Any,
    model: Any,
    *,
    reserve_tokens: int | None = None,
    custom_instructions: str | None = None,
    previous_summary: str | None = None,
    **options: Unpack[SummaryRequestOptions],
) -> SummaryResult:
    """Summarise ``messages`` (updating ``previous_summary`` if given); raises on failure.

    ``reserve_tokens`` is accepted for callers of the older signature and not used.
    """
    del reserve_tokens
    prompt = history_prompt(messages, previous_summary, custom_instructions)
    return _checked_summary(await request_summary(prompt, client, model, **options), "Summarization")


async def generate_summary(messages: Sequence[Mapping[str, Any]], client: Any, model: Any, **options: Any) -> str:
    """:func:`generate_summary_with_usage` returning only the text."""
    return (await generate_summary_with_usage(messages, client, model, **options)).text


async def generate_turn_prefix_summary(
    messages: Sequence[Mapping[str, Any]],
    client: Any,
    model: Any,
    *,
    custom_instructions: str | None = None,
    **options: Unpack[SummaryRequestOptions],
) -> SummaryResult:
    """Summarise the early part of a turn that is cut in the middle (§6.3); raises on failure."""
    prompt = turn_prefix_prompt(messages, custom_instructions)
    return _checked_summary(await request_summary(prompt, client, model, **options), "Turn prefix summarization")


def _add_usages(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    from pi_lab.llm.model import add_usages

    return add_usages(a, b)


async def compact(
    preparation: Any,
    client: Any,
    model: Any,
    *,
    custom_instructions: str | None = None,
    **options: Unpack[SummaryRequestOptions],
) -> CompactionResult:
    """Generate the summary for ``preparation`` (§6.4). Writes nothing; raises on failure."""
    check_options(options, SUMMARY_REQUEST_OPTION_NAMES, "compact")
    to_summarize = list(preparation.messages_to_summarize)
    prefix = list(preparation.turn_prefix_messages)
    previous = preparation.previous_summary

    split = preparation.is_split_turn and bool(prefix)
    # A split turn with nothing before it summarises only the prefix; otherwise the history is
    # always summarised (even when empty), then the prefix of a split turn.
    history_text, history_usage = (previous if previous is not None else prompts.NO_PRIOR_HISTORY), None
    if to_summarize or not split:
        history = await generate_summary_with_usage(
            to_summarize, client, model, custom_instructions=custom_instructions, previous_summary=previous, **options
        )
        history_text, history_usage = history.text, history.usage
    if split:
        turn = await generate_turn_prefix_summary(
            prefix, client, model, custom_instructions=custom_instructions, **options
        )
        summary = history_text + prompts.SPLIT_TURN_SEPARATOR + turn.text
        usage = _add_usages(history_usage, turn.usage) if history_usage is not None else turn.usage
    else:
        summary, usage = history_text, history_usage

    read_files, modified_files = compute_file_lists(preparation.file_ops)
    summary += format_file_operations(read_files, modified_files)

    if not preparation.first_kept_entry_id:
        raise SummarizationError(FIRST_KEPT_ENTRY_MISSING)

    return CompactionResult(
        summary=summary,
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        usage=usage,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
    )
