"""Generate Codex CLI rollout files for tests and benchmarks (deterministic: same seed, same bytes).

Writes ``<out>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`` (a ``CODEX_HOME`` layout) with the
cases real rollouts have and small fixtures rarely do: developer and injected environment
messages, reasoning with a summary and with only encrypted content, function, custom-tool and
local-shell calls with their outputs, a model change, a token count repeated with unchanged
totals, a compaction with ``replacement_history``, event lines, unknown line and item types,
(``fork=True``) a fork whose file begins with a re-stamped copy of its parent, (``hostile=True``)
markup and bidi controls in every text field, and (``torn=True``) a half-written last line.

    python tools/generate_codex_sessions.py OUT [--seed N] [--turns N] [--hostile] [--sessions N]

The line shapes follow the facts in docs/formats.md ("Codex CLI rollouts"); lines are written compact, as Codex's
serde_json writes them.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_claude_sessions import SeededWriter  # noqa: E402  (one list of hostile strings, one writer base)

MODELS = ("gpt-5-codex", "gpt-5")
WINDOW = 272000


def _usage(inp: int, cached: int, out: int, reasoning: int) -> dict[str, int]:
    return {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
            "reasoning_output_tokens": reasoning, "total_tokens": inp + out}


@dataclass
class _Writer(SeededWriter):
    rng: random.Random
    hostile: bool
    clock: datetime
    lines: list[dict[str, Any]] = field(default_factory=list)
    total: dict[str, int] = field(default_factory=lambda: _usage(0, 0, 0, 0))
    context: int = 3000

    def add(self, kind: str, payload: dict[str, Any], seconds: float = 1.0) -> None:
        self.lines.append({"timestamp": self.tick(seconds), "type": kind, "payload": payload})

    def item(self, payload: dict[str, Any]) -> None:
        self.add("response_item", payload)

    def event(self, payload: dict[str, Any]) -> None:
        self.add("event_msg", payload, 0.1)

    def message(self, role: str, text: str) -> None:
        part = "output_text" if role == "assistant" else "input_text"
        self.item({"type": "message", "role": role, "content": [{"type": part, "text": text}]})

    def call_done(self, *, repeat: bool = False) -> None:
        """One model call's token count (``last_token_usage``; input includes the cached part)."""
        grow = self.rng.randint(200, 2000)
        out = self.rng.randint(20, 400)
        reasoning = self.rng.randint(0, out)
        cached = self.context - self.rng.randint(0, min(500, self.context))
        last = _usage(self.context + grow, cached, out, reasoning)
        self.context += grow + out
        self.total = {k: self.total[k] + last[k] for k in self.total}
        info = {"total_token_usage": dict(self.total), "last_token_usage": last, "model_context_window": WINDOW}
        self.event({"type": "token_count", "info": info, "rate_limits": None})
        if repeat:
            # Codex sends the same count again (e.g. with a rate-limit update): totals unchanged.
            self.event({"type": "token_count", "info": info, "rate_limits": {"primary": {"used_percent": 1.0}}})


def _meta(w: _Writer, session_id: str, cwd: str, **extra: Any) -> dict[str, Any]:
    return {"id": session_id, "timestamp": w.tick(0), "cwd": w.text(cwd) if w.hostile else cwd,
            "originator": "codex_cli_rs", "cli_version": "0.63.0", "instructions": w.text("Be terse."),
            "source": "cli", "model_provider": "openai",
            "git": {"commit_hash": "0" * 40, "branch": w.text("main"), "repository_url": "https://example.invalid/r.git"},
            **extra}


def _turn_context(w: _Writer, cwd: str, model: str) -> None:
    w.add("turn_context", {"cwd": cwd, "approval_policy": "on-request",
                           "sandbox_policy": {"type": "workspace-write", "network_access": False},
                           "model": model, "effort": "medium", "summary": "auto"})


def _turn(w: _Writer, n: int, cwd: str) -> None:
    """One user turn: prompt, a call that reasons and runs tools, then the answer."""
    prompt = w.text(f"task {n}: fix the failing test")
    w.message("user", prompt)
    w.event({"type": "user_message", "message": prompt, "images": []})
    w.event({"type": "task_started", "model_context_window": WINDOW})
    w.item({"type": "reasoning", "summary": [{"type": "summary_text", "text": w.text(f"**Plan {n}**")}],
            "content": None, "encrypted_content": "gAAAA" + "x" * w.rng.randint(20, 60)})
    w.event({"type": "agent_reasoning", "text": w.text(f"**Plan {n}**")})
    call = f"call_{w.uid()[:12]}"
    kind = n % 3
    if kind == 0:
        w.item({"type": "function_call", "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", w.text("pytest -q")], "workdir": cwd}),
                "call_id": call})
    elif kind == 1:
        w.item({"type": "custom_tool_call", "status": "completed", "call_id": call, "name": "apply_patch",
                "input": w.text("*** Begin Patch\n*** Update File: a.py\n-x\n+y\n*** End Patch")})
    else:
        w.item({"type": "local_shell_call", "call_id": call, "status": "completed",
                "action": {"type": "exec", "command": ["ls", "-la"], "timeout_ms": 10000,
                           "working_directory": cwd, "env": None, "user": None}})
    w.call_done(repeat=n == 1)
    w.event({"type": "exec_command_begin", "call_id": call, "command": ["bash", "-lc", "pytest -q"], "cwd": cwd})
    w.event({"type": "exec_command_end", "call_id": call, "stdout": w.text("1 passed"), "stderr": "",
             "exit_code": 0, "formatted_output": w.text("1 passed")})
    output_kind = "custom_tool_call_output" if kind == 1 else "function_call_output"
    w.item({"type": output_kind, "call_id": call,
            "output": json.dumps({"output": w.text("1 passed"), "metadata": {"exit_code": 0, "duration_seconds": 0.4}})})
    # The second call of the turn: reasoning the file cannot show (encrypted only), then the answer.
    w.item({"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAA" + "y" * 40})
    answer = w.text(f"Done with task {n}.")
    w.message("assistant", answer)
    w.event({"type": "agent_message", "message": answer})
    w.call_done()
    w.event({"type": "task_complete", "last_agent_message": answer})


def _compaction(w: _Writer, cwd: str) -> None:
    summary = w.text("Summary: the tests pass; a.py was patched.")
    first_user = next(line["payload"] for line in w.lines if line["type"] == "response_item"
                      and line["payload"].get("role") == "user" and "task" in json.dumps(line["payload"]))
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"}]},
        first_user,
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]},
    ]
    w.add("compacted", {"message": summary, "replacement_history": history})
    w.event({"type": "context_compacted"})
    w.context = 900


def generate_session(home: Path, *, seed: int = 0, turns: int = 4, hostile: bool = False, torn: bool = False,
                     fork: bool = False, start: datetime | None = None) -> list[Path]:
    """Write one session (and, with ``fork``, a fork of it) under ``home/sessions``; returns the
    paths, parent first."""
    rng = random.Random(seed)
    clock = start or datetime(2026, 1, 5, 9, 0, 0, tzinfo=timezone.utc) + timedelta(days=seed % 20, minutes=seed)
    w = _Writer(rng, hostile, clock)
    session_id = w.uid()
    cwd = "/work/project"
    w.add("session_meta", _meta(w, session_id, cwd), 0)
    _turn_context(w, cwd, MODELS[0])
    w.item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": w.text("<permissions instructions>workspace-write</permissions instructions>")}]})
    w.message("user", w.text("<user_instructions>\nRun tests before answering.\n</user_instructions>"))
    w.message("user", f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n</environment_context>")
    for n in range(turns):
        if n == turns // 2:
            _turn_context(w, cwd, MODELS[1])  # the user switched models
        _turn(w, n, cwd)
        if n == turns // 2:
            _compaction(w, cwd)
            _turn_context(w, cwd, MODELS[1])
    w.add("mystery_line", {"note": w.text("a line type from a newer Codex")})
    w.item({"type": "ghost_snapshot", "ghost_commit": {"id": "abc", "parent": None}})
    paths = [_write(home, w, session_id, torn)]
    if fork:
        paths.append(_fork(home, w, rng, cwd, session_id, hostile))
    return paths


def _fork(home: Path, parent: _Writer, rng: random.Random, cwd: str, parent_id: str, hostile: bool) -> Path:
    """A fork: its own session_meta (``forked_from_id``), then the parent's lines re-stamped with
    the fork's creation time, then its own turn."""
    w = _Writer(rng, hostile, parent.clock + timedelta(minutes=30))
    w.total = dict(parent.total)
    w.context = parent.context
    fork_id = w.uid()
    w.add("session_meta", _meta(w, fork_id, cwd, forked_from_id=parent_id), 0)
    stamp = w.lines[0]["timestamp"]
    copied = [line for line in parent.lines if line["type"] != "mystery_line"]
    w.lines.extend({**line, "timestamp": stamp} for line in copied)
    _turn_context(w, cwd, MODELS[0])
    _turn(w, 99, cwd)
    return _write(home, w, fork_id, False)


def _write(home: Path, w: _Writer, session_id: str, torn: bool) -> Path:
    first = datetime.strptime(w.lines[0]["timestamp"][:19], "%Y-%m-%dT%H:%M:%S")
    folder = home / "sessions" / first.strftime("%Y/%m/%d")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{first.strftime('%Y-%m-%dT%H-%M-%S')}-{session_id}.jsonl"
    data = b"".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for line in w.lines)
    if torn:
        data += b'{"timestamp":"2026-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"mess'
    path.write_bytes(data)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the CODEX_HOME to write into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=1)
    parser.add_argument("--hostile", action="store_true")
    args = parser.parse_args(argv)
    for i in range(args.sessions):
        for path in generate_session(args.out, seed=args.seed + i, turns=args.turns, hostile=args.hostile,
                                     fork=i == 0, torn=i == args.sessions - 1 and args.sessions > 1):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
