"""Generate Claude Code session files for tests and benchmarks (deterministic: same seed, same bytes).

Writes ``<out>/projects/<project>/<session id>.jsonl`` (a ``CLAUDE_CONFIG_DIR`` layout) with the
cases real files have and small fixtures rarely do: a rewind (a second branch from an earlier
prompt), two compactions, a microcompaction, sub-agents in both layouts (``subagents/agent-<id>.jsonl``
with its ``.meta.json``, and older ``isSidechain`` lines in the main file), streamed responses
whose parallel tool calls span several lines of one ``message.id``, unknown line types, a broken
line, a half-written last line, and (``hostile=True``) markup and bidi controls in every text field.

    python tools/generate_claude_sessions.py OUT [--seed N] [--turns N] [--hostile] [--sessions N]

The line shapes follow the facts in docs/formats.md; every line is written compact, as Claude
Code writes it (``"usage":{`` with no space: ccusage looks for exactly that).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import uuid as _uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HOSTILE = ("<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "\u202eevil\u202c", "\u2066iso\u2069",
           "**bold** `code` [link](javascript:alert(3))", "&lt;&amp;", "\u200b\ufeff", "</textarea><b>x</b>")
MODEL = "claude-sonnet-4-5-20250929"
SUB_MODEL = "claude-haiku-4-5-20251001"


class SeededWriter:
    """What every generator's writer needs, from its ``rng``, ``hostile`` and ``clock`` fields
    (the Codex generator's writer shares it): ids, texts (hostile on request) and times."""

    rng: random.Random
    hostile: bool
    clock: datetime

    def uid(self) -> str:
        return str(_uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def text(self, base: str) -> str:
        if not self.hostile:
            return base
        return f"{base} {self.rng.choice(HOSTILE)} {self.rng.choice(HOSTILE)}"

    def tick(self, seconds: float = 1.0) -> str:
        self.clock += timedelta(seconds=seconds)
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"


@dataclass
class _Writer(SeededWriter):
    rng: random.Random
    session_id: str
    cwd: str
    hostile: bool
    clock: datetime
    lines: list[bytes] = field(default_factory=list)


    def base(self, kind: str, parent: str | None, *, sidechain: bool = False, agent: str | None = None) -> dict[str, Any]:
        line: dict[str, Any] = {"parentUuid": parent, "isSidechain": sidechain, "userType": "external",
                                "cwd": self.text(self.cwd) if self.hostile else self.cwd,
                                "sessionId": self.session_id, "version": "2.0.76",
                                "gitBranch": self.text("main")}
        if agent:
            line["agentId"] = agent
        line["type"] = kind
        return line

    def emit(self, line: dict[str, Any]) -> None:
        self.lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    def user(self, parent: str | None, content: Any, **extra: Any) -> str:
        uid = self.uid()
        sidechain, agent = extra.pop("sidechain", False), extra.pop("agent", None)
        line = self.base("user", parent, sidechain=sidechain, agent=agent)
        line["message"] = {"role": "user", "content": content}
        line.update(extra)
        line["uuid"] = uid
        line["timestamp"] = self.tick()
        self.emit(line)
        return uid

    def response(self, parent: str | None, blocks: list[dict[str, Any]], *, model: str = MODEL,
                 sidechain: bool = False, agent: str | None = None, stop: str = "end_turn") -> tuple[str, dict[str, int]]:
        """One model call streamed as one line per content block (same message.id and requestId,
        chained by parentUuid); the usage repeats, its output count growing to the final one."""
        message_id = "msg_" + self.uid().replace("-", "")[:24]
        request_id = "req_" + self.uid().replace("-", "")[:24]
        usage = {"input_tokens": self.rng.randint(1, 40), "cache_creation_input_tokens": self.rng.randint(0, 3000),
                 "cache_read_input_tokens": self.rng.randint(0, 90000), "output_tokens": self.rng.randint(20, 900)}
        for index, block in enumerate(blocks):
            last = index == len(blocks) - 1
            uid = self.uid()
            line = self.base("assistant", parent, sidechain=sidechain, agent=agent)
            shown = dict(usage, output_tokens=usage["output_tokens"] if last else max(1, usage["output_tokens"] // 4))
            line["message"] = {"id": message_id, "type": "message", "role": "assistant", "model": model,
                               "content": [block], "stop_reason": stop if last else None, "stop_sequence": None,
                               "usage": {**shown, "service_tier": "standard"}}
            line["requestId"] = request_id
            line["uuid"] = uid
            line["timestamp"] = self.tick(0.4)
            self.emit(line)
            parent = uid
        assert parent is not None
        return parent, usage

    def tool_results(self, parent: str, calls: list[tuple[str, str]], **extra: Any) -> str:
        """One user line per tool result, chained (as Claude Code writes parallel results)."""
        for call_id, output in calls:
            parent = self.user(parent, [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
                               toolUseResult={"stdout": output, "stderr": "", "interrupted": False}, **extra)
        return parent

    def progress(self, parent: str, call_id: str, data: dict[str, Any]) -> str:
        uid = self.uid()
        line = self.base("progress", parent)
        line.update({"data": data, "toolUseID": "progress-" + call_id, "parentToolUseID": call_id,
                     "uuid": uid, "timestamp": self.tick(0.1)})
        self.emit(line)
        return uid

    def system(self, parent: str | None, subtype: str, **extra: Any) -> str:
        uid = self.uid()
        line = self.base("system", parent)
        line.update({"subtype": subtype, "level": "info", **extra, "uuid": uid, "timestamp": self.tick()})
        self.emit(line)
        return uid

    def other(self, line: dict[str, Any]) -> None:
        self.emit(line)


def _call(w: _Writer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_" + w.uid().replace("-", "")[:24], "name": name, "input": arguments}


def _turn(w: _Writer, parent: str | None, n: int) -> tuple[str, list[str]]:
    """A prompt, a streamed response with thinking, text and two parallel tool calls, their
    results (with a progress line), and a closing answer. Returns (last uuid, tool call ids)."""
    prompt = w.user(parent, w.text(f"Turn {n}: look at module {n} and fix what is broken."))
    calls = [_call(w, "Read", {"file_path": w.text(f"src/mod{n}.py")}), _call(w, "Bash", {"command": w.text(f"pytest -k mod{n}")})]
    blocks = [{"type": "thinking", "thinking": w.text(f"Module {n} needs a look."), "signature": "sig" + str(n)},
              {"type": "text", "text": w.text(f"Reading module {n} and running its tests.")}, *calls]
    last, _ = w.response(prompt, blocks, stop="tool_use")
    after_progress = w.progress(last, calls[1]["id"], {"type": "bash_progress", "output": w.text("running")})
    outputs = [(calls[0]["id"], w.text(f"def mod{n}():\n    return {n}\n" * 20)),
               (calls[1]["id"], w.text(f"{n} passed"))]
    result = w.tool_results(after_progress, outputs)
    answer, _ = w.response(result, [{"type": "text", "text": w.text(f"Module {n} is fixed.")}])
    return answer, [c["id"] for c in calls]


def _task(w: _Writer, parent: str, agent: str, layout: str, project_dir: Path | None) -> str:
    """A Task call whose sub-agent is written either in subagents/agent-<id>.jsonl or as
    isSidechain lines of the main file; returns the main chain's last uuid."""
    prompt = w.text(f"Survey the code for sub-agent {agent}.")
    call = _call(w, "Task", {"description": w.text("Survey"), "prompt": prompt, "subagent_type": "general-purpose"})
    last, _ = w.response(parent, [{"type": "text", "text": w.text("Starting a sub-agent.")}, call], stop="tool_use")
    if layout == "file":
        assert project_dir is not None
        sub = _Writer(w.rng, w.session_id, w.cwd, w.hostile, w.clock)
        first = sub.user(None, prompt, sidechain=True, agent=agent)
        grep = _call(sub, "Grep", {"pattern": sub.text("TODO")})
        a1, _ = sub.response(first, [grep], model=SUB_MODEL, sidechain=True, agent=agent, stop="tool_use")
        r1 = sub.tool_results(a1, [(grep["id"], sub.text("src/a.py:3: TODO"))], sidechain=True, agent=agent)
        sub.response(r1, [{"type": "text", "text": sub.text(f"Sub-agent {agent} report.")}], model=SUB_MODEL,
                     sidechain=True, agent=agent)
        w.clock = sub.clock
        folder = project_dir / w.session_id / "subagents"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"agent-{agent}.jsonl").write_bytes(b"".join(sub.lines))
        (folder / f"agent-{agent}.meta.json").write_text(
            json.dumps({"agentType": "general-purpose", "description": "Survey", "toolUseId": call["id"]}) + "\n")
        last = w.progress(last, call["id"], {"type": "agent_progress", "agentId": agent})
    else:
        first = w.user(None, prompt, sidechain=True, agent=agent)
        w.response(first, [{"type": "text", "text": w.text(f"Sidechain {agent} report.")}], model=SUB_MODEL,
                   sidechain=True, agent=agent)
    return w.user(last, [{"type": "tool_result", "tool_use_id": call["id"],
                          "content": [{"type": "text", "text": w.text(f"Report of {agent}.")}]}],
                  toolUseResult={"status": "completed", "agentId": agent, "content": []})


def generate_session(project_dir: Path, *, seed: int = 0, turns: int = 6, hostile: bool = False,
                     broken: bool = True) -> Path:
    """Write one session (and its sub-agent files) into ``project_dir``; return its path."""
    rng = random.Random(seed)
    session_id = str(_uuid.UUID(int=rng.getrandbits(128), version=4))
    start = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc) + timedelta(hours=seed % 48)
    w = _Writer(rng, session_id, "/home/user/project", hostile, start)
    project_dir.mkdir(parents=True, exist_ok=True)
    w.other({"type": "summary", "summary": w.text("An earlier session's title"), "leafUuid": w.uid()})
    parent: str | None = None
    cleared: list[str] = []
    rewind_from = None
    for n in range(1, turns + 1):
        parent, calls = _turn(w, parent, n)
        cleared.extend(calls[:1])
        w.other({"type": "file-history-snapshot", "messageId": parent, "isSnapshotUpdate": False,
                 "snapshot": {"messageId": parent, "trackedFileBackups": {}, "timestamp": w.tick(0.1)}})
        if n == 1:
            rewind_from = parent
        if n == 2:
            parent = _task(w, parent, f"a{seed:04d}f", "file", project_dir)
        if n == 3:
            parent = _task(w, parent, f"a{seed:04d}s", "sidechain", None)
        if n == 3:
            parent = w.system(parent, "microcompact_boundary", content="Context microcompacted", microcompactMetadata={
                "trigger": "auto", "preTokens": 120000, "tokensSaved": 9000, "compactedToolIds": list(cleared),
                "clearedAttachmentUUIDs": []})
        if n in (4, max(5, turns)):
            boundary = w.system(None, "compact_boundary", content="Conversation compacted", logicalParentUuid=parent,
                                compactMetadata={"trigger": "auto" if n == 4 else "manual", "preTokens": 150000 + n})
            parent = w.user(boundary, w.text(f"This session is being continued from a previous conversation. Summary {n}."),
                            isCompactSummary=True, isVisibleInTranscriptOnly=True)
    # A rewind: an edited prompt from the first answer, written last in time but on an old
    # branch; then the main branch is resumed (its line is the latest by timestamp).
    assert rewind_from is not None
    side = w.user(rewind_from, w.text("Edited prompt: try another way."))
    w.response(side, [{"type": "text", "text": w.text("Another way.")}])
    w.other({"type": "custom-title", "customTitle": w.text(f"Generated session {seed}"), "sessionId": session_id})
    w.other({"type": "mode", "mode": "plan", "sessionId": session_id})
    w.other({"type": "future-line-type", "uuid": w.uid(), "parentUuid": parent, "timestamp": w.tick(), "payload": {"x": 1}})
    w.system(parent, "turn_duration", durationMs=1234)
    final = w.user(parent, w.text("Resume: one last check."))
    w.response(final, [{"type": "text", "text": w.text("All checks pass.")}])
    data = b"".join(w.lines)
    if broken:
        cut = data.rfind(b"\n", 0, len(data) - 1) + 1
        data = data[:cut] + b"{not json at all\n" + data[cut:]
        data += b'{"type":"assistant","uuid":"half-writ'  # a line still being written
    path = project_dir / f"{session_id}.jsonl"
    path.write_bytes(data)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="a CLAUDE_CONFIG_DIR to write projects/<project>/ into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--sessions", type=int, default=1)
    parser.add_argument("--hostile", action="store_true")
    args = parser.parse_args(argv)
    project = Path(args.out) / "projects" / "-home-user-project"
    for i in range(args.sessions):
        path = generate_session(project, seed=args.seed + i, turns=args.turns, hostile=args.hostile)
        print(os.fspath(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
