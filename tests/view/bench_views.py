"""Timings of the pi_lab.view functions on a session file (not a test; run it by hand).

    python bench/generate.py --entries 100000 --out /tmp/s100k.jsonl
    .venv/bin/python tests/view/bench_views.py /tmp/s100k.jsonl [repeats]

The file is read as bytes into an in-memory manager (nothing is written). "other leaf" is the
deepest tip that a branch summary points to (an abandoned branch), so the diff and the
comparison are between two real leaves. Each line: median and best wall time, best CPU time.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from pi_lab.session.readonly import session_from_bytes
from pi_lab.view import compare_branches, context_composition, context_diff, context_timeline


def main(argv: list[str]) -> None:
    path = Path(argv[1])
    repeats = int(argv[2]) if len(argv) > 2 else 5
    sm = session_from_bytes(path.read_bytes(), path)
    leaf = sm.leaf_id
    tips = [e["fromId"] for e in sm.entries if e.get("type") == "branch_summary" and sm.get_entry(e.get("fromId") or "")]
    other = max(tips, key=lambda t: len(sm.get_branch(t))) if tips else sm.get_branch()[0]["id"]
    print(f"{path.name}: {len(sm.entries)} entries, leaf path {len(sm.get_branch(leaf))}, "
          f"other leaf path {len(sm.get_branch(other))}")

    def run(name, call):
        call()  # the first call also fills the manager's path cache
        walls, cpus = [], []
        for _ in range(repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            call()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        print(f"{name:36s} wall median {statistics.median(walls) * 1000:6.0f} ms  "
              f"best {min(walls) * 1000:6.0f} ms  cpu best {min(cpus) * 1000:6.0f} ms")

    run("context_timeline(leaf)", lambda: context_timeline(sm))
    run("context_diff(other leaf, leaf)", lambda: context_diff(sm, other, leaf))
    run("context_diff(..., search='auth')", lambda: context_diff(sm, other, leaf, search="auth"))
    run("context_composition(leaf)", lambda: context_composition(sm, leaf))
    run("compare_branches(other leaf, leaf)", lambda: compare_branches(sm, other, leaf))


if __name__ == "__main__":
    main(sys.argv)
