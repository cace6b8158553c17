"""Small builders for compaction tests: session entries with pi's keys, a scripted model client."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

from pi_lab.llm.model import Model

T0 = datetime(2026, 7, 29, 9, 0, 0, tzinfo=timezone.utc)


def iso(seconds: float) -> str:
    moment = T0 + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def usage(inp: int = 0, out: int = 0, cache_read: int = 0, cache_write: int = 0, total: int | None = None) -> dict:
    return {
        "input": inp,
        "output": out,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": inp + out + cache_read + cache_write if total is None else total,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def user(text: Any, ts: int = 1) -> dict:
    return {"role": "user", "content": text, "timestamp": ts}


def asst(
    text: str | None = "ok",
    *,
    calls: list[dict] | None = None,
    use: dict | None = None,
    stop: str = "stop",
    thinking: str | None = None,
    error: str | None = None,
    ts: int = 2,
) -> dict:
    content: list[dict] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking})
    if text is not None:
        content.append({"type": "text", "text": text})
    for call in calls or []:
        content.append({"type": "toolCall", **call})
    message = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": use if use is not None else usage(10, 5),
        "stopReason": stop,
    }
    if error is not None:
        message["errorMessage"] = error
    message["timestamp"] = ts
    return message


def call(call_id: str, name: str, **arguments: Any) -> dict:
    return {"id": call_id, "name": name, "arguments": arguments}


def result(call_id: str, name: str, text: str, ts: int = 3, **extra: Any) -> dict:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": ts,
        **extra,
    }


class Branch:
    """Builds a chain of entries; each new entry's parent is the previous one unless given."""

    def __init__(self) -> None:
        self.entries: list[dict] = []
        self.clock = 0

    def _add(self, kind: str, entry_id: str, parent: Any = ..., **fields: Any) -> dict:
        if parent is ...:
            parent = self.entries[-1]["id"] if self.entries else None
        self.clock += 1
        entry = {"type": kind, "id": entry_id, "parentId": parent, "timestamp": iso(self.clock), **fields}
        self.entries.append(entry)
        return entry

    def msg(self, entry_id: str, message: dict, parent: Any = ...) -> dict:
        return self._add("message", entry_id, parent, message=message)

    def user(self, entry_id: str, text: Any = None, parent: Any = ...) -> dict:
        return self.msg(entry_id, user(entry_id if text is None else text), parent)

    def asst(self, entry_id: str, text: str | None = None, parent: Any = ..., **kw: Any) -> dict:
        if text is None and "calls" not in kw:
            text = entry_id
        return self.msg(entry_id, asst(text, **kw), parent)

    def tool(self, entry_id: str, call_id: str, name: str, text: str | None = None, parent: Any = ..., **extra: Any) -> dict:
        return self.msg(entry_id, result(call_id, name, entry_id if text is None else text, **extra), parent)

    def custom_message(self, entry_id: str, content: Any, parent: Any = ..., **fields: Any) -> dict:
        return self._add(
            "custom_message", entry_id, parent, customType=fields.pop("customType", "note"), content=content,
            display=fields.pop("display", True), **fields,
        )

    def branch_summary(self, entry_id: str, summary: str, parent: Any = ..., **fields: Any) -> dict:
        return self._add("branch_summary", entry_id, parent, fromId=fields.pop("fromId", "X"), summary=summary, **fields)

    def compaction(self, entry_id: str, summary: str, first_kept: str | None, parent: Any = ..., **fields: Any) -> dict:
        return self._add(
            "compaction", entry_id, parent, summary=summary, firstKeptEntryId=first_kept,
            tokensBefore=fields.pop("tokensBefore", 1000), **fields,
        )

    def edit(self, entry_id: str, target: str, replacement: Any, parent: Any = ...) -> dict:
        return self._add("context_edit", entry_id, parent, targetId=target, replacement=replacement)

    def model_change(self, entry_id: str, parent: Any = ...) -> dict:
        return self._add("model_change", entry_id, parent, provider="anthropic", modelId="claude-test")

    def thinking(self, entry_id: str, level: str = "high", parent: Any = ...) -> dict:
        return self._add("thinking_level_change", entry_id, parent, thinkingLevel=level)

    def label(self, entry_id: str, target: str, text: str = "mark", parent: Any = ...) -> dict:
        return self._add("label", entry_id, parent, targetId=target, label=text)

    def custom(self, entry_id: str, parent: Any = ...) -> dict:
        return self._add("custom", entry_id, parent, customType="ext", data={"n": 1})

    def ids(self) -> list[str]:
        return [e["id"] for e in self.entries]


def texts(messages: list[dict]) -> list[str]:
    """One readable text per message (summary text for summaries)."""
    out = []
    for m in messages:
        if m["role"] in ("compactionSummary", "branchSummary"):
            out.append(m["summary"])
            continue
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif m["role"] == "assistant" and not any(b.get("type") == "text" for b in content):
            out.append("|".join(b["name"] for b in content if b.get("type") == "toolCall"))
        else:
            out.append("".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return out


# --- a scripted model client --------------------------------------------------------------------


def reply(
    text: str | None = "## Goal\nTest summary",
    *,
    stop: str = "stop",
    error: str | None = None,
    use: dict | None = None,
    calls: list[dict] | None = None,
) -> dict:
    message = asst(text, calls=calls, use=use if use is not None else usage(10, 10), stop=stop, error=error)
    return message


class FakeClient:
    """Implements the ModelClient ``complete`` coroutine from a script of responses.

    A script item is a response dict (copied), an exception (raised), or a function of the
    request context returning a response.
    """

    def __init__(self, *script: Any) -> None:
        self.script = list(script)
        self.calls: list[dict] = []

    async def complete(self, model, context, *, tools=None, reasoning=None, cancel=None, session_id=None, max_tokens=None):
        self.calls.append(
            {
                "model": model,
                "context": context,
                "tools": tools,
                "reasoning": reasoning,
                "cancel": cancel,
                "session_id": session_id,
                "max_tokens": max_tokens,
            }
        )
        if not self.script:
            raise AssertionError("FakeClient: no scripted response left")
        item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(item, BaseException):
            raise item
        if callable(item):
            return item(context)
        return copy.deepcopy(item)

    def prompt(self, i: int = -1) -> str:
        """Text of the single user message of call ``i``."""
        return self.calls[i]["context"]["messages"][0]["content"][0]["text"]


def model(reasoning: bool = True, context_window: int = 200000, max_tokens: int = 64000) -> Model:
    return Model(
        provider="anthropic",
        id="claude-test",
        api="anthropic-messages",
        context_window=context_window,
        max_tokens=max_tokens,
        reasoning=reasoning,
    )
