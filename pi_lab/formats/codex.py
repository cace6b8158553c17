"""OpenAI Codex CLI rollout files, read by Codex's own rules, behind the session protocol.

A rollout (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``) is one linear
history: each line is ``{timestamp, type, payload}`` and there is no tree in the file. This
module maps its lines onto pi-v3-shaped entry dicts held by :class:`CodexSession`, a read-only
``SessionManager``, so every view that reads pi's manager reads a rollout unchanged and pi's pure
projection gives what the model saw:

* ``session_meta`` (the first one) is the session header; what pi has no key for is kept under
  the header's ``"codex"`` key;
* ``turn_context`` is a ``model_change`` entry when the model changes, else a ``custom`` entry;
* one model call (the assistant-side ``response_item`` lines before its ``token_count`` event:
  output text, reasoning, function/custom/local-shell/web-search calls) is ONE assistant
  message entry carrying that call's usage;
* user messages (including Codex's injected ``<environment_context>`` and
  ``<user_instructions>`` text) are user messages; developer/system messages are
  ``custom_message`` entries (in the context, shown under their role);
* tool outputs are ``toolResult`` messages;
* ``compacted`` is a ``compaction`` entry followed by its ``replacement_history`` items as
  entries marked ``codex.fromCompaction``: after it the model sees exactly that history;
* every ``event_msg`` line, later ``session_meta`` lines and unknown types are ``custom``
  entries: shown in the tree, never in the context.

Entry ids are the line numbers (``L000123``); items of a compaction's replacement history are
``L000123.r0001``... docs/formats.md ("Codex CLI rollouts") gives each rule with its source. Nothing here writes.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from pi_lab.formats._foreign import ForeignReadOnly, ForeignSession, check_open_options
from pi_lab.formats.claude_code_lines import _ms, _read_file, _s, read_lines, unique_id
from pi_lab.formats.codex_forks import copied_lines, find_rollout, mark_copies, parent_id_of
from pi_lab.session.storage import check_regular_file

__all__ = ["CodexSession", "CodexReadOnly", "open_codex", "convert_lines", "line_id", "token_usage",
           "CUSTOM_PREFIX", "INJECTED_TAGS"]

Entry = dict[str, Any]

#: ``customType`` prefix of every line kept as a ``custom`` entry (and of developer/system
#: ``custom_message`` entries).
CUSTOM_PREFIX = "codex:"

#: Opening tags of the user messages Codex writes itself (protocol.rs constants); they are what
#: the model saw, so they stay in the context, marked ``codex.injected``.
INJECTED_TAGS = (("<environment_context>", "environment_context"), ("<user_instructions>", "user_instructions"),
                 ("# AGENTS.md instructions", "user_instructions"), ("<user_shell_command>", "user_shell_command"),
                 ("<turn_aborted>", "turn_aborted"))

_ASSISTANT_SIDE = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call",
                             "tool_search_call", "image_generation_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_ZERO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


def line_id(number: int) -> str:
    """The entry id of the line numbered ``number`` (1-based)."""
    return f"L{number:06d}"


class CodexReadOnly(ForeignReadOnly):
    """A write was asked of a Codex rollout; rollouts are never written."""

    this = "this Codex rollout"
    files = "Codex rollouts"


# ---------------------------------------------------------------------------- values


def _int(value: Any) -> int:
    return value if value.__class__ is int and value >= 0 else 0


def token_usage(raw: Any) -> dict[str, int] | None:
    """A Codex ``TokenUsage`` object as five non-negative integers, None when it is no object."""
    if not isinstance(raw, dict):
        return None
    return {k: _int(raw.get(k)) for k in ("input_tokens", "cached_input_tokens", "output_tokens",
                                          "reasoning_output_tokens", "total_tokens")}


def pi_usage(usage: dict[str, int] | None) -> dict[str, Any]:
    """pi's usage of one call's ``last_token_usage``: Codex's ``input_tokens`` include the cached
    ones, pi's ``input`` does not. ``totalTokens`` is Codex's total (input + output)."""
    if usage is None:
        return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": dict(_ZERO_COST)}
    cached = min(usage["cached_input_tokens"], usage["input_tokens"])
    total = usage["total_tokens"] or usage["input_tokens"] + usage["output_tokens"]
    return {"input": usage["input_tokens"] - cached, "output": usage["output_tokens"], "cacheRead": cached,
            "cacheWrite": 0, "totalTokens": total, "cost": dict(_ZERO_COST)}


def _text_part(text: Any) -> dict[str, Any]:
    return {"type": "text", "text": text if text.__class__ is str else ""}


def _image_part(url: Any) -> dict[str, Any]:
    """An ``input_image`` part: a data URL becomes pi's image block; a remote URL has no bytes
    in the file and is shown as text."""
    if url.__class__ is str and url.startswith("data:") and ";base64," in url[:200]:
        head, _, data = url.partition(";base64,")
        return {"type": "image", "data": data, "mimeType": head[5:] or "image/png"}
    return {"type": "text", "text": f"[image: {url}]" if url.__class__ is str else "[image]"}


def _parts(content: Any) -> list[dict[str, Any]]:
    """pi content blocks of a Codex message's content (a list of typed parts, or a string)."""
    if content.__class__ is str:
        return [_text_part(content)]
    if not isinstance(content, list):
        return []
    out: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
            out.append(_text_part(part.get("text")))
        elif kind == "input_image":
            out.append(_image_part(part.get("image_url")))
        else:
            # A part pi has no kind for (refusal, file...): kept, shown as its JSON.
            out.append({"type": "text", "text": _json(part)})
    return out


def _json(value: Any) -> str:
    from pi_lab.compaction.tokens import js_json

    return js_json(value)


def _plain(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p.get("type") == "text")


def _arguments(raw: Any) -> dict[str, Any]:
    """A function call's ``arguments`` (a JSON string by the Responses API) as an object; text
    that is no JSON object is kept under ``"input"``."""
    if isinstance(raw, dict):
        return raw
    if raw.__class__ is str:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        return {"input": raw}
    return {}


def _output(raw: Any) -> tuple[list[dict[str, Any]], bool]:
    """A tool output as pi content and its error flag. Codex writes a string, a list of content
    items (when images are present), or (older files) ``{content, success}``."""
    if raw.__class__ is str:
        return [_text_part(raw)], False
    if isinstance(raw, list):
        return _parts(raw), False
    if isinstance(raw, dict):
        parts = _parts(raw.get("content_items")) if isinstance(raw.get("content_items"), list) else []
        if not parts:
            parts = [_text_part(raw.get("content")) if raw.get("content").__class__ is str else _text_part(_json(raw))]
        return parts, raw.get("success") is False
    return [], False


def _thinking(payload: dict[str, Any]) -> dict[str, Any]:
    """A reasoning item as a thinking block: its summary text (or its raw reasoning text when it
    has no summary). ``encrypted_content`` is opaque: only the service can read it."""
    summary = _plain(_parts(payload.get("summary")))
    text = summary or _plain(_parts(payload.get("content")))
    block: dict[str, Any] = {"type": "thinking", "thinking": text}
    if _s(payload.get("encrypted_content")) and not text:
        block["redacted"] = True
    return block


def _tool_call(payload: dict[str, Any]) -> dict[str, Any]:
    kind = payload.get("type")
    call_id = payload.get("call_id") if _s(payload.get("call_id")) else payload.get("id")
    if kind == "function_call":
        name, arguments = payload.get("name"), _arguments(payload.get("arguments"))
    elif kind == "custom_tool_call":
        name, arguments = payload.get("name"), {"input": payload.get("input")}
    elif kind == "local_shell_call":
        action = payload.get("action")
        name, arguments = "local_shell", action if isinstance(action, dict) else {}
    else:  # web_search_call and other server-side calls: no output item follows
        action = payload.get("action")
        name = kind[: -len("_call")] if type(kind) is str and kind.endswith("_call") else str(kind)
        arguments = action if isinstance(action, dict) else {}
    return {"type": "toolCall", "id": call_id if _s(call_id) else "", "name": name if _s(name) else "",
            "arguments": arguments}


def _injected(parts: list[dict[str, Any]]) -> str | None:
    text = _plain(parts).lstrip()
    for tag, name in INJECTED_TAGS:
        if text.startswith(tag):
            return name
    return None


# ---------------------------------------------------------------------------- conversion


class _Converter:
    """Lines of one rollout → a linear chain of pi-shaped entries (file order)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.header_line: dict[str, Any] | None = None
        self.provider = "openai"
        self.model: str | None = None
        self.model_seen: str | None = None
        self.context_window: int | None = None
        self.tool_names: dict[str, str] = {}
        self.unpriced: list[Entry] = []  # assistant entries since the last counted token_count
        self.previous_total: dict[str, int] | None = None
        self.calls = 0
        self._taken: set[str] = set()

    # -- chain

    def _id(self, wanted: str) -> str:
        return unique_id(wanted, self._taken)

    def _add(self, entry: Entry) -> Entry:
        entry["parentId"] = self.entries[-1]["id"] if self.entries else None
        self.entries.append(entry)
        return entry

    def _base(self, kind: str, wanted: str, line: dict[str, Any], meta: dict[str, Any]) -> Entry:
        return {"type": kind, "id": self._id(wanted), "parentId": None, "timestamp": line.get("timestamp"),
                "codex": meta}

    # -- lines

    def convert(self, lines: list[tuple[int, dict[str, Any]]]) -> None:
        for number, line in lines:
            self._line(number, line)
        self._flush()

    def _line(self, number: int, line: dict[str, Any]) -> None:
        kind, payload = line.get("type"), line.get("payload")
        if kind == "session_meta" and isinstance(payload, dict) and self.header_line is None:
            self.header_line = line
            if _s(payload.get("model_provider")):
                self.provider = payload["model_provider"]
            return
        if kind == "response_item" and isinstance(payload, dict):
            self._response_item(number, line, payload, {"line": number})
        elif kind == "turn_context" and isinstance(payload, dict):
            self._flush()
            self._turn_context(number, line, payload)
        elif kind == "compacted" and isinstance(payload, dict):
            self._flush()
            self._compacted(number, line, payload)
        elif kind == "event_msg" and isinstance(payload, dict) and payload.get("type") == "token_count":
            self._token_count(number, line, payload)
        else:
            # event_msg lines mirror response items for the UI or report progress; a second
            # session_meta is a fork's copy of its parent's header. Shown, never in the context.
            if kind != "event_msg":
                self._flush()
            self._custom(number, line)

    def _response_item(self, number: int, line: dict[str, Any], payload: dict[str, Any], meta: dict[str, Any],
                       wanted: str | None = None) -> None:
        # An odd type (a list, an object) is an unknown item, never a set lookup of it.
        item = _s(payload.get("type"))
        wanted = wanted or line_id(number)
        if item == "message" and payload.get("role") == "assistant":
            self._push(line, _parts(payload.get("content")) or [_text_part("")], meta, wanted)
            return
        if item == "reasoning":
            self._push(line, [_thinking(payload)], meta, wanted, reasoning=payload)
            return
        if item in _ASSISTANT_SIDE or (item is not None and item.endswith("_call") and item not in _OUTPUTS):
            block = _tool_call(payload)
            if block["id"]:
                self.tool_names[block["id"]] = block["name"]
            self._push(line, [block], meta, wanted)
            return
        self._flush()
        ms = _ms(line.get("timestamp"))
        if item == "message":
            role = payload.get("role")
            parts = _parts(payload.get("content"))
            if role == "user":
                entry = self._base("message", wanted, line, {**meta, "role": "user"})
                injected = _injected(parts)
                if injected:
                    entry["codex"]["injected"] = injected
                entry["message"] = {"role": "user", "content": parts, "timestamp": ms}
            else:
                # developer/system (and any other role): what Codex sent the model beside the
                # conversation; pi's custom messages are in the context and shown under a type.
                entry = self._base("custom_message", wanted, line, {**meta, "role": role})
                entry.update({"customType": f"{CUSTOM_PREFIX}{role if _s(role) else 'message'}", "content": parts,
                              "display": True})
            self._add(entry)
        elif item in _OUTPUTS:
            call_id = _s(payload.get("call_id")) or ""
            content, is_error = _output(payload.get("output"))
            entry = self._base("message", wanted, line, dict(meta))
            entry["message"] = {"role": "toolResult", "toolCallId": call_id,
                                "toolName": self.tool_names.get(call_id, "") if call_id else "",
                                "content": content, "isError": is_error, "timestamp": ms}
            self._add(entry)
        else:
            self._custom(number, line, meta=meta, wanted=wanted)

    def _push(self, line: dict[str, Any], blocks: list[dict[str, Any]], meta: dict[str, Any], wanted: str,
              reasoning: dict[str, Any] | None = None) -> None:
        """Add assistant-side blocks to the model call being gathered; its first item gives the
        entry's id, timestamp and meta, and every line it spans is listed."""
        if self._group is None:
            self._group = {"id": wanted, "timestamp": line.get("timestamp"), "blocks": [],
                           "meta": {**meta, "lines": []}}
        group = self._group
        group["blocks"].extend(blocks)
        group["meta"]["lines"].append(meta["line"] if "index" not in meta else meta["index"])
        if reasoning is not None and _s(reasoning.get("encrypted_content")):
            # Opaque to anyone but the service; its size is all the file tells.
            group["meta"].setdefault("encryptedReasoningChars", []).append(len(reasoning["encrypted_content"]))

    _group: dict[str, Any] | None = None

    def _flush(self) -> None:
        """The gathered assistant-side items as one assistant message (one model call)."""
        group, self._group = self._group, None
        if group is None:
            return
        blocks = group["blocks"]
        has_call = any(b.get("type") == "toolCall" for b in blocks)
        entry = {"type": "message", "id": self._id(group["id"]), "parentId": None, "timestamp": group["timestamp"],
                 "message": {"role": "assistant", "content": blocks, "api": "openai-responses",
                             "provider": self.provider, "model": self.model or "", "usage": pi_usage(None),
                             "stopReason": "toolUse" if has_call else "stop", "timestamp": _ms(group["timestamp"])},
                 "codex": group["meta"]}
        self._add(entry)
        if not group["meta"].get("fromCompaction"):
            self.unpriced.append(entry)

    def _turn_context(self, number: int, line: dict[str, Any], payload: dict[str, Any]) -> None:
        model = payload.get("model")
        if _s(model) and model != self.model:
            self.model = model
            entry = self._base("model_change", line_id(number), line, {"line": number, "turnContext": payload})
            entry.update({"provider": self.provider, "modelId": model})
            self._add(entry)
        else:
            self._custom(number, line)

    def _compacted(self, number: int, line: dict[str, Any], payload: dict[str, Any]) -> None:
        """The compaction, then its replacement history as entries: pi's projection starts the
        context at the latest compaction, so the model sees exactly the replacement history.
        Without one (older files) the summary message itself is what follows."""
        history = payload.get("replacement_history")
        message = payload.get("message") if _s(payload.get("message")) else ""
        replaced = isinstance(history, list)
        entry = self._base("compaction", line_id(number), line, {"line": number})
        entry.update({"summary": "" if replaced else message, "firstKeptEntryId": None,
                      # A rollout records no count before a compaction: null, shown as "not recorded".
                      "tokensBefore": None,
                      "details": {"codex": "compacted", "message": message,
                                  "replacementItems": len(history) if replaced else None}})
        self._add(entry)
        if not replaced:
            return
        for index, item in enumerate(history, start=1):
            meta = {"line": number, "fromCompaction": number, "index": index}
            wanted = f"{line_id(number)}.r{index:04d}"
            if isinstance(item, dict):
                self._response_item(number, line, item, meta, wanted=wanted)
        self._flush()

    def _token_count(self, number: int, line: dict[str, Any], payload: dict[str, Any]) -> None:
        info = payload.get("info") if isinstance(payload.get("info"), dict) else None
        total = token_usage(info.get("total_token_usage")) if info else None
        last = token_usage(info.get("last_token_usage")) if info else None
        window = info.get("model_context_window") if info else None
        if type(window) is int and window > 0:
            self.context_window = window
        # A repeat (totals unchanged) reports no new call; usage tools skip it too.
        repeat = info is None or (total is not None and total == self.previous_total)
        if total is not None:
            self.previous_total = total
        self._flush()
        if not repeat and last is not None:
            self.calls += 1
            target = self.unpriced[-1] if self.unpriced else None
            if target is not None:
                target["message"]["usage"] = pi_usage(last)
                target["codex"]["tokenCountLine"] = number
                if window.__class__ is int:
                    target["codex"]["modelContextWindow"] = window
            self.unpriced = []
        self._custom(number, line, extra={"repeat": repeat})

    def _custom(self, number: int, line: dict[str, Any], meta: dict[str, Any] | None = None,
                wanted: str | None = None, extra: dict[str, Any] | None = None) -> None:
        kind = line.get("type")
        name = kind if type(kind) is str else "unknown"
        payload = line.get("payload")
        if isinstance(payload, dict) and _s(payload.get("type")) and kind in ("event_msg", "response_item"):
            name = f"{name}/{payload['type']}"
        if meta is not None and meta.get("fromCompaction"):
            data: Any = payload
        else:
            data = line
        entry = self._base("custom", wanted or line_id(number), line, {**(meta or {"line": number}), **(extra or {})})
        entry.update({"customType": CUSTOM_PREFIX + name, "data": data})
        self._add(entry)


def convert_lines(lines: list[tuple[int, dict[str, Any]]]) -> tuple[list[Entry], _Converter]:
    """Entries (file order, one chain) for a rollout's parsed lines, and the converter's state
    (header line, context window, provider)."""
    conv = _Converter()
    conv.convert(lines)
    return conv.entries, conv


# ---------------------------------------------------------------------------- the session


class CodexSession(ForeignSession):
    """A Codex rollout as pi_lab's read-only session (``ReadableSession``).

    Entries are pi-shaped dicts (``id`` = ``L`` + the line number); each keeps what pi has no key
    for under ``"codex"``. ``skipped_lines`` numbers the unreadable lines, ``context_window`` is
    the last ``model_context_window`` recorded, ``parent_session_id`` the session a fork or
    sub-agent copied its first entries from (``copied_entry_ids``). Nothing is ever written."""

    agent = "codex"
    refusal = CodexReadOnly
    described_as = "a Codex rollout"

    _refreshed = (*ForeignSession._refreshed, "context_window", "parent_session_id", "parent_kind", "parent_file",
                  "copied_entry_ids", "model_calls")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.context_window: int | None = None
        self.parent_session_id: str | None = None
        self.parent_kind: str | None = None
        self.parent_file: str | None = None
        self.copied_entry_ids: list[str] = []
        self.model_calls = 0

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, parents: bool = True) -> CodexSession:
        resolved = os.path.abspath(os.fspath(path))
        check_regular_file(resolved)
        st = os.stat(resolved)
        lines, skipped = read_lines(_read_file(resolved))
        entries, conv = convert_lines(lines)
        head = conv.header_line or {}
        payload = head.get("payload")
        meta: dict[str, Any] = payload if isinstance(payload, dict) else {}
        session_id = _s(meta.get("id")) or os.path.splitext(os.path.basename(resolved))[0]
        cwd = _s(meta.get("cwd")) or "."
        timestamp = _s(meta.get("timestamp")) or head.get("timestamp")
        if not _s(timestamp):
            timestamp = next((e.get("timestamp") for e in entries if _s(e.get("timestamp"))), "")
        parent_id, parent_kind = parent_id_of(meta)
        parent_file = find_rollout(parent_id, resolved) if parent_id and parents else None
        copied: list[str] = []
        if parent_id:
            parent_lines = None
            if parent_file is not None:
                try:
                    parent_lines = read_lines(_read_file(parent_file))[0]
                except OSError:
                    parent_lines, parent_file = None, None
            copied = mark_copies(entries, copied_lines(lines, parent_id, parent_lines), parent_id)
        header: Entry = {"type": "session", "version": 3, "id": session_id, "timestamp": timestamp, "cwd": cwd,
                         "codex": {**{k: v for k, v in meta.items() if k not in ("id", "cwd", "timestamp")},
                                   "git": meta.get("git"), "modelContextWindow": conv.context_window,
                                   "line": next((n for n, line in lines if line is head), None)}}
        if parent_file is not None:
            header["parentSession"] = parent_file
        sm = cls._loaded(resolved, header, entries, leaf_id=entries[-1]["id"] if entries else None, skipped=skipped,
                         read=(st.st_size, st.st_mtime_ns))
        sm.context_window = conv.context_window
        sm.parent_session_id, sm.parent_kind, sm.parent_file = parent_id, parent_kind, parent_file
        sm.copied_entry_ids = copied
        sm.model_calls = conv.calls
        return sm

    @property
    def recorded_context_window(self) -> int | None:
        """The window Codex recorded (``model_context_window`` of its token counts)."""
        return self.context_window

    def branch(self, branch_from_id: str) -> None:
        """Move the leaf in memory (navigating); the file is not touched."""
        super().branch(branch_from_id)

    def _read_again(self, path: str) -> CodexSession:
        return CodexSession.from_file(path, parents=self.parent_file is not None)


def open_codex(path: str | os.PathLike[str], *, parents: bool = True, **options: Any) -> CodexSession:
    """Open a Codex rollout read-only (``pi_lab.open_session`` calls this).

    ``parents`` looks for a fork's or sub-agent's parent rollout under the same Codex home to
    find the copied prefix exactly. Options of pi's reader that mean nothing here (``lazy``,
    ``read_only``...) are accepted and ignored."""
    check_open_options("open_codex", CodexReadOnly, path, options)
    return CodexSession.from_file(path, parents=parents)
