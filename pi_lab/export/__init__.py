"""Self-contained HTML export of a session: ``export_html(source, path, leaf_id=None)``.

The page is the viewer core (src_frontend/core) over a static transport
(src_frontend/export/staticTransport.ts), with the session embedded compressed; it needs no
kernel and no network. See ``html.py`` for the page and ``data.py`` for what it embeds. The
file is written by ``pi_lab.session.output`` (beside its name, then renamed), which never
replaces a session, a symbolic link or anything but a regular file.
"""

from pi_lab.export.html import ExportError, export_html, render_html

__all__ = ["export_html", "render_html", "ExportError"]
