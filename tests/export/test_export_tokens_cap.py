"""The export's tokens column never holds the widget's "not estimated yet" value.

The exported page draws its rows with the notebook's row list, which shows a row whose tokens
column holds ``TOKENS_UNKNOWN`` (0xFFFFFFFF) without an estimate; an export has every estimate,
so a real one that large must be capped one below it.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from helpers import SEED_SECTION_14  # noqa: E402

import pi_lab.export.data as data  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.view.columns import TOKENS_MAX, TOKENS_UNKNOWN  # noqa: E402
from pi_lab.view.rows import RowState  # noqa: E402


def test_an_estimate_past_the_column_is_capped_below_the_unknown_value(tmp_path, monkeypatch):
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    sm = SessionManager.open(str(path), read_only=True)
    packed: list[list[int]] = []
    real_pack = data._pack

    def capture(header, columns):
        packed.append(list(columns["tokens"]))
        return real_pack(header, columns)

    monkeypatch.setattr(data, "_pack", capture)
    monkeypatch.setattr(RowState, "_tokens", lambda self, entry: 2**40, raising=True)
    data.export_data(sm)
    assert packed and packed[0] and set(packed[0]) == {TOKENS_MAX}
    assert TOKENS_MAX < TOKENS_UNKNOWN
