"""Summarising the branch being left when navigating the tree (compaction.md §9,
tree-and-context.md §12).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from pi_lab.compaction.file_ops import (
    FileOperations,
    add_summary_details,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
)
from pi_lab.compaction.prompts import (
    ADDITIONAL_FOCUS,
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    NO_CONTENT_TO_SUMMARIZE,
)
from pi_lab.compaction.serialization import serialize_conversation
from pi_lab.compaction.settings import DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS
from pi_lab.compaction.summarize import (
    SUMMARY_REQUEST_OPTION_NAMES,
    SummaryRequestOptions,
    has_tool_call,
    request_summary,
    response_text,
    summarization_failure,
)
from pi_lab.compaction.tokens import estimate_tokens
from pi_lab.llm.protocol import check_options
from pi_lab.session.entries import EntryView as Entry  # one alias for every module
from pi_lab.session.entries import MessageView as Message

if TYPE_CHECKING:  # annotations only; typing has Unpack from 3.11
    from typing_extensions import Unpack

__all__ = [
    "CollectEntriesResult",
    "BranchPreparation",
    "BranchSummaryResult",
    "collect_entries_for_branch_summary",
    "prepare_branch_entries",
    "branch_entry_message",
    "branch_summary_prompt",
    "generate_branch_summary",
    "DEFAULT_CONTEXT_WINDOW",
]

DEFAULT_CONTEXT_WINDOW = 128000


class CollectEntriesResult(NamedTuple):
    """Entries abandoned by a navigation (chronological) and the common ancestor id."""

    entries: list[Entry]
    common_ancestor_id: str | None


@dataclass(frozen=True, slots=True)
class BranchPreparation:
    messages: list[Message]
    file_ops: FileOperations = field(default_factory=FileOperations)
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class BranchSummaryResult:
    """Success: ``summary`` (+ ``usage``, file lists). Failure: ``error``. Cancelled: ``aborted``."""

    summary: str | None = None
    usage: dict[str, Any] | None = None
    read_files: list[str] | None = None
    modified_files: list[str] | None = None
    aborted: bool = False
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """pi's ``BranchSummaryResult`` object (camelCase keys, unset fields left out)."""
        out: dict[str, Any] = {}
        for key, value in (
            ("summary", self.summary),
            ("usage", self.usage),
            ("readFiles", self.read_files),
            ("modifiedFiles", self.modified_files),
            ("aborted", True if self.aborted else None),
            ("error", self.error),
        ):
            if value is not None:
                out[key] = value
        return out


def _get_branch(session: Any, from_id: str) -> list[Entry]:
    return list(session.get_branch(from_id))


def collect_entries_for_branch_summary(session: Any, old_leaf_id: str | None, target_id: str) -> CollectEntriesResult:
    """Entries between the old leaf and its deepest common ancestor with ``target_id``.

    ``session`` needs ``get_branch(id)`` (root-first path) and ``get_entry(id)``.
    """
    if not old_leaf_id:
        return CollectEntriesResult([], None)
    old_path_ids = {entry.get("id") for entry in _get_branch(session, old_leaf_id)}
    target_path = _get_branch(session, target_id)
    common: str | None = None
    for i in range(len(target_path) - 1, -1, -1):
        entry_id = target_path[i].get("id")
        if entry_id in old_path_ids:
            common = entry_id
            break
    collected: list[Entry] = []
    seen: set[str] = set()
    current: str | None = old_leaf_id
    while current and current != common and current not in seen:
        seen.add(current)  # a parentId cycle must not loop forever
        entry = session.get_entry(current)
        if entry is None:
            break
        collected.append(entry)
        current = entry.get("parentId")
    collected.reverse()
    return CollectEntriesResult(collected, common)


def branch_entry_message(entry: Entry, edit: Entry | None = None) -> Message | None:
    """The one message a collected entry contributes to a branch summary, if any (§9.1 step 3)."""
    from pi_lab.session.projection import (
        branch_summary_message,
        compaction_summary_message,
        entry_to_messages,
        project_with_edit,
    )

    # The projection functions are typed for a dict entry but only read it; this one may be any
    # Mapping view, hence the `type: ignore[arg-type]` on their calls below.
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, Mapping) or message.get("role") == "toolResult":
            return None
        if edit is None:
            return message
        produced = project_with_edit(entry, edit)  # type: ignore[arg-type]
        return produced[0] if produced else None
    if kind == "custom_message":
        produced = project_with_edit(entry, edit) if edit is not None else entry_to_messages(entry)  # type: ignore[arg-type]
        return produced[0] if produced else None
    if kind == "branch_summary":
        # Unlike the model projection, an empty summary still becomes a message here.
        return branch_summary_message(entry)  # type: ignore[arg-type]
    if kind == "compaction":
        # without the system snapshot the projection adds
        return compaction_summary_message(entry)  # type: ignore[arg-type]
    return None


def prepare_branch_entries(entries: Sequence[Entry], token_budget: float = 0) -> BranchPreparation:
    """Messages (chronological, newest kept first under ``token_budget``), file ops and token total."""
    ops = FileOperations()
    edits: dict[Any, Entry] = {}
    for entry in entries:
        kind = entry.get("type")
        if kind == "branch_summary" and not entry.get("fromHook") and entry.get("details"):
            add_summary_details(entry.get("details"), ops)
        elif kind == "context_edit":
            edits[entry.get("targetId")] = entry

    reversed_messages: list[Message] = []
    total = 0
    for i in range(len(entries) - 1, -1, -1):
        entry = entries[i]
        message = branch_entry_message(entry, edits.get(entry.get("id")))
        if message is None:
            continue
        extract_file_ops_from_message(message, ops)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.get("type") in ("compaction", "branch_summary") and total < token_budget * 0.9:
                reversed_messages.append(message)
                total += tokens
            break
        reversed_messages.append(message)
        total += tokens
    reversed_messages.reverse()
    return BranchPreparation(reversed_messages, ops, total)


def branch_summary_prompt(
    messages: Sequence[Message], custom_instructions: str | None = None, replace_instructions: bool = False
) -> str:
    from pi_lab.llm.convert import convert_to_llm

    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = BRANCH_SUMMARY_PROMPT + ADDITIONAL_FOCUS + custom_instructions
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    conversation = serialize_conversation(convert_to_llm(list(messages)))
    return "<conversation>\n" + conversation + "\n</conversation>\n\n" + instructions


def _context_window(model: Any) -> Any:
    if isinstance(model, Mapping):
        return model.get("contextWindow", model.get("context_window"))
    return getattr(model, "context_window", None)


async def generate_branch_summary(
    entries: Sequence[Entry],
    client: Any,
    model: Any,
    *,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    reserve_tokens: int = DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS,
    **options: Unpack[SummaryRequestOptions],
) -> BranchSummaryResult:
    """Summarise abandoned ``entries``; failures are returned (``error`` / ``aborted``), not raised."""
    check_options(options, SUMMARY_REQUEST_OPTION_NAMES, "generate_branch_summary")
    token_budget = (_context_window(model) or DEFAULT_CONTEXT_WINDOW) - reserve_tokens
    prepared = prepare_branch_entries(entries, token_budget)
    if not prepared.messages:
        return BranchSummaryResult(summary=NO_CONTENT_TO_SUMMARIZE)

    prompt = branch_summary_prompt(prepared.messages, custom_instructions, replace_instructions)
    response = await request_summary(prompt, client, model, **options)
    if response.get("stopReason") == "aborted":
        return BranchSummaryResult(aborted=True)
    failure = summarization_failure(response, "Branch summarization")
    if failure:
        return BranchSummaryResult(error=failure)
    if has_tool_call(response):
        return BranchSummaryResult(error="Branch summarization attempted to call a tool")

    read_files, modified_files = compute_file_lists(prepared.file_ops)
    summary = BRANCH_SUMMARY_PREAMBLE + response_text(response) + format_file_operations(read_files, modified_files)
    return BranchSummaryResult(
        summary=summary, usage=response.get("usage"), read_files=read_files, modified_files=modified_files
    )
