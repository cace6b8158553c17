"""Cheap questions need no model: find entries whose text, tool arguments or tool results match.

:func:`find_entries` reads each session once (read-only) and returns one row per matching
entry, with where the match is and a snippet around it; :func:`findings_as_notes` turns the
rows into notes for the notes store, so they show in the viewer like any other finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import orjson

from pi_lab.session._text import content_text

__all__ = ["find_entries", "findings_as_notes", "FIND_IN", "FindError"]

from pi_lab.errors import PiLabError

FIND_IN = ("text", "tool_args", "tool_results")
_SNIPPET = 60  # characters of context on each side of a match


class FindError(PiLabError, ValueError):
    """A search that cannot run as given (an unknown field, a pattern that is no regex)."""


def _texts(entry: dict[str, Any], where: str) -> Iterable[str]:
    """The texts of ``entry`` a search ``where`` looks at."""
    if entry.get("type") != "message":
        if where == "text" and entry.get("type") in ("compaction", "branch_summary"):
            summary = entry.get("summary")
            if isinstance(summary, str):
                yield summary
        return
    message = entry.get("message")
    if not isinstance(message, dict):
        return
    role = message.get("role")
    content = message.get("content")
    if where == "tool_results":
        if role in ("toolResult", "bashExecution"):
            yield content_text(content) if role == "toolResult" else str(message.get("output") or "")
        return
    if where == "tool_args":
        if role == "assistant" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    arguments = block.get("arguments")
                    yield arguments if isinstance(arguments, str) else orjson.dumps(
                        arguments, option=orjson.OPT_NON_STR_KEYS).decode("utf-8", "replace")
        return
    if role in ("user", "assistant", "custom"):
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") in ("text", "thinking"):
                    value = block.get("text") if block.get("type") == "text" else block.get("thinking")
                    if isinstance(value, str):
                        yield value


def find_entries(sessions: Iterable[tuple[str, Any]], pattern: str, *, in_: str = "text",
                 regex: bool = False, case: bool = False) -> Any:
    """Entries of ``sessions`` (pairs of file and open session) whose ``in_`` texts match.

    ``pattern`` is plain text unless ``regex``; matching ignores case unless ``case``. Returns a
    ``pyarrow.Table``: file, session_id, entry_id, role, field, match, snippet."""
    import pyarrow as pa

    if in_ not in FIND_IN:
        raise FindError(f"in_ must be one of {', '.join(FIND_IN)}, not {in_!r}")
    try:
        compiled = re.compile(pattern if regex else re.escape(pattern), 0 if case else re.IGNORECASE)
    except re.error as error:
        raise FindError(f"the pattern is no regular expression: {error}") from None
    rows: list[dict[str, Any]] = []
    for file, session in sessions:
        for entry in session.get_entries():
            entry_id = entry.get("id")
            if not isinstance(entry_id, str):
                continue
            for text in _texts(entry, in_):
                found = compiled.search(text)
                if found is None:
                    continue
                start, end = found.span()
                snippet = text[max(0, start - _SNIPPET):end + _SNIPPET].replace("\n", " ")
                message = entry.get("message") if isinstance(entry.get("message"), dict) else {}
                rows.append({"file": file, "session_id": session.session_id, "entry_id": entry_id,
                             "role": message.get("role") if isinstance(message.get("role"), str) else entry.get("type"),
                             "field": in_, "match": found.group(0), "snippet": snippet})
                break
    schema = pa.schema([(name, pa.string()) for name in
                        ("file", "session_id", "entry_id", "role", "field", "match", "snippet")])
    return pa.Table.from_pylist(rows, schema=schema)


def findings_as_notes(table: Any, *, tag: str, pattern: str) -> list[dict[str, Any]]:
    """The rows of :func:`find_entries` as records for ``NoteStore.add_many``."""
    return [{"session_id": row["session_id"], "session_file": row["file"], "entry_id": row["entry_id"],
             "tag": tag, "text": f"matches {pattern!r} in {row['field']}: {row['snippet']}",
             "source": f"find: {pattern}", "question": None, "author": "pi-lab find"}
            for row in table.to_pylist()]
