"""Context windows of well-known models, for gauges of sessions pi_lab did not run itself.

A session file names the model that answered (``provider``/``model`` on assistant messages) but
not its limits. When a viewer opens a recorded session it needs a window to draw the gauge
against; this table gives a sensible one for the common model families, matched by id prefix
(longest first), and ``None`` for anything unknown (callers then ask the user or fall back).
The figures are the providers' published input+output windows.
"""

from __future__ import annotations

__all__ = ["KNOWN_CONTEXT_WINDOWS", "context_window_for"]

# (model id prefix, context window in tokens)
KNOWN_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3", 200_000),
    ("claude-", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("codex-", 400_000),
    ("gemini-2.5", 1_048_576),
    ("gemini-2.0", 1_048_576),
    ("gemini-1.5-pro", 2_097_152),
    ("grok-4", 256_000),
    ("grok-code", 256_000),
    ("deepseek", 128_000),
    ("kimi-k2", 262_144),
    ("qwen3-coder", 262_144),
    ("glm-4.6", 200_000),
    ("glm-4.5", 128_000),
)


def context_window_for(model_id: str | None) -> int | None:
    """The published context window of ``model_id`` (``provider/`` prefixes are ignored)."""
    if not model_id:
        return None
    name = model_id.rsplit("/", 1)[-1].lower()
    best: tuple[int, int] | None = None
    for prefix, window in KNOWN_CONTEXT_WINDOWS:
        if name.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), window)
    return best[1] if best else None
