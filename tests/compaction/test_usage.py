"""context_usage: pi's getContextUsage() as one pure function of branch, window and settings."""

from __future__ import annotations

import pytest
from helpers import asst_msg, entry, msg, usage, user_msg

from pi_lab.compaction import CompactionSettings, ContextUsage, context_usage, estimate_tokens
from pi_lab.session.projection import project_path


def base():
    """u1 a1(measured 300) u2: an anchor, then an estimated tail."""
    return [msg("u1", None, user_msg("question one"), 1),
            msg("a1", "u1", asst_msg("answer one", use=usage(280, 20), ts=2), 2),
            msg("u2", "a1", user_msg("question two " + "x" * 40), 3)]


def compacted():
    """base, then a compaction that keeps from u2."""
    return [*base(), entry("compaction", "c1", "u2", 4, summary="the summary", firstKeptEntryId="u2",
                           tokensBefore=320)]


def test_anchor_plus_estimated_tail():
    branch = base()
    got = context_usage(branch, 1000)
    tail = estimate_tokens(branch[2]["message"])
    assert (got.measured, got.estimated, got.anchor_entry_id) == (300, tail, "a1")
    assert got.tokens == got.estimate_total == 300 + tail and got.unknown is False
    assert got.percent == pytest.approx((300 + tail) / 1000 * 100)
    # the projection may be given (the agent has it already): same answer
    assert context_usage(branch, 1000, projection=project_path(branch)) == got


def test_unknown_right_after_a_compaction():
    got = context_usage(compacted(), 1000)
    assert got.unknown is True and got.tokens is None and got.percent is None
    assert got.estimate_total > 0  # the estimate is still there for a gauge to show as such
    assert got.anchor_entry_id is None  # usage before the checkpoint is never trusted


def test_known_again_after_the_next_answer():
    branch = [*compacted(), msg("a2", "c1", asst_msg("answer two", use=usage(90, 10), ts=5), 5)]
    got = context_usage(branch, 1000)
    assert got.unknown is False and got.tokens == 100 and got.anchor_entry_id == "a2"


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_a_failed_answer_after_the_compaction_does_not_make_it_known(stop):
    branch = [*compacted(), msg("a2", "c1", asst_msg("x", use=usage(90, 10), stop=stop, ts=5), 5)]
    assert context_usage(branch, 1000).unknown is True


def test_an_answer_omitted_by_a_context_edit_does_not_make_it_known():
    # pi counts only assistants the model still sees (projected) as post-compaction usage
    branch = [*compacted(), msg("a2", "c1", asst_msg("answer two", use=usage(90, 10), ts=5), 5),
              entry("context_edit", "e1", "a2", 6, targetId="a2", replacement=None)]
    got = context_usage(branch, 1000)
    assert got.unknown is True and got.tokens is None
    # a replacement keeps the assistant (and its usage) in the model's view
    branch[-1] = entry("context_edit", "e1", "a2", 6, targetId="a2", replacement={"content": "short"})
    assert context_usage(branch, 1000).unknown is False


def test_no_window_has_no_percent():
    got = context_usage(base(), 0)
    assert got.tokens is not None and got.percent is None and got.context_window == 0


def test_threshold_with_settings():
    branch = base()
    total = context_usage(branch, 1000).estimate_total
    at = context_usage(branch, 1000, settings=CompactionSettings(reserve_tokens=1000 - total))
    assert at.threshold == total and at.would_compact is False  # compaction needs more than the threshold
    over = context_usage(branch, 1000, settings=CompactionSettings(reserve_tokens=1000 - total + 1))
    assert over.would_compact is True
    off = context_usage(branch, 1000, settings=CompactionSettings(enabled=False, reserve_tokens=999))
    assert off.would_compact is False
    # pi's JSON settings work too
    assert context_usage(branch, 1000, settings={"reserveTokens": 900}).threshold == 100


def test_the_first_three_fields_are_pis():
    assert ContextUsage(None, 100, None) == ContextUsage(tokens=None, context_window=100, percent=None)
