"""Ask one question of many sessions with a model; every finding cites the entries it rests on.

:func:`ask` takes units chosen from a corpus (sessions, branches or model calls; a SQL
``where`` over the corpus tables narrows them), builds each unit's transcript
(:mod:`pi_lab.research.transcript`), and asks the model for one JSON object::

    {"answer": ..., "explanation": "...", "cited_entry_ids": ["...", ...]}

Anything else is recorded as a malformed answer with the raw text, never guessed at. Citations
are checked against the entries of the unit; invalid ones are kept and flagged. The answers go
to a ``pyarrow.Table`` and, as notes whose ``source`` names the model and the question, to the
notes store, so they show in the viewer as marks on the cited entries.

Before any request the units, estimated tokens and cost are known (``dry_run=True`` returns
only that); ``max_cost`` stops before it would be passed. Answers are cached by (question,
answer kind, labels, unit text, model): asking again costs nothing, and a run that was
interrupted resumes where it stopped. Retryable provider errors (429, 5xx, dropped streams) are
retried with pi's back-off policy. The offline model cannot judge, so it is refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pi_lab.errors import PiLabError, Refused
from pi_lab.research.transcript import (
    UNITS,
    Transcript,
    branch_transcript,
    call_transcript,
    estimate_text_tokens,
    session_transcript,
    split_parts,
)

__all__ = ["ask_units", "select_units", "AskEstimate", "AskError", "ANSWER_KINDS", "Unit", "ASK_COLUMNS"]

ANSWER_KINDS = ("yes/no", "label", "number", "text")
ASK_COLUMNS = ("session_id", "file", "unit", "unit_id", "part_count", "answer", "explanation", "cited_entry_ids",
               "invalid_citations", "malformed", "raw_text", "error", "model", "input_tokens", "output_tokens",
               "cost", "cached")
# What a judge's answer is assumed to cost in output tokens when estimating before asking.
ASSUMED_OUTPUT_TOKENS = 300
# Room kept in the judge's window for the instructions and the answer.
_PROMPT_ROOM = 2_000

OFFLINE_REFUSAL = (
    "The offline model cannot judge sessions: it only restates requests and plays scripts. Ask with a "
    "real model: pi_lab.llm.OpenAIClient (OpenAI, or any OpenAI-compatible server such as vLLM, "
    "llama.cpp's server or Ollama, with base_url=...) or pi_lab.llm.AnthropicClient."
)


class AskError(PiLabError, ValueError):
    """A question that cannot be asked as given (an unknown unit or answer kind, bad SQL)."""


@dataclass(frozen=True)
class Unit:
    """One thing to ask about: a session, a branch (by its leaf) or a model call."""

    file: str
    session_id: str
    unit: str
    unit_id: str


@dataclass
class AskEstimate:
    """What a question would cost before it is asked (``dry_run=True``)."""

    units: int
    requests: int
    cached: int
    input_tokens: int
    output_tokens: int
    cost: float
    per_unit: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def __str__(self) -> str:
        return (f"{self.units} units, {self.requests} requests ({self.cached} answered from the cache), about "
                f"{self.input_tokens:,} input and {self.output_tokens:,} output tokens, about ${self.cost:.4f}")


# ---------------------------------------------------------------------------------- units

_UNIT_QUERIES = {
    "session": "SELECT DISTINCT file, session_id, session_id AS unit_id FROM sessions",
    "branch": "SELECT DISTINCT file, session_id, entry_id AS unit_id FROM entries WHERE is_leaf AND NOT copied",
    "call": "SELECT DISTINCT file, session_id, entry_id AS unit_id FROM model_calls WHERE NOT copied",
}


def select_units(corpus: Any, unit: str, where: str | None = None) -> list[Unit]:
    """The units of ``corpus`` to ask about; ``where`` is a SQL condition on the unit's table
    (``sessions``, ``entries`` for branches, ``model_calls`` for calls)."""
    if unit not in UNITS:
        raise AskError(f"unit must be one of {', '.join(UNITS)}, not {unit!r}")
    query = _UNIT_QUERIES[unit]
    if where:
        query += (" AND " if " WHERE " in query else " WHERE ") + f"({where})"
    query += " ORDER BY file, unit_id"
    try:
        table = corpus.sql(query)
    except Exception as error:  # DuckDB's parser and binder errors name the problem
        raise AskError(f"the where filter did not run: {error}") from None
    return [Unit(r["file"], r["session_id"], unit, r["unit_id"]) for r in table.to_pylist()]


# ---------------------------------------------------------------------------------- prompts

def _instructions(question: str, answer: str, labels: Sequence[str] | None) -> str:
    if answer == "yes/no":
        shape = '"yes" or "no"'
    elif answer == "label":
        shape = "exactly one of these labels: " + ", ".join(orjson.dumps(label).decode() for label in labels or [])
    elif answer == "number":
        shape = "a number"
    else:
        shape = "a short text"
    return (
        "You are reviewing a transcript of a coding agent's session for a researcher. Every block of the "
        "transcript starts with the id of the session entry it comes from, written [entry <id>].\n\n"
        f"Question: {question}\n\n"
        "Reply with one JSON object and nothing else, of this shape:\n"
        '{"answer": <answer>, "explanation": "<why, in one to three sentences>", '
        '"cited_entry_ids": ["<id of each entry your answer rests on>"]}\n'
        f"where <answer> is {shape}. Cite only ids that appear in the transcript."
    )


def _request_context(question: str, answer: str, labels: Sequence[str] | None, part: str) -> dict[str, Any]:
    return {
        "system_prompt": _instructions(question, answer, labels),
        "messages": [{"role": "user", "content": [{"type": "text", "text": part}], "timestamp": 0}],
        "tools": None,
    }


# ---------------------------------------------------------------------------------- answers

def _json_object(text: str) -> dict[str, Any] | None:
    candidate = text.strip()
    if candidate.startswith("```"):
        # a fenced block: ```json ... ```
        lines = candidate.split("\n")
        if len(lines) >= 2 and lines[-1].strip() == "```":
            candidate = "\n".join(lines[1:-1]).strip()
    try:
        value = orjson.loads(candidate)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def parse_answer(text: str, answer: str, labels: Sequence[str] | None) -> tuple[Any, str, list[str], str | None]:
    """(answer, explanation, cited ids, problem): ``problem`` is None for a well-formed answer."""
    value = _json_object(text)
    if value is None:
        return None, "", [], "the reply is not one JSON object"
    raw_answer = value.get("answer")
    written = value.get("explanation")
    explanation = written if isinstance(written, str) else ""
    cited = value.get("cited_entry_ids", [])
    if not isinstance(cited, list) or not all(isinstance(c, str) for c in cited):
        return None, explanation, [], "cited_entry_ids is not a list of strings"
    if answer == "yes/no":
        if isinstance(raw_answer, bool):
            return ("yes" if raw_answer else "no"), explanation, cited, None
        if isinstance(raw_answer, str) and raw_answer.strip().lower() in ("yes", "no"):
            return raw_answer.strip().lower(), explanation, cited, None
        return None, explanation, cited, f"answer {raw_answer!r} is not yes or no"
    if answer == "label":
        if isinstance(raw_answer, str) and raw_answer in (labels or []):
            return raw_answer, explanation, cited, None
        return None, explanation, cited, f"answer {raw_answer!r} is not one of the labels"
    if answer == "number":
        if isinstance(raw_answer, (int, float)) and not isinstance(raw_answer, bool):
            return str(raw_answer), explanation, cited, None
        return None, explanation, cited, f"answer {raw_answer!r} is not a number"
    if isinstance(raw_answer, str):
        return raw_answer, explanation, cited, None
    return None, explanation, cited, "answer is not a text"


def _combine(parts: list[dict[str, Any]], answer: str) -> tuple[Any, str, list[str]]:
    """One answer for a unit asked in several parts: yes when any part says yes, the largest
    number, the labels and texts of the parts joined in order."""
    good = [p for p in parts if p["problem"] is None]
    if not good:
        return None, "", []
    explanations = " ".join(f"(part {p['part']}) {p['explanation']}" if len(parts) > 1 else p["explanation"] for p in good)
    cited = list(dict.fromkeys(c for p in good for c in p["cited"]))
    answers = [p["answer"] for p in good]
    if answer == "yes/no":
        return ("yes" if "yes" in answers else "no"), explanations, cited
    if answer == "number":
        return str(max(float(a) for a in answers)) if len(answers) > 1 else answers[0], explanations, cited
    return (answers[0] if len(set(answers)) == 1 else " | ".join(answers)), explanations, cited


# ---------------------------------------------------------------------------------- cache

class _AnswerCache:
    """Answers kept by the hash of everything that decides them; a private folder of files."""

    def __init__(self, folder: Path):
        self.folder = folder

    @classmethod
    def default(cls) -> _AnswerCache:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return cls(Path(base) / "pi_lab" / "ask")

    def _ready(self) -> bool:
        try:
            self.folder.mkdir(parents=True, mode=0o700, exist_ok=True)
            st = os.lstat(self.folder)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.folder / f"{key}.json"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                return None
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read()
        finally:
            os.close(fd)
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) and value.get("key") == key else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        if not self._ready():
            return
        path = self.folder / f"{key}.json"
        temp = self.folder / f".{key}.{os.getpid()}.tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(orjson.dumps({**value, "key": key}))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, path)
        except OSError:
            try:
                os.unlink(temp)
            except OSError:
                pass


def _cache_key(question: str, answer: str, labels: Sequence[str] | None, part: str, model: Any) -> str:
    digest = hashlib.sha256()
    for piece in ("pi-lab-ask-1", question, answer, orjson.dumps(list(labels or [])).decode(),
                  getattr(model, "key", str(model)), part):
        encoded = piece.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "big"))
        digest.update(encoded)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------- asking

def _is_offline(client: Any) -> bool:
    from pi_lab.llm import OfflineModel

    return isinstance(client, OfflineModel) or getattr(getattr(client, "model", None), "api", None) == "offline"


def _price(model: Any, input_tokens: float, output_tokens: float) -> float:
    cost = getattr(model, "cost", None)
    if cost is None:
        return 0.0
    return (cost.input * input_tokens + cost.output * output_tokens) / 1_000_000


def _transcript(session: Any, unit: Unit) -> Transcript:
    if unit.unit == "call":
        return call_transcript(session, unit.unit_id)
    if unit.unit == "branch":
        return branch_transcript(session, unit.unit_id)
    return session_transcript(session)


class _Progress:
    """tqdm's bar (the notebook's when in one) with the running cost; a plain line without tqdm."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        self.enabled = enabled
        self.done = 0
        self.total = total
        self.cost = 0.0
        if enabled:
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=total, unit="request", desc="ask")
            except ImportError:
                self.bar = None

    def step(self, cost: float) -> None:
        self.done += 1
        self.cost += cost
        if self.bar is not None:
            self.bar.set_postfix_str(f"${self.cost:.4f}")
            self.bar.update(1)
        elif self.enabled:
            print(f"\rask: {self.done}/{self.total} requests, ${self.cost:.4f}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            print(file=sys.stderr)


async def ask_units(
    units: Sequence[Unit],
    question: str,
    *,
    client: Any,
    model: Any,
    answer: str = "yes/no",
    labels: Sequence[str] | None = None,
    max_cost: float | None = None,
    concurrency: int = 4,
    dry_run: bool = False,
    notes: Any = None,
    cache: Any = None,
    retry: Any = None,
    progress: bool = True,
    open_session: Any = None,
) -> Any:
    """Ask ``question`` of every unit; see the module's notes. Returns a ``pyarrow.Table`` of
    :data:`ASK_COLUMNS` (or an :class:`AskEstimate` with ``dry_run``)."""
    if answer not in ANSWER_KINDS:
        raise AskError(f"answer must be one of {', '.join(ANSWER_KINDS)}, not {answer!r}")
    if answer == "label" and not labels:
        raise AskError('answer="label" needs labels=[...]')
    if not isinstance(question, str) or not question.strip():
        raise AskError("the question is empty")
    if _is_offline(client):
        raise Refused(OFFLINE_REFUSAL)
    if model is None:
        raise AskError("ask needs the model to ask (a pi_lab.llm.Model)")
    if open_session is None:
        from pi_lab.formats import open_session
    answers = cache if cache is not None else _AnswerCache.default()
    budget = max(1_000, (getattr(model, "context_window", 0) or 128_000) - _PROMPT_ROOM - ASSUMED_OUTPUT_TOKENS)

    # Build every unit's parts first: the estimate and max_cost need them before any request.
    sessions: dict[str, Any] = {}
    plan: list[tuple[Unit, Transcript, list[str], list[str]]] = []
    for unit in units:
        session = sessions.get(unit.file)
        if session is None:
            session = sessions[unit.file] = open_session(unit.file)
        transcript = _transcript(session, unit)
        parts = split_parts(transcript, budget)
        keys = [_cache_key(question, answer, labels, part, model) for part in parts]
        plan.append((unit, transcript, parts, keys))
    instructions_tokens = estimate_text_tokens(_instructions(question, answer, labels))
    per_unit = []
    requests = cached = input_tokens = 0
    for unit, _unit_transcript, parts, keys in plan:
        unit_tokens = 0
        for part, key in zip(parts, keys):
            if answers.get(key) is not None:
                cached += 1
                continue
            requests += 1
            unit_tokens += instructions_tokens + estimate_text_tokens(part)
        input_tokens += unit_tokens
        per_unit.append({"session_id": unit.session_id, "unit_id": unit.unit_id, "parts": len(parts),
                         "input_tokens": unit_tokens})
    estimate = AskEstimate(len(plan), requests, cached, input_tokens, requests * ASSUMED_OUTPUT_TOKENS,
                           _price(model, input_tokens, requests * ASSUMED_OUTPUT_TOKENS), per_unit)
    if dry_run:
        return estimate

    from pi_lab.compaction.retry import RetryPolicy, retry_assistant_call

    policy = retry if retry is not None else RetryPolicy()
    limit = asyncio.Semaphore(max(1, concurrency))
    spent = 0.0
    stop = asyncio.Event()
    bar = _Progress(requests, progress)

    async def one(part: str, key: str, number: int) -> dict[str, Any]:
        nonlocal spent
        hit = answers.get(key)
        if hit is not None:
            return {**hit, "part": number, "cached": True}
        async with limit:
            if stop.is_set():
                return {"part": number, "skipped": True}
            projected = _price(model, instructions_tokens + estimate_text_tokens(part), ASSUMED_OUTPUT_TOKENS)
            if max_cost is not None and spent + projected > max_cost:
                stop.set()
                return {"part": number, "skipped": True}
            spent += projected  # reserved now, corrected when the answer's usage is known
            context = _request_context(question, answer, labels, part)
            message = await retry_assistant_call(lambda: client.complete(model, context), policy)
            usage = message.get("usage") or {}
            cost_total = (usage.get("cost") or {}).get("total") if isinstance(usage.get("cost"), dict) else None
            cost_value = float(cost_total) if isinstance(cost_total, (int, float)) else _price(
                model, usage.get("input", 0) or 0, usage.get("output", 0) or 0)
            spent += cost_value - projected
            bar.step(cost_value)
            record: dict[str, Any] = {"input_tokens": int(usage.get("input", 0) or 0) + int(usage.get("cacheRead", 0) or 0)
                                      + int(usage.get("cacheWrite", 0) or 0),
                                      "output_tokens": int(usage.get("output", 0) or 0), "cost": cost_value}
            if message.get("stopReason") in ("error", "aborted"):
                record["error"] = str(message.get("errorMessage") or message.get("stopReason"))
                return {**record, "part": number, "cached": False}
            text = "".join(b.get("text", "") for b in message.get("content") or []
                           if isinstance(b, dict) and b.get("type") == "text")
            value, explanation, cited, problem = parse_answer(text, answer, labels)
            record.update({"answer": value, "explanation": explanation, "cited": cited, "problem": problem,
                           "raw_text": text})
            answers.put(key, record)  # a finished request survives an interrupted run
            return {**record, "part": number, "cached": False}

    try:
        results = await asyncio.gather(*[
            asyncio.gather(*[one(part, key, n) for n, (part, key) in enumerate(zip(parts, keys), start=1)])
            for _unit, _t, parts, keys in plan])
    finally:
        bar.close()

    rows = []
    findings = []
    model_key = getattr(model, "key", str(model))
    for (unit, transcript, parts, _keys), outcome in zip(plan, results):
        row = _row(unit, model_key, len(parts))
        skipped = [p for p in outcome if p.get("skipped")]
        errors = [p["error"] for p in outcome if p.get("error")]
        answered = [p for p in outcome if not p.get("skipped") and not p.get("error")]
        row["input_tokens"] = sum(p.get("input_tokens", 0) for p in outcome if not p.get("cached"))
        row["output_tokens"] = sum(p.get("output_tokens", 0) for p in outcome if not p.get("cached"))
        row["cost"] = sum(p.get("cost", 0.0) for p in outcome if not p.get("cached"))
        row["cached"] = bool(outcome) and all(p.get("cached") for p in outcome)
        if skipped:
            row["error"] = f"not asked: max_cost ${max_cost} reached"
        elif errors:
            row["error"] = "; ".join(errors)
        malformed = [p for p in answered if p.get("problem")]
        if malformed:
            row["malformed"] = True
            row["raw_text"] = "\n---\n".join(p.get("raw_text", "") for p in malformed)
            row["error"] = row["error"] or "; ".join(p["problem"] for p in malformed)
        if answered and not skipped and not errors:
            value, explanation, cited = _combine([{**p, "problem": p.get("problem")} for p in answered], answer)
            valid = transcript.entry_ids
            row["answer"] = value
            row["explanation"] = explanation
            row["cited_entry_ids"] = cited
            row["invalid_citations"] = [c for c in cited if c not in valid]
            if value is not None and not (answer == "yes/no" and value == "no"):
                targets = [c for c in cited if c in valid] or [unit.unit_id if unit.unit != "session" else
                                                               _first_id(transcript)]
                for target in targets:
                    if target:
                        findings.append({"session_id": unit.session_id, "session_file": unit.file,
                                         "entry_id": target, "tag": str(value), "text": explanation,
                                         "source": f"model:{model_key}: {question}", "question": question,
                                         "author": model_key})
        rows.append(row)
    if findings and notes is not None:
        # Idempotent: asking again (answers from the cache) or resuming an interrupted run adds
        # only the findings the store does not hold yet.
        held = {(n.session_id, n.entry_id, n.source, n.text) for n in notes.notes()}
        fresh = [f for f in findings if (f["session_id"], f["entry_id"], f["source"], f["text"]) not in held]
        if fresh:
            notes.add_many(fresh)
    return _table(rows)


def _first_id(transcript: Transcript) -> str | None:
    return transcript.blocks[0].entry_id if transcript.blocks else None


def _row(unit: Unit, model_key: str, part_count: int) -> dict[str, Any]:
    return {"session_id": unit.session_id, "file": unit.file, "unit": unit.unit, "unit_id": unit.unit_id,
            "part_count": part_count, "answer": None, "explanation": None, "cited_entry_ids": [],
            "invalid_citations": [], "malformed": False, "raw_text": None, "error": None, "model": model_key,
            "input_tokens": 0, "output_tokens": 0, "cost": 0.0, "cached": False}


def _table(rows: list[dict[str, Any]]) -> Any:
    import pyarrow as pa

    schema = pa.schema([
        ("session_id", pa.string()), ("file", pa.string()), ("unit", pa.string()), ("unit_id", pa.string()),
        ("part_count", pa.int64()), ("answer", pa.string()), ("explanation", pa.string()),
        ("cited_entry_ids", pa.list_(pa.string())), ("invalid_citations", pa.list_(pa.string())),
        ("malformed", pa.bool_()), ("raw_text", pa.string()), ("error", pa.string()), ("model", pa.string()),
        ("input_tokens", pa.int64()), ("output_tokens", pa.int64()), ("cost", pa.float64()), ("cached", pa.bool_()),
    ])
    return pa.Table.from_pylist(rows, schema=schema)
