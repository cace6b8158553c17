"""The export's own manager shares its repeated short strings (export/sharing.py, memory on a
million entries): the page is byte for byte the page of a manager whose strings are not shared."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import generated_session, hostile_session, standard_sessions, write_session  # noqa: E402

import pi_lab.export.html as html  # noqa: E402
from pi_lab.export.sharing import SHARED_MAX_CHARS, share_strings  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.session._json import dumps  # noqa: E402

needs_script = pytest.mark.skipif(not Path(html.__file__).parents[1].joinpath("static", "export.js").exists(),
                                  reason="pi_lab/static/export.js is not built (jlpm build)")


def _nested(depth: int, leaf: object) -> object:
    for _ in range(depth):
        leaf = {"k": [leaf, "model"]}
    return leaf


def test_share_strings_keeps_every_value_and_shares_the_short_ones():
    long = "x" * (SHARED_MAX_CHARS + 1)
    entries = [orjson.loads(orjson.dumps(e)) for e in generated_session(5, 120)]
    entries += [
        {"type": "message", "id": "d", "parentId": "c", "message": _nested(5000, "assistant")},  # deeper than recursion
        {"type": "x", "id": "e", "a": [long, long, "message", 1, 1.0, True, None, "é" * 3], "b": long},
        {"type": "x", "id": "f", "a": [1, True, 1.0, "message"], "b": long[:-1] + "x", "c": {"message": "message"}},
    ]
    entries.append(["a list line is not an entry dict", "message"])
    before = dumps(entries)  # (the engine's writer: any depth)
    copy = orjson.loads(orjson.dumps(entries[-2]))
    assert share_strings(entries) > 0
    assert dumps(entries) == before  # every value as it was, keys in order
    e, f = entries[-3], entries[-2]
    assert f == copy and e["a"][1] == long
    assert e["a"][2] is f["a"][3] is f["c"]["message"]  # short equal strings: one object
    assert f["b"] == long and f["b"] is not long  # longer ones are left alone
    assert [type(v) for v in f["a"]] == [int, bool, float, str]  # 1, True and 1.0 are not merged
    assert entries[-1] == ["a list line is not an entry dict", "message"]
    ids = [x.get("parentId") for x in entries[1:-1] if isinstance(x, dict)]
    by_id = {x["id"]: x["id"] for x in entries[1:-1] if isinstance(x.get("id"), str)}
    # A parentId is the very string of the id it names (the first one read).
    assert all(p is by_id[p] for p in ids if isinstance(p, str) and p in by_id)


def _inputs(tmp: Path) -> list[tuple[str, Path]]:
    found = standard_sessions(tmp, seeds=(3,))
    found.append(("hostile", write_session(hostile_session(), tmp / "hostile.jsonl")))
    odd = [orjson.dumps(e) for e in generated_session(11, 200)]
    deep = {"type": "custom", "id": "deep", "parentId": "e11x199", "timestamp": "2026-01-01T01:00:00Z",
            "customType": "x", "data": _nested(300, "toolUse")}
    odd[50:50] = [b"", b"garbage {", b"\xff\xfe not utf-8", b"[1,2]",
                  b'{"type":"message","id":"s1","parentId":null,"timestamp":"t","message":'
                  b'{"role":"user","content":"lone \\ud83d step 1.5","timestamp":1.5}}']
    odd.append(dumps(deep))
    path = tmp / "odd.jsonl"
    path.write_bytes(b"\n".join(odd) + b"\n")
    found.append(("odd", path))
    return found


@needs_script
def test_the_page_of_a_shared_session_is_the_page_of_the_unshared_one(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name, path in _inputs(tmp_path):
        unshared = SessionManager.open(str(path), read_only=True, lazy=False)
        expected = html.export_html(unshared, out / f"{name}-unshared.html").read_bytes()
        shared = html.export_html(str(path), out / f"{name}.html").read_bytes()  # the export's own open shares
        assert shared == expected, name


@needs_script
def test_the_page_without_the_leafs_projection_is_the_page_with_it(tmp_path, monkeypatch):
    """The export lets the rows' projection go once the gauge is made (data._drop_projection)."""
    import pi_lab.export.data as data

    out = tmp_path / "out"
    out.mkdir()
    inputs = _inputs(tmp_path)
    dropped = [html.export_html(str(path), out / f"{name}.html").read_bytes() for name, path in inputs]
    monkeypatch.setattr(data, "_drop_projection", lambda rows: None)
    for (name, path), page in zip(inputs, dropped):
        assert html.export_html(str(path), out / f"{name}-kept.html").read_bytes() == page, name
