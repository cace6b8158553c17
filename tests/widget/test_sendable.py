"""Every text the widget sends out of the kernel can be packed by jupyter_client (issue 22).

A lone surrogate in a session (message text, a label, the session name, tool arguments, an id)
or a file name that is not UTF-8 made ``pi_lab.open()`` fail in a notebook: jupyter_client packs
each message as UTF-8. Odd files are opened here and every message the widget emits (the comm's
state at open and in updates, each read request's reply, deltas, live events, refusals and
errors, the display bundles and the snapshot, log records) is packed with jupyter_client's own
``Session().pack`` and ``json_packer``; a notebook run in a real kernel shows no error."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

jupyter_client_session = pytest.importorskip("jupyter_client.session")

from ipywidgets.widgets.widget import _remove_buffers  # noqa: E402

from pi_lab.view.payload import READ_OPS  # noqa: E402
from pi_lab.widget import SessionWidget  # noqa: E402

S = "\ud800"  # a lone high surrogate
LOW = "\udc9f"  # what a non-UTF-8 byte of a file name decodes to


def _line(entry: dict[str, Any]) -> bytes:
    # json.dumps writes lone surrogates as \udXXX escapes, as JSON.stringify does in pi's files.
    return (json.dumps(entry) + "\n").encode()


def _ts(n: int) -> str:
    return f"2026-01-01T00:00:{n:02d}.000Z"


def _usage() -> dict[str, Any]:
    return {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def odd_session(text: str = S) -> bytes:
    """A session with ``text`` in every place session text can be: a branch, tool call and
    result, a label, a name, a compaction, a custom message, an id, the cwd and the model."""
    entries: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": f"s{text}", "timestamp": _ts(0), "cwd": f"/proj{text}"},
        {"type": "model_change", "id": "m1", "parentId": None, "timestamp": _ts(1), "provider": f"p{text}",
         "modelId": f"model{text}"},
        {"type": "message", "id": "u1", "parentId": "m1", "timestamp": _ts(2),
         "message": {"role": "user", "content": f"look at a{text}b", "timestamp": 2}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": _ts(3),
         "message": {"role": "assistant", "provider": f"p{text}", "model": f"model{text}", "usage": _usage(),
                     "stopReason": "toolUse", "timestamp": 3,
                     "content": [{"type": "thinking", "thinking": f"hm{text}"}, {"type": "text", "text": f"ok{text}"},
                                 {"type": "toolCall", "id": f"c{text}", "name": f"read{text}",
                                  "arguments": {"path": f"/f{text}.ts", f"key{text}": [f"v{text}", {"deep": f"x{text}"}]}}]}},
        {"type": "message", "id": "r1", "parentId": "a1", "timestamp": _ts(4),
         "message": {"role": "toolResult", "toolCallId": f"c{text}", "toolName": f"read{text}",
                     "content": [{"type": "text", "text": f"contents{text}"}], "isError": False, "timestamp": 4}},
        {"type": "message", "id": f"odd{text}", "parentId": "r1", "timestamp": _ts(5),
         "message": {"role": "assistant", "provider": "p", "model": "m", "usage": _usage(), "stopReason": "stop",
                     "timestamp": 5, "content": [{"type": "text", "text": f"done{text}"}]}},
        {"type": "label", "id": "l1", "parentId": f"odd{text}", "timestamp": _ts(6), "targetId": "u1",
         "label": f"here{text}"},
        {"type": "session_info", "id": "n1", "parentId": "l1", "timestamp": _ts(7), "name": f"name{text}"},
        {"type": "compaction", "id": "c1", "parentId": "n1", "timestamp": _ts(8), "summary": f"summary{text}",
         "firstKeptEntryId": "r1", "tokensBefore": 50, "details": {"readFiles": [f"/f{text}.ts"], "modifiedFiles": []}},
        {"type": "custom_message", "id": "x1", "parentId": "c1", "timestamp": _ts(9), "customType": f"note{text}",
         "content": f"custom{text}", "display": True},
        {"type": "message", "id": "u2", "parentId": "x1", "timestamp": _ts(10),
         "message": {"role": "user", "content": f"again{text}", "timestamp": 10}},
        # A second branch from u1, for the comparisons.
        {"type": "branch_summary", "id": "b1", "parentId": "u1", "timestamp": _ts(11), "fromId": "u2",
         "summary": f"left{text}"},
        {"type": "message", "id": "u3", "parentId": "b1", "timestamp": _ts(12),
         "message": {"role": "user", "content": f"other{text}", "timestamp": 12}},
    ]
    return b"".join(_line(e) for e in entries)


def invalid_utf8_session() -> bytes:
    """Lines whose bytes are not UTF-8 (pi decodes them as U+FFFD), around a valid session."""
    good = odd_session("x")
    bad = (b'{"type":"message","id":"bad1","parentId":"u3","timestamp":"2026-01-01T00:00:13.000Z",'
           b'"message":{"role":"user","content":"broken \xff\xfe \xed\xa0\x80 bytes","timestamp":13}}\n'
           b'\xc3\x28 not json either\n')
    return good + bad


CASES = {
    "lone surrogates": ("odd.jsonl", odd_session),
    "invalid utf-8 lines": ("bad-bytes.jsonl", invalid_utf8_session),
    # A file name that is not UTF-8: Python names it with surrogate escapes.
    "file name not utf-8": (os.fsdecode(b"name-\x9f\xff.jsonl"), lambda: odd_session("plain")),
}


def pack(value: Any) -> None:
    """What the kernel does with every message: jupyter_client's packer, and its JSON fallback."""
    for packed in (jupyter_client_session.Session().pack(value), jupyter_client_session.json_packer(value)):
        # The packer writes a surrogate escape (a name that is not UTF-8) back as its raw byte:
        # packed, but not UTF-8, which the server and the browser then cannot read.
        packed.decode("utf-8")


class RecordingComm:
    """Stands in for the kernel's comm: keeps what the widget sends."""

    kernel = object()
    comm_id = "recording"

    def __init__(self) -> None:
        self.sent: list[tuple[Any, Any]] = []

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        self.sent.append((data, buffers))

    def on_msg(self, callback: Any) -> None:
        pass

    def close(self, *args: Any, **kwargs: Any) -> None:
        pass


def _open(tmp_path: Path, case: str) -> tuple[SessionWidget, RecordingComm, Path]:
    name, make = CASES[case]
    try:
        path = tmp_path / name
        path.write_bytes(make())
    except (OSError, UnicodeEncodeError):  # a file system that takes only UTF-8 names
        pytest.skip("this file system refuses a name that is not UTF-8")
    widget = SessionWidget(str(path))
    comm = RecordingComm()
    widget.comm = comm
    return widget, comm, path


def _requests(widget: SessionWidget) -> list[tuple[str, dict[str, Any]]]:
    ids = [e.get("id") for e in widget.session_manager.get_entries()]
    leaf = widget.session_manager.leaf_id
    out: list[tuple[str, dict[str, Any]]] = [("hello", {}), ("structure", {}),
                                             ("rows", {"start": 0, "end": 1000, "version": widget.structure_version}),
                                             ("gauge", {}), ("compact_preview", {}), ("timeline", {}),
                                             ("no such op" + S, {}), ("entry", {"id": "missing" + S})]
    for entry_id in ids:
        out += [("entry", {"id": entry_id}), ("entry", {"id": entry_id, "full": True}),
                ("context_at", {"id": entry_id}), ("locate", {"id": entry_id}), ("locate", {"id": entry_id[:2], "prefix": True}),
                ("gauge", {"leaf_id": entry_id}), ("timeline_at", {"id": entry_id}), ("composition", {"id": entry_id}),
                ("compare_node", {"side": "a", "id": entry_id})]
        for op in ("context_diff", "compare_branches"):
            out.append((op, {"a": entry_id, "b": leaf}))
        out.append(("context_search", {"a": entry_id, "b": leaf, "query": "a" + S}))
        # What if: a replay with a small window, from each leaf (compactions happen in it).
        settings = {"context_window": 60, "reserve_tokens": 10, "keep_recent_tokens": 10}
        out += [("what_if", {**settings, "leaf_id": entry_id}), ("what_if_context", {**settings, "id": entry_id}),
                ("what_if_compaction", {**settings, "leaf_id": entry_id, "id": "missing" + S})]
    # Every read request the widget answers is asked at least once.
    assert {op for op, _ in out} >= set(READ_OPS)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_message_the_widget_sends_can_be_packed(tmp_path, case):
    widget, comm, path = _open(tmp_path, case)
    # The comm's state, as it opens (and as a frontend asking for the state gets it).
    state, _, _ = _remove_buffers(widget.get_state())
    pack({"state": state})
    for request_id, (op, args) in enumerate(_requests(widget)):
        widget._on_msg(widget, {"kind": "request", "id": request_id, "op": op, "args": args}, [])
    # Live: another writer appends a line (a delta), the agent streams text and runs a tool.
    with path.open("ab") as f:
        f.write(_line({"type": "message", "id": "live1", "parentId": widget.session_manager.leaf_id,
                       "timestamp": _ts(30), "message": {"role": "user", "content": "live" + S, "timestamp": 30}}))
    widget.session_manager.refresh()
    assert widget.sync() == "delta"
    # Read-only refusals name the file; navigation moves the leaf in memory (state updates).
    for op, args in (("label", {"id": "u1", "label": "new" + S}), ("compact", {}),
                     ("navigate", {"id": "u1"}), ("allow_writes", {})):
        widget._on_msg(widget, {"kind": "request", "id": op, "op": op, "args": args}, [])
    widget.selected_id = "u1"
    widget.search = "a" + S
    feed = widget._feed
    feed._on_event({"type": "message_update", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "stream" + S}, {"type": "thinking", "thinking": "think" + S}]}})
    feed._flush_stream()
    feed._on_event({"type": "tool_execution_start", "toolName": "tool" + S, "toolCallId": "c" + S})
    feed._on_event({"type": "tool_execution_end", "toolName": "tool" + S, "toolCallId": "c" + S, "isError": True})
    feed._on_event({"type": "compaction_end", "errorMessage": "failed" + S})
    widget._publish_state()
    widget._publish_layout()

    kinds = {(data.get("method"), (data.get("content") or {}).get("kind")) for data, _ in comm.sent}
    assert {("update", None), ("custom", "response"), ("custom", "delta"), ("custom", "event")} <= kinds, kinds
    for data, _ in comm.sent:
        pack(data)
    if case == "lone surrogates":
        # The text arrives, its lone surrogates written as pi writes them in the file.
        replies = [d["content"] for d, _ in comm.sent if (d.get("content") or {}).get("kind") == "response"]
        assert any(r"look at a\\ud800b" in json.dumps(r, ensure_ascii=False) for r in replies)  # JSON doubles the backslash
        assert widget.get_state()["session"]["name"] == "name\\ud800"


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_display_and_the_snapshot_can_be_packed(tmp_path, case):
    from pi_lab.widget.session_widget import FALLBACK_CSS
    from pi_lab.widget.snapshot import SNAPSHOT_MIME, snapshot_bundle

    widget, _, _ = _open(tmp_path, case)
    pack(widget._repr_mimebundle_())
    data, metadata = widget.snapshot_bundle()
    pack(data)
    pack(metadata)
    assert data[SNAPSHOT_MIME]["complete"] is True
    pending, _ = snapshot_bundle(widget.session_manager, text=widget.fallback_text(), css=FALLBACK_CSS, pending=True)
    pack(pending)
    cut, _ = widget.snapshot_bundle(limit=10)  # too large: the note names the export command and the file
    pack(cut)
    if case == "lone surrogates":
        assert "name\\ud800" in data["text/plain"] and "name\\ud800" in data["text/html"]


def test_the_displays_ipython_sends_can_be_packed(tmp_path, monkeypatch):
    import IPython.display

    widget, _, _ = _open(tmp_path, "lone surrogates")
    shown: list[Any] = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append((a, k)))
    widget._ipython_display_()
    assert len(shown) == 2
    for args, kwargs in shown:
        pack(args[0])
        pack(kwargs.get("metadata") or {})


def test_log_records_of_the_kernel_side_can_be_packed():
    """A record that reaches no handler goes to the kernel's stderr, a stream message."""
    import io

    import pi_lab.widget.session_widget  # noqa: F401  (puts the filter on pi_lab's kernel loggers)

    out = io.StringIO()
    handler = logging.StreamHandler(out)
    records = []
    for name in ("pi_lab", "pi_lab.corpus", "pi_lab.widget.jobs"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        try:
            try:
                raise ValueError(f"bad {S} in {LOW}")
            except ValueError:
                logger.warning("internal error while reading %s", f"/x/{LOW}{S}.jsonl", exc_info=True)
        finally:
            logger.removeHandler(handler)
        records.append(out.getvalue())
    text = out.getvalue()
    assert text.count("internal error while reading /x/\\udc9f\\ud800.jsonl") == 3
    assert "ValueError: bad \\ud800 in \\udc9f" in text
    pack({"name": "stderr", "text": text})


def test_a_notebook_opening_an_odd_session_shows_no_error(tmp_path):
    """The issue's notebook: ``pi_lab.open(path)`` in a real kernel (nbclient), no error output."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = tmp_path / "odd.jsonl"
    path.write_bytes(odd_session())
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import pi_lab\nw = pi_lab.open({str(path)!r})\nw"),
                nbformat.v4.new_code_cell("w.selected_id = 'u1'\nw.search = 'a\\ud800'\nprint(repr(w.session['name']))")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"], outputs
    first = [o for o in nb.cells[0].outputs if o.output_type == "display_data"]
    assert len(first) == 2
    assert "name\\ud800" in first[0]["data"]["text/plain"] and "application/vnd.jupyter.widget-view+json" in first[1]["data"]
    assert nb.cells[1].outputs[0]["text"] == "'name\\ud800'\n"  # the traitlet keeps the session's own text
