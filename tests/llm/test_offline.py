"""OfflineModel: the deterministic, scriptable stand-in model (no key, no network)."""

from __future__ import annotations

import asyncio
import math
import re
import threading

import pytest

from pi_lab.llm import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    OFFLINE_MODEL,
    FaultReply,
    ModelClient,
    OfflineModel,
    StreamDone,
    StreamError,
    StreamStart,
    TextDelta,
    ToolCallEvent,
    ToolCallReply,
    is_context_overflow,
    is_recoverable_length,
    is_retryable_assistant_error,
)

CLOCK = 1_753_779_600_000


def offline(*script, **kwargs) -> OfflineModel:
    return OfflineModel(script, clock=lambda: CLOCK, **kwargs)


def ask(text: str, system: str | None = "You are pi.") -> dict:
    return {"system_prompt": system, "messages": [{"role": "user", "content": [{"type": "text", "text": text}],
                                                   "timestamp": 1}]}


def events(model: OfflineModel, context: dict, **options) -> list:
    async def run() -> list:
        return [event async for event in model.stream(None, context, **options)]
    return asyncio.run(run())


def text_of(message: dict) -> str:
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


# --- the model and the protocol ---------------------------------------------------------------

def test_model_description() -> None:
    assert (OFFLINE_MODEL.provider, OFFLINE_MODEL.id, OFFLINE_MODEL.api) == ("pi-lab", "offline", "offline")
    assert (OFFLINE_MODEL.context_window, OFFLINE_MODEL.max_tokens) == (128000, 4096)
    assert offline(context_window=32000).model.context_window == 32000
    import pi_lab.llm.offline as module
    assert "not a language model" in module.__doc__  # said plainly


def test_implements_the_client_protocol_with_streamed_deltas() -> None:
    model = offline()
    assert isinstance(model, ModelClient)
    stream = events(model, ask("Please summarise the README and list its sections."))
    assert isinstance(stream[0], StreamStart) and isinstance(stream[-1], StreamDone)
    deltas = [e for e in stream if isinstance(e, TextDelta)]
    assert len(deltas) >= 2
    message = stream[-1].message
    assert message is stream[0].message
    assert "".join(d.delta for d in deltas) == text_of(message)
    assert list(message) == ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"]
    assert (message["provider"], message["model"], message["api"]) == ("pi-lab", "offline", "offline")
    assert message["timestamp"] == CLOCK


def test_unscripted_answer_restates_the_request_deterministically() -> None:
    first = offline().complete_sync(None, ask("Rename foo() to bar() in src/app.py"))
    second = offline().complete_sync(None, ask("Rename foo() to bar() in src/app.py"))
    assert first == second
    assert "Rename foo() to bar() in src/app.py" in text_of(first)
    assert "no language model ran" in text_of(first)
    assert first["stopReason"] == "stop"


def test_tool_results_are_acknowledged() -> None:
    context = {"system_prompt": None, "messages": [
        {"role": "user", "content": "read it", "timestamp": 1},
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}],
         "api": "offline", "provider": "pi-lab", "model": "offline", "usage": {}, "stopReason": "toolUse",
         "timestamp": 2},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "abcd"}],
         "isError": False, "timestamp": 3},
    ]}
    assert text_of(offline().complete_sync(None, context)).startswith("`read` returned a result of 4 characters")


def test_usage_estimates_request_and_reply_like_pi() -> None:
    system = "You are pi."
    question = "How do I run the tests?"
    message = offline().complete_sync(None, ask(question, system))
    usage = message["usage"]
    assert usage["input"] == math.ceil((len(system) + len(question)) / 4)
    assert usage["output"] == math.ceil(len(text_of(message)) / 4)
    assert usage["totalTokens"] == usage["input"] + usage["output"]
    assert usage["cost"]["total"] == 0
    # More context, more input tokens; UTF-16 units count (an emoji is two).
    bigger = offline().complete_sync(None, ask(question + " 😀" * 100, system))
    assert bigger["usage"]["input"] == math.ceil((len(system) + len(question) + 300) / 4)


def test_requests_are_recorded() -> None:
    model = offline()
    model.complete_sync(None, ask("hi"), reasoning="high", session_id="s-1")
    [call] = model.calls
    assert call.max_tokens is None and call.reasoning == "high" and call.session_id == "s-1"
    assert call.context["messages"][0]["content"][0]["text"] == "hi"
    assert call.model is model.model


def test_the_model_argument_names_the_answering_model() -> None:
    from pi_lab.llm import Model
    disguised = Model("anthropic", "claude-test", "anthropic-messages", 200000, 64000)
    message = offline().complete_sync(disguised, ask("hi"))
    assert (message["provider"], message["model"]) == ("anthropic", "claude-test")


# --- scripts ----------------------------------------------------------------------------------

def test_script_replies_in_order_then_falls_back() -> None:
    model = offline("first", ToolCallReply("read", {"path": "src/app.py"}, text="Let me look."), "third")
    first = model.complete_sync(None, ask("a"))
    stream = events(model, ask("b"))
    third = model.complete_sync(None, ask("c"))
    fourth = model.complete_sync(None, ask("d"))
    assert text_of(first) == "first"
    [call] = [e for e in stream if isinstance(e, ToolCallEvent)]
    assert call.tool_call == {"type": "toolCall", "id": "offline_call_1", "name": "read",
                              "arguments": {"path": "src/app.py"}}
    assert stream[-1].message["stopReason"] == "toolUse"
    assert text_of(stream[-1].message) == "Let me look."
    assert text_of(third) == "third"
    assert '"d"' in text_of(fourth)


def test_overflow_fault_reads_like_a_provider() -> None:
    model = offline(FaultReply("overflow"), context_window=200000)
    message = model.complete_sync(None, ask("x"))
    assert message["stopReason"] == "error"
    assert re.fullmatch(r"400 prompt is too long: \d+ tokens > 200000 maximum", message["errorMessage"])
    assert is_context_overflow(message, 200000) is True
    assert is_retryable_assistant_error(message) is False


@pytest.mark.parametrize("kind", ["rate_limit", "overloaded", "terminated"])
def test_transient_faults_are_retryable(kind: str) -> None:
    message = offline(FaultReply(kind)).complete_sync(None, ask("x"))
    assert message["stopReason"] == "error"
    assert is_retryable_assistant_error(message) is True
    assert is_context_overflow(message, 128000) is False


def test_length_fault_reports_the_full_budget_unless_told_otherwise() -> None:
    full = offline(FaultReply("length")).complete_sync(None, ask("x"))
    short = offline(FaultReply("length", text="Trunc", output_tokens=16)).complete_sync(None, ask("x"), max_tokens=500)
    assert full["stopReason"] == "length" and full["usage"]["output"] == 4096
    assert is_recoverable_length(full, 4096) is False  # a normal truncated answer
    assert text_of(short) == "Trunc" and is_recoverable_length(short, 4096) is True  # context pressure


def test_aborted_and_custom_error_faults() -> None:
    aborted = offline(FaultReply("aborted")).complete_sync(None, ask("x"))
    custom = offline(FaultReply("error", message="insufficient_quota")).complete_sync(None, ask("x"))
    assert (aborted["stopReason"], aborted["errorMessage"]) == ("aborted", "Request was aborted")
    assert (custom["stopReason"], custom["errorMessage"]) == ("error", "insufficient_quota")
    with pytest.raises(ValueError):
        FaultReply("meteor")


def test_cancel_flag_aborts() -> None:
    cancel = threading.Event()
    cancel.set()
    message = offline().complete_sync(None, ask("a long request " * 10), cancel=cancel)
    assert message["stopReason"] == "aborted"


def test_answers_longer_than_the_cap_stop_with_length() -> None:
    message = offline("word " * 100).complete_sync(None, ask("x"), max_tokens=10)
    assert message["stopReason"] == "length"
    assert len(text_of(message)) == 40
    assert message["usage"]["output"] == 10


def test_failures_are_streamed_as_error_events() -> None:
    stream = events(offline(FaultReply("overloaded", text="Partial")), ask("x"))
    assert isinstance(stream[-1], StreamError)
    assert text_of(stream[-1].message) == "Partial"


# --- summaries --------------------------------------------------------------------------------

HISTORY_INSTRUCTIONS = (
    "The messages above are a conversation to summarize. Use this EXACT format:\n\n## Goal\n...\n"
    "## Constraints & Preferences\n...\n## Progress\n### Done\n### In Progress\n### Blocked\n"
    "## Key Decisions\n## Next Steps\n## Critical Context\n..."
)
BRANCH_INSTRUCTIONS = (
    "Create a structured summary of this conversation branch. Use this EXACT format:\n\n## Goal\n"
    "## Constraints & Preferences\n## Progress\n### Done\n### In Progress\n### Blocked\n## Key Decisions\n"
    "## Next Steps"
)

CONVERSATION = "\n\n".join([
    "[User]: Add rate limiting to the API server in src/server/app.py. It must not break the existing tests, "
    "and please don't add new dependencies.",
    "[Assistant]: I'll start by reading the server code.",
    '[Assistant tool calls]: read(path="src/server/app.py")',
    "[Tool result]: from flask import Flask\napp = Flask(__name__)",
    "[Assistant]: I decided to use a token bucket because it handles bursts. "
    "Implemented the limiter in `RateLimiter.allow()` and added it to app.py.",
    "[User]: Now run the test suite.",
    '[Assistant tool calls]: bash(command="pytest -q")',
    "[Tool result]: FAILED tests/test_app.py::test_burst - AssertionError: expected 429",
])

SECTIONS = ["## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress", "### Blocked",
            "## Key Decisions", "## Next Steps", "## Critical Context"]


def section(summary: str, heading: str) -> str:
    start = summary.index(heading + "\n") + len(heading) + 1
    following = [summary.find("\n#", start)]
    return summary[start:following[0] if following[0] >= 0 else len(summary)].strip()


def summarise(text: str, **kwargs) -> str:
    message = offline(**kwargs).complete_sync(None, {
        "system_prompt": "You are a context summarization assistant. Output only the structured summary.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}]})
    assert message["stopReason"] == "stop"
    return text_of(message)


def test_history_summary_fills_every_section_from_the_conversation() -> None:
    summary = summarise(f"<conversation>\n{CONVERSATION}\n</conversation>\n\n{HISTORY_INSTRUCTIONS}")
    positions = [summary.index(heading + "\n") for heading in SECTIONS]
    assert positions == sorted(positions)
    assert "Add rate limiting to the API server" in section(summary, "## Goal")
    constraints = section(summary, "## Constraints & Preferences")
    assert "must not break the existing tests" in constraints and "don't add new dependencies" in constraints
    assert "- [x] Implemented the limiter in `RateLimiter.allow()` and added it to app.py." in section(
        summary, "### Done")
    assert "- [ ] Now run the test suite." in section(summary, "### In Progress")
    assert "expected 429" in section(summary, "### Blocked")
    assert "**I decided to use a token bucket**: it handles bursts." in section(summary, "## Key Decisions")
    assert section(summary, "## Next Steps").startswith("1. Now run the test suite.")
    context = section(summary, "## Critical Context")
    for item in ("`src/server/app.py`", "`RateLimiter.allow()`", "`tests/test_app.py`"):
        assert item in context


def test_summary_is_deterministic_and_extractive() -> None:
    request = f"<conversation>\n{CONVERSATION}\n</conversation>\n\n{HISTORY_INSTRUCTIONS}"
    summary = summarise(request)
    assert summary == summarise(request)
    for line in summary.splitlines():
        item = re.sub(r"^(- \[[ x]\] |- |\d+\. )", "", line).replace("**", "").strip("`")
        if not line or line.startswith("#") or item == "(none)":
            continue
        words = [w for w in re.findall(r"[A-Za-z]{4,}", item) if w not in ("stated", "user", "assistant", "Tool",
                                                                            "error", "Wait", "next", "request")]
        assert all(w in CONVERSATION for w in words), line  # nothing invented


def test_previous_summary_is_merged() -> None:
    previous = summarise(f"<conversation>\n{CONVERSATION}\n</conversation>\n\n{HISTORY_INSTRUCTIONS}")
    update = "\n\n".join([
        "[Assistant]: Fixed the burst test: all tests pass now.",
        "[User]: Next, document the limiter in README.md.",
    ])
    summary = summarise(f"<conversation>\n{update}\n</conversation>\n\n<previous-summary>\n{previous}\n"
                        f"</previous-summary>\n\n{HISTORY_INSTRUCTIONS}")
    assert "Add rate limiting to the API server" in section(summary, "## Goal")  # goals preserved
    done = section(summary, "### Done")
    assert "Implemented the limiter" in done and "Fixed the burst test" in done
    assert "Now run the test suite." in done  # moved from In Progress: the tests pass now
    assert "expected 429" not in section(summary, "### Blocked")  # resolved
    assert "document the limiter in README.md" in section(summary, "### In Progress")
    assert "token bucket" in section(summary, "## Key Decisions")  # decisions kept
    assert "`src/server/app.py`" in section(summary, "## Critical Context")
    assert "`README.md`" in section(summary, "## Critical Context")


def test_branch_summary_has_no_critical_context() -> None:
    summary = summarise(f"<conversation>\n{CONVERSATION}\n</conversation>\n\n{BRANCH_INSTRUCTIONS}")
    assert "## Critical Context" not in summary
    assert summary.startswith("## Goal\n")
    assert "## Next Steps\n1. " in summary


def test_turn_prefix_summary() -> None:
    text = f"# Conversation\n{CONVERSATION}\n\n# Instructions\nSummarize the prefix.\n\nAdditional focus: the tests"
    summary = summarise(text)
    assert [line for line in summary.splitlines() if line.startswith("## ")] == [
        "## Original Request", "## Progress So Far", "## Context Needed to Continue"]
    assert section(summary, "## Original Request").startswith("Add rate limiting to the API server")
    progress = section(summary, "## Progress So Far")
    assert 'Called read(path="src/server/app.py")' in progress and "Implemented the limiter" in progress
    assert "Requested focus: the tests" in section(summary, "## Context Needed to Continue")


def test_summaries_pi_inserted_earlier_are_carried_forward() -> None:
    earlier = "## Goal\n- Build the parser\n\n## Progress\n### In Progress\n- [ ] Write lexer tests"
    conversation = "\n\n".join([
        f"[User]: {COMPACTION_SUMMARY_PREFIX}{earlier}{COMPACTION_SUMMARY_SUFFIX}",
        f"[User]: {BRANCH_SUMMARY_PREFIX}Tried a regex lexer; abandoned.{BRANCH_SUMMARY_SUFFIX}",
        "[Assistant]: The lexer tests are written and pass.",
    ])
    summary = summarise(f"<conversation>\n{conversation}\n</conversation>\n\n{HISTORY_INSTRUCTIONS}")
    assert section(summary, "## Goal") == "- Build the parser"
    assert "Write lexer tests" in section(summary, "### Done")
    assert "Summary of another branch: Tried a regex lexer; abandoned." in section(summary, "## Critical Context")


def test_seed_worked_example_summary() -> None:
    """Explainer §14: the messages compaction C1 summarises (everything before U4)."""
    conversation = "\n\n".join([
        "[User]: 检查认证实现",
        '[Assistant tool calls]: read(path="auth.ts")',
        "[Tool result]: ...",
        "[Assistant]: 认证逻辑已定位",
        f"[User]: {BRANCH_SUMMARY_PREFIX}离开的 JWT 路径已完成认证改造。{BRANCH_SUMMARY_SUFFIX}",
        "[User]: 改成 session cookie",
        "[Assistant]: cookie 方案已完成",
        "[User]: 补充测试",
        "[Assistant]: 测试已补充",
    ])
    summary = summarise(f"<conversation>\n{conversation}\n</conversation>\n\n{HISTORY_INSTRUCTIONS}")
    assert section(summary, "## Goal") == "- 检查认证实现"
    assert section(summary, "### Done").splitlines() == ["- [x] 认证逻辑已定位", "- [x] cookie 方案已完成",
                                                         "- [x] 测试已补充"]
    assert section(summary, "### In Progress") == "(none)"
    assert section(summary, "## Key Decisions") == "- **改成 session cookie**: stated by the user"
    context = section(summary, "## Critical Context")
    assert "`auth.ts`" in context and "离开的 JWT 路径已完成认证改造" in context


def test_a_summary_longer_than_the_cap_is_cut_with_length() -> None:
    message = offline(max_tokens=50).complete_sync(None, {"system_prompt": None, "messages": [
        {"role": "user", "content": f"<conversation>\n{CONVERSATION}\n</conversation>\n\n{HISTORY_INSTRUCTIONS}",
         "timestamp": 1}]})
    assert message["stopReason"] == "length"  # a truncated summary, which compaction must reject


def test_summary_requests_do_not_consume_the_script() -> None:
    model = offline("agent answer")
    summary_request = f"<conversation>\n{CONVERSATION}\n</conversation>\n\n{HISTORY_INSTRUCTIONS}"
    summary = model.complete_sync(None, ask(summary_request))
    assert text_of(summary).startswith("## Goal")
    assert text_of(model.complete_sync(None, ask("next"))) == "agent answer"


def test_summary_script_scripts_summarisation_failures() -> None:
    model = offline(summary_script=[FaultReply("terminated"), "## Goal\nrecovered summary"])
    summary_request = f"<conversation>\n{CONVERSATION}\n</conversation>\n\n{HISTORY_INSTRUCTIONS}"
    first = model.complete_sync(None, ask(summary_request))
    second = model.complete_sync(None, ask(summary_request))
    third = model.complete_sync(None, ask(summary_request))
    assert first["errorMessage"] == "terminated" and is_retryable_assistant_error(first)
    assert text_of(second) == "## Goal\nrecovered summary"
    assert "Add rate limiting" in text_of(third)  # the script is used up: a real extractive summary
    assert '"agent' not in repr(model)
