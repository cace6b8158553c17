"""Run pi's own 1.6.0 compaction code (``pi_oracle.mjs``) for differential tests, and generate
random session branches to feed both implementations."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ORACLE = Path(__file__).with_name("pi_oracle.mjs")


class OracleUnavailable(Exception):
    pass


def ask(requests: list[dict]) -> list[dict]:
    """Answers of pi 1.6.0 for a batch of requests (see pi_oracle.mjs)."""
    node = shutil.which("node")
    if node is None:
        raise OracleUnavailable("node not found")
    proc = subprocess.run(
        [node, str(ORACLE)], input=json.dumps(requests, ensure_ascii=False), capture_output=True, text=True,
        timeout=300,
    )
    if proc.returncode == 3:
        raise OracleUnavailable(proc.stderr.strip())
    if proc.returncode != 0:
        raise RuntimeError(f"pi_oracle failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def plain(value: Any) -> Any:
    """A JSON round trip, so Python results compare with the oracle's."""
    return json.loads(json.dumps(value, ensure_ascii=False))


# --- random branches ----------------------------------------------------------------------------------

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
WORDS = ["fix", "the", "login", "bug", "é", "中文", "😀", "path/to/file.py", "error:", "\"quoted\"", "\n", "a" * 50]
PATHS = ["src/a.py", "src/b.py", "README.md", "docs/ü.md", "Z.txt", "😀.txt"]


class Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.n = 0
        self.t = 0

    def text(self, lo: int = 0, hi: int = 60) -> str:
        r = self.r
        out = " ".join(r.choice(WORDS) for _ in range(r.randint(lo, hi)))
        if r.random() < 0.1:
            out += "x" * r.randint(500, 6000)
        return out

    def new_id(self) -> str:
        self.n += 1
        return f"{self.n:04x}{self.r.randrange(16**4):04x}"

    def ts(self) -> str:
        self.t += 1
        moment = T0 + timedelta(seconds=self.t)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    def usage(self) -> dict:
        r = self.r
        if r.random() < 0.2:
            inp = out = 0
        else:
            inp, out = r.randint(0, 50000), r.randint(0, 3000)
        usage = {"input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": inp + out,
                 "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
        roll = r.random()
        if roll < 0.1:
            del usage["totalTokens"]  # old files: the four counters only
        elif roll < 0.15:
            del usage["totalTokens"], usage["cacheWrite"]  # a counter missing: NaN in JavaScript
        return usage

    def args(self, name: str) -> dict:
        r = self.r
        if name == "bash":
            return {"command": self.text(1, 5), "timeout": r.choice([1, 2.5, 60])}
        a = {"path": r.choice(PATHS + [""])}
        if name == "edit":
            a["oldText"], a["newText"] = self.text(0, 3), self.text(0, 3)
        if name == "write":
            a["content"] = self.text(0, 20)
        if r.random() < 0.1:
            a["10"] = "numeric key"
        return a

    def user_content(self) -> Any:
        r = self.r
        if r.random() < 0.5:
            return self.text()
        blocks: list[dict] = [{"type": "text", "text": self.text()}]
        if r.random() < 0.3:
            blocks.append({"type": "image", "data": "AAAA", "mimeType": "image/png"})
        return blocks

    def message(self, pending_calls: list[str]) -> dict:
        r = self.r
        kind = r.choices(["user", "assistant", "toolResult", "bash", "system"], [4, 5, 4, 1, 1])[0]
        if kind == "toolResult" and pending_calls:
            call_id = pending_calls.pop(0)
            msg = {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
                   "content": [{"type": "text", "text": self.text(0, 40)}], "isError": r.random() < 0.1,
                   "timestamp": self.t}
            if r.random() < 0.2:
                msg["content"].append({"type": "image", "data": "AAAA", "mimeType": "image/png"})
            if r.random() < 0.1:
                msg["nestedCalls"] = {"calls": [{"id": "n", "name": r.choice(["read", "edit", "write"]),
                                                 "arguments": {"path": r.choice(PATHS)}, "status": "ok"}],
                                      "complete": True}
            return msg
        if kind == "assistant":
            content: list[dict] = []
            if r.random() < 0.3:
                content.append({"type": "thinking", "thinking": self.text(0, 20)})
            if r.random() < 0.8:
                content.append({"type": "text", "text": self.text()})
            for _ in range(r.choice([0, 0, 1, 2])):
                name = r.choice(["read", "write", "edit", "bash"])
                call_id = f"call{self.n}_{len(content)}"
                content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": self.args(name)})
                pending_calls.append(call_id)
            return {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
                    "model": "claude-test", "usage": self.usage(),
                    "stopReason": r.choices(["stop", "toolUse", "length", "error", "aborted"], [6, 3, 1, 1, 1])[0],
                    "timestamp": self.t}
        if kind == "bash":
            msg = {"role": "bashExecution", "command": self.text(1, 4), "output": self.text(0, 30),
                   "exitCode": r.choice([0, 1, None]), "cancelled": False, "truncated": False, "timestamp": self.t}
            if r.random() < 0.3:
                msg["excludeFromContext"] = True
            return msg
        if kind == "system":
            msg = {"role": "system", "content": "", "sections": {r.choice(["base", "tools", "env"]): self.text(0, 10)},
                   "timestamp": self.t}
            if r.random() < 0.3:
                msg["toolsAdded"] = [{"name": r.choice(["read", "bash"]), "description": "d", "parameters": {}}]
            return msg
        return {"role": "user", "content": self.user_content(), "timestamp": self.t}

    def branch(self, length: int, *, edits: bool = True, compactions: bool = True) -> list[dict]:
        """A root-to-leaf path of ``length`` entries of every kind."""
        r = self.r
        entries: list[dict] = []
        pending: list[str] = []
        for _ in range(length):
            parent = entries[-1]["id"] if entries else None
            base = {"id": self.new_id(), "parentId": parent, "timestamp": self.ts()}
            roll = r.random()
            editable = [e["id"] for e in entries if e["type"] == "custom_message" or (
                e["type"] == "message" and e["message"]["role"] in ("user", "assistant", "toolResult"))]
            if roll < 0.62 or not entries:
                entry = {"type": "message", **base, "message": self.message(pending)}
            elif roll < 0.68:
                content = self.text() if r.random() < 0.5 else [{"type": "text", "text": self.text()}]
                entry = {"type": "custom_message", "customType": "ext", "content": content, "display": r.random() < 0.5,
                         **base}
            elif roll < 0.72:
                entry = {"type": "branch_summary", **base, "fromId": "root", "summary": self.text(0, 30)}
                if r.random() < 0.5:
                    entry["details"] = {"readFiles": [r.choice(PATHS)], "modifiedFiles": [r.choice(PATHS)]}
                    entry["fromHook"] = r.random() < 0.3
            elif roll < 0.77 and compactions:
                candidates = [e["id"] for e in entries]
                first_kept = r.choice(candidates + [base["id"]]) if candidates else base["id"]
                entry = {"type": "compaction", **base, "summary": self.text(1, 30), "firstKeptEntryId": first_kept,
                         "tokensBefore": r.randint(0, 100000)}
                if r.random() < 0.5:
                    entry["details"] = {"readFiles": [r.choice(PATHS)], "modifiedFiles": [r.choice(PATHS)]}
                    entry["fromHook"] = r.random() < 0.3
                if r.random() < 0.3:
                    entry["systemMessage"] = {"role": "system", "content": "snap", "sections": {"base": "b"},
                                              "timestamp": 5}
            elif roll < 0.86 and edits and editable:
                target = r.choice(editable[-6:])
                choice = r.random()
                if choice < 0.6:
                    replacement = None
                elif choice < 0.8:
                    replacement = {"content": self.text(0, 10)}
                else:
                    replacement = {"content": [{"type": "text", "text": self.text(0, 10)}]}
                entry = {"type": "context_edit", **base, "targetId": target, "replacement": replacement}
            else:
                kind = r.choice(["model_change", "thinking_level_change", "label", "custom", "session_info"])
                extra = {
                    "model_change": {"provider": "anthropic", "modelId": "claude-test"},
                    "thinking_level_change": {"thinkingLevel": "high"},
                    "label": {"targetId": entries[-1]["id"], "label": "mark"},
                    "custom": {"customType": "state", "data": {"n": 1}},
                    "session_info": {"name": "name"},
                }[kind]
                entry = {"type": kind, **base, **extra}
            entries.append(entry)
        return entries
