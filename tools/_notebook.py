"""The few lines every example-notebook generator needs: cells in order, fixed ids, one write.

    nb = Notebook("corpus")
    nb.md("# Title"); nb.code("x = 1", tags=["parameters"])
    nb.write("examples/corpus.ipynb")

Cell ids are ``<prefix>-NN`` so that regenerating a notebook changes only what was edited.
"""
from __future__ import annotations

import nbformat as nbf


class Notebook:
    def __init__(self, id_prefix: str):
        self.id_prefix = id_prefix
        self.cells: list = []

    def md(self, text: str) -> None:
        self.cells.append(nbf.v4.new_markdown_cell(text))

    def code(self, text: str, tags: list[str] | None = None) -> None:
        cell = nbf.v4.new_code_cell(text)
        if tags:
            cell.metadata["tags"] = tags
        self.cells.append(cell)

    def write(self, path: str) -> None:
        for number, cell in enumerate(self.cells):
            cell["id"] = f"{self.id_prefix}-{number:02d}"
        nb = nbf.v4.new_notebook()
        nb["cells"] = self.cells
        nb["metadata"] = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                          "language_info": {"name": "python"}}
        nbf.write(nb, path)
        print(f"wrote {path}")
