"""pi_lab.teach.stepper: stepping forward and back through tiny-auth shows, at every line, what a
fresh SessionWidget on session_at(path, k) shows (rows, leaf, gauge, timeline, session facts),
in the one widget the stepper built (SessionWidget.show)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from pi_lab.data import recorded_session
from pi_lab.teach import TeachError, session_at, stepper
from pi_lab.widget import SessionWidget


def _seen(widget):
    return {"rows": widget.rows_text(), "leaf": widget.leaf_id, "gauge": widget.gauge,
            "compactions": widget.compactions, "row_count": widget.row_count,
            "entries": widget.session.get("entries"), "writable": widget.writable}


@pytest.fixture
def tiny(tmp_path):
    return Path(shutil.copy(recorded_session().path, tmp_path / "tiny-auth.jsonl"))


def test_every_step_forward_and_back_equals_a_fresh_widget(tiny):
    digest = hashlib.sha256(tiny.read_bytes()).hexdigest()
    lines = len(tiny.read_bytes().splitlines())
    control = stepper(str(tiny), start=1)
    widget = control.widget
    expected = {}
    for k in range(1, lines + 1):
        fresh = SessionWidget(session_at(str(tiny), k))
        expected[k] = _seen(fresh)
        fresh.close()
    forward = list(range(2, lines + 1))
    for k in forward + forward[::-1][1:] + [1]:
        control.go(k)
        assert control.step == k
        assert control.widget is widget  # one widget for every step
        assert _seen(widget) == expected[k], k
    # the buttons step by one, and stop at the ends
    control.forward.click()
    assert control.step == 2 and _seen(widget) == expected[2]
    control.back.click()
    control.back.click()
    assert control.step == 1 and _seen(widget) == expected[1]
    assert "line 1 of" in control.caption.value
    assert hashlib.sha256(tiny.read_bytes()).hexdigest() == digest  # never written
    control.widget.close()


def test_the_gauge_climbs_and_the_tree_grows(tiny):
    control = stepper(str(tiny))  # starts at the last line: the session as it is
    lines = len(tiny.read_bytes().splitlines())
    assert control.step == lines == control.slider.max
    whole = SessionWidget(str(tiny))
    assert control.widget.rows_text() == whole.rows_text() and control.widget.leaf_id == whole.leaf_id
    counts = []
    for k in range(1, lines + 1):
        control.go(k)
        counts.append(control.widget.row_count)
    assert counts == sorted(counts) and counts[0] < counts[-1]
    whole.close()
    control.widget.close()


def test_show_keeps_a_selection_that_exists_and_drops_one_that_does_not(tiny):
    control = stepper(str(tiny))
    widget = control.widget
    target = widget.leaf_id
    widget.select(target)
    control.go(control.slider.max - 1)
    assert widget.selected_id is None or widget.session_manager.get_entry(widget.selected_id) is not None
    control.go(control.slider.max)
    widget.select(target)
    control.go(2)
    assert widget.selected_id != target
    widget.close()


def test_a_start_outside_the_file_is_refused(tiny):
    with pytest.raises(TeachError, match="start is a line"):
        stepper(str(tiny), start=0)
    with pytest.raises(TeachError, match="start is a line"):
        stepper(str(tiny), start=10_000)
