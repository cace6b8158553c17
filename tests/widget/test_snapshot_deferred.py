"""The saved-notebook snapshot does not hold back the live viewer's first rows (issue 14).

In a cell run from a frontend a person reads (it allows stdin), the display builds no export
data: the snapshot is the text picture until the kernel has been quiet, then it is completed in
place (same display id) with exactly the bundle a synchronous build gives. A cell run
unattended (nbclient sets allow_stdin False, and keeps only what the cell sends) gets the whole
snapshot in the cell, as before. Both in a real kernel (jupyter_client)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "export"))
from export_inputs import generated_session, write_session  # noqa: E402

from pi_lab.widget import SessionWidget  # noqa: E402
from pi_lab.widget.snapshot import SNAPSHOT_MIME  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
needs_script = pytest.mark.skipif(not (REPO / "pi_lab" / "static" / "export.js").exists(),
                                  reason="pi_lab/static/export.js is not built (jlpm build)")

# Counts the export builds (each one computes every entry's details and context) made while the
# cell runs, then displays the widget the way a cell's last expression does.
_CELL = """
import pi_lab.export.data as _data
import pi_lab.widget.session_widget as sw
sw.SNAPSHOT_IDLE_DELAY_S = {idle}
_builds = []
_export_parts = _data.export_parts
def _counted(*args, **kwargs):
    _builds.append(1)
    return _export_parts(*args, **kwargs)
_data.export_parts = _counted
from pi_lab.widget import SessionWidget
w = SessionWidget({path!r})
display(w)
print("builds in the cell:", len(_builds))
"""


def _kernel_run(tmp_path: Path, cells: list[tuple[str, bool]], *, wait_for_update: bool) -> list[dict]:
    """Runs each (code, allow_stdin) cell; returns the display messages and the cell's prints,
    then (wait_for_update) keeps listening after the last idle until an update_display_data."""
    jupyter_client = pytest.importorskip("jupyter_client")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    seen: list[dict] = []
    try:
        kc.wait_for_ready(timeout=60)
        for code, allow_stdin in cells:
            msg_id = kc.execute(code, allow_stdin=allow_stdin)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                msg = kc.get_iopub_msg(timeout=60)
                kind = msg["msg_type"]
                assert kind != "error", msg["content"]
                if kind in ("display_data", "update_display_data", "stream"):
                    seen.append(msg)
                if msg["parent_header"].get("msg_id") == msg_id and kind == "status" \
                        and msg["content"]["execution_state"] == "idle":
                    break
        if wait_for_update:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(m["msg_type"] == "update_display_data" for m in seen):
                try:
                    msg = kc.get_iopub_msg(timeout=1)
                except Exception:
                    continue
                if msg["msg_type"] in ("display_data", "update_display_data", "stream"):
                    seen.append(msg)
        return seen
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _printed(seen: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in seen if m["msg_type"] == "stream")


def _session(tmp_path: Path) -> Path:
    path = tmp_path / "gen.jsonl"
    write_session(generated_session(7, 400), path)
    return path


def _synchronous_bundle(path: Path) -> dict:
    # What the cell displayed before the snapshot could wait; JSON round trip as on the wire.
    data, _metadata = SessionWidget(str(path)).snapshot_bundle()
    return json.loads(json.dumps(data))


@needs_script
def test_a_live_frontends_cell_builds_no_export_and_the_snapshot_is_completed_in_place(tmp_path):
    path = _session(tmp_path)
    seen = _kernel_run(tmp_path, [(_CELL.format(idle=0.2, path=str(path)), True)], wait_for_update=True)
    # No entry's details or context computed while the cell ran (there was one export build).
    assert "builds in the cell: 0" in _printed(seen), _printed(seen)
    shown = [m for m in seen if m["msg_type"] == "display_data"]
    snapshot = shown[0]["content"]
    info = snapshot["data"][SNAPSHOT_MIME]
    assert info["pending"] is True and info["embedded_chunks"] == 0 and info["complete"] is False
    assert 'class="pi-main"' not in snapshot["data"]["text/html"]
    assert "the text picture for now" in info["note"] and "pi-lab export" in info["note"]
    assert snapshot["data"]["text/plain"].startswith("pi session gen.jsonl")
    # The widget itself follows at once.
    assert "application/vnd.jupyter.widget-view+json" in shown[1]["content"]["data"]

    updates = [m for m in seen if m["msg_type"] == "update_display_data"]
    assert updates, seen
    update = updates[0]["content"]
    assert update["transient"]["display_id"] == snapshot["transient"]["display_id"]
    # Completed with exactly what a synchronous build gives: no time-dependent content.
    assert update["data"] == _synchronous_bundle(path)
    assert update["data"][SNAPSHOT_MIME]["complete"] is True and "pending" not in update["data"][SNAPSHOT_MIME]


@needs_script
def test_an_unattended_run_gets_the_whole_snapshot_in_the_cell(tmp_path):
    path = _session(tmp_path)
    seen = _kernel_run(tmp_path, [(_CELL.format(idle=0.2, path=str(path)), False)], wait_for_update=False)
    assert "builds in the cell: 1" in _printed(seen), _printed(seen)
    snapshot = [m for m in seen if m["msg_type"] == "display_data"][0]["content"]
    assert snapshot["data"] == _synchronous_bundle(path)
    assert snapshot["data"][SNAPSHOT_MIME]["complete"] is True


def test_outside_a_kernel_the_snapshot_is_whole(tmp_path):
    """A script or a test has no kernel to complete it later: nothing waits."""
    w = SessionWidget(str(_session(tmp_path)))
    assert w._snapshot_can_wait() is False


def test_the_viewers_requests_go_before_the_pending_snapshot(tmp_path, monkeypatch):
    """While the viewer asks (its first rows), the pending snapshot waits until the requests have
    stopped for SNAPSHOT_AFTER_REQUEST_S; then it is completed once, at the current leaf."""
    import asyncio

    import IPython.display

    import pi_lab.widget.session_widget as sw

    class Handle:
        def __init__(self):
            self.updates: list[dict] = []

        def update(self, data, raw=False, metadata=None):
            self.updates.append(data)

    shown: list[dict] = []
    handles: list[Handle] = []

    def display(data, raw=False, metadata=None, display_id=None):
        shown.append(data)
        if display_id:
            handles.append(Handle())
            return handles[-1]
        return None

    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(sw, "SNAPSHOT_IDLE_DELAY_S", 0.2)
    monkeypatch.setattr(sw, "SNAPSHOT_AFTER_REQUEST_S", 0.4)
    monkeypatch.setattr(sw.SessionWidget, "_snapshot_can_wait", lambda self: True)
    path = _session(tmp_path)

    async def scenario() -> None:
        w = SessionWidget(str(path))
        w._send = lambda msg, buffers=None: None
        w._ipython_display_()
        assert shown[0][SNAPSHOT_MIME]["pending"] is True
        await asyncio.sleep(0.1)
        w._on_msg(w, {"kind": "request", "id": 1, "op": "structure", "args": {}}, [])
        await asyncio.sleep(0.25)  # past the idle delay, but a request came: still waiting
        assert handles[0].updates == []
        await asyncio.sleep(0.4)
        assert len(handles[0].updates) == 1
        assert handles[0].updates[0] == w.snapshot_bundle()[0]
        # Completed: later requests schedule nothing more.
        w._on_msg(w, {"kind": "request", "id": 2, "op": "structure", "args": {}}, [])
        await asyncio.sleep(0.5)
        assert len(handles[0].updates) == 1
        w.close()

    asyncio.run(scenario())


def test_the_pending_snapshot_is_built_in_steps_that_leave_room_for_the_viewer(tmp_path, monkeypatch):
    """The completion runs one step per turn of the loop (the tree part, then each chunk), a
    request in between is answered at once and does not restart it, and a leaf that moves
    during the build drops it: the snapshot then shows the new leaf, never a mix."""
    import asyncio

    import pi_lab.widget.session_widget as sw

    class Handle:
        def __init__(self):
            self.updates: list[dict] = []

        def update(self, data, raw=False, metadata=None):
            self.updates.append(data)

    monkeypatch.setattr(sw, "SNAPSHOT_DELAY_S", 0.2)
    path = _session(tmp_path)

    async def scenario() -> None:
        w = SessionWidget(str(path))
        replies: list[dict] = []
        w._send = lambda msg, buffers=None: replies.append(msg)
        handle = Handle()
        w._snapshot_handles.append(handle)
        w._snapshot_pending = True
        w._update_snapshot()
        assert w._snapshot_build is not None and handle.updates == []  # one step so far
        w._on_msg(w, {"kind": "request", "id": 1, "op": "hello", "args": {}}, [])
        assert replies and w._snapshot_build is not None  # answered; the build goes on
        turns = 0
        while not handle.updates and turns < 100:
            await asyncio.sleep(0)
            turns += 1
        assert 2 <= turns < 100  # the tree part, then one chunk per turn (400 entries: 2 chunks)
        assert handle.updates[0] == w.snapshot_bundle()[0]
        first_leaf = w.view.sm.leaf_id

        # A new build, and the leaf moves under it.
        w._snapshot_pending = True
        w._update_snapshot()
        other = next(e["id"] for e in w.view.sm.entries if e["id"] != first_leaf and e["type"] == "message")
        w.view.sm.branch(other)
        w.sync()
        await asyncio.sleep(0.5)
        assert len(handle.updates) == 2
        assert handle.updates[1][SNAPSHOT_MIME]["leaf_id"] == other == w.view.sm.leaf_id
        assert handle.updates[1] == w.snapshot_bundle()[0]
        w.close()

    asyncio.run(scenario())
