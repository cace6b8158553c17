"""The text a judging model reads for one unit of a session: a call, a branch or a session.

Each block names the entry it comes from (``[entry 1a2b3c4d]``) so that a finding can cite
entries; the text of every message is pi's own serialisation for summaries
(``serialize_conversation``), so a judge reads a session the way pi's summariser does.

* a **call**: what the model saw at that model call (pi's projection with the leaf at the
  call's parent: compaction summary, kept messages, branch summaries), then the answer it gave;
* a **branch**: the path from the root to a leaf, every entry in order, with compactions and
  branch summaries marked where they happened (the replaced messages stay: a judge of a
  branch reads what happened, not only what the model last saw);
* a **session**: every branch of the tree, the active one first, each shared entry once.

A unit longer than the judge's window is split into parts by pi's token estimate (chars/4 in
UTF-16 units); each part says which part it is and which entries it spans.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pi_lab.compaction.serialization import serialize_conversation
from pi_lab.session._js import js_len
from pi_lab.session._text import content_text
from pi_lab.session.projection import build_session_projection, entry_to_messages

__all__ = ["Block", "Transcript", "call_transcript", "branch_transcript", "session_transcript", "split_parts",
           "estimate_text_tokens", "UNITS"]

UNITS = ("session", "branch", "call")


def estimate_text_tokens(text: str) -> int:
    """pi's estimate for text: UTF-16 length over four, rounded up."""
    return math.ceil(js_len(text) / 4)


@dataclass(frozen=True)
class Block:
    """One entry's text in a transcript."""

    entry_id: str
    text: str

    @property
    def tokens(self) -> int:
        return estimate_text_tokens(self.text)


@dataclass
class Transcript:
    """A unit's text as blocks; ``entry_ids`` are the ids a finding may cite."""

    unit: str
    unit_id: str
    session_id: str
    blocks: list[Block] = field(default_factory=list)
    heading: str = ""

    @property
    def entry_ids(self) -> set[str]:
        return {block.entry_id for block in self.blocks}

    @property
    def text(self) -> str:
        return "\n\n".join(([self.heading] if self.heading else []) + [b.text for b in self.blocks])

    @property
    def tokens(self) -> int:
        return estimate_text_tokens(self.text)


def _messages_text(messages: list[dict[str, Any]]) -> str:
    """pi's summary serialisation, plus the system messages it leaves out (the model saw them)."""
    parts = []
    for message in messages:
        if message.get("role") == "system":
            parts.append(f"[System]: {content_text(message.get('content'))}")
        else:
            text = serialize_conversation([message])
            if text.strip():
                parts.append(text)
    return "\n\n".join(parts)


def _entry_block(entry: dict[str, Any], note: str = "") -> Block | None:
    entry_id = entry.get("id")
    if not isinstance(entry_id, str):
        return None
    kind = entry.get("type")
    if kind == "compaction":
        body = f"COMPACTION (the messages before it were replaced by this summary):\n{entry.get('summary') or ''}"
    elif kind == "branch_summary":
        body = f"BRANCH SUMMARY (of a branch the user left, from {entry.get('fromId')}):\n{entry.get('summary') or ''}"
    else:
        messages = entry_to_messages(entry)
        if not messages:
            return None
        body = _messages_text(messages)
        if not body.strip():
            return None
    prefix = f"[entry {entry_id}]" + (f" ({note})" if note else "")
    return Block(entry_id, f"{prefix}\n{body}")


def call_transcript(session: Any, call_entry_id: str) -> Transcript:
    """What the model saw at the model call ``call_entry_id``, then its answer."""
    call = session.get_entry(call_entry_id)
    if call is None:
        raise KeyError(call_entry_id)
    branch = session.get_branch(call_entry_id)
    projection = build_session_projection(branch[:-1])
    blocks = []
    for item in projection.entries:
        source = item.source
        entry_id = source.get("id")
        if not isinstance(entry_id, str):
            continue
        if source.get("type") in ("compaction", "branch_summary"):
            block = _entry_block(source)
        else:
            text = _messages_text(item.messages)
            block = Block(entry_id, f"[entry {entry_id}]\n{text}") if text.strip() else None
        if block is not None:
            blocks.append(block)
    answer = _entry_block(call, "the model's answer at this call")
    if answer is not None:
        blocks.append(answer)
    heading = (f"What the model saw at model call {call_entry_id} of session {session.session_id} "
               f"(pi's projection: after a compaction only its summary and the kept messages), then its answer.")
    return Transcript("call", call_entry_id, session.session_id, blocks, heading)


def branch_transcript(session: Any, leaf_id: str) -> Transcript:
    """The path from the root to ``leaf_id``, compactions and branch summaries marked."""
    blocks = [b for b in (_entry_block(e) for e in session.get_branch(leaf_id)) if b is not None]
    heading = f"One branch of session {session.session_id}, from its first entry to entry {leaf_id}."
    return Transcript("branch", leaf_id, session.session_id, blocks, heading)


def session_transcript(session: Any) -> Transcript:
    """Every branch of the session: the active path first, then each other branch from where
    it leaves the entries already shown."""
    shown: set[str] = set()
    blocks: list[Block] = []
    leaves = [session.leaf_id] if session.leaf_id else []
    leaves += [e["id"] for e in session.get_entries()
               if isinstance(e.get("id"), str) and not session.get_children(e["id"]) and e["id"] != session.leaf_id]
    for number, leaf in enumerate(leaves):
        path = session.get_branch(leaf)
        fresh = [e for e in path if e.get("id") not in shown]
        if not fresh:
            continue
        where = "the active branch" if number == 0 else f"another branch, leaving the path at {fresh[0].get('parentId')}"
        first = True
        for entry in fresh:
            shown.add(entry.get("id"))
            block = _entry_block(entry, where if first else "")
            if block is not None:
                blocks.append(block)
                first = False
    heading = f"Session {session.session_id}: every branch, the active one first."
    return Transcript("session", session.session_id, session.session_id, blocks, heading)


def split_parts(transcript: Transcript, budget_tokens: int) -> list[str]:
    """The transcript as texts of at most ``budget_tokens`` each (a block longer than the
    budget is cut), each saying which part it is and which entries it spans."""
    budget = max(256, budget_tokens)
    if transcript.tokens <= budget:
        return [transcript.text]
    groups: list[list[Block]] = [[]]
    used = 0
    reserve = 64  # the part's own heading
    for block in transcript.blocks:
        tokens = block.tokens
        if tokens > budget - reserve:
            # one block longer than a part: keep its head (the start says what it is)
            keep_units = (budget - reserve) * 4
            block = Block(block.entry_id, block.text[:keep_units] + "\n[... cut: longer than one part]")
            tokens = block.tokens
        if groups[-1] and used + tokens > budget - reserve:
            groups.append([])
            used = 0
        groups[-1].append(block)
        used += tokens
    total = len(groups)
    parts = []
    for number, group in enumerate(groups, start=1):
        head = (f"{transcript.heading}\nPart {number} of {total}: entries {group[0].entry_id} to "
                f"{group[-1].entry_id}. Answer about this part only.")
        parts.append("\n\n".join([head] + [b.text for b in group]))
    return parts
