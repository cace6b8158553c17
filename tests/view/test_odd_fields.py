"""Odd field types and deep nesting in the view model (issue 15): every answer is a result or a
pi_lab error, never a built-in exception; no walk over file data recurses."""

from __future__ import annotations

import json

import orjson
import pytest
from helpers import SEED_SECTION_14, Clock, Ids

from pi_lab.errors import PiLabError
from pi_lab.session import SessionManager
from pi_lab.view.detail import _pretty
from pi_lab.view.gauge import recorded_context_window, recorded_model
from pi_lab.view.payload import RequestError, SessionView, read_request

DEEP = 3000


def nested(levels: int, inner: object = "x") -> object:
    value = inner
    for _ in range(levels):
        value = [value]
    return value


def seed_entries() -> list[dict]:
    return [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]


def view_of(entries: list[dict]) -> SessionView:
    return SessionView.open(SessionManager.in_memory(entries=entries, uuid_factory=Ids(), clock=Clock()))


def with_entry(entry_id: str, **fields: object) -> list[dict]:
    entries = seed_entries()
    for entry in entries:
        if entry.get("id") == entry_id:
            entry.update(fields)
    return entries


def test_pretty_json_is_pythons_indented_json_at_any_depth():
    for value in [{"a": [1, 2.5, {"b": None}], "é": "\u2028", "t": True}, [], {}, [[]], {"k": {}}, "s", 3,
                  {"x": [{"y": []}, {}]}, [1e400, -0.0]]:
        assert _pretty(value) == json.dumps(value, ensure_ascii=False, indent=2, default=str)
    deep = _pretty(nested(DEEP))
    assert deep.count("[") == DEEP and deep.splitlines()[DEEP].strip() == '"x"'


def test_an_entry_with_deep_details_opens_in_the_detail_pane():
    entries = seed_entries()
    entries.append({"type": "custom", "id": "Z1", "parentId": entries[-1]["id"], "timestamp": "2026-07-29T10:00:00Z",
                    "customType": "x", "data": nested(DEEP), "details": nested(DEEP)})
    view = view_of(entries)
    detail = read_request(view, "entry", {"id": "Z1"})
    assert detail["raw"]["truncated"] and detail["raw"]["length"] > 2 * DEEP


def test_rows_of_an_entry_whose_id_is_a_list():
    view = view_of(with_entry("A4", id=[["A4"]]))  # unhashable: never a dict key
    assert len(view.rows.rows) > 0
    with pytest.raises(RequestError, match="list"):
        read_request(view, "entry", {"id": [["A4"]]})


def test_a_request_for_a_deeply_nested_id_is_a_short_pi_lab_error():
    with pytest.raises(PiLabError) as caught:
        read_request(view_of(seed_entries()), "entry", {"id": nested(DEEP)})
    assert len(str(caught.value)) < 200


def test_a_tool_result_whose_call_id_is_a_list_still_opens():
    entries = seed_entries()
    last = entries[-1]["id"]
    entries.append({"type": "message", "id": "T1", "parentId": last, "timestamp": "2026-07-29T10:00:00Z",
                    "message": {"role": "toolResult", "toolCallId": [{"id": 3}], "toolName": "bash",
                                "content": [{"type": "text", "text": "ok"}], "isError": False, "timestamp": 1}})
    view = view_of(entries)
    assert read_request(view, "entry", {"id": "T1"})["kind"] == "tool_result"


def test_a_recorded_model_with_odd_fields_is_named_as_javascript_would():
    entries = seed_entries()
    entries.append({"type": "model_change", "id": "M9", "parentId": entries[-1]["id"],
                    "timestamp": "2026-07-29T10:00:00Z", "provider": nested(DEEP), "modelId": {"a": 1}})
    sm = SessionManager.in_memory(entries=entries, uuid_factory=Ids(), clock=Clock())
    assert recorded_model(sm) == "x/[object Object]"
    assert recorded_context_window(sm) is None


def test_a_tool_call_without_arguments_shows_null_in_its_results_pane():
    """A call written with "input" instead of "arguments" (a real fixture has one): the result's
    pane shows the call's arguments as null, never the engine's sentinel (whose text was a
    memory address, so every export of the session differed)."""
    entries = seed_entries()
    last = entries[-1]["id"]
    entries.append({"type": "message", "id": "C1x", "parentId": last, "timestamp": "2026-07-29T10:00:00Z",
                    "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "call-1", "name": "bash",
                                                                  "input": {"command": "ls"}}],
                                "stopReason": "toolUse", "timestamp": 1}})
    entries.append({"type": "message", "id": "T2", "parentId": "C1x", "timestamp": "2026-07-29T10:00:01Z",
                    "message": {"role": "toolResult", "toolCallId": "call-1", "toolName": "bash",
                                "content": [{"type": "text", "text": "ok"}], "isError": False, "timestamp": 2}})
    view = view_of(entries)
    detail = read_request(view, "entry", {"id": "T2"})
    assert detail["tool_result"]["call"]["arguments"]["text"] == "null"
