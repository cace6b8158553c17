"""Transport-free views of a session: plain rows and dicts a cell, a test or a front end can use.

Context over time and between nodes (issue 13):

* :func:`context_timeline` — one row per model call along a branch (measured vs estimated
  context, window, compaction in effect) plus compaction, branch-summary and overflow markers;
* :func:`context_composition` — what the context at a node is made of, in tokens per part;
* :func:`context_diff` / :func:`context_search` — what two nodes' contexts share, what only one
  holds, what a compaction summary stands for, and a text search answering per side;
* :func:`compare_branches` — two leaves side by side from their common ancestor.

Every function takes node ids as entry ids: "what the model sees at X" is the projection with
the leaf put on X. Unknown ids raise :class:`UnknownEntry` (a :class:`pi_lab.errors.PiLabError`).
This package imports the engine (session, compaction, llm); never the widget, server or agent.
"""

from pi_lab.view.branches import compare_branches
from pi_lab.view.composition import context_composition
from pi_lab.view.diff import context_diff, context_search
from pi_lab.view.errors import UnknownEntry, ViewError
from pi_lab.view.timeline import context_timeline

__all__ = [
    "ViewError",
    "UnknownEntry",
    "context_timeline",
    "context_composition",
    "context_diff",
    "context_search",
    "compare_branches",
]
