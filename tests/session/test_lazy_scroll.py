"""Scrolling through a large session keeps memory bounded (issue 11).

Row texts are made as rows are read (``RowState.texts`` of the range on screen); scrolling
from the first row to the last may then hold at most the texts themselves, never a copy of
the session. Measured in a subprocess (the session is large and tracemalloc slows what it
watches), on a generated session of 20,000 entries.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_SCRIPT = r"""
import importlib.util, json, sys, tracemalloc
sys.path.insert(0, sys.argv[1])
spec = importlib.util.spec_from_file_location("gen", sys.argv[1] + "/bench/generate.py")
gen = importlib.util.module_from_spec(spec); spec.loader.exec_module(gen)
from pi_lab.session.flatten import _TEXT_SLOT, navigation_rows
from pi_lab.session.readonly import session_from_bytes
from pi_lab.view.rows import RowState
lines, _ = gen.generate(20000, 2)
sm = session_from_bytes(("\n".join(lines) + "\n").encode(), "big.jsonl")
state = RowState(sm, home="/h")
made_at_layout = sum(_TEXT_SLOT.__get__(r) is not None for r in state.rows)
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
window = 100
text_bytes = 0
for start in range(0, len(state.rows), window):
    for item in state.texts(start, start + window):
        text_bytes += sys.getsizeof(item["text"])
grown = tracemalloc.get_traced_memory()[0] - base
peak = tracemalloc.get_traced_memory()[1] - base
tracemalloc.stop()
eager = [r.text for r in navigation_rows(sm, home="/h")]
same = [r.text for r in state.rows] == eager
print(json.dumps({"rows": len(state.rows), "made_at_layout": made_at_layout, "grown": grown, "peak": peak,
                  "text_bytes": text_bytes, "same": same}))
"""


def test_scrolling_every_row_holds_only_the_texts():
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(REPO)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["rows"] > 10_000
    assert figures["made_at_layout"] == 0  # no text before a row is read
    assert figures["same"]  # the texts read while scrolling are the eager ones
    # What stays is the texts (each kept once, in the flattened tree's cache) plus one list
    # slot per row; never anything that grows with the session's bodies.
    assert figures["grown"] <= 1.25 * figures["text_bytes"] + 8 * figures["rows"] + 256 * 1024, figures
    assert figures["peak"] <= figures["grown"] + 2 * 1024 * 1024, figures
