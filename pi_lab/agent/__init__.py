"""AgentSession: the agent loop over a session file, with pi's compaction and recovery.

``session.py`` holds :class:`AgentSession` (prompting, persistence, retries, the public API);
it is composed of ``run_state.py`` (what runs now; one registry of cancellable operations),
``transcript.py`` (which entry each message came from), ``compactor.py`` (the three check
points, overflow recovery, automatic and manual compaction) and ``tree_flow.py`` (``/tree`` and
``/fork``). ``loop.py`` is the session-free model/tool loop, ``tools.py`` the tool helpers.
Refusals raise :class:`pi_lab.errors.Refused`; the context gauge rule is
:func:`pi_lab.compaction.context_usage`.
"""

from pi_lab.agent.compactor import LENGTH_RETRY_FAILED, OVERFLOW_RETRY_FAILED, CompactionCancelled
from pi_lab.agent.session import ALREADY_PROCESSING, PROMPT_DURING_COMPACTION, AgentSession, SessionStats
from pi_lab.agent.tools import Tool, ToolError, ToolOutput, demo_tools, tool
from pi_lab.agent.tree_flow import (
    NAVIGATE_WHILE_COMPACTING,
    NAVIGATE_WHILE_RUNNING,
    ForkResult,
    InvalidEntry,
    NavigateResult,
)
from pi_lab.compaction.usage import ContextUsage

__all__ = [
    "AgentSession",
    "ContextUsage",
    "CompactionCancelled",
    "InvalidEntry",
    "NavigateResult",
    "ForkResult",
    "SessionStats",
    "Tool",
    "ToolOutput",
    "ToolError",
    "tool",
    "demo_tools",
    "OVERFLOW_RETRY_FAILED",
    "LENGTH_RETRY_FAILED",
    "PROMPT_DURING_COMPACTION",
    "ALREADY_PROCESSING",
    "NAVIGATE_WHILE_RUNNING",
    "NAVIGATE_WHILE_COMPACTING",
]
