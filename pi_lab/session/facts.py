"""What the views need to know about each entry, decided once per entry (tree-and-context.md §13).

:class:`EntryFacts` holds one entry's filter category, display kind, error flag, tool calls and
token estimate; :class:`FactTable` keeps them for the entries of one session, so that every
flattening (:mod:`pi_lab.session.flatten`), layout and gauge after the first reuses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pi_lab.session._js import JS_WHITESPACE
from pi_lab.session._js import js_truthy as _truthy
from pi_lab.session.display import _MISSING, ToolCall
from pi_lab.session.entries import SETTINGS_ENTRY_TYPES, Entry, display_kind, has_visible_text, is_error_entry
from pi_lab.view.contract import FILTER_CATEGORIES

if TYPE_CHECKING:
    from pi_lab.session.flatten import FlatTree

__all__ = ["EntryFacts", "FactTable", "entry_facts"]


# What the filters need to know about an entry, decided once at flattening time.
# The codes are shared with the front end: pi_lab/view/contract.py FILTER_CATEGORIES.
_CAT_USAGE = FILTER_CATEGORIES["usage"]  # hidden in every mode
_CAT_TOOL_ONLY = FILTER_CATEGORIES["tool_only"]  # assistant without visible text that ended normally: hidden unless it is the leaf
_CAT_SETTINGS = FILTER_CATEGORIES["settings"]
_CAT_TOOL_RESULT = FILTER_CATEGORIES["tool_result"]
_CAT_USER = FILTER_CATEGORIES["user"]
_CAT_OTHER = FILTER_CATEGORIES["other"]  # everything else: visible in `default`


class EntryFacts:
    """What the views need to know about one entry: its filter category (``_CAT_*``), its
    display kind (:func:`~pi_lab.session.entries.display_kind`), whether it failed
    (:func:`~pi_lab.session.entries.is_error_entry`), the tool calls it makes (``(id,
    ToolCall)`` pairs in block order, or ``None``) and pi's token estimate of its messages
    (``tokens``: -1 until a view first asks; the estimate lives in the layers above).

    Entries are never changed once read or appended, so these are decided once per entry
    object and kept in a :class:`FactTable` for every later flattening, layout and gauge.
    """

    __slots__ = ("entry", "category", "kind", "error", "calls", "tokens")

    def __init__(self, entry: Entry, category: int, kind: str, error: bool,
                 calls: tuple[tuple[Any, ToolCall], ...] | None) -> None:
        self.entry = entry  # kept so that a reused id() of a freed entry never matches it
        self.category = category
        self.kind = kind
        self.error = error
        self.calls = calls
        self.tokens = -1

    def __repr__(self) -> str:
        return f"<EntryFacts {self.kind} cat={self.category} error={self.error} tokens={self.tokens}>"


class FactTable:
    """:class:`EntryFacts` of the entries of one session as read.

    A table answers only for the entry objects it was given (checked by identity), never for
    another session's entries or a re-read copy. The facts of the entries of the flattening its
    owner adopted (:meth:`adopt`) are found through that flattening's own ``index_of``, with no
    map per entry beside it; those of other entries (appended since, or sharing an id with a
    later one) are kept by ``id(entry)``. An append adds only the facts of the new entry, when
    a view first looks at it; a rebuilt session (rewrite, migration, fork) gets a new table from
    its owner (:class:`pi_lab.view.rows.RowState`).
    """

    __slots__ = ("_flat", "_extra", "__weakref__")

    def __init__(self) -> None:
        self._flat: FlatTree | None = None
        self._extra: dict[int, EntryFacts] = {}

    def __len__(self) -> int:
        """How many entries' facts the table holds."""
        return (len(self._flat.facts) if self._flat is not None else 0) + len(self._extra)

    def adopt(self, flat: FlatTree) -> None:
        """Answer from ``flat``, a flattening made with this table, from now on."""
        self._flat = flat
        if self._extra:
            self._extra = {key: found for key, found in self._extra.items() if self._held(found.entry) is None}

    def _held(self, entry: Entry) -> EntryFacts | None:
        flat = self._flat
        if flat is not None:
            entry_id = entry.get("id")
            if type(entry_id) is str or isinstance(entry_id, str):
                i = flat.index_of.get(entry_id)
                if i is not None and flat.entries[i] is entry:
                    return flat.facts[i]
        return None

    def of(self, entry: Entry) -> EntryFacts:
        found = self._held(entry)
        if found is None:
            key = id(entry)
            found = self._extra.get(key)
            if found is None or found.entry is not entry:  # the entry is kept: its id() is not reused
                found = self._extra[key] = entry_facts(entry)
        return found


def entry_facts(entry: Entry) -> EntryFacts:
    """The :class:`EntryFacts` of one entry, computed now (see :meth:`FactTable.of`).

    The messages pi writes (plain dicts all the way down) are read in one pass over their
    content; any other shape is decided by the three general rules, so odd file data gets
    exactly the answers those give.
    """
    if type(entry) is dict and entry.get("type") == "message":
        message = entry.get("message")
        if type(message) is dict:
            role = message.get("role")
            if role == "user":
                return EntryFacts(entry, _CAT_USER, "user", False, None)
            if role == "toolResult":
                return EntryFacts(entry, _CAT_TOOL_RESULT, "tool_result", bool(message.get("isError")), None)
            if role == "assistant":
                found = _assistant_facts(entry, message)
                if found is not None:
                    return found
    calls: dict[Any, ToolCall] = {}
    category = _category(entry, calls)
    return EntryFacts(entry, category, display_kind(entry), is_error_entry(entry),
                      tuple(calls.items()) if calls else None)


def _assistant_facts(entry: Entry, message: dict[str, Any]) -> EntryFacts | None:
    """One walk over an assistant's blocks for the category, the kind, the error flag and the
    tool calls; None when a block or the content has a shape the general rules must judge."""
    content = message.get("content")
    visible = has_call = has_thinking = False
    calls: dict[Any, ToolCall] | None = None
    if type(content) is list:
        for block in content:
            if type(block) is not dict:
                if isinstance(block, Mapping):
                    return None  # a dict subclass or another mapping: the general rules decide
                continue  # not an object: no rule looks at it
            kind = block.get("type")
            if kind == "text":
                if not visible:
                    text = block.get("text")
                    # JavaScript's trim: most texts start with a visible character.
                    if isinstance(text, str) and text and (text[0] not in JS_WHITESPACE or text.strip(JS_WHITESPACE)):
                        visible = True
            elif kind == "toolCall":
                has_call = True
                call_id = block.get("id")
                if isinstance(call_id, (str, int, float)) and not isinstance(call_id, bool):
                    if calls is None:
                        calls = {}
                    calls[call_id] = ToolCall(block.get("name"), block.get("arguments", _MISSING))
            elif kind == "thinking":
                has_thinking = True
    elif type(content) is str:
        visible = content.strip(JS_WHITESPACE) != ""
    elif content is not None:
        return None
    stop_reason = message.get("stopReason")
    error = stop_reason in ("error", "aborted")
    if visible:
        category, kind_name = _CAT_OTHER, "assistant"
    else:
        # Text-less replies that ended with an error, an abort, a length cut… stay.
        category = _CAT_TOOL_ONLY if (not _truthy(stop_reason) or stop_reason in ("stop", "toolUse")) else _CAT_OTHER
        if error or message.get("errorMessage"):
            kind_name = "assistant_error"
        elif has_call:
            kind_name = "tool_call"
        elif has_thinking:
            kind_name = "thinking"
        else:
            kind_name = "assistant"
    return EntryFacts(entry, category, kind_name, error, tuple(calls.items()) if calls else None)


def _category(entry: Mapping[str, Any], tool_calls: dict[Any, ToolCall]) -> int:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return _CAT_OTHER
        role = message.get("role")
        if role == "user":
            return _CAT_USER
        if role == "toolResult":
            return _CAT_TOOL_RESULT
        if role == "assistant":
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "toolCall":
                        call_id = block.get("id")
                        if isinstance(call_id, (str, int, float)) and not isinstance(call_id, bool):
                            tool_calls[call_id] = ToolCall(block.get("name"), block.get("arguments", _MISSING))
            if not has_visible_text(content):
                stop_reason = message.get("stopReason")
                # Text-less replies that ended with an error, an abort, a length cut… stay.
                if not _truthy(stop_reason) or stop_reason in ("stop", "toolUse"):
                    return _CAT_TOOL_ONLY
        return _CAT_OTHER
    if kind == "usage":
        return _CAT_USAGE
    # `in` on a frozenset hashes: a list or object type is simply not a settings type
    if isinstance(kind, str) and kind in SETTINGS_ENTRY_TYPES:
        return _CAT_SETTINGS
    return _CAT_OTHER
