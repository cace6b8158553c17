#!/usr/bin/env python3
"""Benchmark of the corpus layer beside the tools a researcher would use instead.

    .venv/bin/python bench/corpus_bench.py [--sessions 240] [--forks 60] [--repeat 3] [--out bench/out/corpus]

1. Builds a deterministic corpus in pi's folder layout (``sessions/--project--/<time>_<id>.jsonl``):
   generated sessions of mixed sizes (bench/generate.py), forks and forks of forks whose header
   names their ``parentSession`` and whose first entries are copies of the parent's path (as
   pi's fork/clone writes them), and the real fixtures when ../shared is beside the clone.
2. Times, each as a fresh process (median of ``--repeat`` runs):
   * ``pi-lab usage --by day`` with an empty cache (cold: every table is computed) and again
     with the cache filled (cached);
   * ``@ccusage/pi daily --json`` (npm, installed by this script into bench/.ccusage; skipped
     when node or the registry is missing);
   * DuckDB ``read_json`` over the same files for a plain count and a usage sum.
3. Prints a Markdown table of times and totals, and writes it with the command to
   ``<out>/results.md``.

pi_lab runs as an installed package does, with its bytecode compiled once (under
``<out>/pycache``; a sandbox that sets PYTHONDONTWRITEBYTECODE would otherwise compile every
module on every run), after one untimed run of each tool so every tool reads the session
files from the page cache.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CCUSAGE_DIR = HERE / ".ccusage"
CCUSAGE_VERSION = "18.0.11"
FIXTURES = REPO.parent / "shared" / "fixtures" / "pi-sessions"
SIZES = (30, 60, 120, 250, 500, 1200)  # entries per generated session, cycled


def _generate_module():
    spec = importlib.util.spec_from_file_location("bench_generate", HERE / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_generate", module)
    spec.loader.exec_module(module)
    return module


def _file_name(header: dict) -> str:
    return header["timestamp"].replace(":", "-").replace(".", "-") + "_" + header["id"] + ".jsonl"


def _project_dir(cwd: str) -> str:
    return "--" + cwd.strip("/").replace("/", "-") + "--"


def _fork(rng: random.Random, gen, parent_path: Path, parent_lines: list[str], serial: int) -> tuple[Path, list[str]]:
    """A fork as pi writes one: a new header naming the parent, the parent's path up to an
    entry copied byte for byte, then a new turn of its own."""
    header = json.loads(parent_lines[0])
    entries = [json.loads(line) for line in parent_lines[1:]]
    by_id = {e.get("id"): (e, i) for i, e in enumerate(entries)}
    messages = [i for i, e in enumerate(entries) if e.get("type") == "message" and e["message"].get("role") == "user"]
    point = messages[rng.randrange(len(messages) // 2, len(messages))] if messages else len(entries) - 1
    path_idx = []
    node = entries[point]
    seen = set()
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        path_idx.append(by_id[node["id"]][1])
        parent = node.get("parentId")
        node = by_id.get(parent, (None, 0))[0] if parent else None
    path_idx.reverse()
    from pi_lab.session.ids import parse_iso_ms

    last_ms = int(max(parse_iso_ms(e["timestamp"]) for e in entries))
    start = last_ms + 3_600_000 + serial * 1000
    sid = f"{start:012x}"
    fork_id = f"{sid[:8]}-{sid[8:12]}-7{rng.getrandbits(12):03x}-8{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
    fork_header = {"type": "session", "version": 3, "id": fork_id, "timestamp": gen.iso(start),
                   "cwd": header.get("cwd", "/"), "parentSession": str(parent_path)}
    lines = [gen.dumps(fork_header)] + [parent_lines[i + 1] for i in path_idx]
    parent_id = entries[point]["id"]
    model = "claude-sonnet-4-5"
    for turn in range(rng.randint(1, 4)):
        uid, aid = f"{rng.getrandbits(32):08x}", f"{rng.getrandbits(32):08x}"
        t = start + turn * 20_000
        lines.append(gen.dumps({"type": "message", "id": uid, "parentId": parent_id, "timestamp": gen.iso(t + 1000),
                                "message": {"role": "user", "content": f"fork {serial} turn {turn}", "timestamp": t + 1000}}))
        inp, out = rng.randint(2_000, 60_000), rng.randint(50, 2_000)
        usage = {"input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": inp + out,
                 "cost": {"input": inp * 3e-6, "output": out * 15e-6, "cacheRead": 0, "cacheWrite": 0,
                          "total": inp * 3e-6 + out * 15e-6}}
        lines.append(gen.dumps({"type": "message", "id": aid, "parentId": uid, "timestamp": gen.iso(t + 5000),
                                "message": {"role": "assistant", "content": [{"type": "text", "text": "forked answer"}],
                                            "api": "anthropic-messages", "provider": "anthropic", "model": model,
                                            "usage": usage, "stopReason": "stop", "timestamp": t + 5000}}))
        parent_id = aid
    path = parent_path.parent / _file_name(fork_header)
    return path, lines


def build_corpus(folder: Path, sessions: int = 240, forks: int = 60, seed: int = 7, fixtures: bool = True) -> dict:
    """Write the benchmark corpus under ``folder`` (emptied first); returns what it holds."""
    gen = _generate_module()
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    rng = random.Random(seed)
    written: list[tuple[Path, list[str]]] = []
    entries = 0
    for i in range(sessions):
        lines, _ = gen.generate(SIZES[i % len(SIZES)], seed * 10_000 + i)
        header = json.loads(lines[0])
        path = folder / _project_dir(header.get("cwd", "/")) / _file_name(header)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append((path, lines))
        entries += len(lines) - 1
    fork_count = 0
    for j in range(forks):
        # every sixth fork forks an earlier fork (a clone chain)
        pool = written[sessions:] if j % 6 == 5 and len(written) > sessions else written[:sessions]
        parent_path, parent_lines = pool[rng.randrange(len(pool))]
        path, lines = _fork(rng, gen, parent_path, parent_lines, j)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append((path, lines))
        entries += len(lines) - 1
        fork_count += 1
    real = 0
    if fixtures and FIXTURES.is_dir():
        target = folder / "--fixtures--"
        target.mkdir()
        for source in sorted(FIXTURES.glob("*.jsonl")):
            shutil.copyfile(source, target / source.name)
            real += 1
    size = sum(p.stat().st_size for p in folder.rglob("*.jsonl"))
    return {"generated": sessions, "forks": fork_count, "fixtures": real, "files": sessions + fork_count + real,
            "generated_entries": entries, "bytes": size}


# ---------------------------------------------------------------------------------------------
# The tools


def ensure_ccusage() -> Path | None:
    """``@ccusage/pi`` under bench/.ccusage (npm install once); None without node or npm."""
    script = CCUSAGE_DIR / "node_modules" / "@ccusage" / "pi" / "dist" / "index.js"
    if script.is_file():
        return script
    if not shutil.which("node") or not shutil.which("npm"):
        return None
    CCUSAGE_DIR.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(CCUSAGE_DIR), f"@ccusage/pi@{CCUSAGE_VERSION}"],
                       check=True, capture_output=True, timeout=300)
    except (subprocess.SubprocessError, OSError) as error:
        print(f"ccusage not installed ({error}); its rows are skipped", file=sys.stderr)
        return None
    return script if script.is_file() else None


CPU: dict[str, float] = {}  # command label -> median CPU seconds (user + system, all processes)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], env: dict | None = None, before=None) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the process and its workers) and stdout of one run."""
    if before is not None:
        before()
    cpu0 = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    elapsed = time.perf_counter() - started
    cpu = _children_cpu() - cpu0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    return elapsed, cpu, done.stdout


def median_run(repeat: int, cmd: list[str], env: dict | None = None, before=None) -> tuple[float, float, str]:
    """Median wall and CPU seconds over ``repeat`` runs (the machine may be shared)."""
    times, cpus, out = [], [], ""
    for _ in range(repeat):
        t, c, out = timed(cmd, env, before)
        times.append(t)
        cpus.append(c)
    return statistics.median(times), statistics.median(cpus), out


DUCKDB_QUERY = """
SELECT count(*) AS lines,
       count(*) FILTER (WHERE json_extract_string(message, '$.role') = 'assistant') AS calls,
       sum(CAST(json_extract(message, '$.usage.input') AS DOUBLE)) FILTER (WHERE json_extract_string(message, '$.role') = 'assistant') AS input,
       sum(CAST(json_extract(message, '$.usage.output') AS DOUBLE)) FILTER (WHERE json_extract_string(message, '$.role') = 'assistant') AS output,
       sum(CAST(json_extract(message, '$.usage.cacheRead') AS DOUBLE)) FILTER (WHERE json_extract_string(message, '$.role') = 'assistant') AS cache_read,
       sum(CAST(json_extract(message, '$.usage.cacheWrite') AS DOUBLE)) FILTER (WHERE json_extract_string(message, '$.role') = 'assistant') AS cache_write,
       sum(CAST(json_extract(message, '$.usage.cost.total') AS DOUBLE)) FILTER (WHERE json_extract_string(message, '$.role') = 'assistant') AS cost
FROM read_json('{glob}', format = 'newline_delimited', columns = {{'type': 'VARCHAR', 'message': 'JSON'}},
               ignore_errors = true, maximum_object_size = 268435456)
"""

DUCKDB_SCRIPT = """
import json, sys, duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")  # it would print on stdout
row = con.execute(sys.argv[1]).fetchall()[0]
print(json.dumps(dict(zip(["lines", "calls", "input", "output", "cache_read", "cache_write", "cost"], row))))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=240, help="generated sessions (default %(default)s)")
    ap.add_argument("--forks", type=int, default=60, help="forks with parentSession (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "out" / "corpus")
    args = ap.parse_args(argv)
    folder = args.out / "sessions"
    cache = args.out / "cache"
    built = build_corpus(folder, args.sessions, args.forks)
    print(f"corpus: {built}", file=sys.stderr)
    python = sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"XDG_CACHE_HOME": str(cache), "PYTHONPYCACHEPREFIX": str(args.out / "pycache")})
    pilab = [python, "-m", "pi_lab.cli", "usage", str(folder), "--by", "day", "--json"]

    def empty_cache() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    timed(pilab, env, before=empty_cache)  # untimed: compiles the bytecode, fills the page cache
    rows: list[tuple[str, float | None, float | None, str]] = []
    cold, cold_cpu, out_cold = median_run(args.repeat, pilab, env, before=empty_cache)
    rows.append(("pi_lab cold: `pi-lab usage --by day --json`, empty cache (every table computed)", cold, cold_cpu, ""))
    cached, cached_cpu, out_cached = median_run(args.repeat, pilab, env)
    rows.append(("pi_lab cached: the same command again", cached, cached_cpu,
                 "the report kept beside the cached tables: no pyarrow, DuckDB or engine import"))
    in_process = [python, "-c", (
        "import sys, time, json; from pi_lab.corpus import Corpus; t = time.perf_counter(); "
        "c = Corpus.scan(sys.argv[1], cache=sys.argv[2]); first = time.perf_counter() - t; t = time.perf_counter(); "
        "c = Corpus.scan(sys.argv[1], cache=sys.argv[2]); "
        "print(json.dumps({'first': first, 's': time.perf_counter() - t, 'stats': c.stats}))"
    ), str(folder), str(cache / "pi_lab" / "corpus")]
    _wall, _cpu, out_scan = median_run(args.repeat, in_process, env)
    scan = json.loads(out_scan)
    assert scan["stats"]["read"] == 0, scan
    scan_cached_inner = scan["s"]
    rows.append(("pi_lab `Corpus.scan()` of the cached folder: first call in a new process", scan["first"], None,
                 "the call alone; includes pyarrow's lazy imports"))
    rows.append(("pi_lab `Corpus.scan()` of the cached folder: again in the same process (a notebook re-scan)",
                 scan_cached_inner, None, "the call alone"))
    pi_days = json.loads(out_cold)
    assert json.loads(out_cached) == pi_days, "the cached scan must give the cold scan's report"

    ccusage_days = None
    script = ensure_ccusage()
    if script is not None:
        cc_cmd = ["node", str(script), "daily", "--json", "--piPath", str(folder), "-z", "UTC"]
        timed(cc_cmd)  # untimed, as for pi_lab
        cc_time, cc_cpu, cc_out = median_run(args.repeat, cc_cmd)
        rows.append(("`@ccusage/pi daily --json` (npm " + CCUSAGE_VERSION + ")", cc_time, cc_cpu, ""))
        ccusage_days = json.loads(cc_out).get("daily", [])
    else:
        rows.append(("`@ccusage/pi daily --json`", None, None, "skipped: no node/npm or registry"))

    glob = str(folder / "**" / "*.jsonl")
    duck_cmd = [python, "-c", DUCKDB_SCRIPT, DUCKDB_QUERY.format(glob=glob)]
    duck_time, duck_cpu, duck_out = median_run(args.repeat, duck_cmd)
    rows.append(("DuckDB `read_json` of the same files: line count + usage sum (no tree)", duck_time, duck_cpu, ""))
    duck = json.loads(duck_out.strip().splitlines()[-1])

    def total(days: list[dict], key: str) -> float:
        return sum(d.get(key) or 0 for d in days)

    totals = {
        "pi_lab": {"calls": total(pi_days, "calls"), "input": total(pi_days, "input"), "output": total(pi_days, "output"),
                   "cache_read": total(pi_days, "cache_read"), "cache_write": total(pi_days, "cache_write"),
                   "cost": total(pi_days, "cost")},
        "DuckDB raw": {k: duck[k] for k in ("calls", "input", "output", "cache_read", "cache_write", "cost")},
    }
    if ccusage_days is not None:
        totals["ccusage"] = {"calls": None, "input": total(ccusage_days, "inputTokens"), "output": total(ccusage_days, "outputTokens"),
                             "cache_read": total(ccusage_days, "cacheReadTokens"), "cache_write": total(ccusage_days, "cacheCreationTokens"),
                             "cost": total(ccusage_days, "totalCost")}
    # What pi_lab left out as fork/clone copies, for the explanation of the differences.
    from pi_lab.corpus import Corpus

    corpus = Corpus.scan(folder, cache=cache)
    copies = corpus.sql(
        "select count(*) as calls, sum(input) as input, sum(output) as output, sum(cache_read) as cache_read, "
        "sum(cache_write) as cache_write, sum(cost) as cost from model_calls where copied").to_pylist()[0]
    totals["copied by forks (pi_lab leaves out)"] = copies

    lines = [
        f"Corpus: {built['generated']} generated sessions ({', '.join(map(str, SIZES))} entries, cycled), "
        f"{built['forks']} forks with `parentSession` (every sixth a fork of a fork), {built['fixtures']} real fixtures; "
        f"{built['files']} files, {built['bytes'] / 1e6:.0f} MB, {corpus.entries.num_rows:,} entries, "
        f"{corpus.model_calls.num_rows:,} model calls. {os.cpu_count()} cores; median of {args.repeat} runs.",
        "",
        "| tool | wall s | CPU s | note |",
        "| --- | ---: | ---: | --- |",
    ]
    fmt = lambda v: "–" if v is None else f"{v:.2f}"
    for name, seconds, cpu, note in rows:
        lines.append(f"| {name} | {fmt(seconds)} | {fmt(cpu)} | {note} |")
    lines.append("")
    if ccusage_days is not None:
        lines.append(f"Cold pi_lab / ccusage: **{cold / cc_time:.2f}** wall, {cold_cpu / cc_cpu:.2f} CPU. ")
    lines.append(f"Cold / cached: **{cold / cached:.1f}x** for the command (interpreter and imports included), "
                 f"**{cold / scan_cached_inner:.0f}x** for the scan call.")
    lines += ["", "| totals | calls | input | output | cache read | cache write | cost ($) |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, t in totals.items():
        calls = "–" if t.get("calls") is None else f"{int(t['calls']):,}"
        lines.append(f"| {name} | {calls} | {int(t['input'] or 0):,} | {int(t['output'] or 0):,} | {int(t['cache_read'] or 0):,} | "
                     f"{int(t['cache_write'] or 0):,} | {float(t['cost'] or 0):,.2f} |")
    text = "\n".join(lines)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(
        f"Command: `{' '.join([Path(python).name, 'bench/corpus_bench.py', *(argv if argv is not None else sys.argv[1:])])}`\n\n{text}\n",
        encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
