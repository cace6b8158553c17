"""One self-contained HTML file: the viewer's script inlined, the session data embedded.

The page runs nothing but the inlined viewer script. Its Content-Security-Policy allows that
one script by its SHA-256 hash (no ``'unsafe-inline'`` for scripts), loads nothing from
anywhere (``default-src 'none'``), and allows inline styles (the viewer's stylesheet is a
``<style>`` element it creates) and ``data:`` images. Session data sits in non-executable
``<script type="application/octet-stream">`` blocks as gzip written 7 bits per character
(``pack7``; a notebook snapshot uses base85, ``pack``, which JSON keeps as it is), which the page inflates
with the browser's DecompressionStream; session text reaches the page only through
``textContent`` (the viewer core never parses it as HTML).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from pi_lab.errors import PiLabError
from pi_lab.export.data import export_data
from pi_lab.export.sharing import share_strings
from pi_lab.session.output import OutputRefused, check_output, replacing
from pi_lab.session.protocol import ReadableSession

__all__ = ["export_html", "render_html", "page_pieces", "export_notes", "viewer_script", "pack", "pack7", "unpack"]

_PAGE_CSS = (
    "html,body{margin:0;padding:0;height:100%;}"
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;background:#fff;color:#111;}"
    "#pi-export{height:100vh;}"
    "#pi-export>.pi-lab{height:100vh!important;}"
    "#pi-export-note{font:12px system-ui,sans-serif;color:#666;padding:2px 8px;}"
)


class ExportError(PiLabError):
    """The export cannot be written (no viewer script built, unknown leaf, an output file that
    is the session itself or looks like a session)."""


def viewer_script() -> str:
    """The bundled viewer (``pi_lab/static/export.js``, built by ``jlpm build:export``)."""
    try:
        text = resources.files("pi_lab").joinpath("static/export.js").read_text("utf-8")
    except (FileNotFoundError, OSError) as error:
        raise ExportError("pi_lab/static/export.js is missing: build the front end with `jlpm build`") from error
    # The script sits inside a <script> element: a "</script" in it would end the element early.
    return text.replace("</script", "<\\/script").replace("<!--", "<\\!--")


# Base85 over an alphabet without the characters that mean something to an HTML parser inside
# a <script> element (<, >, &, quotes, / and \\): 5 characters per 4 bytes instead of base64's
# 5.33. Decoded by src_frontend/export/data.ts `base85Bytes`.
_RFC1924 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
ALPHABET = bytes(c for c in range(33, 127) if chr(c) not in "\"&'<>/\\")[:85]
_TO_ALPHABET = bytes.maketrans(_RFC1924, ALPHABET)
_FROM_ALPHABET = bytes.maketrans(ALPHABET, _RFC1924)


def unpack(text: str) -> bytes:
    """The bytes of a part packed by :func:`pack` or :func:`pack7` (for tests and tools
    reading an export)."""
    if text.startswith(SEVEN_BIT_MARK):
        return gzip.decompress(_from_seven_bits(text[1:]))
    return gzip.decompress(base64.b85decode(text.encode("ascii").translate(_FROM_ALPHABET)))


# The page's own parts: 7 bits of data per character. Inside a <script> element an HTML parser
# changes only "<" (it may end the element), NUL and CR (newline normalisation); every other
# ASCII character arrives as written. Those three 7-bit values are written as U+0100..U+0102
# (two bytes in UTF-8), so the file stays valid UTF-8 at about 8/7 of the compressed size
# (base85: 5/4). A part starts with DEL (not a base85 character). Decoded by data.ts `sevenBits`.
SEVEN_BIT_MARK = "\x7f"
_SEVEN_ESCAPES = ((b"\x00", "\u0100"), (b"\r", "\u0101"), (b"<", "\u0102"))
# (shift right, mask of the low bits moved up) for group j of a 7-byte block: group j takes the
# low j bits of byte j-1 and the high 7-j bits of byte j.
_RIGHT = [bytes(b >> (j + 1) for b in range(256)) for j in range(7)]
_LOW = [bytes(((b & ((1 << j) - 1)) << (7 - j)) & 0x7F for b in range(256)) for j in range(8)]


def _or(a: bytes, b: bytes) -> bytes:
    """Bytewise OR of two equally long byte strings whose set bits never meet (no carries)."""
    return (int.from_bytes(a, "big") | int.from_bytes(b, "big")).to_bytes(len(a), "big")


def _to_seven_bits(data: bytes) -> str:
    """Every 7 bytes as 8 groups of 7 bits, most significant first; the tail padded with zero
    bits (the decoder keeps whole bytes only, so the padding never becomes data). Works on
    byte planes with C-level slicing and translation: no Python loop per byte."""
    n = len(data)
    blocks = -(-n // 7)
    padded = data + b"\0" * (blocks * 7 - n)
    planes = [padded[j::7] for j in range(7)]
    out = bytearray(blocks * 8)
    out[0::8] = planes[0].translate(_RIGHT[0])
    for j in range(1, 7):
        out[j::8] = _or(planes[j - 1].translate(_LOW[j]), planes[j].translate(_RIGHT[j]))
    out[7::8] = planes[6].translate(bytes(b & 0x7F for b in range(256)))
    groups = -(-n * 8 // 7)
    text = bytes(out[:groups]).decode("ascii")
    for raw, char in _SEVEN_ESCAPES:
        text = text.replace(raw.decode("ascii"), char)
    return text


# Byte j of a block: the low 7-j bits of group j moved up, and the high j+1 bits of group j+1.
_UP = [bytes(((g & ((1 << (7 - j)) - 1)) << (j + 1)) & 0xFF for g in range(256)) for j in range(7)]
_DOWN = [bytes((g & 0x7F) >> (6 - j) for g in range(256)) for j in range(7)]


def _from_seven_bits(text: str) -> bytes:
    for raw, char in _SEVEN_ESCAPES:
        text = text.replace(char, raw.decode("ascii"))
    groups = text.encode("ascii")
    count = len(groups) * 7 // 8
    blocks = -(-len(groups) // 8)
    groups += b"\0" * (blocks * 8 - len(groups))
    planes = [groups[j::8] for j in range(8)]
    out = bytearray(blocks * 7)
    for j in range(7):
        out[j::7] = _or(planes[j].translate(_UP[j]), planes[j + 1].translate(_DOWN[j]))
    return bytes(out[:count])


def pack7(data: bytes) -> str:
    """gzip, then 7 bits per character (see SEVEN_BIT_MARK): the page's parts."""
    return SEVEN_BIT_MARK + _to_seven_bits(gzip.compress(data, compresslevel=9, mtime=0))


def pack(data: bytes) -> str:
    """gzip, then base85 (see ALPHABET)."""
    return base64.b85encode(gzip.compress(data, compresslevel=9, mtime=0)).translate(_TO_ALPHABET).decode("ascii")


def export_notes(notes: Any, sm: ReadableSession) -> dict[str, Any] | None:
    """The notes an export embeds (the header's ``notes``): ``sm``'s notes in ``notes`` (a
    NoteStore or its path) as the viewers' notes payload, read-only (``writable`` false), with
    ``covered`` (the entries each tag covers: the page marks and filters rows with it) and the
    store's file name only; None for ``notes`` None or False (an export without notes)."""
    if notes is None or notes is False:
        return None
    from pi_lab.research.notes import NoteStoreError
    from pi_lab.view.notes import notes_payload, store_of

    store = store_of(notes)
    try:
        return notes_payload(store, sm, writable=False, store_label=os.path.basename(store.path), coverage=True)
    except (NoteStoreError, OSError) as error:
        raise ExportError(f"notes: {error}") from None


def render_html(sm: ReadableSession, *, title: str | None = None, notes: Any = None) -> str:
    """The export of ``sm`` at its current leaf, as a string (``notes``: see :func:`export_notes`)."""
    return "".join(page_pieces(sm, title=title, notes=notes))


def page_pieces(sm: ReadableSession, *, title: str | None = None, notes: Any = None) -> Iterator[str]:
    """The page of :func:`render_html` in pieces, which :func:`export_html` writes as they
    come: the page of a million entries (77 MB) is never joined, nor encoded whole, and the
    packed header is compressed (and let go) before the chunks are made."""
    main, chunks = export_data(sm, notes=export_notes(notes, sm))
    packed_main = pack7(main)
    del main
    # Each part is kept as UTF-8 until it is written: as text, a part with any of the escaped
    # characters (nearly all) takes two bytes a character (about 150 MB for a million entries).
    encoded: list[bytes] = []
    offsets = [0]
    for chunk in chunks:
        part = pack7(chunk)
        offsets.append(offsets[-1] + len(part))  # (the page reads them as character offsets)
        encoded.append(part.encode("utf-8"))
        del part
    script = viewer_script()
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = ("default-src 'none'; "
              f"script-src 'sha256-{digest}'; "
              "style-src 'unsafe-inline'; img-src data:; font-src 'none'; connect-src 'none'; "
              "base-uri 'none'; form-action 'none'; object-src 'none'; frame-src 'none'")
    if title is None:
        title = sm.get_session_name() or f"pi session {sm.session_id}"
    yield "".join([
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">\n',
        '<meta name="referrer" content="no-referrer">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{html.escape(title)}</title>\n",
        f"<style>{_PAGE_CSS}</style>\n</head>\n<body>\n",
        '<div id="pi-export"></div>\n',
        '<script type="application/octet-stream" id="pi-main">',
    ])
    yield packed_main
    del packed_main
    yield "".join([
        "</script>\n",
        '<script type="application/json" id="pi-chunk-offsets">',
        json.dumps(offsets, separators=(",", ":")),
        "</script>\n",
        # The script before the entry chunks: the first rows are drawn while those are parsed.
        f"<script>{script}</script>\n",
        '<script type="application/octet-stream" id="pi-chunks">',
    ])
    encoded.reverse()  # taken from the end: each part is let go once written
    while encoded:
        yield encoded.pop().decode("utf-8")
    yield "</script>\n</body>\n</html>\n"


def _open_any(session_file: str) -> Any:
    """The session at ``session_file`` read-only, whichever agent wrote it (pi's reader, and its
    error, for a file no agent's rules recognise)."""
    from pi_lab.formats.detect import UnknownSessionFormat, detect_format
    from pi_lab.session import SessionManager

    try:
        agent = detect_format(session_file)
    except UnknownSessionFormat:
        agent = "pi"
    if agent == "pi":
        sm = SessionManager.open(session_file, read_only=True, lazy=False)  # it embeds every body
        # Held to the last chunk and seen by nobody else: its repeated short strings become one
        # object each (equal values; about 0.18 KB an entry of a generated session).
        share_strings(sm.entries)
        return sm
    from pi_lab.formats import open_session

    return open_session(session_file)


def export_html(source: Any, path: str | os.PathLike[str], *, leaf_id: str | None = None,
                notes: Any = None) -> Path:
    """Write a self-contained, read-only HTML viewer of a session to ``path``.

    ``source`` is a session file path (opened read-only: the file is never written) or a
    ``SessionManager`` (its leaf is restored afterwards). ``leaf_id`` fixes the leaf shown.
    ``notes`` (a :class:`~pi_lab.research.notes.NoteStore` or its path; None or False: none)
    embeds the session's notes, shown read-only. Returns the path written.
    """
    from pi_lab.session.manager import EntryNotFound

    out = Path(path)
    if isinstance(source, (str, os.PathLike)):
        session_file: str | None = os.fspath(source)
        # Checked before anything is read or built (a refusal costs nothing), and again by
        # the writer just before the rename: a session may be put there while the page builds.
        with _refusals_as_export_errors():
            check_output(out, source=session_file)
        sm = _open_any(session_file)
        restore = None
    else:
        sm = source
        session_file = getattr(sm, "session_file", None)
        with _refusals_as_export_errors():
            check_output(out, source=session_file)
        # branch() pins the leaf; both are put back so the caller's manager is as it was.
        restore = (sm.leaf_id, getattr(sm, "_leaf_pinned", None))
    try:
        if leaf_id is not None:
            try:
                sm.branch(leaf_id)
            except EntryNotFound as error:
                raise ExportError(f"no entry {leaf_id!r} in the session") from error
        # A new file beside ``out``, written piece by piece, flushed, then renamed over it: a
        # killed export leaves the previous file whole (the target is checked again then).
        with _refusals_as_export_errors(), replacing(out, source=session_file) as handle:
            for piece in page_pieces(sm, notes=notes):
                handle.write(piece.encode("utf-8"))
    finally:
        if restore is not None and leaf_id is not None:
            if restore[0] is None:
                sm.reset_leaf()
            else:
                sm.branch(restore[0])
            if restore[1] is not None:
                sm._leaf_pinned = restore[1]
    return out


@contextmanager
def _refusals_as_export_errors() -> Iterator[None]:
    try:
        yield
    except OutputRefused as error:
        raise ExportError(str(error)) from None
