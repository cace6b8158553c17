"""Display and search text of tree-list rows: pi's tree selector's words for each entry
(tree-and-context.md §13.4, §13.5).

:func:`display_text` is the one line a row shows (``user: …``, ``[bash: …]``, ``[compaction:
12k tokens]``), :func:`search_text` what the search matches, :func:`copy_text` what a copy
takes. All of them take any entry, however odd its fields (String() semantics from ``_js``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from pi_lab.session._js import _DECIMAL, JS_WHITESPACE, MISSING, js_len, js_slice, js_trim
from pi_lab.session._js import js_join_part as _join_part
from pi_lab.session._js import js_round as _js_round
from pi_lab.session._js import js_string as _js_string
from pi_lab.session._js import js_to_number as _js_to_number
from pi_lab.session._js import js_truthy as _truthy
from pi_lab.session._json import dumps as _json_dumps
from pi_lab.session._text import text_blocks
from pi_lab.session.entries import message_of
from pi_lab.session.ids import parse_iso_ms

__all__ = [
    "ToolCall",
    "search_text",
    "display_text",
    "format_tool_call",
    "format_label_time",
    "copy_text",
    "shorten_home",
    "default_home",
]

_MISSING: Any = MISSING  # a key that is absent (JavaScript's `undefined`)
# pi_lab.formats.claude_code.SUBAGENT_START (not imported: that module imports this package)
_SUBAGENT_START = "subagent-start"


class ToolCall(NamedTuple):
    """A ``toolCall`` block of an assistant message, as the tree list remembers it."""

    name: Any
    arguments: Any


def _normalise(value: Any) -> str:
    """pi's display normalisation: every ``\\n`` and ``\\t`` becomes a space, then trim."""
    if not isinstance(value, str):
        value = "" if value is None or value is _MISSING else _js_string(value)
    return js_trim(value.replace("\n", " ").replace("\t", " "))


def _full_text(content: Any) -> str:
    """The text of message content: a string, or its text blocks concatenated."""
    if isinstance(content, str):
        return content
    # `result += block.text`: a missing text would read "undefined"
    return "".join(_js_string(block.get("text", _MISSING)) for block in text_blocks(content))


def _text_200(content: Any) -> str:
    return js_slice(_full_text(content), 200)


def default_home() -> str:
    """The home directory used to shorten paths (``$HOME``, else ``%USERPROFILE%``)."""
    return os.environ.get("HOME") or os.environ.get("USERPROFILE") or ""


# ---------------------------------------------------------------------------------------------
# Search text (§13.5) and display text (§13.4)


def search_text(entry: Mapping[str, Any], label: str | None = None) -> str:
    """The lower-cased text a search query is matched against."""
    parts: list[Any] = []
    if label:
        parts.append(label)
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            parts.append(message.get("role", _MISSING))
            content = message.get("content", _MISSING)
            if _truthy(content):
                parts.append(_text_200(content))
            if message.get("role") == "bashExecution" and _truthy(message.get("command")):
                parts.append(message["command"])
    elif kind == "custom_message":
        parts.append(entry.get("customType", _MISSING))
        content = entry.get("content")
        parts.append(content if isinstance(content, str) else _text_200(content))
    elif kind == "compaction":
        parts.append("compaction")
    elif kind == "branch_summary":
        parts.extend(("branch summary", entry.get("summary", _MISSING)))
    elif kind == "session_info":
        parts.append("title")
        if _truthy(entry.get("name")):
            parts.append(entry["name"])
    elif kind == "model_change":
        parts.extend(("model", entry.get("modelId", _MISSING)))
    elif kind == "thinking_level_change":
        parts.extend(("thinking", entry.get("thinkingLevel", _MISSING)))
    elif kind == "custom":
        parts.extend(("custom", entry.get("customType", _MISSING)))
    elif kind == "context_edit":
        parts.extend(("context edit", "omit" if entry.get("replacement") is None else "replace"))
        parts.append(entry.get("targetId", _MISSING))
    elif kind == "label":
        parts.extend(("label", entry.get("label", "")))
    return " ".join(_join_part(part) for part in parts).lower()


def shorten_home(path: str, home: str | None = None) -> str:
    """``~`` for the home directory itself, ``~/…`` for paths inside it, else unchanged."""
    home = default_home() if home is None else home
    if not home:
        return path
    base = home.rstrip("/\\") or home[:1]
    if path == base:
        return "~"
    for separator in ("/", "\\") if "\\" in base else ("/",):
        prefix = base if base.endswith(separator) else base + separator
        if path.startswith(prefix):
            return "~" + separator + path[len(prefix):]
    return path


def _range_number(value: Any) -> float | None:
    """A read offset/limit: a finite number or numeric string; anything else is absent."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip(JS_WHITESPACE)
        if not _DECIMAL.fullmatch(text):
            return None
        number = float(text)
    else:
        return None
    return number if math.isfinite(number) else None


def _path_arg(args: Mapping[str, Any], *keys: str, default: str = "") -> str:
    for key in keys:
        value = args.get(key, _MISSING)
        if _truthy(value):
            return _js_string(value)
    return default


def format_tool_call(name: Any, arguments: Any, home: str | None = None) -> str:
    """How the tree list shows a tool result: as the call that produced it."""
    home = default_home() if home is None else home
    args: Mapping[str, Any] = arguments if isinstance(arguments, dict) else {}
    if name == "read":
        display = shorten_home(_path_arg(args, "path", "file_path"), home)
        offset = _range_number(args.get("offset"))
        limit = _range_number(args.get("limit"))
        if offset is not None or limit is not None:
            start = offset if offset is not None else 1.0
            display += ":" + _js_string(start)
            if limit is not None:
                end = start + limit - 1
                if end != 0:
                    display += "-" + _js_string(end)
        return f"[read: {display}]"
    if name in ("write", "edit"):
        return f"[{name}: {shorten_home(_path_arg(args, 'path', 'file_path'), home)}]"
    if name == "bash":
        raw = _path_arg(args, "command")
        command = js_slice(_normalise(raw), 50)
        return f"[bash: {command}{'...' if js_len(raw) > 50 else ''}]"
    if name in ("grep", "find"):
        pattern = _path_arg(args, "pattern")
        where = shorten_home(_path_arg(args, "path", default="."), home)
        return f"[grep: /{pattern}/ in {where}]" if name == "grep" else f"[find: {pattern} in {where}]"
    if name == "ls":
        return f"[ls: {shorten_home(_path_arg(args, 'path', default='.'), home)}]"
    encoded = _json_dumps(arguments if arguments is not _MISSING else {}).decode("utf-8")
    return f"[{_js_string(name)}: {js_slice(encoded, 40)}{'...' if js_len(encoded) > 40 else ''}]"


def display_text(entry: Mapping[str, Any], tool_calls: Mapping[Any, Any] | None = None, home: str | None = None) -> str:
    """The text part of a row (§13.4); ``tool_calls`` maps call ids to ``(name, arguments)``."""
    call = None
    message = message_of(entry)
    if message is not None and message.get("role") == "toolResult" and tool_calls:
        call_id = message.get("toolCallId")
        if _truthy(call_id) and isinstance(call_id, (str, int, float)):
            found = tool_calls.get(call_id)
            if found is not None:
                call = found if isinstance(found, ToolCall) else _as_tool_call(found)
    return display_text_with(entry, call, default_home() if home is None else home)


def _as_tool_call(value: Any) -> ToolCall:
    if isinstance(value, Mapping):
        return ToolCall(value.get("name"), value.get("arguments", _MISSING))
    name, arguments = value
    return ToolCall(name, arguments)


def display_text_with(entry: Mapping[str, Any], call: ToolCall | None, home: str) -> str:
    """:func:`display_text` with the entry's tool call already looked up (the row builders' path)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return "[undefined]"
        role = message.get("role", _MISSING)
        if role == "user":
            return "user: " + _normalise(_text_200(message.get("content")))
        if role == "assistant":
            text = _normalise(_text_200(message.get("content")))
            if text:
                return "assistant: " + text
            if message.get("stopReason") == "aborted":
                return "assistant: (aborted)"
            error = message.get("errorMessage")
            if _truthy(error):
                return "assistant: " + js_slice(_normalise(error), 80)
            return "assistant: (no content)"
        if role == "toolResult":
            if call is not None:
                return format_tool_call(call.name, call.arguments, home)
            name = message.get("toolName")
            return f"[{'tool' if name is None else _js_string(name)}]"
        if role == "bashExecution":
            return "[bash]: " + _normalise(message.get("command") or "")
        return f"[{_js_string(role)}]"
    if kind == "custom_message":
        content = entry.get("content")
        if isinstance(content, list):
            content = "".join(
                _join_part(block.get("text"))
                for block in content
                if isinstance(block, dict) and block.get("type") == "text"
            )
        return f"[{_js_string(entry.get('customType', _MISSING))}]: " + _normalise(content)
    if kind == "compaction":
        synthetic = entry.get("claudeCode")
        if isinstance(synthetic, dict) and synthetic.get("synthetic") == _SUBAGENT_START:
            # A Claude Code sub-agent's run starts behind an empty compaction (its context starts
            # fresh); the row names the sub-agent. pi's entries never carry "claudeCode".
            return f"sub-agent {_js_string(synthetic.get('agentId', _MISSING))}"
        before = entry.get("tokensBefore", _MISSING)
        if before is None and ("claudeCode" in entry or "codex" in entry):
            # Another agent's compaction whose file records no token count (Codex never does):
            # say so instead of pi's "0k" for a null. pi's own entries carry neither key.
            return "[compaction: tokens not recorded]"
        tokens = _js_round(_js_to_number(before) / 1000)
        return f"[compaction: {_js_string(tokens)}k tokens]"
    if kind == "branch_summary":
        return "[branch summary]: " + _normalise(entry.get("summary"))
    if kind == "model_change":
        return f"[model: {_js_string(entry.get('modelId', _MISSING))}]"
    if kind == "thinking_level_change":
        return f"[thinking: {_js_string(entry.get('thinkingLevel', _MISSING))}]"
    if kind == "custom":
        return f"[custom: {_js_string(entry.get('customType', _MISSING))}]"
    if kind == "context_edit":
        action = "omit" if entry.get("replacement") is None else "replace"
        return f"[context {action}: {_js_string(entry.get('targetId', _MISSING))}]"
    if kind == "label":
        label = entry.get("label")
        return f"[label: {'(cleared)' if label is None else _js_string(label)}]"
    if kind == "session_info":
        name = entry.get("name")
        return f"[title: {_js_string(name)}]" if _truthy(name) else "[title: empty]"
    return ""


def copy_text(entry: Mapping[str, Any]) -> str | None:
    """What ``ctrl+x`` copies: the entry's full text, or ``None`` when it has none."""
    text: Any = None
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            if message.get("role") == "bashExecution":
                text = message.get("command")
            elif "content" in message:
                text = _full_text(message["content"])
                if not text and message.get("role") == "assistant":
                    text = message.get("errorMessage")
    elif kind == "custom_message":
        text = _full_text(entry.get("content"))
    elif kind in ("compaction", "branch_summary"):
        text = entry.get("summary")
    if isinstance(text, str) and js_trim(text):
        return text
    return None


# ---------------------------------------------------------------------------------------------
# Row layout (§13.4)


def format_label_time(timestamp: Any, now: datetime | None = None) -> str:
    """``HH:MM`` today, ``M/D HH:MM`` this year, ``YY/M/D HH:MM`` otherwise (local time)."""
    ms = parse_iso_ms(timestamp)
    try:
        if ms != ms:
            raise ValueError("invalid date")
        moment = datetime.fromtimestamp(ms / 1000)
    except (ValueError, OverflowError, OSError):
        return "aN/NaN/NaN NaN:NaN"  # what JavaScript prints for an invalid Date
    if now is None:
        now = datetime.now()
    elif now.tzinfo is not None:
        now = now.astimezone().replace(tzinfo=None)
    time = f"{moment.hour:02d}:{moment.minute:02d}"
    if (moment.year, moment.month, moment.day) == (now.year, now.month, now.day):
        return time
    if moment.year == now.year:
        return f"{moment.month}/{moment.day} {time}"
    return f"{str(moment.year)[-2:]}/{moment.month}/{moment.day} {time}"
