"""``pi-lab ask``: one question over session folders, answered by a model, with citations.

It lives in the corpus package because it scans its folders with the corpus's own command-line
helpers; the research package it drives sits below the corpus and never imports it.

    pi-lab ask "Did the agent edit a file it had not read?" DIR... --model gpt-4.1-mini \\
        [--api openai|anthropic] [--base-url URL] [--unit session|branch|call] [--where SQL] \\
        [--answer yes/no|label|number|text] [--labels a,b] [--max-cost USD] [--dry-run] [--json]

The key comes from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` (a local OpenAI-compatible server
such as vLLM, llama.cpp or Ollama needs none: give ``--base-url``). Findings are written to the
notes file (``--notes``, default ``pi-lab-notes.jsonl`` here); session files are only read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

__all__ = ["register"]


from pi_lab.corpus.cli import common_arguments, scan_corpus


def register(commands: Any) -> None:
    """Add the ``ask`` subcommand to ``commands`` (argparse subparsers)."""
    ask = commands.add_parser(
        "ask",
        help="ask a model one question of every session, branch or model call; findings cite entries",
        description="Ask a model one question of each unit of the sessions under the folders. Each answer "
        "cites the entries it rests on; findings are written to the notes file. Answers are cached: "
        "asking again costs nothing.",
    )
    ask.add_argument("question", help="the question, in words")
    common_arguments(ask)  # the folders and the corpus cache, as corpus and usage take them
    ask.add_argument("--model", required=True, help="the model id the server knows (e.g. gpt-4.1-mini)")
    ask.add_argument("--api", choices=("openai", "anthropic"), default="openai",
                     help="wire protocol: OpenAI-compatible chat completions or Anthropic Messages (default: %(default)s)")
    ask.add_argument("--base-url", metavar="URL", help="server URL (vLLM, llama.cpp, Ollama: their /v1 URL)")
    ask.add_argument("--unit", choices=("session", "branch", "call"), default="session",
                     help="what one question is asked of (default: %(default)s)")
    ask.add_argument("--where", metavar="SQL", help="a SQL condition on the unit's table choosing the units")
    ask.add_argument("--answer", choices=("yes/no", "label", "number", "text"), default="yes/no",
                     help="the kind of answer (default: %(default)s)")
    ask.add_argument("--labels", metavar="A,B,...", help="the labels of --answer label")
    ask.add_argument("--max-cost", type=float, metavar="USD", help="stop before the cost would pass this")
    ask.add_argument("--window", type=int, metavar="TOKENS", help="the model's context window (splits long units)")
    ask.add_argument("--price-in", type=float, default=0.0, metavar="USD", help="price per million input tokens")
    ask.add_argument("--price-out", type=float, default=0.0, metavar="USD", help="price per million output tokens")
    ask.add_argument("--concurrency", type=int, default=4, metavar="N", help="requests at once (default: %(default)s)")
    ask.add_argument("--notes", metavar="FILE", help="notes file for the findings (default: ./pi-lab-notes.jsonl)")
    ask.add_argument("--dry-run", action="store_true", help="say how many units, tokens and dollars; ask nothing")
    ask.add_argument("--json", action="store_true", help="print JSON rows")
    ask.set_defaults(func=_cmd_ask)


def _model(args: argparse.Namespace) -> Any:
    from pi_lab.llm.catalog import context_window_for
    from pi_lab.llm.model import Model, ModelCost

    window = args.window or context_window_for(args.model) or 128_000
    api = "anthropic-messages" if args.api == "anthropic" else "openai-completions"
    provider = "anthropic" if args.api == "anthropic" else ("openai" if not args.base_url else "openai-compatible")
    return Model(provider=provider, id=args.model, api=api, context_window=window, max_tokens=4_096,
                 cost=ModelCost(input=args.price_in, output=args.price_out), base_url=args.base_url)


def _client(args: argparse.Namespace) -> Any:
    if args.api == "anthropic":
        from pi_lab.llm import AnthropicClient

        return AnthropicClient(base_url=args.base_url)
    from pi_lab.llm import OpenAIClient

    return OpenAIClient(base_url=args.base_url)


def _cmd_ask(args: argparse.Namespace, out: TextIO) -> int:
    corpus = scan_corpus(args)
    if args.notes:
        corpus.notes_path = args.notes
    labels = [label.strip() for label in args.labels.split(",")] if args.labels else None
    result = corpus.ask(args.question, client=_client(args), model=_model(args), unit=args.unit, where=args.where,
                        answer=args.answer, labels=labels, max_cost=args.max_cost, concurrency=args.concurrency,
                        dry_run=args.dry_run, progress=sys.stderr.isatty())
    if args.dry_run:
        if args.json:
            out.write(json.dumps({"units": result.units, "requests": result.requests, "cached": result.cached,
                                  "input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
                                  "cost": result.cost}) + "\n")
        else:
            out.write(f"{result}\n")
        return 0
    rows = result.to_pylist()
    if args.json:
        out.write(json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
    else:
        for row in rows:
            answer = row["answer"] if row["answer"] is not None else f"(no answer: {row['error']})"
            cited = ", ".join(row["cited_entry_ids"]) or "-"
            out.write(f"{row['session_id']}  {row['unit']} {row['unit_id']}: {answer}  cites {cited}\n")
            if row["explanation"]:
                out.write(f"    {row['explanation']}\n")
        cost = sum(r["cost"] for r in rows)
        out.write(f"{len(rows)} units, ${cost:.4f}\n")
    return 0 if rows and not all(r["error"] for r in rows) else 1
