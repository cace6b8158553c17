"""A researcher's notes in the viewers: the notes payload, the note requests and the note filter.

The notes live in a sidecar :class:`~pi_lab.research.notes.NoteStore`, never in the session, so
every live viewer answers these requests whether or not it may write the session (the Lab
viewer is read-only for sessions and still annotates; another agent's session too). The
widget and the server call :func:`note_request` with their store and their session; the static
export embeds :func:`notes_payload` with ``writable=False``.

Requests (``contract.NOTE_OP_NAMES``), each answered with the notes payload after it:

* ``notes`` ``{}``;
* ``note_add`` ``{entry_id, text?, tag?, scope?, end_entry_id?}``;
* ``note_edit`` ``{id, text?, tag?}``; ``note_remove`` ``{id}``.

The note filter of a view (``note_filter``: ``""``, ``"noted"`` or ``"tag:<tag>"``) keeps the
entries :func:`kept_entry_ids` names; the row layout combines it with the filter mode and the
search (``pi_lab.session.flatten.visible_layout``'s ``keep_ids``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pi_lab.research.notes import Note, NoteStore, NoteStoreError
from pi_lab.session.protocol import ReadableSession
from pi_lab.view.contract import MAX_NOTE_TAG_CHARS, MAX_NOTE_TEXT_CHARS, NOTE_OP_NAMES, NOTE_SCOPES
from pi_lab.view.requests import RequestError, kind_of, request_args

__all__ = [
    "NOTE_OPS",
    "NOTED",
    "TAG_PREFIX",
    "STATIC_REFUSAL",
    "notes_payload",
    "note_request",
    "note_filter_arg",
    "covered_ids",
    "kept_entry_ids",
    "store_of",
]

NOTE_OPS = frozenset(NOTE_OP_NAMES)
NOTED = "noted"
TAG_PREFIX = "tag:"
# What the static export answers to a write (src_frontend/export implements it; kept here as
# the one wording).
STATIC_REFUSAL = ("This page is a static export: notes are read-only here. Open the session in JupyterLab "
                  "or a notebook to add notes.")


# ---------------------------------------------------------------------------------------------
# The payload


def _note_json(note: Note, sm: ReadableSession) -> dict[str, Any]:
    return {"id": note.id, "entry_id": note.entry_id, "end_entry_id": note.end_entry_id, "scope": note.scope,
            "tag": note.tag, "text": note.text, "author": note.author, "created": note.created,
            "updated": note.updated, "source": note.source, "question": note.question,
            "missing": sm.get_entry(note.entry_id) is None}


def notes_payload(store: NoteStore, sm: ReadableSession, *, writable: bool | None = None, store_label: str | None = None,
                  coverage: bool = False) -> dict[str, Any]:
    """The notes of ``sm``'s session in ``store``, oldest first (see the module docstring).

    ``writable`` defaults to whether the store can be written; ``store_label`` is the store's
    path as the user should see it (default: its path). ``coverage`` adds ``covered``: for each
    entry a note covers, the sorted tags of the notes covering it ("" for a note without a tag),
    which is what a viewer without a server (the static export) needs to mark and filter rows."""
    # The version is read before the notes: a write in between leaves a version that a later
    # look sees change, never notes newer than their version says.
    version = store.version()
    notes = store.notes(sm.session_id)
    payload: dict[str, Any] = {
        "notes": [_note_json(note, sm) for note in notes],
        "tags": sorted({note.tag for note in notes if note.tag}),
        "store": store.path if store_label is None else store_label,
        "writable": store.can_write() if writable is None else bool(writable),
        "version": version,
    }
    if coverage:
        covered: dict[str, set[str]] = {}
        for note in notes:
            for entry_id in covered_ids(note, sm):
                covered.setdefault(entry_id, set()).add(note.tag)
        payload["covered"] = {entry_id: sorted(tags) for entry_id, tags in covered.items()}
    return payload


# ---------------------------------------------------------------------------------------------
# What a note covers, and the note filter


def _path_between(sm: ReadableSession, start: str, end: str) -> list[str] | None:
    """The ids from ``start`` down to ``end`` when ``start`` is ``end`` or one of its ancestors."""
    ids = [entry.get("id") for entry in sm.get_branch(end)]
    if start not in ids:
        return None
    return [entry_id for entry_id in ids[ids.index(start):] if isinstance(entry_id, str)]


def covered_ids(note: Note, sm: ReadableSession) -> list[str]:
    """The entries of ``sm`` that ``note`` covers: its entry; for a range, every entry on the path
    between its two ends (either may be the upper one); for a branch, every entry from the root
    down to its entry. None of them when its entry is not in this session."""
    entry_id = note.entry_id
    if sm.get_entry(entry_id) is None:
        return []
    if note.scope == "branch":
        ids = [e.get("id") for e in sm.get_branch(entry_id)]
        return [i for i in ids if isinstance(i, str)]
    end = note.end_entry_id
    if note.scope == "range" and isinstance(end, str) and sm.get_entry(end) is not None:
        path = _path_between(sm, entry_id, end) or _path_between(sm, end, entry_id)
        return path if path is not None else [entry_id, end]
    return [entry_id]


def note_filter_arg(value: Any, name: str = "note_filter") -> str:
    """A note filter as a request sends it: ``""`` (or null: off), ``"noted"`` or ``"tag:<tag>"``."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RequestError(f"{name} must be a string, not {kind_of(value)}")
    if value in ("", NOTED):
        return value
    if value.startswith(TAG_PREFIX):
        tag = _tag(value[len(TAG_PREFIX):], f"the tag of {name}")
        if not tag:
            raise RequestError(f'{name} "tag:" must name a tag')
        return TAG_PREFIX + tag
    raise RequestError(f'{name} must be "", "noted" or "tag:<tag>", not a string starting {value[:20]!r}')


def kept_entry_ids(store: NoteStore, sm: ReadableSession, note_filter: str) -> frozenset[str] | None:
    """The entries a note filter keeps (``None`` when the filter is off): those covered by any
    note of the session (``"noted"``) or by a note with the tag (``"tag:<tag>"``)."""
    if not note_filter:
        return None
    tag = note_filter[len(TAG_PREFIX):] if note_filter.startswith(TAG_PREFIX) else None
    kept: set[str] = set()
    for note in store.notes(sm.session_id, tag=tag):
        kept.update(covered_ids(note, sm))
    return frozenset(kept)


# ---------------------------------------------------------------------------------------------
# Requests


def _text(args: Mapping[str, Any], name: str, limit: int) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise RequestError(f"{name} must be a string, not {kind_of(value)}")
    if len(value) > limit:
        raise RequestError(f"{name} may have at most {limit:,} characters, not {len(value):,}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone UTF-16 surrogate: no JSON Lines file can hold it as text
        raise RequestError(f"{name} holds a lone surrogate, which is not text") from None
    return value


def _tag(value: str, name: str = "tag") -> str:
    if len(value) > MAX_NOTE_TAG_CHARS:
        raise RequestError(f"{name} may have at most {MAX_NOTE_TAG_CHARS} characters, not {len(value):,}")
    if "\n" in value or "\r" in value:
        raise RequestError(f"{name} must be one line (it holds a line break)")
    return value.strip()


def _session_entry(sm: ReadableSession, args: Mapping[str, Any], name: str, *, optional: bool = False) -> str | None:
    value = args.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise RequestError(f"{name} must be an entry id (a string), not {kind_of(value)}")
    if sm.get_entry(value) is None:
        raise RequestError(f"{name}: entry {value[:40]!r} is not in this session")
    return value


def _own_note(store: NoteStore, sm: ReadableSession, args: Mapping[str, Any]) -> Note:
    note_id = args.get("id")
    if not isinstance(note_id, str):
        raise RequestError(f"id must be a note id (a string), not {kind_of(note_id)}")
    try:
        note = store.get(note_id)
    except NoteStoreError:
        note = None
    if note is None or note.session_id != sm.session_id:
        raise RequestError(f"no note {note_id[:40]!r} in this session")
    return note


def _add(store: NoteStore, sm: ReadableSession, args: Mapping[str, Any]) -> None:
    entry_id = _session_entry(sm, args, "entry_id")
    assert entry_id is not None
    text = _text(args, "text", MAX_NOTE_TEXT_CHARS) or ""
    tag = _tag(_text(args, "tag", MAX_NOTE_TAG_CHARS) or "")
    if not text.strip() and not tag:
        raise RequestError("a note needs a text or a tag")
    scope = args.get("scope")
    if scope is not None and scope not in NOTE_SCOPES:
        shown = repr(scope[:20]) if isinstance(scope, str) else kind_of(scope)
        raise RequestError(f"scope must be one of {', '.join(NOTE_SCOPES)}, not {shown}")
    end = _session_entry(sm, args, "end_entry_id", optional=True)
    scope = scope or ("range" if end is not None else "entry")
    if (scope == "range") != (end is not None):
        raise RequestError("a range note needs end_entry_id, and only a range note has one")
    if end is not None and _path_between(sm, entry_id, end) is None and _path_between(sm, end, entry_id) is None:
        raise RequestError("a range note's two entries must lie on one path (one above the other)")
    store.add(sm, entry_id, text, tag=tag, scope=scope, end_entry_id=end)


def _edit(store: NoteStore, sm: ReadableSession, args: Mapping[str, Any]) -> None:
    note = _own_note(store, sm, args)
    text = _text(args, "text", MAX_NOTE_TEXT_CHARS)
    raw_tag = _text(args, "tag", MAX_NOTE_TAG_CHARS)
    tag = None if raw_tag is None else _tag(raw_tag)
    if text is None and tag is None:
        raise RequestError("note_edit needs a text or a tag to change")
    if not (note.text if text is None else text).strip() and not (note.tag if tag is None else tag):
        raise RequestError("a note needs a text or a tag (remove the note instead)")
    changes = {name: value for name, value in (("text", text), ("tag", tag)) if value is not None}
    store.edit(note.id, **changes)


def _remove(store: NoteStore, sm: ReadableSession, args: Mapping[str, Any]) -> None:
    store.remove(_own_note(store, sm, args).id)


_WRITES = {"note_add": _add, "note_edit": _edit, "note_remove": _remove}


def note_request(store: NoteStore, sm: ReadableSession, op: str, args: Any = None, *, writable: bool | None = None,
                 store_label: str | None = None) -> dict[str, Any]:
    """Answer one note request for session ``sm`` (any :class:`ReadableSession`: a note never
    writes the session). A bad request raises :class:`RequestError` with a one-line reason; a
    store that cannot be used (a symbolic link, a FIFO) raises the store's ``NoteStoreError``.
    ``writable=False`` refuses the writes (a viewer that only shows notes)."""
    if op not in NOTE_OPS:
        raise RequestError(f"unknown note request {str(op)[:40]!r}" if isinstance(op, str)
                           else f"the request name must be a string, not {kind_of(op)}")
    args = request_args(args)
    write = _WRITES.get(op)
    if write is not None:
        if writable is False:
            raise RequestError(f"the notes store {store_label or store.path} cannot be written here")
        write(store, sm, args)
    return notes_payload(store, sm, writable=writable, store_label=store_label)


def store_of(notes: Any) -> NoteStore:
    """A :class:`NoteStore` from what a caller passes as ``notes=``: a store, a path, or None
    for the default file (``pi-lab-notes.jsonl`` in the current folder)."""
    if isinstance(notes, NoteStore):
        return notes
    if notes is None or isinstance(notes, (str, os.PathLike)):
        return NoteStore(notes)
    raise TypeError(f"notes must be a path or a NoteStore, not {type(notes).__name__}")

