"""The per-file extractor: one session file's bytes to the corpus rows (plain Python columns).

Everything here is a pure function of the file's bytes, so the in-process scan, the process
pool and Ray Data all call :func:`extract_file` and get the same rows. Fork/clone copies are
a property of the corpus, not of one file: ``copied``/``copied_from`` are left False/None here
and filled by :func:`pi_lab.corpus.tables.resolve_copies`.

What the model saw at each call is computed in one walk of the tree: the projection of the
current root-to-node path is kept as a stack that grows and shrinks with the walk (an entry is
appended when the walk enters it and removed when it leaves), and only a compaction or a
``context_edit`` rebuilds it (they change earlier messages). The numbers equal
``estimate_context_tokens(build_session_context(entries, call.parentId).messages)``.
That stack is :mod:`pi_lab.corpus.context`; the per-field readers are :mod:`pi_lab.corpus.fields`.
"""

from __future__ import annotations

import os
from typing import Any

from pi_lab.corpus.context import _Context, _rebuild, _Stats
from pi_lab.corpus.fields import _append_usage, _content_bytes, _ms, _num, _text_chars, _usage_row, _utf8_len, _window
from pi_lab.corpus.schema import TABLE_NAMES
from pi_lab.compaction.tokens import estimate_tokens, js_json, usage_anchor
from pi_lab.session._json import loads_object
from pi_lab.session._text import js_len, js_trim
from pi_lab.session.migration import migrate_entries
from pi_lab.session.projection import _context_entries_of_path, entry_to_messages
from pi_lab.session.readonly import stable_uuid_factory
from pi_lab.session.storage import parse_lines

__all__ = ["TABLE_NAMES", "extract_file", "extract_bytes", "read_complete_lines", "FileUnreadable"]

# pi's default compaction reserve (compaction.md §3): a compaction whose tokensBefore passed
# window - reserve was the automatic threshold check.
_DEFAULT_RESERVE = 16384

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)


class FileUnreadable(Exception):
    """A file that yields no session (its reason goes to ``Corpus.errors``)."""


# ---------------------------------------------------------------------------------------------
# Reading


def read_complete_lines(data: bytes) -> tuple[list[Entry], list[int], bool]:
    """Entries of ``data`` up to its last complete line, the skipped line numbers, and whether
    an unfinished last line was left out (a live pi session being written).

    A last line without its newline that parses as a JSON object is kept: pi itself reads
    such a line (and repairs the newline when it opens the file for writing).
    """
    loaded = parse_lines(data, complete_only=True)
    entries, skipped = loaded.entries, list(loaded.skipped_lines)
    tail = data[loaded.consumed_bytes :]
    partial = False
    if tail.strip():
        entry = loads_object(tail)
        if entry is None:
            partial = True
        else:
            entries.append(entry)
    return entries, skipped, partial


# ---------------------------------------------------------------------------------------------
# The extractor


def _empty_columns() -> dict[str, dict[str, list[Any]]]:
    from pi_lab.corpus.schema import SCHEMAS

    cols = {name: {field.name: [] for field in SCHEMAS[name]} for name in TABLE_NAMES}
    cols["tool_calls"]["_start_ms"] = []  # call times, for the seconds until the result
    return cols


def extract_file(path: str | os.PathLike[str]) -> dict[str, dict[str, list[Any]]]:
    """Read ``path`` (never writing it) and return its rows, one column dict per table.

    Raises :class:`FileUnreadable` (or OSError) for a file that holds no session.
    """
    from pi_lab.session.storage import check_regular_file

    path = os.fspath(path)
    check_regular_file(path)
    with open(path, "rb") as handle:
        data = handle.read()
    return extract_bytes(data, path)


def extract_bytes(data: bytes, path: str) -> dict[str, dict[str, list[Any]]]:
    if not data.strip():
        raise FileUnreadable("empty file (no session header)")
    file_entries, skipped, partial = read_complete_lines(data)
    if not file_entries:
        raise FileUnreadable("no JSON object on any line")
    header = file_entries[0]
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        if data.startswith(b"\xef\xbb\xbf"):
            raise FileUnreadable("the first line starts with a byte order mark, which pi cannot parse")
        raise FileUnreadable(f"first entry is not a session header (type {header.get('type')!r})")
    raw_version = header.get("version", 1)
    version = raw_version if isinstance(raw_version, int) and not isinstance(raw_version, bool) else 1
    # Old formats are migrated in memory only, with ids derived from the bytes (as the viewer does).
    migrate_entries(file_entries, stable_uuid_factory(data))
    entries = [e for e in file_entries if e.get("type") != "session"]
    return _Extractor(path, header, entries, version, len(skipped), partial).run()


class _Extractor:
    def __init__(self, path: str, header: Entry, entries: list[Entry], version: int, skipped: int, partial: bool):
        self.path = path
        self.header = header
        self.entries = entries
        self.version = version
        self.skipped = skipped
        self.partial = partial
        self.session_id = header["id"]
        self.cols = _empty_columns()
        self.stats = _Stats()

    # -- structure --------------------------------------------------------------------------

    def run(self) -> dict[str, dict[str, list[Any]]]:
        entries = self.entries
        by_id: dict[str, Entry] = {}
        for entry in entries:
            entry_id = entry.get("id")
            if entry_id.__class__ is str:
                by_id[entry_id] = entry
        children: dict[int, list[Entry]] = {}
        roots: list[Entry] = []
        for entry in entries:
            parent_id = entry.get("parentId")
            parent = by_id.get(parent_id) if parent_id and parent_id != entry.get("id") else None
            if parent is None:
                roots.append(entry)
            else:
                children.setdefault(id(parent), []).append(entry)
        labels: dict[str, str] = {}
        name: str | None = None
        for entry in entries:
            kind = entry.get("type")
            if kind == "label":
                target = entry.get("targetId")
                if entry.get("label"):
                    labels[target] = entry["label"]
                else:
                    labels.pop(target, None)
            elif kind == "session_info":
                raw = entry.get("name")
                name = (js_trim(raw) if isinstance(raw, str) else "") or None
        # pi's leaf is the last entry in file order; the active path is its root-to-leaf path.
        active: set[int] = set()
        if entries:
            node: Entry | None = entries[-1]
            while node is not None and id(node) not in active:
                active.add(id(node))
                parent_id = node.get("parentId")
                node = by_id.get(parent_id) if parent_id else None
        self.by_id, self.children, self.labels, self.active = by_id, children, labels, active

        self.call_rows: dict[int, int] = {}  # id(assistant entry) -> model_calls row
        self.compaction_ids: list[Any] = []  # the compactions on the walked path, innermost last
        self.invalidating: list[int] = []  # depths of the context_edits and compactions on the path
        self.pending_tools: dict[str, int] = {}  # toolCallId -> tool_calls row (current path)
        depth_of: dict[int, int] = {}
        self.depth_of = depth_of
        visited: set[int] = set()
        # Roots in file order; then anything a parentId cycle made unreachable (hand edits).
        starts = list(roots)
        self._walk(starts, depth_of, visited)
        leftovers = [e for e in entries if id(e) not in visited]
        while leftovers:
            self._walk([leftovers[0]], depth_of, visited, fallback=True)
            leftovers = [e for e in leftovers if id(e) not in visited]
        self._entry_rows(depth_of)
        self._finish_calls()
        self._session_row(name)
        return self.cols

    def _walk(self, starts: list[Entry], depth_of: dict[int, int], visited: set[int], fallback: bool = False) -> None:
        stats = self.stats
        ctx = _Context()
        path: list[Entry] = []
        undo: list[Any] = []  # per entered entry: None (pop) or the context to restore
        tool_undo: list[list[tuple[str, Any]]] = []
        stack: list[tuple[Entry, bool]] = [(e, False) for e in reversed(starts)]
        children = self.children
        while stack:
            entry, leaving = stack.pop()
            if leaving:
                saved = undo.pop()
                if saved is None:
                    ctx.pop()
                else:
                    ctx = saved
                if entry.get("type") == "compaction":
                    self.compaction_ids.pop()
                if entry.get("type") in ("compaction", "context_edit"):
                    self.invalidating.pop()
                for key, previous in reversed(tool_undo.pop()):
                    if previous is None:
                        self.pending_tools.pop(key, None)
                    else:
                        self.pending_tools[key] = previous
                path.pop()
                continue
            if id(entry) in visited:
                continue
            visited.add(id(entry))
            depth_of[id(entry)] = len(path)
            changes: list[tuple[str, Any]] = []
            if fallback:
                ctx = self._context_from_scratch(entry)
                self.compaction_ids = [e.get("id") for e in ctx.entries[:1] if e.get("type") == "compaction"]
                self.invalidating = []  # (cycle members: the gauge estimate falls back to the plain sum)
            self._visit(entry, ctx, path, changes)
            path.append(entry)
            kind = entry.get("type")
            entry_id = entry.get("id")
            if kind == "compaction" or kind == "context_edit":
                self.invalidating.append(len(path) - 1)
            if kind == "compaction":
                self.compaction_ids.append(entry_id)
                undo.append(ctx)
                ctx = _rebuild(_context_entries_of_path(path), stats)
                self._compaction_after(entry, ctx, path)
            elif kind == "context_edit" or (entry_id.__class__ is str and entry_id in ctx.edits):
                undo.append(ctx)
                ctx = _rebuild(ctx.entries + [entry], stats)
            else:
                undo.append(None)
                ctx.push(entry, stats.of(entry, None))
            tool_undo.append(changes)
            stack.append((entry, True))
            kids = children.get(id(entry))
            if kids:
                for child in reversed(kids):
                    stack.append((child, False))

    def _context_from_scratch(self, entry: Entry) -> _Context:
        """Context at ``entry``'s parent by the engine's own walk (entries on a parentId cycle)."""
        from pi_lab.session.tree import get_branch

        parent_id = entry.get("parentId")
        path = get_branch(self.by_id, parent_id) if parent_id else []
        return _rebuild(_context_entries_of_path(path), self.stats)

    # -- rows --------------------------------------------------------------------------------

    def _visit(self, entry: Entry, ctx: _Context, path: list[Entry], changes: list[tuple[str, Any]]) -> None:
        if entry.get("type") != "message":
            return
        message = entry.get("message")
        if not isinstance(message, dict):
            return
        role = message.get("role")
        if role == "assistant":
            self._model_call(entry, message, ctx, path, changes)
        elif role == "toolResult":
            call_id = message.get("toolCallId")
            row = self.pending_tools.get(call_id) if isinstance(call_id, str) else None
            if row is not None:
                tc = self.cols["tool_calls"]
                if tc["result_entry_id"][row] is None:
                    tc["result_entry_id"][row] = entry.get("id")
                    tc["result_bytes"][row] = _content_bytes(message.get("content"))
                    tc["is_error"][row] = bool(message.get("isError"))
                    start, end = tc["_start_ms"][row], _ms(entry.get("timestamp"))
                    tc["seconds"][row] = (end - start) / 1000 if start is not None and end is not None else None

    def _model_call(self, entry: Entry, message: dict[str, Any], ctx: _Context, path: list[Entry], changes) -> None:
        mc = self.cols["model_calls"]
        usage = message.get("usage")
        inp, out, cr, cw, total, cost = _usage_row(usage)
        model = message.get("model") if isinstance(message.get("model"), str) else None
        window = _window(model)
        measured = (inp + cr + cw) if usage_anchor(message) is not None else None
        estimate = ctx.estimate
        projected = self._projected(ctx, path, estimate)
        seen = measured if measured is not None else projected
        compaction_id = self.compaction_ids[-1] if self.compaction_ids else None
        self.call_rows[id(entry)] = len(mc["entry_id"])
        mc["file"].append(self.path)
        mc["session_id"].append(self.session_id)
        mc["entry_id"].append(entry.get("id"))
        mc["parent_id"].append(entry.get("parentId"))
        mc["timestamp"].append(_ms(entry.get("timestamp")))
        mc["provider"].append(message.get("provider") if isinstance(message.get("provider"), str) else None)
        mc["model"].append(model)
        mc["stop_reason"].append(message.get("stopReason") if isinstance(message.get("stopReason"), str) else None)
        mc["context_messages"].append(ctx.message_count)
        mc["context_tokens_est"].append(float(estimate))
        mc["context_tokens_plain"].append(ctx.plain_tokens)
        mc["context_tokens_projected"].append(float(projected))
        mc["input_tokens_measured"].append(float(measured) if measured is not None else None)
        _append_usage(mc, (inp, out, cr, cw, total, cost))
        mc["compaction_id"].append(compaction_id)
        mc["context_window"].append(window)
        mc["fill_ratio"].append(float(seen) / window if window else None)
        mc["overflowed"].append(False)
        mc["retried"].append(False)
        mc["depth"].append(len(path))
        mc["on_active_path"].append(id(entry) in self.active)
        mc["copied"].append(False)
        mc["copied_from"].append(None)
        content = message.get("content")
        if isinstance(content, list):
            tc = self.cols["tool_calls"]
            start = _ms(entry.get("timestamp"))
            for block in content:
                if not isinstance(block, dict) or block.get("type") != "toolCall":
                    continue
                call_id = block.get("id") if isinstance(block.get("id"), str) else None
                if call_id is not None:
                    changes.append((call_id, self.pending_tools.get(call_id)))
                    self.pending_tools[call_id] = len(tc["entry_id"])
                tc["file"].append(self.path)
                tc["session_id"].append(self.session_id)
                tc["entry_id"].append(entry.get("id"))
                tc["tool_call_id"].append(call_id)
                tc["tool_name"].append(block.get("name") if isinstance(block.get("name"), str) else None)
                tc["argument_bytes"].append(_utf8_len(js_json(block.get("arguments", {}))))
                tc["result_entry_id"].append(None)
                tc["result_bytes"].append(None)
                tc["is_error"].append(None)
                tc["seconds"].append(None)
                tc["model"].append(model)
                tc["copied"].append(False)
                tc["copied_from"].append(None)
                tc["_start_ms"].append(start)

    def _projected(self, ctx: _Context, path: list[Entry], estimate: Any) -> Any:
        """pi's gauge estimate (``estimate_projected_context_tokens``): the usage anchor counts
        only when it was measured after the last context_edit or compaction on the branch."""
        anchor = ctx.anchor_entry()
        invalid = self.invalidating[-1] if self.invalidating else -1
        if anchor is not None and self.depth_of.get(id(anchor), -1) > invalid:
            return estimate
        if not self.has_system(ctx):
            return ctx.plain_tokens  # without system messages the fallback is the plain sum
        # The system messages are replayed into one state: rare (only right after an edit or
        # a compaction), so the engine's function is used on the projection of this path.
        from pi_lab.compaction.tokens import estimate_projected_context_tokens
        from pi_lab.session.projection import project_path

        return estimate_projected_context_tokens(project_path(path), path).tokens

    def has_system(self, ctx: _Context) -> bool:
        for entry in ctx.entries:
            if entry.get("type") == "message" and isinstance(entry.get("message"), dict) and entry["message"].get("role") == "system":
                return True
            if entry.get("type") == "compaction" and entry.get("systemMessage"):
                return True
        return False

    def _compaction_after(self, entry: Entry, ctx: _Context, path: list[Entry]) -> None:
        cp = self.cols["compactions"]
        first_kept = entry.get("firstKeptEntryId")
        kept = 0
        for i in range(len(path) - 2, -1, -1):
            if path[i].get("id") == first_kept:
                kept = len(path) - 1 - i
                break
        # The trigger as the file shows it: an overflow recovery follows a failed call whose
        # omission (context_edit) sits right before the compaction; the threshold check runs
        # after a successful turn; anything else was asked for (/compact) or by an extension.
        trigger = "manual"
        j = len(path) - 2
        saw_edit = False
        while j >= 0 and path[j].get("type") == "context_edit":
            saw_edit = True
            j -= 1
        previous = path[j] if j >= 0 else None
        prev_msg = previous.get("message") if previous is not None and previous.get("type") == "message" else None
        if isinstance(prev_msg, dict) and prev_msg.get("role") == "assistant":
            stop = prev_msg.get("stopReason")
            if stop in ("error", "length") and saw_edit:
                trigger = "overflow"
                row = self.call_rows.get(id(previous))
                if row is not None:
                    self.cols["model_calls"]["overflowed"][row] = True
            else:
                window = _window(prev_msg.get("model") if isinstance(prev_msg.get("model"), str) else None)
                before = _num(entry.get("tokensBefore"))
                trigger = "threshold" if window and before > window - _DEFAULT_RESERVE else "manual"
        details = entry.get("details") if isinstance(entry.get("details"), dict) else {}
        summary = entry.get("summary")
        inp, out, cr, cw, total, cost = _usage_row(entry.get("usage"))
        cp["file"].append(self.path)
        cp["session_id"].append(self.session_id)
        cp["entry_id"].append(entry.get("id"))
        cp["parent_id"].append(entry.get("parentId"))
        cp["timestamp"].append(_ms(entry.get("timestamp")))
        cp["tokens_before"].append(float(_num(entry.get("tokensBefore"))))
        cp["first_kept_entry_id"].append(first_kept if isinstance(first_kept, str) else None)
        cp["summary_chars"].append(js_len(summary) if isinstance(summary, str) else 0)
        cp["kept_entries"].append(kept)
        cp["messages_after"].append(ctx.message_count)
        cp["tokens_after"].append(float(self._projected(ctx, path, ctx.estimate)))
        cp["trigger"].append("hook" if entry.get("fromHook") is True and trigger == "manual" else trigger)
        cp["from_hook"].append(entry.get("fromHook") if isinstance(entry.get("fromHook"), bool) else None)
        cp["read_files"].append(_str_list(details.get("readFiles")))
        cp["modified_files"].append(_str_list(details.get("modifiedFiles")))
        cp["summary_cost"].append(cost)
        cp["summary_tokens"].append(float(total))
        cp["copied"].append(False)
        cp["copied_from"].append(None)

    def _finish_calls(self) -> None:
        # A failed call that pi dropped with context_edit(null) and then sent again.
        mc = self.cols["model_calls"]
        for entry in self.entries:
            if entry.get("type") != "context_edit" or entry.get("replacement") is not None:
                continue
            target = self.by_id.get(entry.get("targetId"))
            row = self.call_rows.get(id(target)) if target is not None else None
            if row is not None:
                mc["retried"][row] = True
        del self.cols["tool_calls"]["_start_ms"]

    def _entry_rows(self, depth_of: dict[int, int]) -> None:
        ec = self.cols["entries"]
        ms = self.cols["messages"]
        bs = self.cols["branch_summaries"]
        for line_no, entry in enumerate(self.entries, start=1):
            kind = entry.get("type")
            entry_id = entry.get("id")
            kids = len(self.children.get(id(entry), ()))
            message = entry.get("message") if kind == "message" and isinstance(entry.get("message"), dict) else None
            role = message.get("role") if message is not None else None
            ts = _ms(entry.get("timestamp"))
            if message is not None:
                produced = [message]
            elif kind in ("compaction", "branch_summary", "custom_message"):
                produced = entry_to_messages(entry)
            else:
                produced = []
            chars = 0
            for m in produced:
                r = m.get("role")
                if r in ("compactionSummary", "branchSummary"):
                    chars += js_len(m["summary"]) if isinstance(m.get("summary"), str) else 0
                elif r == "system":
                    chars += _text_chars(m.get("content"))
                else:
                    chars += _text_chars(m.get("content"))
            ec["file"].append(self.path)
            ec["session_id"].append(self.session_id)
            ec["entry_id"].append(entry_id if isinstance(entry_id, str) else None)
            ec["parent_id"].append(entry.get("parentId") if isinstance(entry.get("parentId"), str) else None)
            ec["line"].append(line_no)
            ec["type"].append(kind if isinstance(kind, str) else None)
            ec["role"].append(role if isinstance(role, str) else None)
            ec["timestamp"].append(ts)
            ec["depth"].append(depth_of.get(id(entry), 0))
            ec["child_count"].append(kids)
            ec["is_leaf"].append(kids == 0)
            ec["on_active_path"].append(id(entry) in self.active)
            ec["branch_point"].append(kids > 1)
            ec["label"].append(self.labels.get(entry_id) if isinstance(entry_id, str) else None)
            ec["chars"].append(chars)
            ec["copied"].append(False)
            ec["copied_from"].append(None)
            if message is not None:
                usage = _usage_row(message.get("usage")) if role == "assistant" else (0, 0, 0, 0, 0, 0.0)
                ms["file"].append(self.path)
                ms["session_id"].append(self.session_id)
                ms["entry_id"].append(entry_id if isinstance(entry_id, str) else None)
                ms["timestamp"].append(ts)
                ms["role"].append(role if isinstance(role, str) else None)
                ms["text_chars"].append(_text_chars(message.get("content")))
                # the walk estimated this entry's message already (one message, no edit)
                known = self.stats.cache.get((id(entry), 0))
                ms["est_tokens"].append(known[1][0] if known is not None and known[0] == 1 else estimate_tokens(message))
                ms["stop_reason"].append(message.get("stopReason") if isinstance(message.get("stopReason"), str) else None)
                ms["error_message"].append(message.get("errorMessage") if isinstance(message.get("errorMessage"), str) else None)
                ms["model"].append(message.get("model") if isinstance(message.get("model"), str) else None)
                ms["provider"].append(message.get("provider") if isinstance(message.get("provider"), str) else None)
                ms["tool_name"].append(message.get("toolName") if isinstance(message.get("toolName"), str) else None)
                _append_usage(ms, usage)
                ms["on_active_path"].append(id(entry) in self.active)
                ms["copied"].append(False)
                ms["copied_from"].append(None)
            elif kind == "branch_summary":
                details = entry.get("details") if isinstance(entry.get("details"), dict) else {}
                summary = entry.get("summary")
                bs["file"].append(self.path)
                bs["session_id"].append(self.session_id)
                bs["entry_id"].append(entry_id if isinstance(entry_id, str) else None)
                bs["timestamp"].append(ts)
                bs["from_id"].append(entry.get("fromId") if isinstance(entry.get("fromId"), str) else None)
                bs["target_id"].append(entry.get("parentId") if isinstance(entry.get("parentId"), str) else None)
                bs["summary_chars"].append(js_len(summary) if isinstance(summary, str) else 0)
                bs["read_files"].append(_str_list(details.get("readFiles")))
                bs["modified_files"].append(_str_list(details.get("modifiedFiles")))
                bs["from_hook"].append(entry.get("fromHook") if isinstance(entry.get("fromHook"), bool) else None)
                bs["copied"].append(False)
                bs["copied_from"].append(None)

    def _session_row(self, name: str | None) -> None:
        sc = self.cols["sessions"]
        header = self.header
        ec = self.cols["entries"]
        mc = self.cols["model_calls"]
        parent = header.get("parentSession")
        if not isinstance(parent, str):
            parent = header.get("branchedFrom") if isinstance(header.get("branchedFrom"), str) else None
        times = [t for t in ec["timestamp"] if t is not None]
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
        models = sorted({m for m in mc["model"] if m})
        types = ec["type"]
        sc["file"].append(self.path)
        sc["session_id"].append(self.session_id)
        sc["cwd"].append(cwd)
        sc["project"].append(cwd)
        sc["parent_session"].append(parent or None)
        sc["parent_session_id"].append(None)
        sc["created"].append(_ms(header.get("timestamp")))
        sc["last_activity"].append(max(times) if times else None)
        sc["name"].append(name)
        sc["version"].append(self.version)
        sc["entries"].append(len(self.entries))
        sc["messages"].append(len(self.cols["messages"]["entry_id"]))
        sc["model_calls"].append(len(mc["entry_id"]))
        sc["branch_points"].append(sum(1 for b in ec["branch_point"] if b))
        sc["leaves"].append(sum(1 for b in ec["is_leaf"] if b))
        sc["max_depth"].append(max(ec["depth"]) if ec["depth"] else 0)
        sc["compactions"].append(types.count("compaction"))
        sc["branch_summaries"].append(types.count("branch_summary"))
        sc["context_edits"].append(types.count("context_edit"))
        sc["labels"].append(len(self.labels))
        sc["models"].append(models)
        for key in ("input", "output", "cache_read", "cache_write", "total_tokens", "cost"):
            sc[key].append(float(sum(mc[key])))
        sc["copied_entries"].append(0)
        sc["skipped_lines"].append(self.skipped)
        sc["partial_last_line"].append(self.partial)


def _str_list(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [v for v in value if isinstance(v, str)]
