"""The session widget: pi's /tree, what the model sees and the context gauge in a notebook.

``SessionWidget`` (anywidget) is traitlets, message dispatch and delegation: everything a viewer
needs from a session is built by :mod:`pi_lab.view` (no Jupyter imports), which the JupyterLab
server extension serves over REST too. The old module names (``pi_lab.widget.payload``, ``rows``,
``gauge``…) are aliases of the ``pi_lab.view`` modules. ``SessionWidget`` is resolved lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names __getattr__ resolves, for the type checker (importing them costs anywidget)
    from pi_lab.widget.session_widget import SessionWidget, open_session

__all__ = ["SessionWidget", "open_session"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pi_lab.widget import session_widget

        return getattr(session_widget, name)
    raise AttributeError(f"module 'pi_lab.widget' has no attribute {name!r}")
