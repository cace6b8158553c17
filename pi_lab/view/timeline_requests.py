"""Read requests of the context-over-time views (timeline strip, composition bar).

Each entry maps a request name to ``handler(view, args) -> JSON-ready dict``; ``payload.READ_OPS``
merges them, so the notebook widget, the JupyterLab server and the static export answer them alike.
"""

from __future__ import annotations

from typing import Any, Callable

OPS: dict[str, Callable[[Any, Any], Any]] = {}
