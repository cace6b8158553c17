#!/usr/bin/env python3
"""Benchmark pi_lab against pi itself on the same generated session files.

    python bench/run.py                                  # sizes 10k,100k,linear1m
    python bench/run.py --sizes 10k --repeat 3
    python bench/run.py --install-pi                     # install pi into bench/.pi first if missing

For every size and operation, pi (Node, through bench/pi_runner/run.mjs) and pi_lab (Python)
each run in a fresh process: open the file once, run the operation `--warmup` times untimed and
`--repeat` times timed, and report the median wall time and the process's peak RSS. The table is
printed and written to bench/out/results.md.

Operations (same inputs on both sides):
  open          SessionManager.open(copy of the file)
  context       sm.build_session_context()            / sm.buildSessionContext()
  tree          sm.get_tree()                          / sm.getTree()
  branch        sm.get_branch()                        / sm.getBranch()
  prepare       prepare_compaction(branch, CompactionSettings())  / prepareCompaction(branch, DEFAULT_COMPACTION_SETTINGS)
  estimate      estimate_context_tokens(messages of every message entry on the branch)
  estimate_all  sum of estimate_tokens over those messages
(`branch` and its messages are computed once, outside the timed region.)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"
RUNNER = BENCH / "pi_runner" / "run.mjs"
SETUP = BENCH / "pi_runner" / "setup.sh"
PI_PKG = BENCH / ".pi" / "node_modules" / "@earendil-works" / "pi-coding-agent"

OPS = ("open", "context", "tree", "branch", "prepare", "estimate", "estimate_all")
COMPACTION_OPS = ("prepare", "estimate", "estimate_all")


# ---------------------------------------------------------------------------------------------
# Inputs


def size_spec(name: str) -> tuple[list[str], Path]:
    """'10k' → realistic session of 10,000 entries; 'linear1m' → linear chain of 1,000,000."""
    linear = name.startswith("linear")
    num = name[len("linear"):] if linear else name
    mult = {"k": 1_000, "m": 1_000_000}.get(num[-1:].lower(), 1)
    count = int(num[:-1] if mult > 1 else num) * mult
    path = OUT / (f"linear{num}.jsonl" if linear else f"s{num}.jsonl")
    args = ["--linear", str(count)] if linear else ["--entries", str(count), "--seed", "1"]
    return args + ["--out", str(path)], path


def ensure_input(name: str) -> Path:
    """Generate the input when it is missing or older than the generator."""
    args, path = size_spec(name)
    if not path.exists() or path.stat().st_mtime < (BENCH / "generate.py").stat().st_mtime:
        print(f"generating {path.relative_to(REPO)} ...", file=sys.stderr)
        subprocess.run([sys.executable, str(BENCH / "generate.py"), *args], check=True)
    return path


# ---------------------------------------------------------------------------------------------
# pi


def pi_unavailable(install: bool) -> str | None:
    """None when pi can be run, else the reason it cannot."""
    node = shutil.which("node")
    if node is None:
        return "node not found on PATH"
    if not (PI_PKG / "dist" / "core" / "session-manager.js").exists():
        if install and shutil.which("npm"):
            r = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True)
            if r.returncode != 0:
                return f"installing pi failed: {(r.stderr or r.stdout).strip()[-300:]}"
        else:
            return f"pi package not installed in {PI_PKG.relative_to(REPO)} (run bash bench/pi_runner/setup.sh or pass --install-pi)"
    r = subprocess.run(["node", str(RUNNER), "info"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"pi runner failed: {r.stderr.strip()[-300:]}"
    return None


def run_pi(path: Path, op: str, repeat: int, warmup: int) -> dict:
    cmd = ["node", "--max-old-space-size=16384", str(RUNNER), "bench", str(path), "--op", op,
           "--repeat", str(repeat), "--warmup", str(warmup)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-500:]}
    data = json.loads(r.stdout)
    res = [x for x in data["results"] if x["op"] == op]
    if not res:
        return {"error": "n/a"}
    return {"ms": res[0]["ms"], "first_ms": res[0].get("firstMs"), "peak_mb": data["peakRssMb"]}


# ---------------------------------------------------------------------------------------------
# pi_lab (worker runs in its own process so its peak RSS belongs to one measurement)


def pi_lab_unavailable() -> str | None:
    r = subprocess.run([sys.executable, "-c", "from pi_lab.session import SessionManager"],
                       capture_output=True, text=True, cwd=REPO, env=_env())
    if r.returncode != 0:
        return f"pi_lab.session not importable: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
    return None


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_pi_lab(path: Path, op: str, repeat: int, warmup: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(path), "--op", op,
           "--repeat", str(repeat), "--warmup", str(warmup)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=_env())
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-500:]}
    return json.loads(r.stdout)


def worker(path: str, op: str, repeat: int, warmup: int) -> int:
    """Runs inside the measuring subprocess: time one operation of pi_lab on one file."""
    import resource

    from pi_lab.session import SessionManager

    compaction = None
    try:
        import pi_lab.compaction as compaction  # noqa: PLC0415
    except Exception as exc:  # the compaction module may not exist yet
        if op in COMPACTION_OPS:
            print(json.dumps({"error": f"n/a (pi_lab.compaction: {exc})"}))
            return 0

    tmp = tempfile.mkdtemp(prefix="pi-lab-bench-")
    try:
        copy = os.path.join(tmp, os.path.basename(path))
        shutil.copyfile(path, copy)
        t0 = time.perf_counter()
        sm = SessionManager.open(copy)
        first_open_ms = (time.perf_counter() - t0) * 1000
        # The first call of context/tree/branch runs on this freshly opened session, before
        # anything has filled the engine's caches; the inputs of the pure functions
        # (prepare, estimate) are computed first, as pi's runner does.
        branch: list = []
        messages: list = []
        if op in COMPACTION_OPS:
            branch = sm.get_branch()
            messages = [e["message"] for e in branch if e.get("type") == "message" and e.get("message")]
        if op == "open":
            fn = lambda: SessionManager.open(copy)  # noqa: E731
        elif op == "context":
            fn = sm.build_session_context
        elif op == "tree":
            fn = sm.get_tree
        elif op == "branch":
            fn = sm.get_branch
        elif op == "prepare":
            settings = compaction.CompactionSettings()
            fn = lambda: compaction.prepare_compaction(branch, settings)  # noqa: E731
        elif op == "estimate":
            fn = lambda: compaction.estimate_context_tokens(messages)  # noqa: E731
        elif op == "estimate_all":
            est = compaction.estimate_tokens
            fn = lambda: sum(est(m) for m in messages)  # noqa: E731
        else:
            raise SystemExit(f"unknown op {op}")
        t0 = time.perf_counter()
        fn()
        first_ms = first_open_ms if op == "open" else (time.perf_counter() - t0) * 1000
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1000)
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        print(json.dumps({"ms": statistics.median(times), "first_ms": first_ms, "times": times,
                          "peak_mb": peak_kb / 1024}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


# ---------------------------------------------------------------------------------------------
# Report


def fmt_ms(r: dict | None, key: str = "ms") -> str:
    if r is None:
        return "skipped"
    if "error" in r:
        return "n/a" if r["error"].startswith("n/a") else "error"
    if key not in r:
        return "–"
    ms = r[key]
    return f"{ms:.3f}" if ms < 1 else f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def fmt_mb(r: dict | None) -> str:
    return f"{r['peak_mb']:.0f}" if r and "peak_mb" in r else "–"


def fmt_ratio(a: dict | None, b: dict | None, key: str = "ms") -> str:
    if not a or not b or key not in a or key not in b or a[key] <= 0:
        return "–"
    return f"{b[key] / a[key]:.2f}"


def sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO).stdout.strip()
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="pi vs pi_lab session-engine benchmark")
    ap.add_argument("--sizes", default="10k,100k,linear1m", help="comma list: 10k, 100k, linear1m, ...")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--no-pi", action="store_true", help="do not run pi")
    ap.add_argument("--install-pi", action="store_true", help="npm-install pi into bench/.pi when missing")
    ap.add_argument("--out", type=Path, default=OUT / "results.md")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--op", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.op, args.repeat, args.warmup)

    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    pi_reason = "disabled with --no-pi" if args.no_pi else pi_unavailable(args.install_pi)
    if pi_reason:
        print(f"skipped pi: {pi_reason}", file=sys.stderr)
    lab_reason = pi_lab_unavailable()
    if lab_reason:
        print(f"skipped pi_lab: {lab_reason}", file=sys.stderr)

    load_at_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows = []
    for size in sizes:
        path = ensure_input(size)
        for op in ops:
            pi = None if pi_reason else run_pi(path, op, args.repeat, args.warmup)
            lab = None if lab_reason else run_pi_lab(path, op, args.repeat, args.warmup)
            for who, r in (("pi", pi), ("pi_lab", lab)):
                if r and "error" in r and not r["error"].startswith("n/a"):
                    print(f"{who} {op} {size}: {r['error']}", file=sys.stderr)
            row = (op, size, fmt_ms(pi, "first_ms"), fmt_ms(lab, "first_ms"), fmt_ratio(pi, lab, "first_ms"),
                   fmt_ms(pi), fmt_ms(lab), fmt_ratio(pi, lab), fmt_mb(pi), fmt_mb(lab))
            rows.append(row)
            print(" | ".join(row), file=sys.stderr)

    node_v = sh(["node", "--version"]) if shutil.which("node") else "none"
    pi_v = "not run"
    if not pi_reason:
        try:
            pi_v = json.loads((PI_PKG / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            pi_v = "?"
    command = "python bench/run.py " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = [
        "# pi vs pi_lab: session engine benchmark",
        "",
        f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- command: `{command.strip()}`",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, Node {node_v}"
        + (f"; load average {load_at_start:.1f} at start" if load_at_start is not None else ""),
        f"- pi: @earendil-works/pi-coding-agent {pi_v}; pi_lab commit {sh(['git', 'rev-parse', '--short', 'HEAD']) or '?'}",
        f"- first = the first call on a freshly opened session (cold caches); repeated = median of {args.repeat}"
        f" runs after {args.warmup} warm-up run(s); peak = max RSS of the measuring process",
    ]
    if pi_reason:
        lines.append(f"- skipped pi: {pi_reason}")
    if lab_reason:
        lines.append(f"- skipped pi_lab: {lab_reason}")
    lines += [
        "",
        "| operation | size | pi first ms | pi_lab first ms | first ratio | pi repeated ms | pi_lab repeated ms"
        " | repeated ratio | pi peak MB | pi_lab peak MB |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
