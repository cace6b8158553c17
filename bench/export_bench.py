"""Self-contained HTML exports: pi_lab's against pi 1.6.0's own exporter, on the benchmark sessions.

    python bench/export_bench.py                 # sizes 10k,100k
    python bench/export_bench.py --sizes 10k

For each size: export with ``pi-lab export`` and with pi's ``exportFromFile`` (npm package in
bench/.pi, called from node), open each file in headless chromium (/usr/bin/chromium) with every
network request aborted except the file itself, and record the file size, the export time, the
time from navigation start to the first tree rows drawn (median of ``--repeat`` opens), the DOM node count once the page has
settled, and a screenshot of the tree at the deepest branch point (bench/out/export-*.png).
Writes bench/out/export_bench.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
import run  # noqa: E402  (bench/run.py: inputs and where pi is)

CHROMIUM = "/usr/bin/chromium"
PI_EXPORT = r"""
import { pathToFileURL } from "node:url";
const [pkg, input, output] = process.argv.slice(1);
const mod = await import(pathToFileURL(`${pkg}/dist/core/export-html/index.js`).href);
await mod.exportFromFile(input, { outputPath: output });
"""
# What "first rows drawn" means on each page: the first row of the tree list.
FIRST_ROW = {"pi_lab": ".pi-row", "pi": ".tree-node"}


def deepest_branch_point(path: Path) -> tuple[str | None, int]:
    """The id of the branch point with the longest root path, and that depth (iterative)."""
    from pi_lab.session import SessionManager

    sm = SessionManager.open(str(path), read_only=True)
    best, best_depth = None, -1
    stack = [(root, 0) for root in sm.get_tree()]
    while stack:
        node, depth = stack.pop()
        if len(node.children) > 1 and depth > best_depth:
            best, best_depth = node.entry.get("id"), depth
        stack.extend((child, depth + 1) for child in node.children)
    return best, best_depth


def export_pi_lab(src: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pi_lab.cli", "export", str(src), "-o", str(out)], check=True,
                   cwd=REPO, stdout=subprocess.DEVNULL, timeout=3600)
    return time.perf_counter() - start


def export_pi(src: Path, out: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / src.name  # pi may rewrite the file it opens
        shutil.copyfile(src, copy)
        start = time.perf_counter()
        subprocess.run(["node", "--input-type=module", "-e", PI_EXPORT, str(run.PI_PKG), str(copy), str(out)],
                       check=True, timeout=3600)
        return time.perf_counter() - start


def open_page(browser, html: Path, which: str, branch_id: str | None, shot: Path, timeout_s: float) -> dict:
    url = html.resolve().as_uri()
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    leaked: list[str] = []

    def route(r):
        if r.request.url.split("#")[0].split("?")[0] == url:
            r.continue_()
        else:
            leaked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    result: dict = {"opened": False}
    try:
        target = url + (f"#{branch_id}" if which == "pi_lab" and branch_id else "")
        start = time.perf_counter()
        page.goto(target, wait_until="commit", timeout=timeout_s * 1000)
        handle = page.wait_for_function(
            f"() => document.querySelector({json.dumps(FIRST_ROW[which])}) ? performance.now() : null",
            timeout=timeout_s * 1000, polling="raf")
        result["first_rows_ms"] = round(handle.json_value())
        result["first_rows_wall_s"] = round(time.perf_counter() - start, 2)
        page.wait_for_load_state("load", timeout=timeout_s * 1000)
        page.wait_for_timeout(1500)
        result["dom_nodes"] = page.evaluate("document.getElementsByTagName('*').length")
        result["opened"] = True
        if which == "pi" and branch_id:
            page.evaluate("id => { const n = document.querySelector(`.tree-node[data-id=\"${id}\"]`);"
                          " if (n) n.scrollIntoView({block: 'center'}); }", branch_id)
            page.wait_for_timeout(300)
        page.screenshot(path=str(shot))
        result["screenshot"] = str(shot.relative_to(REPO))
    except Exception as error:  # a page that does not open within the time is a result too
        result["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    finally:
        result["requests_left"] = len(leaked)
        page.close()
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10k,100k")
    ap.add_argument("--timeout", type=float, default=180, help="seconds to wait for a page's first rows")
    ap.add_argument("--repeat", type=int, default=3, help="opens of each page; the median first rows is reported")
    args = ap.parse_args()
    unavailable = run.pi_unavailable(False)
    from playwright.sync_api import sync_playwright

    results = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        for size in args.sizes.split(","):
            src = run.ensure_input(size)
            branch_id, depth = deepest_branch_point(src)
            for which in ("pi_lab", "pi"):
                out = run.OUT / f"export-{size}-{which}.html"
                row = {"size": size, "exporter": which, "branch_depth": depth}
                if which == "pi" and unavailable:
                    row["error"] = unavailable
                    results.append(row)
                    continue
                row["export_s"] = round((export_pi_lab if which == "pi_lab" else export_pi)(src, out), 2)
                row["bytes"] = out.stat().st_size
                runs = []
                for _ in range(max(1, args.repeat)):
                    runs.append(open_page(browser, out, which, branch_id, run.OUT / f"export-{size}-{which}.png",
                                          args.timeout))
                    if not runs[-1]["opened"]:
                        break  # a page that does not open once is not opened again
                opened = [r for r in runs if r["opened"]]
                row.update(runs[-1] if not opened else sorted(opened, key=lambda r: r["first_rows_ms"])[len(opened) // 2])
                row["first_rows_all_ms"] = [r.get("first_rows_ms") for r in runs]
                results.append(row)
                print(json.dumps(row), file=sys.stderr)
        browser.close()
    (run.OUT / "export_bench.json").write_text(json.dumps(results, indent=2))
    print("| session | exporter | file size | export | first rows | DOM nodes | requests left |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        size = f"{r['bytes'] / 1e6:.1f} MB" if "bytes" in r else "—"
        first = f"{r['first_rows_ms'] / 1000:.2f} s" if "first_rows_ms" in r else r.get("error", "—")
        print(f"| {r['size']} | {r['exporter']} | {size} | {r.get('export_s', '—')} s | {first} | "
              f"{r.get('dom_nodes', '—')} | {r.get('requests_left', '—')} |")
    # The goals of the issue: a quarter of pi's size, first rows in a tenth of pi's time.
    by = {(r["size"], r["exporter"]): r for r in results}
    for size in args.sizes.split(","):
        ours, theirs = by.get((size, "pi_lab")), by.get((size, "pi"))
        if ours and theirs and "bytes" in ours and "bytes" in theirs:
            line = f"{size}: pi_lab's file is {100 * ours['bytes'] / theirs['bytes']:.1f} % of pi's"
            if "first_rows_ms" in ours and "first_rows_ms" in theirs:
                line += f", first rows in {100 * ours['first_rows_ms'] / theirs['first_rows_ms']:.1f} % of pi's time"
            elif "first_rows_ms" in ours:
                line += f"; pi's page did not show rows ({theirs.get('error', 'no rows')})"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
