"""Writing entries: the ``append_*`` methods, moving to a branch with a summary, and forking
into a new file (:meth:`create_branched_session`).

:class:`EntryAppends` is the part of :class:`~pi_lab.session.SessionManager` that makes new
entries: each gets an id, the leaf as its ``parentId`` and a timestamp (pi's key order), goes
into memory, then to the file through the second-writer guard of
:class:`~pi_lab.session.file_sync.FileSync`; a failed write rolls the append back, as pi
1.6.0 does. The manager inherits it; the public API is the manager's. What it needs from the
manager beyond the file side is :class:`AppendsOwner`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from pi_lab.errors import ReadOnlySession
from pi_lab.session import paths as _paths
from pi_lab.session._json import NonObjectLine
from pi_lab.session._text import js_trim
from pi_lab.session.bodies import LazyEntry
from pi_lab.session.entries import Entry
from pi_lab.session.errors import EntryNotFound
from pi_lab.session.file_sync import FileSync
from pi_lab.session.ids import Clock, epoch_ms, iso_timestamp, new_entry_id, uuid7
from pi_lab.session.migration import CURRENT_VERSION
from pi_lab.session.projection import SessionContext, replay_system_state
from pi_lab.session.storage import rewrite_file
from pi_lab.session.tree import UNSET, TreeNode, attach_node

__all__ = ["EntryAppends", "AppendsOwner", "is_user_or_assistant"]

_EDITABLE_MESSAGE_ROLES = frozenset({"user", "assistant", "toolResult"})


_NEWLINES = re.compile(r"[\r\n]+")


def is_user_or_assistant(entry: Entry) -> bool:
    if type(entry) is LazyEntry:  # a skeleton keeps its message's role
        return entry.role in ("user", "assistant")
    if entry.get("type") != "message":
        return False
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") in ("user", "assistant")


def _spread(entry: Entry) -> Entry:
    """``{...entry}``: an array line spreads its elements under "0", "1", ... before the
    properties pi's v1 migration gave it."""
    if isinstance(entry, NonObjectLine) and isinstance(entry.value, list):
        return {**{str(i): v for i, v in enumerate(entry.value)}, **entry}
    return dict(entry)


def _put(entry: Entry, key: str, value: Any) -> None:
    """Set an optional field; ``None`` stands for JavaScript's ``undefined`` (omitted)."""
    if value is not None:
        entry[key] = value


class AppendsOwner(Protocol):
    """What :class:`EntryAppends` needs from the session it is part of (SessionManager),
    beyond the file side it is built on (:class:`~pi_lab.session.file_sync.FileSync` and its
    :class:`~pi_lab.session.file_sync.FileSyncOwner`): the header's fields, the clock, the
    cached paths an append extends, and the reads a new entry is checked against."""

    _cwd: str
    _session_dir: str
    _session_id: str
    _session_id_factory: Callable[[], str] | None
    _clock: Clock
    _branch_cache: dict[str, list[Entry]]
    _raw_paths: dict[str, list[Any]]  # a lazy session's paths of skeletons

    @property
    def leaf_id(self) -> str | None: ...

    def get_entry(self, entry_id: str) -> Entry | None: ...

    def get_branch(self, from_id: str | None = None) -> list[Entry]: ...

    def build_session_context(self, leaf_id: Any = ...) -> SessionContext: ...

    def _raw_path(self, target: str) -> list[Any]: ...

    def _cache_branch(self, target: str, path: list[Entry]) -> None: ...

    def _cache_raw_path(self, target: str, path: list[Any]) -> None: ...

    def _apply_label(self, entry: Entry) -> None: ...


if TYPE_CHECKING:
    class _Base(FileSync, AppendsOwner):
        __slots__ = ()
else:  # the protocol only types the methods below; at run time the owner provides it all
    _Base = FileSync


class EntryAppends(_Base):
    """The entry-writing methods of SessionManager (a base class, never used alone); each
    append goes to the file through the second-writer guard of the FileSync below it."""

    __slots__ = ()

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = None,
        from_hook: bool | None = None,
        usage: dict[str, Any] | None = None,
    ) -> str:
        """Move to ``branch_from_id`` and append a branch summary of the abandoned path."""
        if branch_from_id is not None and branch_from_id not in self._by_id:
            raise EntryNotFound(branch_from_id)
        if self._read_only:
            raise ReadOnlySession(self._session_file, "append a branch summary")
        from_id = self.leaf_id or "root"
        self._leaf_id = branch_from_id
        entry = self._base("branch_summary")
        entry["fromId"] = from_id
        entry["summary"] = summary
        _put(entry, "details", details)
        _put(entry, "usage", usage)
        _put(entry, "fromHook", from_hook)
        return self._append(entry)

    def _now(self) -> datetime:
        return self._clock()

    def _base(self, kind: str, timestamp: str | None = None) -> Entry:
        return self._with_position({"type": kind}, timestamp)

    def _with_position(self, entry: Entry, timestamp: str | None = None) -> Entry:
        """Add id, parentId (the leaf) and timestamp after the fields already in ``entry``."""
        entry["id"] = new_entry_id(self._by_id, self._uuid_factory)
        if self._leaf_id is not UNSET:  # JavaScript drops an undefined parentId
            entry["parentId"] = self._leaf_id
        entry["timestamp"] = timestamp or iso_timestamp(self._now())
        return entry

    def _append(self, entry: Entry) -> str:
        fd = self._open_checked(entry)
        try:
            return self._append_with(entry, fd)
        finally:
            if fd is not None:
                os.close(fd)

    def _append_with(self, entry: Entry, fd: int | None) -> str:
        previous_leaf = self._leaf_id
        had_conversation = self._has_conversation
        self._file_entries.append(entry)
        self._entries_cache = None
        entry_id = entry["id"]
        self._by_id[entry_id] = entry
        self._leaf_id = entry_id
        if is_user_or_assistant(entry):
            self._has_conversation = True
        if isinstance(previous_leaf, str) and entry.get("parentId") == previous_leaf:
            parent_path = self._branch_cache.get(previous_leaf)
            if parent_path is not None:
                self._cache_branch(entry_id, [*parent_path, entry])
            if previous_leaf in self._raw_paths:  # a lazy session's path of skeletons
                self._cache_raw_path(entry_id, [*self._raw_paths[previous_leaf], entry])
        try:
            self._persist_entry(entry, fd)
        except BaseException:
            # pi 1.6.0 rolls the in-memory append back when the write fails.
            self._file_entries.pop()
            self._entries_cache = None
            self._branch_cache.pop(entry_id, None)
            self._raw_paths.pop(entry_id, None)
            del self._by_id[entry_id]
            self._leaf_id = previous_leaf
            self._has_conversation = had_conversation
            raise
        self._leaf_pinned = True
        if self._tree is not None:
            attach_node(self._tree[0], self._tree[1], TreeNode(entry))
        self._changes.appended(entry)
        return entry_id

    def append_message(self, message: dict[str, Any]) -> str:
        entry = self._base("message")
        entry["message"] = message
        return self._append(entry)

    def append_thinking_level_change(self, thinking_level: str) -> str:
        entry = self._base("thinking_level_change")
        entry["thinkingLevel"] = thinking_level
        return self._append(entry)

    def append_model_change(self, provider: str, model_id: str) -> str:
        entry = self._base("model_change")
        entry["provider"] = provider
        entry["modelId"] = model_id
        return self._append(entry)

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int | float,
        details: Any = None,
        from_hook: bool | None = None,
        usage: dict[str, Any] | None = None,
    ) -> str:
        """Append a checkpoint; ``first_kept_entry_id=None`` keeps nothing from before it."""
        now = self._now()
        system_state = replay_system_state(self.build_session_context().messages)
        entry = self._base("compaction", iso_timestamp(now))
        entry["summary"] = summary
        entry["firstKeptEntryId"] = first_kept_entry_id if first_kept_entry_id is not None else entry["id"]
        entry["tokensBefore"] = tokens_before
        _put(entry, "details", details)
        _put(entry, "usage", usage)
        _put(entry, "fromHook", from_hook)
        if system_state is not None:
            system_state["timestamp"] = epoch_ms(now)
            entry["systemMessage"] = system_state
        return self._append(entry)

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """Extension state: a tree entry that never reaches the model."""
        entry: Entry = {"type": "custom", "customType": custom_type}
        _put(entry, "data", data)
        return self._append(self._with_position(entry))

    def append_custom_message_entry(
        self, custom_type: str, content: Any, display: bool, details: Any = None
    ) -> str:
        entry: Entry = {"type": "custom_message", "customType": custom_type, "content": content, "display": display}
        _put(entry, "details", details)
        return self._append(self._with_position(entry))

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        if target_id not in self._by_id:
            raise EntryNotFound(target_id)
        entry = self._base("label")
        entry["targetId"] = target_id
        _put(entry, "label", label)
        entry_id = self._append(entry)
        self._apply_label(entry)
        if self._tree is not None:
            self._show_label(self._tree[1], target_id)
        return entry_id

    def append_session_info(self, name: str) -> str:
        entry = self._base("session_info")
        entry["name"] = js_trim(_NEWLINES.sub(" ", name))
        return self._append(entry)

    def append_context_edit(self, target_id: str, replacement: dict[str, Any] | None) -> str:
        """Omit (``None``) or replace (``{"content": ...}``) an entry in the model's view."""
        if replacement is not None and (
            not isinstance(replacement, dict)
            or "content" not in replacement
            or not isinstance(replacement["content"], (str, list))
        ):
            raise ValueError("Context edit replacement must be null or contain string/array content")
        held = self._by_id.get(target_id)
        if held is None:
            raise EntryNotFound(target_id)
        leaf = self.leaf_id
        if not leaf or not any(e is held for e in self._raw_path(leaf)):
            raise ValueError(f"Entry {target_id} is not on the active branch")
        target = self.get_entry(target_id)
        if target is None:  # (held is indexed: the lookup finds it)
            raise EntryNotFound(target_id)
        role = target.get("message", {}).get("role") if target.get("type") == "message" and isinstance(target.get("message"), dict) else None
        if not (target.get("type") == "custom_message" or role in _EDITABLE_MESSAGE_ROLES):
            raise ValueError(f"Entry {target_id} does not contribute editable model content")
        if replacement is not None and isinstance(replacement["content"], str) and role in ("assistant", "toolResult"):
            replacement = {**replacement, "content": [{"type": "text", "text": replacement["content"]}]}
        entry = self._base("context_edit")
        entry["targetId"] = target_id
        entry["replacement"] = replacement
        return self._append(entry)

    def append_usage(
        self, kind: str, provider: str, model: str, usage: dict[str, Any], note: str | None = None
    ) -> Entry:
        entry = self._base("usage")
        entry["kind"] = kind
        entry["provider"] = provider
        entry["model"] = model
        entry["usage"] = usage
        if note:
            entry["note"] = note
        self._append(entry)
        return entry

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Replace this session by a new one holding only the path to ``leaf_id``.

        Label entries are dropped from the path and re-created after it; the new header
        names the old file as ``parentSession``. Returns the new file path (its first write
        is deferred when the path holds no conversation yet), or ``None`` in memory.
        The old file is never written, so this works on a read-only manager too (forking a
        session one only inspects): the manager then holds the new file and may write it.
        Nothing changes if the new file cannot be written (the error says why).
        """
        path = self.get_branch(leaf_id)
        if not path:
            raise EntryNotFound(leaf_id)
        kept: list[Entry] = []
        first_after_label: dict[str, str | None] = {}
        pending_labels: list[str] = []
        previous: str | None = None
        for entry in path:
            if entry.get("type") == "label":
                pending_labels.append(entry["id"])
                continue
            copy = _spread(entry)
            copy["parentId"] = previous
            for label_id in pending_labels:
                first_after_label[label_id] = copy.get("id")
            pending_labels = []
            kept.append(copy)
            previous = copy.get("id")
        for copy in kept:
            if copy.get("type") == "compaction":
                first_kept = copy.get("firstKeptEntryId")
                # A non-string firstKeptEntryId (hand-edited file) names no entry.
                if isinstance(first_kept, str) and first_kept != copy.get("id") and first_kept in first_after_label:
                    copy["firstKeptEntryId"] = first_after_label[first_kept]
        now = self._now()
        session_id = self._session_id_factory() if self._session_id_factory else uuid7(epoch_ms(now))
        timestamp = iso_timestamp(now)
        header: Entry = {"type": "session", "version": CURRENT_VERSION, "id": session_id, "timestamp": timestamp, "cwd": self._cwd}
        if self._persist and self._session_file:
            header["parentSession"] = self._session_file
        on_path = {e.get("id") for e in kept}
        taken = set(on_path)
        labels: list[Entry] = []
        for target, text in self._labels.items():
            if target not in on_path:
                continue
            label_id = new_entry_id(taken, self._uuid_factory)
            taken.add(label_id)
            labels.append(
                {
                    "type": "label",
                    "id": label_id,
                    "parentId": previous,
                    "timestamp": self._label_timestamps.get(target),
                    "targetId": target,
                    "label": text,
                }
            )
            previous = label_id
        new_entries = [header, *kept, *labels]
        new_file = None
        written = None
        if self._persist:
            new_file = os.path.join(self._session_dir, _paths.session_file_name(timestamp, session_id))
            if any(is_user_or_assistant(e) for e in new_entries):
                # Written whole (temp file, flush, rename) before anything in memory changes:
                # if it fails, this manager is exactly as it was and the error says why.
                written = rewrite_file(new_file, new_entries)
        self._file_entries = new_entries
        self._bodies = None  # the new session's entries are dicts (copies)
        self._session_id = session_id
        self._rebuild_index()
        self._forget_file()
        self._leaf_pinned = False
        self._read_only = False  # the new file is pi_lab's own
        if not self._persist:
            return None
        self._session_file = new_file
        if written is not None:
            self._note_write(written)
            self._flushed = True
        return self._session_file
