"""The offline model's summariser: an extractive, rule-based checkpoint writer.

It recognises the three summary requests pi sends (compaction.md §6–§9) by their shape:

* history summary — user text `<conversation>\\n…\\n</conversation>`, optionally followed by
  `<previous-summary>…</previous-summary>`, then instructions that list `## Critical Context`;
* branch summary — the same wrapper, instructions without a Critical Context section;
* turn-prefix summary — user text `# Conversation\\n…\\n\\n# Instructions\\n…`.

It then reads the serialised conversation (`[User]: …`, `[Assistant]: …`, `[Assistant tool
calls]: …`, `[Tool result]: …`) and copies sentences into the requested sections by keyword
rules. Nothing is invented: every line of a summary is a sentence, path or identifier that occurs
in the conversation or in the previous summary. Keyword lists cover English and Chinese.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise

from .convert import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
)

__all__ = ["Turn", "parse_conversation", "summarise_request"]

_MAX_ITEMS = 12
_MAX_ITEM_CHARS = 240
_NONE = "(none)"
_NOT_STATED = "(not stated in the conversation)"

# --- keyword rules ----------------------------------------------------------------------------

_CONSTRAINT = re.compile(
    r"\b(must|mustn'?t|should|shouldn'?t|don'?t|do not|never|always|prefer|preferably|avoid|"
    r"without|required?|requirement|need to|needs to|only use|make sure|keep)\b|"
    r"必须|应该|不要|别|不能|务必|优先|希望|需要|只用|保持",
    re.IGNORECASE,
)
_DONE = re.compile(
    r"\b(done|completed?|finished|fixed|implemented|added|created|updated|wrote|written|"
    r"passe[sd]|resolved|refactored|removed|renamed|merged|installed|located|verified|works)\b|"
    r"已完成|已|完成了|搞定",
    re.IGNORECASE,
)
_PROGRESS = re.compile(
    r"\b(working on|in progress|next,? i|i'?ll|i will|let me|starting|started|continuing)\b|正在|开始",
    re.IGNORECASE,
)
_PROBLEM = re.compile(
    r"\b(error|errors|exception|traceback|failed|fails|failing|failure|cannot|can'?t|unable|"
    r"denied|not found|no such file|timed out|crash(ed)?)\b|错误|失败|无法|报错|异常",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided?|decision|chose|choose|chosen|going with|go with|instead of|switch(ed)? to|"
    r"we'?ll use|will use|opt(ed)? for|approach)\b|决定|采用|改成|改为|选择",
    re.IGNORECASE,
)
_NEXT = re.compile(
    r"\b(next|then|todo|to do|remaining|still need|afterwards|follow[- ]up)\b|接下来|下一步|然后|还需要",
    re.IGNORECASE,
)
_BECAUSE = re.compile(r"\s*(?:\bbecause\b|\bsince\b|\bso that\b|因为|由于)\s*", re.IGNORECASE)

_PATH = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]+|"
    r"(?<![\w/.-])[\w@-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|json|jsonl|md|txt|toml|ya?ml|rs|go|java|kt|c|h|cc|cpp|hpp|"
    r"sh|css|scss|html|ipynb|cfg|ini|lock|sql|rb|php|swift|vue|svelte)\b"
)
_BACKTICK = re.compile(r"`([^`\n]{1,80})`")
_CALL_NAME = re.compile(r"\b[A-Za-z_][\w.]*\(\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)")


@dataclass(frozen=True, slots=True)
class Turn:
    """One part of a serialised conversation: role is `user`, `assistant`, `tools`, `result`."""

    role: str
    text: str


_MARKERS = {
    "User": "user",
    "Assistant": "assistant",
    "Assistant thinking": "thinking",
    "Assistant tool calls": "tools",
    "Tool result": "result",
}
_MARKER = re.compile(r"(?:^|\n\n)\[(User|Assistant|Assistant thinking|Assistant tool calls|Tool result)\]: ")


def parse_conversation(text: str) -> list[Turn]:
    """Split pi's serialised conversation back into its parts."""
    matches = list(_MARKER.finditer(text))
    turns = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        turns.append(Turn(_MARKERS[match.group(1)], text[match.end():end].strip()))
    return turns


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_ITEM_CHARS else text[: _MAX_ITEM_CHARS - 1] + "…"


def _sentences(text: str) -> list[str]:
    out = []
    for piece in _SENTENCE_END.split(text):
        piece = _BULLET.sub("", piece or "").strip()
        if len(piece) > 1 and not piece.startswith("```"):
            out.append(_clip(piece))
    return out


_STOPWORDS = frozenset(
    ["the", "and", "for", "with", "now", "this", "that", "all", "are", "was", "were", "has", "have", "had", "not", "but", "you", "your", "our", "its", "into", "from", "then", "will", "can", "let"]
)


def _words(text: str) -> set[str]:
    """Comparison keys: lowercase words of 3+ letters (minus stopwords), and CJK character pairs."""
    lowered = text.lower()
    keys = {w for w in re.findall(r"[a-z0-9_]{3,}", lowered) if w not in _STOPWORDS}
    cjk = re.findall(r"[\u4e00-\u9fff]", lowered)
    keys.update(a + b for a, b in pairwise(cjk))
    return keys


def _same_topic(a: str, b: str) -> bool:
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return a.strip().lower() == b.strip().lower()
    shared = len(wa & wb)
    return shared >= 2 or shared >= 0.5 * min(len(wa), len(wb))


class _Items:
    """An ordered, de-duplicated, bounded list of summary lines."""

    def __init__(self, limit: int = _MAX_ITEMS) -> None:
        self.items: list[str] = []
        self.limit = limit

    def add(self, item: str) -> None:
        item = _clip(item)
        if item and item.lower() not in (i.lower() for i in self.items):
            self.items.append(item)

    def extend(self, items: list[str]) -> None:
        for item in items:
            self.add(item)

    def last(self) -> list[str]:
        """The newest entries win when there are too many."""
        return self.items[-self.limit:]


# --- extraction -------------------------------------------------------------------------------


@dataclass
class _Findings:
    goals: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    in_progress: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    tool_calls: list[str] = field(default_factory=list)
    # The assistant reported completion before the user asked anything new: that closes
    # whatever a previous summary still had open.
    closes_open_items: bool = False


def _decision_line(sentence: str, who: str) -> str:
    parts = _BECAUSE.split(sentence, maxsplit=1)
    if len(parts) == 2 and parts[0].strip() and parts[1].strip():
        return f"**{parts[0].strip().rstrip(',;:')}**: {parts[1].strip()}"
    return f"**{sentence.rstrip('.')}**: stated by the {who}"


def _first_problem_line(text: str) -> str | None:
    for line in text.splitlines():
        if _PROBLEM.search(line) and line.strip():
            return _clip(line.strip())
    return None


_EMBEDDED = (
    (COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX, "Earlier summary"),
    (BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, "Summary of another branch"),
)


def _embedded_summary(text: str) -> tuple[str, str] | None:
    """(label, inner text) when a user turn is a compaction or branch summary pi inserted."""
    for prefix, suffix, label in _EMBEDDED:
        if text.startswith(prefix.strip()):
            inner = text[len(prefix.strip()):]
            inner = inner[: -len(suffix.strip())] if inner.endswith(suffix.strip()) else inner
            return label, inner.strip()
    return None


def _extract(turns: list[Turn]) -> _Findings:
    """Findings from a conversation; summaries pi inserted into it are merged in first."""
    earlier = _Findings()
    own_turns = []
    for turn in turns:
        embedded = _embedded_summary(turn.text) if turn.role == "user" else None
        if embedded is None:
            own_turns.append(turn)
            continue
        label, inner = embedded
        parsed = _parse_summary(inner)
        if any(getattr(parsed, name) for name in ("goals", "done", "in_progress", "next_steps", "context")):
            earlier = _merge(earlier, parsed)
        elif inner:
            earlier.context.append(f"{label}: {_clip(inner)}")
    return _merge(earlier, _extract_turns(own_turns))


def _extract_turns(turns: list[Turn]) -> _Findings:
    found = _Findings()
    user_turns = [i for i, t in enumerate(turns) if t.role == "user"]
    if user_turns:
        first = _sentences(turns[user_turns[0]].text)
        if first:
            found.goals.append(" ".join(first[:2]))

    last_done_at = -1
    problems: list[tuple[int, str]] = []
    context = _Items(limit=20)
    for position, turn in enumerate(turns):
        for match in _PATH.finditer(turn.text):
            path = match.group(0).rstrip(".")  # a path that ends a sentence
            if path:
                context.add(f"`{path}`")
        for match in _BACKTICK.finditer(turn.text):
            context.add(f"`{match.group(1)}`")
        for match in _CALL_NAME.finditer(turn.text):
            context.add(f"`{match.group(0)}`")
        if turn.role == "tools":
            found.tool_calls.extend(_clip(call) for call in turn.text.split("; ") if call.strip())
            continue
        if turn.role == "result":
            problem = _first_problem_line(turn.text)
            if problem:
                problems.append((position, f"Tool error: {problem}"))
            continue
        if turn.role == "thinking":
            continue
        who = "user" if turn.role == "user" else "assistant"
        for sentence in _sentences(turn.text):
            if _DECISION.search(sentence):
                found.decisions.append(_decision_line(sentence, who))
            if turn.role == "user":
                if _CONSTRAINT.search(sentence):
                    found.constraints.append(sentence)
                continue
            if _DONE.search(sentence) and not _PROBLEM.search(sentence):
                found.done.append(sentence)
                last_done_at = position
                if not user_turns or position < user_turns[0]:
                    found.closes_open_items = True
            elif _PROBLEM.search(sentence):
                problems.append((position, sentence))
            elif _PROGRESS.search(sentence) and position == _last_index(turns, "assistant"):
                found.in_progress.append(sentence)
            if _NEXT.search(sentence) and position >= len(turns) - 4:
                found.next_steps.append(sentence)

    # Errors reported before the latest completion are taken as dealt with.
    found.blocked = [text for position, text in problems if position > last_done_at]

    # The latest user request is still open unless the assistant reported completion after it.
    if user_turns:
        latest = user_turns[-1]
        request = " ".join(_sentences(turns[latest].text)[:2])
        if request and last_done_at < latest:
            found.in_progress.insert(0, request)
            found.next_steps.insert(0, request)
    found.context = context.items
    return found


def _last_index(turns: list[Turn], role: str) -> int:
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].role == role:
            return i
    return -1


# --- previous summaries -----------------------------------------------------------------------

_HEADINGS = {
    "goal": "goals",
    "original request": "goals",
    "constraints & preferences": "constraints",
    "done": "done",
    "progress so far": "done",
    "in progress": "in_progress",
    "blocked": "blocked",
    "key decisions": "decisions",
    "next steps": "next_steps",
    "critical context": "context",
    "context needed to continue": "context",
}
_FILE_TAGS = re.compile(r"<(read-files|modified-files)>.*?</\1>", re.DOTALL)


def _parse_summary(summary: str) -> _Findings:
    """Read back a checkpoint written in the same format (ours or a real model's)."""
    found = _Findings()
    summary = _FILE_TAGS.sub("", summary)
    target: list[str] | None = None
    for line in summary.splitlines():
        heading = re.match(r"^#{2,3}\s+(.*?)\s*$", line)
        if heading:
            name = _HEADINGS.get(heading.group(1).strip().lower())
            target = getattr(found, name) if name else None
            continue
        text = _BULLET.sub("", line).strip()
        # placeholders of an empty section are not findings to carry forward
        if target is not None and text and text not in (_NONE, _NOT_STATED) and not text.startswith("**Turn Context"):
            target.append(text)
    return found


def _merge(previous: _Findings, new: _Findings) -> _Findings:
    merged = _Findings()
    merged.goals = previous.goals + [g for g in new.goals if not any(_same_topic(g, p) for p in previous.goals)]
    merged.constraints = previous.constraints + new.constraints
    completed = new.done

    def resolved(item: str) -> bool:
        return new.closes_open_items or any(_same_topic(item, d) for d in completed)

    still_open = [p for p in previous.in_progress if not resolved(p)]
    moved = [p for p in previous.in_progress if p not in still_open]
    merged.done = previous.done + moved + new.done
    merged.in_progress = still_open + new.in_progress
    merged.blocked = [b for b in previous.blocked if not resolved(b)] + new.blocked
    merged.decisions = previous.decisions + new.decisions
    merged.next_steps = new.next_steps or [s for s in previous.next_steps if not resolved(s)]
    merged.context = previous.context + new.context
    merged.tool_calls = new.tool_calls
    merged.closes_open_items = new.closes_open_items
    return merged


# --- rendering --------------------------------------------------------------------------------


def _bullets(items: list[str], prefix: str = "- ") -> str:
    bounded = _Items()
    bounded.extend(items)
    lines = bounded.last()
    return "\n".join(prefix + item for item in lines) if lines else _NONE


def _numbered(items: list[str]) -> str:
    bounded = _Items()
    bounded.extend(items)
    lines = bounded.items[:_MAX_ITEMS]
    return "\n".join(f"{n}. {item}" for n, item in enumerate(lines, 1)) if lines else _NONE


def _checkpoint(found: _Findings, *, critical_context: bool) -> str:
    next_steps = found.next_steps or ["Wait for the user's next request."]
    parts = [
        "## Goal\n" + _bullets(found.goals or [_NOT_STATED]),
        "## Constraints & Preferences\n" + _bullets(found.constraints),
        "## Progress\n### Done\n" + _bullets(found.done, "- [x] ")
        + "\n\n### In Progress\n" + _bullets(found.in_progress, "- [ ] ")
        + "\n\n### Blocked\n" + _bullets(found.blocked),
        "## Key Decisions\n" + _bullets(found.decisions),
        "## Next Steps\n" + _numbered(next_steps),
    ]
    if critical_context:
        parts.append("## Critical Context\n" + _bullets(found.context))
    return "\n\n".join(parts)


def _turn_prefix(found: _Findings, turns: list[Turn]) -> str:
    first_user = next((t.text for t in turns if t.role == "user"), "")
    request = _clip(first_user) if first_user else "(no user request in this part of the turn)"
    progress = found.done + [f"Called {call}" for call in found.tool_calls] + found.blocked
    return "\n\n".join([
        "## Original Request\n" + request,
        "## Progress So Far\n" + _bullets(progress),
        "## Context Needed to Continue\n" + _bullets(found.context),
    ])


# --- entry point ------------------------------------------------------------------------------


def _between(text: str, start: str, end: str) -> tuple[str | None, str]:
    """(the text between the markers or None, the text after the end marker)."""
    i = text.find(start)
    if i < 0:
        return None, text
    j = text.find(end, i + len(start))
    if j < 0:
        return text[i + len(start):], ""
    return text[i + len(start):j], text[j + len(end):]


def _focus(instructions: str) -> str | None:
    match = re.search(r"Additional focus:\s*(.+)", instructions, re.DOTALL)
    return _clip(match.group(1)) if match else None


def summarise_request(text: str) -> str | None:
    """The summary for a summarisation request's user text, or None if it is not one."""
    if text.startswith("<conversation>\n"):
        conversation, rest = _between(text, "<conversation>\n", "\n</conversation>")
        previous, after_previous = _between(rest, "<previous-summary>\n", "\n</previous-summary>")
        instructions = after_previous if previous is not None else rest
        found = _extract(parse_conversation(conversation or ""))
        if previous is not None:
            found = _merge(_parse_summary(previous), found)
        with_context = "## Critical Context" in instructions
        focus = _focus(instructions)
        if focus:
            (found.context if with_context else found.constraints).insert(0, f"Requested focus: {focus}")
        return _checkpoint(found, critical_context=with_context)
    if text.startswith("# Conversation\n"):
        conversation, instructions = _between(text, "# Conversation\n", "\n\n# Instructions\n")
        turns = parse_conversation(conversation or "")
        found = _extract(turns)
        focus = _focus(instructions)
        if focus:
            found.context.insert(0, f"Requested focus: {focus}")
        return _turn_prefix(found, turns)
    return None
