"""The session widget: pi's /tree, what the model sees and the context gauge in a notebook.

``payload`` (and the modules it uses) builds everything a viewer needs from a session and
imports nothing from Jupyter, so the JupyterLab server extension can serve the same data
over REST. ``SessionWidget`` (anywidget) is resolved lazily.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SessionWidget", "open_session"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pi_lab.widget import session_widget

        return getattr(session_widget, name)
    raise AttributeError(f"module 'pi_lab.widget' has no attribute {name!r}")
