"""Compaction settings: defaults, model overrides, validation (compaction.md §1)."""

from __future__ import annotations

import pytest
from cbuild import model

from pi_lab.compaction import CompactionSettings, RetryPolicy, resolve_compaction_settings
from pi_lab.compaction.settings import BranchSummarySettings


def test_defaults():
    s = CompactionSettings()
    assert (s.enabled, s.reserve_tokens, s.keep_recent_tokens) == (True, 16384, 20000)
    assert resolve_compaction_settings(None) == s
    b = BranchSummarySettings()
    assert (b.reserve_tokens, b.skip_prompt) == (16384, False)
    r = RetryPolicy()
    assert (r.enabled, r.max_retries, r.base_delay_ms, r.max_agent_delay_ms) == (True, 3, 2000, 60000)


def test_ordinary_settings_from_whole_settings_object():
    s = resolve_compaction_settings({"compaction": {"enabled": False, "reserveTokens": 1000, "keepRecentTokens": 500}})
    assert (s.enabled, s.reserve_tokens, s.keep_recent_tokens) == (False, 1000, 500)


def test_override_wins_per_field_then_ordinary_then_default():
    settings = {
        "reserveTokens": 1000,
        "modelOverrides": {"anthropic/claude-test": {"keepRecentTokens": 7}, "other/model": {"reserveTokens": 1}},
    }
    s = resolve_compaction_settings(settings, model())
    assert (s.reserve_tokens, s.keep_recent_tokens) == (1000, 7)
    # no matching key → ordinary values and defaults
    s2 = resolve_compaction_settings(settings, "openai/gpt")
    assert (s2.reserve_tokens, s2.keep_recent_tokens) == (1000, 20000)
    # override of both fields
    s3 = resolve_compaction_settings({"modelOverrides": {"a/b": {"reserveTokens": 3, "keepRecentTokens": 4}}}, "a/b")
    assert (s3.reserve_tokens, s3.keep_recent_tokens) == (3, 4)


def test_for_model_keeps_enabled_global():
    s = CompactionSettings(enabled=False, model_overrides={"a/b": {"reserveTokens": 5}}).for_model({"provider": "a", "id": "b"})
    assert (s.enabled, s.reserve_tokens) == (False, 5)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(-1, "-1"), (1.5, "1.5"), ("100", "100"), (None, "null"), (True, "true"), (2**53, str(2**53)), ([1, 2], "1,2")],
)
def test_invalid_ordinary_value(value, shown):
    with pytest.raises(ValueError) as err:
        resolve_compaction_settings({"reserveTokens": value})
    assert str(err.value) == f"Invalid compaction.reserveTokens setting: {shown}. Expected a non-negative safe integer."


def test_integral_float_is_accepted():
    assert resolve_compaction_settings({"keepRecentTokens": 300.0}).keep_recent_tokens == 300


def test_invalid_override_value_names_the_key():
    with pytest.raises(ValueError) as err:
        resolve_compaction_settings({"modelOverrides": {"a/b": {"keepRecentTokens": -5}}}, "a/b")
    assert str(err.value) == (
        'Invalid compaction.modelOverrides["a/b"].keepRecentTokens setting: -5. Expected a non-negative safe integer.'
    )


def test_non_object_override():
    with pytest.raises(ValueError) as err:
        resolve_compaction_settings({"modelOverrides": {"a/b": 5}}, "a/b")
    assert str(err.value) == 'Invalid compaction.modelOverrides["a/b"] setting: 5. Expected an object.'


def test_ordinary_validated_before_override():
    with pytest.raises(ValueError, match=r"^Invalid compaction\.reserveTokens setting: -1\."):
        resolve_compaction_settings({"reserveTokens": -1, "modelOverrides": {"a/b": {"reserveTokens": -2}}}, "a/b")


def test_constructor_validates():
    with pytest.raises(ValueError, match="keepRecentTokens"):
        CompactionSettings(keep_recent_tokens=-1)


def test_retry_policy_from_settings():
    p = RetryPolicy.from_settings({"retry": {"enabled": False, "maxRetries": 5, "baseDelayMs": 10, "maxAgentDelayMs": 20}})
    assert (p.enabled, p.max_retries, p.base_delay_ms, p.max_agent_delay_ms) == (False, 5, 10, 20)
