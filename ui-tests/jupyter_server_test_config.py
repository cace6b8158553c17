"""The JupyterLab server of the UI tests (``jlpm start``), galata's test setup plus what this
machine needs: a port from ``PI_LAB_UI_PORT`` (galata hard-codes 8888), loopback only (galata
turns off the token and XSRF checks), root allowed (CI runs as root), no news or update checks,
and pi's sessions folder under ``PI_CODING_AGENT_DIR`` (set by playwright.config.js), never ~/.pi.
"""

import os

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821 (``c`` is the config object jupyter passes in)

c.ServerApp.ip = "127.0.0.1"  # noqa: F821
c.ServerApp.port = int(os.environ.get("PI_LAB_UI_PORT", "18888"))  # noqa: F821
c.ServerApp.allow_root = True  # noqa: F821
c.LabApp.news_url = None  # noqa: F821
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"  # noqa: F821
agent = os.environ.get("PI_CODING_AGENT_DIR")
if agent:
    c.PiLabConfig.sessions_dir = os.path.join(agent, "sessions")  # noqa: F821
