"""The page is written in pieces and its header packed a key at a time (memory on a million
entries, bench/memory_bench.py), and the bytes are the ones the whole-string page had."""

from __future__ import annotations

import sys
from array import array
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import generated_session, hostile_session, standard_sessions, write_session  # noqa: E402

import pi_lab.export.data as data  # noqa: E402
import pi_lab.export.html as html  # noqa: E402
import pi_lab.session._json as engine_json  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.view.columns import pack_blob  # noqa: E402

needs_script = pytest.mark.skipif(not Path(html.__file__).parents[1].joinpath("static", "export.js").exists(),
                                  reason="pi_lab/static/export.js is not built (jlpm build)")


def _odd_session(tmp: Path) -> Path:
    """Branches and a compaction (generated), then lines pi skips or reads apart: a blank
    line, garbage, invalid UTF-8, a JSON array, lone surrogate escapes, a float and an
    integer past 2**64 in a body, and nesting deeper than orjson writes."""
    lines = [orjson.dumps(e) for e in generated_session(31, 300)]
    deep: object = "bottom"
    for _ in range(300):
        deep = [deep]
    odd = (b'{"type":"message","id":"s1","parentId":"e31x299","timestamp":"2026-01-01T01:00:00Z","message":'
           b'{"role":"user","content":"lone \\ud83d and \\udc00 step 1.5","timestamp":1.5,"big":36893488147419103232}}')
    deep_line = orjson.dumps({"type": "custom", "id": "s2", "parentId": "s1", "timestamp": "2026-01-01T01:00:01Z",
                              "customType": "x", "data": {"d": 0}}).replace(b'"d":0', b'"d":' + _nested(300))
    lines[40:40] = [b"", b"garbage {", b"\xff\xfe not utf-8", b"[1,2]"]
    lines += [odd, deep_line]
    path = tmp / "odd.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _nested(depth: int) -> bytes:
    return b"[" * depth + b'"bottom"' + b"]" * depth


def _inputs(tmp: Path) -> list[tuple[str, Path]]:
    found = standard_sessions(tmp, (3, 8), count=400)  # real fixtures when ../shared is there
    found.append(("hostile", write_session(hostile_session(), tmp / "hostile.jsonl")))
    found.append(("odd", _odd_session(tmp)))
    return found


def _blocks(columns: dict) -> list:
    out = []
    for name, code, dtype in data._COLUMNS:
        raw = array(code, columns[name]).tobytes()
        out.append((name, dtype, len(columns[name]), raw + b"\0" * ((-len(raw)) % 4)))
    return out


def _is_whole_header_blob(packed, magic, header, blocks, ensure_ascii):
    """Whether ``packed`` is what the engine's writer over the whole header gives (pack_blob
    before it wrote a key at a time): the header, with the ``columns`` it names, written at
    once and padded, then the blocks at the offsets it names."""
    from pi_lab.view.columns import _header_json

    length = int.from_bytes(packed[4:8], "little")
    head = packed[8:8 + length]
    described = engine_json.loads_object(head)["columns"]
    whole = _header_json(dict(header, columns=described), ensure_ascii)
    starts = [8 + length + sum(len(raw) for *_, raw in blocks[:k]) for k in range(len(blocks))]
    return (packed[:4] == magic and head == whole + b" " * ((-len(whole)) % 4)
            and [c["offset"] for c in described] == starts
            and [(c["name"], c["dtype"], c["count"]) for c in described] == [b[:3] for b in blocks]
            and packed[8 + length:] == b"".join(raw for *_, raw in blocks))


def test_the_header_packed_a_key_at_a_time_is_pack_blob(tmp_path, monkeypatch):
    """The same bytes as the engine's writer over the whole header (what pack_blob did before
    it wrote a key at a time, for the widget's structure and the export alike), with floats,
    lone surrogates, deep nesting and big integers in what it carries, escaped or not."""
    seen = []
    real = data._pack

    def both(header, columns):
        packed = real(header, columns)
        assert _is_whole_header_blob(packed, data.MAGIC, header, _blocks(columns), False)
        assert _is_whole_header_blob(pack_blob(data.MAGIC, header, _blocks(columns)), data.MAGIC, header,
                                     _blocks(columns), True)
        seen.append(header["count"])
        return packed

    monkeypatch.setattr(data, "_pack", both)
    for name, path in _inputs(tmp_path):
        data.export_data(SessionManager.open(str(path), read_only=True))
    assert len(seen) >= 5 and max(seen) >= 300
    # a header that names its own columns keeps that place
    odd = {"a": 1.5, "columns": "x", "z": "\u00e9"}
    blocks = _blocks({n: [1, 2] for n, *_ in data._COLUMNS})
    for ascii_only in (True, False):
        assert _is_whole_header_blob(pack_blob(b"PIR1", odd, blocks, ensure_ascii=ascii_only), b"PIR1", odd, blocks,
                                     ascii_only)


def test_the_whole_header_is_never_normalised(tmp_path, monkeypatch):
    """A digit before a dot anywhere in the header ("step 1.") made the engine's writer copy
    the whole header to normalise its floats, three times while the column offsets settled:
    about a gigabyte for a moment on a million entries. Only the values that need it are."""
    given = []
    real = engine_json._normalise

    def watch(value, *args, **kwargs):
        given.append(isinstance(value, dict) and {"text_search", "ids", "gauge"} <= value.keys())
        return real(value, *args, **kwargs)

    monkeypatch.setattr(engine_json, "_normalise", watch)
    sm = SessionManager.open(str(write_session(generated_session(4, 200), tmp_path / "g.jsonl")), read_only=True)
    header = _header_of(sm)
    assert any("." in text for text in header["text_search"]) or header["gauge"]  # something to normalise
    assert given and not any(given)
    # The widget's structure blob goes through the same writer (view.columns.pack_blob).
    given.clear()
    pack_blob(data.MAGIC, header, [])
    assert given and not any(given)


def _header_of(sm):
    main, _chunks = data.export_data(sm)
    length = int.from_bytes(main[4:8], "little")
    return engine_json.loads_object(main[8:8 + length])


@contextmanager
def _recording_writes(monkeypatch):
    writes: list[int] = []
    real = html.replacing

    @contextmanager
    def recording(*args, **kwargs):
        with real(*args, **kwargs) as handle:
            write = handle.write

            def counted(piece):
                writes.append(len(piece))
                return write(piece)

            handle.write = counted
            yield handle

    monkeypatch.setattr(html, "replacing", recording)
    yield writes


@needs_script
def test_the_written_page_is_the_rendered_page_in_pieces(tmp_path, monkeypatch):
    """export_html writes the page as it is made (the page of a million entries is 77 MB,
    and the string, its encoding and the joined chunks were three copies at once): the file
    is byte for byte render_html's string, and no write is the whole page."""
    out = tmp_path / "out"
    out.mkdir()
    for name, path in _inputs(tmp_path):
        sm = SessionManager.open(str(path), read_only=True)
        expected = html.render_html(sm).encode("utf-8")
        with _recording_writes(monkeypatch) as writes:
            written = html.export_html(sm, out / f"{name}.html")
        assert written.read_bytes() == expected, name
        assert len(writes) >= 5 and max(writes) < len(expected), (name, writes)


@needs_script
def test_a_leaf_export_in_pieces_restores_the_leaf(tmp_path):
    sm = SessionManager.open(str(write_session(generated_session(6, 200), tmp_path / "g.jsonl")), read_only=True)
    leaf = sm.leaf_id
    other = next(e["id"] for e in sm.entries if e.get("id") != leaf and e.get("type") == "message")
    html.export_html(sm, tmp_path / "a.html", leaf_id=other)
    assert sm.leaf_id == leaf
    sm.branch(other)
    expected = html.render_html(sm).encode("utf-8")
    sm.branch(leaf)
    assert (tmp_path / "a.html").read_bytes() == expected


def test_the_timeline_walk_is_not_kept_for_the_session(tmp_path):
    """The view's timeline request caches its walk per session (for a later ``since``
    request a page never makes): the export asked once and kept the walk of the whole branch
    to the end, about 0.85 KB per entry. The answer is the same either way."""
    from pi_lab.view import timeline_requests

    sm = SessionManager.open(str(write_session(generated_session(9, 300), tmp_path / "g.jsonl")), read_only=True)
    header = _header_of(sm)
    assert header["timeline"] and header["timeline"]["serial"] is None
    assert timeline_requests._CACHE.get(sm) is None
    from pi_lab.view.gauge import recorded_context_window
    from pi_lab.view.payload import SessionView, ViewSettings, read_request

    settings = ViewSettings(context_window=recorded_context_window(sm) or ViewSettings.context_window)
    answer = read_request(SessionView.open(sm, settings), "timeline", {})
    assert {**answer, "serial": None} == header["timeline"]
