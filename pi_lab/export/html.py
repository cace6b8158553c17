"""One self-contained HTML file: the viewer's script inlined, the session data embedded.

The page runs nothing but the inlined viewer script. Its Content-Security-Policy allows that
one script by its SHA-256 hash (no ``'unsafe-inline'`` for scripts), loads nothing from
anywhere (``default-src 'none'``), and allows inline styles (the viewer's stylesheet is a
``<style>`` element it creates) and ``data:`` images. Session data sits in non-executable
``<script type="application/octet-stream">`` blocks as base85 of gzip, which the page inflates
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
from importlib import resources
from pathlib import Path
from typing import Any

from pi_lab.export.data import export_data

__all__ = ["export_html", "render_html", "viewer_script", "pack", "unpack"]

_PAGE_CSS = (
    "html,body{margin:0;padding:0;height:100%;}"
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;background:#fff;color:#111;}"
    "#pi-export{height:100vh;}"
    "#pi-export>.pi-lab{height:100vh!important;}"
    "#pi-export-note{font:12px system-ui,sans-serif;color:#666;padding:2px 8px;}"
)


class ExportError(Exception):
    """The export cannot be written (no viewer script built, unknown leaf)."""


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
    """The bytes of a part packed by :func:`pack` (for tests and tools reading an export)."""
    return gzip.decompress(base64.b85decode(text.encode("ascii").translate(_FROM_ALPHABET)))


def pack(data: bytes) -> str:
    """gzip, then base85 (see ALPHABET)."""
    return base64.b85encode(gzip.compress(data, compresslevel=9, mtime=0)).translate(_TO_ALPHABET).decode("ascii")


def render_html(sm: Any, *, title: str | None = None) -> str:
    """The export of ``sm`` at its current leaf, as a string."""
    main, chunks = export_data(sm)
    encoded = [pack(chunk) for chunk in chunks]
    offsets = [0]
    for part in encoded:
        offsets.append(offsets[-1] + len(part))
    script = viewer_script()
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = ("default-src 'none'; "
              f"script-src 'sha256-{digest}'; "
              "style-src 'unsafe-inline'; img-src data:; font-src 'none'; connect-src 'none'; "
              "base-uri 'none'; form-action 'none'; object-src 'none'; frame-src 'none'")
    if title is None:
        title = sm.session_name or f"pi session {sm.session_id}"
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">\n',
        '<meta name="referrer" content="no-referrer">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{html.escape(title)}</title>\n",
        f"<style>{_PAGE_CSS}</style>\n</head>\n<body>\n",
        '<div id="pi-export"></div>\n',
        f'<script type="application/octet-stream" id="pi-main">{pack(main)}</script>\n',
        '<script type="application/json" id="pi-chunk-offsets">',
        json.dumps(offsets, separators=(",", ":")),
        "</script>\n",
        # The script before the entry chunks: the first rows are drawn while those are parsed.
        f"<script>{script}</script>\n",
        f'<script type="application/octet-stream" id="pi-chunks">{"".join(encoded)}</script>\n',
        "</body>\n</html>\n",
    ])


def export_html(source: Any, path: str | os.PathLike[str], *, leaf_id: str | None = None) -> Path:
    """Write a self-contained, read-only HTML viewer of a session to ``path``.

    ``source`` is a session file path (opened read-only: the file is never written) or a
    ``SessionManager`` (its leaf is restored afterwards). ``leaf_id`` fixes the leaf shown.
    Returns the path written.
    """
    from pi_lab.session import SessionManager
    from pi_lab.session.manager import EntryNotFound

    if isinstance(source, (str, os.PathLike)):
        sm = SessionManager.open(os.fspath(source), read_only=True)
        restore = None
    else:
        sm = source
        # branch() pins the leaf; both are put back so the caller's manager is as it was.
        restore = (sm.leaf_id, getattr(sm, "_leaf_pinned", None))
    try:
        if leaf_id is not None:
            try:
                sm.branch(leaf_id)
            except EntryNotFound as error:
                raise ExportError(f"no entry {leaf_id!r} in the session") from error
        text = render_html(sm)
    finally:
        if restore is not None and leaf_id is not None:
            if restore[0] is None:
                sm.reset_leaf()
            else:
                sm.branch(restore[0])
            if restore[1] is not None:
                sm._leaf_pinned = restore[1]
    out = Path(path)
    out.write_text(text, encoding="utf-8")
    return out
