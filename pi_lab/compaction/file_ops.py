"""File-operation tracking for summaries (compaction.md §8).

The lists appended to a summary come from recognised tool calls (``read``, ``write``,
``edit`` with a non-empty string ``path``) and from earlier pi-generated summaries' details,
not from the file system: a bash command that changes a file is not seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableSet
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "OrderedSet",
    "FileOperations",
    "create_file_ops",
    "extract_file_ops_from_message",
    "add_summary_details",
    "compute_file_lists",
    "format_file_operations",
    "js_sort_key",
]


class OrderedSet(MutableSet):
    """A set that remembers insertion order (iteration, ``list()``, ``repr``).

    Compares equal to any other set with the same members, and to a list or tuple with
    the same members in the same order.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._items: dict[Any, None] = dict.fromkeys(items)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, item: Any) -> None:
        self._items[item] = None

    def discard(self, item: Any) -> None:
        self._items.pop(item, None)

    def update(self, items: Iterable[Any]) -> None:
        for item in items:
            self._items[item] = None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple)):
            return list(self._items) == list(other)
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OrderedSet({list(self._items)!r})"


@dataclass(slots=True)
class FileOperations:
    """Paths seen per kind of operation, each in first-seen order."""

    read: OrderedSet = field(default_factory=OrderedSet)
    written: OrderedSet = field(default_factory=OrderedSet)
    edited: OrderedSet = field(default_factory=OrderedSet)


def create_file_ops() -> FileOperations:
    return FileOperations()


_KIND_BY_TOOL = {"read": "read", "write": "written", "edit": "edited"}


def _record_call(name: Any, arguments: Any, ops: FileOperations) -> None:
    kind = _KIND_BY_TOOL.get(name) if isinstance(name, str) else None
    if kind is None or not isinstance(arguments, Mapping):
        return
    path = arguments.get("path")
    if isinstance(path, str) and path:
        getattr(ops, kind).add(path)


def extract_file_ops_from_message(message: Mapping[str, Any], ops: FileOperations) -> None:
    """Add the paths of an assistant's tool calls, or a tool result's nested calls, to ``ops``."""
    role = message.get("role")
    if role == "assistant":
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "toolCall":
                if block.get("name") and block.get("arguments"):
                    _record_call(block["name"], block["arguments"], ops)
    elif role == "toolResult":
        nested = message.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, Mapping) else None
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, Mapping):
                    _record_call(call.get("name"), call.get("arguments"), ops)


def add_summary_details(details: Any, ops: FileOperations) -> None:
    """Carry over ``details.readFiles`` (→ read) and ``details.modifiedFiles`` (→ edited)."""
    if not isinstance(details, Mapping):
        return
    read_files = details.get("readFiles")
    if isinstance(read_files, list):
        ops.read.update(read_files)
    modified_files = details.get("modifiedFiles")
    if isinstance(modified_files, list):
        ops.edited.update(modified_files)


def js_sort_key(text: Any) -> bytes:
    """Sort key matching JavaScript's default ``Array.prototype.sort`` (UTF-16 code units)."""
    return (text if isinstance(text, str) else str(text)).encode("utf-16-be", "surrogatepass")


def _kind(file_ops: Any, name: str) -> Iterable[str]:
    value = file_ops.get(name) if isinstance(file_ops, Mapping) else getattr(file_ops, name, None)
    return value or ()


def compute_file_lists(file_ops: Any) -> tuple[list[str], list[str]]:
    """``(read_files, modified_files)``: modified = edited ∪ written; read excludes modified; sorted.

    ``file_ops`` is a :class:`FileOperations` or anything with (or mapping to) ``read``,
    ``written`` and ``edited`` collections.
    """
    modified = OrderedSet(_kind(file_ops, "edited"))
    modified.update(_kind(file_ops, "written"))
    read_only = [path for path in _kind(file_ops, "read") if path not in modified]
    return sorted(read_only, key=js_sort_key), sorted(modified, key=js_sort_key)


def format_file_operations(read_files: Iterable[str], modified_files: Iterable[str]) -> str:
    """The ``<read-files>`` / ``<modified-files>`` block appended to a summary ('' when empty)."""
    read_files = list(read_files)
    modified_files = list(modified_files)
    sections: list[str] = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)
