"""Settings of the session viewer server (``c.PiLabConfig.<name>`` in a Jupyter config file,
or ``--PiLabConfig.<name>=...`` on the command line)."""

from __future__ import annotations

import os

from traitlets import Int, List, Unicode, default, validate
from traitlets.config import Configurable

__all__ = ["PiLabConfig"]


class PiLabConfig(Configurable):
    """Where pi's sessions are, and how much the server keeps in memory."""

    sessions_dir = Unicode(
        help="pi's sessions folder, listed in the Pi Sessions panel and readable by the viewer "
        "besides the server root. Default: $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions.",
    ).tag(config=True)

    extra_session_dirs = List(
        Unicode(),
        help="More folders listed in the Sessions panel and readable by the viewer: each may hold pi, "
        "Claude Code or Codex sessions (recognised by their content), in sub-folders too. Claude Code's "
        "($CLAUDE_CONFIG_DIR, else ~/.config/claude and ~/.claude) and Codex's ($CODEX_HOME, else "
        "~/.codex) folders are listed without being named here.",
    ).tag(config=True)

    notebook_dir = Unicode(
        "",
        help="Folder, relative to the server root, for the notebooks that 'Open in notebook' makes "
        "for sessions outside the server root (a notebook for a file inside the root goes next to it).",
    ).tag(config=True)

    cache_bytes = Int(
        512 * 1024 * 1024,
        help="Parsed sessions are kept while the sizes of their files add up to at most this many "
        "bytes (the session being read is always kept). A parsed session takes about three times "
        "its file size in memory.",
    ).tag(config=True)

    max_cached_sessions = Int(16, help="At most this many parsed sessions are kept.").tag(config=True)

    max_views = Int(
        6, help="Row layouts (filter, search, folds) kept per session; the oldest is dropped first."
    ).tag(config=True)

    max_file_bytes = Int(
        2 * 1024 * 1024 * 1024, help="Larger files are refused with a clear message instead of being read."
    ).tag(config=True)

    notes_file = Unicode(
        "",
        help="The notes store every viewer on this server reads and adds to (a researcher's notes on "
        "entries, kept beside the sessions and never in them; JSON Lines, see docs/notes-format.md). "
        "A relative path is taken from the server root. Default: pi-lab-notes.jsonl in the server root. "
        "A symbolic link or anything but a regular file there is refused, never followed.",
    ).tag(config=True)

    workers = Int(4, help="Threads that parse and lay out sessions, so the server keeps answering.").tag(config=True)

    @default("sessions_dir")
    def _default_sessions_dir(self) -> str:
        from pi_lab.session.paths import sessions_root

        return sessions_root()

    def session_folders(self) -> list[tuple[str, str, str | None]]:
        """``(location prefix, folder, agent)`` of every folder the panel lists and the viewer reads
        besides the server root; agent ``None``: each file says which agent wrote it."""
        from pi_lab.formats.claude_code_usage import claude_config_dirs
        from pi_lab.formats.codex_usage import codex_sessions_dirs

        folders: list[tuple[str, str, str | None]] = [("@sessions/", self.sessions_dir, "pi")] if self.sessions_dir else []
        folders += [(f"@claude/{n}/", str(d / "projects"), "claude-code") for n, d in enumerate(claude_config_dirs())]
        codex = []
        for d in codex_sessions_dirs():
            codex.append(d)
            if (d.parent / "archived_sessions").is_dir():
                codex.append(d.parent / "archived_sessions")
        folders += [(f"@codex/{n}/", str(d), "codex") for n, d in enumerate(codex)]
        folders += [(f"@dir/{n}/", os.path.abspath(os.path.expanduser(d)), None)
                    for n, d in enumerate(self.extra_session_dirs) if d]
        return folders

    def notes_path(self, root_dir: str) -> str:
        """The notes store's file: ``notes_file`` from ``root_dir``, or the default there."""
        from pi_lab.research.notes import DEFAULT_NOTES_FILE

        chosen = os.path.expanduser(self.notes_file or DEFAULT_NOTES_FILE)
        return os.path.abspath(os.path.join(os.path.expanduser(root_dir), chosen))

    @staticmethod
    def notes_label(path: str, root_dir: str) -> str:
        """The notes file as a viewer shows it: from the server root when it lies inside."""
        inside = os.path.relpath(path, os.path.abspath(os.path.expanduser(root_dir)))
        return path if inside == os.pardir or inside.startswith(os.pardir + os.sep) else inside

    @validate("sessions_dir")
    def _expand(self, proposal: dict) -> str:
        value = proposal["value"]
        return os.path.abspath(os.path.expanduser(value)) if value else value
