"""Large field-fuzzing run: ``python tools/fuzz_fields.py --files 10000 [--seed 1] [--json out.json]``.

Mutates one field of one line of the real fixtures and of generated sessions
(``tests/fuzz/fieldfuzz.py``), runs every public path on each mutated file, and prints the
findings grouped by (step, exception type, innermost pi_lab frame) with a count and one
example mutation each. A finding is any exception that is not one of pi_lab's own errors, a
traceback or a multi-line error from the CLI. Exit status 1 when there is any finding.
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
    parser.add_argument("--no-server", action="store_true", help="skip the server store steps")
    parser.add_argument("--json", help="write the grouped findings here")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    bases = list(fieldfuzz.base_sessions(generated=4))
    groups: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    crashed_files = 0
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
            findings = fieldfuzz.run_public_paths(path, case, cli=not args.no_cli, server=not args.no_server)
            if findings:
                crashed_files += 1
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
    for (step, error, where), examples in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(examples):6d}  {step:28s} {error:22s} {where}")
        print(f"        e.g. {examples[0][:300]}")
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(
            [{"step": k[0], "error": k[1], "where": k[2], "count": len(v), "examples": v[:5]} for k, v in groups.items()],
            indent=1))
    return 1 if groups else 0


if __name__ == "__main__":
    raise SystemExit(main())
