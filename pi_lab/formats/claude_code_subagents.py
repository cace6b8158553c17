"""Claude Code's sub-agents hung into the session tree: a run from its own file
(``<session>/subagents/agent-<id>.jsonl``, or the older ``agent-<id>.jsonl`` beside the session)
or from ``isSidechain`` lines of the main file goes under the assistant entry whose
``Task``/``Agent`` call started it, behind an empty compaction so its context starts fresh.
docs/formats.md ("Sub-agents") gives each rule with its source."""

from __future__ import annotations

import glob
import os
from typing import TYPE_CHECKING, Any

import orjson

from pi_lab.formats.claude_code_lines import (
    _AGENT_TOOLS,
    CUSTOM_PREFIX,
    SUBAGENT_START,
    Entry,
    _read_file,
    _s,
    _text_of,
    read_lines,
)

if TYPE_CHECKING:
    from pi_lab.formats.claude_code import _Converter

__all__ = ["agent_links", "load_subagents", "sidechains"]


def _subagent_files(path: str, links: dict[str, str]) -> list[str]:
    """``<project>/<session id>/subagents/**/agent-*.jsonl`` beside the session file, and, for
    an agent the main file names (``links``) that has none there, the older layout's
    ``<project>/agent-<id>.jsonl`` (inspect_scout's ``client.find_agent_file`` reads both)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem.startswith("agent-"):
        return []  # a sub-agent's own file opened by itself
    folder = os.path.join(os.path.dirname(path), stem, "subagents")
    found: list[str] = []
    if os.path.isdir(folder):
        found = glob.glob(os.path.join(glob.escape(folder), "**", "agent-*.jsonl"), recursive=True)
    have = {os.path.basename(f) for f in found}
    for agent in links:
        name = f"agent-{agent}.jsonl"
        beside = os.path.join(os.path.dirname(path), name)
        if name not in have and os.sep not in agent and agent not in (".", "..") and os.path.isfile(beside):
            found.append(beside)
    return sorted(f for f in found if os.path.isfile(f))


def agent_links(conv: _Converter) -> dict[str, str]:
    """agent id → the tool_use id of the call that started it, from the main file's lines:
    a tool result's ``toolUseResult.agentId`` or top-level ``agentId``, and ``agent_progress``
    progress lines (``parentToolUseID``, ``data.agentId``)."""
    links: dict[str, str] = {}
    for entry in conv.entries:
        cc = entry.get("claudeCode") or {}
        if entry.get("type") == "message" and entry["message"].get("role") == "toolResult":
            call_id = entry["message"].get("toolCallId")
            result = cc.get("toolUseResult")
            agent = result.get("agentId") if isinstance(result, dict) else None
            if not _s(agent) and cc.get("isSidechain") is not True:
                agent = cc.get("agentId")
            agent_id = _s(agent)
            if agent_id and _s(call_id) and call_id in conv.tool_calls:
                links.setdefault(agent_id, call_id)
        elif entry.get("type") == "custom" and entry.get("customType") == CUSTOM_PREFIX + "progress":
            data = entry["data"].get("data")
            call_id = entry["data"].get("parentToolUseID")
            if isinstance(data, dict) and data.get("type") == "agent_progress" and _s(data.get("agentId")) \
                    and _s(call_id):
                links.setdefault(data["agentId"], call_id)
    return links


def _start_entry(conv: _Converter, call_entry: Entry | None, agent: str | None, call_id: str | None,
                 timestamp: Any, source: str, before: Entry) -> Entry:
    """The empty compaction a sub-agent's context starts at (pi's projection starts a fresh
    context only at a compaction; this one adds a message of no text and 0 tokens)."""
    entry_id = conv._new_id(None, f"subagent-{agent or call_id or len(conv.entries)}")
    entry = {"type": "compaction", "id": entry_id, "parentId": call_entry["id"] if call_entry else None,
             "timestamp": timestamp, "summary": "", "firstKeptEntryId": None, "tokensBefore": 0,
             "details": {"claudeCode": SUBAGENT_START, "agentId": agent, "toolCallId": call_id, "source": source},
             "claudeCode": {"synthetic": SUBAGENT_START, "agentId": agent, "toolCallId": call_id}}
    # Before the run's first entry, so that parents precede children in file order (the
    # engine's one-pass index takes that shape; a later parent sends it down the general path).
    at = next((i for i in range(len(conv.entries) - 1, -1, -1) if conv.entries[i] is before), len(conv.entries))
    conv.entries.insert(at, entry)
    conv.raw_parent[id(entry)] = call_entry["id"] if call_entry else None
    conv.owner.setdefault(entry_id, entry)
    return entry


def _roots(conv: _Converter, entries: list[Entry], members: set[int]) -> dict[int, Entry]:
    """For each of ``entries`` (``members``: their ``id()``s) the first entry of its chain
    among them: one walk per chain, each entry visited once (a loop's entry is a root)."""
    root_of: dict[int, Entry] = {}
    for entry in entries:
        chain: list[Entry] = []
        on_chain: set[int] = set()
        current = entry
        while id(current) not in root_of:
            parent = conv._resolve(conv.raw_parent.get(id(current)))
            chain.append(current)
            on_chain.add(id(current))
            if parent is None or id(parent) not in members or id(parent) in on_chain:
                root_of[id(current)] = current
                break
            current = parent
        top = root_of[id(current)]
        for item in chain:
            root_of.setdefault(id(item), top)
    return root_of


def _attach_runs(conv: _Converter, run: list[Entry], call_id: str | None, agent: str | None, source: str) -> None:
    """Hang the roots of ``run`` (one sub-agent's entries) under a start entry below the
    assistant entry holding tool call ``call_id``."""
    if not run:
        return
    members = {id(e) for e in run}
    call_entry = conv.tool_calls.get(call_id) if call_id else None
    start = _start_entry(conv, call_entry, agent, call_id, run[0].get("timestamp"), source, run[0])
    for entry in run:
        parent = conv._resolve(conv.raw_parent.get(id(entry)))
        if parent is None or parent is entry or id(parent) not in members:
            conv.raw_parent[id(entry)] = start["id"]


def sidechains(conv: _Converter, links: dict[str, str]) -> None:
    """Older files: sub-agent lines (``isSidechain``) in the main file, each run a chain from a
    root. A run is linked to its call by an ``agentId`` its lines carry, else by its first
    prompt equal to a Task/Agent call's ``prompt``; a run with no match stays a root."""
    side = [e for e in conv.entries if (e.get("claudeCode") or {}).get("isSidechain") is True
            or (e.get("type") == "custom" and isinstance(e.get("data"), dict) and e["data"].get("isSidechain") is True)]
    if not side:
        return
    members = {id(e) for e in side}
    runs: dict[int, list[Entry]] = {}
    roots: dict[int, Entry] = {}
    root_of = _roots(conv, side, members)
    for entry in side:
        root = root_of[id(entry)]
        runs.setdefault(id(root), []).append(entry)
        roots[id(root)] = root
    prompts: dict[str, str] = {}
    for call_id, holder in conv.tool_calls.items():
        for block in holder["message"]["content"]:
            if block.get("type") == "toolCall" and block.get("id") == call_id and _s(block.get("name")) in _AGENT_TOOLS:
                prompt = block.get("arguments", {}).get("prompt")
                if _s(prompt):
                    prompts.setdefault(prompt, call_id)
    used: set[str] = set()
    for key, run in runs.items():
        root = roots[key]
        agent = next((e["claudeCode"].get("agentId") for e in run if _s((e.get("claudeCode") or {}).get("agentId"))), None)
        call_id = links.get(agent) if agent else None
        if call_id is None and root.get("type") == "message":
            text = _text_of(root["message"].get("content"))
            call_id = prompts.get(text)
        if call_id is None or call_id in used:
            continue
        used.add(call_id)
        _attach_runs(conv, run, call_id, agent, "sidechain")


def load_subagents(conv: _Converter, path: str, links: dict[str, str], skipped: dict[str, list[int]]) -> list[str]:
    files = _subagent_files(path, links)
    for file in files:
        name = os.path.basename(file)[: -len(".jsonl")]
        agent = name[len("agent-"):]
        meta_path = file[: -len(".jsonl")] + ".meta.json"
        call_id = links.get(agent)
        if os.path.isfile(meta_path):
            try:
                meta = orjson.loads(_read_file(meta_path))
            except (orjson.JSONDecodeError, OSError):
                meta = None
            if isinstance(meta, dict) and _s(meta.get("toolUseId")):
                call_id = meta["toolUseId"]
        try:
            data = _read_file(file)
        except OSError:
            continue
        lines, bad = read_lines(data)
        tag = os.path.relpath(file, os.path.dirname(path))
        if bad:
            skipped[tag] = bad
        run = conv.convert(lines, file_tag=tag, prefix=f"{agent}:")
        if call_id is not None and call_id not in conv.tool_calls:
            call_id = None
        _attach_runs(conv, run, call_id, agent, "subagent-file")
    return files
