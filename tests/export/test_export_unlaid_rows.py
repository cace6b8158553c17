"""The export's rows are not laid out (``RowState(..., lay_out=False)``: memory on a million
entries): the page is byte for byte the page made with laid-out rows, and the rows that skip
the layout hold the same flattened tree, marks, facts and gauge as laid-out ones."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import generated_session, hostile_session, standard_sessions, write_session  # noqa: E402
from helpers import SEED_SECTION_14, Clock, Ids, asst_msg, user_msg  # noqa: E402

import pi_lab.export.html as html  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.view.payload import SessionView, ViewSettings  # noqa: E402
from pi_lab.view.rows import RowState  # noqa: E402

needs_script = pytest.mark.skipif(not Path(html.__file__).parents[1].joinpath("static", "export.js").exists(),
                                  reason="pi_lab/static/export.js is not built (jlpm build)")


def _inputs(tmp: Path) -> list[tuple[str, Path]]:
    found = standard_sessions(tmp, seeds=(3, 8))
    found.append(("hostile", write_session(hostile_session(), tmp / "hostile.jsonl")))
    lines = [orjson.dumps(e) for e in generated_session(11, 200)]
    lines[40:40] = [b"", b"garbage {", b"\xff\xfe not utf-8", b"[1,2]"]
    path = tmp / "odd.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    found.append(("odd", path))
    return found


@needs_script
def test_the_page_of_unlaid_rows_is_the_page_of_laid_out_ones(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    inputs = _inputs(tmp_path)
    unlaid = [html.export_html(str(path), out / f"{name}.html").read_bytes() for name, path in inputs]
    opened: list[bool] = []
    real_open = SessionView.open.__func__  # type: ignore[attr-defined]

    def laid_out(cls, sm, settings=None, **view):
        opened.append(view.pop("lay_out", True))
        return real_open(cls, sm, settings, **view)

    monkeypatch.setattr(SessionView, "open", classmethod(laid_out))
    for (name, path), page in zip(inputs, unlaid):
        assert html.export_html(str(path), out / f"{name}-laid.html").read_bytes() == page, name
    assert opened and not any(opened)  # the export asked for unlaid rows every time


def _same_rows(unlaid: RowState, laid: RowState) -> None:
    a, b = unlaid.flat, laid.flat
    assert a.ids == b.ids and a.parents == b.parents and a.labels == b.labels
    assert a.on_active_path == b.on_active_path and a._categories == b._categories
    assert [(f.kind, f.error) for f in a.facts] == [(f.kind, f.error) for f in b.facts]
    assert unlaid.marks == laid.marks and set(unlaid.path_ids) == set(laid.path_ids)
    assert unlaid.entry_pos == laid.entry_pos and unlaid.leaf_id == laid.leaf_id


@pytest.mark.parametrize("filter_mode", ["default", "all"])
def test_unlaid_rows_hold_what_laid_out_rows_hold_and_lay_out_when_asked(tmp_path, filter_mode):
    for name, path in _inputs(tmp_path):
        sm = SessionManager.open(str(path), read_only=True, lazy=False)
        unlaid = RowState(sm, filter_mode=filter_mode, lay_out=False)
        laid = RowState(sm, filter_mode=filter_mode)
        _same_rows(unlaid, laid)
        assert not hasattr(unlaid, "columns") and hasattr(laid, "columns"), name  # no layout was made
        settings = ViewSettings()
        assert (SessionView(sm, unlaid, settings).refresh_gauge()
                == SessionView(sm, laid, settings).refresh_gauge()), name
        # A view asked for: the rows are laid out, and kept from then on. (Both laid out again
        # after the gauge: a layout shows the token estimates known when it is made.)
        unlaid.set_view(search="")
        laid.set_view(search="")
        _same_layout(unlaid, laid, name)
        unlaid.relayout(leaf_moved=True)
        laid.relayout(leaf_moved=True)
        _same_layout(unlaid, laid, name)


def _same_layout(a: RowState, b: RowState, name: str) -> None:
    for column in ("entry", "parent", "indent", "flags", "kind", "tokens", "gutter"):
        assert list(getattr(a.columns, column)) == list(getattr(b.columns, column)), (name, column)
    assert a.ids == b.ids and (a.leaf_row, a.anchor_row) == (b.leaf_row, b.anchor_row), name
    assert a.texts(0, len(a.rows)) == b.texts(0, len(b.rows)), name


def test_the_rows_copy_the_marks_path_only_when_an_append_adds_to_it():
    entries = [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]
    sm = SessionManager.in_memory(entries=entries, uuid_factory=Ids(), clock=Clock())
    state = RowState(sm)
    assert state.path_ids is state.marks.path_ids  # shared: no second set of the branch's ids
    before = frozenset(state.marks.path_ids)
    for step in range(4):
        sm.append_message(user_msg(f"question {step}") if step % 2 == 0 else asst_msg(f"answer {step}"))
        result = state.sync()
        assert result.kind == "delta"
        leaf = sm.leaf_id
        assert leaf in state.path_ids
        assert set(state.path_ids) == {e["id"] for e in sm.get_branch()}
        fresh = RowState(sm)
        assert list(state.columns.flags) == list(fresh.columns.flags)
    assert before <= state.path_ids and leaf not in before


def test_the_header_members_kept_as_json_are_the_writers_json():
    """data._written and data._JsonList (the timeline and the text_search member held as JSON
    until the header is packed) give the bytes the header's writer gives the values."""
    from pi_lab.export import data
    from pi_lab.session._json import dumps
    from pi_lab.view.columns import pack_blob

    texts = ["", "step 1.5: é", "lone \ud83d here", "x" * 300, "1e5", "tab\tquote\"", "🙂 " * 3]
    items = [texts[k % len(texts)] + str(k) for k in range(3 * data._JsonList._BLOCK + 5)]
    for count in (0, 1, 2, data._JsonList._BLOCK, data._JsonList._BLOCK + 1, len(items)):
        kept = data._JsonList()
        for k in range(0, count - 1, 2):
            kept.add(items[k], items[k + 1])
        if count % 2:
            kept.add(items[count - 1])
        values = items[:count]
        header = {"a": 1, "text_search": values, "timeline": {"x": [1.0, 2.5, "lone \udc00"], "n": None}}
        written = {"a": 1, "text_search": kept.written(), "timeline": data._written(header["timeline"])}
        assert pack_blob(b"TEST", written, [], ensure_ascii=False) == pack_blob(b"TEST", header, [], ensure_ascii=False)
        assert bytes(dumps(written)) == bytes(dumps(header))
