"""The server's part of a leaf moved in the read-only viewer: ``gauge`` with ``leaf_id`` is the
gauge of the branch to that entry (what the viewer shows after "Move the leaf here (this view
only)"), the file's own leaf and its bytes stay as they are, and an unknown id is a 400."""

from __future__ import annotations

import hashlib

from pi_lab.session.readonly import session_from_bytes
from pi_lab.view.payload import ViewSettings, gauge_at_leaf
from pi_lab.view.gauge import recorded_context_window


async def test_the_gauge_at_a_leaf_moved_in_the_view(api, root, copy_fixture):
    path = copy_fixture("public-twkrash-branching.jsonl", root)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    sm = session_from_bytes(path.read_bytes(), path.name)
    settings = ViewSettings(context_window=recorded_context_window(sm) or ViewSettings().context_window)
    at_file_leaf = await api.session("gauge", path.name)
    moved = await api.session("gauge", path.name, args={"leaf_id": "e4"})
    assert moved["leaf_id"] == "e4" and moved != at_file_leaf
    assert moved == gauge_at_leaf(sm, settings, "e4")
    state = await api.session("state", path.name)
    assert state["leaf_id"] == at_file_leaf["leaf_id"] == sm.leaf_id
    assert await api.session("gauge", path.name) == at_file_leaf
    code, body = await api.post("session", "gauge", path=path.name, args={"leaf_id": "nope"})
    assert code == 400 and "nope" in str(body)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
