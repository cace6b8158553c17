"""Model descriptions and pi's usage arithmetic.

A `Model` says which provider and API answer, how big its context window is and what its tokens
cost. Usage records stay plain dicts with pi's JSON keys (session-format.md §6.2), because they
are written into session files verbatim.

Prices follow pi's model catalogue: **US dollars per million tokens**. Costs are computed with
the same operations in the same order as pi-ai 1.6.0 (`(price / 1_000_000) * n`; cache writes
see `calculate_cost`), so the floating-point results are the numbers JavaScript produces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Model", "ModelCost", "add_usages", "calculate_cost", "empty_usage", "make_usage"]

_COUNTERS = ("input", "output", "cacheRead", "cacheWrite")
_OPTIONAL_COUNTERS = ("cacheWrite1h", "reasoning")
_COST_KEYS = ("input", "output", "cacheRead", "cacheWrite", "total")


@dataclass(frozen=True, slots=True)
class ModelCost:
    """Prices in US dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(frozen=True, slots=True)
class Model:
    """One model as pi describes it (`provider/id`, wire API, limits, prices).

    `api` names the wire protocol (`"openai-completions"`, `"anthropic-messages"`, `"offline"`).
    `max_tokens` is the model's declared output limit; `context_window` its input+output limit.
    `base_url` overrides the provider's default endpoint (local or proxy servers).
    """

    provider: str
    id: str
    api: str
    context_window: int
    max_tokens: int
    reasoning: bool = False
    cost: ModelCost = field(default_factory=ModelCost)
    base_url: str | None = None

    @property
    def key(self) -> str:
        """`provider/id`, the form pi uses in settings and statistics."""
        return f"{self.provider}/{self.id}"


def calculate_cost(model: Model | None, usage: dict[str, Any]) -> dict[str, Any]:
    """pi-ai 1.6.0's cost object for the counters in `usage`.

    1-hour cache writes (`cacheWrite1h`, a subset of `cacheWrite`) cost twice the input price,
    the rest of `cacheWrite` the cache-write price. `totalFromProvider` is always `false`: the
    total is computed here, not reported by the provider.
    """
    price = model.cost if model is not None else ModelCost()
    long_write = usage.get("cacheWrite1h") or 0
    short_write = usage.get("cacheWrite", 0) - long_write
    cost = {
        "input": (price.input / 1_000_000) * usage.get("input", 0),
        "output": (price.output / 1_000_000) * usage.get("output", 0),
        "cacheRead": (price.cache_read / 1_000_000) * usage.get("cacheRead", 0),
        "cacheWrite": (price.cache_write * short_write + price.input * 2 * long_write) / 1_000_000,
    }
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    # JavaScript has one number type: 0 and 3.0 serialise as `0` and `3`. Keep integral values
    # as ints so the JSON we write reads the same as pi's.
    priced: dict[str, Any] = {key: _js_number(value) for key, value in cost.items()}
    priced["totalFromProvider"] = False
    return priced


def _js_number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def make_usage(
    model: Model | None = None,
    *,
    input: int = 0,
    output: int = 0,
    cache_read: int = 0,
    cache_write: int = 0,
    cache_write_1h: int | None = None,
    reasoning: int | None = None,
) -> dict[str, Any]:
    """Build a pi Usage dict from token counts, priced with `model`'s costs.

    Key order: input, output, cacheRead, cacheWrite, [cacheWrite1h], [reasoning], totalTokens,
    cost. `totalTokens` is the sum of the four counters (the optional ones are subsets of
    cacheWrite and output and are not added again).
    """
    usage: dict[str, Any] = {
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
    }
    if cache_write_1h is not None:
        usage["cacheWrite1h"] = cache_write_1h
    if reasoning is not None:
        usage["reasoning"] = reasoning
    usage["totalTokens"] = input + output + cache_read + cache_write
    usage["cost"] = calculate_cost(model, usage)
    return usage


def empty_usage() -> dict[str, Any]:
    """All-zero usage, the starting value of every assistant message (nothing priced yet)."""
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def _number(record: Any, key: str) -> Any:
    # Old files may lack totalTokens or cost; pi treats missing numbers as 0 in arithmetic.
    if isinstance(record, dict):
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    return 0


def add_usages(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    """Sum two usages the way pi combines them (split-turn compaction, nested tool calls).

    The four counters are always present; `cacheWrite1h` and `reasoning` only when either side
    has them; `totalTokens` is the sum of both totals; the cost object always carries
    `totalFromProvider`, true only when both sides say true.
    """
    a = a or {}
    b = b or {}
    total: dict[str, Any] = {key: _number(a, key) + _number(b, key) for key in _COUNTERS}
    for key in _OPTIONAL_COUNTERS:
        if key in a or key in b:
            total[key] = _number(a, key) + _number(b, key)
    total["totalTokens"] = _number(a, "totalTokens") + _number(b, "totalTokens")
    cost_a, cost_b = a.get("cost"), b.get("cost")
    cost: dict[str, Any] = {key: _number(cost_a, key) + _number(cost_b, key) for key in _COST_KEYS}
    cost["totalFromProvider"] = bool(
        isinstance(cost_a, dict)
        and cost_a.get("totalFromProvider") is True
        and isinstance(cost_b, dict)
        and cost_b.get("totalFromProvider") is True
    )
    total["cost"] = cost
    return total
