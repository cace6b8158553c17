"""A researcher's notes on session entries, kept beside the sessions (never inside them).

A :class:`NoteStore` is one JSON Lines file that only grows: each line is one operation,
``add``, ``edit`` or ``remove``, and the notes are what the operations leave when read in order.
The format is plain enough to read without pi_lab (docs/notes-format.md):

    {"v": 1, "op": "add", "id": "...", "at": "2026-12-02T10:00:00.000Z", "note": {
        "session_id": "...", "session_file": "...", "entry_id": "...", "end_entry_id": null,
        "scope": "entry" | "range" | "branch", "tag": "...", "text": "...", "author": "...",
        "source": "person" | "model:<model key>", "question": null, "agent": "pi"}}
    {"v": 1, "op": "edit", "id": "...", "at": "...", "changes": {"text": "...", "tag": "..."}}
    {"v": 1, "op": "remove", "id": "...", "at": "..."}

Safe as the engine's appends are: every operation is one ``write`` of one whole line under an
exclusive ``flock`` on the file, so two writers (two kernels, a kernel and ``pi-lab ask``)
never interleave; a writer killed in the middle of its line leaves an unterminated line that the
reader skips and counts, and the next writer starts a fresh line after it instead of gluing
onto it. Nothing here opens a session file.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import orjson

from pi_lab.errors import PiLabError

__all__ = ["NoteStore", "Note", "NoteStoreError", "DEFAULT_NOTES_FILE", "NOTE_COLUMNS"]

FORMAT_VERSION = 1
DEFAULT_NOTES_FILE = "pi-lab-notes.jsonl"
SCOPES = ("entry", "range", "branch")
# The columns of NoteStore.table() and of the corpus's annotations table, in order.
NOTE_COLUMNS = ("id", "session_id", "session_file", "entry_id", "end_entry_id", "scope", "tag", "note",
                "author", "created", "updated", "source", "question", "agent")
_EDITABLE = frozenset({"tag", "text", "entry_id", "end_entry_id", "scope", "author"})


class NoteStoreError(PiLabError, ValueError):
    """A notes file that cannot be used (not a regular file, a line from a newer format...)."""


@dataclass
class Note:
    """One note as the operations so far leave it."""

    id: str
    session_id: str
    entry_id: str
    tag: str = ""
    text: str = ""
    author: str = ""
    created: str = ""
    updated: str = ""
    scope: str = "entry"
    end_entry_id: str | None = None
    session_file: str | None = None
    source: str = "person"
    question: str | None = None
    agent: str = "pi"
    extra: dict[str, Any] = field(default_factory=dict)

    def as_row(self) -> dict[str, Any]:
        """The note as one row of :data:`NOTE_COLUMNS` (``note`` is the text)."""
        return {"id": self.id, "session_id": self.session_id, "session_file": self.session_file,
                "entry_id": self.entry_id, "end_entry_id": self.end_entry_id, "scope": self.scope,
                "tag": self.tag, "note": self.text, "author": self.author, "created": self.created,
                "updated": self.updated, "source": self.source, "question": self.question,
                "agent": self.agent}


def _now() -> str:
    moment = datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _default_author() -> str:
    for name in ("PI_LAB_AUTHOR", "GIT_AUTHOR_NAME", "USER", "USERNAME"):
        value = os.environ.get(name)
        if value:
            return value
    return ""


class NoteStore:
    """The notes in one sidecar file (created on the first write; reading never creates it).

    ``path`` defaults to ``pi-lab-notes.jsonl`` in the current folder (beside the notebook a
    kernel runs, so the notes can be committed and shared with it)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, clock: Callable[[], str] | None = None,
                 id_factory: Callable[[], str] | None = None):
        self.path = os.path.abspath(os.fspath(path) if path is not None else DEFAULT_NOTES_FILE)
        self._clock = clock or _now
        self._new_id = id_factory or (lambda: uuid.uuid4().hex[:16])
        self.skipped_lines: list[int] = []
        """1-based numbers of lines the last read could not use (torn or not JSON)."""

    def __repr__(self) -> str:
        return f"NoteStore({self.path!r})"

    # ------------------------------------------------------------------ reading

    def version(self) -> int:
        """A number that changes whenever the file changes, whoever wrote it (another kernel,
        ``pi-lab ask``), from the file's identity, size and time alone: nothing is read. Every
        operation appends a line, so a change always changes the size. 0 while there is no file.
        A viewer compares it on each look to know when to ask for the notes again."""
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return 0
        stamp = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_mode}".encode()
        # 48 bits: a whole number JavaScript holds exactly.
        return int.from_bytes(hashlib.blake2b(stamp, digest_size=6).digest(), "big") or 1

    def can_write(self) -> bool:
        """Whether a note can be added: the file is a regular file this process may write (never
        a symbolic link), or it does not exist yet and its folder may be written."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            folder = os.path.dirname(self.path)
            while folder and not os.path.isdir(folder):
                parent = os.path.dirname(folder)
                if parent == folder:
                    return False
                folder = parent
            return os.access(folder or ".", os.W_OK | os.X_OK)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and os.access(self.path, os.W_OK)

    def notes(self, session_id: str | None = None, *, entry_id: str | None = None,
              tag: str | None = None) -> list[Note]:
        """The current notes in the order they were added, optionally for one session/entry/tag."""
        out = []
        for note in self._fold().values():
            if session_id is not None and note.session_id != session_id:
                continue
            if entry_id is not None and entry_id not in (note.entry_id, note.end_entry_id):
                continue
            if tag is not None and note.tag != tag:
                continue
            out.append(note)
        return out

    def get(self, note_id: str) -> Note:
        note = self._fold().get(note_id)
        if note is None:
            raise NoteStoreError(f"{self.path}: no note {note_id!r}")
        return note

    def tags(self) -> list[str]:
        """Every tag in use, sorted."""
        return sorted({note.tag for note in self._fold().values() if note.tag})

    def table(self, session_id: str | None = None) -> Any:
        """The notes as a ``pyarrow.Table`` with :data:`NOTE_COLUMNS` (all strings)."""
        import pyarrow as pa

        rows = [note.as_row() for note in self.notes(session_id)]
        return pa.table({name: pa.array([row[name] for row in rows], type=pa.string()) for name in NOTE_COLUMNS})

    def _lines(self) -> Iterable[tuple[int, bytes, bool]]:
        try:
            fd = _open_regular(self.path, os.O_RDONLY, "read only from")
        except FileNotFoundError:
            return []
        try:
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read()
        finally:
            os.close(fd)
        lines = data.split(b"\n")
        out = []
        for number, line in enumerate(lines, start=1):
            complete = number < len(lines)  # the part after the last newline is unterminated
            if line.strip():
                out.append((number, line, complete))
        return out

    def _fold(self) -> dict[str, Note]:
        notes: dict[str, Note] = {}
        skipped: list[int] = []
        for number, line, complete in self._lines():
            if not complete:
                skipped.append(number)  # a writer stopped in the middle of this line
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                skipped.append(number)
                continue
            if not isinstance(record, dict):
                skipped.append(number)
                continue
            version = record.get("v")
            if isinstance(version, int) and version > FORMAT_VERSION:
                raise NoteStoreError(f"{self.path} line {number}: written by a newer pi_lab (format {version})")
            if not _apply(notes, record):
                skipped.append(number)
        self.skipped_lines = skipped
        return notes

    # ------------------------------------------------------------------ writing

    def add(self, session: Any, entry_id: str, text: str = "", *, tag: str = "", author: str | None = None,
            end_entry_id: str | None = None, scope: str | None = None, source: str = "person",
            question: str | None = None) -> Note:
        """Add a note on ``entry_id`` of ``session`` (an open session, or its session id).

        ``end_entry_id`` makes it a range on one path (``scope="range"``); ``scope="branch"``
        notes the whole branch from the root to ``entry_id``."""
        session_id, session_file, agent = _session_facts(session)
        if not isinstance(entry_id, str) or not entry_id:
            raise NoteStoreError("a note needs the id of the entry it is on")
        scope = scope or ("range" if end_entry_id else "entry")
        if scope not in SCOPES:
            raise NoteStoreError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        if hasattr(session, "get_entry"):
            for needed in (entry_id, end_entry_id):
                if needed is not None and session.get_entry(needed) is None:
                    raise NoteStoreError(f"entry {needed!r} is not in session {session_id}")
        note_id = self._new_id()
        record = {"v": FORMAT_VERSION, "op": "add", "id": note_id, "at": self._clock(), "note": {
            "session_id": session_id, "session_file": session_file, "entry_id": entry_id,
            "end_entry_id": end_entry_id, "scope": scope, "tag": str(tag), "text": str(text),
            "author": _default_author() if author is None else str(author), "source": source,
            "question": question, "agent": agent}}
        self._append([record])
        return self.get(note_id)

    def add_many(self, records: Iterable[dict[str, Any]]) -> list[str]:
        """Add several notes in one locked write (``ask`` and ``find`` use it): each record has
        the keys of an ``add`` record's ``note``. Returns the new ids."""
        lines = []
        ids = []
        for note in records:
            note_id = self._new_id()
            ids.append(note_id)
            body = {"scope": "entry", "end_entry_id": None, "tag": "", "text": "", "author": "",
                    "source": "person", "question": None, "agent": "pi", "session_file": None, **note}
            lines.append({"v": FORMAT_VERSION, "op": "add", "id": note_id, "at": self._clock(), "note": body})
        if lines:
            self._append(lines)
        return ids

    def edit(self, note_id: str, **changes: Any) -> Note:
        """Change a note's ``text``, ``tag``, ``author``, ``entry_id``, ``end_entry_id`` or ``scope``."""
        unknown = set(changes) - _EDITABLE
        if unknown:
            raise NoteStoreError(f"cannot edit {', '.join(sorted(unknown))} of a note")
        self.get(note_id)
        self._append([{"v": FORMAT_VERSION, "op": "edit", "id": note_id, "at": self._clock(),
                       "changes": {k: v for k, v in changes.items()}}])
        return self.get(note_id)

    def remove(self, note_id: str) -> None:
        """Remove a note (the file keeps the history: an append-only ``remove`` line)."""
        self.get(note_id)
        self._append([{"v": FORMAT_VERSION, "op": "remove", "id": note_id, "at": self._clock()}])

    def _append(self, records: list[dict[str, Any]]) -> None:
        payload = b"".join(orjson.dumps(r) + b"\n" for r in records)
        directory = os.path.dirname(self.path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        fd = _open_regular(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, "written only to")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                size = os.fstat(fd).st_size
                if size:
                    # A writer killed mid-line left no newline: start a fresh line rather than
                    # glue this record onto the torn one (which stays skipped).
                    if os.pread(fd, 1, size - 1) != b"\n":
                        payload = b"\n" + payload
                view = memoryview(payload)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _open_regular(path: str, flags: int, how: str) -> int:
    """``path`` opened with ``flags``, only if it is a regular file: never through a symbolic link
    (O_NOFOLLOW), and a FIFO is refused rather than waited on (O_NONBLOCK). ``how`` completes
    "notes are ... a regular file" in the error."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NoteStoreError(f"{path}: a symbolic link; notes are {how} a regular file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NoteStoreError(f"{path}: not a regular file")
    return fd


def _session_facts(session: Any) -> tuple[str, str | None, str]:
    if isinstance(session, str):
        return session, None, "pi"
    session_id = getattr(session, "session_id", None)
    if not isinstance(session_id, str) or not session_id:
        raise NoteStoreError("a note needs a session (an open session or its id)")
    return session_id, getattr(session, "session_file", None), getattr(session, "agent", "pi")


def _apply(notes: dict[str, Note], record: dict[str, Any]) -> bool:
    """Apply one operation; False when the line is not one (it is then skipped and counted)."""
    op = record.get("op")
    note_id = record.get("id")
    if not isinstance(note_id, str):
        return False
    at = _text(record.get("at"))
    if op == "add":
        body = record.get("note")
        if not isinstance(body, dict) or not isinstance(body.get("session_id"), str) \
                or not isinstance(body.get("entry_id"), str):
            return False
        scope = body.get("scope")
        known = {"session_id", "session_file", "entry_id", "end_entry_id", "scope", "tag", "text", "author",
                 "source", "question", "agent"}
        notes[note_id] = Note(
            id=note_id, session_id=body["session_id"], entry_id=body["entry_id"],
            tag=_text(body.get("tag")), text=_text(body.get("text")), author=_text(body.get("author")),
            created=at, updated=at, scope=scope if isinstance(scope, str) and scope in SCOPES else "entry",
            end_entry_id=body.get("end_entry_id") if isinstance(body.get("end_entry_id"), str) else None,
            session_file=body.get("session_file") if isinstance(body.get("session_file"), str) else None,
            source=_text(body.get("source")) or "person",
            question=body.get("question") if isinstance(body.get("question"), str) else None,
            agent=_text(body.get("agent")) or "pi",
            extra={k: v for k, v in body.items() if k not in known},
        )
        return True
    note = notes.get(note_id)
    if note is None:
        return False
    if op == "edit":
        changes = record.get("changes")
        if not isinstance(changes, dict):
            return False
        for key, value in changes.items():
            if key == "text":
                note.text = _text(value)
            elif key == "scope" and value in SCOPES:
                note.scope = value
            elif key in ("tag", "author"):
                setattr(note, key, _text(value))
            elif key in ("entry_id", "end_entry_id") and (isinstance(value, str) or (value is None and key != "entry_id")):
                setattr(note, key, value)
        note.updated = at
        return True
    if op == "remove":
        del notes[note_id]
        return True
    return False


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
