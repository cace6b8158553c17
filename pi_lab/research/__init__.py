"""Research on sessions: a researcher's notes beside the session files, and questions asked
of many sessions by a model, each finding citing the entries it rests on."""

from pi_lab.research.notes import DEFAULT_NOTES_FILE, NOTE_COLUMNS, Note, NoteStore, NoteStoreError

__all__ = ["NoteStore", "Note", "NoteStoreError", "DEFAULT_NOTES_FILE", "NOTE_COLUMNS"]
