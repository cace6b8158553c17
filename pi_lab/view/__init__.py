"""Transport-free views of a session: plain rows and dicts a cell, a test or a front end can use.

The viewer's model, the Python twin of ``src_frontend/core/`` (one module per job, same names),
shared by the notebook widget (``pi_lab.widget``, traitlets and comm messages) and the
JupyterLab server (``pi_lab.server``, REST):

* ``rows`` — the /tree rows of a view (filter, search, folds) and their deltas;
  ``columns`` — their binary column encoding; ``kinds`` — row kinds and flag bits;
* ``contract`` — every constant the front end shares (``src_frontend/core/contract.ts`` is
  generated from it); ``requests`` — the request error, argument parsing, the read registry;
* ``payload`` — :class:`SessionView` and the answers to every read request;
* ``gauge`` — the context gauge; ``detail`` — the entry pane; ``context`` — what the model
  sees at an entry; ``preview`` — the compaction preview;
* ``actions`` — what a click does to the session, through an agent object passed in
  (navigate, compact, cancel, label, fork, clone) and the one list of write actions.

Context over time and between nodes (issue 13):

* :func:`context_timeline` — one row per model call along a branch (measured vs estimated
  context, window, compaction in effect) plus compaction, branch-summary and overflow markers;
* :func:`context_composition` — what the context at a node is made of, in tokens per part;
* :func:`context_diff` / :func:`context_search` — what two nodes' contexts share, what only one
  holds, what a compaction summary stands for, and a text search answering per side;
* :func:`compare_branches` — two leaves side by side from their common ancestor.

Every function takes node ids as entry ids: "what the model sees at X" is the projection with
the leaf put on X. Unknown ids raise :class:`UnknownEntry` (a :class:`pi_lab.errors.PiLabError`).
This package imports the engine (session, compaction, llm); never the widget, server or agent
(an action gets the agent as an argument).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_lab.view.branches import compare_branches
    from pi_lab.view.composition import context_composition
    from pi_lab.view.diff import context_diff, context_search
    from pi_lab.view.errors import UnknownEntry, ViewError
    from pi_lab.view.timeline import context_timeline

# The package's names are loaded when first asked for: the engine imports the shared constants of
# ``pi_lab.view.contract``, and loading the views here then would import the engine half-built.
_LAZY = {
    "compare_branches": "pi_lab.view.branches",
    "context_composition": "pi_lab.view.composition",
    "context_diff": "pi_lab.view.diff",
    "context_search": "pi_lab.view.diff",
    "UnknownEntry": "pi_lab.view.errors",
    "ViewError": "pi_lab.view.errors",
    "context_timeline": "pi_lab.view.timeline",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_lab.view' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value

__all__ = [
    "ViewError",
    "UnknownEntry",
    "context_timeline",
    "context_composition",
    "context_diff",
    "context_search",
    "compare_branches",
]
