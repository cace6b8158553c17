"""From session messages to what a provider is sent.

Two steps, as in pi:

1. `convert_to_llm(messages)` (pi's `convertToLlm`, compaction.md §7.1): the coding agent's own
   message kinds become user messages; user/assistant/toolResult/system pass through as the same
   objects; unknown roles are dropped. Used for model requests and for the summariser.
2. `prepare_request_messages(messages, model)` (pi-ai's request-time transform, applied by every
   provider client just before it encodes a request):
   * thinking written by a different model is dropped (its signatures are useless to another
     model, and readable thinking would pass for visible reply); that model's text blocks keep
     only their text and its tool calls lose a Gemini-style `thoughtSignature`. The target
     model's own thinking is kept when signed, redacted or non-empty;
   * assistant messages with `stopReason` `error` or `aborted` are skipped (incomplete turns);
   * tool calls without a result by the next assistant or user message, or by the end of the
     list, get a synthetic error result `No result provided` there (matched by `toolCallId`);
   * a system message between a tool call and its results is moved after the results;
   * a message whose `content` is missing or null gets `[]`.
   Messages are never modified in place; changed ones are shallow copies. Not reproduced:
   pi-ai's image placeholders for models without image input (`Model` has no input list) and
   tool-call id normalisation, which each client does for its own API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pi_lab.session._js import MISSING, js_string

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


# A JavaScript template literal prints a value as String() does (`${value}`): the engine's
# js_string, so an array, an object or a huge number reads as pi shows it.
_js_text = js_string


def bash_execution_to_text(message: dict[str, Any]) -> str:
    """The user-message text for a `!command` run (output fenced, exit status, truncation)."""
    text = f"Ran `{_js_text(message.get('command', MISSING))}`\n"
    output = message.get("output")
    text += f"```\n{_js_text(output)}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {_js_text(exit_code)}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {_js_text(message['fullOutputPath'])}]"
    return text


def _user(source: dict[str, Any], content: Any) -> dict[str, Any]:
    # Keys missing from the source stay missing, as `undefined` does in pi's JSON.
    message: dict[str, Any] = {"role": "user"}
    if content is not MISSING:
        message["content"] = content
    if "timestamp" in source:
        message["timestamp"] = source["timestamp"]
    return message


def _summary_text(prefix: str, message: dict[str, Any], suffix: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": prefix + _js_text(message.get("summary", MISSING)) + suffix}]


def convert_to_llm(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Turn agent messages into LLM messages (pi's `convertToLlm`); only dicts are messages."""
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
            out.append(_user(message, [{"type": "text", "text": bash_execution_to_text(message)}]))
        elif role == "custom":
            content = message.get("content", MISSING)
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            out.append(_user(message, content))
        elif role == "branchSummary":
            out.append(_user(message, _summary_text(BRANCH_SUMMARY_PREFIX, message, BRANCH_SUMMARY_SUFFIX)))
        elif role == "compactionSummary":
            out.append(_user(message, _summary_text(COMPACTION_SUMMARY_PREFIX, message, COMPACTION_SUMMARY_SUFFIX)))
        # anything else: not for the model
    return out


def _same_model(message: dict[str, Any], model: Model) -> bool:
    return (
        message.get("provider") == model.provider
        and message.get("api") == model.api
        and message.get("model") == model.id
    )


def _replayable(message: dict[str, Any], same_model: bool) -> dict[str, Any]:
    """The assistant message as the target model may see it (a copy when anything changes)."""
    content: list[Any] = []
    changed = False
    for block in message.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "thinking":
            # Signatures and encrypted reasoning only make sense to the model that wrote them;
            # readable thinking from another model would pass for part of the visible reply.
            keep = same_model and bool(
                block.get("redacted") or block.get("thinkingSignature") or (block.get("thinking") or "").strip()
            )
            if keep:
                content.append(block)
            else:
                changed = True
        elif kind == "text" and not same_model and set(block) != {"type", "text"}:
            changed = True  # e.g. a textSignature only its author can verify
            content.append({"type": "text", "text": block.get("text", "")})
        elif kind == "toolCall" and not same_model and "thoughtSignature" in block:
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
    held_system: list[dict[str, Any]] = []

    def close_pending() -> None:
        nonlocal pending, answered
        for call in pending:
            if call.get("id") not in answered:
                out.append(_missing_result(call, timestamp))
        pending, answered = [], set()
        out.extend(held_system)
        held_system.clear()

    for message in messages:
        if message.get("content") is None and "role" in message:
            message = {**message, "content": []}  # hand-built or old messages without content
        role = message.get("role")
        if role == "assistant":
            close_pending()
            if message.get("stopReason") in ("error", "aborted"):
                continue
            if model is not None:
                message = _replayable(message, _same_model(message, model))
            calls = [
                b for b in message.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall"
            ]
            if calls:
                pending, answered = calls, set()
            out.append(message)
        elif role == "toolResult":
            answered.add(message.get("toolCallId"))
            out.append(message)
        elif role == "system" and pending:
            held_system.append(message)  # never between a tool call and its results
        elif role == "user":
            close_pending()
            out.append(message)
        else:
            out.append(message)
    close_pending()
    return out
