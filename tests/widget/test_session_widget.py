"""SessionWidget's contract with the browser, without a browser: requests and replies, actions
through the AgentSession (refusals included), live deltas and the traitlets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import SEED_SECTION_14, asst_msg, usage, user_msg

from pi_lab.agent import AgentSession
from pi_lab.llm import OfflineModel
from pi_lab.session import SessionManager
from pi_lab.widget import SessionWidget, open_session
from pi_lab.view.actions import TOOL_RUNNING
from pi_lab.view.columns import decode_structure


def capture(widget):
    """Record what the widget sends: ("custom", content, buffers) and ("update", state)."""
    sent: list[tuple] = []

    def send(msg, buffers=None):
        if msg.get("method") == "custom":
            sent.append(("custom", msg["content"], buffers or []))
        else:
            sent.append(("update", msg.get("state", {}), buffers or []))

    widget._send = send
    return sent


def request(widget, sent, op, **args):
    before = len(sent)
    widget._on_msg(widget, {"kind": "request", "id": 7, "op": op, "args": args}, [])
    replies = [m for kind, m, _ in sent[before:] if kind == "custom" and m.get("kind") == "response"]
    assert replies, f"no reply to {op}"
    return replies[-1], [b for kind, m, b in sent[before:] if kind == "custom" and m.get("kind") == "response"][-1]


@pytest.fixture
def seed_file(tmp_path) -> Path:
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    return path


def test_sources_path_manager_agent(seed_file):
    by_path = open_session(seed_file)
    assert by_path.leaf_id == "C1" and by_path.row_count == 13
    sm = SessionManager.open(seed_file)
    assert SessionWidget(sm).session_manager is sm
    agent = AgentSession(SessionManager.open(seed_file), record_startup=False)
    w = SessionWidget(agent)
    assert w.agent is agent and w.session_manager is agent.session_manager
    with pytest.raises(TypeError):
        SessionWidget(42)
    header, cols = decode_structure(w.structure)
    assert header["version"] == w.structure_version and len(cols["entry"]) == w.row_count
    assert w.gauge["unknown"] is True and "compactions" not in w.gauge
    assert [c["id"] for c in w.compactions] == ["C1"] and w.gauge["compaction_count"] == 1


def test_read_requests_and_errors(seed_file):
    w = SessionWidget(seed_file)
    sent = capture(w)
    reply, _ = request(w, sent, "rows", start=0, end=3, version=w.structure_version)
    assert reply["ok"] and [r["id"] for r in reply["result"]["rows"]] == ["U1", "T1", "A2"]
    reply, _ = request(w, sent, "entry", id="BS1")
    assert reply["result"]["kind"] == "branch_summary" and reply["result"]["summary"]["text"].startswith("离开")
    reply, _ = request(w, sent, "context_at", id="A3")
    assert [m["source_id"] for m in reply["result"]["messages"]][-2:] == ["U2", "A3"]
    reply, buffers = request(w, sent, "structure")
    assert reply["result"]["version"] == w.structure_version and decode_structure(bytes(buffers[0]))[0]["row_count"] == 13
    reply, _ = request(w, sent, "entry", id="missing")
    assert reply == {"kind": "response", "id": 7, "ok": False, "error": "Entry missing not found"}
    reply, _ = request(w, sent, "frobnicate")
    assert reply["ok"] is False and "unknown request" in reply["error"]


def test_navigate_to_a_user_message_moves_to_its_parent(seed_file):
    w = SessionWidget(seed_file)
    sent = capture(w)
    reply, _ = request(w, sent, "navigate", id="U2")
    assert reply["ok"] and reply["result"]["leaf_id"] == "A2" and reply["result"]["editor_text"] == "改成 JWT"
    assert w.leaf_id == "A2" and w.editor_text == "改成 JWT" and w.selected_id == "A2"
    header, _ = decode_structure(w.structure)
    assert header["leaf_id"] == "A2"
    # Navigation writes nothing without a summary: the file still ends at C1.
    assert json.loads(seed_file.read_text().splitlines()[-1])["id"] == "C1"


def test_navigation_is_refused_while_a_tool_call_runs(seed_file, monkeypatch):
    w = SessionWidget(seed_file)
    sent = capture(w)
    monkeypatch.setattr(type(w.agent), "has_pending_tool_calls", property(lambda self: True))
    reply, _ = request(w, sent, "navigate", id="U2")
    assert reply["ok"] is False and reply["error"] == TOOL_RUNNING
    assert w.status == TOOL_RUNNING and w.session_manager.leaf_id == "C1"


def test_label_fork_and_clone(seed_file):
    w = SessionWidget(seed_file, writable=True)  # a label appends: writing is asked for
    sent = capture(w)
    reply, _ = request(w, sent, "label", id="U4", label="edge cases")
    assert reply["ok"] and w.session_manager.get_label("U4") == "edge cases"
    texts = [m for kind, m, _ in sent if kind == "custom" and m.get("kind") == "delta"]
    assert texts, "a label at the leaf travels as a delta"
    reply, _ = request(w, sent, "fork", id="A2")
    assert reply["ok"] is False and reply["error"] == "Invalid entry ID for forking"
    old_file = w.session_manager.session_file
    reply, _ = request(w, sent, "clone", id="A4")
    assert reply["ok"] and reply["result"]["session_file"] != old_file
    assert w.session["file"] == reply["result"]["session_file"]
    assert [e["id"] for e in w.session_manager.get_branch()][:7] == ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4"]
    assert "U2" not in {e["id"] for e in w.session_manager.entries}  # the other branch stays behind
    assert w.row_count == len(w.view.rows.rows) and decode_structure(w.structure)[0]["session_file"] == w.session["file"]


def test_compact_action_appends_a_checkpoint(tmp_path):
    sm = SessionManager.create(str(tmp_path), tmp_path / "s")
    for n in range(6):
        sm.append_message(user_msg(f"question {n} " + "words " * 80))
        sm.append_message(asst_msg(f"answer {n} " + "words " * 80, use=usage(2000 + n, 50)))
    w = SessionWidget(sm, keep_recent_tokens=300)
    sent = capture(w)
    reply, _ = request(w, sent, "compact_preview")
    preview = reply["result"]
    reply, _ = request(w, sent, "compact", instructions="keep the numbers")
    assert reply["ok"], reply
    last = sm.get_branch()[-1]
    assert last["type"] == "compaction" and last["firstKeptEntryId"] == preview["first_kept_id"]
    assert w.leaf_id == last["id"] and w.gauge["unknown"] is True and len(w.compactions) == 1
    reply, _ = request(w, sent, "compact")
    assert reply["ok"] is False and reply["error"] == "Already compacted"


def test_live_append_sends_one_small_delta_then_the_traitlets(seed_file):
    w = SessionWidget(seed_file, writable=True)  # the test appends through the widget's manager
    sent = capture(w)
    version = w.structure_version
    w.session_manager.append_message(user_msg("one more question"))
    assert w.sync() == "delta"
    deltas = [m for kind, m, _ in sent if kind == "custom" and m.get("kind") == "delta"]
    assert len(deltas) == 1
    delta = deltas[0]
    assert delta["from"] == version and delta["to"] == version + 1 and delta["leaf_id"] == w.session_manager.leaf_id
    assert delta["gauge"]["estimated"] > 0 and "compactions" not in delta["gauge"]
    assert len(json.dumps(delta, ensure_ascii=False).encode()) < 1200
    # Without an event loop the traitlets are brought up to date at once.
    assert w.structure_version == version + 1 and w.leaf_id == w.session_manager.leaf_id
    assert decode_structure(w.structure)[0]["version"] == version + 1


def test_filters_clear_folds_and_settings_reach_the_agent(seed_file):
    w = SessionWidget(seed_file)
    w.folded = ["BS1"]
    assert w.row_count == 6  # BS1's subtree is folded away: U1 T1 A2 BS1 U2 A3
    w.filter_mode = "user-only"
    assert w.folded == [] and w.row_count == 5 and decode_structure(w.structure)[0]["filter_mode"] == "user-only"
    w.search = "jwt"
    assert w.row_count == 1
    w.reserve_tokens = 100_000
    assert w.gauge["threshold"] == 128_000 - 100_000 and w.agent.settings.reserve_tokens == 100_000
    w.keep_recent_tokens = 50
    assert w.agent.settings.keep_recent_tokens == 50


def test_agent_run_streams_and_appends_rows(tmp_path):
    sm = SessionManager.create(str(tmp_path), tmp_path / "s")
    agent = AgentSession(sm, client=OfflineModel(["a streamed answer with several words in it"]), record_startup=False)
    w = SessionWidget(agent)
    sent = capture(w)
    agent.prompt_sync("hello there")
    events = [m for kind, m, _ in sent if kind == "custom" and m.get("kind") == "event"]
    assert any(e["type"] == "stream" and "streamed" in e["text"] for e in events)
    assert [e["type"] for e in events][-1] == "stream_end"
    assert [r.text for r in w.view.rows.rows][-2:] == ["user: hello there", "assistant: a streamed answer with several words in it"]
    assert w.busy == "" and w.gauge["measured"] > 0


# ---------------------------------------------------------------------------------------------
# "Run all" in a real kernel (issue 9: Q10/Q11 of the tour stayed [*] on an idle kernel)

_RUN_ALL_CELLS = [
    """
import itertools
from pi_lab.agent import AgentSession
from pi_lab.llm import OfflineModel
from pi_lab.session import SessionManager
from pi_lab.widget import SessionWidget
ids = itertools.count(1)
def agent_widget(name):
    sm = SessionManager.create(WORK, WORK + "/" + name, uuid_factory=lambda: f"{next(ids):08x}")
    agent = AgentSession(sm, client=OfflineModel([]), record_startup=False)
    return agent, SessionWidget(agent)
a1, w1 = agent_widget("one")
a2, w2 = agent_widget("two")
print("cell-0")
w1
""",
    *[f"""
agent = (a1, a2)[{n} % 2]
agent.client.push("answer {n} " * 20)
await agent.prompt("question {n}")
print("cell-{n}")
""" for n in range(1, 9)],
    """
first = next(e["id"] for e in a1.session_manager.entries if e.get("message", {}).get("role") == "user")
await a1.navigate_tree(first)
print("cell-9")
""",
    """
await a2.fork(next(e["id"] for e in a2.session_manager.entries if e.get("message", {}).get("role") == "user"))
print("cell-10")
""",
]


def test_run_all_with_a_viewer_talking_keeps_every_message_on_its_request(tmp_path):
    """A raw kernel client plays the notebook: all cells are queued at once and, like the
    viewer in the browser, every widget asks for its rows on open and after every delta. Every
    execute must reach idle, and each message must carry the header of the request it
    answers (a cell's output and status its own execute, a reply its own comm request)."""
    import queue
    import time

    jupyter_client = pytest.importorskip("jupyter_client")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        kc.execute(f"WORK = {str(tmp_path)!r}", silent=True)
        execute_ids = {kc.execute(source): n for n, source in enumerate(_RUN_ALL_CELLS)}
        requests: dict[str, int] = {}  # comm_msg id -> request id it carried
        counter = iter(range(1, 1_000_000))

        def ask(comm_id, op, **args):
            request_id = next(counter)
            msg = kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {
                "method": "custom", "content": {"kind": "request", "id": request_id, "op": op, "args": args}}})
            kc.shell_channel.send(msg)
            requests[msg["header"]["msg_id"]] = request_id

        idle: dict[str, str] = {}
        problems: list[str] = []
        widgets = 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(idle) < len(execute_ids):
            try:
                msg = kc.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                continue
            parent = msg["parent_header"].get("msg_id")
            kind = msg["msg_type"]
            content = msg["content"]
            if kind == "status" and content["execution_state"] == "idle" and parent in execute_ids:
                idle[parent] = kind
            elif kind == "stream":
                for n in {int(w.split("-")[1]) for w in content["text"].split() if w.startswith("cell-")}:
                    if execute_ids.get(parent) != n:
                        problems.append(f"cell {n}'s output came under {execute_ids.get(parent, parent)}")
            elif kind == "error":
                problems.append(f"cell {execute_ids.get(parent)} failed: {content['evalue']}")
            elif kind == "comm_open" and content["data"].get("state", {}).get("_anywidget_id", "").endswith("SessionWidget"):
                widgets += 1
                ask(content["comm_id"], "hello")
                ask(content["comm_id"], "rows", start=0, end=50)
            elif kind == "comm_msg" and content["data"].get("method") == "custom":
                custom = content["data"]["content"]
                if custom.get("kind") == "response" and requests.get(parent) != custom.get("id"):
                    problems.append(f"reply {custom.get('id')} came under {execute_ids.get(parent, parent)}")
                if custom.get("kind") == "delta":
                    if parent not in execute_ids and parent not in requests:
                        problems.append(f"a delta came under an unknown request {parent}")
                    ask(content["comm_id"], "rows", start=0, end=50)
        missing = sorted(n for msg_id, n in execute_ids.items() if msg_id not in idle)
        assert widgets == 2
        assert not missing, f"cells never reported idle: {missing}; {problems[:5]}"
        assert not problems, problems[:10]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)



# ---------------------------------------------------------------------------------------------
# Read-only by default (issue 9)


def _v1_copy(fixture_copy):
    return fixture_copy("public-whamp-v1-linear.jsonl")


def test_open_never_writes_the_file_and_refuses_appends_with_the_way_to_write(fixture_copy):
    import pi_lab

    path = _v1_copy(fixture_copy)
    before = path.read_bytes()
    w = pi_lab.open(path)
    sent = capture(w)
    assert w.writable is False and w.write_plan.startswith(f"Rewrite {path}") and w.session["read_only"]
    entries = w.session_manager.entries
    users = [e["id"] for e in entries if e.get("message", {}).get("role") == "user"]
    # Navigation moves the leaf in memory only.
    reply, _ = request(w, sent, "navigate", id=entries[3]["id"])
    assert reply["ok"], reply
    for op, args in (("label", {"id": users[0], "label": "x"}), ("compact", {}),
                     ("navigate", {"id": entries[1]["id"], "summarize": True})):
        reply, _ = request(w, sent, op, **args)
        assert reply["ok"] is False and reply["refused"] is True, (op, reply)
        assert str(path) in reply["error"] and "writable=True" in reply["error"], reply
    assert path.read_bytes() == before  # not migrated, not repaired, nothing appended
    # The viewer's button: the plan is carried out, then appends go through.
    reply, _ = request(w, sent, "allow_writes")
    assert reply["ok"] and reply["result"]["done"].startswith(f"Rewrite {path}")
    assert w.writable is True and w.write_plan == "" and not w.session["read_only"]
    reply, _ = request(w, sent, "label", id=users[0], label="mine")
    assert reply["ok"], reply
    assert path.read_bytes() != before and b'"label":"mine"' in path.read_bytes()


def test_writable_true_opens_for_writing(fixture_copy):
    from pi_lab.widget import open_session

    path = _v1_copy(fixture_copy)
    w = open_session(path, writable=True)
    assert w.writable is True and w.write_plan == "" and w.session["read_only"] is False


def test_every_write_action_is_dispatched_to_the_actions_and_listed_in_the_session(seed_file):
    # One list: what the widget runs as an action, what the server refuses, what the session lists.
    from pi_lab.server.handlers import WRITE_OPS
    from pi_lab.view.actions import ACTIONS, WRITE_ACTIONS

    w = SessionWidget(seed_file)
    assert WRITE_ACTIONS == frozenset(ACTIONS) == WRITE_OPS
    assert w.session["write_actions"] == sorted(ACTIONS)


def test_fork_and_clone_from_a_read_only_v3_session_write_only_a_new_file(seed_file):
    before = seed_file.read_bytes()
    w = SessionWidget(seed_file)
    sent = capture(w)
    reply, _ = request(w, sent, "clone", id="A4")
    assert reply["ok"], reply
    assert reply["result"]["session_file"] != str(seed_file) and seed_file.read_bytes() == before


def test_fork_and_clone_of_a_read_only_v1_file_leave_it_byte_identical(fixture_copy):
    # The copy is made from the file read (and migrated) in memory: the old file is never
    # rewritten, so forking a read-only v1 session needs no permission to write it.
    import pi_lab

    path = _v1_copy(fixture_copy)
    before = path.read_bytes()
    w = pi_lab.open(path)
    sent = capture(w)
    assert w.writable is False and w.write_plan.startswith(f"Rewrite {path}")
    users = [e["id"] for e in w.session_manager.entries if e.get("message", {}).get("role") == "user"]
    reply, _ = request(w, sent, "fork", id=users[-1])
    assert reply["ok"], reply
    forked = reply["result"]["session_file"]
    assert forked and forked != str(path) and reply["result"]["previous_session_file"] == str(path)
    assert path.read_bytes() == before
    assert w.session_manager.session_file == forked
    w = pi_lab.open(path)
    sent = capture(w)
    reply, _ = request(w, sent, "clone", id=w.session_manager.entries[-1]["id"])
    assert reply["ok"], reply
    assert reply["result"]["session_file"] not in (str(path), forked) and path.read_bytes() == before


def test_a_second_writer_is_a_refusal_that_shows_its_entries(seed_file):
    w = SessionWidget(seed_file, writable=True)
    sent = capture(w)
    with open(seed_file, "a", encoding="utf-8") as other:  # pi appends meanwhile
        other.write(json.dumps({"type": "message", "id": "P1", "parentId": "C1", "timestamp": "2026-07-29T10:00:00Z",
                                "message": {"role": "user", "content": "from pi", "timestamp": 9}}) + "\n")
    reply, _ = request(w, sent, "label", id="U4", label="mine")
    assert reply["ok"] is False and reply["refused"] is True and reply["concurrent"] is True, reply
    assert "another writer" in reply["error"] and str(seed_file) in reply["error"]
    assert w.session_manager.get_entry("P1") is not None and "P1" in w.view.rows.ids  # shown at once


def test_an_engine_bug_is_an_error_not_a_refusal(seed_file, monkeypatch, caplog):
    w = SessionWidget(seed_file, writable=True)
    sent = capture(w)

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(w.session_manager, "append_label_change", broken)
    reply, _ = request(w, sent, "label", id="U4", label="x")
    assert reply["ok"] is False and reply["refused"] is False and "internal error" in reply["error"]
    assert "KeyError" in reply["error"]


def test_fork_before_a_message_puts_its_text_in_the_editor_and_resets_the_filter(seed_file):
    w = SessionWidget(seed_file, writable=True)
    sent = capture(w)
    w.filter_mode = "labeled-only"  # nothing is labeled in the new session
    w.search = "cookie"
    reply, _ = request(w, sent, "fork", id="U3")
    assert reply["ok"], reply
    assert w.editor_text == "补充测试"
    assert (w.filter_mode, w.search, w.folded) == ("default", "", [])
    assert w.row_count > 0 and w.view.rows.filter_mode == "default"


def test_summarize_towards_a_descendant_says_there_was_nothing_to_summarize(seed_file):
    w = SessionWidget(seed_file, writable=True)
    sent = capture(w)
    w.session_manager.branch("U3")  # the leaf is an ancestor of A5
    lines = seed_file.read_bytes()
    reply, _ = request(w, sent, "navigate", id="A5", summarize=True)
    assert reply["ok"] and reply["result"]["nothing_to_summarize"] is True and reply["result"]["summary_id"] is None
    assert w.status.startswith("Nothing to summarize") and seed_file.read_bytes() == lines


def test_header_model_is_the_sessions_own_and_answering_only_where_one_answers(tmp_path, fixture_copy):
    recorded = SessionWidget(fixture_copy("before-compaction.jsonl"))
    assert recorded.session["model"] and "offline" not in recorded.session["model"]
    assert recorded.session["answering_model"] is None  # read-only: nothing answers here
    sm = SessionManager.create(str(tmp_path), tmp_path / "s")
    agent = AgentSession(sm, client=OfflineModel(["hi"]), record_startup=False)
    live = SessionWidget(agent)
    assert live.session["model"] is None and live.session["answering_model"].endswith("offline")


def _append_line(path, entry):
    with open(path, "a", encoding="utf-8") as other:  # another process (pi) appending
        other.write(json.dumps(entry, ensure_ascii=False) + "\n")


def test_following_shows_the_other_writers_entries_and_keeps_the_users_leaf(seed_file):
    import asyncio

    async def scenario():
        w = SessionWidget(seed_file, poll_interval=0.02)
        sent = capture(w)
        w._on_msg(w, {"kind": "request", "id": 1, "op": "hello", "args": {}}, [])
        # Untouched, the leaf follows the file (pi's rule: the last entry).
        _append_line(seed_file, {"type": "message", "id": "P1", "parentId": "C1", "timestamp": "2026-07-29T10:00:00Z",
                                 "message": {"role": "user", "content": "from pi", "timestamp": 9}})
        for _ in range(100):
            await asyncio.sleep(0.02)
            if w.leaf_id == "P1":
                break
        assert w.leaf_id == "P1"
        # The user goes back to A4; pi keeps writing on its own branch.
        w._on_msg(w, {"kind": "request", "id": 2, "op": "navigate", "args": {"id": "A4"}}, [])
        await asyncio.sleep(0.1)
        assert w.session_manager.leaf_id == "A4"
        _append_line(seed_file, {"type": "message", "id": "P2", "parentId": "P1", "timestamp": "2026-07-29T10:00:01Z",
                                 "message": {"role": "user", "content": "more from pi", "timestamp": 10}})
        for _ in range(100):
            await asyncio.sleep(0.02)
            if "P2" in w.view.rows.ids:
                break
        assert "P2" in w.view.rows.ids and w.session_manager.get_entry("P2") is not None  # shown
        assert w.session_manager.leaf_id == "A4" and w.leaf_id == "A4"  # and the user's leaf stays
        w.close()
        return sent

    asyncio.run(scenario())


# ---------------------------------------------------------------------------------------------
# A saved notebook reopened without its kernel (issue 9: "Error displaying widget: model not found")


def _displayed_outputs(tmp_path, source):
    import queue

    jupyter_client = pytest.importorskip("jupyter_client")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        msg_id = kc.execute(source)
        outputs = []
        while True:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] in ("display_data", "execute_result", "error"):
                outputs.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return outputs
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_display_carries_a_readable_snapshot_beside_the_widget(tmp_path, seed_file):
    outputs = _displayed_outputs(tmp_path, f"from pi_lab.widget import SessionWidget\nSessionWidget({str(seed_file)!r})")
    assert [o["msg_type"] for o in outputs] == ["display_data", "display_data"], outputs
    snapshot, widget = (o["content"]["data"] for o in outputs)
    assert "application/vnd.jupyter.widget-view+json" not in snapshot
    assert 'class="pi-lab-fallback"' in snapshot["text/html"] and "改成 session cookie" in snapshot["text/html"]
    assert snapshot["text/plain"].startswith("pi session seed.jsonl") and "[compaction: 115k tokens]" in snapshot["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in widget and "pi session seed.jsonl" in widget["text/plain"]


def test_the_snapshot_shows_where_the_model_is_missing_and_hides_beside_a_live_viewer(seed_file):
    """The CSS rule in a real browser engine, on the output-area markup of JupyterLab 4 (the
    widget renderer writes "Error displaying widget: model not found" into its node)."""
    from html import escape

    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian chromium not installed")
    from pi_lab.widget.session_widget import FALLBACK_CSS

    w = SessionWidget(seed_file)
    snapshot = f'<style>{FALLBACK_CSS}</style><div class="pi-lab-fallback"><pre>{escape(w.fallback_text())}</pre></div>'

    def area(widget_node):
        return (f'<div class="jp-OutputArea"><div class="jp-OutputArea-child"><div class="jp-OutputArea-output">'
                f'{snapshot}</div></div><div class="jp-OutputArea-child"><div class="jp-OutputArea-output">'
                f'{widget_node}</div></div></div>')

    page_html = (f'<div id="missing">{area("<div class=jupyter-widgets>Error displaying widget: model not found</div>")}</div>'
                 f'<div id="live">{area("<div class=pi-lab>the live viewer</div>")}</div>')
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.set_content(page_html)
            assert page.locator("#missing .pi-lab-fallback").is_visible()
            assert "[compaction: 115k tokens]" in page.locator("#missing .pi-lab-fallback").inner_text()
            assert not page.locator("#live .pi-lab-fallback").is_visible()
        finally:
            browser.close()


def test_to_html_writes_the_static_export_of_the_widgets_session(seed_file, tmp_path):
    before = Path(seed_file).read_bytes()
    widget = SessionWidget(seed_file)
    widget.view.sm.branch("A3")
    out = tmp_path / "shared.html"
    widget.to_html(out)
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") or page.lower().startswith("<!doctype html>")
    assert "Content-Security-Policy" in page
    # The widget's own leaf is the export's leaf: the same page as exporting the manager at A3
    # with the widget's notes.
    from pi_lab.export import export_html

    assert export_html(widget.view.sm, tmp_path / "a3.html", notes=widget.notes).read_bytes() == out.read_bytes()
    assert export_html(widget.view.sm, tmp_path / "a4.html", leaf_id="A4").read_bytes() != out.read_bytes()
    assert Path(seed_file).read_bytes() == before  # the session file is only read
