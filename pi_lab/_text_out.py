"""Text written out of Python: a terminal line for pi-lab's messages, valid UTF-8 for Arrow and
the widget. One rule for a lone surrogate everywhere: its escape (``\\ud800``)."""

from __future__ import annotations

__all__ = ["one_line", "utf8_safe"]


def one_line(text: str) -> str:
    """``text`` as one printable line: control characters become spaces, text that is not UTF-8
    (surrogate escapes of an odd file name) is shown escaped."""
    # Control characters of a file name or an argument would break the line (or the terminal);
    # a name that is not UTF-8 (surrogate escapes) is shown escaped, whatever stderr's encoding.
    text = "".join(" " if ch < " " or ch == "\x7f" else ch for ch in text)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def utf8_safe(text: str) -> str:
    """``text`` as valid UTF-8: each lone surrogate written as its escape (``\\ud800``).

    A hand edit's ``"\\ud800"`` in a JSON string, or a file name that is not UTF-8 (Python
    decodes its bytes to surrogates ``\\udc80``-``\\udcff``), cannot be stored in an Arrow
    string. The escape keeps distinct values distinct (U+FFFD would merge every lone
    surrogate, and any real U+FFFD, into one id: joins on ``session_id``/``entry_id`` would
    pair rows of different entries); it is the form pi's ``JSON.stringify`` writes in the file,
    so the cell reads as the file does; and as one pure function of the value it gives the same
    key in every table. Text without a surrogate is returned as it is.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
