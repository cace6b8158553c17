"""The JupyterLab session viewer's server side: a jupyter_server extension.

It answers the viewer's requests with the notebook widget's own payloads
(``pi_lab.view.payload``): one engine, two transports. Sessions are read, never written;
paths are confined to the server root and pi's sessions folder (``PiLabConfig.sessions_dir``).
Enabled by ``jupyter-config/jupyter_server_config.d/pi_lab.json`` (installed with the package),
or by hand with ``jupyter server extension enable pi_lab.server``.
"""

from __future__ import annotations

from typing import Any

from pi_lab.server.config import PiLabConfig

__all__ = ["PiLabConfig"]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "pi_lab.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from pi_lab.server.handlers import PiLabState, make_handlers
    from pi_lab.server.listing import SessionListing
    from pi_lab.server.store import SessionStore

    config = PiLabConfig(parent=serverapp)
    store = SessionStore(cache_bytes=config.cache_bytes, max_sessions=config.max_cached_sessions,
                         max_views=config.max_views, max_file_bytes=config.max_file_bytes)
    from pi_lab.server.workers import DaemonExecutor

    # Daemon threads: a request stuck on a huge file must not keep the server from exiting.
    executor = DaemonExecutor(max(1, config.workers), thread_name_prefix="pi-lab")
    web_app = serverapp.web_app
    from pi_lab.research.notes import NoteStore

    notes = NoteStore(config.notes_path(serverapp.root_dir))
    web_app.settings["pi_lab"] = PiLabState(config, store, SessionListing(), executor, notes,
                                            config.notes_label(notes.path, serverapp.root_dir))
    web_app.add_handlers(".*$", make_handlers(web_app.settings["base_url"]))
    serverapp.log.info("pi_lab: session viewer API at %spi-lab/api/ (sessions folder %s, notes %s)",
                       web_app.settings["base_url"], config.sessions_dir, notes.path)


def _unload_jupyter_server_extension(serverapp: Any) -> None:
    """Server shutdown: cancel queued requests, do not wait for running ones."""
    state = serverapp.web_app.settings.get("pi_lab")
    if state is not None:
        state.executor.shutdown(wait=False, cancel_futures=True)


# jupyter_server < 2 looked for this name.
load_jupyter_server_extension = _load_jupyter_server_extension
