"""The page's /tree layout (src_frontend/export/layout.ts, run in node) gives the same row
columns as Python's RowState for every filter mode, some searches and folds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import node_bundle, standard_sessions

from pi_lab.export.data import export_data
from pi_lab.export.html import pack
from pi_lab.session import SessionManager
from pi_lab.session.flatten import FILTER_MODES
from pi_lab.view.kinds import FLAG
from pi_lab.view.rows import RowState

COLUMNS = ("entry", "parent", "indent", "flags", "kind", "tokens", "gutter")


@pytest.fixture(scope="module")
def checker(tmp_path_factory) -> Path:
    return node_bundle(Path(__file__).with_name("layout_check.ts"), tmp_path_factory.mktemp("layout"))


def _sessions(tmp: Path) -> list[tuple[str, Path]]:
    return standard_sessions(tmp, (1, 2, 3, 4))


def _views(sm) -> list[dict]:
    base = RowState(sm, filter_mode="all")
    foldable = [base.ids[r] for r in range(len(base.ids)) if base.columns.flags[r] & FLAG["foldable"]]
    folds = [foldable[:1], foldable[1:4]] if foldable else []
    views = [{"filter_mode": mode, "search": "", "folded": []} for mode in FILTER_MODES]
    for search in ("user", "read auth", "a", "zzz-nothing"):
        views.append({"filter_mode": "default", "search": search, "folded": []})
        views.append({"filter_mode": "all", "search": search, "folded": []})
    for fold in folds:
        for mode in ("default", "all", "no-tools"):
            views.append({"filter_mode": mode, "search": "", "folded": fold})
    return views


def test_js_layout_matches_python_rows(checker, tmp_path):
    sessions = _sessions(tmp_path)
    assert len(sessions) >= 5
    for name, path in sessions:
        sm = SessionManager.open(str(path), read_only=True)
        main, _ = export_data(sm)
        packed = tmp_path / f"{name}.b64"
        packed.write_text(pack(main))
        views = _views(sm)
        (tmp_path / "views.json").write_text(json.dumps(views))
        run = subprocess.run(["node", str(checker), str(packed), str(tmp_path / "views.json")],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        results = json.loads(run.stdout)
        for view, got in zip(views, results, strict=True):
            rows = RowState(sm, **view)
            where = (name, view)
            assert got["ids"] == rows.ids, where
            for column in COLUMNS:
                assert got[column] == getattr(rows.columns, column), (where, column)
            assert got["gutter_parent"] == rows.gutters.parent, where
            assert got["gutter_position"] == rows.gutters.position, where
            assert got["gutter_show"] == rows.gutters.show, where
            assert got["leaf_row"] == rows.leaf_row, where
            assert got["anchor_row"] == rows.anchor_row, where
            assert got["multiple_roots"] == rows.multiple_roots, where
            # The blob the transport hands the core decodes to the same rows.
            assert got["blob_flags"] == rows.columns.flags, where
            assert got["blob_gutter"] == rows.columns.gutter, where
            assert got["blob_row_count"] == len(rows.ids), where
            assert got["blob_leaf_row"] == rows.leaf_row, where
