#!/usr/bin/env python3
"""pi_lab's corpus on a pi folder beside ccusage, at any size (issue 28: speed and memory).

    .venv/bin/python bench/scale_bench.py                       # the corpus_bench folder (306 files, 183 MB)
    .venv/bin/python bench/scale_bench.py --dir /tmp/pi-lab-scale-large --sessions 1300 --copies 5 --forks 900 \
        --sizes 30,60,120,250,500,240 --repeat 1            # 8,706 files, ~3.9 GB (ccusage's benchmark has 8,700 files, 3.3 GB)
    .venv/bin/python bench/scale_bench.py --folder DIR          # any folder of pi sessions, as it is

Writes the folder under ``--dir`` (default ``/tmp/pi-lab-scale``, never the checkout; reused while
the arguments are the same) the way ``bench/corpus_bench.py`` does: generated sessions of the
given sizes (bench/generate.py), forks whose first entries are copies of their parent's path
(every sixth a fork of a fork), and the real fixtures when ../shared is there. Then, each step a
fresh process under ``/usr/bin/time -v`` (wall, CPU = user + system of the process and the
workers it waited for, peak RSS of the largest one), TZ=UTC, after one untimed run of each
(page cache, bytecode), medians of ``--repeat`` runs taken round after round:

* ``usage``: ``pi-lab usage DIR --no-cache --by day --json`` (the model calls only);
* ``usage-orjson``: the same with msgspec hidden (every assistant line decoded by orjson);
* ``usage-w1``: the same with ``--workers 1`` (no forked readers, whatever the load);
* ``ccusage``: ``ccusage pi daily --json --offline --pi-path DIR`` (20.0.24's native binary,
  bench/ccusage_setup.sh; skipped without node/npm or with ``--no-ccusage``);
* ``scan``: ``Corpus.scan([DIR], cache=False)`` (every table);
* ``corpus``: ``pi-lab corpus DIR --no-cache --out OUT`` (every table, written as Parquet);
* ``fill``: ``pi-lab usage DIR --by day --json`` with an empty cache (every table computed and
  written to the cache, the report kept beside it);
* ``cached``: ``pi-lab usage DIR --by day --json`` with its cache filled (by an untimed run);
* ``scan-cached``: ``Corpus.scan([DIR])`` with the cache filled (the whole process);
* ``rescan``: ``Corpus.scan([DIR])`` with the cache filled and one file's mtime changed: that file
  is read again, every other file's rows come from the cache, and a new generation is written.

Peak RSS is the largest single process's (the scan's own or one of its readers'); from 256 MB of
sessions a scan spills its rows to a private temporary folder (pi_lab/corpus/spill.py).

Prints the load average before and after and a Markdown table (also ``<dir>/results.md``), and
checks that pi_lab's days agree with ccusage's (they differ only where ccusage counts a fork's
copied calls twice: the table says by how much).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYTHON = sys.executable
CCUSAGE_VERSION = "20.0.24"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"scale_bench: cannot load bench/{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(f"bench_{name}", module)
    spec.loader.exec_module(module)
    return module


def build(folder: Path, sessions: int, forks: int, sizes: tuple[int, ...], seed: int, copies: int = 0,
          keep: bool = False) -> dict:
    """corpus_bench's layout at any size, holding one session's lines at a time (a fork reads
    its parent back from disk). ``copies``: each generated session is also written that many
    times again, a century later each time (``"timestamp":"2026-`` becomes ``2126-``, ``2226-``
    ...) under a new session id: other sessions to every tool (their calls fall on other days,
    so ccusage's timestamp de-duplication does not merge them), at the cost of a byte copy
    instead of the generator's ~1 ms per entry. ``keep``: keep the sessions already written."""
    cb = _module("corpus_bench")
    gen = cb._generate_module()
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    written: list[Path] = []
    for i in range(sessions):
        lines, _ = gen.generate(sizes[i % len(sizes)], seed * 10_000 + i)
        header = json.loads(lines[0])
        path = folder / cb._project_dir(header.get("cwd", "/")) / cb._file_name(header)
        if not (keep and path.is_file()):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(path)
        if i % 500 == 499:
            print(f"  {i + 1}/{sessions} sessions", file=sys.stderr)
    for k in range(1, copies + 1):
        for path in written[:sessions]:
            data = path.read_bytes()
            header = json.loads(data[: data.index(b"\n")])
            new_id = f"{header['id'][:-4]}{k:04d}"
            data = data.replace(b'"timestamp":"20', b'"timestamp":"%d' % (20 + k)).replace(
                header["id"].encode(), new_id.encode())
            header = json.loads(data[: data.index(b"\n")])
            target = path.parent / cb._file_name(header)
            target.write_bytes(data)
            written.append(target)
    for j in range(forks):
        pool = written[len(written) - j:] if j % 6 == 5 and j else written[: len(written) - j]
        parent = pool[rng.randrange(len(pool))]
        parent_lines = parent.read_text(encoding="utf-8").splitlines()
        path, lines = cb._fork(rng, gen, parent, parent_lines, j)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(path)
    real = 0
    if cb.FIXTURES.is_dir():
        target = folder / "--fixtures--"
        target.mkdir()
        for source in sorted(cb.FIXTURES.glob("*.jsonl")):
            shutil.copyfile(source, target / source.name)
            real += 1
    found = list(folder.rglob("*.jsonl"))  # (with keep, sessions an earlier, larger build left too)
    return {"files": len(found), "bytes": sum(p.stat().st_size for p in found), "fixtures": real}


def _touch_one(folder: Path) -> None:
    """Give the first session file a new mtime (its bytes unchanged): a cached scan reads it again."""
    first = min(folder.rglob("*.jsonl"))
    os.utime(first, ns=(time.time_ns(), time.time_ns()))


def measure(command: list[str], env: dict[str, str]) -> dict:
    """Wall seconds, CPU seconds and peak RSS (MB) of ``command`` under /usr/bin/time -v."""
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, env=env, timeout=7200)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")

    def field(name: str) -> float:
        found = re.search(rf"{re.escape(name)}: ([\d.]+)", done.stderr)
        return float(found.group(1)) if found else float("nan")

    return {"wall": wall, "cpu": field("User time (seconds)") + field("System time (seconds)"),
            "rss": field("Maximum resident set size (kbytes)") / 1024, "out": done.stdout}


def median_of(runs: list[dict]) -> dict:
    best = sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]
    # (the CPU seconds' own median: the run of the median wall time may be an outlier in CPU)
    cpu = sorted(r["cpu"] for r in runs)[len(runs) // 2]
    return {**best, "walls": [r["wall"] for r in runs], "cpu": cpu, "cpus": [r["cpu"] for r in runs],
            "rss": max(r["rss"] for r in runs)}


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pi-lab-scale"))
    ap.add_argument("--folder", type=Path, help="measure this folder as it is (nothing generated)")
    ap.add_argument("--sessions", type=int, default=240)
    ap.add_argument("--forks", type=int, default=60)
    ap.add_argument("--sizes", default="30,60,120,250,500,1200", help="entries per generated session, cycled")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--copies", type=int, default=0, help="write each generated session this many more times, "
                    "a century later each (see build)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", default="usage,ccusage,scan,corpus,cached,scan-cached",
                    help="of usage, usage-orjson, usage-w1, ccusage, scan, corpus, fill, cached, scan-cached, rescan")
    ap.add_argument("--no-ccusage", action="store_true")
    ap.add_argument("--warmup", default=None, help="steps run once untimed first (default: every step; the cached "
                    "steps need a filled cache, which the untimed run of a cache-filling step such as 'cached' or "
                    "'fill' makes)")
    args = ap.parse_args(argv)
    if not os.path.exists("/usr/bin/time"):
        raise SystemExit("scale_bench: /usr/bin/time is missing (apt-get install time)")
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.folder is not None:
        folder = args.folder.resolve()
        files = list(folder.rglob("*.jsonl"))
        info = {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}
    else:
        folder = args.dir / "sessions"
        stamp = args.dir / "build.json"
        wanted = {"sessions": args.sessions, "forks": args.forks, "sizes": args.sizes, "seed": args.seed, "copies": args.copies}
        if stamp.is_file() and json.loads(stamp.read_text()).get("args") == wanted and folder.is_dir():
            info = json.loads(stamp.read_text())["info"]
        else:
            print(f"writing {args.sessions} sessions and {args.forks} forks into {folder} ...", file=sys.stderr)
            info = build(folder, args.sessions, args.forks, tuple(int(x) for x in args.sizes.split(",")), args.seed,
                         args.copies)
            stamp.write_text(json.dumps({"args": wanted, "info": info}))
    cache = args.dir / "cache"
    out = args.dir / "parquet"
    env = {**os.environ, "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(args.dir / "pycache")}
    pi_lab = [PYTHON, "-m", "pi_lab.cli"]
    steps = {
        "usage": (pi_lab + ["usage", str(folder), "--no-cache", "--by", "day", "--json"], None),
        # The same command with msgspec hidden (its typed decode off: every line the orjson way)
        "usage-orjson": (pi_lab + ["usage", str(folder), "--no-cache", "--by", "day", "--json"], None),
        # The same command in one process (no forked readers)
        "usage-w1": (pi_lab + ["usage", str(folder), "--no-cache", "--by", "day", "--json", "--workers", "1"], None),
        "scan": ([PYTHON, "-c", "import sys; from pi_lab.corpus import Corpus; Corpus.scan([sys.argv[1]], cache=False)", str(folder)], None),
        "corpus": (pi_lab + ["corpus", str(folder), "--no-cache", "--out", str(out)], lambda: shutil.rmtree(out, ignore_errors=True)),
        "fill": (pi_lab + ["usage", str(folder), "--by", "day", "--json", "--cache-dir", str(cache)],
                 lambda: shutil.rmtree(cache, ignore_errors=True)),
        "cached": (pi_lab + ["usage", str(folder), "--by", "day", "--json", "--cache-dir", str(cache)], None),
        "scan-cached": ([PYTHON, "-c", "import sys; from pi_lab.corpus import Corpus; Corpus.scan([sys.argv[1]], cache=sys.argv[2])",
                         str(folder), str(cache)], None),
        "rescan": ([PYTHON, "-c", "import sys; from pi_lab.corpus import Corpus; Corpus.scan([sys.argv[1]], cache=sys.argv[2])",
                    str(folder), str(cache)], lambda: _touch_one(folder)),
    }
    hidden = args.dir / "no-msgspec"
    hidden.mkdir(exist_ok=True)
    (hidden / "msgspec.py").write_text("raise ImportError('hidden by scale_bench (step usage-orjson)')\n")
    envs = {"usage-orjson": {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(hidden), env.get("PYTHONPATH")]))}}
    wanted_steps = [s for s in args.steps.split(",") if s]
    if "ccusage" in wanted_steps and not args.no_ccusage:
        setup = subprocess.run(["bash", str(HERE / "ccusage_setup.sh")], capture_output=True, text=True,
                               env={**os.environ, "CCUSAGE_VERSION": CCUSAGE_VERSION})
        if setup.returncode == 0:
            steps["ccusage"] = ([setup.stdout.strip().splitlines()[-1], "pi", "daily", "--json", "--offline", "--pi-path", str(folder)], None)
        else:
            print(f"skipped ccusage: {setup.stderr.strip()[-300:]}", file=sys.stderr)
    order = [s for s in wanted_steps if s in steps]
    load_before = _load()
    started = time.perf_counter()
    # The cached steps need a filled cache; every step runs once untimed (page cache, bytecode).
    warm = order if args.warmup is None else [s for s in order if s in args.warmup.split(",")]
    if "fill" in warm:
        shutil.rmtree(cache, ignore_errors=True)
    for name in warm:
        command, before = steps[name]
        if before is not None:
            before()
        measure(command, envs.get(name, env))
    # Round after round of every step (not every run of one step, then the next): a load that
    # changes during the run weighs on each step alike.
    runs: dict[str, list[dict]] = {name: [] for name in order}
    for _ in range(args.repeat):
        for name in order:
            command, before = steps[name]
            if before is not None:
                before()
            runs[name].append(measure(command, envs.get(name, env)))
    results = {name: median_of(runs[name]) for name in order}
    load_after = _load()
    lines = [f"Folder: {info['files']:,} files, {info['bytes'] / 1e6:,.0f} MB ({folder}); "
             f"{os.cpu_count()} cores; median of {args.repeat}; load average before {load_before}, after {load_after}; "
             f"{time.perf_counter() - started:.0f} s in all.", "",
             "| step | wall s (runs) | CPU s (runs) | peak RSS MB |", "| --- | ---: | ---: | ---: |"]
    for name in order:
        r = results[name]
        lines.append(f"| {name} | {r['wall']:.2f} ({', '.join(f'{w:.2f}' for w in r['walls'])}) | {r['cpu']:.2f} ({', '.join(f'{c:.2f}' for c in r['cpus'])}) | {r['rss']:,.0f} |")
    if "ccusage" in results:
        cc = results["ccusage"]
        for name in ("usage", "usage-orjson", "usage-w1", "scan", "cached"):
            if name in results:
                lines.append(f"\n{name} / ccusage: **{results[name]['wall'] / cc['wall']:.2f}x** wall, "
                             f"{results[name]['cpu'] / cc['cpu']:.2f}x CPU")
        if "usage" in results:
            lines.append("\n" + compare(results["usage"]["out"], cc["out"]))
    text = "\n".join(lines)
    print(text)
    (args.dir / "results.md").write_text(text + "\n")
    return 0


def compare(pi_out: str, cc_out: str) -> str:
    """pi_lab's and ccusage's token totals (ccusage also counts a fork's copies)."""
    keys = (("input", "inputTokens"), ("output", "outputTokens"), ("cache_read", "cacheReadTokens"),
            ("cache_write", "cacheCreationTokens"))
    pi_days = json.loads(pi_out)
    cc_days = json.loads(cc_out).get("daily", [])
    pi_total = {k: sum(d[k] for d in pi_days) for k, _ in keys}
    cc_total = {k: sum(d[c] for d in cc_days) for k, c in keys}
    same_days = {d["day"] for d in pi_days} == {d["date"] for d in cc_days}
    parts = [f"{k}: pi_lab {pi_total[k]:,.0f} / ccusage {cc_total[k]:,.0f}" for k, _ in keys]
    return ("Totals " + ("(same days)" if same_days else "(days differ)") + ": " + "; ".join(parts) + ".")


if __name__ == "__main__":
    sys.exit(main())
