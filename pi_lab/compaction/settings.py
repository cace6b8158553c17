"""Compaction and branch-summary settings (compaction.md §1).

pi keeps these in its settings JSON as ``compaction.enabled``, ``compaction.reserveTokens``,
``compaction.keepRecentTokens`` and ``compaction.modelOverrides["<provider>/<modelId>"]``.
Each token field resolves as: model override → ordinary setting → built-in default, and
every value that is present must be a non-negative safe integer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pi_lab.errors import PiLabError
from pi_lab.session._js import js_string as _js_string

__all__ = [
    "InvalidSetting",
    "DEFAULT_RESERVE_TOKENS",
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS",
    "MAX_SAFE_INTEGER",
    "CompactionSettings",
    "BranchSummarySettings",
    "DEFAULT_COMPACTION_SETTINGS",
    "resolve_compaction_settings",
    "model_key",
    "settings_value",
]

DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000
DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS = 16384
MAX_SAFE_INTEGER = 2**53 - 1


class InvalidSetting(PiLabError, ValueError):
    """A compaction setting in pi's settings JSON that pi would reject too (pi's message)."""


# settings JSON key ↔ dataclass attribute
_FIELDS = (("reserveTokens", "reserve_tokens"), ("keepRecentTokens", "keep_recent_tokens"))


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """The settings the compaction functions read.

    ``model_overrides`` holds the raw ``compaction.modelOverrides`` object (keys
    ``"<provider>/<modelId>"``); :meth:`for_model` applies the matching override.
    """

    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    model_overrides: Mapping[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for json_key, attr in _FIELDS:
            _check_token_value(getattr(self, attr), f"compaction.{json_key}")

    def for_model(self, model: Any) -> CompactionSettings:
        """These settings with the override for ``model`` (if any) applied."""
        if not self.model_overrides or model is None:
            return self
        key = model_key(model)
        if key is None or key not in self.model_overrides:
            return self
        override = self.model_overrides[key]
        label = f"compaction.modelOverrides[{json.dumps(key, ensure_ascii=False)}]"
        if not isinstance(override, Mapping):
            raise InvalidSetting(f"Invalid {label} setting: {_js_string(override)}. Expected an object.")
        changes: dict[str, int] = {}
        for json_key, attr in _FIELDS:
            if json_key in override:
                changes[attr] = _check_token_value(override[json_key], f"{label}.{json_key}")
        return replace(self, **changes) if changes else self

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None, model: Any = None) -> CompactionSettings:
        """Alias of :func:`resolve_compaction_settings`."""
        return resolve_compaction_settings(settings, model)



@dataclass(frozen=True, slots=True)
class BranchSummarySettings:
    """``branchSummary.*``: the input-budget reduction and the /tree "skip the question" flag."""

    reserve_tokens: int = DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS
    skip_prompt: bool = False


def resolve_compaction_settings(settings: Mapping[str, Any] | None, model: Any = None) -> CompactionSettings:
    """Build :class:`CompactionSettings` from pi's settings JSON.

    ``settings`` may be the whole settings object (with a ``"compaction"`` key) or the
    ``compaction`` object itself. Ordinary values are validated first, then the override
    for ``model`` (``"<provider>/<modelId>"``, exact match) is applied and validated.
    """
    section: Mapping[str, Any] = {}
    if isinstance(settings, Mapping):
        inner = settings.get("compaction")
        section = inner if isinstance(inner, Mapping) else settings
    values: dict[str, Any] = {}
    enabled = section.get("enabled", True)
    values["enabled"] = True if enabled is None else bool(enabled)
    for json_key, attr in _FIELDS:
        if json_key in section:
            values[attr] = _check_token_value(section[json_key], f"compaction.{json_key}")
    overrides = section.get("modelOverrides")
    base = CompactionSettings(**values, model_overrides=overrides if isinstance(overrides, Mapping) else None)
    return base.for_model(model)


def model_key(model: Any) -> str | None:
    """``"<provider>/<modelId>"`` for a model object, a mapping, or an already formed key."""
    if model is None:
        return None
    if isinstance(model, str):
        return model
    if isinstance(model, Mapping):
        provider = model.get("provider")
        model_id = model.get("id", model.get("modelId"))
    else:
        provider = getattr(model, "provider", None)
        model_id = getattr(model, "id", None)
        if model_id is None:
            model_id = getattr(model, "model_id", None)
    if provider is None or model_id is None:
        return None
    return f"{provider}/{model_id}"


def settings_value(settings: Any, attr: str, json_key: str, default: Any) -> Any:
    """Read one field from a :class:`CompactionSettings`, any object, or a JSON mapping."""
    if isinstance(settings, Mapping):
        return settings.get(json_key, settings.get(attr, default))
    return getattr(settings, attr, default)


def _check_token_value(value: Any, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidSetting(f"Invalid {label} setting: {_js_string(value)}. Expected a non-negative safe integer.")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise InvalidSetting(f"Invalid {label} setting: {_js_string(value)}. Expected a non-negative safe integer.")
        value = int(value)
    if value < 0 or value > MAX_SAFE_INTEGER:
        raise InvalidSetting(f"Invalid {label} setting: {_js_string(value)}. Expected a non-negative safe integer.")
    return value


DEFAULT_COMPACTION_SETTINGS = CompactionSettings()
