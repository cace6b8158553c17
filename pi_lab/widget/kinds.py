"""Entry kinds and row flags: the small integer codes the binary row columns carry.

One place decides how an entry looks in the widget. The TypeScript core mirrors these
numbers in ``src_frontend/core/row.ts``; ``KIND_NAMES`` and ``FLAG_BITS`` are also sent
in every structure header so the two sides can be checked against each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["KIND_NAMES", "KIND", "FLAG_BITS", "FLAG", "entry_kind", "has_visible_text"]

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

_ENTRY_KINDS = {
    "branch_summary": "branch_summary",
    "compaction": "compaction",
    "custom_message": "custom_message",
    "model_change": "model_change",
    "thinking_level_change": "thinking_change",
    "label": "label",
    "session_info": "session_info",
    "context_edit": "context_edit",
    "custom": "custom",
    "usage": "usage",
}


def has_visible_text(content: Any) -> bool:
    if isinstance(content, str):
        return content.strip() != ""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and text.strip():
                    return True
    return False


def _assistant_kind(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if has_visible_text(content):
        return "assistant"
    if message.get("stopReason") in ("error", "aborted") or message.get("errorMessage"):
        return "assistant_error"
    blocks = content if isinstance(content, list) else []
    if any(isinstance(b, Mapping) and b.get("type") == "toolCall" for b in blocks):
        return "tool_call"
    if any(isinstance(b, Mapping) and b.get("type") == "thinking" for b in blocks):
        return "thinking"
    return "assistant"


_ROLE_KINDS = {"user": "user", "toolResult": "tool_result", "bashExecution": "bash", "system": "system"}


def entry_kind(entry: Mapping[str, Any]) -> int:
    """The kind code of one session entry (how its row is drawn)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, Mapping):
            return KIND["unknown"]
        role = message.get("role")
        if role == "assistant":
            return KIND[_assistant_kind(message)]
        return KIND[_ROLE_KINDS.get(role, "other_message")]
    return KIND[_ENTRY_KINDS.get(kind, "unknown")]


def is_error_entry(entry: Mapping[str, Any]) -> bool:
    if entry.get("type") != "message":
        return False
    message = entry.get("message")
    if not isinstance(message, Mapping):
        return False
    if message.get("role") == "toolResult":
        return bool(message.get("isError"))
    if message.get("role") == "assistant":
        return message.get("stopReason") in ("error", "aborted")
    return False
