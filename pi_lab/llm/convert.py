"""From session messages to what a provider is sent.

Two steps, as in pi:

1. `convert_to_llm(messages)` (pi's `convertToLlm`, compaction.md §7.1): the coding agent's own
   message kinds become user messages; user/assistant/toolResult/system pass through as the same
   objects; unknown roles are dropped. Used for model requests and for the summariser.
2. `prepare_request_messages(messages, model)` (pi-ai's request-time transform, applied by every
   provider client just before it encodes a request):
   * an assistant message written by a different model loses what only its author can read:
     redacted thinking is dropped, other thinking becomes plain text (empty thinking is dropped),
     text blocks keep only their text, and tool calls lose a Gemini-style `thoughtSignature`;
   * assistant messages with `stopReason` `error` or `aborted` are skipped (incomplete turns);
   * tool calls that have no result when the next assistant or user message arrives get a
     synthetic error result `No result provided`, placed right before that message.
     Like pi-ai, tool calls still pending at the very end of the list are left alone (the
     agent loop is about to run them), and results are matched by `toolCallId`.
   Messages are never modified in place; changed ones are shallow copies.
"""

from __future__ import annotations

from typing import Any

from ._assistant import now_ms
from .model import Model

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "NO_RESULT_TEXT",
    "bash_execution_to_text",
    "convert_to_llm",
    "prepare_request_messages",
]

# Exact strings from compaction.md §7.1: the model must see what pi shows it.
COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"

NO_RESULT_TEXT = "No result provided"

_PASS_THROUGH = frozenset({"system", "user", "assistant", "toolResult"})


def bash_execution_to_text(message: dict[str, Any]) -> str:
    """The user-message text for a `!command` run (output fenced, exit status, truncation)."""
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {_js_number_text(exit_code)}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _js_number_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _summary_user(text: str, timestamp: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def convert_to_llm(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn agent messages into LLM messages (pi's `convertToLlm`)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role in _PASS_THROUGH:
            out.append(message)
        elif role == "bashExecution":
            if message.get("excludeFromContext"):
                continue
            out.append(_summary_user(bash_execution_to_text(message), message.get("timestamp")))
        elif role == "custom":
            content = message.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            out.append({"role": "user", "content": content, "timestamp": message.get("timestamp")})
        elif role == "branchSummary":
            text = BRANCH_SUMMARY_PREFIX + str(message.get("summary", "")) + BRANCH_SUMMARY_SUFFIX
            out.append(_summary_user(text, message.get("timestamp")))
        elif role == "compactionSummary":
            text = COMPACTION_SUMMARY_PREFIX + str(message.get("summary", "")) + COMPACTION_SUMMARY_SUFFIX
            out.append(_summary_user(text, message.get("timestamp")))
        # anything else: not for the model
    return out


def _same_model(message: dict[str, Any], model: Model) -> bool:
    return (
        message.get("provider") == model.provider
        and message.get("api") == model.api
        and message.get("model") == model.id
    )


def _for_other_model(message: dict[str, Any]) -> dict[str, Any]:
    content: list[Any] = []
    changed = False
    for block in message.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "thinking":
            changed = True
            thinking = block.get("thinking") or ""
            if block.get("redacted") or not thinking.strip():
                continue
            content.append({"type": "text", "text": thinking})
        elif kind == "text" and set(block) != {"type", "text"}:
            changed = True  # e.g. a textSignature only its author can verify
            content.append({"type": "text", "text": block.get("text", "")})
        elif kind == "toolCall" and "thoughtSignature" in block:
            changed = True
            content.append({k: v for k, v in block.items() if k != "thoughtSignature"})
        else:
            content.append(block)
    return {**message, "content": content} if changed else message


def _missing_result(call: dict[str, Any], timestamp: int) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call.get("id"),
        "toolName": call.get("name"),
        "content": [{"type": "text", "text": NO_RESULT_TEXT}],
        "isError": True,
        "timestamp": timestamp,
    }


def prepare_request_messages(
    messages: list[dict[str, Any]], model: Model | None = None, *, now: int | None = None
) -> list[dict[str, Any]]:
    """pi-ai's request-time transform (see the module docstring). `now` stamps synthetic results."""
    timestamp = now_ms() if now is None else now
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    answered: set[Any] = set()

    def flush() -> None:
        nonlocal pending, answered
        for call in pending:
            if call.get("id") not in answered:
                out.append(_missing_result(call, timestamp))
        pending, answered = [], set()

    for message in messages:
        role = message.get("role")
        if role == "assistant":
            flush()
            if message.get("stopReason") in ("error", "aborted"):
                continue
            if model is not None and not _same_model(message, model):
                message = _for_other_model(message)
            calls = [
                b for b in message.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall"
            ]
            if calls:
                pending, answered = calls, set()
            out.append(message)
        elif role == "toolResult":
            answered.add(message.get("toolCallId"))
            out.append(message)
        elif role == "user":
            flush()
            out.append(message)
        else:
            out.append(message)
    return out
