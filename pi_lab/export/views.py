"""The facts an export embeds so the page answers the context views without a kernel.

The composition bar, the context diff and search, the branch comparison, the Compare pane's
node names and the timeline's point for any entry are folds over paths of the tree: the kernel
computes them from the entries (pi_lab/view/composition.py, diff.py, branches.py,
compare_requests.py, timeline_requests.py). Here each entry's share of those folds is computed
once, with the very functions the kernel uses, and embedded beside the entry;
src_frontend/export/views*.ts (one module per view module ported) fold them along the paths
they walk. Whatever the page could derive from what it already holds is left out, and only after checking here that the page's
derivation gives the kernel's value (tests/export/test_export_views.py runs views.ts against
the kernel):

* per context row (``"v"`` of a row of a context record, pi_lab/export/context.py): ``q`` the
  composition shares (absent: one share of the role's part, or for a tool result its embedded
  entry's tool), ``h`` a digest of a message a context edit changed (the diff's "edited"), ``o``
  the flat index of the row's source entry when its id does not name it, ``t`` the text the
  search reads (absent: rebuilt from the embedded entry; 1: the row's preview; [k]: the
  header's text k);
* per entry (``"v"`` of a chunk record, data.py): ``n`` the Compare pane's one-line text when it
  is not the tree row's text cut, ``u`` the usage counters (1 or 2: read them from the embedded
  entry's message or the entry), ``k`` tool names, ``f`` file paths read / written / edited,
  ``x`` an error, ``o`` the id a context edit drops, ``s`` a branch summary's text as shown;
* per entry, in the ``facts`` column (:data:`FACT_BITS`): the role, a tool error, an abort,
  whether an entry names it as parent.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pi_lab.compaction.spend import COUNTERS
from pi_lab.session._json import dumps
from pi_lab.session.entries import Entry
from pi_lab.session.projection import entry_to_messages, project_path
from pi_lab.view.compare_requests import DEFAULT_LIMIT, MAX_LIMIT, ROW_PREVIEW_CHARS, cut_summary, row_text
from pi_lab.view.composition import OTHER, PART_OF_ROLE, PART_ORDER, TEXT, TOOL_RESULT, message_shares
from pi_lab.view.diff import SNIPPET_CHARS, searchable_text

__all__ = ["FACT_BITS", "ROLES", "FlatNames", "entry_facts", "fact_bits", "row_extras", "views_header"]

# The roles and the bits of the ``facts`` column (bits 0-1: the index of the role in ROLES) are
# shared with the page: pi_lab/view/contract.py, generated into src_frontend/core/contract.ts.
from pi_lab.view.contract import FACT_BITS, ROLES  # noqa: E402

# A role's part when a row carries no shares: the composition's table, and assistant text.
_PART_OF_ROLE = {**PART_OF_ROLE, "assistant": TEXT}


def _python_text_rules() -> tuple[dict[str, str], str]:
    """Where Python's ``str.casefold`` differs from lower-casing each character (what views.ts
    does otherwise), and the characters ``str.split()`` and ``str.strip()`` take as white space:
    the context search folds and splits as the kernel does. Read block by block: a block whose
    casefold is its lower case holds no such character (both are per character, context-free
    but for a final sigma, which lower() maps only inside a word and casefold never keeps)."""
    fold: dict[str, str] = {}
    block = 512
    for start in range(0, sys.maxunicode + 1, block):
        if 0xD800 <= start < 0xE000:
            continue
        chars = "".join(map(chr, range(start, min(start + block, sys.maxunicode + 1))))
        if chars.casefold() == chars.lower() and "\u03a3" not in chars:
            continue
        for ch in chars:
            if ch.casefold() != ch.lower():
                fold[ch] = ch.casefold()
    # re's \s is str.isspace (the same Unicode table), one pass over every character, a
    # block at a time (the whole range at once made a million one-character strings: 90 MB).
    space: list[str] = []
    for start in range(0, sys.maxunicode + 1, 1 << 16):
        stop = min(start + (1 << 16), sys.maxunicode + 1)
        codes = [c for c in range(start, stop) if not 0xD800 <= c < 0xE000]
        space.extend(re.findall(r"\s", "".join(map(chr, codes))))
    return fold, "".join(space)


_TEXT_RULES: tuple[dict[str, str], str] | None = None


SHARED_TEXT = 200  # a system prompt at least this long is held once, in the header


def shared_texts(entries: Sequence[Entry]) -> dict[str, int]:
    """The searched texts of the system messages the entries hold, numbered: a system prompt
    comes back in every compaction's context, and the chunks are compressed apart."""
    texts: dict[str, int] = {}
    for entry in entries:
        for message in entry_to_messages(entry):
            if message.get("role") == "system":
                text = searchable_text(message)
                if len(text) >= SHARED_TEXT:
                    texts.setdefault(text, len(texts))
    return texts


def views_header(summaries: list[list[Any]], texts: dict[str, int] | None = None) -> dict[str, Any]:
    """What views.ts needs besides the records: the composition's part names and order, the
    usage counter keys, the request limits, the session's branch summaries, and the text rules
    of the context search."""
    global _TEXT_RULES
    if _TEXT_RULES is None:
        _TEXT_RULES = _python_text_rules()
    fold, space = _TEXT_RULES
    return {
        "fold": fold,
        "space": space,
        "snippet": SNIPPET_CHARS,
        "part_of_role": _PART_OF_ROLE,
        "other": OTHER,
        "order": list(PART_ORDER),
        "tool_result": TOOL_RESULT,
        "usage_keys": [key for key, _ in COUNTERS],
        "default_limit": DEFAULT_LIMIT,
        "max_limit": MAX_LIMIT,
        "preview": ROW_PREVIEW_CHARS,
        "summaries": summaries,
        "texts": list(texts or ()),
    }


def _digest(message: Any) -> str:
    try:
        return hashlib.blake2b(dumps(message), digest_size=9).hexdigest()
    except (TypeError, ValueError):  # a value the writer refuses: never equal to another
        return f"!{id(message)}"


def _same_json(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return dumps(a) == dumps(b)
    except (TypeError, ValueError):
        return False


class FlatNames:
    """Which flat entry the page finds for an id (the last one with it), as a bit per flat
    entry: a map of every id to its index cost about 0.1 KB an entry for the whole export."""

    __slots__ = ("_ids", "_last")

    def __init__(self, ids: Sequence[Any]):
        self._ids = ids
        last: dict[str, int] = {}
        for i, entry_id in enumerate(ids):
            if isinstance(entry_id, str):
                last[entry_id] = i
        self._last = bytearray(len(ids))
        for i in last.values():
            self._last[i] = 1

    def finds(self, entry_id: Any, flat: int) -> bool:
        """Whether the page's lookup of ``entry_id`` gives flat entry ``flat``."""
        return (isinstance(entry_id, str) and 0 <= flat < len(self._last) and self._last[flat] == 1
                and self._ids[flat] == entry_id)


def row_extras(rows: list[dict[str, Any]], pairs: Sequence[tuple[Entry, int, dict[str, Any]]],
               flat_of: Mapping[int, int], names: FlatNames,
               embedded: Callable[[int], bool] | None = None,
               texts: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """``rows`` (context_at's) with ``"v"`` on the rows that need it. ``pairs`` are the
    projected (source entry, position among its messages, message) in order, one per row that
    is not an omitted one; ``flat_of`` maps id(entry) to its flat index (for those sources at
    least), ``names`` says which flat entry the page finds for an id; ``embedded(i)`` says whether the page
    gets flat entry i itself (its record's ``e``), from which it rebuilds the searched text
    and a tool result's part; ``texts`` numbers the long texts the header holds once."""
    out: list[dict[str, Any]] = []
    at = 0
    for row in rows:
        if row.get("omitted"):
            out.append(row)
            continue
        source, k, message = pairs[at]
        at += 1
        extras: dict[str, Any] = {}
        flat = flat_of.get(id(source), -1)
        whole = flat >= 0 and embedded is not None and embedded(flat)
        shares = message_shares(message)
        role = row.get("role")
        if role == "toolResult":
            # The page names a tool result's part from its embedded entry's tool name.
            name = source.get("message", {}).get("toolName") if k == 0 and source.get("type") == "message" else None
            derived = (whole and isinstance(name, str) and name != ""
                       and shares == [(TOOL_RESULT + name, row["tokens"])])
        else:
            part = _PART_OF_ROLE.get(role, OTHER) if isinstance(role, str) else OTHER
            derived = len(shares) == 1 and shares[0][0] == part and shares[0][1] == row["tokens"]
        if not derived:
            extras["q"] = _shares_code(shares, row["tokens"])
        if row.get("replaced"):
            pristine = entry_to_messages(source)
            if not (k < len(pristine) and _same_json(pristine[k], message)):
                extras["h"] = _digest(message)
        source_id = row.get("source_id")
        if not names.finds(source_id, flat):
            extras["o"] = flat
        # The text the search reads: rebuilt in the page from the embedded entry when it can
        # be (nothing here), else the row's preview when that is the text (1), else the text.
        if not ("h" not in extras and whole and _page_rebuilds(source, k, message)):
            text = searchable_text(message)
            shared = texts.get(text) if texts is not None else None
            extras["t"] = 1 if text == row.get("preview") else [shared] if shared is not None else text
        out.append(dict(row, v=extras) if extras else row)
    return out


_PART_CODE = {name: k for k, name in enumerate(PART_ORDER)}


def _shares_code(shares: list[tuple[str, int]], tokens: int) -> Any:
    """A row's composition shares, compactly: a tool result's one share of all the row's
    tokens is its tool's name (the part is ``TOOL_RESULT`` + name); otherwise a flat list of
    part and tokens, a part being its index in PART_ORDER or a tool result's name, and the
    last tokens left out (odd length) when they are the row's tokens less the others'."""
    if len(shares) == 1 and shares[0][1] == tokens and shares[0][0].startswith(TOOL_RESULT):
        return shares[0][0][len(TOOL_RESULT):]
    flat: list[Any] = []
    for name, amount in shares:
        code = _PART_CODE.get(name)
        flat.append(code if code is not None and name != TOOL_RESULT else name[len(TOOL_RESULT):])
        flat.append(amount)
    if type(tokens) is int and all(type(a) is int for _, a in shares) and tokens - sum(a for _, a in shares[:-1]) == shares[-1][1]:
        flat.pop()
    return flat


_DERIVED_KINDS = ("text", "toolCall", "thinking")


def _page_rebuilds(source: Entry, k: int, message: dict[str, Any]) -> bool:
    """Whether viewsDiff.ts ``searchableText`` rebuilds diff.searchable_text(message) from the embedded
    entry: a message entry's own, unedited message (k 0), with content of plain JSON whose tool
    names and block types are strings (Python would print anything else with ``str``)."""
    if k != 0 or source.get("type") != "message" or source.get("message") is not message:
        return False
    role = message.get("role")
    if role == "system" or not isinstance(role, str):
        return False
    if role in ("compactionSummary", "branchSummary", "bashExecution"):
        return True
    content = message.get("content")
    if not isinstance(content, list):
        return True
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "toolCall":
            if not isinstance(block.get("name"), str):
                return False
            try:
                dumps(block.get("arguments", {}))
            except (TypeError, ValueError):
                return False
        elif kind is not None and kind not in _DERIVED_KINDS and not isinstance(kind, str):
            return False
    return True


def projected_pairs(path: list[Entry]) -> list[tuple[Entry, int, dict[str, Any]]]:
    """(source, position, message) of every projected message at the end of ``path``."""
    pairs = []
    for item in project_path(path).entries:
        for k, message in enumerate(item.messages):
            pairs.append((item.source, k, message))
    return pairs


def _cut_like_the_page(text: str) -> str:
    """pyValues.ts ``cutText``: the tree row's text cut as compare_requests.row_text cuts."""
    return text if len(text) <= ROW_PREVIEW_CHARS else text[: ROW_PREVIEW_CHARS - 1] + "…"


def _page_number(value: Any) -> Any:
    """A number as views.ts reads it from the page's JSON (other values: None); an integer
    past 2**53 would be rounded there, so it is None here and never matches."""
    if type(value) is int:
        return value if -(2**53) <= value <= 2**53 else float("nan")
    return value if type(value) is float else None


def _page_usage(value: Any, keys: Sequence[str]) -> list[Any] | None:
    """viewsBranches.ts ``usageOf`` on an embedded usage object (a float is a number there too)."""
    if not isinstance(value, dict):
        return None
    numbers: list[Any] = []
    for key in keys:
        numbers.append(_page_number(value.get(key)))
    cost = value.get("cost")
    numbers.append(_page_number(cost.get("total") if isinstance(cost, dict) else None))
    return numbers if any(v is not None for v in numbers) else None


def fact_bits(stats: dict[str, Any] | None, has_child: bool) -> int:
    """The ``facts`` column of one entry, from its :func:`~pi_lab.view.branches.entry_stats`."""
    stats = stats or {}
    role = stats.get("role")
    bits = ROLES.index(role) if role in ROLES else 0
    if stats.get("tool_error"):
        bits |= FACT_BITS["tool_error"]
    if stats.get("aborted"):
        bits |= FACT_BITS["aborted"]
    if has_child:
        bits |= FACT_BITS["has_child"]
    return bits


def entry_facts(entry: Entry, header_text: str, stats: dict[str, Any] | None, embedded: Any) -> dict[str, Any]:
    """The record's ``"v"`` for one flattened entry: what its tree row and columns do not give.
    ``stats`` is its entry_stats, ``embedded`` the entry as the page gets it (``e`` of its
    record, floats marked), or None."""
    v: dict[str, Any] = {}
    text = row_text(entry)
    if text != _cut_like_the_page(header_text):
        v["n"] = text
    stats = stats or {}
    numbers = stats.get("usage")
    if numbers is not None:
        keys = [key for key, _ in COUNTERS]
        holder = embedded if isinstance(embedded, dict) else {}
        message = holder.get("message")
        # 1: read the counters from the embedded message's usage, 2: from the entry's usage
        # (a usage, compaction or branch summary entry), else the numbers themselves.
        if "role" in stats and isinstance(message, dict) and _page_usage(_plain_floats(message.get("usage")), keys) == numbers:
            v["u"] = 1
        elif "role" not in stats and _page_usage(_plain_floats(holder.get("usage")), keys) == numbers:
            v["u"] = 2
        else:
            v["u"] = numbers
    if "tools" in stats:
        v["k"] = stats["tools"]
    if any(name in stats for name in ("read", "written", "edited")):
        v["f"] = [stats.get(name, []) for name in ("read", "written", "edited")]
    error = stats.get("error")
    if error is not None:
        v["x"] = [error["entry_id"], error["error"], error["overflow"], error["retryable"]]
    if "omits" in stats:
        v["o"] = stats["omits"]
    if entry.get("type") == "branch_summary":
        summary = entry.get("summary")
        v["s"] = list(cut_summary(summary if isinstance(summary, str) else ""))
    return v


def _plain_floats(value: Any) -> Any:
    """A usage object of an embedded entry with its marked floats as floats (one level deep
    and the cost object: all ``_page_usage`` reads)."""
    if not isinstance(value, dict):
        return value
    out = {k: getattr(x, "value", x) for k, x in value.items()}
    cost = out.get("cost")
    if isinstance(cost, dict):
        out["cost"] = {k: getattr(x, "value", x) for k, x in cost.items()}
    return out


