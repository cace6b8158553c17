#!/usr/bin/env python3
"""Peak memory of pi_lab's whole-file commands on one long linear session.

    .venv/bin/python bench/memory_bench.py [--linear 1000000] [--dir /tmp/pi-lab-memory] [--only export,export_branched]

1. Writes a linear session of ``--linear`` entries with bench/generate.py into ``--dir`` (a
   folder of its own, never the checkout: the 1M-entry file is 319 MB), unless it is there.
2. Runs each step as a fresh process under ``/usr/bin/time -v`` (Debian package ``time``) and
   prints its wall time and peak resident set size (``Maximum resident set size``; for a
   command that starts workers, the largest single process):

   * ``open``: ``SessionManager.open(FILE)``
   * ``context``: ``pi-lab context FILE``
   * ``export``: ``pi-lab export FILE -o DIR/out.html``
   * ``corpus``: ``pi-lab corpus DIR/corpus --no-cache --out DIR/pq`` (the session alone in
     its folder)
   * ``scan``: ``Corpus.scan([DIR/corpus], cache=False)``
   * ``extract_tables``: ``pi_lab.corpus.extract.extract_tables(FILE)`` (one file's tables,
     built a batch of rows at a time), with Arrow's default memory pool (mimalloc)
   * ``extract_jemalloc``: the same with Arrow's jemalloc pool, as ``pi-lab corpus`` sets it
     (the system pool where jemalloc is not built in): the pool that reuses memory the walk
     gave back decides a good part of the peak
   * ``export_branched``: ``pi-lab export BRANCHED -o DIR/branched.html``, where BRANCHED is the
     linear session with every 500th entry's parent moved 20 entries back (``--linear`` / 500
     branch points, same size; bench/generate.py's realistic mode holds the whole session
     in memory and needs about 19 GB for a million entries)

Prints a Markdown table; no number is checked (the goals are in bench/README.md).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
PI_LAB = [PYTHON, "-m", "pi_lab.cli"]


def _steps(session: Path, folder: Path) -> dict[str, list[str]]:
    corpus = folder / "corpus"
    branched = folder / f"branched-{session.name}"
    return {
        "open": [PYTHON, "-c", "import sys; from pi_lab import SessionManager; SessionManager.open(sys.argv[1])", str(session)],
        "context": [*PI_LAB, "context", str(session)],
        "export": [*PI_LAB, "export", str(session), "-o", str(folder / "out.html")],
        "corpus": [*PI_LAB, "corpus", str(corpus), "--no-cache", "--out", str(folder / "pq")],
        "scan": [PYTHON, "-c", "import sys; from pi_lab.corpus import Corpus; Corpus.scan([sys.argv[1]], cache=False)", str(corpus)],
        "extract_tables": [PYTHON, "-c", "import sys; from pi_lab.corpus.extract import extract_tables; extract_tables(sys.argv[1])",
                           str(session)],
        "extract_jemalloc": [PYTHON, "-c", _JEMALLOC + "from pi_lab.corpus.extract import extract_tables; extract_tables(sys.argv[1])",
                             str(session)],
        "export_branched": [*PI_LAB, "export", str(branched), "-o", str(folder / "branched.html")],
    }


# (pi_lab.corpus.cli's choice of Arrow memory pool)
_JEMALLOC = ("import sys, pyarrow as pa\n"
             "try:\n    pa.set_memory_pool(pa.jemalloc_memory_pool())\n"
             "except (NotImplementedError, pa.ArrowException):\n    pa.set_memory_pool(pa.system_memory_pool())\n")

_ID_AND_PARENT = re.compile(rb'"id":"([^"]+)","parentId":(null|"[^"]+")')


def write_branched(linear: Path, out: Path, every: int = 500, back: int = 20) -> None:
    """``linear`` with the parent of every ``every``-th entry moved ``back`` entries up: a
    session of the same size and depth with a branch point every ``every`` entries."""
    recent: list[bytes] = []
    temp = out.with_name(out.name + ".tmp")
    with open(linear, "rb") as source, open(temp, "wb") as sink:
        sink.write(source.readline())  # the header
        for n, line in enumerate(source):
            found = _ID_AND_PARENT.search(line)
            if found is None:
                raise SystemExit(f"memory_bench: {linear} line {n + 2} is not a generated entry")
            if n and n % every == 0 and len(recent) > back:
                line = line[:found.start(2)] + b'"' + recent[-back] + b'"' + line[found.end(2):]
            recent.append(found.group(1))
            if len(recent) > 2 * back:
                del recent[:back]
            sink.write(line)
    temp.replace(out)


def _measure(command: list[str]) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds (user + system), peak RSS in MB, exit status) of ``command``
    run under /usr/bin/time -v."""
    started = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-v", *command], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
    if found is None:
        raise SystemExit(f"memory_bench: no peak from /usr/bin/time:\n{run.stderr[-2000:]}")
    cpu = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", run.stderr))
    return seconds, cpu, int(found.group(1)) // 1024, run.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--linear", type=int, default=1_000_000, help="entries of the linear session")
    parser.add_argument("--dir", default="/tmp/pi-lab-memory", help="folder for the session and the outputs")
    parser.add_argument("--only", default="", help="comma-separated steps (default: all)")
    args = parser.parse_args()
    if not os.path.exists("/usr/bin/time"):
        raise SystemExit("memory_bench: /usr/bin/time is missing (apt-get install time)")
    folder = Path(args.dir)
    (folder / "corpus").mkdir(parents=True, exist_ok=True)
    session = folder / "corpus" / f"linear{args.linear}.jsonl"
    if not session.exists():
        subprocess.run([PYTHON, str(HERE / "generate.py"), "--linear", str(args.linear), "--out", str(session), "--quiet"],
                       check=True)
    steps = _steps(session, folder)
    wanted = [s for s in args.only.split(",") if s] or list(steps)
    branched = folder / f"branched-{session.name}"
    if "export_branched" in wanted and not branched.exists():
        write_branched(session, branched)
    unknown = [s for s in wanted if s not in steps]
    if unknown:
        raise SystemExit(f"memory_bench: unknown step {', '.join(unknown)} (steps: {', '.join(steps)})")
    print(f"linear session: {args.linear:,} entries, {session.stat().st_size / 1e6:.0f} MB ({session})")
    print("load average before: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    print("| step | wall (s) | CPU (s) | peak RSS (MB) | exit |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in wanted:
        shutil.rmtree(folder / "pq", ignore_errors=True)
        seconds, cpu, peak, status = _measure(steps[name])
        print(f"| {name} | {seconds:.1f} | {cpu:.1f} | {peak:,} | {status} |", flush=True)
    print("load average after: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
