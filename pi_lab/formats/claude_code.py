"""Claude Code session files, read by Claude Code's own rules, behind the session protocol.

A Claude Code session (``~/.claude/projects/<project>/<session id>.jsonl``) is, like pi's, an
append-only JSONL tree (``uuid`` / ``parentUuid``). This module maps its lines onto pi-v3-shaped
entry dicts and holds them in :class:`ClaudeCodeSession`, a read-only ``SessionManager``: every
view that reads pi's manager reads a Claude Code session unchanged, and pi's pure projection
(``project_path``) gives what the model saw by Claude Code's rules, because each rule is
expressed with an entry kind pi already projects:

* one streamed response (several assistant lines sharing ``message.id`` and ``requestId``,
  chained by ``parentUuid``) is ONE assistant message entry whose id is the last line's uuid;
* ``tool_result`` blocks become ``toolResult`` messages (one entry each, chained);
* ``compact_boundary`` + the ``isCompactSummary`` user line become one ``compaction`` entry
  attached to ``logicalParentUuid`` with no kept region: the model sees the summary and what
  follows, nothing before;
* ``microcompact_boundary`` adds ``context_edit`` entries that show each cleared tool result
  as cleared from that point on;
* a sub-agent run (``subagents/agent-<id>.jsonl`` or ``isSidechain`` lines) hangs under the
  assistant entry whose ``Task``/``Agent`` tool call started it, behind an empty ``compaction``
  entry, so its context starts fresh;
* every other line (progress, snapshots, other system lines, titles, modes, unknown types) is a
  ``custom`` entry: shown in the tree, never in the context.

docs/formats.md gives each rule with its source. Nothing here writes: the file is read once,
with ``O_RDONLY``, and every write method raises :class:`ClaudeCodeReadOnly`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from pi_lab.formats._foreign import ForeignReadOnly, ForeignSession, check_open_options
from pi_lab.formats.claude_code_lines import (
    _STOP_REASONS,
    CLEARED_TOOL_RESULT,
    CUSTOM_PREFIX,
    SUBAGENT_START,
    Entry,
    _assistant_blocks,
    _ms,
    _others,
    _parse_ms,
    _read_file,
    _s,
    _text_of,
    _usage_total,
    _user_blocks,
    pi_usage,
    read_lines,
    unique_id,
)
from pi_lab.formats.claude_code_subagents import agent_links, load_subagents, sidechains
from pi_lab.session._gc import collector_paused
from pi_lab.session.storage import check_regular_file

__all__ = [
    "ClaudeCodeSession",
    "ClaudeCodeReadOnly",
    "open_claude_code",
    "convert_lines",
    "read_lines",
    "CLEARED_TOOL_RESULT",
    "SUBAGENT_START",
]


class ClaudeCodeReadOnly(ForeignReadOnly):
    """A write was asked of a Claude Code session; Claude Code files are never written."""

    this = "this Claude Code session"
    files = "Claude Code files"


# ---------------------------------------------------------------------------- conversion


class _Converter:
    """Lines of one file (or several: a main file and its sub-agents) → pi-shaped entries.

    ``owner`` maps every uuid the lines hold to the entry that now stands for it (a merged
    response, a compaction, the last entry of a split user line), so a ``parentUuid`` naming
    any of them resolves; ``parentId`` values are resolved once, at the end."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.owner: dict[str, Entry] = {}
        self.raw_parent: dict[int, Any] = {}  # id(entry) → the parentUuid as written
        self.tool_calls: dict[str, Entry] = {}  # tool_use id → assistant entry
        self.tool_names: dict[str, Any] = {}
        self.tool_results: dict[str, list[Entry]] = {}  # tool_use id → toolResult entries
        self.leaf_candidates: list[tuple[float, int, Entry]] = []
        self.sidechain_candidates: list[tuple[float, int, Entry]] = []  # for a sub-agent file opened alone
        self.session_name: str | None = None
        self.legacy_summary: str | None = None
        self.first_line: dict[str, Any] | None = None
        self._taken: set[str] = set()
        self._order = 0
        self._prefix = ""
        self._last: Entry | None = None  # the last entry with a uuid (where uuid-less lines hang)

    # -- ids

    def _new_id(self, wanted: str | None, fallback: str) -> str:
        candidate = wanted if wanted is not None else fallback
        if self._prefix and wanted is not None and candidate in self._taken:
            candidate = f"{self._prefix}{wanted}"
        return unique_id(candidate, self._taken)

    def _add(self, entry: Entry, raw_parent: Any, uuid: str | None) -> Entry:
        self.entries.append(entry)
        self.raw_parent[id(entry)] = raw_parent
        if uuid is not None:
            self.owner[uuid] = entry
            self._last = entry
        return entry

    def _resolve(self, raw: Any) -> Entry | None:
        return self.owner.get(raw) if raw.__class__ is str else None

    # -- one file

    def convert(self, lines: Iterable[tuple[int, dict[str, Any]]], *, file_tag: str = "", prefix: str = "") -> list[Entry]:
        """Convert one file's lines; returns the entries it added (file order)."""
        start = len(self.entries)
        self._prefix = prefix
        self._last = None
        for number, line in lines:
            if self.first_line is None and not file_tag:
                self.first_line = line
            self._line(number, line, file_tag)
        return self.entries[start:]

    def _line(self, number: int, line: dict[str, Any], file_tag: str) -> None:
        kind = line.get("type")
        uuid = _s(line.get("uuid"))
        message = line.get("message")
        where = {"line": number, **({"file": file_tag} if file_tag else {})}
        if kind == "assistant" and isinstance(message, dict):
            self._assistant(line, uuid, message, where)
        elif kind == "user" and isinstance(message, dict):
            self._user(line, uuid, message, where)
        elif kind == "system" and line.get("subtype") == "compact_boundary":
            self._compact_boundary(line, uuid, where)
        elif kind == "system" and line.get("subtype") == "microcompact_boundary":
            self._microcompact(line, uuid, where)
        else:
            self._custom(line, uuid, where)

    def _position(self, line: dict[str, Any], uuid: str | None, number: int) -> tuple[str, Any]:
        return self._new_id(uuid, f"{self._prefix}line-{number}"), line.get("parentUuid")

    def _assistant(self, line: dict[str, Any], uuid: str | None, message: dict[str, Any], where: dict[str, Any]) -> None:
        key = (_s(message.get("id")), _s(line.get("requestId")))
        blocks = _assistant_blocks(message.get("content"))
        parent = self._streamed_parent(line.get("parentUuid"), key)
        if parent is not None:
            self._merge(parent, line, uuid, message, blocks, where)
            return
        entry_id, raw_parent = self._position(line, uuid, where["line"])
        pi_message: dict[str, Any] = {
            "role": "assistant", "content": blocks, "api": "anthropic-messages", "provider": "anthropic",
            "model": message.get("model") if _s(message.get("model")) else "",
        }
        if key[0]:
            pi_message["responseId"] = key[0]
        pi_message["usage"] = pi_usage(message.get("usage"))
        pi_message["stopReason"] = self._stop_reason(line, message)
        if line.get("isApiErrorMessage") is True:
            pi_message["errorMessage"] = _text_of(message.get("content"))
        pi_message["timestamp"] = _ms(line.get("timestamp"))
        entry = {"type": "message", "id": entry_id, "parentId": None, "timestamp": line.get("timestamp"),
                 "message": pi_message,
                 "claudeCode": {**_others(line), "lines": [where], "uuids": [uuid] if uuid else [],
                                "usageTotal": _usage_total(pi_message["usage"])}}
        self._add(entry, raw_parent, uuid)
        self._note_calls(entry, blocks)
        self._candidate(line, entry)

    def _stop_reason(self, line: dict[str, Any], message: dict[str, Any]) -> str:
        if line.get("isApiErrorMessage") is True:
            return "error"
        reason = _s(message.get("stop_reason"))
        return _STOP_REASONS.get(reason, "stop") if reason is not None else "stop"

    def _streamed_parent(self, raw_parent: Any, key: tuple[str | None, str | None]) -> Entry | None:
        """The assistant entry this line continues: its parent (through progress lines) is an
        assistant entry of the same response (``message.id`` and ``requestId``)."""
        if key[0] is None:
            return None
        entry = self._resolve(raw_parent)
        for _ in range(64):  # progress lines between two blocks of one response
            if entry is None:
                return None
            if entry.get("type") == "message":
                break
            if entry.get("type") != "custom" or entry.get("customType") != CUSTOM_PREFIX + "progress":
                return None
            entry = self._resolve(self.raw_parent.get(id(entry)))
        else:
            return None
        message = entry["message"]
        if message.get("role") != "assistant":
            return None
        cc = entry["claudeCode"]
        return entry if (message.get("responseId"), cc.get("requestId")) == key else None

    def _merge(self, entry: Entry, line: dict[str, Any], uuid: str | None, message: dict[str, Any],
               blocks: list[Any], where: dict[str, Any]) -> None:
        pi_message = entry["message"]
        pi_message["content"].extend(blocks)
        cc = entry["claudeCode"]
        usage = pi_usage(message.get("usage"))
        total = _usage_total(usage)
        # The lines of one response repeat its usage; the largest (the final count of output
        # tokens) is the call's, as ccusage keeps it.
        if total >= cc.get("usageTotal", 0):
            pi_message["usage"] = usage
            cc["usageTotal"] = total
        if message.get("stop_reason").__class__ is str or line.get("isApiErrorMessage") is True:
            pi_message["stopReason"] = self._stop_reason(line, message)
        entry["timestamp"] = line.get("timestamp", entry.get("timestamp"))
        self._absorb(entry, line, uuid, where)
        self._note_calls(entry, blocks)

    def _absorb(self, entry: Entry, line: dict[str, Any], uuid: str | None, where: dict[str, Any]) -> None:
        """One more line joins ``entry``: the entry takes its uuid as id (children attach to
        the last line's uuid) and every earlier uuid still resolves to it."""
        cc = entry["claudeCode"]
        cc["lines"].append(where)
        if uuid:
            cc["uuids"].append(uuid)
            self._taken.discard(entry["id"])
            entry["id"] = self._new_id(uuid, entry["id"])
            self.owner[uuid] = entry
            self._last = entry
        self._candidate(line, entry)

    def _note_calls(self, entry: Entry, blocks: list[Any]) -> None:
        for block in blocks:
            if block.get("type") == "toolCall" and _s(block.get("id")):
                self.tool_calls[block["id"]] = entry
                self.tool_names[block["id"]] = block.get("name")

    def _candidate(self, line: dict[str, Any], entry: Entry) -> None:
        if self._prefix:
            return  # a sub-agent file's line is never the session's leaf
        ms = _parse_ms(line.get("timestamp"))
        self._order += 1
        found = (ms if ms == ms else float("-inf"), self._order, entry)
        if line.get("isSidechain") is True:
            self.sidechain_candidates.append(found)
        else:
            self.leaf_candidates.append(found)

    def _user(self, line: dict[str, Any], uuid: str | None, message: dict[str, Any], where: dict[str, Any]) -> None:
        content = message.get("content")
        if line.get("isCompactSummary") is True:
            self._compact_summary(line, uuid, where)
            return
        raw_parent = line.get("parentUuid")
        timestamp = _ms(line.get("timestamp"))
        messages: list[dict[str, Any]] = []
        rest: list[Any] = []
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call_id = block.get("tool_use_id")
                    named = _s(call_id)
                    result: dict[str, Any] = {
                        "role": "toolResult", "toolCallId": call_id,
                        "toolName": self.tool_names.get(named) if named else None,
                        "content": _user_blocks(block.get("content")),
                        "isError": block.get("is_error") is True, "timestamp": timestamp,
                    }
                    if result["content"].__class__ is str:
                        result["content"] = [{"type": "text", "text": result["content"]}]
                    if result["toolName"] is None:
                        result["toolName"] = ""
                    messages.append(result)
                else:
                    rest.append(block)
            if rest or not messages:
                messages.append({"role": "user", "content": _user_blocks(rest), "timestamp": timestamp})
        else:
            messages.append({"role": "user", "content": _user_blocks(content), "timestamp": timestamp})
        # pi holds one message per entry: a line with several becomes a chain, and its uuid
        # goes to the last one (where the next line attaches).
        previous_raw: Any = raw_parent
        last_index = len(messages) - 1
        for index, pi_message in enumerate(messages):
            if index == last_index:
                entry_id = self._new_id(uuid, f"{self._prefix}line-{where['line']}")
            else:
                entry_id = self._new_id(None, f"{uuid or self._prefix + 'line-' + str(where['line'])}:{index}")
            entry = {"type": "message", "id": entry_id, "parentId": None, "timestamp": line.get("timestamp"),
                     "message": pi_message, "claudeCode": {**_others(line), "lines": [where]}}
            if index < last_index:
                entry["claudeCode"]["part"] = index
            self._add(entry, previous_raw, uuid if index == last_index else None)
            self.owner.setdefault(entry_id, entry)
            previous_raw = entry_id
            if pi_message["role"] == "toolResult" and _s(pi_message.get("toolCallId")):
                self.tool_results.setdefault(pi_message["toolCallId"], []).append(entry)
        self._candidate(line, self.entries[-1])

    def _compact_boundary(self, line: dict[str, Any], uuid: str | None, where: dict[str, Any]) -> None:
        written = line.get("compactMetadata")
        meta: dict[str, Any] = written if isinstance(written, dict) else {}
        logical = line.get("logicalParentUuid")
        raw_parent = logical if logical.__class__ is str else line.get("parentUuid")
        entry_id, _ = self._position(line, uuid, where["line"])
        pre = meta.get("preTokens")
        entry = {"type": "compaction", "id": entry_id, "parentId": None, "timestamp": line.get("timestamp"),
                 "summary": "", "firstKeptEntryId": None,
                 "tokensBefore": pre if pre.__class__ in (int, float) else None,  # null: not recorded
                 "details": {"claudeCode": "compact_boundary", "trigger": meta.get("trigger")},
                 "claudeCode": {**_others(line), "lines": [where], "uuids": [uuid] if uuid else []}}
        self._add(entry, raw_parent, uuid)

    def _compact_summary(self, line: dict[str, Any], uuid: str | None, where: dict[str, Any]) -> None:
        """The summary line after a boundary joins its compaction entry (the model sees the
        summary as the first message after it); without a boundary it is one itself."""
        text = _text_of(line["message"].get("content"))
        boundary = self._resolve(line.get("parentUuid"))
        if boundary is not None and boundary.get("type") == "compaction" and not boundary["summary"] \
                and boundary["details"].get("claudeCode") == "compact_boundary":
            boundary["summary"] = text
            boundary["claudeCode"]["summaryLine"] = _others(line)
            self._absorb(boundary, line, uuid, where)
            return
        entry_id, raw_parent = self._position(line, uuid, where["line"])
        entry = {"type": "compaction", "id": entry_id, "parentId": None, "timestamp": line.get("timestamp"),
                 "summary": text, "firstKeptEntryId": None, "tokensBefore": None,
                 "details": {"claudeCode": "compact_summary"},
                 "claudeCode": {**_others(line), "lines": [where], "uuids": [uuid] if uuid else []}}
        self._add(entry, raw_parent, uuid)
        self._candidate(line, entry)

    def _microcompact(self, line: dict[str, Any], uuid: str | None, where: dict[str, Any]) -> None:
        """The boundary line as a custom entry, preceded by one context_edit per cleared tool
        result: from here on (and only on paths through here) each shows as cleared."""
        meta = line.get("microcompactMetadata")
        cleared = meta.get("compactedToolIds") if isinstance(meta, dict) else None
        raw_parent = line.get("parentUuid")
        previous_raw: Any = raw_parent
        for index, call_id in enumerate(cleared if isinstance(cleared, list) else []):
            if not _s(call_id):
                continue
            for target in self.tool_results.get(call_id, []):
                edit_id = self._new_id(None, f"{uuid or self._prefix + 'line-' + str(where['line'])}:clear-{index}")
                edit = {"type": "context_edit", "id": edit_id, "parentId": None, "timestamp": line.get("timestamp"),
                        "targetId": target["id"], "replacement": {"content": CLEARED_TOOL_RESULT},
                        "claudeCode": {"lines": [where], "microcompactOf": call_id}}
                self._add(edit, previous_raw, None)
                self.owner.setdefault(edit_id, edit)
                previous_raw = edit_id
        self._custom(line, uuid, where, raw_parent=previous_raw)

    def _custom(self, line: dict[str, Any], uuid: str | None, where: dict[str, Any], raw_parent: Any = ...) -> None:
        kind = line.get("type")
        name = kind if type(kind) is str else "unknown"
        if name == "system" and _s(line.get("subtype")):
            name = f"system/{line['subtype']}"
        if kind == "custom-title" and _s(line.get("customTitle")):
            self.session_name = line["customTitle"]
        elif kind == "summary" and _s(line.get("summary")):
            self.legacy_summary = line["summary"]
        if raw_parent is ...:
            raw_parent = line.get("parentUuid") if "parentUuid" in line else self._anchor(line)
        entry_id = self._new_id(uuid, f"{self._prefix}line-{where['line']}")
        timestamp = line.get("timestamp")
        if timestamp is None and isinstance(line.get("snapshot"), dict):
            timestamp = line["snapshot"].get("timestamp")
        entry = {"type": "custom", "id": entry_id, "parentId": None, "timestamp": timestamp,
                 "customType": CUSTOM_PREFIX + name, "data": line, "claudeCode": {"lines": [where]}}
        self._add(entry, raw_parent, uuid)
        self.owner.setdefault(entry_id, entry)

    def _anchor(self, line: dict[str, Any]) -> Any:
        """Where a line without a tree position hangs: the message it names (a snapshot's
        ``messageId``, a summary's ``leafUuid``) when this file holds it, else the entry
        before it in the file (None at the top)."""
        for key in ("messageId", "leafUuid"):
            named = line.get(key)
            if named.__class__ is str and named in self.owner:
                return named
        return self._last["id"] if self._last is not None else None

    # -- finishing

    def resolve_parents(self) -> None:
        for entry in self.entries:
            raw = self.raw_parent.get(id(entry))
            target = self._resolve(raw)
            if target is not None and target is not entry:
                entry["parentId"] = target["id"]
            else:
                entry["parentId"] = raw if raw.__class__ is str and target is None else None

    def leaf(self) -> str | None:
        # Claude Code resumes from the latest user/assistant line by timestamp; the later line
        # in the file wins a tie. Sidechain lines count only in a file that has nothing else
        # (a sub-agent's own file, opened by itself).
        candidates = self.leaf_candidates or self.sidechain_candidates
        if candidates:
            return max(candidates, key=lambda c: (c[0], c[1]))[2]["id"]
        return self.entries[-1]["id"] if self.entries else None


# ---------------------------------------------------------------------------- the session


def convert_lines(lines: list[tuple[int, dict[str, Any]]]) -> tuple[list[Entry], str | None, _Converter]:
    """Entries (file order, parents resolved) and the leaf for one file's parsed lines, without
    sub-agent files (for tests and the corpus)."""
    conv = _Converter()
    conv.convert(lines)
    sidechains(conv, agent_links(conv))
    conv.resolve_parents()
    return conv.entries, conv.leaf(), conv


class ClaudeCodeSession(ForeignSession):
    """A Claude Code session as pi_lab's read-only session (``ReadableSession``).

    Entries are pi-shaped dicts (``id`` = the line's ``uuid``); each keeps what pi has no key
    for under ``"claudeCode"``. ``skipped_lines`` numbers the main file's unreadable lines,
    ``skipped_subagent_lines`` those of each sub-agent file. Nothing is ever written."""

    agent = "claude-code"
    refusal = ClaudeCodeReadOnly
    described_as = "a Claude Code session"

    _refreshed = (*ForeignSession._refreshed, "skipped_subagent_lines", "_cc_aliases", "_cc_name")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.skipped_subagent_lines: dict[str, list[int]] = {}
        self.subagent_files: list[str] = []
        self._cc_name: str | None = None
        self._cc_aliases: dict[str, str] = {}
        self._cc_moved = False  # the leaf was moved here (branch): refresh keeps it

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, subagents: bool = True) -> ClaudeCodeSession:
        resolved = os.path.abspath(os.fspath(path))
        check_regular_file(resolved)
        data = _read_file(resolved)
        st = os.stat(resolved)
        # Tens of thousands of lines make millions of acyclic dicts: the cyclic collector would
        # rescan them over and over (more than half the time of a large file), as in the engine.
        with collector_paused(data.count(b"\n") * 16, keep=True):
            return cls._build(resolved, data, subagents, (st.st_size, st.st_mtime_ns))

    @classmethod
    def _build(cls, resolved: str, data: bytes, subagents: bool, read: tuple[int, int]) -> ClaudeCodeSession:
        lines, skipped = read_lines(data)
        conv = _Converter()
        conv.convert(lines)
        links = agent_links(conv)
        sidechains(conv, links)
        skipped_sub: dict[str, list[int]] = {}
        files = load_subagents(conv, resolved, links, skipped_sub) if subagents else []
        conv.resolve_parents()
        first = conv.first_line or {}
        cwd = next((line.get("cwd") for _, line in lines if _s(line.get("cwd"))), None) or "."
        session_id = next((line.get("sessionId") for _, line in lines if _s(line.get("sessionId"))), None) \
            or os.path.splitext(os.path.basename(resolved))[0]
        first_ts = next((e.get("timestamp") for e in conv.entries if _s(e.get("timestamp"))), None)
        header = {"type": "session", "version": 3, "id": session_id, "timestamp": first_ts or "", "cwd": cwd,
                  "claudeCode": {"version": first.get("version"), "gitBranch": first.get("gitBranch")}}
        sm = cls._loaded(resolved, header, conv.entries, leaf_id=conv.leaf(), skipped=skipped, read=read)
        sm.skipped_subagent_lines = skipped_sub
        sm.subagent_files = files
        sm._cc_name = conv.session_name or conv.legacy_summary
        sm._cc_aliases = {raw: entry["id"] for raw, entry in conv.owner.items() if raw != entry["id"]}
        return sm

    # -- protocol answers that differ from pi's

    @property
    def session_name(self) -> str | None:
        return self._cc_name

    def get_session_name(self) -> str | None:
        return self._cc_name

    def resolve_id(self, entry_id: str) -> str | None:
        """The entry id standing for ``entry_id``: itself, or the merged entry an earlier line
        of a streamed response (or a compaction's boundary line) belongs to."""
        if entry_id in self._by_id:
            return entry_id
        return self._cc_aliases.get(entry_id)

    def get_entry(self, entry_id: str) -> Entry | None:
        found = super().get_entry(entry_id)
        if found is None and entry_id.__class__ is str and entry_id in self._cc_aliases:
            return super().get_entry(self._cc_aliases[entry_id])
        return found

    def get_branch(self, from_id: str | None = None) -> list[Entry]:
        if from_id is not None and from_id not in self._by_id and from_id in self._cc_aliases:
            from_id = self._cc_aliases[from_id]
        return super().get_branch(from_id)

    def build_session_projection(self, leaf_id: Any = ...):  # type: ignore[no-untyped-def]
        if leaf_id.__class__ is str and leaf_id not in self._by_id and leaf_id in self._cc_aliases:
            leaf_id = self._cc_aliases[leaf_id]
        return super().build_session_projection(leaf_id)

    def branch(self, branch_from_id: str) -> None:
        """Move the leaf in memory (navigating); the file is not touched."""
        super().branch(self.resolve_id(branch_from_id) or branch_from_id)
        self._cc_moved = True

    def _read_again(self, path: str) -> ClaudeCodeSession:
        return ClaudeCodeSession.from_file(path, subagents=bool(self.subagent_files))

    def _refreshed_leaf(self, fresh: ForeignSession, leaf: str | None, at_end: bool) -> str | None:
        """Claude Code's rule (the file's leaf), unless the leaf was moved here (``branch``):
        then it stays, on the merged entry if its line joined one."""
        if not self._cc_moved:
            return fresh._leaf_id
        if leaf in self._by_id:
            return leaf
        return self._cc_aliases.get(leaf, fresh._leaf_id) if leaf is not None else fresh._leaf_id


def open_claude_code(path: str | os.PathLike[str], *, subagents: bool = True, **options: Any) -> ClaudeCodeSession:
    """Open a Claude Code session file read-only (``pi_lab.open_session`` calls this).

    ``subagents`` reads ``<session id>/subagents/agent-*.jsonl`` beside the file. Options of
    pi's reader that mean nothing here (``lazy``, ``read_only``) are accepted and ignored."""
    check_open_options("open_claude_code", ClaudeCodeReadOnly, path, options)
    return ClaudeCodeSession.from_file(path, subagents=subagents)
