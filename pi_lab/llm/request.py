"""Assemble the provider-neutral parts of a request from a `Context` (pi-ai 1.6.0's transcript).

pi-ai folds `system_prompt` and the tools into a leading system message, then — for APIs without
mid-conversation system messages, which is every API here — replays all system messages into
one (session-format.md §6.6):

* prompt text: each system message's content (a string, or its text blocks joined with
  newlines), non-empty ones joined by a blank line, followed by the surviving named sections in
  order (`None` deletes a section; an update keeps its position);
* tools: the starting tools (the `tools=` option, else `context["tools"]`), then per system
  message `toolsRemoved` by name and `toolsAdded` added or replaced by name.

The other messages go through `prepare_request_messages`. `estimated_input_tokens` is pi-ai's
estimate of the whole transcript, used to size the output budget.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pi_lab.session.projection import replay_system_state

from .convert import prepare_request_messages
from .model import Model
from .protocol import Context
from .tokens import clamp_max_tokens_to_context, estimate_context_tokens, system_message_text

__all__ = ["Request", "build_request", "grouped_tool_results"]


@dataclass(frozen=True, slots=True)
class Request:
    system_prompt: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    estimated_input_tokens: int

    def output_budget(self, model: Model, max_tokens: int | None) -> int:
        """The cap pi-ai sends: the caller's or the model's own, fitted into the room left."""
        wanted = max_tokens if max_tokens is not None else model.max_tokens
        return clamp_max_tokens_to_context(model.context_window, self.estimated_input_tokens, wanted)


def build_request(model: Model, context: Context, tools: list[dict[str, Any]] | None = None) -> Request:
    if tools is None:
        tools = context.get("tools")
    system_prompt = context.get("system_prompt") or ""
    messages = [m for m in context.get("messages") or [] if isinstance(m, dict)]

    leading: dict[str, Any] | None = None
    if system_prompt or tools:
        leading = {"role": "system", "content": system_prompt, "timestamp": 0}
        if tools:
            leading["toolsAdded"] = list(tools)
    transcript = [leading, *messages] if leading is not None else messages

    # The session's own replay (content, sections, tools by name): one rule for what the
    # system messages add up to, here and in the viewer's context pane.
    state = replay_system_state(transcript)
    prompt = system_message_text(state) if state is not None else ""
    current_tools = state.get("toolsAdded") if state is not None else None

    return Request(
        system_prompt=prompt or None,
        messages=prepare_request_messages([m for m in messages if m.get("role") != "system"], model),
        tools=list(current_tools) if current_tools else None,
        estimated_input_tokens=estimate_context_tokens(transcript),
    )


def grouped_tool_results(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any] | list[dict[str, Any]]]:
    """The messages in order, each run of consecutive ``toolResult`` messages as one list.

    Both provider APIs answer a turn's tool calls together (Anthropic: one user message of
    tool_result blocks; OpenAI: the tool messages, then one user message with their images)."""
    run: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "toolResult":
            run.append(message)
            continue
        if run:
            yield run
            run = []
        yield message
    if run:
        yield run
