"""Every constant the Python side and the TypeScript front end share, in one place.

``tools/gen_contract.py`` writes ``src_frontend/core/contract.ts`` from this module, and
``tests/view/test_contract.py`` checks that the committed file is what the generator writes, so a
change here that is not carried to the front end fails a test instead of drawing wrong rows.
The modules that use these tables (``view/kinds.py``, ``session/facts.py``, ``session/flatten.py``,
``view/composition.py``, ``view/payload.py``) import them from here and keep their public names.

This module imports nothing from pi_lab: the engine (``pi_lab.session``) imports it too.
"""

from __future__ import annotations

__all__ = [
    "KIND_NAMES",
    "FLAG_BITS",
    "ROLES",
    "FACT_BITS",
    "FILTER_MODES",
    "FILTER_CATEGORIES",
    "PART_ORDER",
    "MAX_ROWS_PER_REQUEST",
    "MAX_WHOLE",
    "MAX_PREFIX_MATCHES",
    "READ_OP_NAMES",
    "WRITE_OP_NAMES",
    "NOTE_OP_NAMES",
    "NOTE_SCOPES",
    "MAX_NOTE_TEXT_CHARS",
    "MAX_NOTE_TAG_CHARS",
]

# Entry kinds: the u8 ``kind`` column of the binary rows holds the index of the name.
KIND_NAMES: tuple[str, ...] = (
    "unknown",
    "user",
    "assistant",  # has visible text
    "tool_call",  # assistant without text that calls tools
    "tool_result",
    "thinking",  # assistant with only thinking
    "branch_summary",
    "compaction",
    "custom_message",
    "model_change",
    "thinking_change",
    "label",
    "session_info",
    "context_edit",
    "bash",
    "system",
    "custom",
    "usage",
    "assistant_error",  # assistant without text that failed or was aborted
    "other_message",  # a message with a role pi does not know
)

# Row flags: bit i of the u16 ``flags`` column is FLAG_BITS[i].
FLAG_BITS: tuple[str, ...] = (
    "show_connector",
    "is_last",
    "on_active_path",
    "is_leaf",
    "foldable",
    "folded",
    "has_label",
    "is_virtual_root_child",
    "out_of_context",  # on the current branch, summarized away by the latest compaction
    "first_kept",  # the latest compaction's first kept entry
    "omitted",  # dropped from the model's view by a context_edit on the current branch
    "replaced",  # content replaced by a context_edit on the current branch
    "error",  # a failed tool result or a failed/aborted assistant reply
    "has_children",  # the row has visible children
)

# The static export's per-entry ``facts`` column: bits 0-1 hold the index of the message role in
# ROLES (0: no message), the other bits are FACT_BITS.
ROLES: tuple[str | None, ...] = (None, "user", "assistant", "toolResult")
FACT_BITS: dict[str, int] = {"tool_error": 1 << 2, "aborted": 1 << 3, "has_child": 1 << 4,
                             "usage_in_message": 1 << 5, "usage_in_entry": 1 << 6}

# The five filter modes, in ``ctrl+o`` cycling order.
FILTER_MODES: tuple[str, ...] = ("default", "no-tools", "user-only", "labeled-only", "all")

# What the filters need to know about an entry (its filter category), decided once per entry.
FILTER_CATEGORIES: dict[str, int] = {
    "usage": 0,  # hidden in every mode
    "tool_only": 1,  # assistant without visible text that ended normally: hidden unless it is the leaf
    "settings": 2,
    "tool_result": 3,
    "user": 4,
    "other": 5,  # everything else: visible in `default`
}

# The parts of a context's composition, in drawing order ("tool result: " is followed by the
# tool's name).
PART_ORDER: tuple[str, ...] = (
    "system prompt and tools",
    "compaction summary",
    "branch summaries",
    "user",
    "assistant text",
    "thinking",
    "tool calls",
    "tool result: ",
    "custom messages",
    "bash executions",
    "other",
)

# Limits the front end mirrors.
MAX_ROWS_PER_REQUEST = 2000  # rows one "rows" request answers at most
MAX_WHOLE = 2**53 - 1  # the largest whole number JavaScript holds exactly (Number.MAX_SAFE_INTEGER)
MAX_PREFIX_MATCHES = 5  # entry ids a "locate" by id prefix lists at most

# The read requests every transport answers (the keys of ``pi_lab.view.payload.READ_OPS``).
READ_OP_NAMES: tuple[str, ...] = (
    "rows",
    "locate",
    "entry",
    "context_at",
    "gauge",
    "compact_preview",
    "timeline",
    "timeline_at",
    "composition",
    "what_if",
    "what_if_compaction",
    "what_if_context",
    "compare_node",
    "context_diff",
    "context_search",
    "compare_branches",
)

# The requests that change the session (``pi_lab.view.actions.WRITE_ACTIONS``): a read-only
# viewer refuses them.
WRITE_OP_NAMES: tuple[str, ...] = ("navigate", "compact", "cancel", "label", "fork", "clone")

# The requests on a researcher's notes (``pi_lab.view.notes``). Every live viewer with a notes
# store answers them, read-only session or not: notes live in a sidecar file, never in the
# session. The static export answers ``notes`` only.
NOTE_OP_NAMES: tuple[str, ...] = ("notes", "note_add", "note_edit", "note_remove")

# What a note covers: one entry, a range of entries on one path, or the branch from the root.
NOTE_SCOPES: tuple[str, ...] = ("entry", "range", "branch")

# Limits of a note a viewer adds or edits (longer ones are refused, not cut).
MAX_NOTE_TEXT_CHARS = 20_000
MAX_NOTE_TAG_CHARS = 100
