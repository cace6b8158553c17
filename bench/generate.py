#!/usr/bin/env python3
"""Deterministic generator of synthetic pi 1.6.0 session files.

    python bench/generate.py --entries 10000 --out bench/out/s10k.jsonl [--seed 1]
    python bench/generate.py --linear 1000000 --out bench/out/linear1m.jsonl

The default mode simulates an agent session the way pi's AgentSession writes one: a v3 header,
a system prompt message, turns of user prompts, assistant replies with thinking, text and tool
calls (read / write / edit / bash with realistic arguments), tool results (some very long),
usage with a growing context, model and thinking-level changes, labels, session names, navigation
back up the tree (with and without a branch summary), automatic compactions with a correct
`firstKeptEntryId`, and failed attempts (`stopReason: "error"`) dropped by a `context_edit`.
The same seed always gives the same bytes: there is no wall clock and no global randomness.

`--linear N` writes a pure chain of N small user/assistant entries, for deep-chain tests.

Only the standard library is used, so the generator runs anywhere Python 3.10+ does.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

# Start of every generated session (ms since the epoch); a seed shifts it by up to ~1 year.
BASE_EPOCH_MS = 1_772_442_000_000  # 2026-03-02T09:00:00.000Z


def iso(ms: int) -> str:
    """JS Date.toISOString(): UTC, three fractional digits, trailing Z."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


# Non-integral numbers (costs) are carried through json.dumps as marked strings and unquoted
# afterwards, because Python's float repr differs from JavaScript's Number#toString (3e-06 vs
# 0.000003, 0.0 vs 0).
_NUM_MARK = "\x01"
_NUM_RE = re.compile(r'"\\u0001([^"\\]*)\\u0001"')


def js_number(x: float) -> int | str:
    """A number as JSON.stringify writes it: integral values without a fraction, others with
    the shortest round-trip digits laid out by the ECMAScript Number::toString rules."""
    if x == int(x) and abs(x) < 1e21:
        return int(x)
    sign, digits, exp = Decimal(repr(x)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    k, n = len(ds), exp + len(ds)
    if k <= n <= 21:
        out = ds + "0" * (n - k)
    elif 0 < n <= 21:
        out = ds[:n] + "." + ds[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + ds
    else:
        e = n - 1
        out = ds[0] + ("." + ds[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return _NUM_MARK + ("-" if sign else "") + out + _NUM_MARK


def dumps(obj: object) -> str:
    """JSON.stringify-compatible compact serialisation (non-ASCII written raw)."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if "\\u0001" in s:
        s = _NUM_RE.sub(r"\1", s)
    return s


# ---------------------------------------------------------------------------------------------
# Vocabulary


WORDS = (
    "the a to of and in is for that this it with on be as are we should can function file "
    "test value error config session entry tree branch leaf parent id message model context "
    "token compaction summary cut point path handler request response cache index build run "
    "check update return type string number array object null undefined async await promise "
    "module import export class method field parser reader writer stream buffer line offset "
    "limit timeout retry result output input state event listener render widget kernel notebook "
    "failing passing fixed broken slow fast large small first last next previous before after "
    "because when while since unless instead also only still again now then here there"
).split()

PROMPTS = (
    "Can you look at {path} and explain why {thing} fails when {cond}?",
    "Please fix the failing test in {path}. The error is: {err}",
    "Refactor {thing} in {path} so that it no longer uses recursion; deep trees blow the stack.",
    "Add a unit test for {thing} covering the case where {cond}.",
    "Run the test suite and tell me what is still broken.",
    "Why is {thing} so slow on large inputs? Profile it and suggest a fix.",
    "Rename {thing} to {thing2} everywhere and update the docs.",
    "The CI log says `{err}`. What does that mean and how do we fix it?",
    "Implement {thing} in {path} following the spec section about {thing2}.",
    "Review the diff in {path} and point out anything risky.",
    "Let's go back to the approach with {thing2}; the current one is too complicated.",
    "Write a short summary of what we changed today in {path}.",
)

CONDITIONS = (
    "the file has no trailing newline",
    "a label is cleared and set again",
    "the session contains a compaction with a system message",
    "the parent id points to a missing entry",
    "the input contains CRLF line endings",
    "two entries share the same timestamp",
    "the tool result is longer than 2000 characters",
    "the user navigates back to the root",
    "the context window is almost full",
)

ERRORS = (
    "TypeError: Cannot read properties of undefined (reading 'parentId')",
    "AssertionError: expected 3 to equal 4",
    "RecursionError: maximum recursion depth exceeded while calling a Python object",
    "ENOENT: no such file or directory, open 'sessions/missing.jsonl'",
    "SyntaxError: Unexpected token } in JSON at position 1042",
    "FAILED tests/test_tree.py::test_branch_points - KeyError: 'a1b2c3d4'",
    "error TS2345: Argument of type 'string | undefined' is not assignable to parameter of type 'string'.",
)

IDENTS = (
    "buildSessionContext", "getBranch", "getTree", "findCutPoint", "prepareCompaction",
    "estimateTokens", "loadEntriesFromFile", "migrateSessionEntries", "appendLabelChange",
    "branchWithSummary", "serializeConversation", "parseArgs", "renderTree", "flattenRows",
    "TreeSelector", "ContextGauge", "SessionWriter", "projectEntry", "resolveLeaf", "nextId",
)

DIRS = (
    "src", "src/core", "src/core/compaction", "src/utils", "src/modes/interactive",
    "packages/app/src", "packages/app/src/components", "lib", "tests", "tests/unit", "scripts",
    "docs",
)
FILES = (
    "session-manager.ts", "tree.ts", "projection.ts", "compaction.ts", "utils.ts", "index.ts",
    "cli.ts", "config.ts", "render.tsx", "widget.tsx", "test_tree.py", "test_projection.py",
    "session.py", "navigation.py", "cut_point.py", "README.md", "package.json", "build.mjs",
)

BASH_COMMANDS = (
    "npm test -- --run {path}",
    "npx tsc --noEmit -p .",
    "python -m pytest -q {path}",
    "python -m pytest -q -k {ident} tests/",
    "rg -n \"{ident}\" src/ tests/",
    "git diff --stat",
    "git status --short",
    "git log --oneline -n 15",
    "ls -la {dir}",
    "wc -l {path}",
    "cat package.json | head -40",
    "node scripts/check.mjs --all",
    "find {dir} -name '*.ts' | xargs grep -l \"{ident}\"",
)

LABELS = ("checkpoint", "before-refactor", "good state", "bug repro", "try-2", "baseline",
          "works", "review me", "半成品", "perf ✓", "🚀 release")

UNICODE_SNIPPETS = ("检查认证实现", "改成 JWT", "naïve café", "Größe prüfen", "🙂", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
                    "ありがとう", "résumé", "∑ tokens ≈ chars/4")

MODELS = (
    # provider, model id, api, cost per Mtok (input, output, cacheRead, cacheWrite), caches
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages", (3.0, 15.0, 0.3, 3.75), True),
    ("openai", "gpt-5.1-codex", "openai-responses", (1.25, 10.0, 0.125, 0.0), True),
    ("google", "gemini-2.5-pro", "google-generative-ai", (1.25, 10.0, 0.31, 0.0), False),
)
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")

TOOL_DEFS = [
    {"name": "read", "description": "Read the contents of a file. Supports text files and images.",
     "parameters": {"type": "object", "properties": {
         "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
         "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
         "limit": {"type": "number", "description": "Maximum number of lines to read"}},
         "required": ["path"]}},
    {"name": "bash", "description": "Execute a bash command in the current working directory.",
     "parameters": {"type": "object", "properties": {
         "command": {"type": "string", "description": "Shell command to execute"},
         "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"}},
         "required": ["command"]}},
    {"name": "edit", "description": "Edit a file using exact text replacement.",
     "parameters": {"type": "object", "properties": {
         "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
         "edits": {"type": "array", "items": {"type": "object", "properties": {
             "oldText": {"type": "string"}, "newText": {"type": "string"}},
             "required": ["oldText", "newText"]}}},
         "required": ["path", "edits"]}},
    {"name": "write", "description": "Write content to a file. Creates the file if it does not exist.",
     "parameters": {"type": "object", "properties": {
         "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
         "content": {"type": "string", "description": "Content to write to the file"}},
         "required": ["path", "content"]}},
]


class Text:
    """Seeded text sources. Pools are built once so big files stay fast to generate."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.paths = [f"{d}/{f}" for d in DIRS for f in FILES]
        rng.shuffle(self.paths)
        self.code_lines = [self._code_line() for _ in range(4000)]
        self.log_lines = [self._log_line() for _ in range(2000)]

    def _code_line(self) -> str:
        r = self.rng
        ind = "  " * r.randint(0, 4)
        a, b = r.choice(IDENTS), r.choice(IDENTS)
        w = r.choice(WORDS)
        forms = (
            f"{ind}const {w}{r.randint(0, 99)} = {a}(entries, leafId, byId);",
            f"{ind}if (!entry || entry.type !== \"{r.choice(('message', 'compaction', 'label'))}\") return undefined;",
            f"{ind}for (const e of {w}s) {{",
            f"{ind}}}",
            f"{ind}// {' '.join(r.choices(WORDS, k=r.randint(4, 12)))}",
            f"{ind}def {a.lower()}_{w}(self, {w}: str | None = None) -> list[dict]:",
            f"{ind}return {b}({w}, {{ keepRecentTokens: {r.choice((20000, 2000, 100))} }});",
            f"{ind}stack.push(...node.children);",
            f"{ind}assert {w} == {r.randint(0, 1000)}, f\"{w} mismatch\"",
            f"{ind}export function {a}{r.randint(1, 9)}({w}: string): number {{",
            "",
        )
        return r.choice(forms)

    def _log_line(self) -> str:
        r = self.rng
        forms = (
            f"PASS tests/unit/{r.choice(FILES)} ({r.randint(2, 900)} ms)",
            f"FAIL tests/unit/{r.choice(FILES)}",
            f"  ✓ {' '.join(r.choices(WORDS, k=r.randint(3, 8)))} ({r.randint(1, 80)} ms)",
            f"  ✗ {' '.join(r.choices(WORDS, k=r.randint(3, 8)))}",
            f"{r.choice(self.paths)}:{r.randint(1, 900)}:{r.randint(1, 80)}: {r.choice(IDENTS)}",
            f"    at {r.choice(IDENTS)} ({r.choice(self.paths)}:{r.randint(1, 900)}:{r.randint(1, 60)})",
            r.choice(ERRORS),
            f"npm warn deprecated {r.choice(WORDS)}@{r.randint(1, 9)}.{r.randint(0, 20)}.{r.randint(0, 9)}",
            f"Tests: {r.randint(0, 5)} failed, {r.randint(10, 400)} passed, {r.randint(10, 400)} total",
        )
        return r.choice(forms)

    def path(self) -> str:
        return self.rng.choice(self.paths)

    def sentence(self, lo: int = 6, hi: int = 22) -> str:
        words = self.rng.choices(WORDS, k=self.rng.randint(lo, hi))
        s = " ".join(words)
        return s[0].upper() + s[1:] + "."

    def prose(self, sentences: int) -> str:
        return " ".join(self.sentence() for _ in range(sentences))

    def code(self, lines: int) -> str:
        return "\n".join(self.rng.choices(self.code_lines, k=lines))

    def log(self, lines: int) -> str:
        return "\n".join(self.rng.choices(self.log_lines, k=lines))

    def prompt(self) -> str:
        r = self.rng
        p = r.choice(PROMPTS).format(path=self.path(), thing=r.choice(IDENTS), thing2=r.choice(IDENTS),
                                     cond=r.choice(CONDITIONS), err=r.choice(ERRORS))
        if r.random() < 0.25:
            p += " " + self.prose(r.randint(1, 4))
        if r.random() < 0.05:
            p += " " + r.choice(UNICODE_SNIPPETS)
        return p

    def token(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choices(alphabet, k=n))


ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"


# ---------------------------------------------------------------------------------------------
# The session model


class Session:
    """The generator's own small session manager: entries, parent links, a leaf and per-entry
    bookkeeping (estimated tokens, context size, system-prompt state, last compaction)."""

    def __init__(self, rng: random.Random, text: Text, now_ms: int) -> None:
        self.rng = rng
        self.text = text
        self.now = now_ms
        self.lines: list[str] = []
        self.entries: dict[str, dict] = {}
        self.parent: dict[str, str | None] = {}
        self.est: dict[str, int] = {}  # tokens this entry adds to the context
        self.ctx: dict[str, int] = {}  # estimated context tokens with this entry as leaf
        self.sys: dict[str, dict | None] = {}  # replayed system state at this entry
        self.kind: dict[str, str] = {}  # "user", "assistant", "toolResult", or the entry type
        self.omitted: set[str] = set()
        self.order: list[str] = []
        self.leaf: str | None = None
        self.stats = {"branch_summaries": 0, "navigations": 0, "compactions": 0, "context_edits": 0,
                      "labels": 0, "errors": 0}

    # -- clock and ids ------------------------------------------------------------------------

    def tick(self, lo: int, hi: int) -> int:
        self.now += self.rng.randint(lo, hi)
        return self.now

    def new_id(self) -> str:
        while True:
            i = self.text.token(HEX, 8)
            if i not in self.entries:
                return i

    # -- appending ----------------------------------------------------------------------------

    def append(self, type_: str, fields: dict, est: int = 0, kind: str | None = None,
               custom_first: bool = False, ctx: int | None = None, sys_state: object = "inherit",
               ts_ms: int | None = None) -> str:
        eid = self.new_id()
        ts = iso(ts_ms if ts_ms is not None else self.tick(40, 4000))
        base = {"id": eid, "parentId": self.leaf, "timestamp": ts}
        if custom_first:  # custom / custom_message put their own fields before the id fields
            entry = {"type": type_, **fields, **base}
        else:
            entry = {"type": type_, **base, **fields}
        p = self.leaf
        self.entries[eid] = entry
        self.parent[eid] = p
        self.est[eid] = est
        self.ctx[eid] = ctx if ctx is not None else (self.ctx[p] if p else 0) + est
        self.sys[eid] = (self.sys[p] if p else None) if sys_state == "inherit" else sys_state
        self.kind[eid] = kind or type_
        self.order.append(eid)
        self.lines.append(dumps(entry))
        self.leaf = eid
        return eid

    def message(self, msg: dict, est: int) -> str:
        return self.append("message", {"message": msg}, est=est, kind=msg["role"])

    def path_back(self, limit: int):
        """Yield ids from the leaf towards the root (at most `limit`)."""
        cur = self.leaf
        n = 0
        while cur is not None and n < limit:
            yield cur
            cur = self.parent[cur]
            n += 1


def est_tokens_of(*strings: str) -> int:
    return (sum(len(s) for s in strings) + 3) // 4


class Generator:
    def __init__(self, seed: int, entries: int) -> None:
        self.rng = random.Random(seed)
        self.target = entries
        self.text = Text(self.rng)
        start = BASE_EPOCH_MS + self.rng.randint(0, 365 * 86_400_000)
        self.s = Session(self.rng, self.text, start)
        self.start_ms = start
        self.cwd = "/home/dev/projects/" + self.rng.choice(("pi-lab", "tree-viewer", "agent-notes", "kernel-tools"))
        self.model = self.rng.choice(MODELS)
        self.thinking = "medium"
        self.threshold = self.rng.randint(120_000, 170_000)
        self.keep_recent = 20_000
        self.tool_seq = 0

    # -- helpers ------------------------------------------------------------------------------

    def remaining(self) -> int:
        return self.target - len(self.s.order)

    def session_id(self) -> str:
        t = self.text
        ms = f"{self.start_ms:012x}"
        return (f"{ms[:8]}-{ms[8:12]}-7{t.token(HEX, 3)}-{self.rng.choice('89ab')}{t.token(HEX, 3)}-"
                f"{t.token(HEX, 12)}")

    def usage(self, inp: int, out: int, cache_read: int = 0, cache_write: int = 0,
              reasoning: int | None = None) -> dict:
        ci, co, ccr, ccw = self.model[3]
        cost_in, cost_out = inp * ci / 1e6, out * co / 1e6
        cost_cr, cost_cw = cache_read * ccr / 1e6, cache_write * ccw / 1e6
        u: dict = {"input": inp, "output": out, "cacheRead": cache_read, "cacheWrite": cache_write}
        if reasoning is not None:
            u["reasoning"] = reasoning
        u["totalTokens"] = inp + out + cache_read + cache_write
        u["cost"] = {"input": js_number(cost_in), "output": js_number(cost_out), "cacheRead": js_number(cost_cr),
                     "cacheWrite": js_number(cost_cw), "total": js_number(cost_in + cost_out + cost_cr + cost_cw)}
        return u

    def zero_usage(self) -> dict:
        return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}

    def tool_call_id(self) -> str:
        self.tool_seq += 1
        t = self.text
        if self.model[0] == "anthropic":
            return "toolu_01" + t.token(ALNUM, 22)
        if self.model[0] == "openai":
            return "call_" + t.token(ALNUM, 24) + "|fc_" + t.token(HEX, 40)
        return f"call_{self.tool_seq}_" + t.token(ALNUM, 8)

    def response_id(self) -> str | None:
        t = self.text
        if self.model[0] == "anthropic":
            return "msg_01" + t.token(ALNUM, 22)
        if self.model[0] == "openai":
            return "resp_" + t.token(HEX, 48)
        return None

    # -- messages -----------------------------------------------------------------------------

    def system_prompt(self) -> None:
        t = self.text
        sections = {
            "base": "You are an expert coding assistant operating inside pi, a coding agent harness. "
                    "You help users by reading files, executing commands, editing code, and writing new files.",
            "guidelines": "Guidelines:\n" + "\n".join("- " + t.sentence(6, 14) for _ in range(8)),
            "context": "# Project Context\n\n## AGENTS.md\n\n" + t.prose(12) + "\n\n" + t.code(20),
            "environment": f"Current working directory: {self.cwd}\nCurrent date: {iso(self.s.now)[:10]}",
        }
        ts = self.s.tick(5, 50)
        msg = {"role": "system", "content": "", "sections": sections, "timestamp": ts, "toolsAdded": TOOL_DEFS}
        state = {"content": "", "sections": dict(sections), "toolsAdded": list(TOOL_DEFS), "timestamp": ts}
        est = est_tokens_of(*sections.values(), dumps(TOOL_DEFS))
        self.s.append("message", {"message": msg}, est=est, kind="system", sys_state=state)

    def system_delta(self) -> None:
        p = self.s.leaf
        old = self.s.sys[p] if p else None
        text = f"Current working directory: {self.cwd}\nCurrent date: {iso(self.s.now)[:10]}\n" + self.text.sentence()
        ts = self.s.tick(5, 50)
        msg = {"role": "system", "content": "", "sections": {"environment": text}, "timestamp": ts}
        if old is None:
            state = {"content": "", "sections": {"environment": text}, "toolsAdded": [], "timestamp": ts}
        else:
            secs = dict(old["sections"])
            secs["environment"] = text  # an existing name keeps its position
            state = {**old, "sections": secs}
        self.s.append("message", {"message": msg}, est=est_tokens_of(text), kind="system", sys_state=state)

    def user(self, content: str | None = None) -> str:
        r = self.rng
        text = content if content is not None else self.text.prompt()
        ts = self.s.tick(2_000, 90_000)
        if r.random() < 0.1:
            msg = {"role": "user", "content": text, "timestamp": ts}
        else:
            msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}
        return self.s.message(msg, est_tokens_of(text))

    def tool_call(self) -> tuple[dict, str]:
        """A toolCall block and the matching result text."""
        r, t = self.rng, self.text
        name = r.choices(("read", "bash", "edit", "write"), weights=(45, 30, 18, 7))[0]
        cid = self.tool_call_id()
        if name == "read":
            args: dict = {"path": t.path()}
            if r.random() < 0.35:
                args["offset"] = r.randint(1, 400)
                args["limit"] = r.choice((20, 40, 80, 120, 200))
            n = r.choice((8, 20, 40, 80)) if r.random() > 0.04 else r.randint(400, 1500)
            result = t.code(n)
        elif name == "bash":
            args = {"command": r.choice(BASH_COMMANDS).format(path=t.path(), ident=r.choice(IDENTS), dir=r.choice(DIRS))}
            if r.random() < 0.2:
                args["timeout"] = r.choice((30, 60, 120, 600))
            n = r.choice((3, 8, 20, 40)) if r.random() > 0.04 else r.randint(300, 1500)
            result = t.log(n)
        elif name == "edit":
            edits = [{"oldText": t.code(r.randint(1, 6)), "newText": t.code(r.randint(1, 8))}
                     for _ in range(r.choice((1, 1, 1, 2, 3)))]
            args = {"path": t.path(), "edits": edits}
            result = f"Successfully replaced {len(edits)} block(s) in {args['path']}."
        else:
            args = {"path": t.path(), "content": t.code(r.randint(10, 120))}
            result = f"Successfully wrote to {args['path']}"
        return {"type": "toolCall", "id": cid, "name": name, "arguments": args}, result

    def assistant(self, calls: int, final: bool) -> tuple[str, list[tuple[dict, str]]]:
        r, t, s = self.rng, self.text, self.s
        content: list[dict] = []
        strings: list[str] = []
        if self.thinking != "off" and r.random() < 0.7:
            th = t.prose(r.randint(1, 8))
            block: dict = {"type": "thinking", "thinking": th}
            if self.model[0] != "google":
                block["thinkingSignature"] = t.token(B64, r.randint(200, 600))
            content.append(block)
            strings.append(th)
        if final or r.random() < 0.5:
            body = t.prose(r.randint(1, 6))
            if final and r.random() < 0.4:
                body += "\n\n```ts\n" + t.code(r.randint(4, 30)) + "\n```\n\n" + t.prose(r.randint(1, 3))
            content.append({"type": "text", "text": body})
            strings.append(body)
        pairs = []
        for _ in range(calls):
            block, result = self.tool_call()
            content.append(block)
            strings.append(block["name"] + dumps(block["arguments"]))
            pairs.append((block, result))
        out = est_tokens_of(*strings)
        ctx = s.ctx[s.leaf] if s.leaf else 0
        ts = s.tick(200, 3_000)
        if self.model[4]:
            cache_read = int(ctx * r.uniform(0.80, 0.97))
            usage = self.usage(max(1, ctx - cache_read), max(1, out), cache_read, r.randint(0, 2000))
        else:
            usage = self.usage(max(1, ctx), max(1, out))
        msg: dict = {"role": "assistant", "content": content, "api": self.model[2], "provider": self.model[0],
                     "model": self.model[1]}
        rid = self.response_id()
        if rid:
            msg["responseId"] = rid
        if self.thinking != "off":
            msg["thinkingLevel"] = self.thinking
        msg["usage"] = usage
        msg["stopReason"] = "toolUse" if calls else "stop"
        msg["timestamp"] = ts
        msg["durationMs"] = r.randint(800, 60_000)
        eid = s.message(msg, out)
        return eid, pairs

    def tool_result(self, block: dict, result: str) -> str:
        r = self.rng
        is_error = r.random() < 0.05
        if is_error:
            result = r.choice(ERRORS)
        msg: dict = {"role": "toolResult", "toolCallId": block["id"], "toolName": block["name"],
                     "content": [{"type": "text", "text": result}]}
        if block["name"] == "edit" and not is_error:
            msg["details"] = {"diff": "\n".join("+" + x for x in self.text.code(r.randint(2, 8)).split("\n")),
                              "firstChangedLine": r.randint(1, 500)}
        elif block["name"] == "bash" and len(result) > 30_000:
            msg["details"] = {"truncation": {"truncated": True, "totalLines": result.count("\n") + 1},
                              "fullOutputPath": f"/tmp/pi-bash-{self.text.token(HEX, 8)}.log"}
        msg["isError"] = is_error
        msg["timestamp"] = self.s.tick(30, 20_000)
        msg["durationMs"] = r.randint(5, 15_000)
        return self.s.message(msg, est_tokens_of(result))

    def failed_attempt(self, overflow: bool) -> str:
        ts = self.s.tick(100, 2_000)
        if overflow:
            err = f"prompt is too long: {self.s.ctx[self.s.leaf] + self.rng.randint(1_000, 40_000)} tokens > 200000 maximum"
        else:
            err = '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
        msg = {"role": "assistant", "content": [], "api": self.model[2], "provider": self.model[0],
               "model": self.model[1], "usage": self.zero_usage(), "stopReason": "error", "errorMessage": err,
               "timestamp": ts}
        self.s.stats["errors"] += 1
        return self.s.message(msg, 0)

    def context_edit(self, target: str, replacement: dict | None, est_delta: int = 0) -> str:
        self.s.stats["context_edits"] += 1
        ctx = max(0, (self.s.ctx[self.s.leaf] if self.s.leaf else 0) + est_delta)
        return self.s.append("context_edit", {"targetId": target, "replacement": replacement}, ctx=ctx)

    # -- structural events ----------------------------------------------------------------------

    def file_ops(self, ids) -> tuple[list[str], list[str]]:
        read, modified = set(), set()
        for eid in ids:
            e = self.s.entries[eid]
            if e["type"] == "message" and e["message"]["role"] == "assistant":
                for b in e["message"]["content"]:
                    if b.get("type") == "toolCall":
                        path = b["arguments"].get("path")
                        if not path:
                            continue
                        if b["name"] == "read":
                            read.add(path)
                        elif b["name"] in ("write", "edit"):
                            modified.add(path)
            elif e["type"] in ("compaction", "branch_summary") and isinstance(e.get("details"), dict):
                read.update(e["details"].get("readFiles", []))
                modified.update(e["details"].get("modifiedFiles", []))
        return sorted(read - modified), sorted(modified)

    def summary_text(self, read: list[str], modified: list[str], branch: bool) -> str:
        t, r = self.text, self.rng
        parts = []
        if branch:
            parts.append("The user explored a different conversation branch before returning here.\n"
                         "Summary of that exploration:\n")
        parts.append("## Goal\n" + t.sentence())
        parts.append("## Constraints & Preferences\n" + "\n".join("- " + t.sentence(4, 10) for _ in range(r.randint(1, 3))))
        parts.append("## Progress\n### Done\n" + "\n".join("- [x] " + t.sentence(4, 12) for _ in range(r.randint(2, 6)))
                     + "\n\n### In Progress\n- [ ] " + t.sentence(4, 12) + "\n\n### Blocked\n- (none)")
        parts.append("## Key Decisions\n" + "\n".join(f"- **{r.choice(IDENTS)}**: {t.sentence(4, 12)}" for _ in range(r.randint(1, 4))))
        parts.append("## Next Steps\n" + "\n".join(f"{i + 1}. {t.sentence(4, 12)}" for i in range(r.randint(1, 4))))
        parts.append("## Critical Context\n" + t.prose(r.randint(1, 4)))
        text = "\n\n".join(parts)
        if read:
            text += "\n\n<read-files>\n" + "\n".join(read) + "\n</read-files>"
        if modified:
            text += "\n\n<modified-files>\n" + "\n".join(modified) + "\n</modified-files>"
        return text

    def compaction(self) -> str | None:
        """Append a compaction at the leaf with a first kept entry chosen like pi's cut point:
        walk back from the leaf until keepRecentTokens is reached, then take the nearest
        user/assistant message entry at or before that point, never crossing the previous
        compaction on this path."""
        s = self.s
        acc = 0
        chosen = None
        summarised: list[str] = []
        walked: list[str] = []
        budget_hit = False
        for eid in s.path_back(10**9):
            k = s.kind[eid]
            if k == "compaction":
                break
            walked.append(eid)
            if budget_hit:
                if k in ("user", "assistant") and eid not in s.omitted:
                    chosen = eid
                    break
                continue
            acc += s.est[eid]
            if acc >= self.keep_recent:
                budget_hit = True
                if k in ("user", "assistant") and eid not in s.omitted:
                    chosen = eid
                    break
        if chosen is None:
            return None  # everything would be kept: pi does not compact
        kept = walked[: walked.index(chosen) + 1]
        kept_tokens = sum(s.est[e] for e in kept)
        # Entries summarised now: from the chosen cut back to the previous compaction (or root).
        cur = s.parent[chosen]
        while cur is not None and s.kind[cur] != "compaction":
            summarised.append(cur)
            cur = s.parent[cur]
        if cur is not None:
            summarised.append(cur)  # carry the previous compaction's file lists over
        read, modified = self.file_ops(summarised)
        summary = self.summary_text(read, modified, branch=False)
        tokens_before = s.ctx[s.leaf]
        fields: dict = {"summary": summary, "firstKeptEntryId": chosen, "tokensBefore": tokens_before,
                        "details": {"readFiles": read, "modifiedFiles": modified}}
        if self.rng.random() < 0.9:
            fields["usage"] = self.usage(self.rng.randint(20_000, 90_000), est_tokens_of(summary))
        fields["fromHook"] = False
        state = s.sys[s.leaf]
        after_ctx = est_tokens_of(summary) + kept_tokens
        ts_ms = s.tick(40, 4000)
        if state is not None:
            # The snapshot carries the compaction's own time in ms.
            snap: dict = {"role": "system", "content": state["content"]}
            if state["sections"]:
                snap["sections"] = dict(state["sections"])
            if state["toolsAdded"]:
                snap["toolsAdded"] = list(state["toolsAdded"])
            snap["timestamp"] = ts_ms
            fields["systemMessage"] = snap
            after_ctx += est_tokens_of(*state["sections"].values(), dumps(state["toolsAdded"]))
        eid = s.append("compaction", fields, ctx=after_ctx, kind="compaction", ts_ms=ts_ms)
        s.stats["compactions"] += 1
        return eid

    def navigate(self) -> bool:
        """Go back up the current path, as pi's /tree does: a user target moves the leaf to its
        parent (the text returns to the editor), an assistant target moves it to the assistant.
        Most navigations leave a branch summary of the abandoned entries."""
        s, r = self.s, self.rng
        depth = r.choice((40, 80, 200, 600))
        candidates = []
        for eid in s.path_back(depth):
            k = s.kind[eid]
            e = s.entries[eid]
            if k == "user" and s.parent[eid] is not None and eid != s.leaf:
                candidates.append((eid, s.parent[eid]))
            elif k == "assistant" and e["message"].get("stopReason") == "stop" and eid != s.leaf:
                candidates.append((eid, eid))
        candidates = [c for c in candidates[2:] if c[1] != s.leaf]
        if not candidates:
            return False
        target, position = r.choice(candidates)
        old_leaf = s.leaf
        abandoned = []
        cur = old_leaf
        while cur is not None and cur != position:
            abandoned.append(cur)
            cur = s.parent[cur]
        s.stats["navigations"] += 1
        s.leaf = position
        if r.random() < 0.8:
            read, modified = self.file_ops(abandoned)
            summary = self.summary_text(read, modified, branch=True)
            fields: dict = {"fromId": old_leaf, "summary": summary, "details": {"readFiles": read, "modifiedFiles": modified}}
            if r.random() < 0.8:
                fields["usage"] = self.usage(r.randint(5_000, 60_000), est_tokens_of(summary))
            fields["fromHook"] = False
            s.append("branch_summary", fields, est=est_tokens_of(summary))
            s.stats["branch_summaries"] += 1
        if s.kind[target] == "user":
            # Re-prompt with an edited version of the old text.
            old = s.entries[target]["message"]["content"]
            old_text = old if isinstance(old, str) else old[0]["text"]
            self.user(old_text.rstrip(".?") + " — " + self.text.sentence(4, 10))
            self.run_steps()
        return True

    def label(self) -> None:
        s, r = self.s, self.rng
        if r.random() < 0.7:
            target = r.choice(list(s.path_back(r.choice((5, 30, 200)))))
        else:
            target = s.order[r.randrange(len(s.order))]
        fields = {"targetId": target}
        x = r.random()
        if x < 0.82:
            fields["label"] = r.choice(LABELS)
        elif x < 0.95:
            pass  # cleared through the /tree editor: label undefined, no key
        else:
            fields["label"] = ""
        s.append("label", fields)
        s.stats["labels"] += 1

    def replace_edit(self) -> None:
        """An extension shortens an old, long tool result on the current path."""
        s = self.s
        for eid in s.path_back(120):
            e = s.entries[eid]
            if s.kind[eid] == "toolResult" and s.est[eid] > 1500 and eid not in s.omitted:
                repl = {"content": [{"type": "text", "text": f"[output elided by extension: {s.est[eid] * 4} chars]"}]}
                self.context_edit(eid, repl, est_delta=-s.est[eid])
                return

    # -- the driver -----------------------------------------------------------------------------

    def run_steps(self) -> None:
        """Model calls of one turn, ending with a reply without tool calls."""
        r, s = self.rng, self.s
        steps = min(int(r.expovariate(1 / 3.0)), 14)
        for i in range(steps + 1):
            if self.remaining() <= 0:
                return
            if s.ctx[s.leaf] > self.threshold and r.random() < 0.5 and self.remaining() > 6:
                # Overflow recovery: the failed attempt is dropped, the session compacted, retried.
                failed = self.failed_attempt(overflow=True)
                s.omitted.add(failed)
                self.context_edit(failed, None)
                self.compaction()
            elif r.random() < 0.006 and self.remaining() > 4:
                failed = self.failed_attempt(overflow=False)
                s.omitted.add(failed)
                self.context_edit(failed, None)
            final = i == steps
            calls = 0 if final else r.choices((1, 2, 3), weights=(70, 22, 8))[0]
            _, pairs = self.assistant(calls, final)
            for block, result in pairs:
                if self.remaining() <= 0:
                    return
                self.tool_result(block, result)

    def turn(self) -> None:
        r, s = self.rng, self.s
        if r.random() < 0.015:
            self.thinking = r.choice([lvl for lvl in THINKING_LEVELS if lvl != self.thinking])
            s.append("thinking_level_change", {"thinkingLevel": self.thinking})
        if r.random() < 0.008:
            self.model = r.choice([m for m in MODELS if m != self.model])
            s.append("model_change", {"provider": self.model[0], "modelId": self.model[1]})
        if r.random() < 0.004:
            self.system_delta()
        if r.random() < 0.003:
            s.append("custom", {"customType": "pi.virtual-model-state",
                                "data": {"selected": self.model[1], "reason": "direct"}}, custom_first=True)
        self.user()
        self.run_steps()
        if self.remaining() <= 0:
            return
        x = r.random()
        if s.ctx[s.leaf] > self.threshold and self.remaining() > 3:
            self.compaction()
        elif x < 0.036:
            self.navigate()
        elif x < 0.066:
            self.label()
        elif x < 0.070:
            self.replace_edit()
        elif x < 0.073:
            s.append("session_info", {"name": self.text.sentence(2, 6).rstrip(".")})
        elif x < 0.076:
            ctx = s.ctx[s.leaf]
            s.append("usage", {"kind": "cache_warm", "provider": self.model[0], "model": self.model[1],
                               "usage": self.usage(r.randint(1, 50), 1, ctx, 0)})
        elif x < 0.079:
            text = "Reminder: " + self.text.sentence()
            s.append("custom_message", {"customType": "todo-reminder", "content": text,
                                        "display": r.random() < 0.5}, est=est_tokens_of(text), custom_first=True)
        elif x < 0.082:
            cmd = r.choice(BASH_COMMANDS).format(path=self.text.path(), ident=r.choice(IDENTS), dir=r.choice(DIRS))
            out = self.text.log(r.randint(1, 30))
            msg = {"role": "bashExecution", "command": cmd, "output": out, "exitCode": r.choice((0, 0, 1)),
                   "cancelled": False, "truncated": False, "timestamp": s.tick(100, 5000)}
            s.message(msg, est_tokens_of(cmd, out))

    def run(self) -> tuple[list[str], dict]:
        s = self.s
        header = {"type": "session", "version": 3, "id": self.session_id(), "timestamp": iso(self.start_ms), "cwd": self.cwd}
        if self.target > 0:
            s.append("model_change", {"provider": self.model[0], "modelId": self.model[1]})
        if self.target > 1:
            s.append("thinking_level_change", {"thinkingLevel": self.thinking})
        if self.target > 3:
            self.system_prompt()
        while self.remaining() > 0:
            self.turn()
        # Events can overshoot the target; a prefix of an append-only log is a valid session.
        del s.lines[self.target:]
        del s.order[self.target:]
        # A compaction as the very last entry makes prepareCompaction a no-op: replace it by a
        # prompt (the compaction's parent is the entry physically before it).
        if s.order and s.kind[s.order[-1]] == "compaction":
            last = s.order.pop()
            s.lines.pop()
            s.leaf = s.parent[last]
            self.user()
        return [dumps(header)] + s.lines, s.stats

# ---------------------------------------------------------------------------------------------
# Linear chains


def linear_lines(n: int, seed: int):
    """A header plus `n` small entries in one chain, alternating user and assistant messages.
    Written with string formatting: a million entries in seconds."""
    rng = random.Random(seed)
    start = BASE_EPOCH_MS + rng.randint(0, 365 * 86_400_000)
    ms = f"{start:012x}"
    sid = f"{ms[:8]}-{ms[8:12]}-7{rng.getrandbits(12):03x}-{rng.choice('89ab')}{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
    yield dumps({"type": "session", "version": 3, "id": sid, "timestamp": iso(start), "cwd": "/home/dev/projects/deep"})
    seen: set[str] = set()
    parent = "null"
    now = start
    for i in range(n):
        while True:
            eid = f"{rng.getrandbits(32):08x}"
            if eid not in seen:
                seen.add(eid)
                break
        now += rng.randint(50, 5000)
        ts = iso(now)
        if i % 2 == 0:
            msg = f'{{"role":"user","content":"step {i}: continue","timestamp":{now}}}'
        else:
            tok = 20 + i * 3
            msg = (f'{{"role":"assistant","content":[{{"type":"text","text":"done {i}"}}],"api":"anthropic-messages",'
                   f'"provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":{tok},"output":3,'
                   f'"cacheRead":0,"cacheWrite":0,"totalTokens":{tok + 3},"cost":{{"input":0,"output":0,'
                   f'"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":{now}}}')
        yield f'{{"type":"message","id":"{eid}","parentId":{parent},"timestamp":"{ts}","message":{msg}}}'
        parent = f'"{eid}"'


# ---------------------------------------------------------------------------------------------


def generate(entries: int, seed: int = 1) -> tuple[list[str], dict]:
    """Return the lines (without newlines) of a synthetic session and some statistics."""
    return Generator(seed, entries).run()


def count_branch_points(lines: list[str]) -> int:
    children: dict[str, int] = {}
    for line in lines[1:]:
        e = json.loads(line)
        p = e.get("parentId")
        if p is not None:
            children[p] = children.get(p, 0) + 1
    return sum(1 for c in children.values() if c > 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--entries", type=int, help="number of entries after the header (realistic session)")
    mode.add_argument("--linear", type=int, metavar="N", help="a pure linear chain of N small entries")
    ap.add_argument("--out", required=True, type=Path, help="output .jsonl path")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    if args.linear is not None:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            buf = []
            for line in linear_lines(args.linear, args.seed):
                buf.append(line)
                if len(buf) >= 10_000:
                    f.write("\n".join(buf) + "\n")
                    buf.clear()
            if buf:
                f.write("\n".join(buf) + "\n")
        stats: dict = {"mode": "linear", "entries": args.linear}
    else:
        lines, stats = generate(args.entries, args.seed)
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(lines) + "\n")
        stats = {"mode": "session", "entries": len(lines) - 1, "branch_points": count_branch_points(lines), **stats}
    tmp.replace(args.out)
    size = args.out.stat().st_size
    stats["bytes"] = size
    stats["bytes_per_entry"] = round(size / max(1, stats["entries"]))
    if not args.quiet:
        print(dumps({"out": str(args.out), **stats}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
