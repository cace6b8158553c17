"""Where session files live, how they are named, and how they are listed (session-format.md §1, §10)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pi_lab.errors import NotARegularFile
from pi_lab.session.storage import check_regular_file, decode_and_parse, read_session_header
from pi_lab.session.summary import SessionInfo, SummaryBuilder

__all__ = [
    "SessionInfo",
    "agent_dir",
    "sessions_root",
    "default_session_dir",
    "session_dir_name",
    "session_file_name",
    "resolve_path",
    "find_most_recent_session",
    "list_sessions",
    "list_all_sessions",
    "session_info",
]


def resolve_path(path: str) -> str:
    """Absolute, normalised, with a leading ``~`` expanded (Node's ``path.resolve``)."""
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def agent_dir() -> str:
    configured = os.environ.get("PI_CODING_AGENT_DIR")
    if configured:
        return resolve_path(configured)
    return resolve_path("~/.pi/agent")


def sessions_root() -> str:
    return os.path.join(agent_dir(), "sessions")


def session_dir_name(cwd: str) -> str:
    """``/home/ann/proj`` → ``--home-ann-proj--``."""
    resolved = resolve_path(cwd)
    if resolved[:1] in ("/", "\\"):
        resolved = resolved[1:]
    for ch in "/\\:":
        resolved = resolved.replace(ch, "-")
    return f"--{resolved}--"


def default_session_dir(cwd: str) -> str:
    directory = os.path.join(sessions_root(), session_dir_name(cwd))
    os.makedirs(directory, exist_ok=True)
    return directory


def session_file_name(timestamp: str, session_id: str) -> str:
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


def _same_path(a: str, b: str) -> bool:
    return resolve_path(a) == resolve_path(b)


def find_most_recent_session(directory: str, cwd: str | None = None) -> str | None:
    """The newest ``*.jsonl`` (by mtime) with a valid header, optionally of one cwd."""
    try:
        names = [n for n in os.listdir(directory) if n.endswith(".jsonl")]
        candidates = []
        for name in names:
            full = os.path.join(directory, name)
            st = os.stat(full)
            if stat.S_ISREG(st.st_mode):  # never a FIFO or a folder named like a session
                candidates.append((st.st_mtime, full))
    except OSError:
        return None
    candidates.sort(key=lambda item: item[0], reverse=True)
    for _, full in candidates:
        header = read_session_header(full)
        if header is None:
            continue
        if cwd is not None:
            header_cwd = header.get("cwd")
            if not isinstance(header_cwd, str) or not header_cwd or not _same_path(header_cwd, cwd):
                continue
        return full
    return None


def session_info(path: str) -> SessionInfo | None:
    """Summarise one file by streaming it line by line; ``None`` if it is not a session
    (a FIFO or device named ``*.jsonl`` is never opened: reading it could block forever)."""
    try:
        check_regular_file(path)
        summary = SummaryBuilder()
        with open(path, "rb") as handle:
            for raw in handle:
                if not raw.strip():
                    continue
                entry = decode_and_parse(raw.rstrip(b"\n"))
                if entry is None:
                    continue
                summary.add(entry)
                if summary.not_session:
                    return None
        return summary.info(path)
    except (OSError, ValueError, OverflowError, NotARegularFile):
        return None


def list_sessions(directory: str, cwd: str | None = None) -> list[SessionInfo]:
    infos: list[SessionInfo] = []
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".jsonl"))
    except OSError:
        return []
    for name in names:
        info = session_info(os.path.join(directory, name))
        if info is None:
            continue
        if cwd is not None and (not info.cwd or not _same_path(info.cwd, cwd)):
            continue
        infos.append(info)
    infos.sort(key=lambda info: info.modified, reverse=True)
    return infos


def list_all_sessions(directory: str | None = None) -> list[SessionInfo]:
    if directory is not None:
        return list_sessions(directory)
    root = Path(sessions_root())
    infos: list[SessionInfo] = []
    try:
        subdirs = [p for p in root.iterdir() if p.is_dir()]
    except OSError:
        return []
    for sub in subdirs:
        infos.extend(list_sessions(str(sub)))
    infos.sort(key=lambda info: info.modified, reverse=True)
    return infos
