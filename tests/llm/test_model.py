"""Model descriptions, pricing and pi's usage sum (session-format.md §6.2)."""

from __future__ import annotations

import json

import pytest

from pi_lab.llm import Model, ModelCost, add_usages, empty_usage, make_usage

SONNET = Model(
    provider="anthropic",
    id="claude-sonnet-test",
    api="anthropic-messages",
    context_window=200000,
    max_tokens=64000,
    reasoning=True,
    cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
)


def test_model_is_frozen_and_names_itself() -> None:
    assert SONNET.key == "anthropic/claude-sonnet-test"
    with pytest.raises(AttributeError):
        SONNET.id = "other"  # type: ignore[misc]


def test_usage_keys_follow_pi_order() -> None:
    usage = make_usage(SONNET, input=1000, output=200, cache_read=5000, cache_write=100)
    assert list(usage) == ["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"]
    assert list(usage["cost"]) == ["input", "output", "cacheRead", "cacheWrite", "total", "totalFromProvider"]
    assert usage["cost"]["totalFromProvider"] is False  # pi-ai 1.6.0 computes the total itself
    assert usage["totalTokens"] == 6300


def test_costs_are_dollars_per_million_tokens() -> None:
    usage = make_usage(SONNET, input=1_000_000, output=2_000_000, cache_read=1_000_000, cache_write=1_000_000)
    assert usage["cost"] == {"input": 3, "output": 30, "cacheRead": 0.3, "cacheWrite": 3.75, "total": 37.05,
                             "totalFromProvider": False}
    # Integral costs stay ints so the JSON reads like JavaScript's (`3`, not `3.0`).
    assert json.dumps(usage["cost"]["input"]) == "3"


def test_cost_arithmetic_matches_javascript_floats() -> None:
    # Node 20: (3 / 1000000) * 1234 === 0.003702; (0.3 / 1000000) * 777 === 0.0002331
    usage = make_usage(SONNET, input=1234, cache_read=777)
    assert usage["cost"]["input"] == 0.003702
    assert usage["cost"]["cacheRead"] == 0.0002331


def test_one_hour_cache_writes_cost_twice_the_input_price() -> None:
    usage = make_usage(SONNET, cache_write=1_000_000, cache_write_1h=400_000)
    # (3.75 * 600000 + 3 * 2 * 400000) / 1e6 = 2.25 + 2.4
    assert usage["cost"]["cacheWrite"] == (3.75 * 600_000 + 3 * 2 * 400_000) / 1_000_000 == 4.65


def test_optional_counters_appear_only_when_given() -> None:
    usage = make_usage(SONNET, input=1, output=10, cache_write=8, cache_write_1h=8, reasoning=6)
    assert list(usage) == ["input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "reasoning",
                           "totalTokens", "cost"]
    assert usage["totalTokens"] == 19  # subsets are not added twice


def test_free_model_usage_is_all_zero_ints() -> None:
    assert empty_usage() == {
        "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def test_sum_of_two_summary_usages_matches_pi() -> None:
    # compaction-summary-reasoning.test.ts: two responses of 10+10 tokens sum to input 20,
    # output 20, total 40; 1.6.0 writes totalFromProvider false.
    a = make_usage(None, input=10, output=10)
    total = add_usages(a, make_usage(None, input=10, output=10))
    assert total == {
        "input": 20, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 40,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0, "totalFromProvider": False},
    }


def test_sum_keeps_optional_counters_present_on_either_side() -> None:
    a = make_usage(None, input=1, output=5, reasoning=3)
    b = make_usage(None, input=2, output=1, cache_write=4, cache_write_1h=4)
    total = add_usages(a, b)
    assert list(total) == ["input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "reasoning",
                           "totalTokens", "cost"]
    assert (total["reasoning"], total["cacheWrite1h"], total["totalTokens"]) == (3, 4, 13)


def test_total_from_provider_only_when_both_sides_say_so() -> None:
    a = make_usage(None, input=1)
    b = make_usage(None, input=1)
    a["cost"]["totalFromProvider"] = True
    assert add_usages(a, b)["cost"]["totalFromProvider"] is False
    b["cost"]["totalFromProvider"] = True
    assert add_usages(a, b)["cost"]["totalFromProvider"] is True


def test_sum_treats_missing_numbers_as_zero() -> None:
    old = {"input": 5, "output": 7, "cacheRead": 0, "cacheWrite": 0}  # a pre-totalTokens file
    total = add_usages(old, make_usage(None, input=1, output=1))
    assert total["input"] == 6 and total["output"] == 8
    assert total["totalTokens"] == 2
    assert total["cost"]["total"] == 0
    assert add_usages(None, None)["totalTokens"] == 0
