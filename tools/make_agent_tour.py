"""Writes examples/agent-tour.ipynb (run from the repository root). Edit here, then regenerate."""
import nbformat as nbf

cells = []
md = lambda s: cells.append(nbf.v4.new_markdown_cell(s))
code = lambda s: cells.append(nbf.v4.new_code_cell(s))

md("""# Agent tour: a session driven by the offline model

This notebook runs pi's agent machinery in the kernel on the **embedded offline model** (no API key,
no network). The model's context window is set small on purpose (a *pretend window*), so that
threshold compaction, a second compaction and overflow recovery all happen within a few turns.

After every step we print the **four states** of the seed explainer:

1. **file entries**: every entry in the session file, all branches (the complete record);
2. **leaf**: where the next entry will hang;
3. **current branch**: the path from the root to the leaf;
4. **what the model sees**: the projection of that branch (compaction summary first, kept messages,
   branch summaries, context edits applied).

From step 2 on, a live **session widget** follows the agent: the tree grows as entries are appended,
the gauge at its top fills as the context grows, and it drops when a compaction runs. Every file this
notebook writes is in a fresh temporary folder.""")

code("""import json, pathlib, tempfile
from IPython.display import display
from pi_lab import AgentSession, SessionManager, SessionWidget
from pi_lab.agent import demo_tools
from pi_lab.compaction import CompactionSettings
from pi_lab.llm import OfflineModel, ToolCallReply, FaultReply
from pi_lab.session.states import four_states

work = pathlib.Path(tempfile.mkdtemp(prefix="pi-lab-agent-tour-"))
(work / "repo").mkdir()
(work / "repo" / "auth.ts").write_text("export function login(user, password) {\\n  return checkPassword(user, password);\\n}\\n")

model = OfflineModel(context_window=4000)          # the pretend window: 4,000 tokens
settings = CompactionSettings(reserve_tokens=1200, keep_recent_tokens=400)
sm = SessionManager.create(str(work / "repo"), work / "sessions")
agent = AgentSession(sm, client=model, tools=demo_tools(work / "repo"), settings=settings)
events = []
agent.subscribe(lambda e: events.append(e["type"]))
print("session file (not on disk yet):", pathlib.Path(sm.session_file).name, "exists:", pathlib.Path(sm.session_file).exists())""")

md("""## Step 1: the first message creates the file

The offline model is scripted to call the `read` tool, then answer. The file appears when the first
user message is appended (pi's lazy first write); every later entry is one appended line.""")

code("""model.push(ToolCallReply("read", {"path": "auth.ts"}), "The login flow calls checkPassword in auth.ts.")
await agent.prompt("Check the auth implementation")
print("file exists:", pathlib.Path(sm.session_file).exists())
print(four_states(agent))""")

md("""## Step 2: restart, and the leaf comes back from the file

The leaf is never written; on load it is the last line of the file. The reopened session gets a live
widget, `SessionWidget(agent)`: it is bound to this agent, so everything the agent appends shows up in
it while the cells below run. Its gauge is drawn against the agent's model window (the pretend 4,000
tokens), with the threshold at window − reserve.""")

code("""sm = SessionManager.open(sm.session_file)
agent = AgentSession(sm, client=model, tools=agent.agent.tools, settings=settings)
agent.subscribe(lambda e: events.append(e["type"]))
print("leaf after reopening:", sm.leaf_id, "=", sm.get_leaf_entry()["message"]["role"])
w = SessionWidget(agent, height=380)
display(w)
model.push("JWT is in place: tokens are signed and verified in auth.ts.")
await agent.prompt("Switch it to JWT")
print(four_states(agent))""")

md("""## Step 3: go back and take another route, with a branch summary

Navigating to the user message "Switch it to JWT" moves the leaf to its **parent** and gives its text
back for re-editing. With `summarize=True` the abandoned JWT answer is summarised into a
`branch_summary` entry that hangs at the continuation point, so the new route knows what happened.""")

code("""jwt_question = [e for e in sm.get_branch() if e["type"] == "message" and e["message"]["role"] == "user"][-1]
result = await agent.navigate_tree(jwt_question["id"], summarize=True)
print("text back in the editor:", repr(result.editor_text))
print("branch summary hangs under:", result.summary_entry["parentId"], "| fromId (the old leaf):", result.summary_entry["fromId"])
model.push("Sessions now use an HttpOnly cookie.")
await agent.prompt("Switch it to a session cookie")
print(four_states(agent))""")

md("""## Step 4: the context fills up and is compacted

Each turn adds about 200 tokens. When the measured context crosses *window − reserve*
(4,000 − 1,200 = 2,800 tokens) a threshold compaction runs after the turn: everything before the
cut point is summarised into a `compaction` entry, and the newest ~400 tokens stay verbatim.
The widget is shown again at the top of the cell (a second view of the same widget): watch its gauge
climb towards the threshold turn by turn, and drop when the compaction lands.""")

code("""display(w)
filler = " Please keep the existing tests green and mention any file you touch." * 4
turn = 0
while not any(e["type"] == "compaction" for e in sm.get_branch()):
    turn += 1
    model.push(f"Step {turn} done." + filler)
    await agent.prompt(f"Next step {turn}." + filler)
    usage = agent.get_context_usage()
    print(f"turn {turn}: context tokens = {usage.tokens if usage.tokens is not None else 'unknown (a compaction just ran)'}")
compaction = sm.get_branch()[-1]
print("compaction after", turn, "turns; tokensBefore =", compaction["tokensBefore"], "; first kept entry:", compaction["firstKeptEntryId"])
print("context usage right after compaction:", agent.get_context_usage().tokens, "(unknown until the next response)")
print(four_states(agent))""")

md("""**Why is the context usage unknown (`None`) right after the compaction?** pi measures the context
from the usage the provider reports with each reply: the input tokens of the request that reply
answered. The last reply read the old, long context; the compacted context (summary + kept tail) has
not been sent to the model yet, so no reply has measured it. pi therefore reports the usage as
unknown until the next model reply, rather than showing a stale figure; `get_context_usage().tokens`
is `None`, and the widget's gauge says `? / 4k` with the chars/4 estimate beside it. The value is known
again after the next reply, printed at the start of step 5.

The old messages are still in the file (look at *file entries*), but the model now sees the
checkpoint summary first, then the kept tail. The compaction entry is physically *after* the kept
messages, yet its summary comes *first* in what the model sees.""")

code("""print(compaction["summary"][:800])""")

md("""## Step 5: a second compaction consumes the first

More turns, then a manual compaction. The previous summary is carried into the new one
(`<previous-summary>`), and the messages the first compaction kept are summarised now.""")

code("""for extra in range(2):
    model.push(f"Follow-up {extra} handled." + filler)
    await agent.prompt(f"Follow-up {extra}." + filler)
    if extra == 0:
        usage = agent.get_context_usage()
        print(f"context usage after the next reply: {usage.tokens} tokens of {usage.context_window} (known again)")
second = await agent.compact("keep the decisions about cookies")
compactions = [e for e in sm.get_branch() if e["type"] == "compaction"]
print("compactions on the branch:", len(compactions))
print("summaries the model sees:", sum(m["role"] == "compactionSummary" for m in agent.messages))
print(four_states(agent))""")

md("""## Step 6: an overflow is recovered once

The next request fails with a provider overflow error (`prompt is too long`). pi keeps the failed
answer in the file for the audit trail, hides it from the model with a `context_edit`, compacts,
and continues the run **once**. The widget shows the failed answer struck through (omitted by the
`context_edit`) and the third compaction.""")

code("""display(w)
for extra in range(3):
    model.push(f"Cookie detail {extra} noted." + filler)
    await agent.prompt(f"Cookie detail {extra}." + filler)
model.push(FaultReply("overflow"), "Recovered: the cookie flow is documented.")
before = len(sm.entries)
await agent.prompt("Document the cookie flow")
for entry in sm.entries[before:]:
    role = entry.get("message", {}).get("role", "")
    print(f"{entry['type']:<14} {role:<10} {entry.get('message', {}).get('stopReason', '')}")
print(f"the widget: {len(w.compactions)} compactions on the branch; gauge {w.gauge['tokens']} of {w.gauge['context_window']} tokens")
print(four_states(agent))""")

md("""## Watch it again: step through time

The cells above ran in a few seconds, too fast to watch the gauge. `pi_lab.teach.stepper` replays the
session file line by line in one widget: press **Play**, use the step buttons, or focus the slider and
press ← and →. The tree grows, the leaf moves, and the gauge climbs turn by turn and drops at each
compaction. It starts on the line just before the first compaction: the gauge at its highest.""")

code("""from pi_lab.teach import stepper

lines = sm.file_entries
first_compaction = next(k for k, e in enumerate(lines, 1) if e.get("type") == "compaction")
replay = stepper(w, start=first_compaction - 1)      # w's window and compaction settings are kept
before = replay.widget.gauge["tokens"]
replay.go(first_compaction)
after = replay.widget.gauge
replay.go(first_compaction - 1)                       # leave it just before: press step ▶ to see the drop
print(f"line {first_compaction - 1}: {before} tokens; line {first_compaction} (the compaction): "
      f"{after['tokens'] if after['tokens'] is not None else 'unknown until the next reply'} "
      f"(estimate {after.get('estimated_tokens')})")
replay""")

md("""## Step 7: fork and clone start new files

`fork` copies the path *before* a user message into a new session file whose header names the old
one as `parentSession`; `clone` copies the path up to an entry. The agent that forks moves to the new
file (a widget bound to it would follow). Here the fork gets an agent of its own on the same file, so
the widget above keeps showing the session you watched.""")

code("""old_file = sm.session_file
fork_agent = AgentSession(SessionManager.open(old_file), client=model, tools=agent.agent.tools, settings=settings)
fork_agent.subscribe(lambda e: events.append(e["type"]))
first_user = next(e for e in sm.get_branch() if e["type"] == "message" and e["message"]["role"] == "user")
forked = await fork_agent.fork(first_user["id"])
fork_sm = fork_agent.session_manager
print("selected text:", repr(forked.selected_text))
print("new file:", fork_sm.session_file != old_file, "| parentSession:", fork_sm.header.get("parentSession") == old_file)
print("entries in the fork:", len(fork_sm.entries))
print("events seen so far:", sorted(set(events)))""")

nb = nbf.v4.new_notebook()
nb["cells"] = cells
nb["metadata"] = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
nbf.write(nb, "examples/agent-tour.ipynb")
