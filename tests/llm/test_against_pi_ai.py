"""pi_lab.llm against pi 1.6.0's own modules (pi-ai and the coding agent), on generated inputs.

Each test sends a few hundred generated cases to `pi_ai_oracle.mjs`, which answers with pi's
functions under Node, and compares with ours: error classification, the request-time message
transform, cost, the request-side token estimate and output budget, system-message replay and
`convertToLlm`. Skips when Node or the pi package (bench/pi_runner/setup.sh → bench/.pi) is
missing.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pi_lab.llm import Model, ModelCost, build_request, convert_to_llm, prepare_request_messages
from pi_lab.llm.errors import is_context_overflow, is_recoverable_length, is_retryable_assistant_error
from pi_lab.llm.model import calculate_cost
from pi_lab.llm.tokens import clamp_max_tokens_to_context, estimate_context_tokens

pytestmark = pytest.mark.differential

HERE = Path(__file__).resolve().parent
PACKAGES = HERE.parents[1] / "bench" / ".pi" / "node_modules" / "@earendil-works"


def oracle(op: str, cases: list[Any]) -> list[Any]:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if not (PACKAGES / "pi-ai" / "dist" / "utils" / "overflow.js").is_file():
        pytest.skip(f"pi 1.6.0 is not installed in {PACKAGES} (bash bench/pi_runner/setup.sh)")
    done = subprocess.run(
        ["node", str(HERE / "pi_ai_oracle.mjs"), str(PACKAGES)],
        input=json.dumps({"op": op, "cases": cases}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def as_json(value: Any) -> str:
    """Compare as JSON text: key order, ints versus floats and absent keys all count."""
    return json.dumps(value, ensure_ascii=False)


# --- error classification ---------------------------------------------------------------------

FRAGMENTS = [
    "prompt is too long", "prompt too long; exceeded max context length", "request_too_large",
    "exceeds the context window", "exceeds the model's maximum context length of 131,072 tokens",
    "exceeds maximum context length (262144)", "context window exceeded", "input token count (5) exceeds the maximum",
    "maximum prompt length is 131072", "reduce the length of the messages", "maximum context length is 8192 tokens",
    "exceeds the maximum allowed input length of 131040 tokens", "input (516368 tokens) is longer than the model's "
    "context length (262144 tokens)", "exceeds the limit of 128000", "exceeds the available context size",
    "greater than the context length", "context window exceeds limit", "exceeded model token limit",
    "too large for model with 131072 maximum context length", "prompt has 300,123 tokens, but the configured context "
    "size is 262,144 tokens", "model_context_window_exceeded", "range of input length should be",
    "context_length_exceeded", "context length exceeded", "too many tokens", "token limit exceeded",
    "Throttling error:", "Service unavailable:", "rate limit", "Rate-Limit", "too many requests", "overloaded",
    "server_busy", "429", "4290", "x503", "503", "520", "service temporarily unavailable", "internal error",
    "provider returned an error", "upstream request failed", "network error", "connection\u2028closed",
    "connection closed", "ECONNRESET", "xECONNRESET", "ECONNRESET_", "socket hang up", "timed out", "timeout",
    "terminated", "ended without", "stream ended before message_stop", "retry delay", "ResourceExhausted",
    "insufficient_quota", "billing", "quota exceeded", '"code": "1308"', '"code":13080', "GoUsageLimitError",
    "request to https://x.example/v1 failed, reason: boom", "request to\u00a0x failed, reason:", "getaddrinfo",
    "413", "413 Request Entity Too Large", "github-copilot API error (413): {}", "Error 413",
    "400 status code (no body)",
    "413 (no body)", "maximum prompt length is \u0661\u0662", "",
]
SEPARATORS = [" ", "", "\n", ": ", "\u00a0", "\u2028", " - ", "\t"]


def random_error_text(rng: random.Random) -> str:
    parts = [rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 3))]
    text = rng.choice(SEPARATORS).join(parts)
    if rng.random() < 0.3:
        text = rng.choice(["400 ", "Error: ", "", "413", "529 ", "500 "]) + text
    if rng.random() < 0.2:
        text = text.upper() if rng.random() < 0.5 else text.lower()
    return text


def random_assistant_outcome(rng: random.Random) -> dict[str, Any]:
    stop = rng.choice(["error", "error", "stop", "length", "aborted"])
    usage = {"input": rng.choice([0, 58, 1000, 150000, 198000, 199999]), "output": rng.choice([0, 0, 16, 4096]),
             "cacheRead": rng.choice([0, 0, 60000, 1048512]), "cacheWrite": 0, "totalTokens": 0,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    message = {"role": "assistant", "content": [], "api": "openai-completions",
               "provider": rng.choice(["openai", "cerebras", "ollama"]), "model": "m", "usage": usage,
               "stopReason": stop, "timestamp": 0}
    if stop in ("error", "aborted") or rng.random() < 0.2:
        message["errorMessage"] = random_error_text(rng)
    return message


def test_classification_matches_pi_ai() -> None:
    rng = random.Random(20261120)
    cases = [{"message": random_assistant_outcome(rng), "contextWindow": rng.choice([None, 0, 200000, 1048576])}
             for _ in range(1500)]
    cases = [{k: v for k, v in case.items() if v is not None} for case in cases]
    expected = oracle("overflow", cases)
    ours = [is_context_overflow(c["message"], c.get("contextWindow")) for c in cases]
    mismatches = [(c["message"].get("errorMessage"), e) for c, e, o in zip(cases, expected, ours) if e != o]
    assert not mismatches, mismatches[:10]
    assert 100 < sum(expected) < 1400  # the corpus exercises both answers

    messages = [c["message"] for c in cases]
    expected = oracle("retryable", messages)
    ours = [is_retryable_assistant_error(m) for m in messages]
    mismatches = [(m.get("errorMessage"), e) for m, e, o in zip(messages, expected, ours) if e != o]
    assert not mismatches, mismatches[:10]
    assert 100 < sum(expected) < 1400

    lengths = [{"message": m, "desired": rng.choice([0, 16, 1024, 128000])} for m in messages[:300]]
    assert oracle("recoverable", lengths) == [is_recoverable_length(c["message"], c["desired"]) for c in lengths]


# --- request-time transform -------------------------------------------------------------------

TARGET = Model("anthropic", "claude-test", "anthropic-messages", 200000, 64000, reasoning=True)
MODEL_JSON = {"provider": "anthropic", "api": "anthropic-messages", "id": "claude-test"}


def random_block(rng: random.Random, ids: list[str]) -> dict[str, Any]:
    kind = rng.choice(["text", "text", "thinking", "toolCall", "toolCall"])
    if kind == "text":
        block: dict[str, Any] = {"type": "text", "text": rng.choice(["answer", "", " "])}
        if rng.random() < 0.3:
            block["textSignature"] = "ts"
        return block
    if kind == "thinking":
        block = {"type": "thinking", "thinking": rng.choice(["hm", "", "  "])}
        if rng.random() < 0.5:
            block["thinkingSignature"] = rng.choice(["sig", ""])
        if rng.random() < 0.2:
            block["redacted"] = True
        return block
    block = {"type": "toolCall", "id": rng.choice(ids), "name": rng.choice(["read", "bash"]),
             "arguments": {"path": "a.py"}}
    if rng.random() < 0.3:
        block["thoughtSignature"] = "g"
    return block


def random_transcript(rng: random.Random) -> list[dict[str, Any]]:
    ids = ["c1", "c2", "c3", "c4"]
    messages: list[dict[str, Any]] = []
    for position in range(rng.randint(0, 12)):
        role = rng.choice(["user", "assistant", "assistant", "toolResult", "toolResult", "system"])
        if role == "user":
            content: Any = rng.choice(["hi", [{"type": "text", "text": "q"}], None])
            messages.append({"role": "user", "content": content, "timestamp": position})
        elif role == "assistant":
            same = rng.random() < 0.6
            messages.append({
                "role": "assistant", "content": [random_block(rng, ids) for _ in range(rng.randint(0, 3))],
                "api": "anthropic-messages" if same else "openai-completions",
                "provider": "anthropic" if same else "openai", "model": "claude-test" if same else "gpt",
                "usage": {}, "stopReason": rng.choice(["stop", "toolUse", "toolUse", "error", "aborted", "length"]),
                "timestamp": position})
        elif role == "toolResult":
            messages.append({"role": "toolResult", "toolCallId": rng.choice(ids), "toolName": "read",
                             "content": [{"type": "text", "text": "r"}], "isError": False, "timestamp": position})
        else:
            messages.append({"role": "system", "content": "", "sections": {"s": "x"}, "timestamp": position})
    return messages


def test_request_transform_matches_pi_ai() -> None:
    rng = random.Random(7)
    cases = [random_transcript(rng) for _ in range(400)]
    expected = oracle("transform", [{"messages": m, "model": MODEL_JSON} for m in cases])
    for messages, theirs in zip(cases, expected):
        assert as_json(prepare_request_messages(messages, TARGET, now=0)) == as_json(theirs), messages


# --- cost, estimate, output budget ------------------------------------------------------------

def test_cost_matches_pi_ai() -> None:
    rng = random.Random(11)
    prices = [0, 0.075, 0.3, 1.25, 3, 3.75, 15, 0.1, 2.5]
    cases = []
    for _ in range(500):
        cost = {"input": rng.choice(prices), "output": rng.choice(prices), "cacheRead": rng.choice(prices),
                "cacheWrite": rng.choice(prices)}
        usage = {"input": rng.randint(0, 300000), "output": rng.randint(0, 64000), "cacheRead": rng.randint(0, 10**6),
                 "cacheWrite": rng.randint(0, 50000), "totalTokens": 0,
                 "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
        if rng.random() < 0.5:
            usage["cacheWrite1h"] = rng.randint(0, usage["cacheWrite"])
        cases.append({"cost": cost, "usage": usage})
    expected = oracle("cost", cases)
    for case, theirs in zip(cases, expected):
        price = ModelCost(case["cost"]["input"], case["cost"]["output"], case["cost"]["cacheRead"],
                          case["cost"]["cacheWrite"])
        ours = calculate_cost(Model("p", "m", "a", 1, 1, cost=price), case["usage"])
        assert as_json(ours) == as_json(theirs), case


def random_context_messages(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    clock = 100
    for _ in range(rng.randint(0, 8)):
        clock += rng.choice([1, 5, -3])  # an older timestamp after a newer one happens (summaries)
        role = rng.choice(["user", "assistant", "toolResult", "system"])
        if role == "user":
            messages.append({"role": "user", "content": rng.choice(
                ["x" * rng.randint(0, 20000), [{"type": "text", "text": "héllo 😀"}, {"type": "image", "data": "A",
                                                                                   "mimeType": "image/png"}]]),
                "timestamp": clock})
        elif role == "assistant":
            usage = {"input": rng.randint(0, 90000), "output": rng.randint(0, 900), "cacheRead": 0, "cacheWrite": 0,
                     "totalTokens": rng.choice([0, rng.randint(1, 120000)])}
            messages.append({"role": "assistant", "content": [
                {"type": "text", "text": "y" * rng.randint(0, 3000)},
                {"type": "thinking", "thinking": "z" * rng.randint(0, 50)},
                {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "ä.py"}}],
                "usage": usage, "stopReason": rng.choice(["stop", "error", "aborted", "toolUse"]),
                "timestamp": clock})
        elif role == "toolResult":
            messages.append({"role": "toolResult", "toolCallId": "c", "toolName": "read",
                             "content": [{"type": "text", "text": "w" * rng.randint(0, 5000)}], "isError": False,
                             "timestamp": clock})
        else:
            messages.append({"role": "system", "content": rng.choice(["", "base prompt"]),
                             "sections": {"a": "s" * rng.randint(0, 100), "b": None},
                             "toolsAdded": [{"name": "read", "description": "d", "parameters": {}}],
                             "toolsRemoved": [{"name": "old"}], "timestamp": clock})
    return messages


def test_estimate_and_output_budget_match_pi_ai() -> None:
    rng = random.Random(3)
    transcripts = [random_context_messages(rng) for _ in range(300)]
    assert oracle("estimate", transcripts) == [estimate_context_tokens(m) for m in transcripts]

    cases = [{"contextWindow": rng.choice([0, 8000, 40000, 200000, 1000000]), "messages": m,
              "maxTokens": rng.choice([1, 4096, 32000, 64000, 128000])} for m in transcripts]
    expected = oracle("clamp", cases)
    ours = [clamp_max_tokens_to_context(c["contextWindow"], estimate_context_tokens(c["messages"]), c["maxTokens"])
            for c in cases]
    assert ours == expected


# --- system replay and convertToLlm -----------------------------------------------------------

def test_system_replay_matches_pi_ai() -> None:
    rng = random.Random(5)
    tools = [{"name": n, "description": n, "parameters": {"type": "object"}} for n in ("read", "bash", "edit")]
    cases = []
    for _ in range(300):
        messages: list[dict[str, Any]] = []
        for position in range(rng.randint(0, 6)):
            if rng.random() < 0.6:
                message: dict[str, Any] = {"role": "system", "content": rng.choice(["", "extra", [
                    {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]]), "timestamp": position}
                if rng.random() < 0.7:
                    message["sections"] = {rng.choice("xyz"): rng.choice(["one", "", None]) for _ in range(2)}
                if rng.random() < 0.5:
                    message["toolsAdded"] = rng.sample(tools, rng.randint(0, 2))
                if rng.random() < 0.5:
                    message["toolsRemoved"] = [{"name": t["name"]} for t in rng.sample(tools, rng.randint(0, 2))]
                messages.append(message)
            else:
                messages.append({"role": "user", "content": "u", "timestamp": position})
        case: dict[str, Any] = {"messages": messages}
        if rng.random() < 0.7:
            case["systemPrompt"] = rng.choice(["", "You are pi."])
        if rng.random() < 0.5:
            case["tools"] = rng.sample(tools, rng.randint(0, 3))
        cases.append(case)
    expected = oracle("system", cases)
    for case, theirs in zip(cases, expected):
        request = build_request(TARGET, {"system_prompt": case.get("systemPrompt"), "tools": case.get("tools"),
                                         "messages": case["messages"]})
        assert (request.system_prompt or "") == theirs["prompt"], case
        assert as_json(request.tools or []) == as_json(theirs["tools"]), case


def test_convert_to_llm_matches_pi() -> None:
    rng = random.Random(13)
    cases = []
    for _ in range(200):
        messages: list[Any] = []
        for position in range(rng.randint(0, 8)):
            kind = rng.choice(["bash", "custom", "branch", "compaction", "user", "assistant", "toolResult", "system",
                               "unknown"])
            if kind == "bash":
                message: dict[str, Any] = {"role": "bashExecution", "command": rng.choice(["ls", "make test"]),
                                           "output": rng.choice(["", "ok\n", "line"]),
                                           "cancelled": rng.random() < 0.2, "truncated": rng.random() < 0.3,
                                           "timestamp": position}
                if rng.random() < 0.8:
                    message["exitCode"] = rng.choice([0, 1, 2, None])
                if rng.random() < 0.5:
                    message["fullOutputPath"] = "/tmp/full.txt"
                if rng.random() < 0.2:
                    message["excludeFromContext"] = True
            elif kind == "custom":
                message = {"role": "custom", "customType": "note", "display": True, "timestamp": position}
                if rng.random() < 0.9:
                    message["content"] = rng.choice(["text", [{"type": "text", "text": "t"}]])
            elif kind == "branch":
                message = {"role": "branchSummary", "summary": "went elsewhere", "fromId": "x", "timestamp": position}
            elif kind == "compaction":
                message = {"role": "compactionSummary", "summary": "## Goal\n- g", "tokensBefore": 9,
                           "timestamp": position}
            elif kind == "unknown":
                message = {"role": "hookMessage", "timestamp": position}
            else:
                message = {"role": kind, "content": "c", "timestamp": position}
            messages.append(message)
        cases.append(messages)
    expected = oracle("convert", cases)
    for messages, theirs in zip(cases, expected):
        assert as_json(convert_to_llm(messages)) == as_json(theirs), messages
