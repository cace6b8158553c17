"""Writes examples/tour.ipynb (run from the repository root: ``python tools/make_tour.py``).

Edit the cells here, then regenerate. The tour shows the explainer's worked example and a real
session, then its 22 comprehension questions: each question's cell **produces** the situation and
checks the answer (``check(n, ...)``, tests/test_examples.py), then a predict-then-reveal exercise
(``pi_lab.teach.exercise``) asks the student for a prediction and, on Reveal, shows the answer and
selects the node it is about in a widget frozen at that moment (``pi_lab.teach.frozen``), so that
after Run All the page reads top to bottom as a story. The last section documents ``pi_lab.teach``.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _notebook import Notebook  # noqa: E402

CELLS: list[tuple[str, str]] = []

CELLS.append(('md', r'''# A tour of pi's session engine, in the notebook

pi (the coding agent) keeps a conversation as an **append-only JSONL file** that holds a **tree** of
entries. The model never reads that file. It sees one **projection** of one **path** through the tree.
pi_lab reproduces this engine in Python (pi 1.6.0 behaviour) and draws it in a widget. This tour runs
the worked example of the explainer this project started from, next to a real pi session, and then
answers the explainer's 22 comprehension questions by **making each answer happen** in the cells below.

Four states are worth keeping apart from the start:

| state | what it is | where to look |
| --- | --- | --- |
| **file entries** | every line ever appended, all branches, failed attempts included | `sm.file_entries`, the tree in the widget |
| **leaf** | the entry the next message will hang under (not stored in the file) | `sm.leaf_id`, the row marked *leaf* |
| **current branch** | the path from the root to the leaf | `sm.get_branch()`, the rows marked `•` |
| **what the model sees** | the branch projected: latest compaction summary first, the kept tail, branch summaries, context edits applied | `sm.build_session_context()`, the widget's *What the model sees* tab |

**Using the widget.** Click a row to select it (the right pane shows the entry, or what the model would see
with the leaf there). Double-click or press Enter to *go there* (pi's `/tree`: with or without a summary of
the branch you leave). The `⋯` menu also compacts (with a preview first), labels, forks and clones.
↑/↓ move, ←/→ and page keys jump a page, Ctrl+←/→ fold or jump between branch segments, typing searches.
Dimmed rows were summarised away by the latest compaction; *kept from here* marks its first kept entry.

Everything here runs on pi_lab's **offline model**: no key, no network, and the same answers every run.
Every file the tour writes is in a fresh temporary folder (`WORK`); a session it opens is first copied
there, so nothing you run here changes a session file of yours.'''))

CELLS.append(('code', r'''import asyncio, itertools, json, os, shutil, subprocess, sys, tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import ipywidgets as W

from pi_lab.agent import AgentSession, OVERFLOW_RETRY_FAILED, demo_tools
from pi_lab.compaction import (CompactionSettings, RetryPolicy, compact, estimate_tokens, find_cut_point,
                               prepare_compaction, should_compact)
from pi_lab.data import WORKED_EXAMPLE, recorded_session
from pi_lab.llm import FaultReply, OfflineModel, ToolCallReply, is_context_overflow, is_retryable_assistant_error
from pi_lab.session import SessionManager, build_context_entries, build_session_path
from pi_lab.session.ids import epoch_ms
from pi_lab.session.display import display_text
from pi_lab.widget import SessionWidget
from pi_lab.teach import exercise, frozen, stepper
from IPython.display import Markdown, display
from pi_lab.view.preview import compaction_preview

WORK = Path(tempfile.mkdtemp(prefix="pi-lab-tour-"))   # every file this tour writes goes here


class Clock:
    """A clock one second per reading, so ids, files and answers are the same every run."""
    def __init__(self):
        self.now = datetime(2026, 7, 29, 9, 0, tzinfo=timezone.utc)
    def __call__(self):
        self.now += timedelta(seconds=1)
        return self.now


def ids():
    counter = itertools.count(1)
    return lambda: f"{next(counter):08x}-0000-4000-8000-000000000000"


def offline(*script, window=100_000, clock=None):
    return OfflineModel(list(script), context_window=window, clock=(lambda: epoch_ms(clock())) if clock else None)


def show(entries, title=None):
    """One line per entry: id, parent, kind, pi's display text."""
    if title:
        print(title)
    for e in entries:
        m = e.get("message") if e.get("type") == "message" else None
        kind = m.get("role") if isinstance(m, dict) else e.get("type")
        parent = e.get("parentId") if "parentId" in e else "—"
        print(f"  {str(e.get('id', '(header)')):>10} ← {str(parent):<10} {kind:<22} {display_text(e)[:70]}")


def roles(messages):
    return [m["role"] for m in messages]


def check(n, condition, statement):
    """Each question ends with a check: the statement must hold in the state just produced."""
    assert condition, f"Q{n}: {statement}"
    print(f"✓ Q{n}: {statement}")


def quiz(n, question, *, answer, session, choices=None, number=False, node=None, reveal_md="", tolerance=0):
    """Question n as an exercise (pi_lab.teach.exercise): predict, then Reveal says whether the
    prediction was right, shows the answer and selects `node` in a widget frozen at this moment of
    `session` (pi_lab.teach.frozen), which still shows this moment after Run All."""
    sm = getattr(session, "session_manager", session)
    widget = frozen(sm, step=len(sm.file_entries), height=520)
    if sm.leaf_id != widget.session_manager.leaf_id:
        widget.session_manager.branch(sm.leaf_id)  # a leaf moved without an append (in memory only)
        widget.sync()
    ex = exercise(f"Q{n}. {question}".replace("`", ""), choices=choices, number=number, answer=answer,
                  tolerance=tolerance, widget=widget if node else None, node=node,
                  reveal=lambda: display(Markdown(reveal_md)))
    return W.VBox([ex, widget])'''))

CELLS.append(('md', r'''## 1. The worked example and a real session, side by side

Left: the final JSONL of the explainer's worked example (§14). `U1 → A1 → T1 → A2` read the auth code;
the user went down a JWT path (`U2 → A3`), came back to `U2` with a branch summary `BS1`, took the
cookie path (`U2B …`), and a compaction `C1` kept only `U4` onwards.

Right: a real session with real tool calls, a branch and compactions. Which one depends on where the
notebook runs, and the line printed under this cell says which you are looking at:

* **in the project's own checkout**, where pi's fixtures sit beside it (`../shared/fixtures/pi-sessions`):
  `before-compaction.jsonl`, a session **pi itself wrote** (a test fixture of the pi repository: about
  a thousand messages, two compactions). Its answers came from Anthropic's claude-opus-4-5, so its gauge
  is drawn against that model's published 200k window (`pi_lab.llm.catalog`);
* **everywhere else** (a pip install, a fresh clone): `tiny-auth.jsonl`, shipped with pi_lab
  (`pi_lab.data`). It was **recorded by pi_lab's own `AgentSession`** on the offline model against a
  tiny Python project made for it: the model's replies are scripted, but its tool calls really listed,
  read and edited the project's files, the user went back from a JWT attempt with a branch summary
  (labelled *cookie route* from there), and two compactions happened on the 4,000-token window the
  offline model was given; the gauge uses that window. The summaries are the offline model's
  extractive checkpoints, not a language model's prose. `tools/record_sample_session.py` records it
  again byte for byte (fixed ids and clock), and pi 1.6.0 reads it exactly as pi_lab does.

Either way the widget opens a copy in `WORK`, and only reads it, as every session opened from a path
(`SessionWidget(path)`, `pi_lab.open(path)`): an old format is migrated in memory, nothing is written.
Its header's *Allow writing…* says what writing would do, and to which file (here: the copy).'''))

CELLS.append(('code', r'''SEED = WORKED_EXAMPLE  # pi_lab.data: the explainer's section 14, the one copy

def seed_copy(name, lines=None):
    """A fresh copy of the worked example (optionally only its first `lines` lines)."""
    path = WORK / f"{name}.jsonl"
    text = SEED if lines is None else "".join(SEED.splitlines(keepends=True)[:lines])
    path.write_text(text, encoding="utf-8")
    return path


def real_session():
    """The session for the right-hand widget: (a copy in WORK, what it is, widget options).

    pi's own fixture when pi's fixtures are beside the folder this notebook runs in, else the
    session shipped with pi_lab. Only the copy is opened: opening may migrate a file, and the
    widget's buttons write to the file they show."""
    here = Path.cwd().resolve()
    for base in (here, *here.parents):
        fixture = base / "shared" / "fixtures" / "pi-sessions" / "before-compaction.jsonl"
        if fixture.is_file():
            # A recorded session is drawn against the window of the model that answered it.
            return (Path(shutil.copyfile(fixture, WORK / fixture.name)),
                    "before-compaction.jsonl, written by pi itself (a fixture of the pi repository)", {})
    rec = recorded_session("tiny-auth")
    # The offline model's window is not in the file: tell the widget the one it was recorded with.
    options = {"context_window": rec.context_window,
               "settings": CompactionSettings(reserve_tokens=rec.reserve_tokens, keep_recent_tokens=rec.keep_recent_tokens)}
    return (Path(shutil.copyfile(rec.path, WORK / rec.path.name)),
            f"tiny-auth.jsonl, shipped with pi_lab: {rec.description} on a {rec.context_window:,}-token window", options)


seed_w = SessionWidget(seed_copy("seed"), height=560, layout=W.Layout(width="50%"))
real_path, real_what, real_options = real_session()
real_w = SessionWidget(real_path, height=560, layout=W.Layout(width="50%"), **real_options)
real_sm = real_w.session_manager
real_model = real_sm.build_session_context().model or {}
tokens = real_w.gauge["tokens"]
print("Right:", real_what)
print(f"  {len(real_sm.entries)} entries; on the current branch: compactions {len(real_w.compactions)}, "
      f"branch summaries {sum(e['type'] == 'branch_summary' for e in real_sm.get_branch())}; model "
      f"{real_model.get('provider')}/{real_model.get('modelId')}; gauge "
      f"{'unknown' if tokens is None else f'{tokens:,}'} of {real_w.gauge['context_window']:,} tokens")
W.HBox([seed_w, real_w])'''))

CELLS.append(('md', r'''## 2. The four states

The same four questions can be asked of any session. Here they are for the worked example.'''))

CELLS.append(('code', 'seed_sm = seed_w.session_manager\nshow(seed_sm.file_entries, "File entries (every line, both branches):")\nprint("\\nLeaf:", seed_sm.leaf_id, "  (on open, the leaf is the last line of the file)")\nprint("\\nCurrent branch:", [e["id"] for e in seed_sm.get_branch()])\nprint("\\nWhat the model sees:")\nfor m in seed_sm.build_session_context().messages:\n    text = m.get("summary") or (m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])\n    print(f"  {m[\'role\']:<18} {text[:60]}")'))

CELLS.append(('md', r'''The widget shows the same four things: every entry is a row; the leaf row is marked *leaf*; the current
branch is the run of rows with `•` from the top (pi lists the active branch first at every branch point);
and the *What the model sees* tab lists the projection, each message with pi's token estimate and a link to
the entry it came from. Below, the widget shows what the model would see **with the leaf on `A4`**, before
the compaction existed: any entry can be inspected this way, not only the leaf.'''))

CELLS.append(('code', r'''seed_w.side_pane = "context"
seed_w.selected_id = "A4"
from pi_lab.view.payload import context_payload
at_a4 = context_payload(seed_w.view, "A4")
print([(m["role"], m["source_id"], m["tokens"]) for m in at_a4["messages"]])'''))

CELLS.append(('md', r'''**When did the context fill up, and with what?** The strip above each tree draws
`pi_lab.view.context_timeline`: one point per model call on the current branch, the measured usage as a
solid line and pi's estimate of what was sent as a dashed one, the auto-compaction threshold
(window − reserveTokens) and keepRecentTokens as lines, each compaction as a marker with its tokens
before → after, branch summaries and overflows marked. Click a point (or focus the strip, move with
←/→, PageUp/PageDown to the markers, and press Enter) to select that entry in the tree; selecting an
entry highlights its call. At the top of *What the model sees*, the bar is `context_composition`: the
context's tokens by part (system prompt, compaction summary, branch summaries, user, assistant text,
thinking, tool calls, tool results by tool); click a part to list only its messages.'''))

CELLS.append(('code', 'from pi_lab.view import context_composition, context_timeline\n\nreal_rows = context_timeline(real_sm)                 # what the right-hand strip draws\nreal_calls = [r for r in real_rows if r["kind"] == "call"]\nmeasured = [r for r in real_calls if r["measured"] is not None]\nprint(f"Right: {len(real_calls)} model calls on the current branch, {len(measured)} with measured usage")\nfor r in real_rows:\n    if r["kind"] == "compaction":\n        before = "?" if r["tokens_before"] is None else f"{r[\'tokens_before\']:,}"\n        print(f"  compaction {r[\'entry_id\']}: {before} tokens before -> {r[\'estimated\']:,} estimated right after")\nif real_calls:\n    fullest = max(real_calls, key=lambda r: r["measured"] or r["estimated"])\n    print(f"  fullest call: {fullest[\'entry_id\']} with {fullest[\'measured\'] or fullest[\'estimated\']:,} tokens")\n    parts = context_composition(real_sm, fullest["entry_id"])\n    print(f"\\nWhat the context there is made of: {sum(p[\'tokens\'] for p in parts):,} tokens by pi\'s chars/4 "\n          "estimate (the bar of *What the model sees*; a provider\'s count also holds what the file does not "\n          "record, such as the system prompt of older pi versions):")\n    for part in parts:\n        print(f"  {part[\'part\']:<30} {part[\'tokens\']:>8,} tokens, {part[\'messages\']} messages")\n    real_w.side_pane = "context"\n    real_w.selected_id = fullest["entry_id"]\nprint("\\nLeft, the worked example at C1:", [(p["part"], p["tokens"]) for p in context_composition(seed_sm, "C1")])'))

CELLS.append(('md', r'''# The 22 questions

Each question of the explainer's section 19 gets a cell that **produces** the situation and checks the
answer on it. The first group drives a live agent session; its widget below updates as the cells run.

## A. A message enters the session

**Q1. Why is U1's `parentId` null, and why is A1's `U1`?**
Appending never looks for a place in the tree: the new entry's `parentId` is simply the **leaf at the
moment of the append**, and the leaf then moves to the new entry. A new session starts with no leaf. In the
worked example U1 is the first entry; in a live pi session the first entry is the tool-loadout system
message, so *it* gets `null` and U1 hangs under it.'''))

CELLS.append(('code', 'repo = WORK / "repo"\nrepo.mkdir()\n(repo / "auth.ts").write_text("export function login(user: string, password: string) { return session(user) }\\n")\nclock = Clock()\nlive_model = offline(ToolCallReply("read", {"path": "auth.ts"}), "认证逻辑已定位: login() opens a session.", clock=clock)\nlive_sm = SessionManager.create(str(repo), WORK / "sessions", clock=clock, uuid_factory=ids())\nagent = AgentSession(live_sm, client=live_model, tools=demo_tools(repo), record_startup=False,\n                     settings=CompactionSettings(keep_recent_tokens=60))\n\nleaf_at_append = []\nagent.subscribe(lambda e: e["type"] == "message_end" and leaf_at_append.append(live_sm.leaf_id))\nlive_w = SessionWidget(agent, height=420)\nlive_w'))

CELLS.append(('code', r'''print("leaf before the first prompt:", live_sm.leaf_id)
await agent.prompt("检查认证实现")
branch = live_sm.get_branch()
show(branch, "The branch after one prompt:")
u1 = next(e for e in branch if e["type"] == "message" and e["message"]["role"] == "user")
a1 = branch[branch.index(u1) + 1]
check(1, branch[0]["parentId"] is None, "the first entry of a session has parentId null (the leaf was null)")
check(1, all(e["parentId"] == parent for e, parent in zip(branch[1:], [x["id"] for x in branch])),
      "every other entry's parentId is the entry appended just before it on this path")
check(1, a1["parentId"] == u1["id"] and seed_sm.get_entry("U1")["parentId"] is None,
      "so A1 hangs under U1, and in the worked example (no system entry) U1's parent is null")'''))

CELLS.append(('md', r'''**Q2. Between `_handleAgentEvent()` and `SessionManager`, who recognises agent messages and who builds the
entry?** The agent session listens to the loop's `message_end` events and decides *by role* which append
to call; the session manager wraps the message into an entry, adding `type`, `id`, `parentId` and
`timestamp`. The message object itself is stored unchanged inside the entry.'''))

CELLS.append(('code', r'''seen = []
unsubscribe = agent.subscribe(lambda e: e["type"] == "message_end" and seen.append(e["message"]))
live_model.push("Tests are in auth.test.ts.")
await agent.prompt("where are the tests?")
unsubscribe()
user_msg, answer = seen
entry = live_sm.get_branch()[-1]
print("message keys:", sorted(answer))
print("entry keys:  ", sorted(entry))
check(2, "id" not in answer and "parentId" not in answer, "the agent's message has no tree fields")
check(2, entry["message"] is answer and {"type", "id", "parentId", "timestamp"} <= set(entry),
      "the session manager wrapped that very object into an entry with id, parentId and timestamp")'''))

CELLS.append(('md', r'''**Q3. When U1 is already in `fileEntries`, why may the file not exist yet?** Appends change memory first;
the file is written lazily. Entries recorded before the first message (the model and thinking selection)
stay in memory only, so opening pi without chatting leaves no empty session file. The first user message
writes the whole backlog (header, settings, U1) in one go. (pi before 1.0.3 waited for the first
*assistant* message.)'''))

CELLS.append(('code', r'''lazy = SessionManager.create(str(repo), WORK / "lazy", clock=Clock(), uuid_factory=ids())
lazy.append_model_change("pi-lab", "offline")
lazy.append_thinking_level_change("off")
print("in memory:", [e["type"] for e in lazy.file_entries], " file exists:", os.path.exists(lazy.session_file))
check(3, len(lazy.file_entries) == 3 and not os.path.exists(lazy.session_file),
      "entries can be in memory while the file does not exist yet")
lazy.append_message({"role": "user", "content": "检查认证实现", "timestamp": 1})
on_disk = [json.loads(line)["type"] for line in open(lazy.session_file, encoding="utf-8")]
print("after U1, on disk:", on_disk)
check(3, on_disk == ["session", "model_change", "thinking_level_change", "message"],
      "the first user message writes the backlog and itself")'''))

CELLS.append(('md', r'''## B. Restarting from the file

**Q4. After a restart, how does `_buildIndex()` find the leaf?** The leaf is not stored anywhere. Reading
the file, the index sets the leaf to each line's id in turn, so it ends on the **last line**. Moving the
leaf without appending (`branch()`) is therefore lost on restart.'''))

CELLS.append(('code', r'''reopened = SessionManager.open(live_sm.session_file)
last_line = json.loads(open(live_sm.session_file, encoding="utf-8").read().splitlines()[-1])
check(4, reopened.leaf_id == last_line["id"], f"the reopened leaf is the last line ({last_line['id']})")
first_user = next(e["id"] for e in reopened.entries if e.get("message", {}).get("role") == "user")
reopened.branch(first_user)                     # moves the leaf in memory only
check(4, SessionManager.open(live_sm.session_file).leaf_id == last_line["id"],
      "a leaf moved without an append is forgotten by the next open")'''))

CELLS.append(('md', r'''**Q5. What do `buildSessionPath()` and `buildContextEntries()` each select?** The path is every entry from
the root to the leaf. The context entries are what survives the latest compaction on that path: the
compaction first, then the entries from its `firstKeptEntryId`, then everything after it.'''))

CELLS.append(('code', r'''entries = seed_sm.entries
path = [e["id"] for e in build_session_path(entries, "C1")]
context = [e["id"] for e in build_context_entries(entries, "C1")]
print("path:           ", path)
print("context entries:", context)
check(5, path == ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5", "U4", "A6", "C1"],
      "the path follows parentId from C1 back to the root (the JWT branch is not on it)")
check(5, context == ["C1", "U4", "A6"], "the context entries are C1, then its kept tail U4, A6")'''))

CELLS.append(('md', r'''**Q6. Why are model and thinking level restored from the full path, not from the compacted entries?**
A compaction changes what the model reads, not the settings the user chose. A `thinking_level_change`
made early stays in force even when the compaction summarised it away.'''))

CELLS.append(('code', r'''s6 = SessionManager.in_memory(clock=Clock(), uuid_factory=ids())
s6.append_thinking_level_change("high")
s6.append_model_change("openai", "gpt-5")          # the user picked a model ...
first = s6.append_message({"role": "user", "content": "early question", "timestamp": 1})
s6.append_message({"role": "assistant", "content": [{"type": "text", "text": "early answer"}], "stopReason": "stop",
                   "provider": "anthropic", "model": "claude-sonnet-4-5", "timestamp": 2})   # ... then another answered
kept = s6.append_message({"role": "user", "content": "recent question", "timestamp": 3})
s6.append_compaction("Summary of the early part.", kept, 5000)
context_types = [e["type"] for e in s6.build_context_entries()]
ctx = s6.build_session_context()
print("context entries:", context_types, "| thinking level:", ctx.thinking_level, "| model:", ctx.model)
check(6, "thinking_level_change" not in context_types and ctx.thinking_level == "high",
      "the thinking level set before the compaction boundary is still 'high'")
check(6, ctx.model == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"},
      "and the model is the one that last answered on the path, though that answer was summarised away")'''))

CELLS.append(('md', r'''## C. Going back: `/tree`, branch summaries, `/fork`

We restart the worked example just before the story's turn: the JWT branch `U2 → A3` is done and the leaf
is `A3`. The widget follows every step.'''))

CELLS.append(('code', r'''story_path = seed_copy("story", lines=7)          # header + U1 A1 T1 A2 U2 A3
story = SessionManager.open(story_path, clock=Clock(), uuid_factory=ids())
story_clock = Clock()
story_agent = AgentSession(story, client=offline(clock=story_clock), record_startup=False)
story_w = SessionWidget(story_agent, height=380)
print("leaf:", story.leaf_id)
story_w'''))

CELLS.append(('md', r'''**Q7. Choosing U2 to re-edit it, why is the new leaf A2?** Re-editing a user message means sending a
*different* message in its place, as a sibling of U2. The continuation point is therefore U2's parent, and
U2's text goes back to the editor.'''))

CELLS.append(('code', r'''q7 = SessionManager.open(shutil.copyfile(story_path, WORK / "q7.jsonl"))
q7_agent = AgentSession(q7, client=offline(), record_startup=False)
result = await q7_agent.navigate_tree("U2")          # pi's /tree, "No summary"
print("leaf:", q7.leaf_id, "| editor text:", result.editor_text)
check(7, q7.leaf_id == "A2" == q7.get_entry("U2")["parentId"], "the leaf moved to U2's parent, A2")
check(7, result.editor_text == "改成 JWT", "and U2's text is offered for re-editing")'''))

CELLS.append(('md', r'''**Q8. Why does BS1 hang under A2 and not under A3?** A branch summary is appended *at the new position*:
it is the first entry of the new path, so the model on the cookie branch reads it. A3 is where the user
came from; it is recorded as `fromId` (pi 1.6.0 records the abandoned leaf), not as the parent.'''))

CELLS.append(('code', r'''result = await story_agent.navigate_tree("U2", summarize=True)
bs1 = result.summary_entry
show([bs1], "The branch summary just appended:")
check(8, bs1["parentId"] == "A2" and bs1["fromId"] == "A3",
      "BS1's parent is the new position A2; the abandoned leaf A3 is only its fromId")
check(8, story.leaf_id == bs1["id"] and roles(story_agent.messages)[-1] == "branchSummary",
      "BS1 is the leaf and the last thing the model sees")'''))

CELLS.append(('md', r'''**Q9. Why are U2 and A3 still in the JSONL, yet not in the cookie branch's agent state?** The file is
append-only: going back never deletes. The agent state is rebuilt from the projection of the *current
branch*, and U2/A3 are on the other branch.'''))

CELLS.append(('code', r'''story_agent.client.push("cookie 方案已完成")
await story_agent.prompt("改成 session cookie")
in_file = [e["id"] for e in story.entries]
on_branch = [e["id"] for e in story.get_branch()]
texts = [m["content"] if isinstance(m.get("content"), str) else "".join(b.get("text", "") for b in m.get("content") or []) for m in story_agent.messages]
print("in the file:   ", in_file)
print("on the branch: ", on_branch)
check(9, {"U2", "A3"} <= set(in_file) and not {"U2", "A3"} & set(on_branch),
      "U2 and A3 stay in the file but are not on the cookie branch")
check(9, "改成 JWT" not in texts, "so the model's messages do not contain the JWT request")'''))

CELLS.append(('md', r'''**Q10. What do `/fork U2` and `/tree U2` do to the file, the runtime and the editor?** `/tree` stays in
the same file and the same runtime: it moves the leaf (maybe appending a branch summary). `/fork` writes a
**new** session file holding the path *before* U2, with `parentSession` pointing at the old file, and
rebinds the runtime to it; the old file is untouched. Both put U2's text in the editor.'''))

CELLS.append(('code', r'''tree_sm = SessionManager.open(shutil.copyfile(story_path, WORK / "tree10.jsonl"))
tree_agent = AgentSession(tree_sm, client=offline(), record_startup=False)
tree_file, tree_lines = tree_sm.session_file, len(open(tree_sm.session_file).read().splitlines())
tree_result = await tree_agent.navigate_tree("U2")

fork_sm = SessionManager.open(shutil.copyfile(story_path, WORK / "fork10.jsonl"))
fork_agent = AgentSession(fork_sm, client=offline(), record_startup=False)
old_file, old_bytes = fork_sm.session_file, open(fork_sm.session_file, "rb").read()
fork_result = await fork_agent.fork("U2", position="before")
new = fork_agent.session_manager
print("/tree: same file:", tree_agent.session_manager.session_file == tree_file, "| leaf:", tree_sm.leaf_id, "| editor:", tree_result.editor_text)
print("/fork: new file:", Path(new.session_file).name, "| parentSession:", Path(new.header["parentSession"]).name,
      "| entries:", [e["id"] for e in new.entries], "| editor:", fork_result.selected_text)
check(10, tree_agent.session_manager.session_file == tree_file and tree_sm.leaf_id == "A2",
      "/tree keeps the file and the runtime, and moves the leaf to A2")
check(10, new.session_file != old_file and new.header["parentSession"] == old_file
      and [e["id"] for e in new.entries] == ["U1", "A1", "T1", "A2"] and open(old_file, "rb").read() == old_bytes,
      "/fork writes a new file with the path before U2 (parentSession → old file) and leaves the old one alone")
check(10, tree_result.editor_text == fork_result.selected_text == "改成 JWT", "both offer U2's text for editing")'''))

CELLS.append(('md', r'''## D. Compaction

**Q11. Why does `_handlePostAgentRun()` handle an ordinary retry first and only then check compaction?**
A rate limit or an overloaded server says nothing about the context: the failed reply has no usable usage,
and the same request will simply be sent again. Only a *final* reply can tell whether the context is too
full. Here the first attempt fails with "overloaded", is retried, and the successful retry is what crosses the
threshold and triggers the compaction.'''))

CELLS.append(('code', r'''c11 = Clock()
m11 = offline("ok " * 20, FaultReply("overloaded"), "recovered: " + "a detailed answer " * 200, window=3_000, clock=c11)
s11 = SessionManager.create(str(repo), WORK / "s11", clock=c11, uuid_factory=ids())
a11 = AgentSession(s11, client=m11, record_startup=False, retry=RetryPolicy(base_delay_ms=1),
                   settings=CompactionSettings(reserve_tokens=2_200, keep_recent_tokens=40))
log11 = []
a11.subscribe(lambda e: log11.append(e["type"]))
await a11.prompt("a first question " * 10)
await a11.prompt("a second, longer question " * 30)
order = [t for t in log11 if t in ("auto_retry_start", "auto_retry_end", "compaction_start", "compaction_end")]
print(order)
check(11, order == ["auto_retry_start", "auto_retry_end", "compaction_start", "compaction_end"],
      "the overloaded reply was retried first; the compaction came after the successful retry")'''))

CELLS.append(('md', r'''**Q12. Where do `reserveTokens` and `keepRecentTokens` act?** `reserveTokens` only decides *whether* to
compact: the threshold is `contextWindow − reserveTokens`, checked after a reply (and before the next
request). `keepRecentTokens` only decides *where* to cut, inside `prepareCompaction()`'s walk back from
the newest entry.'''))

CELLS.append(('code', r'''live_model.push("Here is the plan: " + "one step of the plan, " * 60)
await agent.prompt("plan the refresh-token work, " * 8)
branch = live_sm.get_branch()
tokens = agent.get_context_usage().tokens
for reserve in (16_384, 100_000 - tokens + 1):
    print(f"window 100000, reserve {reserve}: threshold {100_000 - reserve}, compact? "
          f"{should_compact(tokens, 100_000, CompactionSettings(reserve_tokens=reserve))}")
cuts = {keep: prepare_compaction(branch, CompactionSettings(keep_recent_tokens=keep)).first_kept_entry_id for keep in (20, 400)}
print("first kept entry by keepRecentTokens:", cuts)
check(12, not should_compact(tokens, 100_000, CompactionSettings(reserve_tokens=16_384))
      and should_compact(tokens, 100_000, CompactionSettings(reserve_tokens=100_000 - tokens + 1)),
      f"with {tokens} tokens in context, only the reserve decides whether to compact")
check(12, None not in cuts.values() and cuts[20] != cuts[400], "only keepRecentTokens moves the cut point")'''))

CELLS.append(('md', r'''**Q13. Why does `prepareCompaction()` take the current branch and not the whole tree?** The summary
replaces what *this* path's model has read. Other branches were never in its context; mixing their
alternatives into the checkpoint would tell the model about work it never did.'''))

CELLS.append(('code', r'''prep = prepare_compaction(story.get_branch(), CompactionSettings(keep_recent_tokens=1))
summarised = [m for m in prep.messages_to_summarize] + list(prep.turn_prefix_messages)
jwt_request = story.get_entry("U2")["message"]
print(roles(summarised))
check(13, all(m is not jwt_request for m in summarised) and "branchSummary" in roles(summarised),
      "the cookie branch's compaction summarises BS1 (what this path knows of JWT), never U2 itself")'''))

CELLS.append(('md', r'''**Q14. Why can a ToolResult never be the `firstKeptEntryId`?** The kept tail is sent verbatim; a tool
result whose tool call was summarised away is rejected by providers (every result must answer a call in the
same request). Whatever the budget, the cut lands on a user or assistant message, never on a result.'''))

CELLS.append(('code', 's14 = SessionManager.in_memory(clock=Clock(), uuid_factory=ids())\ns14.append_message({"role": "user", "content": "read the three files", "timestamp": 1})\nfor n in range(3):\n    s14.append_message({"role": "assistant", "content": [{"type": "toolCall", "id": f"r{n}", "name": "read", "arguments": {"path": f"f{n}.py"}}],\n                        "stopReason": "toolUse", "timestamp": 2})\n    s14.append_message({"role": "toolResult", "toolCallId": f"r{n}", "toolName": "read",\n                        "content": [{"type": "text", "text": "x = 1\\n" * 200}], "isError": False, "timestamp": 3})\ns14.append_message({"role": "assistant", "content": [{"type": "text", "text": "All three read."}], "stopReason": "stop", "timestamp": 4})\npath14 = s14.get_branch()\ncut_roles = set()\nfor keep in range(1, 1500, 7):\n    cut = find_cut_point(path14, 0, len(path14), keep)\n    cut_roles.add(path14[cut.first_kept_entry_index]["message"]["role"])\nprint("roles the cut landed on, over 214 budgets:", sorted(cut_roles))\ncheck(14, "toolResult" not in cut_roles, "the first kept entry is never a tool result")'))

CELLS.append(('md', r'''**Q15. What are the three parts of a split turn?** When the budget ends inside one long turn (one user
request and a chain of tool calls), pi keeps the end of that turn verbatim and summarises its beginning
separately: **history** (before the turn) → history summary; **turn prefix** (the turn's start up to the
cut) → turn-prefix summary; **kept** (the rest) → sent as is.'''))

CELLS.append(('code', r'''s15 = SessionManager.in_memory(clock=Clock(), uuid_factory=ids())
s15.append_message({"role": "user", "content": "U5: an earlier, finished request", "timestamp": 1})
s15.append_message({"role": "assistant", "content": [{"type": "text", "text": "A7: done"}], "stopReason": "stop", "timestamp": 2})
s15.append_message({"role": "user", "content": "U6: refactor the whole auth module", "timestamp": 3})
for n in range(4):
    s15.append_message({"role": "assistant", "content": [{"type": "toolCall", "id": f"t{n}", "name": "read", "arguments": {"path": f"auth{n}.ts"}}],
                        "stopReason": "toolUse", "timestamp": 4})
    s15.append_message({"role": "toolResult", "toolCallId": f"t{n}", "toolName": "read",
                        "content": [{"type": "text", "text": "code " * 150}], "isError": False, "timestamp": 5})
s15.append_message({"role": "assistant", "content": [{"type": "text", "text": "A11: refactor finished"}], "stopReason": "stop", "timestamp": 6})
p15 = compaction_preview(s15.get_branch(), CompactionSettings(keep_recent_tokens=300))
for part in ("summarize", "turn_prefix", "kept"):
    print(f"{part:<12}", [(i["role"], i["preview"][:24]) for i in p15[part]["items"] if "role" in i])
check(15, p15["is_split_turn"], "the cut fell inside U6's turn")
check(15, p15["summarize"]["items"][0]["preview"].startswith("U5") and p15["turn_prefix"]["items"][0]["preview"].startswith("U6")
      and p15["kept"]["items"][-1]["preview"].startswith("A11"),
      "history = U5…A7, turn prefix = U6 and its first tool calls, kept = the rest of the turn")'''))

CELLS.append(('md', r'''**Q16. Why does `compact()` not write the session itself?** It only produces a result (summary, first kept
entry, tokens before). The agent session decides whether to use it (an extension may cancel or replace
it, the user may abort) and then appends it; only then does the projection change.'''))

CELLS.append(('code', r'''branch = live_sm.get_branch()
prep16 = prepare_compaction(branch, agent.settings)
lines_before = len(open(live_sm.session_file).read().splitlines())
result16 = await compact(prep16, agent.client, agent.model)
lines_after_compact = len(open(live_sm.session_file).read().splitlines())
print("compact() returned a summary of", len(result16.summary), "characters; file lines:", lines_before, "→", lines_after_compact)
check(16, lines_after_compact == lines_before, "compact() alone leaves the file as it was")
await agent.compact()
check(16, live_sm.get_branch()[-1]["type"] == "compaction" and len(open(live_sm.session_file).read().splitlines()) == lines_before + 1,
      "AgentSession.compact() is what appends the compaction entry")'''))

CELLS.append(('md', r'''**Q17. C1 is appended after A7; why does the C1 summary come *before* A7 in the context?** The file order
is the order things happened. The context order is the order the model should read: first the summary of
everything older, then the kept messages, whose text follows from it. `buildContextEntries()` puts the
latest compaction first even though it is the last line. (Here: the worked example, C1 after A6.)'''))

CELLS.append(('code', r'''file_order = [e["id"] for e in seed_sm.entries]
context_sources = [item.source["id"] for item in seed_sm.build_session_projection().entries]
print("file order:   ", file_order)
print("context order:", context_sources)
seed_w.selected_id = "C1"
check(17, file_order.index("C1") > file_order.index("A6") and context_sources.index("C1") < context_sources.index("A6"),
      "C1 is after A6 in the file and before it in what the model sees")'''))

CELLS.append(('md', r'''**Q18. Why does a second compaction start from C1's `firstKeptEntryId`?** After C1 the model reads
`[C1 summary, U4, A6, …new messages]`. When that fills up again, the part to summarise begins right after
the previous summary, i.e. at C1's first kept entry: those kept messages are now the oldest thing the model
reads verbatim. They are summarised together with the previous summary (the *update* prompt).'''))

CELLS.append(('code', r'''s18 = SessionManager.open(seed_copy("second-compaction"), clock=Clock(), uuid_factory=ids())
for n in range(3):
    s18.append_message({"role": "user", "content": f"U{8 + 2 * n}: next request " + "detail " * 60, "timestamp": 10 + n})
    s18.append_message({"role": "assistant", "content": [{"type": "text", "text": f"A{9 + 2 * n}: done " + "detail " * 60}],
                        "stopReason": "stop", "timestamp": 20 + n})
prep18 = prepare_compaction(s18.get_branch(), CompactionSettings(keep_recent_tokens=150))
first = prep18.messages_to_summarize[0]
print("first summarised message:", first["content"][:20], "| previous summary:", prep18.previous_summary[:20])
check(18, first is s18.get_entry("U4")["message"], "the second compaction's summary starts at U4, C1's first kept entry")
check(18, prep18.previous_summary == s18.get_entry("C1")["summary"], "and updates C1's summary instead of starting over")'''))

CELLS.append(('md', r'''## E. When the context overflows

We give the live agent a model whose next reply is a provider's *prompt is too long* error (E1).'''))

CELLS.append(('code', r'''events = []
agent.subscribe(events.append)
live_model.push(FaultReply("overflow"), "恢复后完成: the refresh tokens are in place.")
users_before = sum(1 for e in live_sm.entries if e.get("message", {}).get("role") == "user")
await agent.prompt("add refresh tokens " + "with details " * 40)
tail = live_sm.get_branch()[-5:]
show(tail, "The end of the branch:")
user, e1, edit, c2, answer = tail'''))

CELLS.append(('md', r'''**Q19. Why is E1 persisted first, and only then excluded with a `context_edit`?** The file is the complete
record: a failed attempt is part of what happened (its error, its usage) and must survive a crash. What the
model should *not* see is decided in the projection, by an appended `context_edit` that omits E1. Nothing is
deleted or rewritten.'''))

CELLS.append(('code', r'''check(19, e1["message"]["stopReason"] == "error" and e1 in live_sm.entries, "E1 is a line of the file")
check(19, edit["type"] == "context_edit" and edit["targetId"] == e1["id"] and edit["replacement"] is None
      and live_sm.entries.index(edit) > live_sm.entries.index(e1), "a later context_edit omits it")
check(19, all(m.get("stopReason") != "error" for m in agent.messages), "so the model no longer sees E1")'''))

CELLS.append(('md', r'''**Q20. Why can an overflow not use the ordinary retry?** Sending the same request again gives the same
error: the request itself is too big. Only shrinking the context (a compaction) can make it fit.'''))

CELLS.append(('code', r'''rate_limited = {"role": "assistant", "stopReason": "error", "errorMessage": "429 rate_limit_error: slow down", "content": []}
print("E1:", e1["message"]["errorMessage"][:60])
check(20, is_context_overflow(e1["message"], 100_000) and not is_retryable_assistant_error(e1["message"]),
      "the overflow is recognised and is not retryable")
check(20, is_retryable_assistant_error(rate_limited), "while a rate limit is")
check(20, "auto_retry_start" not in [e["type"] for e in events], "and no ordinary retry was attempted for E1")'''))

CELLS.append(('md', r'''**Q21. How does `_runAutoCompaction()` returning `true` become `agent.continue()`?** The overflow
compaction ends with `willRetry: true`; the prompt loop sees it and continues the run **without a new user
message**: the next reply answers the same request, now from the compacted context.'''))

CELLS.append(('code', r'''end = [e for e in events if e["type"] == "compaction_end"][-1]
users_after = sum(1 for e in live_sm.entries if e.get("message", {}).get("role") == "user")
print("compaction_end:", {k: end[k] for k in ("reason", "willRetry", "aborted")})
check(21, end["reason"] == "overflow" and end["willRetry"] is True, "the overflow compaction asked for a retry")
check(21, answer["parentId"] == c2["id"] and answer["message"]["content"][0]["text"].startswith("恢复后完成")
      and users_after == users_before + 1, "the run continued after the compaction with no new user message")'''))

CELLS.append(('md', r'''**Q22. Why is compact-and-retry tried only once?** If the retried request overflows again, compacting
again would summarise the summary and loop without progress. pi keeps a flag for the recovery window: a
second overflow ends the run with an error instead. A new user message resets it.'''))

CELLS.append(('code', r'''events.clear()
live_model.push(FaultReply("overflow"), FaultReply("overflow"))
compactions_before = sum(1 for e in live_sm.get_branch() if e["type"] == "compaction")
await agent.prompt("one more thing " + "with details " * 40)
ends = [e for e in events if e["type"] == "compaction_end"]
compactions_after = sum(1 for e in live_sm.get_branch() if e["type"] == "compaction")
print([(e["reason"], e["willRetry"], e.get("errorMessage")) for e in ends])
check(22, compactions_after == compactions_before + 1 and ends[-1].get("errorMessage") == OVERFLOW_RETRY_FAILED,
      "one compaction, then the second overflow stops with pi's error")
live_model.push("back on track")
await agent.prompt("short question")
check(22, live_sm.get_branch()[-1]["message"]["content"][0]["text"] == "back on track", "a new user message starts afresh")'''))

CELLS.append(('md', r'''## Where to go next

* `live_w` above now shows the whole live session: the first compaction, the overflow `E1` struck through
  (omitted by the `context_edit`), and the second compaction. Select `E1` and open *What the model sees*
  on the entry before and after it.
* `pi_lab.open(path)` opens any pi session file (`~/.pi/agent/sessions/…`) in the same widget and follows
  the file while pi writes to it. It only reads the file; `pi_lab.open(path, writable=True)` (or
  *Allow writing…* in the widget) is the explicit choice to navigate with summaries, label or compact
  into it. The cells of this tour that write do so in `WORK` only.
* In the compactions tab, a smaller *context window* ("pretend window") shows where a long session would
  compact.'''))

CELLS.append(('code', r'''live_w.select(e1["id"])
live_w.side_pane = "context"
print(f"{len(live_sm.entries)} entries; gauge: {live_w.gauge['tokens']} tokens of {live_w.gauge['context_window']}; "
      f"{len(live_w.compactions)} compactions on the branch")'''))


# Each question's exercise: the prediction asked (choices, the right one by its index, or a
# number), the session whose state at that moment the widget shows, the node Reveal selects.
# The explanation shown on Reveal is the answer paragraph of the question's own text.
EXERCISES: dict[int, dict] = {
    1: dict(choices=["pi looks for the best parent in the tree", "the parent is the leaf at the moment of the append",
                     "the parent is the previous line of the file"], right=1, session="live_sm", node='a1["id"]'),
    2: dict(choices=["the session manager does both", "the agent session recognises it by role; the session manager builds the entry",
                     "the model's reply already is an entry"], right=1, session="live_sm", node='entry["id"]'),
    3: dict(choices=["pi writes the file only at exit", "appends change memory first; the first user message writes the backlog",
                     "the file is written on every append"], right=1, session="lazy"),
    4: dict(choices=["the leaf is stored in the header", "the leaf is the last line of the file",
                     "the leaf is the newest user message"], right=1, session="SessionManager.open(live_sm.session_file)",
            node='last_line["id"]'),
    5: dict(number=True, answer="len(context)", prompt="How many entries does buildContextEntries() select with the leaf on C1?",
            session="seed_sm", node='"C1"'),
    6: dict(choices=["from the compacted entries: they are what the model reads",
                     "from the full path: a compaction changes what the model reads, not the user's settings",
                     "from the latest assistant message"], right=1, session="s6"),
    7: dict(choices=["U2", "A2", "A3"], right=1, session="q7", node='"A2"'),
    8: dict(choices=["A3, where the user came from", "U2, the entry chosen", "A2, the new position"], right=2,
            session="story", node='bs1["id"]'),
    9: dict(choices=["the file is append-only; the agent state is the current branch's projection",
                     "they are hidden by a context_edit", "pi deletes them at the next restart"], right=0,
            session="story", node='"A3"'),
    10: dict(choices=["both write a new file", "/tree moves the leaf in the same file; /fork writes a new file with the path before U2",
                      "/fork deletes U2 from the old file"], right=1, session="fork_sm"),
    11: dict(choices=["an ordinary retry first: only a final reply can tell whether the context is full",
                      "compaction first: a failed request means the context is full", "both at once"], right=0,
             session="s11"),
    12: dict(choices=["both decide where to cut", "reserveTokens decides whether to compact, keepRecentTokens where to cut",
                      "keepRecentTokens decides whether to compact, reserveTokens where to cut"], right=1, session="live_sm"),
    13: dict(choices=["the summary replaces what this path's model has read; other branches were never in it",
                      "the whole tree would be too big to summarise", "other branches are summarised separately"],
             right=0, session="story", node='"U2"'),
    14: dict(choices=["it can, when the budget ends there", "never: a kept tool result needs its tool call in the same request",
                      "only for the read tool"], right=1, session="s14"),
    15: dict(number=True, answer="3", prompt="Into how many parts does a split turn divide what is compacted?",
             session="s15"),
    16: dict(choices=["it does: compact() appends the compaction", "it only returns a result; the agent session decides and appends it",
                      "the file is rewritten by the summariser"], right=1, session="live_sm",
             node='live_sm.get_branch()[-1]["id"]'),
    17: dict(choices=["the summary of everything older is read first, then the kept messages",
                      "the compaction entry is moved up in the file", "the model reads the file backwards"], right=0,
             session="seed_sm", node='"C1"'),
    18: dict(choices=["at the root again", "at C1's firstKeptEntryId", "at C1 itself, dropping the summary"], right=1,
             session="s18", node='"U4"'),
    19: dict(choices=["E1 is never written", "E1 is written, then a later context_edit omits it from the projection",
                      "E1 is deleted from the file"], right=1, session="live_sm", node='e1["id"]'),
    20: dict(choices=["it can: the next try may succeed", "the same request gives the same error; only a smaller context fits",
                      "overflows are never retried at all"], right=1, session="live_sm", node='e1["id"]'),
    21: dict(choices=["the user is asked to send the message again", "the run continues with no new user message",
                      "a new user message is appended automatically"], right=1, session="live_sm", node='c2["id"]'),
    22: dict(number=True, answer="1", prompt="After an overflow, how many times does pi compact and retry before giving up?",
             session="live_sm", node='[e["id"] for e in live_sm.get_branch() if e["type"] == "compaction"][-1]'),
}

QUESTION = re.compile(r"\*\*Q(\d+)\. (.*?)\*\*", re.S)


def quiz_cell(n: int, question: str, answer_md: str) -> str:
    spec = EXERCISES[n]
    if spec.get("number"):
        asked = f"number=True, answer={spec['answer']}"
        question = spec["prompt"]
    else:
        asked = f"choices={spec['choices']!r},\n     answer={spec['choices'][spec['right']]!r}"
    node = f", node={spec['node']}" if spec.get("node") else ""
    return (f"# Q{n}: predict, then Reveal (the widget is the session at this moment)\n"
            f"quiz({n}, {question!r},\n     {asked},\n     session={spec['session']}{node},\n"
            f"     reveal_md={answer_md!r})")


TEACH_MD = r'''## Writing your own exercises: `pi_lab.teach`

The exercises above use three helpers a teacher can use on any session (a path, a
`SessionManager`, an `AgentSession` or a widget); none of them writes to the session:

* `exercise(question, choices=[...], answer=..., widget=w, node=entry_id, explain="...", reveal=fn)`:
  the student picks a choice (or types a number with `number=True`, `tolerance=` for a range), then
  *Reveal* says whether the prediction was right, shows `answer` and `explain`, selects `node` in
  `widget` and runs `reveal()` (its output shown under the exercise).
* `session_at(session, k)`: the session as it was after line `k` of its file (the header is line 1),
  the leaf on the last entry read, as pi would open the file cut there; `frozen(session, step=k)` is a
  read-only widget showing it, so a page run top to bottom shows each moment, not the final state.
* `stepper(session, start=None)`: one widget that steps through the session's history: Play, the step
  buttons, or the slider (focused, it takes ← and →). The tree grows, the leaf moves and the gauge
  and the timeline follow, line by line.

Below: the real session of section 1, stepped through from its first message, and an exercise on it.'''

TEACH_CODE = r'''steps = stepper(real_w, start=2)
compaction_line = next(k for k, e in enumerate(real_sm.file_entries, 1) if e.get("type") == "compaction")
steps.go(compaction_line - 1)    # the line before the first compaction: the gauge at its highest
first_compaction = real_sm.file_entries[compaction_line - 1]["id"]
ask = exercise("The next line of this session: what does it do to the gauge?",
               choices=["the gauge climbs", "the gauge drops", "nothing changes"], answer="the gauge drops",
               explain="It is a compaction: the model reads its summary instead of everything before it.",
               reveal=lambda: steps.go(compaction_line))
assert steps.step == compaction_line - 1  # the session just before its first compaction
W.VBox([ask, steps])'''


def build() -> Notebook:
    nb = Notebook("tour")
    pending: tuple[int, str, str] | None = None
    for kind, source in CELLS:
        if kind == "md" and (match := QUESTION.search(source)):
            n, question = int(match.group(1)), match.group(2)
            # The answer paragraph moves into the exercise: shown on Reveal, not under the question.
            answer_md = source[match.end():].strip()
            nb.md(source[:match.end()] + "\n\nThe cell below makes it happen and checks it (its output is folded: "
                  "open it after you have predicted); the exercise after it asks for your prediction before it "
                  "shows the answer, in a widget of the session at that moment.")
            pending = (n, question, answer_md)
            continue
        if kind == "md" and source.startswith("## Where to go next"):
            nb.md(TEACH_MD)
            nb.code(TEACH_CODE)
        getattr(nb, kind)(source)
        # after the cell that checks the answer (the one that made it happen)
        if kind == "code" and pending is not None and f"check({pending[0]}," in source:
            # Its output states the answer: folded until the student has predicted (JupyterLab keeps
            # it folded when the cell runs again; a click on the fold opens it).
            nb.cells[-1].metadata["jupyter"] = {"outputs_hidden": True}
            nb.code(quiz_cell(*pending))
            # the answer is in the cell's text: the input is collapsed, the exercise shown
            nb.cells[-1].metadata["jupyter"] = {"source_hidden": True}
            pending = None
    return nb


if __name__ == "__main__":
    build().write("examples/tour.ipynb")
