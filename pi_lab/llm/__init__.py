"""Models for pi_lab: one streaming interface, three implementations, pi's error classifiers.

* `ModelClient` (protocol.py) — the interface the agent loop and the summariser call;
* `OfflineModel` — the embedded default: deterministic, scriptable, no key, no network;
* `OpenAIClient`, `AnthropicClient` — real providers over httpx;
* `convert_to_llm`, `prepare_request_messages` — from session messages to requests;
* `is_context_overflow`, `is_recoverable_length`, `is_retryable_assistant_error` — pi-ai 1.6.0;
* `Model`, `make_usage`, `add_usages` — model descriptions and usage arithmetic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Each public name is imported from its module on first use: the clients pull in httpx, and
# a caller that needs only the catalog or the error classifiers (the corpus, the viewer, a
# cached `pi-lab usage`) should not pay for it.
_MODULES: dict[str, tuple[str, ...]] = {
    "anthropic": ("AnthropicClient",),
    "convert": (
        "BRANCH_SUMMARY_PREFIX", "BRANCH_SUMMARY_SUFFIX", "COMPACTION_SUMMARY_PREFIX", "COMPACTION_SUMMARY_SUFFIX",
        "bash_execution_to_text", "convert_to_llm", "prepare_request_messages",
    ),
    "errors": ("is_context_overflow", "is_recoverable_length", "is_retryable_assistant_error"),
    "model": ("Model", "ModelCost", "add_usages", "calculate_cost", "empty_usage", "make_usage"),
    "offline": ("OFFLINE_MODEL", "FaultReply", "OfflineCall", "OfflineModel", "ToolCallReply"),
    "openai": ("OpenAIClient",),
    "protocol": (
        "CompleteFromStream", "Context", "ModelClient", "StreamDone", "StreamError", "StreamEvent", "StreamOptions",
        "StreamStart", "TextDelta", "ThinkingDelta", "ToolCallEvent", "collect", "complete_sync", "run_sync", "stream_sync",
    ),
    "request": ("Request", "build_request"),
    "tokens": ("estimate_request_tokens", "utf16_len"),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}

if TYPE_CHECKING:  # the same names for type checkers and IDEs
    from .anthropic import AnthropicClient
    from .convert import (
        BRANCH_SUMMARY_PREFIX,
        BRANCH_SUMMARY_SUFFIX,
        COMPACTION_SUMMARY_PREFIX,
        COMPACTION_SUMMARY_SUFFIX,
        bash_execution_to_text,
        convert_to_llm,
        prepare_request_messages,
    )
    from .errors import is_context_overflow, is_recoverable_length, is_retryable_assistant_error
    from .model import Model, ModelCost, add_usages, calculate_cost, empty_usage, make_usage
    from .offline import OFFLINE_MODEL, FaultReply, OfflineCall, OfflineModel, ToolCallReply
    from .openai import OpenAIClient
    from .protocol import (
        CompleteFromStream,
        Context,
        ModelClient,
        StreamDone,
        StreamError,
        StreamEvent,
        StreamOptions,
        StreamStart,
        TextDelta,
        ThinkingDelta,
        ToolCallEvent,
        collect,
        complete_sync,
        run_sync,
        stream_sync,
    )
    from .request import Request, build_request
    from .tokens import estimate_request_tokens, utf16_len


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_lab.llm' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"pi_lab.llm.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "OFFLINE_MODEL",
    "AnthropicClient",
    "CompleteFromStream",
    "Context",
    "FaultReply",
    "Model",
    "ModelClient",
    "ModelCost",
    "OfflineCall",
    "OfflineModel",
    "OpenAIClient",
    "Request",
    "StreamDone",
    "StreamError",
    "StreamEvent",
    "StreamOptions",
    "StreamStart",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallEvent",
    "ToolCallReply",
    "add_usages",
    "bash_execution_to_text",
    "build_request",
    "calculate_cost",
    "collect",
    "complete_sync",
    "convert_to_llm",
    "empty_usage",
    "estimate_request_tokens",
    "is_context_overflow",
    "is_recoverable_length",
    "is_retryable_assistant_error",
    "make_usage",
    "prepare_request_messages",
    "run_sync",
    "stream_sync",
    "utf16_len",
]
