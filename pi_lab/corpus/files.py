"""Which files a corpus reads: every agent's sessions folders, the session files under the
paths given (Claude Code's sub-agent files left to their session), and each file's
fingerprint (size, mtime, inode), which decides whether its cached rows are still its rows."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "default_cache_dir", "default_session_paths", "list_session_files", "claude_code_session_paths",
    "codex_session_paths", "is_claude_subagent_file",
]


def default_session_paths() -> list[str]:
    """Every agent's sessions folder pi_lab reads: pi's (``$PI_CODING_AGENT_DIR/sessions`` or
    ``~/.pi/agent/sessions``, always listed, so a missing one is said in ``errors``), and those
    of Claude Code and Codex that exist (:func:`claude_code_session_paths`,
    :func:`codex_session_paths`)."""
    from pi_lab.session.paths import sessions_root

    out = [sessions_root()]
    for path in (*claude_code_session_paths(), *codex_session_paths()):
        if path not in out:
            out.append(path)
    return out


def claude_code_session_paths(env: dict[str, str] | None = None) -> list[str]:
    """Claude Code's ``projects`` folders as ccusage finds them: each folder of
    ``$CLAUDE_CONFIG_DIR`` (comma-separated), else ``~/.config/claude`` and ``~/.claude``."""
    from pi_lab.formats.claude_code_usage import claude_config_dirs

    return [str(d / "projects") for d in claude_config_dirs(env)]


def codex_session_paths(env: dict[str, str] | None = None) -> list[str]:
    """Codex's ``sessions`` and ``archived_sessions`` under ``$CODEX_HOME`` (``~/.codex``),
    those that exist."""
    environ: Mapping[str, str] = os.environ if env is None else env
    home = os.path.expanduser(environ.get("CODEX_HOME") or "~/.codex")
    return [p for p in (os.path.join(home, "sessions"), os.path.join(home, "archived_sessions")) if os.path.isdir(p)]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pi_lab" / "corpus"


def is_claude_subagent_file(path: str) -> bool:
    """A Claude Code sub-agent's file (``agent-*.jsonl`` holding Claude Code lines): not a
    session of its own, its parent session's adapter folds it in (its calls are the parent's)."""
    if not (os.path.basename(path).startswith("agent-") and path.endswith(".jsonl")):
        return False
    from pi_lab.formats.detect import UnknownSessionFormat, detect_format

    try:
        return detect_format(path) == "claude-code"
    except (UnknownSessionFormat, OSError):
        return False


def list_session_files(paths: Iterable[str | os.PathLike[str]], errors: list[tuple[str, str]]) -> list[str]:
    """Every ``*.jsonl`` under the folders (recursively, sorted) and every file named, except
    Claude Code sub-agent files (:func:`is_claude_subagent_file`)."""
    out: list[str] = []
    seen: set[str] = set()
    for raw in paths:
        path = os.path.abspath(os.path.expanduser(os.fspath(raw)))
        if os.path.isdir(path):
            found: list[str] = []
            for folder, dirs, files in os.walk(path, onerror=lambda e, top=path: errors.append((e.filename or top, e.strerror or str(e)))):
                dirs.sort()
                found.extend(os.path.join(folder, f) for f in files if f.endswith(".jsonl"))
            candidates = sorted(found)
        elif os.path.lexists(path):
            candidates = [path]
        else:
            errors.append((path, "no such file or directory"))
            continue
        for c in candidates:
            if c not in seen and not is_claude_subagent_file(c):
                seen.add(c)
                out.append(c)
    return out


def _listing(paths: Any) -> tuple[list[Any], list[tuple[str, str]], list[str], dict[str, tuple[int, int, int]]]:
    """(the scanned paths, listing errors, the session files found, their fingerprints)."""
    if paths is None:
        paths = default_session_paths()
    elif isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    errors: list[tuple[str, str]] = []
    files = list_session_files(paths, errors)
    stamps: dict[str, tuple[int, int, int]] = {}
    for f in files:
        try:
            stamps[f] = _fingerprint(f)
        except OSError as error:
            errors.append((f, error.strerror or str(error)))
    return paths, errors, [f for f in files if f in stamps], stamps


def _fingerprint(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    size, mtime = st.st_size, st.st_mtime_ns
    # A Claude Code session's sub-agent files are read with it: one that grows changes the
    # session's fingerprint, so its cached rows are read again.
    folder = os.path.join(os.path.dirname(path), os.path.basename(path)[:-6], "subagents") if path.endswith(".jsonl") else None
    if folder is not None and os.path.isdir(folder):
        for root, dirs, names in os.walk(folder):
            dirs.sort()
            for name in names:
                if name.startswith("agent-") and name.endswith(".jsonl"):
                    try:
                        sub = os.stat(os.path.join(root, name))
                    except OSError:
                        continue
                    size += sub.st_size
                    mtime = max(mtime, sub.st_mtime_ns)
    return (size, mtime, st.st_ino)
