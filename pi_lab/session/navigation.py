"""Navigation rows: the /tree list of pi's tree selector (tree-and-context.md §13).

The work is split so that a front end can redraw cheaply:

* :func:`flatten_tree` walks the whole tree once per tree change (iteratively; a chain of a
  million entries is fine) and keeps flat columns: entries in display order, parent links,
  the active path, a code per entry for the filters, and every tool call by id.
* :func:`visible_rows` applies the filter mode, the search and the folds, re-attaches each
  kept row to its nearest visible ancestor and lays the visible forest out again
  (indentation, connectors, gutters). It is linear in the number of entries.
* :func:`render_row` and :func:`status_line` turn rows into pi's exact text lines.
* :class:`TreeNavigator` holds the selection, filter, search and folds and reacts to pi's
  keys (§13.6), for the CLI and the tests.

Rows are plain frozen records of scalars (:class:`NavRow`) so that they can be shipped as
columns. Nothing here writes a session: a label edit or a selection is reported to the
caller, who appends the entry or moves the leaf.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from pi_lab.session._json import dumps as _json_dumps
from pi_lab.session._gc import collector_paused
from pi_lab.session._js import _DECIMAL, JS_WHITESPACE, MISSING, js_len, js_slice, js_trim
from pi_lab.session._js import js_join_part as _join_part
from pi_lab.session._js import js_round as _js_round
from pi_lab.session._js import js_string as _js_string
from pi_lab.session._js import js_to_number as _js_to_number
from pi_lab.session._js import js_truthy as _truthy
from pi_lab.session.entries import SETTINGS_ENTRY_TYPES, Entry, has_visible_text, message_of
from pi_lab.session.ids import iso_timestamp, parse_iso_ms, utc_now
from pi_lab.session.tree import UNSET, TreeNode

if TYPE_CHECKING:
    from pi_lab.session.manager import SessionManager

__all__ = [
    "FILTER_MODES",
    "SETTINGS_ENTRY_TYPES",
    "ToolCall",
    "FlatTree",
    "NavRow",
    "NavEvent",
    "TreeNavigator",
    "flatten_tree",
    "visible_rows",
    "navigation_rows",
    "render_row",
    "render_rows",
    "status_line",
    "search_text",
    "search_tokens",
    "display_text",
    "format_tool_call",
    "format_label_time",
    "copy_text",
    "shorten_home",
    "default_home",
    "initial_selection",
    "fold_or_up",
    "unfold_or_down",
    "segment_start_up",
    "segment_start_down",
    "window_for_terminal",
    "window_range",
    "help_lines",
]


FILTER_MODES: tuple[str, ...] = ("default", "no-tools", "user-only", "labeled-only", "all")
"""The five filter modes, in ``ctrl+o`` cycling order."""

_STATUS_LABELS = {"no-tools": " [no-tools]", "user-only": " [user]", "labeled-only": " [labeled]", "all": " [all]"}

# What the filters need to know about an entry, decided once at flattening time.
_CAT_USAGE = 0  # hidden in every mode
_CAT_TOOL_ONLY = 1  # assistant without visible text that ended normally: hidden unless it is the leaf
_CAT_SETTINGS = 2
_CAT_TOOL_RESULT = 3
_CAT_USER = 4
_CAT_OTHER = 5  # everything else: visible in `default`

_MODE_CATEGORIES = {
    "default": frozenset({_CAT_TOOL_ONLY, _CAT_TOOL_RESULT, _CAT_USER, _CAT_OTHER}),
    "no-tools": frozenset({_CAT_TOOL_ONLY, _CAT_USER, _CAT_OTHER}),
    "user-only": frozenset({_CAT_USER}),
    "all": frozenset({_CAT_TOOL_ONLY, _CAT_SETTINGS, _CAT_TOOL_RESULT, _CAT_USER, _CAT_OTHER}),
}

_MISSING: Any = MISSING  # a key that is absent (JavaScript's `undefined`)


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
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            # `result += block.text`: a missing text would read "undefined"
            parts.append(_js_string(block.get("text", _MISSING)))
    return "".join(parts)


def _text_200(content: Any) -> str:
    return js_slice(_full_text(content), 200)


# ---------------------------------------------------------------------------------------------
# Flattening (§13.1)


class FlatTree:
    """The whole tree in display order (active branch first at every branch point).

    Columns, one item per entry: ``entries``, ``ids``, ``parents`` (index of the tree parent,
    -1 for roots), ``labels``, ``label_timestamps`` and ``on_active_path``. ``index_of`` maps an
    id to its index (the last one for a duplicated id) and ``tool_calls`` maps every tool-call
    id of every assistant message in the tree to its :class:`ToolCall`.
    """

    __slots__ = (
        "entries",
        "ids",
        "parents",
        "labels",
        "label_timestamps",
        "on_active_path",
        "leaf_id",
        "tool_calls",
        "index_of",
        "_categories",
        "_result_calls",
        "_search_cache",
        "_display_cache",
    )

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.ids: list[Any] = []
        self.parents: list[int] = []
        self.labels: list[str | None] = []
        self.label_timestamps: list[str | None] = []
        self.on_active_path: list[bool] = []
        self.leaf_id: str | None = None
        self.tool_calls: dict[Any, ToolCall] = {}
        self.index_of: dict[str, int] = {}
        self._categories: list[int] = []  # filter codes (_CAT_*)
        self._result_calls: dict[int, ToolCall] = {}  # index of a tool result → its call
        self._search_cache: list[str | None] = []
        self._display_cache: dict[str, list[str | None]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"<FlatTree {len(self.entries)} entries, leaf {self.leaf_id!r}>"

    def tool_call_of(self, index: int) -> ToolCall | None:
        """The call a tool-result entry answers, when an assistant in the tree made it."""
        return self._result_calls.get(index)

    def search_text(self, index: int) -> str:
        cached = self._search_cache[index]
        if cached is None:
            cached = search_text(self.entries[index], self.labels[index])
            self._search_cache[index] = cached
        return cached

    def display_text(self, index: int, home: str) -> str:
        cache = self._display_cache.get(home)
        if cache is None:
            cache = self._display_cache[home] = [None] * len(self.entries)
        text = cache[index]
        if text is None:
            text = _display_text(self.entries[index], self._result_calls.get(index), home)
            cache[index] = text
        return text

    def set_label(self, entry_id: str, label: str | None, label_timestamp: str | None = None) -> int | None:
        """Change the label shown for ``entry_id`` (after the caller appended a label entry).

        Returns the entry's index, or ``None`` when it is not in the tree.
        """
        index = self.index_of.get(entry_id)
        if index is None:
            return None
        self.labels[index] = label or None
        self.label_timestamps[index] = label_timestamp if label else None
        self._search_cache[index] = None
        return index


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


def flatten_tree(roots: Sequence[TreeNode], leaf_id: Any = None) -> FlatTree:
    """Flatten ``roots`` (from ``get_tree``) in pi's display order; see §13.1.

    Roots and children that contain the leaf come first (the others keep their order), so
    the current path is one run from the top. Iterative: no depth limit.
    """
    with collector_paused():  # the tree's size is unknown before the walk
        return _flatten(roots, leaf_id if isinstance(leaf_id, str) else None)


def _flatten(roots: Sequence[TreeNode], leaf: str | None) -> FlatTree:
    flat = FlatTree()
    flat.leaf_id = leaf

    # 1. Which nodes lie on a root→leaf path ("contain the active leaf").
    active: set[int] = set()
    if leaf is not None:
        path: list[TreeNode] = []
        walk: list[tuple[TreeNode, int]] = [(root, 0) for root in reversed(roots)]
        while walk:
            node, depth = walk.pop()
            del path[depth:]
            path.append(node)
            if node.entry.get("id") == leaf:
                active.update(id(n) for n in path)
            children = node.children
            if children:
                below = depth + 1
                for child in reversed(children):
                    walk.append((child, below))

    # 2. Pre-order walk, active subtrees first.
    entries = flat.entries
    ids = flat.ids
    parents = flat.parents
    labels = flat.labels
    label_times = flat.label_timestamps
    categories = flat._categories
    tool_calls = flat.tool_calls
    ordered = list(roots)
    if active and len(ordered) > 1:
        ordered = [r for r in roots if id(r) in active] + [r for r in roots if id(r) not in active]
    stack: list[tuple[TreeNode, int]] = [(root, -1) for root in reversed(ordered)]
    pop = stack.pop
    push = stack.append
    while stack:
        node, parent = pop()
        index = len(entries)
        entry = node.entry
        entries.append(entry)
        ids.append(entry.get("id"))
        parents.append(parent)
        labels.append(node.label)
        label_times.append(node.label_timestamp)
        categories.append(_category(entry, tool_calls))
        children = node.children
        if not children:
            continue
        if len(children) == 1:
            push((children[0], index))
            continue
        if active:
            first = [c for c in children if id(c) in active]
            if first:
                children = first + [c for c in children if id(c) not in active]
        for child in reversed(children):
            push((child, index))

    count = len(entries)
    index_of = {entry_id: i for i, entry_id in enumerate(ids) if isinstance(entry_id, str)}
    flat.index_of = index_of
    on_path = [False] * count
    if leaf is not None:
        i = index_of.get(leaf, -1)
        while i >= 0 and not on_path[i]:
            on_path[i] = True
            i = parents[i]
    flat.on_active_path = on_path
    if tool_calls:
        result_calls = flat._result_calls
        for i, category in enumerate(categories):
            if category == _CAT_TOOL_RESULT:
                call_id = entries[i]["message"].get("toolCallId")
                if _truthy(call_id) and isinstance(call_id, (str, int, float)):
                    call = tool_calls.get(call_id)
                    if call is not None:
                        result_calls[i] = call
    flat._search_cache = [None] * count
    return flat


# ---------------------------------------------------------------------------------------------
# Rows (§13.2, §13.3)


@dataclass(frozen=True, slots=True)
class NavRow:
    """One visible line of the tree list.

    ``index`` is the entry's position in :class:`FlatTree`; ``parent`` the row index of the
    nearest visible ancestor (-1 for a visible root). ``indent`` is the display indent in
    levels of three columns; ``gutters`` holds ``(level, show)`` pairs (``show`` draws ``│``).
    A connector (``├``/``└``) is drawn when ``show_connector`` is set and the row is not a
    virtual-root child (see :attr:`connector`).
    """

    entry: Entry
    entry_id: Any
    index: int
    parent: int
    indent: int
    show_connector: bool
    is_last: bool
    gutters: tuple[tuple[int, bool], ...]
    is_virtual_root_child: bool
    on_active_path: bool
    is_leaf: bool
    label: str | None
    label_timestamp: str | None
    foldable: bool
    folded: bool
    text: str
    child_count: int = 0
    tool_call: ToolCall | None = None

    @property
    def connector(self) -> bool:
        """Whether the row draws ``├``/``└`` (and its fold glyph) in its prefix."""
        return self.show_connector and not self.is_virtual_root_child


def search_tokens(query: str) -> list[str]:
    """The lower-cased, whitespace-separated tokens of a search query."""
    return [token for token in re.split(f"[{re.escape(JS_WHITESPACE)}]+", query.lower()) if token]


def default_home() -> str:
    """The home directory used to shorten paths (``$HOME``, else ``%USERPROFILE%``)."""
    return os.environ.get("HOME") or os.environ.get("USERPROFILE") or ""


def visible_rows(
    flat: FlatTree,
    *,
    filter_mode: str = "default",
    search: str = "",
    folded: Iterable[str] = frozenset(),
    leaf_id: Any = UNSET,
    home: str | None = None,
) -> list[NavRow]:
    """The rows shown for a filter mode, search query and set of folded entry ids.

    ``leaf_id`` defaults to the flattening leaf; it only decides which tool-call-only
    assistant stays visible and which row is marked ``is_leaf``. ``home`` (default
    :func:`default_home`) shortens paths in tool-call rows.
    """
    if filter_mode not in FILTER_MODES:
        raise ValueError(f"unknown filter mode {filter_mode!r}; expected one of {', '.join(FILTER_MODES)}")
    with collector_paused(len(flat.ids)):
        return _visible_rows(flat, filter_mode, search, folded, leaf_id, home)


def _visible_rows(
    flat: FlatTree, filter_mode: str, search: str, folded: Iterable[str], leaf_id: Any, home: str | None
) -> list[NavRow]:
    leaf = flat.leaf_id if leaf_id is UNSET else (leaf_id if isinstance(leaf_id, str) else None)
    home_dir = default_home() if home is None else home
    folded_ids = folded if isinstance(folded, (set, frozenset)) else frozenset(folded)
    tokens = search_tokens(search) if search else []
    ids = flat.ids
    parents = flat.parents
    labels = flat.labels
    categories = flat._categories
    count = len(ids)

    # Which entries pass the filter and the search.
    keep = bytearray(count)
    if filter_mode == "labeled-only":
        for i in range(count):
            if labels[i] is not None and categories[i] != _CAT_USAGE:
                keep[i] = 1
    else:
        accepted = _MODE_CATEGORIES[filter_mode]
        for i in range(count):
            if categories[i] in accepted:
                keep[i] = 1
    for i in range(count):
        if categories[i] == _CAT_TOOL_ONLY and (leaf is None or ids[i] != leaf):
            keep[i] = 0
    if tokens:
        text_of = flat.search_text
        for i in range(count):
            if keep[i]:
                text = text_of(i)
                for token in tokens:
                    if token not in text:
                        keep[i] = 0
                        break

    # Descendants of folded entries (through the real parent chain) disappear.
    if folded_ids:
        hidden = bytearray(count)
        for i in range(count):
            p = parents[i]
            if p >= 0 and (hidden[p] or ids[p] in folded_ids):
                hidden[i] = 1
                keep[i] = 0

    # Re-attach every kept entry to its nearest kept ancestor (§13.3).
    nearest = [-1] * count  # row index of the nearest visible ancestor-or-self
    row_index: list[int] = []  # row → flat index
    row_parent: list[int] = []
    for i in range(count):
        p = parents[i]
        above = nearest[p] if p >= 0 else -1
        if keep[i]:
            nearest[i] = len(row_index)
            row_index.append(i)
            row_parent.append(above)
        else:
            nearest[i] = above
    del nearest

    size = len(row_index)
    child_count = [0] * size
    last_child = [-1] * size
    roots = 0
    last_root = -1
    for r in range(size):
        p = row_parent[r]
        if p < 0:
            roots += 1
            last_root = r
        else:
            child_count[p] += 1
            last_child[p] = r

    # Lay the visible forest out with the flattening rules (§13.1 items 6–7).
    multiple_roots = roots > 1
    indents = [0] * size
    branched = [False] * size
    child_gutters: list[tuple[tuple[int, bool], ...]] = [()] * size
    on_path = flat.on_active_path
    label_times = flat.label_timestamps
    entries = flat.entries
    result_calls = flat._result_calls
    texts = flat._display_cache.get(home_dir)
    if texts is None:
        texts = flat._display_cache[home_dir] = [None] * count
    rows: list[NavRow] = []
    append = rows.append
    root_indent = 1 if multiple_roots else 0
    for r in range(size):
        i = row_index[r]
        p = row_parent[r]
        if p < 0:
            indent = root_indent
            just_branched = show_connector = virtual = multiple_roots
            is_last = r == last_root
            gutters: tuple[tuple[int, bool], ...] = ()
            foldable = child_count[r] > 0
        else:
            many = child_count[p] > 1
            parent_indent = indents[p]
            indent = parent_indent + 1 if many or (branched[p] and parent_indent > 0) else parent_indent
            just_branched = show_connector = many
            virtual = False
            is_last = last_child[p] == r
            gutters = child_gutters[p]
            foldable = many and child_count[r] > 0
        indents[r] = indent
        branched[r] = just_branched
        display_indent = (indent - 1 if indent > 0 else 0) if multiple_roots else indent
        if child_count[r]:
            if show_connector and not virtual:
                position = display_indent - 1 if display_indent > 0 else 0
                child_gutters[r] = gutters + ((position, not is_last),)
            else:
                child_gutters[r] = gutters
        entry_id = ids[i]
        label = labels[i]
        text = texts[i]
        if text is None:
            text = texts[i] = _display_text(entries[i], result_calls.get(i), home_dir)
        append(
            NavRow(
                entries[i],
                entry_id,
                i,
                p,
                display_indent,
                show_connector,
                is_last,
                gutters,
                virtual,
                on_path[i],
                leaf is not None and entry_id == leaf,
                label,
                label_times[i] if label is not None else None,
                foldable,
                entry_id in folded_ids if folded_ids else False,
                text,
                child_count[r],
                result_calls.get(i),
            )
        )
    return rows


def navigation_rows(sm: SessionManager, **kwargs: Any) -> list[NavRow]:
    """:func:`visible_rows` of a session's current tree at its leaf."""
    return visible_rows(flatten_tree(sm.get_tree(), sm.leaf_id), **kwargs)


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
    return _display_text(entry, call, default_home() if home is None else home)


def _as_tool_call(value: Any) -> ToolCall:
    if isinstance(value, Mapping):
        return ToolCall(value.get("name"), value.get("arguments", _MISSING))
    name, arguments = value
    return ToolCall(name, arguments)


def _display_text(entry: Mapping[str, Any], call: ToolCall | None, home: str) -> str:
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
        tokens = _js_round(_js_to_number(entry.get("tokensBefore", _MISSING)) / 1000)
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


def _prefix(row: NavRow) -> str:
    levels = row.indent
    if levels <= 0:
        return ""
    gutters = row.gutters
    connector = row.show_connector and not row.is_virtual_root_child
    pieces: list[str] = []
    for level in range(levels):
        for position, show in gutters:
            if position == level:
                pieces.append("│  " if show else "   ")
                break
        else:
            if connector and level == levels - 1:
                glyph = "⊞" if row.folded else ("⊟" if row.foldable else "─")
                pieces.append(("└" if row.is_last else "├") + glyph + " ")
            else:
                pieces.append("   ")
    return "".join(pieces)


def render_row(
    row: NavRow,
    *,
    selected: bool = False,
    show_label_times: bool = False,
    now: datetime | None = None,
    home: str | None = None,
) -> str:
    """The exact text line pi draws for ``row`` (without colours or horizontal panning).

    ``home`` re-derives the display text with another home directory; by default the text
    computed by :func:`visible_rows` is used.
    """
    parts = ["› " if selected else "  ", _prefix(row)]
    if row.folded and not row.connector:
        parts.append("⊞ ")
    if row.on_active_path:
        parts.append("• ")
    if row.label:
        parts.append(f"[{row.label}] ")
        if show_label_times and row.label_timestamp:
            parts.append(format_label_time(row.label_timestamp, now) + " ")
    if home is None:
        parts.append(row.text)
    else:
        parts.append(_display_text(row.entry, row.tool_call, home))
    return "".join(parts)


def status_line(
    selected_index: int, rows: Sequence[NavRow], filter_mode: str = "default", show_label_times: bool = False
) -> str:
    """``  (<selected>/<rows>)`` plus the filter tag and ``[+label time]``."""
    tags = _STATUS_LABELS.get(filter_mode, "") + (" [+label time]" if show_label_times else "")
    if not rows:
        return f"  (0/0){tags}"
    return f"  ({selected_index + 1}/{len(rows)}){tags}"


def window_for_terminal(terminal_rows: int) -> int:
    """How many rows pi lists for a terminal of ``terminal_rows`` lines."""
    return max(5, terminal_rows // 2)


def window_range(selected_index: int, total: int, window: int) -> tuple[int, int]:
    """The ``[start, end)`` slice of rows shown, centred on the selection, clamped."""
    start = max(0, min(selected_index - window // 2, total - window))
    return start, min(start + window, total)


def render_rows(
    rows: Sequence[NavRow],
    selected_index: int,
    *,
    filter_mode: str = "default",
    show_label_times: bool = False,
    window: int | None = None,
    now: datetime | None = None,
    home: str | None = None,
) -> list[str]:
    """The list as pi draws it: the rows (all, or a window) and the status line."""
    if not rows:
        return ["  No entries found", status_line(0, rows, filter_mode, show_label_times)]
    start, end = (0, len(rows)) if window is None else window_range(selected_index, len(rows), window)
    lines = [
        render_row(rows[r], selected=r == selected_index, show_label_times=show_label_times, now=now, home=home)
        for r in range(start, end)
    ]
    lines.append(status_line(selected_index, rows, filter_mode, show_label_times))
    return lines


# ---------------------------------------------------------------------------------------------
# Selection and folding (§13.6)


def initial_selection(
    rows: Sequence[NavRow], flat: FlatTree, wanted_id: Any, row_of: Mapping[int, int] | None = None
) -> int:
    """Row index for ``wanted_id``: itself, else its nearest visible ancestor, else the last row."""
    if not rows:
        return 0
    if not isinstance(wanted_id, str):
        return len(rows) - 1
    if row_of is None:
        row_of = {row.index: r for r, row in enumerate(rows)}
    i = flat.index_of.get(wanted_id, -1)
    parents = flat.parents
    steps = 0
    while i >= 0 and steps <= len(parents):
        r = row_of.get(i)
        if r is not None:
            return r
        i = parents[i]
        steps += 1
    return len(rows) - 1


def segment_start_up(rows: Sequence[NavRow], selected_index: int) -> int:
    """The nearest segment start above the selection (a branch child), else the visible root."""
    if not rows:
        return selected_index
    current = selected_index
    while True:
        parent = rows[current].parent
        if parent < 0:
            return current
        if rows[parent].child_count > 1 and current < selected_index:
            return current
        current = parent


def segment_start_down(rows: Sequence[NavRow], selected_index: int) -> int:
    """Follow single visible children down to a row without children or to a branch point's
    first child (the active branch when it is visible)."""
    if not rows:
        return selected_index
    current = selected_index
    while True:
        children = rows[current].child_count
        if children == 0:
            return current
        if children > 1:
            return current + 1  # rows are in pre-order: the first child follows its parent
        current += 1


def fold_or_up(rows: Sequence[NavRow], selected_index: int, folded: Iterable[str]) -> tuple[frozenset[str], int]:
    """``ctrl+left``: fold the selected row if it is foldable and open, else jump up.

    Returns the new folded ids and the new selected index. Folding never moves rows above
    the folded one, so the index stays valid for the recomputed rows.
    """
    folded_ids = frozenset(folded)
    if not rows:
        return folded_ids, selected_index
    row = rows[selected_index]
    if row.entry_id and row.foldable and row.entry_id not in folded_ids:
        return folded_ids | {row.entry_id}, selected_index
    return folded_ids, segment_start_up(rows, selected_index)


def unfold_or_down(rows: Sequence[NavRow], selected_index: int, folded: Iterable[str]) -> tuple[frozenset[str], int]:
    """``ctrl+right``: unfold the selected row if it is folded, else jump down."""
    folded_ids = frozenset(folded)
    if not rows:
        return folded_ids, selected_index
    row = rows[selected_index]
    if row.entry_id and row.entry_id in folded_ids:
        return folded_ids - {row.entry_id}, selected_index
    return folded_ids, segment_start_down(rows, selected_index)


# ---------------------------------------------------------------------------------------------
# The stateful list


@dataclass(frozen=True, slots=True)
class NavEvent:
    """Something the caller must act on: ``select``, ``cancel``, ``copy`` or ``edit_label``."""

    kind: str
    entry_id: Any = None
    text: str | None = None


_KEY_ALIASES = {
    "\x1b[A": "up",
    "\x1b[B": "down",
    "\x1b[C": "right",
    "\x1b[D": "left",
    "\x1b[5~": "pageup",
    "\x1b[6~": "pagedown",
    "\x1b[1;5D": "ctrl+left",
    "\x1b[1;5C": "ctrl+right",
    "\x1b[1;3D": "alt+left",
    "\x1b[1;3C": "alt+right",
    "\r": "enter",
    "\n": "enter",
    "\x1b": "escape",
    "\x7f": "backspace",
    "\x08": "backspace",
    "\x01": "ctrl+a",
    "\x04": "ctrl+d",
    "\x0c": "ctrl+l",
    "\x0f": "ctrl+o",
    "\x14": "ctrl+t",
    "\x15": "ctrl+u",
    "\x18": "ctrl+x",
    "L": "shift+l",
    "T": "shift+t",
}

_NAMED_ALIASES = {
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "page-up": "pageup",
    "page_up": "pageup",
    "pgup": "pageup",
    "page-down": "pagedown",
    "page_down": "pagedown",
    "pgdn": "pagedown",
    "return": "enter",
    "esc": "escape",
    "ctrl+shift+o": "shift+ctrl+o",
}

_FILTER_TOGGLES = {"ctrl+t": "no-tools", "ctrl+u": "user-only", "ctrl+l": "labeled-only", "ctrl+a": "all"}


def _key_name(key: str) -> str:
    if key in _KEY_ALIASES:
        return _KEY_ALIASES[key]
    if len(key) > 1:
        lowered = key.lower()
        lowered = _NAMED_ALIASES.get(lowered, lowered)
        if lowered in _NAMED_KEYS:
            return lowered
    return key


def _has_control_characters(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 0x7F or 0x80 <= ord(ch) <= 0x9F for ch in text)


_NAMED_KEYS = frozenset(
    {
        "up", "down", "left", "right", "pageup", "pagedown", "enter", "escape", "backspace",
        "ctrl+left", "alt+left", "ctrl+right", "alt+right", "ctrl+x", "ctrl+d", "ctrl+t", "ctrl+u",
        "ctrl+l", "ctrl+a", "ctrl+o", "shift+ctrl+o", "shift+l", "shift+t",
    }
)  # fmt: skip


class TreeNavigator:
    """pi's tree list as a state machine: rows, selection, filter, search, folds, label times.

    Drive it with :meth:`handle_key` (pi's default key names such as ``"up"``,
    ``"ctrl+left"``, ``"shift+ctrl+o"``, or typed text) or the named methods. ``window`` is
    the page size of ``left``/``right``/``pageup``/``pagedown`` (pi: ``max(5, rows // 2)``).
    """

    def __init__(
        self,
        flat: FlatTree,
        *,
        selected_id: str | None = None,
        filter_mode: str = "default",
        window: int = 10,
        home: str | None = None,
    ):
        if filter_mode not in FILTER_MODES:
            raise ValueError(f"unknown filter mode {filter_mode!r}")
        self.flat = flat
        self.filter_mode = filter_mode
        self.search = ""
        self.folded: set[str] = set()
        self.show_label_times = False
        self.window = max(1, int(window))
        self.home = home
        self.rows: list[NavRow] = self._compute_rows()
        target = selected_id if selected_id is not None else flat.leaf_id
        self.selected = initial_selection(self.rows, flat, target)
        self.last_selected_id: Any = self.rows[self.selected].entry_id if self.rows else None

    @classmethod
    def from_roots(cls, roots: Sequence[TreeNode], leaf_id: Any, **kwargs: Any) -> TreeNavigator:
        return cls(flatten_tree(roots, leaf_id), **kwargs)

    @classmethod
    def from_session(cls, sm: SessionManager, **kwargs: Any) -> TreeNavigator:
        return cls(flatten_tree(sm.get_tree(), sm.leaf_id), **kwargs)

    # -------------------------------------------------------------- state

    @property
    def selected_row(self) -> NavRow | None:
        return self.rows[self.selected] if self.rows else None

    @property
    def selected_id(self) -> Any:
        row = self.selected_row
        return row.entry_id if row is not None else None

    def _compute_rows(self) -> list[NavRow]:
        return visible_rows(
            self.flat, filter_mode=self.filter_mode, search=self.search, folded=self.folded, home=self.home
        )

    def refresh(self) -> None:
        """Recompute the rows and keep the selection on the same entry or its nearest visible
        ancestor (pi's ``applyFilter``)."""
        if self.rows:
            current = self.rows[self.selected].entry_id if self.selected < len(self.rows) else None
            if current is not None:
                self.last_selected_id = current
        self.rows = self._compute_rows()
        if self.last_selected_id is not None:
            self.selected = initial_selection(self.rows, self.flat, self.last_selected_id)
        elif self.selected >= len(self.rows):
            self.selected = max(0, len(self.rows) - 1)
        if self.rows and self.rows[self.selected].entry_id is not None:
            self.last_selected_id = self.rows[self.selected].entry_id

    # -------------------------------------------------------------- moves

    def move_up(self) -> None:
        if self.rows:
            self.selected = len(self.rows) - 1 if self.selected == 0 else self.selected - 1

    def move_down(self) -> None:
        if self.rows:
            self.selected = 0 if self.selected >= len(self.rows) - 1 else self.selected + 1

    def page_up(self) -> None:
        self.selected = max(0, self.selected - self.window)

    def page_down(self) -> None:
        if self.rows:
            self.selected = min(len(self.rows) - 1, self.selected + self.window)

    def fold_or_up(self) -> None:
        folded, selected = fold_or_up(self.rows, self.selected, self.folded)
        if folded != self.folded:
            self.folded = set(folded)
            self.refresh()
        else:
            self.selected = selected

    def unfold_or_down(self) -> None:
        folded, selected = unfold_or_down(self.rows, self.selected, self.folded)
        if folded != self.folded:
            self.folded = set(folded)
            self.refresh()
        else:
            self.selected = selected

    # -------------------------------------------------------------- filters and search

    def set_filter(self, mode: str) -> None:
        if mode not in FILTER_MODES:
            raise ValueError(f"unknown filter mode {mode!r}")
        self.filter_mode = mode
        self.folded.clear()
        self.refresh()

    def toggle_filter(self, mode: str) -> None:
        self.set_filter("default" if self.filter_mode == mode else mode)

    def cycle_filter(self, step: int = 1) -> None:
        position = FILTER_MODES.index(self.filter_mode)
        self.set_filter(FILTER_MODES[(position + step) % len(FILTER_MODES)])

    def type_text(self, text: str) -> None:
        """Append typed text to the search (ignored if it holds control characters)."""
        if not text or _has_control_characters(text):
            return
        self.search += text
        self.folded.clear()
        self.refresh()

    def backspace(self) -> None:
        if self.search:
            self.search = self.search[:-1]
            self.folded.clear()
            self.refresh()

    def clear_search(self) -> None:
        self.search = ""
        self.folded.clear()
        self.refresh()

    def toggle_label_times(self) -> None:
        self.show_label_times = not self.show_label_times

    def set_label(self, entry_id: str, label: str | None, label_timestamp: str | None = None) -> None:
        """Show a new label on ``entry_id`` (the caller appends the label entry).

        Like pi, the filter is not re-run: the row keeps its place until the next change.
        """
        label = label or None
        if label is not None and label_timestamp is None:
            label_timestamp = iso_timestamp(utc_now())
        index = self.flat.set_label(entry_id, label, label_timestamp)
        if index is None:
            return
        for r, row in enumerate(self.rows):
            if row.index == index:
                self.rows[r] = replace(row, label=label, label_timestamp=label_timestamp if label else None)
                break

    def apply_label(self, sm: SessionManager, entry_id: str, text: str | None) -> str:
        """Save a label typed after ``shift+l``, as pi does: the input is trimmed, empty
        removes the label, and the label entry is appended at the session's current leaf.
        Returns the new label entry's id."""
        label = js_trim(text) if text else ""
        label_id = sm.append_label_change(entry_id, label or None)
        appended = sm.get_entry(label_id) or {}
        self.set_label(entry_id, label or None, appended.get("timestamp"))
        return label_id

    # -------------------------------------------------------------- keys

    def handle_key(self, key: str) -> NavEvent | None:
        """Apply one key (§13.6). Returns an event for the caller, or ``None``."""
        name = _key_name(key)
        if name == "up":
            self.move_up()
        elif name == "down":
            self.move_down()
        elif name in ("ctrl+left", "alt+left"):
            self.fold_or_up()
        elif name in ("ctrl+right", "alt+right"):
            self.unfold_or_down()
        elif name in ("left", "pageup"):
            self.page_up()
        elif name in ("right", "pagedown"):
            self.page_down()
        elif name == "enter":
            row = self.selected_row
            return NavEvent("select", row.entry_id) if row is not None else None
        elif name == "ctrl+x":
            row = self.selected_row
            return NavEvent("copy", row.entry_id if row else None, copy_text(row.entry) if row else None)
        elif name == "escape":
            if self.search:
                self.clear_search()
            else:
                return NavEvent("cancel")
        elif name == "ctrl+d":
            self.set_filter("default")
        elif name in _FILTER_TOGGLES:
            self.toggle_filter(_FILTER_TOGGLES[name])
        elif name == "ctrl+o":
            self.cycle_filter(1)
        elif name == "shift+ctrl+o":
            self.cycle_filter(-1)
        elif name == "backspace":
            self.backspace()
        elif name == "shift+l":
            row = self.selected_row
            if row is not None:
                return NavEvent("edit_label", row.entry_id, row.label)
        elif name == "shift+t":
            self.toggle_label_times()
        elif name not in _NAMED_KEYS:
            self.type_text(key)
        return None

    # -------------------------------------------------------------- drawing

    def render(self, *, now: datetime | None = None, all_rows: bool = False) -> list[str]:
        """The list lines (a window around the selection, or every row) and the status line."""
        return render_rows(
            self.rows,
            self.selected,
            filter_mode=self.filter_mode,
            show_label_times=self.show_label_times,
            window=None if all_rows else self.window,
            now=now,
            home=None,
        )


# ---------------------------------------------------------------------------------------------
# Help


_HELP_ITEMS = (
    "↑/↓ move",
    "←/→ page",
    "ctrl+←/→ branch",
    "ctrl+x copy",
    "shift+l label",
    "shift+t label time",
    "filters ctrl+d/t/u/l/a",
    "cycle ctrl+o/shift+ctrl+o",
)


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        while len(word) > width:
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:width])
            word = word[width:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= width:
            current = candidate
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def help_lines(width: int = 80) -> list[str]:
    """The key help, wrapped to ``width`` columns without truncation (items joined by ``·``)."""
    width = max(1, width)
    lines: list[str] = []
    current = ""
    for item in _HELP_ITEMS:
        indented = "  " + item if len("  " + item) <= width else item
        candidate = f"{current} · {item}" if current else indented
        if not current or len(candidate) <= width:
            current = candidate
            continue
        lines.extend(_wrap(current.rstrip(), width))
        current = indented
    if current:
        lines.extend(_wrap(current.rstrip(), width))
    return lines
