"""Entry kinds and row flags: the small integer codes the binary row columns carry.

One place decides how an entry looks in the widget. The TypeScript core mirrors these
numbers in ``src_frontend/core/row.ts``; ``KIND_NAMES`` and ``FLAG_BITS`` are also sent
in every structure header so the two sides can be checked against each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# One answer for every view: the predicates live in the engine's entry model.
from pi_lab.session.entries import display_kind, has_visible_text, is_error_entry

__all__ = ["KIND_NAMES", "KIND", "FLAG_BITS", "FLAG", "entry_kind", "has_visible_text", "unknown_entry_text"]

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
KIND = {name: code for code, name in enumerate(KIND_NAMES)}


def unknown_entry_text(entry_type: str | None) -> str:
    """The one name of an entry whose type pi does not know (pi draws a blank row), in every
    view; the TypeScript twin is ``unknownEntryText`` in ``src_frontend/core/rowList.ts``."""
    return f"[entry of an unknown type: {entry_type}]" if entry_type else "[entry of an unknown type]"

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
FLAG = {name: 1 << bit for bit, name in enumerate(FLAG_BITS)}

def entry_kind(entry: Mapping[str, Any]) -> int:
    """The kind code of one session entry (how its row is drawn; see ``entries.display_kind``)."""
    return KIND[display_kind(entry)]
