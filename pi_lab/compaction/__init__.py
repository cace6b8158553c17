"""Compaction and branch summarisation, as in pi 1.6.0 (spec: compaction.md).

Token estimates, cut points, compaction and branch-summary preparation, conversation
serialisation, summary prompts and file-operation tracking. Models are reached only through
the ``pi_lab.llm`` client interface; nothing here writes a session.

Typical use (what AgentSession does)::

    settings = resolve_compaction_settings(pi_settings, model)
    prep = prepare_compaction(sm.get_branch(), settings)       # None: nothing to do
    if prep is not None:
        result = await compact(prep, client, model, thinking_level=level, retry=RetryPolicy(), signal=abort)
        if not abort.is_set():
            sm.append_compaction(result.summary, result.first_kept_entry_id, result.tokens_before,
                                 result.details, False, result.usage)

Results are equal to pi's on the same input (``tests/compaction/test_differential.py`` runs pi's
own modules side by side). Deliberate differences, all on input pi cannot handle:

* malformed messages (``content`` null or missing, a toolCall without ``arguments``) are
  estimated and serialised as empty instead of raising a TypeError;
* ``collect_entries_for_branch_summary`` stops at a parentId cycle instead of looping forever;
* cut-point candidates are searched on demand (same result as pi's full list), so a budget
  reached near the leaf does not scan the whole branch twice.
The summary prompts are pi_lab's own wording with pi's section structure.
"""

from __future__ import annotations

from pi_lab.compaction.branch_summary import (
    BranchPreparation,
    BranchSummaryResult,
    CollectEntriesResult,
    branch_summary_prompt,
    collect_entries_for_branch_summary,
    generate_branch_summary,
    prepare_branch_entries,
)
from pi_lab.compaction.cut_point import (
    CutPointResult,
    find_cut_point,
    find_projected_cut_point,
    find_projected_turn_start_index,
    find_turn_start_index,
    is_cut_point_message,
    is_turn_start_message,
)
from pi_lab.compaction.file_ops import (
    FileOperations,
    OrderedSet,
    compute_file_lists,
    create_file_ops,
    extract_file_ops_from_message,
    format_file_operations,
)
from pi_lab.compaction.preparation import CompactionPreparation, prepare_compaction
from pi_lab.compaction.prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    NO_CONTENT_TO_SUMMARIZE,
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from pi_lab.compaction.retry import (
    DEFAULT_MAX_RETRY_DELAY_MS,
    RetryCallbacks,
    RetryPolicy,
    retry_assistant_call,
    retry_delay_ms,
    server_retry_delay_ms,
)
from pi_lab.compaction.serialization import serialize_conversation
from pi_lab.compaction.settings import (
    DEFAULT_COMPACTION_SETTINGS,
    BranchSummarySettings,
    CompactionSettings,
    InvalidSetting,
    resolve_compaction_settings,
)
from pi_lab.compaction.summarize import (
    CompactionResult,
    SummarizationError,
    SummaryResult,
    compact,
    generate_summary,
    generate_summary_with_usage,
    generate_turn_prefix_summary,
    summarization_failure,
)
from pi_lab.compaction.tokens import (
    ContextUsageEstimate,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
    should_compact,
)
from pi_lab.compaction.usage import ContextUsage, context_usage

# Message conversion belongs to the model layer; it is re-exported here because callers
# (and pi's own API) reach it through the compaction module.
from pi_lab.llm.convert import BRANCH_SUMMARY_PREFIX as BRANCH_PREFIX
from pi_lab.llm.convert import BRANCH_SUMMARY_SUFFIX as BRANCH_SUFFIX
from pi_lab.llm.convert import COMPACTION_SUMMARY_PREFIX as COMPACTION_PREFIX
from pi_lab.llm.convert import COMPACTION_SUMMARY_SUFFIX as COMPACTION_SUFFIX
from pi_lab.llm.convert import convert_to_llm

__all__ = [
    # tokens
    "estimate_tokens",
    "estimate_context_tokens",
    "estimate_projected_context_tokens",
    "ContextUsageEstimate",
    "get_last_assistant_usage",
    "calculate_context_tokens",
    "should_compact",
    "ContextUsage",
    "context_usage",
    # settings
    "CompactionSettings",
    "DEFAULT_COMPACTION_SETTINGS",
    "BranchSummarySettings",
    "resolve_compaction_settings",
    "InvalidSetting",
    "RetryPolicy",
    "RetryCallbacks",
    "retry_assistant_call",
    "retry_delay_ms",
    "server_retry_delay_ms",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    # cut points and preparation
    "CutPointResult",
    "find_cut_point",
    "find_projected_cut_point",
    "find_turn_start_index",
    "find_projected_turn_start_index",
    "is_cut_point_message",
    "is_turn_start_message",
    "CompactionPreparation",
    "prepare_compaction",
    # serialisation and file operations
    "convert_to_llm",
    "serialize_conversation",
    "FileOperations",
    "OrderedSet",
    "create_file_ops",
    "extract_file_ops_from_message",
    "compute_file_lists",
    "format_file_operations",
    # summaries
    "compact",
    "CompactionResult",
    "SummaryResult",
    "SummarizationError",
    "summarization_failure",
    "generate_summary",
    "generate_summary_with_usage",
    "generate_turn_prefix_summary",
    # branch summaries
    "collect_entries_for_branch_summary",
    "CollectEntriesResult",
    "prepare_branch_entries",
    "BranchPreparation",
    "generate_branch_summary",
    "BranchSummaryResult",
    "branch_summary_prompt",
    # exact strings
    "COMPACTION_PREFIX",
    "COMPACTION_SUFFIX",
    "BRANCH_PREFIX",
    "BRANCH_SUFFIX",
    "BRANCH_SUMMARY_PREAMBLE",
    "BRANCH_SUMMARY_PROMPT",
    "NO_CONTENT_TO_SUMMARIZE",
    "NO_PRIOR_HISTORY",
    "SPLIT_TURN_SEPARATOR",
    "SUMMARIZATION_PROMPT",
    "SUMMARIZATION_SYSTEM_PROMPT",
    "TURN_PREFIX_SUMMARIZATION_PROMPT",
    "UPDATE_SUMMARIZATION_PROMPT",
]
