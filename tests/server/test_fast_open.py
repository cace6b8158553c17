"""A cold open of the viewer does each piece of work once (issue 11: open to first rows).

The requests are answered through ``session_answer``, the handlers' own path, in this thread.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pi_lab.server.store as store_module
import pi_lab.view.payload as payload_module
from pi_lab.server.handlers import session_answer
from pi_lab.server.store import SessionStore
from pi_lab.session.readonly import session_from_bytes
from pi_lab.view.gauge import recorded_context_window
from pi_lab.view.payload import ViewSettings, gauge_payload

BODY = {"path": "s.jsonl", "view": {"filter_mode": "default", "search": "", "folded": []},
        "settings": {"reserve_tokens": 16_384, "keep_recent_tokens": 20_000}}


def counting_gauges(monkeypatch) -> list[ViewSettings]:
    """Every gauge the server computes, by its settings (the store's and the view's calls)."""
    seen: list[ViewSettings] = []

    def counted(sm, settings, **kw):
        seen.append(settings)
        return gauge_payload(sm, settings, **kw)

    monkeypatch.setattr(store_module, "gauge_payload", counted)
    monkeypatch.setattr(payload_module, "gauge_payload", counted)
    return seen


def test_a_cold_state_computes_one_gauge_with_the_requests_settings(tmp_path, fixtures_dir, monkeypatch):
    path = Path(shutil.copyfile(fixtures_dir / "before-compaction.jsonl", tmp_path / "s.jsonl"))
    seen = counting_gauges(monkeypatch)
    state = SimpleNamespace(store=SessionStore())
    location = SimpleNamespace(real=str(path), key="s.jsonl", area="root", name="s.jsonl")
    answer, _ = session_answer(state, location, "state", BODY)
    sm = session_from_bytes(path.read_bytes(), path.name)
    window = recorded_context_window(sm) or ViewSettings().context_window
    expected = ViewSettings(context_window=window)
    # Before: SessionView.open laid out the rows and computed a gauge with the default settings,
    # then the state computed the one it answers with the request's settings.
    assert seen == [expected]
    assert answer["gauge"] == gauge_payload(sm, expected)
    # The structure and the rows that follow reuse the layout and compute no gauge.
    session_answer(state, location, "structure", BODY)
    session_answer(state, location, "rows", {**BODY, "args": {"start": 0, "end": 20}})
    assert seen == [expected]
