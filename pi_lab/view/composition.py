"""What the context at a node is made of: pi's token estimate split by part.

The context is the projection with the leaf put on the node (what the model sees there). Each
projected message is estimated as pi does (``estimate_tokens``: chars/4 rounded up) and its
tokens go to one part by role — except assistant messages, whose blocks go to three parts
(text, thinking, tool calls). To keep the parts summing exactly to the per-message estimates,
a message's counted characters are laid end to end in content order and a block spanning
characters [start, end) gets ``ceil(end/4) − ceil(start/4)`` tokens: the shares telescope to
``ceil(total/4)``, every share is ≥ 0 and within one token of the block's own chars/4.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pi_lab.compaction.tokens import assistant_chars, estimate_tokens
from pi_lab.view._common import SessionLike, branch_to, manager_of, projection_at
from pi_lab.view.contract import PART_ORDER

__all__ = ["context_composition", "compose", "message_shares", "PART_ORDER", "PART_OF_ROLE"]

# Parts in the order they are listed (tool results, one part per tool, sit between tool calls
# and custom messages, in the order the tools first appear in the context); the names are shared
# with the front end (pi_lab/view/contract.py PART_ORDER).
SYSTEM, COMPACTION, BRANCH, USER, TEXT, THINKING, TOOL_CALLS, TOOL_RESULT, CUSTOM, BASH, OTHER = PART_ORDER

PART_OF_ROLE = {
    "system": SYSTEM,
    "compactionSummary": COMPACTION,
    "branchSummary": BRANCH,
    "user": USER,
    "custom": CUSTOM,
    "bashExecution": BASH,
}
_BLOCK_PART = {"text": TEXT, "thinking": THINKING, "toolCall": TOOL_CALLS}


def _ceil4(chars: int) -> int:
    return -(-chars // 4)


def _assistant_shares(message: dict[str, Any]) -> list[tuple[str, int]]:
    """(part, tokens) per counted block of an assistant message; sums to estimate_tokens."""
    content = message.get("content")
    shares: list[tuple[str, int]] = []
    if not isinstance(content, list):
        return shares
    start = 0
    for block in content:
        # The engine's own per-block character count, so the split cannot drift from it.
        chars = assistant_chars([block])
        if not chars:
            continue
        kind = block.get("type")
        end = start + chars
        shares.append((_BLOCK_PART.get(kind, TEXT), _ceil4(end) - _ceil4(start)))
        start = end
    return shares


def _tool_part(message: dict[str, Any]) -> str:
    name = message.get("toolName")
    return TOOL_RESULT + (name if isinstance(name, str) and name else "(unnamed)")


def message_shares(message: dict[str, Any]) -> list[tuple[str, int]]:
    """``(part, tokens)`` for one projected message, in the order they are added: the shares
    of :func:`context_composition` (an export embeds them per message, pi_lab/export/views.py).
    A share may be 0 tokens; it still counts the message in its part."""
    role = message.get("role")
    if role == "assistant":
        shares = _assistant_shares(message)
        # nothing counted (0 tokens): the message still counts as assistant text
        return shares if shares else [(TEXT, estimate_tokens(message))]
    if role == "toolResult":
        return [(_tool_part(message), estimate_tokens(message))]
    part = PART_OF_ROLE.get(role, OTHER) if isinstance(role, str) else OTHER
    return [(part, estimate_tokens(message))]


def compose(shares: Iterable[list[tuple[str, int]]]) -> list[dict[str, Any]]:
    """The parts of :func:`context_composition` from each projected message's shares, in
    message order (src_frontend/export/viewsComposition.ts sums embedded shares the same way)."""
    tokens: dict[str, int] = {}
    indexes: dict[str, list[int]] = {}
    tool_parts: list[str] = []
    for index, message_parts in enumerate(shares):
        for part, amount in message_parts:
            if part not in tokens:
                tokens[part] = 0
                indexes[part] = []
                if part.startswith(TOOL_RESULT):
                    tool_parts.append(part)
            tokens[part] += amount
            seen = indexes[part]
            if not seen or seen[-1] != index:
                seen.append(index)
    order: list[str] = []
    for part in PART_ORDER:
        if part == TOOL_RESULT:
            order.extend(tool_parts)
        elif part in tokens:
            order.append(part)
    return [{"part": part, "tokens": int(tokens[part]), "messages": len(indexes[part]), "indexes": indexes[part]} for part in order]


def context_composition(sm: SessionLike, entry_id: str) -> list[dict[str, Any]]:
    """``[{"part", "tokens", "messages", "indexes"}]`` for the context at ``entry_id``.

    ``tokens``: pi's estimate of that part; the parts sum to Σ ``estimate_tokens`` of the
    projected messages (= ``estimate_context_tokens(messages).tokens`` when no usage anchor is
    used). ``messages``: how many projected messages contribute to the part (an assistant
    message with text and tool calls counts in both); ``indexes``: their positions in
    ``sm.build_session_context(entry_id).messages``. The system prompt and tools appear only
    when the session records them (system messages of pi 1.x); older files do not, and then
    the part is absent. Parts with no message are left out.
    """
    sm = manager_of(sm)
    projection = projection_at(branch_to(sm, entry_id))
    return compose(message_shares(message) for message in projection.messages)
