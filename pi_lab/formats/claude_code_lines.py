"""Claude Code's files read line by line, and the content helpers its adapter, its usage rules
and the Codex adapter share: the objects of a file with their line numbers, a read that never
changes the file, JavaScript's time parsing with Claude Code's fast path, message blocks mapped
onto pi's, and usage in pi's shape. Nothing here knows the tree (``claude_code.py`` builds it)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Any

from pi_lab.session._json import js_json, loads_object
from pi_lab.session.ids import parse_iso_ms

Entry = dict[str, Any]

#: What Claude Code's microcompaction puts in place of a cleared tool result's content. The file
#: does not record the text; it is the placeholder public descriptions of Claude Code quote.
CLEARED_TOOL_RESULT = "[Old tool result content cleared]"

#: ``details.claudeCode`` of the empty compaction entry a sub-agent's context starts at.
SUBAGENT_START = "subagent-start"

#: ``customType`` prefix of every line kept as a ``custom`` entry.
CUSTOM_PREFIX = "claude-code:"

_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "toolUse", "max_tokens": "length",
                 "pause_turn": "stop", "refusal": "stop"}
_AGENT_TOOLS = frozenset({"Task", "Agent"})


# ---------------------------------------------------------------------------- reading lines


def read_lines(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], list[int]]:
    """The JSON objects of ``data`` with their 1-based line numbers, and the numbers of the
    lines skipped (not JSON, not an object, or a half-written last line). Blank lines are
    neither."""
    parsed: list[tuple[int, dict[str, Any]]] = []
    skipped: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        # JSON.parse's rules (lone surrogate escapes, any depth), as Claude Code reads its file.
        value = loads_object(raw)
        # A plain object only: not None, not a NonObjectLine (pi's stand-in for 7, [], "x").
        if value is not None and value.__class__ is dict:
            parsed.append((number, value))
        else:
            skipped.append(number)
    return parsed, skipped


def unique_id(wanted: str, taken: set[str]) -> str:
    """``wanted``, or the first of ``wanted#2``, ``wanted#3``... not in ``taken``; it is added to
    ``taken``. An id written twice in a file (a copied line, a hand edit) stays two entries."""
    candidate, n = wanted, 1
    while candidate in taken:
        n += 1
        candidate = f"{wanted}#{n}"
    taken.add(candidate)
    return candidate


def _read_file(path: str) -> bytes:
    # O_RDONLY and nothing else: reading never changes the file (not even its atime on noatime
    # mounts; the tests compare bytes and mtime).
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- content


def _s(value: Any) -> str | None:
    return value if value.__class__ is str else None


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_last_parsed: list[Any] = [None, float("nan")]


def _parse_ms(timestamp: Any) -> Any:
    """``parse_iso_ms`` (JavaScript's ``Date.parse``) with a fast path for the form Claude Code
    writes (``2026-01-31T14:00:00.000Z``) and the last answer remembered: each line asks twice."""
    if timestamp.__class__ is not str:
        return float("nan")
    if timestamp == _last_parsed[0]:
        return _last_parsed[1]
    value: Any = None
    if len(timestamp) == 24 and timestamp[23] == "Z" and timestamp[19] == "." and timestamp[10] == "T":
        try:
            moment = datetime.fromisoformat(timestamp[:23]).replace(tzinfo=timezone.utc)
            value = (moment - _EPOCH) // _ONE_MS
        except ValueError:
            value = None
    if value is None:
        value = parse_iso_ms(timestamp)
    _last_parsed[0], _last_parsed[1] = timestamp, value
    return value


_ONE_MS = timedelta(milliseconds=1)


def _ms(timestamp: Any) -> Any:
    value = _parse_ms(timestamp)
    return value if value == value else 0  # NaN (no or bad timestamp) → 0, as a number


def _text_of(content: Any) -> str:
    """The plain text of Anthropic content (a string or text blocks)."""
    if content.__class__ is str:
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                         and b.get("text").__class__ is str)
    return ""


def _image_block(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        return {"type": "image", "data": source.get("data") if _s(source.get("data")) else "",
                "mimeType": source.get("media_type") if _s(source.get("media_type")) else "image/png"}
    # A URL or file image: the file holds no bytes to show.
    where = source.get("url") if isinstance(source, dict) else None
    return {"type": "text", "text": f"[image: {where}]" if _s(where) else "[image]"}


def _text_block(block: dict[str, Any], key: str = "text") -> dict[str, Any]:
    text = block.get(key)
    return {"type": "text", "text": text if text.__class__ is str else ""}


def _other_block(block: dict[str, Any]) -> dict[str, Any]:
    """A block pi has no kind for (document, search result...): kept, shown as its JSON text
    (written iteratively: a block may be nested thousands of levels deep)."""
    return {"type": "text", "text": js_json(block)}


def _dict_blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _user_blocks(content: Any) -> Any:
    """pi user/toolResult content of Anthropic user content (not tool_result blocks)."""
    if content.__class__ is str:
        return content
    out: list[Any] = []
    for block in _dict_blocks(content):
        kind = block.get("type")
        if kind == "image":
            out.append(_image_block(block))
        else:
            out.append(_text_block(block) if kind == "text" else _other_block(block))
    return out


def _assistant_blocks(content: Any) -> list[Any]:
    if content.__class__ is str:
        return [{"type": "text", "text": content}]
    out: list[Any] = []
    for block in _dict_blocks(content):
        kind = block.get("type")
        if kind == "text":
            out.append(_text_block(block))
        elif kind == "thinking":
            thinking = _text_block(block, "thinking")
            thinking = {"type": "thinking", "thinking": thinking["text"]}
            if _s(block.get("signature")):
                thinking["thinkingSignature"] = block["signature"]
            out.append(thinking)
        elif kind == "redacted_thinking":
            out.append({"type": "thinking", "thinking": "", "redacted": True})
        elif kind in ("tool_use", "server_tool_use"):
            arguments = block.get("input")
            out.append({"type": "toolCall", "id": block.get("id"), "name": block.get("name"),
                        "arguments": arguments if isinstance(arguments, dict) else {}})
        else:
            out.append(_other_block(block))
    return out


def _int(value: Any) -> int:
    return value if value.__class__ is int and value >= 0 else 0


def pi_usage(usage: Any) -> dict[str, Any]:
    """pi's usage fields from an Anthropic usage object. ``totalTokens`` is what the request
    carried (input + cache read + cache write), the measured context; cost is not known."""
    usage = usage if isinstance(usage, dict) else {}
    inp, out = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
    read, write = _int(usage.get("cache_read_input_tokens")), _int(usage.get("cache_creation_input_tokens"))
    return {"input": inp, "output": out, "cacheRead": read, "cacheWrite": write, "totalTokens": inp + read + write,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _usage_total(usage: dict[str, Any]) -> int:
    """All four counters of a :func:`pi_usage` (ccusage's total, which picks among repeats)."""
    return usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]


def _others(line: dict[str, Any]) -> dict[str, Any]:
    """The line's fields pi has no key for (everything but its message)."""
    return {k: v for k, v in line.items() if k != "message"}
