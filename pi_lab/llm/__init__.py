"""Models for pi_lab: one streaming interface, three implementations, pi's error classifiers.

* `ModelClient` (protocol.py) — the interface the agent loop and the summariser call;
* `OfflineModel` — the embedded default: deterministic, scriptable, no key, no network;
* `OpenAIClient`, `AnthropicClient` — real providers over httpx;
* `convert_to_llm`, `prepare_request_messages` — from session messages to requests;
* `is_context_overflow`, `is_recoverable_length`, `is_retryable_assistant_error` — pi-ai 1.6.0;
* `Model`, `make_usage`, `add_usages` — model descriptions and usage arithmetic.
"""

from __future__ import annotations

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
