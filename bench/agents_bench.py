#!/usr/bin/env python3
"""Benchmark of pi_lab on other agents' sessions (issues 24 and 25), beside ccusage.

    .venv/bin/python bench/agents_bench.py [--dir /tmp/pi-lab-agents-bench] [--repeat 3]
        [--big-turns 7000] [--claude-sessions 100 --claude-turns 280]
        [--codex-sessions 100 --codex-turns 150] [--no-ccusage] [--profile]

1. One large Claude Code session (tools/generate_claude_sessions.py, ``--big-turns`` turns: 7,000
   is about 50 MB): ``pi_lab.open_session`` and the viewer's first screen
   (``SessionView.open`` + ``structure_payload`` + ``rows_payload(view, 0, 50)``), each run in a
   fresh process whose peak RSS is reported.
2. A folder of Claude Code sessions and a folder of Codex rollouts (tools/generate_codex_sessions.py):
   ``pi-lab usage DIR --no-cache --by day --json`` (cold), the same command with its cache filled
   (cached), ``Corpus.scan([DIR], cache=False)`` (the call alone, in a fresh process), beside
   ``ccusage claude daily --json --offline`` (``CLAUDE_CONFIG_DIR``) and ``ccusage codex daily
   --json --offline`` (``CODEX_HOME``): ccusage's native binary, installed by bench/ccusage_setup.sh
   into bench/.ccusage-native (skipped cleanly without node/npm or with ``--no-ccusage``).
   The token totals of every day are compared between pi_lab and ccusage.
3. Prints a Markdown table (median of ``--repeat`` runs, each a fresh process, after one untimed
   run that fills the page cache and compiles the bytecode) with the load average before and
   after, and writes it with the command to ``<dir>/results.md``. ``--profile`` adds the top of a
   cProfile of one cold usage run of each folder (``--workers 1``, so the profile sees the
   reading too).
4. The start-up alone: ``pi-lab usage EMPTY --no-cache`` on an empty folder beside ``ccusage codex
   daily`` on an empty ``CODEX_HOME`` (what each pays before reading a byte: the interpreter and
   the imports, node and its bundle).

The generated files live outside the repository (``--dir``); they are written once and reused
while the generator's arguments are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CCUSAGE_VERSION = "20.0.24"
TOKEN_KEYS = ("input", "output", "cache_read", "cache_write")
# ccusage's daily JSON names for pi_lab's usage columns (the same names for claude and codex)
CCUSAGE_KEYS = {"input": "inputTokens", "output": "outputTokens", "cache_read": "cacheReadTokens",
                "cache_write": "cacheCreationTokens"}

OPEN_SCRIPT = """
import json, resource, sys, time
t0 = time.perf_counter()
import pi_lab
from pi_lab.view.payload import SessionView, rows_payload, structure_payload
t1 = time.perf_counter()
sm = pi_lab.open_session(sys.argv[1])
t2 = time.perf_counter()
view = SessionView.open(sm)
structure = structure_payload(view)
rows = rows_payload(view, 0, 50)
t3 = time.perf_counter()
assert len(rows["rows"]) == min(50, len(view.rows.ids)), rows
print(json.dumps({"import": t1 - t0, "open": t2 - t1, "view": t3 - t2, "agent": sm.agent,
                  "entries": len(sm.get_entries()), "rows": len(view.rows.ids),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

SCAN_SCRIPT = """
import json, resource, sys, time
from pi_lab.corpus import Corpus
t = time.perf_counter()
c = Corpus.scan([sys.argv[1]], cache=False)
s = time.perf_counter() - t
print(json.dumps({"s": s, "sessions": c.sessions.num_rows, "calls": c.model_calls.num_rows,
                  "errors": len(c.errors), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

PROFILE_SCRIPT = """
import cProfile, io, pstats, sys
from pi_lab.cli import main
out = io.StringIO()
profile = cProfile.Profile()
profile.enable()
sys.stdout, real = out, sys.stdout
main(["usage", sys.argv[1], "--no-cache", "--by", "day", "--json", "--workers", "1"])
sys.stdout = real
profile.disable()
stats = pstats.Stats(profile, stream=sys.stdout)
stats.sort_stats("tottime").print_stats(14)
stats.sort_stats("cumulative").print_stats(22)
"""


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


_CPU: list[float] = []  # CPU seconds (user + system) of each process _run waited for


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # (the children's times: a pooled pi-lab usage counts its workers too)
    _CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done.stdout


def _median(repeat: int, cmd: list[str], env: dict[str, str], before=None) -> tuple[float, str, list[float]]:
    """Median wall seconds over ``repeat`` fresh processes (the machine may be shared); their
    median CPU seconds are left in ``_median.cpu``."""
    times, cpu, out = [], [], ""
    for _ in range(repeat):
        if before is not None:
            before()
        t, out = _run(cmd, env)
        times.append(t)
        cpu.append(_CPU[-1])
    _median.cpu = statistics.median(cpu)  # type: ignore[attr-defined]  # (a bench script's side value)
    return statistics.median(times), out, times


def _generate(kind: str, folder: Path, sessions: int, turns: int, seed: int) -> dict:
    """Write ``folder`` with the generator unless a previous run wrote it with the same arguments."""
    stamp = folder / ".bench-args.json"
    wanted = {"kind": kind, "sessions": sessions, "turns": turns, "seed": seed}
    if stamp.is_file() and json.loads(stamp.read_text()) == wanted:
        pass
    else:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        tool = REPO / "tools" / ("generate_claude_sessions.py" if kind == "claude" else "generate_codex_sessions.py")
        subprocess.run([sys.executable, str(tool), str(folder), "--seed", str(seed), "--turns", str(turns),
                        "--sessions", str(sessions)], check=True, stdout=subprocess.DEVNULL)
        stamp.write_text(json.dumps(wanted))
    files = [p for p in folder.rglob("*.jsonl")]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def ccusage_binary(install: bool = True) -> tuple[Path | None, str]:
    """The native ccusage binary (bench/ccusage_setup.sh installs it when missing), or None and why."""
    if not shutil.which("node") or not shutil.which("npm"):
        return None, "no node/npm"
    if not install:
        return None, "--no-ccusage"
    env = {**os.environ, "CCUSAGE_VERSION": CCUSAGE_VERSION}
    done = subprocess.run(["bash", str(HERE / "ccusage_setup.sh")], capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        return None, f"ccusage_setup.sh exit {done.returncode}: {done.stderr.strip()[-300:]}"
    path = Path(done.stdout.strip().splitlines()[-1])
    return (path, "") if path.is_file() else (None, f"no binary at {path}")


def _pi_lab_days(out: str) -> dict[str, dict[str, int]]:
    return {row["day"]: {k: int(row[k] or 0) for k in TOKEN_KEYS} for row in json.loads(out)}


def _ccusage_days(out: str) -> dict[str, dict[str, int]]:
    return {row["date"]: {k: int(row.get(v) or 0) for k, v in CCUSAGE_KEYS.items()} for row in json.loads(out).get("daily", [])}


def _compare(pi_days: dict, cc_days: dict) -> str:
    """'equal (N days)' or the first days that differ."""
    diffs = []
    for day in sorted(set(pi_days) | set(cc_days)):
        a, b = pi_days.get(day), cc_days.get(day)
        if a != b:
            diffs.append(f"{day}: pi_lab {a} / ccusage {b}")
    if not diffs:
        return f"equal, token for token ({len(pi_days)} days)"
    return f"{len(diffs)} of {len(set(pi_days) | set(cc_days))} days differ: " + "; ".join(diffs[:2])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pi-lab-agents-bench"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big-turns", type=int, default=7000, help="turns of the large session (7000: ~50 MB)")
    ap.add_argument("--claude-sessions", type=int, default=100)
    ap.add_argument("--claude-turns", type=int, default=280, help="100 x 280 turns: ~200 MB")
    ap.add_argument("--codex-sessions", type=int, default=100)
    ap.add_argument("--codex-turns", type=int, default=150, help="100 x 150 turns: ~50 MB")
    ap.add_argument("--no-ccusage", action="store_true", help="measure pi_lab only")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one cold usage run")
    ap.add_argument("--usage-only", action="store_true",
                    help="only the usage rows beside ccusage (no large session, no Corpus.scan)")
    args = ap.parse_args(argv)
    load_before = _load()
    started = time.perf_counter()
    base = args.dir
    base.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # One day boundary for everyone: ccusage groups by the local zone, pi_lab by UTC.
    env.update({"TZ": "UTC", "PYTHONPYCACHEPREFIX": str(base / "pycache"), "XDG_CACHE_HOME": str(base / "cache")})

    # (--usage-only measures no large session: it is not written)
    big = _generate("claude", base / "big", 1, args.big_turns, 1) if not args.usage_only else {}
    # the main file, not its sub-agent files
    big_file = max((base / "big").rglob("*.jsonl"), key=lambda p: p.stat().st_size) if not args.usage_only else None
    claude = _generate("claude", base / "claude", args.claude_sessions, args.claude_turns, 100)
    codex = _generate("codex", base / "codex", args.codex_sessions, args.codex_turns, 200)
    print(f"generated in {time.perf_counter() - started:.0f} s: big {big}, claude {claude}, codex {codex}", file=sys.stderr)

    binary, why = ccusage_binary(install=not args.no_ccusage)
    if binary is None:
        print(f"skipped ccusage: {why}", file=sys.stderr)

    rows: list[tuple[str, str, str, str]] = []  # what, median s (runs), peak MB, note
    fmt_runs = lambda med, runs: f"{med:.2f} ({', '.join(f'{t:.2f}' for t in runs)})"

    # (a) the large session: open + first screen, each in a fresh process
    first_screen = 0.0
    if big_file is not None:
        open_cmd = [python, "-c", OPEN_SCRIPT, str(big_file)]
        _run(open_cmd, env)  # untimed
        results = [json.loads(_run(open_cmd, env)[1]) for _ in range(args.repeat)]
        med = lambda key: statistics.median(r[key] for r in results)
        info = results[0]
        note = f"{big_file.stat().st_size / 1e6:.0f} MB, {info['entries']:,} entries, {info['rows']:,} rows; agent {info['agent']}"
        rows.append(("`pi_lab.open_session` (large Claude Code session)", fmt_runs(med("open"), [r["open"] for r in results]),
                     f"{med('peak_mb'):.0f}", note))
        rows.append(("`SessionView.open` + `structure_payload` + `rows_payload(0, 50)` after it",
                     fmt_runs(med("view"), [r["view"] for r in results]), "(same process)", "the viewer's first screen"))
        first_screen = med("open") + med("view")

    # (b) the folders: pi-lab usage cold/cached, Corpus.scan, ccusage
    summary: list[str] = []
    cache = base / "cache"
    for kind, folder, stats in (("claude", base / "claude", claude), ("codex", base / "codex", codex)):
        label = "Claude Code" if kind == "claude" else "Codex"
        size = f"{stats['files']} files, {stats['bytes'] / 1e6:.0f} MB"
        cold_cmd = [python, "-m", "pi_lab.cli", "usage", str(folder), "--no-cache", "--by", "day", "--json"]
        warm_cmd = [python, "-m", "pi_lab.cli", "usage", str(folder), "--by", "day", "--json"]
        cc_env = {**env, ("CLAUDE_CONFIG_DIR" if kind == "claude" else "CODEX_HOME"): str(folder)}
        cc_cmd = [str(binary), kind, "daily", "--json", "--offline"] if binary is not None else None
        _run(cold_cmd, env)  # untimed: page cache, bytecode
        if cc_cmd is not None:
            _run(cc_cmd, cc_env)  # untimed
        # Cold pi_lab and ccusage take turns, run by run, so that a load changing on a shared
        # machine weighs on both alike.
        cold_runs, cold_cpus, cc_runs, cc_cpus, cc_out = [], [], [], [], ""
        for _ in range(args.repeat):
            took, cold_out = _run(cold_cmd, env)
            cold_runs.append(took)
            cold_cpus.append(_CPU[-1])
            if cc_cmd is not None:
                took, cc_out = _run(cc_cmd, cc_env)
                cc_runs.append(took)
                cc_cpus.append(_CPU[-1])
        cold, cold_cpu = statistics.median(cold_runs), statistics.median(cold_cpus)
        rows.append((f"{label}: `pi-lab usage --no-cache --by day --json`", fmt_runs(cold, cold_runs), "",
                     f"{size}; CPU {cold_cpu:.2f} s ({', '.join(f'{c:.2f}' for c in cold_cpus)})"))
        shutil.rmtree(cache, ignore_errors=True)
        _run(warm_cmd, env)  # fills the cache
        cached, cached_out, cached_runs = _median(args.repeat, warm_cmd, env)
        assert json.loads(cached_out) == json.loads(cold_out), "the cached report must be the cold one"
        rows.append((f"{label}: the same with its cache filled", fmt_runs(cached, cached_runs), "",
                     f"CPU {_median.cpu:.2f} s"))  # type: ignore[attr-defined]
        pi_days = _pi_lab_days(cold_out)
        if cc_cmd is not None:
            cc, cc_cpu = statistics.median(cc_runs), statistics.median(cc_cpus)
            agree = _compare(pi_days, _ccusage_days(cc_out))
            rows.append((f"{label}: `ccusage {kind} daily --json --offline` ({CCUSAGE_VERSION}, native)",
                         fmt_runs(cc, cc_runs), "",
                         f"CPU {cc_cpu:.2f} s ({', '.join(f'{c:.2f}' for c in cc_cpus)}); tokens per day vs pi_lab: {agree}"))
            summary.append(f"{label}: pi_lab cold takes **{cold / cc:.1f}x** ccusage's time (CPU **{cold_cpu / cc_cpu:.1f}x**); "
                           f"cached, **{cached / cc:.2f}x** "
                           f"({'faster' if cached < cc else 'slower'} by {max(cc, cached) / min(cc, cached):.1f}x); "
                           f"cold / cached = {cold / cached:.0f}x.")
        else:
            rows.append((f"{label}: `ccusage {kind} daily`", "–", "", f"skipped: {why}"))
            summary.append(f"{label}: cold / cached = {cold / cached:.1f}x.")
        if args.usage_only:
            continue
        scan_cmd = [python, "-c", SCAN_SCRIPT, str(folder)]
        scans = [json.loads(_run(scan_cmd, env)[1]) for _ in range(args.repeat)]
        scan_s = statistics.median(s["s"] for s in scans)
        rows.append((f"{label}: `Corpus.scan([DIR], cache=False)`, the call alone",
                     fmt_runs(scan_s, [s["s"] for s in scans]), f"{statistics.median(s['peak_mb'] for s in scans):.0f}",
                     f"{scans[0]['sessions']} sessions, {scans[0]['calls']:,} model calls, {scans[0]['errors']} errors"))

    # (c) the start-up alone: an empty folder, pi_lab and ccusage taking turns
    empty = base / "empty"
    empty.mkdir(exist_ok=True)
    start_cmd = [python, "-m", "pi_lab.cli", "usage", str(empty), "--no-cache", "--by", "day", "--json"]
    cc_start = [str(binary), "codex", "daily", "--json", "--offline"] if binary is not None else None
    cc_env = {**env, "CODEX_HOME": str(empty)}
    starts: dict[str, tuple[list[float], list[float]]] = {"pi_lab": ([], []), "ccusage": ([], [])}
    for _ in range(args.repeat + 1):  # (the first round untimed)
        for name, cmd, cmd_env in (("pi_lab", start_cmd, env), ("ccusage", cc_start, cc_env)):
            if cmd is None:
                continue
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started_at = time.perf_counter()
            # (an empty folder: pi-lab exits 1, no session read; ccusage prints no days)
            subprocess.run(cmd, capture_output=True, env=cmd_env, timeout=300)
            took = time.perf_counter() - started_at
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            starts[name][0].append(took)
            starts[name][1].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    for name, label in (("pi_lab", "`pi-lab usage EMPTY --no-cache` (start-up)"),
                        ("ccusage", "`ccusage codex daily` on an empty CODEX_HOME (start-up)")):
        walls, cpus = (v[1:] for v in starts[name])
        if walls:
            rows.append((label, fmt_runs(statistics.median(walls), walls), "", f"CPU {statistics.median(cpus):.2f} s"))

    load_after = _load()
    lines = [
        f"Machine: {os.cpu_count()} cores; load average (1/5/15 min) before **{load_before}**, after **{load_after}**; "
        f"median of {args.repeat} fresh processes (each run in parentheses); total {time.perf_counter() - started:.0f} s.",
        "",
        "| what | median s (runs) | peak RSS MB | note |",
        "| --- | ---: | ---: | --- |",
    ]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    if not args.usage_only:
        lines += ["", f"Large session, open + first screen: {first_screen:.2f} s (interpreter start and imports not counted)."]
    lines += [""]
    lines += [f"- {s}" for s in summary]
    text = "\n".join(lines)
    print(text)
    command = " ".join([Path(python).name, "bench/agents_bench.py", *(argv if argv is not None else sys.argv[1:])])
    (base / "results.md").write_text(f"Command: `{command}`\n\n{text}\n", encoding="utf-8")

    if args.profile:
        for kind, label in (("claude", "Claude Code"), ("codex", "Codex")):
            print(f"\ncProfile of one cold `pi-lab usage` of the {label} folder (--workers 1):\n")
            done = subprocess.run([python, "-c", PROFILE_SCRIPT, str(base / kind)], capture_output=True, text=True, env=env)
            print(done.stdout[-12000:] or done.stderr[-2000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
