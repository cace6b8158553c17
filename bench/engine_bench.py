#!/usr/bin/env python3
"""Side by side: what a reader does first with a session, in pi 1.6.0 and in pi_lab (issue 28).

    python bench/engine_bench.py                          # bench/out/s100k.jsonl, 3 rounds
    python bench/engine_bench.py --session /tmp/linear1m.jsonl --rounds 1 --no-pi
    python bench/engine_bench.py --widget                  # also the widget's kernel build

Each round runs, each in a fresh process and one after the other (so both see the same load):

* ``engine``: pi (bench/pi_runner/run.mjs engine) and pi_lab open a copy of the file, then make
  the first ``build_session_context``, ``get_tree`` and ``get_branch`` (pi: the same four calls);
  wall ms per step, CPU seconds of the process (user + system, every thread) and its peak RSS.
  pi_lab opens as ``SessionManager.open(path)`` does by default (lazy bodies from 8 MiB).
* ``view`` (``--widget``): what the notebook widget and the JupyterLab viewer build in the
  kernel before the first rows can be drawn: the read-only eager open, ``SessionView.open``
  (flattening, row layout, gauge), the structure payload and the first 100 row texts.

The table gives the median of the rounds, the ratio pi_lab / pi, and the load average before
and after (the machine's 2 cores are shared: compare the ratio and the CPU seconds, not the
wall time across runs).
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
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RUNNER = BENCH / "pi_runner" / "run.mjs"
STEPS = ("open", "context", "tree", "branch")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_pi(path: Path) -> dict:
    r = subprocess.run(["node", "--max-old-space-size=16384", str(RUNNER), "engine", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-400:]}
    data = json.loads(r.stdout)
    return {"steps": data["steps"], "cpu_s": data["cpuMs"] / 1000, "peak_mb": data["peakRssMb"]}


def run_worker(path: Path, mode: str) -> dict:
    r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", mode, str(path)],
                       capture_output=True, text=True, cwd=REPO, env=_env())
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-400:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def worker(mode: str, path: str) -> int:
    """Inside the measuring process (imports before the clock, as pi's runner imports first)."""
    import resource

    from pi_lab.session import SessionManager

    if mode == "view":
        from pi_lab.view.payload import SessionView, rows_payload, structure_payload
    tmp = tempfile.mkdtemp(prefix="pi-lab-engine-")
    try:
        copy = os.path.join(tmp, os.path.basename(path))
        shutil.copyfile(path, copy)
        steps: dict[str, float] = {}
        cpu0 = time.process_time()
        t = time.perf_counter()
        if mode == "engine":
            sm = SessionManager.open(copy)
            steps["open"] = (time.perf_counter() - t) * 1000
            for name, call in (("context", sm.build_session_context), ("tree", sm.get_tree),
                               ("branch", sm.get_branch)):
                t = time.perf_counter()
                call()
                steps[name] = (time.perf_counter() - t) * 1000
        else:
            sm = SessionManager.open(copy, read_only=True, lazy=False)  # what the widget opens
            steps["open"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            view = SessionView.open(sm)
            steps["layout"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            structure_payload(view)
            rows_payload(view, 0, 100)
            steps["first rows"] = (time.perf_counter() - t) * 1000
        cpu = time.process_time() - cpu0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"steps": steps, "cpu_s": cpu, "peak_mb": peak}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def total(run: dict) -> float:
    return sum(run["steps"].values())


def git_commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    return r.stdout.strip() or "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--session", type=Path, default=BENCH / "out" / "s100k.jsonl")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-pi", action="store_true")
    ap.add_argument("--widget", action="store_true", help="also the widget/viewer build in the kernel")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(*args.worker)
    if not args.session.exists():
        raise SystemExit(f"{args.session} missing: python bench/generate.py --entries 100000 --out {args.session}")
    load_before = os.getloadavg()
    pi_runs: list[dict] = []
    lab_runs: list[dict] = []
    view_runs: list[dict] = []
    for n in range(args.rounds):
        if not args.no_pi:
            pi = run_pi(args.session)
            if "error" in pi:
                print(f"pi: {pi['error']}", file=sys.stderr)
            else:
                pi_runs.append(pi)
        lab = run_worker(args.session, "engine")
        if "error" in lab:
            raise SystemExit(f"pi_lab: {lab['error']}")
        lab_runs.append(lab)
        if args.widget:
            view = run_worker(args.session, "view")
            if "error" in view:
                raise SystemExit(f"pi_lab view: {view['error']}")
            view_runs.append(view)
        print(f"round {n + 1}: pi {total(pi_runs[-1]) if pi_runs else float('nan'):.0f} ms, "
              f"pi_lab {total(lab):.0f} ms" + (f", view {total(view_runs[-1]):.0f} ms" if view_runs else ""),
              file=sys.stderr)
    load_after = os.getloadavg()
    size = args.session.stat().st_size
    lines = [
        f"- command: `python bench/engine_bench.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
        f"- session: {args.session.name}, {size / 1e6:.0f} MB; pi_lab commit {git_commit()}; "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        f"- load average (1, 5, 15 min) before {load_before[0]:.1f} / {load_before[1]:.1f} / {load_before[2]:.1f}, "
        f"after {load_after[0]:.1f} / {load_after[1]:.1f} / {load_after[2]:.1f}; median of {args.rounds} round(s), "
        "pi and pi_lab alternating, each a fresh process",
        "",
        "| step (first call) | pi wall ms | pi_lab wall ms | ratio |",
        "| --- | ---: | ---: | ---: |",
    ]

    def cell(runs: list[dict], fn, digits: int = 1) -> str:
        return f"{statistics.median(fn(r) for r in runs):.{digits}f}" if runs else "–"

    def ratio(fn) -> str:
        if not pi_runs:
            return "–"
        return f"{statistics.median(fn(r) for r in lab_runs) / statistics.median(fn(r) for r in pi_runs):.2f}"

    for step in STEPS:
        lines.append(f"| {step} | {cell(pi_runs, lambda r: r['steps'][step])} | "
                     f"{cell(lab_runs, lambda r: r['steps'][step])} | {ratio(lambda r: r['steps'][step])} |")
    lines.append(f"| **open + context + tree + branch** | {cell(pi_runs, total)} | {cell(lab_runs, total)} | "
                 f"**{ratio(total)}** |")
    lines.append(f"| CPU seconds of the process (after imports) | {cell(pi_runs, lambda r: r['cpu_s'], 2)} | "
                 f"{cell(lab_runs, lambda r: r['cpu_s'], 2)} | {ratio(lambda r: r['cpu_s'])} |")
    lines.append(f"| peak RSS MB | {cell(pi_runs, lambda r: r['peak_mb'])} | {cell(lab_runs, lambda r: r['peak_mb'])} | "
                 f"{ratio(lambda r: r['peak_mb'])} |")
    if view_runs:
        lines += ["", "| widget / viewer build in the kernel (eager read-only open) | median | min | max |",
                  "| --- | ---: | ---: | ---: |"]
        for step in view_runs[0]["steps"]:
            values = [r["steps"][step] for r in view_runs]
            lines.append(f"| {step} ms | {statistics.median(values):.0f} | {min(values):.0f} | {max(values):.0f} |")
        for label, fn in (("total ms", total), ("CPU s", lambda r: r["cpu_s"]), ("peak RSS MB", lambda r: r["peak_mb"])):
            values = [fn(r) for r in view_runs]
            digits = 2 if label == "CPU s" else 0
            lines.append(f"| {label} | {statistics.median(values):.{digits}f} | {min(values):.{digits}f} | "
                         f"{max(values):.{digits}f} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
