"""The detail of one entry for the detail pane: its raw JSON and its parts, as plain data.

Nothing here is markup. Text is returned as text; the front end renders Markdown with its
own escaping renderer. Long pieces are cut at ``limit`` characters unless ``full`` is asked
for, so selecting an entry with a megabyte of tool output stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from pi_lab.session._js import MISSING, js_string
from pi_lab.session.display import copy_text
from pi_lab.view.context import entry_tokens
from pi_lab.view.kinds import KIND_NAMES, entry_kind

__all__ = ["entry_detail", "TEXT_LIMIT", "RAW_LIMIT"]

TEXT_LIMIT = 20_000
RAW_LIMIT = 60_000

from pi_lab.session.entries import EntryView as Entry  # noqa: E402  (one alias for every module)


def _cut(text: str, limit: int | None) -> dict[str, Any]:
    if limit is None or len(text) <= limit:
        return {"text": text, "length": len(text), "truncated": False}
    return {"text": text[:limit], "length": len(text), "truncated": True}


def _key_text(key: Any) -> str:
    """A dict key as ``json.dumps`` writes it (JSON data only has string keys)."""
    if isinstance(key, str):
        text = key
    elif key is True or key is False or key is None or isinstance(key, (int, float)):
        text = json.dumps(key)
    else:
        text = str(key)
    return json.dumps(text, ensure_ascii=False)


def _scalar_text(value: Any) -> str:
    if value is None or isinstance(value, (str, int, float)):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(str(value), ensure_ascii=False)  # what default=str would write


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def _pretty(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, indent=2, default=str)`` at any depth.

    Python's indented encoder is written in Python and was most of the time of an HTML
    export; orjson indents the same way in native code. Its numbers and escapes are not
    always Python's (``1e-05`` is ``0.00001`` there, NaN is ``null``; big integers, lone
    surrogates, non-string keys and deep nesting raise), so its compact text is checked
    against the C compact encoder's first: equal compact texts mean equal tokens, and both
    indent tokens alike. Anything else takes the exact walk below.
    """
    try:
        compact = _COMPACT.encode(value)
        if orjson.dumps(value, default=str).decode("utf-8") == compact:
            return orjson.dumps(value, default=str, option=orjson.OPT_INDENT_2).decode("utf-8")
    except (TypeError, ValueError, RecursionError, orjson.JSONEncodeError):
        pass
    return _pretty_walk(value)


def _pretty_walk(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, indent=2, default=str)`` at any depth.

    Python's indented encoder is recursive (a 1,000-level ``details`` raised RecursionError),
    so this walks with an explicit stack of pieces still to write. A container met again
    inside itself (never in file data) is written as Python's repr instead of looping.
    """
    out: list[str] = []
    stack: list[tuple[str, Any, int]] = [("value", value, 0)]
    open_ids: set[int] = set()
    while stack:
        tag, item, depth = stack.pop()
        if tag == "text":
            out.append(item)
            continue
        if tag == "close":
            open_ids.discard(item)
            continue
        if isinstance(item, dict):
            pairs: Any = item.items()
            empty, start, end = not item, "{", "}"
        elif isinstance(item, (list, tuple)):
            pairs = ((None, x) for x in item)
            empty, start, end = not item, "[", "]"
        else:
            out.append(_scalar_text(item))
            continue
        if empty:
            out.append(start + end)
            continue
        if id(item) in open_ids:
            out.append(json.dumps(repr(item), ensure_ascii=False))
            continue
        open_ids.add(id(item))
        pad = "\n" + "  " * (depth + 1)
        pieces: list[tuple[str, Any, int]] = []
        for i, (key, child) in enumerate(pairs):
            head = ("," if i else "") + pad + ("" if start == "[" else _key_text(key) + ": ")
            pieces.append(("text", head, 0))
            pieces.append(("value", child, depth + 1))
        pieces.append(("text", "\n" + "  " * depth + end, 0))
        pieces.append(("close", id(item), 0))
        out.append(start)
        stack.extend(reversed(pieces))
    return "".join(out)


def _text(value: Any) -> str:
    """Text of a field that should hold a string: JavaScript's ``String(value)`` otherwise
    (iterative at any depth; Python's ``str`` of a deep list recurses)."""
    if isinstance(value, str):
        return value
    return js_string(value)


def _blocks(content: Any, limit: int | None) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", **_cut(content, limit)}]
    blocks: list[dict[str, Any]] = []
    if not isinstance(content, list):
        return blocks
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            blocks.append({"type": "text", **_cut(_text(block.get("text") or ""), limit)})
        elif kind == "thinking":
            blocks.append({"type": "thinking", **_cut(_text(block.get("thinking") or ""), limit),
                           "redacted": bool(block.get("redacted"))})
        elif kind == "toolCall":
            blocks.append({"type": "tool_call", "id": block.get("id"), "name": block.get("name"),
                           "arguments": _cut(_pretty(block.get("arguments")), limit)})
        elif kind == "image":
            blocks.append({"type": "image", "mime": block.get("mimeType"),
                           "bytes": len(data) * 3 // 4 if isinstance(data := block.get("data"), str) else 0})
        else:
            blocks.append({"type": "other", "block_type": kind, **_cut(_pretty(block), limit)})
    return blocks


def _plain(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(b.get("text") or "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def _tool_names(tools: Any) -> list[Any]:
    if not isinstance(tools, list):
        return []
    return [t.get("name") for t in tools if isinstance(t, Mapping)]


def entry_detail(
    entry: Entry,
    *,
    label: str | None = None,
    label_timestamp: str | None = None,
    tool_call: Any = None,
    full: bool = False,
) -> dict[str, Any]:
    """Everything the detail pane shows for ``entry``; ``tool_call`` is the call a tool
    result answers (name, arguments), when known."""
    limit = None if full else TEXT_LIMIT
    raw = _pretty(entry)
    out: dict[str, Any] = {
        "id": entry.get("id"),
        "type": entry.get("type"),
        "kind": KIND_NAMES[entry_kind(entry)],
        "parent_id": entry.get("parentId"),
        "timestamp": entry.get("timestamp"),
        "label": label,
        "label_timestamp": label_timestamp,
        "tokens": entry_tokens(entry),
        "raw": _cut(raw, None if full else RAW_LIMIT),
        "copy_text": copy_text(dict(entry)),
    }
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), Mapping):
        message = entry["message"]
        role = message.get("role")
        out["role"] = role
        for key, name in (("stopReason", "stop_reason"), ("errorMessage", "error_message"), ("model", "model"),
                          ("provider", "provider"), ("usage", "usage"), ("api", "api")):
            if key in message:
                out[name] = message[key]
        if role == "toolResult":
            text = _plain(message.get("content"))
            out["tool_result"] = {
                "tool_name": message.get("toolName"),
                "tool_call_id": message.get("toolCallId"),
                "is_error": bool(message.get("isError")),
                "lines": text.count("\n") + 1 if text else 0,
                **_cut(text, limit),
            }
            if tool_call is not None:
                name, arguments = tool_call[0], tool_call[1]
                if arguments is MISSING:  # a call with no "arguments" key: shown as the call block shows it
                    arguments = None
                out["tool_result"]["call"] = {"name": name, "arguments": _cut(_pretty(arguments), limit)}
            out["blocks"] = [b for b in _blocks(message.get("content"), limit) if b["type"] != "text"]
        elif role == "bashExecution":
            out["bash"] = {
                "command": message.get("command"),
                "exit_code": message.get("exitCode"),
                "cancelled": bool(message.get("cancelled")),
                "output": _cut(_text(message.get("output") or ""), limit),
                "exclude_from_context": bool(message.get("excludeFromContext")),
            }
        else:
            out["blocks"] = _blocks(message.get("content"), limit)
            if role == "system":
                sections = message.get("sections")
                out["system"] = {
                    "sections": sorted(k for k in sections if isinstance(k, str)) if isinstance(sections, Mapping) else [],
                    "tools_added": _tool_names(message.get("toolsAdded")),
                    "tools_removed": _tool_names(message.get("toolsRemoved")),
                }
    elif kind in ("compaction", "branch_summary"):
        out["summary"] = _cut(_text(entry.get("summary") or ""), limit)
        for key, name in (("tokensBefore", "tokens_before"), ("firstKeptEntryId", "first_kept_id"),
                          ("fromId", "from_id"), ("fromHook", "from_hook"), ("usage", "usage")):
            if key in entry:
                out[name] = entry[key]
        if "details" in entry:
            out["details"] = _cut(_pretty(entry["details"]), limit)
    elif kind == "custom_message":
        out["custom_type"] = entry.get("customType")
        out["display"] = entry.get("display")
        out["blocks"] = _blocks(entry.get("content"), limit)
    elif kind == "context_edit":
        out["target_id"] = entry.get("targetId")
        replacement = entry.get("replacement")
        out["replacement"] = None if replacement is None else _cut(_pretty(replacement), limit)
    elif kind == "label":
        out["target_id"] = entry.get("targetId")
        out["label_text"] = entry.get("label")
    elif kind == "model_change":
        out["provider"] = entry.get("provider")
        out["model"] = entry.get("modelId")
    elif kind == "thinking_level_change":
        out["thinking_level"] = entry.get("thinkingLevel")
    elif kind == "session_info":
        out["name"] = entry.get("name")
    elif kind == "usage":
        out["usage"] = entry.get("usage")
    return out
