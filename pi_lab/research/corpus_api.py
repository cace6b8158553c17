"""The research methods of :class:`pi_lab.corpus.Corpus`: notes, ``ask`` and ``find``.

Kept here so the corpus module stays about tables; ``Corpus`` binds these as its methods.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pi_lab.research.notes import NOTE_COLUMNS, NoteStore

__all__ = ["corpus_notes", "corpus_annotations", "corpus_ask", "corpus_find"]


def corpus_notes(corpus: Any) -> NoteStore:
    """The corpus's notes store: ``corpus.notes_path`` when set, else ``pi-lab-notes.jsonl`` in
    the current folder (beside the notebook)."""
    path = getattr(corpus, "notes_path", None)
    return NoteStore(path)


def _session_ids(corpus: Any) -> set[str]:
    return set(corpus.sessions.column("session_id").to_pylist())


def corpus_annotations(corpus: Any) -> Any:
    """Every note on the corpus's sessions, a person's or a model's, as a ``pyarrow.Table``
    (``session_id, entry_id, tag, note, author, created, source`` first, then the rest of
    :data:`~pi_lab.research.notes.NOTE_COLUMNS`). It joins the other tables in ``c.sql``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = corpus_notes(corpus).table()
    ids = pa.array(sorted(_session_ids(corpus)), pa.string())
    # pc.is_in is made at import from Arrow's function registry, so no checker can see it;
    # call_function is the same kernel under a name pyarrow declares.
    table = table.filter(pc.call_function("is_in", [table.column("session_id")], pc.SetLookupOptions(value_set=ids)))
    first = ["session_id", "entry_id", "tag", "note", "author", "created", "source"]
    return table.select(first + [c for c in NOTE_COLUMNS if c not in first])


def _files_by_session(corpus: Any) -> dict[str, str]:
    rows = corpus.sessions.select(["session_id", "file"]).to_pylist()
    return {row["session_id"]: row["file"] for row in rows}


def corpus_ask(corpus: Any, question: str, *, client: Any, model: Any, unit: str = "session",
               where: str | None = None, answer: str = "yes/no", labels: Sequence[str] | None = None,
               max_cost: float | None = None, concurrency: int = 4, dry_run: bool = False,
               progress: bool = True, retry: Any = None, cache: Any = None) -> Any:
    """See :meth:`pi_lab.corpus.Corpus.ask`."""
    from pi_lab.llm.protocol import run_sync
    from pi_lab.research.ask import ask_units, select_units

    units = select_units(corpus, unit, where)
    return run_sync(ask_units(units, question, client=client, model=model, answer=answer, labels=labels,
                              max_cost=max_cost, concurrency=concurrency, dry_run=dry_run,
                              notes=corpus_notes(corpus), cache=cache, retry=retry, progress=progress))


def corpus_find(corpus: Any, pattern: str, *, in_: str = "text", regex: bool = False, case: bool = False,
                note: str | None = None) -> Any:
    """See :meth:`pi_lab.corpus.Corpus.find`."""
    from pi_lab.formats import open_session
    from pi_lab.research.find import find_entries, findings_as_notes

    files = sorted(set(_files_by_session(corpus).values()))
    sessions = ((file, open_session(file)) for file in files if os.path.isfile(file))
    table = find_entries(sessions, pattern, in_=in_, regex=regex, case=case)
    if note is not None:
        corpus_notes(corpus).add_many(findings_as_notes(table, tag=note, pattern=pattern))
    return table
