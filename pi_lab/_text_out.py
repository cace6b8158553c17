"""Text written to a terminal by pi-lab's commands: one message, one line."""

from __future__ import annotations

__all__ = ["one_line"]


def one_line(text: str) -> str:
    """``text`` as one printable line: control characters become spaces, text that is not UTF-8
    (surrogate escapes of an odd file name) is shown escaped."""
    # Control characters of a file name or an argument would break the line (or the terminal);
    # a name that is not UTF-8 (surrogate escapes) is shown escaped, whatever stderr's encoding.
    text = "".join(" " if ch < " " or ch == "\x7f" else ch for ch in text)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
