"""Every endpoint answers a malformed request with a 4xx and a one-line reason, never a 500.

A request is untrusted input just like a session file: a hand-written ``curl``, a stale front end
or someone probing the server. Each endpoint of ``make_handlers`` (and each session operation:
``SESSION_OPS`` and the refused write operations) is sent every parameter it reads with values of
every wrong type: a string where a number is expected, ``null``, ``1e400``, ``NaN``, a list, an
object, ``true``, a negative or a 2**70 integer, a lone surrogate, a long string, 10,000 levels of
nesting; and bodies that are not JSON objects, not UTF-8, or nested too deeply. The answer must be
the right 4xx (or a 200 where the value is a legitimate one), a JSON ``message`` of one line, and
nothing with a traceback in the server's log.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from pi_lab.server.handlers import API_ROOT as API
from pi_lab.server.handlers import SESSION_OPS, WRITE_OPS

LINES = [
    {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"},
    {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
     "message": {"role": "user", "content": "hello", "timestamp": 1767225601000}},
    {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "provider": "p", "model": "m",
                 "usage": {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12},
                 "stopReason": "stop", "timestamp": 1767225602000}},
]

# Each bad value as JSON *text*: NaN, 1e400 and deep nesting cannot be written by json.dumps.
DEEP = "[" * 10_000 + "]" * 10_000
VALUES: dict[str, str] = {
    "string": '"x"',
    "null": "null",
    "1e400": "1e400",
    "float": "1.5",
    "list": "[]",
    "list of ids": '["u1", 3]',
    "object": "{}",
    "true": "true",
    "negative": "-1",
    "2**70": str(2**70),
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "lone surrogate": '"\\ud800"',
    "percent": '"%s%d%(x)s"',
    "newline": '"a\\nb"',
    "long string": json.dumps("x" * 100_000),
    "deep": DEEP,
}

# Fields every session operation reads (the body's path, view and settings and the args object).
COMMON_FIELDS = ["path", "view", "view.filter_mode", "view.search", "view.folded", "view.folded.0",
                 "view.note_filter", "settings", "settings.context_window", "settings.reserve_tokens", "settings.keep_recent_tokens",
                 "args"]
# The fields a given operation reads on top of those.
OP_FIELDS: dict[str, list[str]] = {
    "rows": ["args.start", "args.end", "args.version"],
    "entry": ["args.id", "args.full"],
    "context_at": ["args.id"],
    "locate": ["args.id"],
    "structure": ["selected_id"],
    "poll": ["version", "generation"],
    "notes": [],
    "note_add": ["args.entry_id", "args.text", "args.tag", "args.scope", "args.end_entry_id"],
    "note_edit": ["args.id", "args.text", "args.tag"],
    "note_remove": ["args.id"],
}
KNOWN_OPS = {*OP_FIELDS, "state", "gauge", "compact_preview"}
# The good body names no note (args.id "u1" is an entry): these are refused whatever else it holds.
NO_NOTE_OPS = {"note_edit", "note_remove"}
# Arguments the other read operations (context over time, between nodes) may read.
OTHER_ARGS = ["args.id", "args.a", "args.b", "args.leaf_id", "args.query", "args.case_sensitive", "args.start",
              "args.end", "args.version", "args.limit"]

# (field, value) pairs that are legitimate: answered 200. Any other value of a field the operation
# reads is a wrong value and answered 4xx; a field the operation does not read is ignored.
VALID: dict[str, set[str]] = {
    "view": {"null", "object"},
    "view.search": {"null", "string", "lone surrogate", "percent", "newline"},
    "view.folded": {"null", "list"},
    "view.folded.0": {"string", "lone surrogate", "percent", "newline", "long string"},
    "view.note_filter": {"null"},
    "settings": {"null", "object"},
    "args": {"null", "object"},
    "args.version": {"null"},
    "args.full": {"true", "null"},
    "selected_id": {"null", "string", "lone surrogate", "percent", "newline", "long string"},
    "version": {"null"},
    "generation": {"null"},
}
VALID_FOR_OP: dict[tuple[str, str], set[str]] = {
    ("locate", "args.id"): {"string", "lone surrogate", "percent", "newline", "long string"},
    ("context_at", "args.id"): {"null"},
    ("entry", "args"): set(),  # the entry's id is required
    ("locate", "args"): set(),
    ("note_add", "args"): set(),  # the entry's id is required
    ("note_add", "args.text"): {"string", "percent", "newline"},  # null: no text and no tag
    ("note_add", "args.tag"): {"null", "string", "percent"},
    ("note_add", "args.scope"): {"null"},
    ("note_add", "args.end_entry_id"): {"null"},
}
# Fields whose wrong values are a missing file rather than a malformed request.
NOT_FOUND_OK = {"path"}

BODIES: dict[str, bytes] = {
    "a list": b"[]",
    "a string": b'"x"',
    "a number": b"1",
    "null": b"null",
    "not JSON": b"{path:",
    "truncated": b'{"path": "s.jsonl", "args": {"start": 0',
    "not UTF-8": b'{"path": "s\xff\xfe.jsonl"}',
    "NaN": b"NaN",
    "deep list": DEEP.encode(),
    "deep object": ('{"a":' * 10_000 + "1" + "}" * 10_000).encode(),
    "deep args": b'{"path": "s.jsonl", "args": ' + DEEP.encode() + b"}",
}


def _body_text(field: str, value: str) -> str:
    """The JSON text of a good request for ``s.jsonl`` with ``field`` set to the raw ``value``."""
    body: dict[str, Any] = {"path": "s.jsonl", "view": {"filter_mode": "default", "search": "", "folded": ["u9"]},
                            "settings": {"context_window": 200_000},
                            "args": {"start": 0, "end": 5, "id": "u1", "a": "u1", "b": "a1", "query": "hello",
                                     "entry_id": "u1", "text": "a note"}}
    mark = "\u0000VALUE\u0000"
    target = body
    keys = field.split(".")
    for key in keys[:-1]:
        target = target[key] if not isinstance(target, list) else target[int(key)]
    last = keys[-1]
    if isinstance(target, list):
        target[int(last)] = mark
    else:
        target[last] = mark
    return json.dumps(body).replace(json.dumps(mark), value)


class LogWatch(logging.Handler):
    """Keeps every record of the server's loggers; a record that cannot be formatted counts too."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.broken: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        try:
            record.getMessage()
        except Exception as error:  # noqa: BLE001  (logging would print a traceback to stderr)
            self.broken.append(f"{record.msg!r} % {record.args!r}: {error}")

    def tracebacks(self) -> list[str]:
        found = list(self.broken)
        for record in self.records:
            text = record.getMessage() if not self.broken else str(record.msg)
            if record.exc_info or "Traceback" in text or "Unhandled error" in text:
                found.append(f"{record.name}: {text[:300]}")
        return found


@pytest.fixture
def log_watch(jp_serverapp):
    watch = LogWatch()
    loggers = [jp_serverapp.log, logging.getLogger("tornado.application"), logging.getLogger("tornado.general"),
               logging.getLogger("tornado.access"), logging.getLogger()]
    for logger in loggers:
        logger.addHandler(watch)
    yield watch
    for logger in loggers:
        logger.removeHandler(watch)


@pytest.fixture
def session_file(root: Path) -> Path:
    path = root / "s.jsonl"
    path.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in LINES))
    return path


async def _post(jp_fetch, parts: tuple[str, ...], body: bytes | str) -> tuple[int, dict[str, Any]]:
    response = await jp_fetch(API, *parts, method="POST", body=body, raise_error=False,
                              headers={"Content-Type": "application/json"})
    return response.code, _reply(response)


def _reply(response: Any) -> dict[str, Any]:
    if response.headers.get("Content-Type", "").startswith("application/octet-stream"):
        return {}
    return json.loads(response.body or b"null")


def _check(problems: list[str], what: str, code: int, reply: Any, expected: set[int]) -> None:
    if code not in expected:
        problems.append(f"{what}: {code} (expected {sorted(expected)}) {str(reply)[:200]}")
        return
    if code >= 400:
        message = reply.get("message") if isinstance(reply, dict) else None
        if not isinstance(message, str) or not message.strip():
            problems.append(f"{what}: {code} without a message: {str(reply)[:200]}")
        elif "\n" in message or len(message) > 500:
            problems.append(f"{what}: {code} message is not one short line: {message[:200]!r}")


def _fields_of(op: str) -> list[str]:
    if op in KNOWN_OPS:
        return COMMON_FIELDS + OP_FIELDS.get(op, [])
    return COMMON_FIELDS + OTHER_ARGS


def _expected(op: str, field: str, value: str, reads: bool) -> set[int]:
    if op in NO_NOTE_OPS:
        return {400, 404} if field in NOT_FOUND_OK else {400}
    valid = VALID_FOR_OP.get((op, field), VALID.get(field, set()))
    if field == "args" and value in valid and op not in KNOWN_OPS:
        return {200, 400}  # an empty or absent args object: fine, or a missing required argument
    if not reads or value in valid:
        return {200}
    if field in NOT_FOUND_OK:
        return {400, 404}
    return {400}


async def test_every_session_parameter_of_every_wrong_type_is_a_4xx(jp_fetch, session_file, log_watch):
    problems: list[str] = []
    for op in sorted(SESSION_OPS):
        read_by_op = set(COMMON_FIELDS + OP_FIELDS.get(op, []))
        for field in _fields_of(op):
            for name, value in VALUES.items():
                # Context-over-time and comparison requests read arguments of their own: any 4xx or 200.
                known = op in KNOWN_OPS or field in COMMON_FIELDS
                expected = _expected(op, field, name, field in read_by_op) if known else {200, 400, 404, 422}
                code, reply = await _post(jp_fetch, ("session", op), _body_text(field, value))
                _check(problems, f"session/{op} {field}={name}", code, reply, expected)
    assert not problems, f"{len(problems)} wrong answers:\n" + "\n".join(problems[:60])
    assert not log_watch.tracebacks(), "\n".join(log_watch.tracebacks()[:20])


async def test_bodies_that_are_not_a_json_object_are_a_400_on_every_post(jp_fetch, session_file, log_watch):
    problems: list[str] = []
    posts = [("session", op) for op in sorted(SESSION_OPS)] + [("open-in-notebook",)]
    for parts in posts:
        for name, body in BODIES.items():
            code, reply = await _post(jp_fetch, parts, body)
            _check(problems, f"{'/'.join(parts)} body {name}", code, reply, {400})
    assert not problems, f"{len(problems)} wrong answers:\n" + "\n".join(problems[:60])
    assert not log_watch.tracebacks(), "\n".join(log_watch.tracebacks()[:20])


async def test_write_operations_are_refused_whatever_the_body(jp_fetch, session_file, log_watch):
    problems: list[str] = []
    for op in sorted(WRITE_OPS):
        for name, body in BODIES.items():
            code, reply = await _post(jp_fetch, ("session", op), body)
            _check(problems, f"session/{op} body {name}", code, reply, {403})
        for name, value in VALUES.items():
            code, reply = await _post(jp_fetch, ("session", op), _body_text("args.id", value))
            _check(problems, f"session/{op} args.id={name}", code, reply, {403})
    assert not problems, "\n".join(problems[:60])
    assert session_file.read_bytes().count(b"\n") == len(LINES)
    assert not log_watch.tracebacks(), "\n".join(log_watch.tracebacks()[:20])


async def test_open_in_notebook_refuses_a_bad_path_clearly(jp_fetch, session_file, root, log_watch):
    problems: list[str] = []
    for name, value in VALUES.items():
        code, reply = await _post(jp_fetch, ("open-in-notebook",), '{"path": %s}' % value)
        _check(problems, f"open-in-notebook path={name}", code, reply, {400, 404})
    assert not problems, "\n".join(problems)
    assert not list(root.glob("*.ipynb"))
    assert not log_watch.tracebacks(), "\n".join(log_watch.tracebacks()[:20])


QUERY_VALUES = ["", "x", "%00", "%ff%fe", "a%25sb", "%0A", "..%2F..%2Fetc", "@sessions%2F", "@sessions%2F..%2Fx",
                "x" * 5000, "%ED%A0%80", "(", "*", "s.jsonl%00.txt"]


async def test_query_parameters_of_the_get_endpoints_are_a_4xx_or_an_answer(
        http_server_client, jp_auth_header, jp_base_url, session_file, log_watch):
    problems: list[str] = []

    async def get(query: str, *parts: str) -> Any:
        # The query goes into the URL as written: jp_fetch would percent-encode it again.
        url = jp_base_url + "/".join((API, *parts)) + ("?" + query if query else "")
        return await http_server_client.fetch(url, headers=dict(jp_auth_header), raise_error=False)

    for raw in QUERY_VALUES:
        for part, name, expected in (("session", "path", {400, 403, 404}), ("sessions", "q", {200, 400}),
                                     ("detect", "path", {400, 403, 404})):
            response = await get(f"{name}={raw}", part)
            _check(problems, f"GET {part}?{name}={raw[:30]}", response.code, _reply(response), expected)
    response = await get("path=s.jsonl", "session", "state")
    _check(problems, "GET session/state", response.code, _reply(response), {405})
    response = await get("path=s.jsonl", "session")
    _check(problems, "GET session", response.code, _reply(response), {200})
    assert not problems, "\n".join(problems)
    assert not log_watch.tracebacks(), "\n".join(log_watch.tracebacks()[:20])


async def test_values_the_fast_writer_refuses_are_still_answered(jp_fetch, root, log_watch):
    """An id nested 3,000 levels deep (past orjson's 255 levels and Python's recursion limit), a
    lone surrogate and a 2**70 integer, straight from a session file, reach the rows reply: it
    is written by the engine's JSON writer (any depth, JSON.stringify's bytes), not a 500."""
    deep = "[" * 3000 + '"x"' + "]" * 3000
    odd = ('{"type":"message","id":%s,"parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z",'
           '"message":{"role":"user","content":"deep \\ud800 %d","timestamp":1767225603000}}' % (deep, 2**70))
    odd2 = ('{"type":"message","id":"\\ud800","parentId":"a1","timestamp":"2026-01-01T00:00:04.000Z",'
            '"message":{"role":"user","content":"lone","timestamp":%d}}' % 2**70)
    path = root / "odd.jsonl"
    path.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in LINES) + odd.encode() + b"\n"
                     + odd2.encode() + b"\n")
    body = json.dumps({"path": "odd.jsonl", "view": {"filter_mode": "all"}, "args": {"start": 0, "end": 10}})
    response = await jp_fetch(API, "session", "rows", method="POST", body=body, raise_error=False)
    assert response.code == 200, response.body[:300]
    assert b"[" * 3000 + b'"x"' + b"]" * 3000 in response.body  # the odd id, as JSON.stringify writes it
    assert b'"\\ud800"' in response.body
    assert not log_watch.tracebacks(), "\n".join(log_watch.tracebacks()[:20])


async def test_a_bug_met_on_a_file_is_a_clear_422_not_an_unhandled_500(jp_fetch, session_file, monkeypatch, log_watch):
    """A built-in exception inside pi_lab while answering (here injected into the row texts) is
    answered 422 with one line naming the file, the exception and where; the traceback goes to
    the log as a warning for the bug report, never as "Unhandled error"."""
    import pi_lab.view.payload as payload

    def broken(view, start, end, version=None):
        return {}[[]]  # TypeError: unhashable type

    monkeypatch.setitem(payload.READ_OPS, "rows", lambda view, a: broken(view, 0, 1))
    code, reply = await _post(jp_fetch, ("session", "rows"), json.dumps({"path": "s.jsonl", "args": {}}))
    assert code == 422 and reply["reason"] == "internal-error"
    assert reply["message"].startswith("pi_lab cannot show s.jsonl: internal error: TypeError at test_bad_requests.py")
    assert "(from payload.py:" in reply["message"] and "\n" not in reply["message"]
    logged = [r for r in log_watch.records if r.exc_info and "internal error" in r.getMessage()]
    # (the watch hangs on the app's logger and on the root one: the same record may come twice)
    assert len({id(r) for r in logged}) == 1 and logged[0].levelname == "WARNING"


def test_this_file_covers_every_endpoint():
    """The routes of make_handlers are the ones exercised above; a new one must be added here."""
    from pi_lab.server.handlers import make_handlers

    routes = {pattern.removeprefix("/" + API + "/") for pattern, _ in make_handlers("/")}
    covered = {"sessions", "session", "session/([a-z_]+)", "open-in-notebook", "detect"}
    assert routes == covered, f"cover the new endpoints in this file: {sorted(routes - covered)}"


async def test_a_header_type_nested_deep_is_not_a_session_not_a_bug(jp_fetch, root, log_watch):
    """The first line's type nested 3,000 levels deep: 422 "not a pi session" naming the type by
    its kind (its repr would recurse), not an internal error."""
    head = '{"type":' + "[" * 3000 + '"x"' + "]" * 3000 + ',"id":"s1","version":3}\n'
    (root / "deep-head.jsonl").write_text(head)
    code, reply = await _post(jp_fetch, ("session", "state"), json.dumps({"path": "deep-head.jsonl"}))
    assert code == 422 and reply["reason"] == "not-a-session", reply
    assert "type a list" in reply["message"] and "internal error" not in reply["message"]
    assert not log_watch.tracebacks(), "\n".join(log_watch.tracebacks()[:20])


def test_a_reply_keyed_by_a_lone_surrogate_is_still_json():
    """A view keyed by a name from the file (a tool called "\\ud800"): valid JSON that reads back."""
    from pi_lab.server.handlers import _json_bytes

    value = {"by_tool": {"\ud800": 2, "read": 1}, "deep": [[[[1]]]]}
    assert json.loads(_json_bytes(value)) == value


@pytest.mark.parametrize("stamp", ["1e308", str(2**63), "-1e300"])
async def test_a_message_time_no_date_can_hold_leaves_the_panel_listing(api, sessions_dir, stamp, log_watch):
    """A message timestamp of 1e308 or 2**63 (a time neither a Python date nor JavaScript's Date
    can hold) is not the session's last activity: the Pi Sessions panel lists the file, dated by
    its other messages, and a search still answers."""
    folder = sessions_dir / "--p--"
    folder.mkdir()
    odd = ('{"type":"message","id":"u2","parentId":"a1","timestamp":"2026-01-01T00:00:05.000Z",'
           '"message":{"role":"user","content":"later","timestamp":%s}}\n' % stamp)
    (folder / "s.jsonl").write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in LINES) + odd.encode())
    for query in ("", "hello"):
        code, reply = await api.get("sessions", q=query)
        assert code == 200, reply
        [group] = reply["groups"]
        [session] = group["sessions"]
        assert session["modified"].startswith("2026-01-01T00:00:0"), session["modified"]
    assert not log_watch.tracebacks(), "\n".join(log_watch.tracebacks()[:20])
