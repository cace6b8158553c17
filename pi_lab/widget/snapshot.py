"""The snapshot a notebook saves beside the widget: the read-only viewer without a kernel.

A widget output alone shows "model not found" once the kernel is gone (JupyterLab's widget
renderer has no fallback inside its bundle) and nbconvert drops it (anywidget's ``_esm`` is
left out of the saved state). So ``SessionWidget`` displays, before the widget, one more
output whose bundle draws the session in every place a saved notebook is read:

* ``application/vnd.pi-lab.snapshot+json`` — drawn by pi_lab's JupyterLab extension
  (src_frontend/labextension/snapshotRenderer.ts), which is trusted code, so the notebook
  need not be: JupyterLab strips the scripts of an untrusted notebook's text/html. The
  renderer reads the data out of this bundle's text/html as inert text;
* ``text/html`` — the text picture in a ``<pre>`` (what a sanitiser keeps), the session data
  as the HTML export embeds it (pi_lab/export/: base85 of gzip in non-executable script
  elements) and the export's viewer script, which mounts the viewer in place of the picture
  in nbconvert's HTML and on a static site;
* ``text/plain`` — the text picture.

The data is capped at ``SNAPSHOT_LIMIT`` characters: the tree always, entry details and
"what the model sees" for the first chunks of entries that fit, and a note saying what was
left out and the ``pi-lab export`` command that writes the whole session. A session whose
tree alone exceeds the cap keeps the text picture and the note. Where the live viewer is
drawn in the same output area, a CSS rule hides the snapshot (and the snapshot's viewer is
only mounted once it has been visible for a moment, so it costs nothing beside a live one).

Building the data takes a second or two on a large session (0.3 s for 1,000 entries, 1.5 s for
10,000), and a cell that builds it keeps the kernel from answering the live viewer's first
requests. So where a person is at the frontend, ``SessionWidget`` first displays a *pending*
snapshot (``pending=True``: the text picture and a note, no export work) and completes it in
place once the viewer has drawn its first rows; an unattended run (nbclient, papermill,
``nbconvert --execute``), which keeps only what the cell itself sends, gets the whole snapshot
at once (session_widget.py ``_snapshot_can_wait``).
"""

from __future__ import annotations

import html
import json
import shlex
from collections.abc import Generator
from typing import Any

from pi_lab.widget.sendable import sendable

__all__ = ["SNAPSHOT_MIME", "SNAPSHOT_LIMIT", "SNAPSHOT_MAX_ENTRIES", "snapshot_bundle", "snapshot_steps"]

SNAPSHOT_MIME = "application/vnd.pi-lab.snapshot+json"
SNAPSHOT_LIMIT = 2_000_000
# The tree part of an export takes about 80 characters per entry on real sessions (ids,
# display and search texts, columns), so past this many entries it would fill the limit by
# itself: such a session gets the text picture and the note at once, instead of after seconds
# spent building a tree part that is then thrown away (about 10 s for 100k entries).
SNAPSHOT_MAX_ENTRIES = 25_000
# nbconvert's page styles show the text of script elements in an output: the data blocks stay hidden.
_NOTE_CSS = (".pi-lab-fallback>script{display:none!important}"
             ".pi-lab-snapshot-note{font:12px system-ui,sans-serif;color:#666;margin:2px 0 4px}"
             ".pi-lab-snapshot-text{max-height:420px;overflow:auto}")


def _export_command(sm: Any) -> str:
    source = sm.session_file or "SESSION.jsonl"
    stem = source[:-6] if source.endswith(".jsonl") else source
    return f"pi-lab export {shlex.quote(source)} -o {shlex.quote(stem + '.html')}"


def snapshot_bundle(sm: Any, *, text: str, css: str, settings: Any = None, limit: int = SNAPSHOT_LIMIT,
                    max_entries: int = SNAPSHOT_MAX_ENTRIES, pending: bool = False,
                    notes: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(data, metadata)`` of the snapshot output of ``sm`` at its current leaf.

    ``text`` is the text picture (``SessionWidget.fallback_text``), ``css`` the output-area
    rule that hides the snapshot beside a live viewer (``session_widget.FALLBACK_CSS``).
    ``pending``: the text picture and a note that the viewer follows, without building any
    export data (the output is completed in place by a later update of its display id).
    ``notes``: the notes payload it shows read-only (``pi_lab.export.html.export_notes``)."""
    steps = snapshot_steps(sm, text=text, css=css, settings=settings, limit=limit, max_entries=max_entries,
                           pending=pending, notes=notes)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def snapshot_steps(sm: Any, *, text: str, css: str, settings: Any = None, limit: int = SNAPSHOT_LIMIT,
                   max_entries: int = SNAPSHOT_MAX_ENTRIES, pending: bool = False,
                   notes: dict[str, Any] | None = None) -> Generator[None, None, tuple[dict[str, Any], dict[str, Any]]]:
    """:func:`snapshot_bundle` in steps: it yields between the tree part and each chunk (at
    most ~0.5 s of work each on 10k entries) and returns the bundle, so a kernel completing a
    pending snapshot can answer the viewer between steps. The session must not change while
    it runs (the chunks are read from it lazily): a caller that sees it change starts again."""
    from pi_lab.export.data import SNAPSHOT_CHUNK, export_parts
    from pi_lab.export.html import ExportError, pack, viewer_script

    entries = sm.get_entry_count()
    info: dict[str, Any] = {"version": 1, "entries": entries, "leaf_id": sm.leaf_id, "limit": limit}
    parts: list[str] = []
    try:
        script = viewer_script()
    except ExportError:
        script = None
    # Without a viewer, or over the entry cap, the whole snapshot is the text picture: no wait.
    pending = pending and script is not None and entries <= max_entries
    if pending:
        info["pending"] = True
    main_text = ""
    packed: list[str] = []
    complete = False
    if script is not None and entries <= max_entries and not pending:
        main, chunks = export_parts(sm, settings=settings, chunk=SNAPSHOT_CHUNK, notes=notes)
        yield
        main_text = pack(main)
        used = len(main_text)
        if used <= limit:
            complete = True
            for chunk in chunks:
                yield
                piece = pack(chunk)
                if used + len(piece) > limit:
                    complete = False
                    break
                packed.append(piece)
                used += len(piece)
        else:
            main_text = ""
    embedded = min(entries, len(packed) * SNAPSHOT_CHUNK) if main_text else 0
    info.update(embedded_chunks=len(packed), complete=complete and bool(main_text))
    name = sm.session_file or "this in-memory session"
    command = _export_command(sm)
    if script is None:
        note = "pi_lab snapshot (text only: the viewer script is not built)."
    elif pending:
        note = (f"pi_lab snapshot of {name}: the text picture for now. The read-only viewer is added to this "
                "output once the live viewer has drawn its first rows (a few seconds); a notebook saved before "
                f"then keeps only this picture. For the whole session: {command}")
    elif not main_text:
        note = (f"pi_lab snapshot of {name}: the session is too large for a snapshot saved with the notebook "
                f"(limit {limit:,} characters, {max_entries:,} entries), so only this text picture is kept. "
                f"For the whole session: {command}")
    elif complete:
        note = (f"pi_lab snapshot of {name}, saved with the notebook: read-only, as it was displayed. "
                "Run the cell for the live viewer.")
    else:
        note = (f"pi_lab snapshot of {name}, saved with the notebook: the whole tree, with entry details "
                f"and what the model sees for the first {embedded:,} of {entries:,} entries in tree order "
                f"(size limit {limit:,} characters). For the whole session: {command}")
    info["note"] = note
    parts.append('<div class="pi-lab-fallback" data-pi-lab-snapshot="1">')
    parts.append(f"<style>{css}{_NOTE_CSS}</style>")
    parts.append(f'<div class="pi-lab-snapshot-note">{html.escape(note)}</div>')
    parts.append(f'<pre class="pi-lab-snapshot-text">{html.escape(text)}</pre>')
    parts.append('<div class="pi-lab-snapshot-host"></div>')
    if main_text and script is not None:
        offsets = [0]
        for piece in packed:
            offsets.append(offsets[-1] + len(piece))
        parts.append(f'<script type="application/octet-stream" class="pi-main" hidden>{main_text}</script>')
        parts.append(f'<script type="application/json" class="pi-chunk-offsets" hidden>{json.dumps(offsets, separators=(",", ":"))}</script>')
        parts.append(f'<script type="application/octet-stream" class="pi-chunks" hidden>{"".join(packed)}</script>')
        # Last: when it runs, everything it reads is already parsed.
        parts.append(f"<script>{script}</script>")
    parts.append("</div>")
    # The text picture and the note carry session text and the file name: sendable as UTF-8.
    data = sendable({"text/plain": text, "text/html": "".join(parts), SNAPSHOT_MIME: info})
    return data, {"pi_lab": {"fallback": True, "snapshot": True}}
