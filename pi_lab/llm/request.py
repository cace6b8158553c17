"""Assemble the provider-neutral parts of a request from a `Context`.

pi 1.x keeps the system prompt and the tool loadout as `role: "system"` messages inside the
transcript (session-format.md §6.6). Providers have one system prompt and one tool list, so the
system messages are replayed here:

* text: `context["system_prompt"]`, then each system message's text (a string, or its text
  blocks joined with newlines), then the surviving named sections in order; non-empty pieces
  joined by a blank line. (How pi renders sections into the final prompt text is not specified
  in our notes; this order — base text, then sections — is our reading.)
* sections are patched by name (`None` deletes; an update keeps the position);
* tools: per message, `toolsRemoved` by name first, then `toolsAdded` add or replace by name.

Explicit tools (the `tools=` option, else `context["tools"]`) win over replayed ones. The
remaining messages go through `prepare_request_messages`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .convert import prepare_request_messages
from .model import Model
from .protocol import Context

__all__ = ["Request", "build_request"]


@dataclass(frozen=True, slots=True)
class Request:
    system_prompt: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def build_request(model: Model, context: Context, tools: list[dict[str, Any]] | None = None) -> Request:
    pieces: list[str] = []
    if context.get("system_prompt"):
        pieces.append(context["system_prompt"])  # type: ignore[arg-type]
    sections: dict[str, str] = {}
    replayed_tools: dict[str, dict[str, Any]] = {}
    saw_tool_messages = False
    others: list[dict[str, Any]] = []
    for message in context.get("messages") or []:
        if not isinstance(message, dict):
            continue
        if message.get("role") != "system":
            others.append(message)
            continue
        text = _text_of(message.get("content"))
        if text:
            pieces.append(text)
        for name, value in (message.get("sections") or {}).items():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
        for removed in message.get("toolsRemoved") or []:
            saw_tool_messages = True
            replayed_tools.pop(removed.get("name"), None)
        for added in message.get("toolsAdded") or []:
            saw_tool_messages = True
            replayed_tools[added.get("name")] = added
    pieces.extend(value for value in sections.values() if value)

    if tools is None:
        tools = context.get("tools")
    if tools is None and saw_tool_messages:
        tools = list(replayed_tools.values())
    return Request(
        system_prompt="\n\n".join(pieces) or None,
        messages=prepare_request_messages(others, model),
        tools=tools or None,
    )
