"""Another agent's session file (Claude Code, Codex) read by its adapter into pi-shaped
entries, for the corpus extractor (:mod:`pi_lab.corpus.extract`) and the usage reader."""

from __future__ import annotations

from typing import Any

__all__ = ["read_other", "read_other_session"]

from pi_lab.session.entries import Entry  # noqa: E402  (one alias for every module)


def read_other(path: str, agent: str) -> tuple[Entry, list[Entry], dict[str, str | None], str | None]:
    """A Claude Code or Codex file's (header, pi-shaped entries, copied entry id -> the session
    it was copied from, the parent file a Codex fork names)."""
    sm, header, entries, copied_of = read_other_session(path, agent)
    return header, entries, copied_of, sm.parent_file if agent == "codex" else None


def read_other_session(path: str, agent: str) -> tuple[Any, Entry, list[Entry], dict[str, str | None]]:
    """The adapters do what the format needs once for every reader: a streamed response's lines
    merged into one assistant message (one call), a Claude Code session's sub-agent files folded
    into it, a Codex fork's copied prefix marked ``codex.copied`` (re-stamped, so pi's
    (id, timestamp) rule cannot see them). Those marks are a property of the file and its parent
    rollout, so they are set here, not by the corpus step for pi forks."""
    if agent == "claude-code":
        from pi_lab.formats.claude_code import ClaudeCodeSession

        sm: Any = ClaudeCodeSession.from_file(path)
    else:
        from pi_lab.formats.codex import CodexSession

        sm = CodexSession.from_file(path)
    header = dict(sm.get_header() or {})
    entries = list(sm.get_entries())
    copied_of: dict[str, str | None] = {}
    if agent == "codex":
        parent = sm.parent_session_id
        for entry in entries:
            meta = entry.get("codex")
            if isinstance(meta, dict) and meta.get("copied") is True and isinstance(entry.get("id"), str):
                source = meta.get("copiedFrom")
                copied_of[entry["id"]] = source if isinstance(source, str) else parent
    return sm, header, entries, copied_of
