""""Open in notebook": a notebook whose one cell opens the session in the widget.

For a file under the server root the notebook goes next to it and names the file relative to
itself (a kernel starts in its notebook's folder). A file in pi's sessions folder is usually
outside the root, where JupyterLab cannot open a notebook; its notebook goes to
``PiLabConfig.notebook_dir`` under the root and names the file by its absolute path.
"""

from __future__ import annotations

import posixpath
from typing import Any

import nbformat

from pi_lab.server.locations import Location

__all__ = ["python_string", "cell_source", "notebook_source", "READ_ONLY_NOTE", "notebook_plan", "make_notebook"]


def python_string(text: str) -> str:
    """A Python literal for ``text``: double-quoted when that is simple, else ``repr``."""
    if text.isprintable():
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(text)


def cell_source(session_path: str) -> str:
    return f"import pi_lab\n\npi_lab.open({python_string(session_path)})"


READ_ONLY_NOTE = (
    "# Read-only: this opens the session without ever writing its file (an older format is\n"
    "# migrated in memory only). To write into it (branch summaries, labels, compactions),\n"
    "# press \"Allow writing…\" in the viewer, or open it with pi_lab.open(..., writable=True).\n"
)


def notebook_source(session_path: str) -> str:
    """The generated cell: the mode it chose (read-only), the way to write, then the call."""
    return READ_ONLY_NOTE + cell_source(session_path)


def notebook_plan(location: Location, notebook_dir: str = "") -> tuple[str, str, str]:
    """``(folder, stem, session path as the cell names it)``; folder is relative to the root."""
    stem = location.name.removesuffix(".jsonl")
    if location.area == "root":
        folder = posixpath.dirname(location.relative)
        return folder, stem, location.name
    return notebook_dir.strip("/"), stem, location.real


def make_notebook(source: str) -> dict[str, Any]:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source)]
    return nb
