"""Large field-fuzzing run: ``python tools/fuzz_fields.py --files 10000 [--seed 1] [--json out.json]``.

Mutates one field of one line of the real fixtures and of generated sessions
(``tests/fuzz/fieldfuzz.py``), runs every public path on each mutated file (engine, view,
write, CLI, server, corpus scan, static export; ``--no-<path>`` leaves one out), and prints the
findings grouped by (step, exception type, innermost pi_lab frame) with a count and one
example mutation each, then the files with findings per path. A finding is any exception that
is not one of pi_lab's own errors, an "internal error" line, a traceback or a multi-line error
from the CLI, a 500 from the server's dispatch. Exit status 1 when there is any finding.
Long runs go in chunks: ``--seed`` picks the mutations, so chunks with different seeds add up.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))

import fieldfuzz  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000, help="mutated files to try")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI steps (faster)")
    parser.add_argument("--no-server", action="store_true", help="skip the server steps")
    parser.add_argument("--no-corpus", action="store_true", help="skip the corpus scan")
    parser.add_argument("--no-export", action="store_true", help="skip the static export")
    parser.add_argument("--json", help="write the grouped findings here")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    bases = list(fieldfuzz.base_sessions(generated=4))
    groups: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    crashed_files = 0
    new_files = 0
    per_path: collections.Counter[str] = collections.Counter()
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in range(args.files):
            name, lines = bases[n % len(bases)]
            data, mutation = fieldfuzz.mutate(lines, rng)
            case = work / f"case-{n % 4}"
            case.mkdir(exist_ok=True)
            path = case / "session.jsonl"
            path.write_bytes(data)
            findings = fieldfuzz.run_public_paths(path, case, cli=not args.no_cli, server=not args.no_server,
                                                  corpus=not args.no_corpus, export=not args.no_export)
            if findings:
                crashed_files += 1
            if any(not f.known() for f in findings):
                new_files += 1
            for family in {fieldfuzz.path_of(f.step) for f in findings}:
                per_path[family] += 1
            for finding in findings:
                groups[finding.key()].append(f"{name}: {mutation.describe()}: {finding.message}")
            for leftover in case.iterdir():
                if leftover.is_dir():
                    import shutil

                    shutil.rmtree(leftover)
            if (n + 1) % 500 == 0:
                print(f"  {n + 1} files, {crashed_files} with findings, {time.monotonic() - start:.0f} s", file=sys.stderr)
    print(f"{args.files} mutated files, {crashed_files} with findings, {len(groups)} distinct findings, "
          f"{time.monotonic() - start:.0f} s")
    known = {k for k in groups if fieldfuzz.Finding(*k, "").known()}
    print(f"  of which {len(known)} known (in others' code, reproduced by strict xfails in tests/fuzz/test_fixed_findings.py), "
          f"{len(groups) - len(known)} new; files with a new finding: {new_files}")
    for (step, error, where), examples in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        tag = "known" if (step, error, where) in known else "NEW  "
        print(f"{len(examples):6d}  {tag} {step:28s} {error:22s} {where}")
        print(f"        e.g. {examples[0][:300]}")
    skipped = {name for name in fieldfuzz.PATHS if getattr(args, f"no_{name}", False)}
    distinct = collections.Counter(fieldfuzz.path_of(step) for step, _, _ in groups)
    print("per path (files with findings / distinct findings):")
    for name in fieldfuzz.PATHS:
        state = "skipped" if name in skipped else f"{per_path[name]} / {distinct[name]}"
        print(f"  {name:8s} {state}")
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(
            {"files": args.files, "seed": args.seed, "files_with_findings": crashed_files,
             "files_with_new_findings": new_files,
             "per_path_files": dict(per_path), "skipped_paths": sorted(skipped),
             "findings": [{"step": k[0], "path": fieldfuzz.path_of(k[0]), "error": k[1], "where": k[2],
                           "known": k in known, "count": len(v), "examples": v[:5]} for k, v in groups.items()]},
            indent=1))
    return 1 if len(groups) > len(known) else 0


if __name__ == "__main__":
    raise SystemExit(main())
