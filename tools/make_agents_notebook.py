"""Writes examples/agents.ipynb (run from the repository root). Edit here, then regenerate:
``.venv/bin/python tools/make_agents_notebook.py``.

The notebook puts pi, Claude Code and Codex sessions side by side: one corpus, usage by agent,
the context size at each model call, compactions, tools, what the model saw at the last call, and
a widget per agent. Its first code cell holds the parameters (tagged ``parameters``): ``FOLDERS``
points it at real session folders; left at ``None`` it writes small sample sessions of each format
into a temporary folder (pi's from ``pi_lab.data``, Claude Code's and Codex's from the generators
in ``tools/``). Plots are Altair with a PNG beside each, as in examples/corpus.ipynb. Cell ids are
fixed so that regenerating changes only what was edited.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _notebook import Notebook  # noqa: E402  (the generators' one cell writer)

_nb = Notebook("agents")
md, code = _nb.md, _nb.code

md("""# Three agents side by side: pi, Claude Code, Codex

pi_lab reads the sessions of three coding agents: pi's session trees, Claude Code's project
transcripts and Codex CLI's rollout files. Every view and every table treats them alike: one
corpus, an `agent` column on every table, one usage report with nothing counted twice (a Codex
fork starts with a copy of its parent; the copy is counted once). Nothing here writes a session
file: the corpus and `pi_lab.open_session` only read, and another agent's session shows
read-only in the widget.""")

code("""# Parameters (papermill: -p FOLDERS '["~/.pi/agent/sessions", "~/.claude/projects", "~/.codex/sessions"]').
# FOLDERS: a list of folders or session files of any of the three agents; None writes small sample
# sessions of each format into a temporary folder. Nothing in FOLDERS is ever written.
FOLDERS = None""", tags=["parameters"])

code('''import shutil, sys, tempfile
from pathlib import Path

import altair as alt
from altair.vegalite.v5.display import mimetype_renderer, png_renderer

import pi_lab
from pi_lab.compaction.tokens import estimate_tokens
from pi_lab.corpus import Corpus
from pi_lab.data import recorded_session

WORK = Path(tempfile.mkdtemp(prefix="pi-agents-"))
AGENTS = ["pi", "claude-code", "codex"]          # one order and one colour per agent in every plot
COLORS = alt.Scale(domain=AGENTS, range=["#1f77b4", "#d97706", "#10a37f"])


def vega_lite_and_png(spec, **metadata):
    """Each chart as Vega-Lite (drawn by JupyterLab, offline) and as a PNG beside it (drawn by
    nbconvert's HTML, static sites and viewers without Vega)."""
    data, meta = mimetype_renderer(spec, **metadata)
    data.update(png_renderer(spec, scale_factor=2)[0])
    return data, meta


alt.renderers.register("lab_and_static", vega_lite_and_png)
alt.renderers.enable("lab_and_static")
alt.data_transformers.disable_max_rows();''')

md("""## The sessions

Set `FOLDERS` to read your own sessions (pi: `~/.pi/agent/sessions`, Claude Code:
`~/.claude/projects`, Codex: `~/.codex/sessions`; `Corpus.scan()` with no argument reads all
three). Left at `None`, the notebook writes one small session of each format: pi's is the
session shipped with pi_lab (recorded by pi_lab's own `AgentSession` on the offline model: it
lists, reads and edits a tiny project, and compacts twice), Claude Code's and Codex's come from
the generators in the repository's `tools/` folder (a Claude Code session with sub-agents, a
rewind and compactions; a Codex rollout with a compaction, a model change and a fork of it).
These are samples of each format, not three runs of one real task: point `FOLDERS` at your own
sessions of one task for that.""")

code('''def sample_sessions(folder):
    """One small session of each agent's format under ``folder``; returns the folders to scan."""
    pi = folder / "pi"
    pi.mkdir(parents=True)
    # a copy: nothing here writes a session, but a copy keeps the shipped file out of reach
    shutil.copyfile(recorded_session().path, pi / "2026-03-02T14-00-00-000Z_tiny-auth.jsonl")
    # The Claude Code and Codex generators live in tools/ of a pi_lab checkout, not in the package.
    tools = next((p / "tools" for p in (Path.cwd(), *Path.cwd().parents)
                  if (p / "tools" / "generate_codex_sessions.py").is_file()), None)
    if tools is None:
        print("No session generators here (they are in tools/ of a checkout of pi_lab; run this notebook "
              "from its examples/ folder): showing pi's sample session only. Set FOLDERS to read "
              "Claude Code's and Codex's sessions.")
        return [pi]
    sys.path.insert(0, str(tools))
    from generate_claude_sessions import generate_session as claude_session
    from generate_codex_sessions import generate_session as codex_session
    claude_session(folder / "claude" / "projects" / "-home-user-project", seed=1, turns=6)
    codex_session(folder / "codex", seed=2, turns=6, fork=True)
    return [pi, folder / "claude", folder / "codex"]


if FOLDERS is None:
    folders = sample_sessions(WORK / "samples")
    SOURCE = "sample sessions written here"
else:
    folders = [Path(p).expanduser() for p in ([FOLDERS] if isinstance(FOLDERS, (str, Path)) else FOLDERS)]
    SOURCE = "your sessions"

c = Corpus.scan(folders, cache=False)
print(f"{SOURCE}: {c.sessions.num_rows} sessions, {c.model_calls.num_rows} model calls, errors: {c.errors}")
c.sql("""select agent, count(*) as sessions, sum(entries) as entries, sum(model_calls) as model_calls,
                sum(compactions) as compactions, sum(copied_entries) as copied_entries
         from sessions group by 1 order by 1""").to_pandas()''')

md("""## Usage by agent

`c.usage(by="agent")`: every model call once, a fork's copy of its parent's calls left out.
Input, output and cache tokens are as each agent recorded them (Claude Code and Codex send most
of the context as cache reads).""")

code('''usage = c.usage(by="agent").to_pandas()
usage''')

md("""## Context size at each model call

For each agent, its session with the most model calls of its own: the tokens the model was sent
at each call on the session's path (the usage the agent recorded: input plus cache reads and
writes; pi's estimate where a call recorded none), in the order of the file. A red rule marks the
first call after a compaction. Each agent has its own scale: their sizes differ by orders of
magnitude. With the sample sessions the shapes say nothing about the agents themselves: the Claude
Code and Codex generators draw their usage numbers at random (pi's are the offline model's).""")

code('''busiest = c.sql("""
    select agent, session_id, file from (
      select m.agent, m.session_id, s.file, count(*) as own_calls,
             row_number() over (partition by m.agent order by count(*) desc, m.session_id) as rank
      from model_calls m join sessions s using (session_id)
      where not m.copied and m.on_active_path group by 1, 2, 3)
    where rank = 1 order by agent""").to_pandas()

calls = c.sql("""
    select m.agent, m.session_id, m.entry_id, m.parent_id, m.model, e.line,
           coalesce(m.input_tokens_measured, m.context_tokens_est) as tokens, m.compaction_id, m.context_window
    from model_calls m join entries e on e.session_id = m.session_id and e.entry_id = m.entry_id
    where m.on_active_path order by m.agent, e.line""").to_pandas()
calls = calls[calls["session_id"].isin(busiest["session_id"])].copy()
calls["call"] = calls.groupby("session_id").cumcount() + 1
calls["after_compaction"] = calls["compaction_id"].notna() & calls["compaction_id"].ne(
    calls.groupby("session_id")["compaction_id"].shift())

charts = []
for agent in [a for a in AGENTS if a in set(calls["agent"])]:
    rows = calls[calls["agent"] == agent]
    windows = sorted({int(w) for w in rows["context_window"].dropna()})
    title = (f"{agent} · {len(rows)} calls · " + ", ".join(sorted(rows["model"].dropna().unique()))
             + (" · window " + " / ".join(f"{w:,}" for w in windows) if windows else ""))
    base = alt.Chart(rows).encode(x=alt.X("call:Q", title="model call", axis=alt.Axis(format="d", tickMinStep=1)))
    color = COLORS.range[AGENTS.index(agent)]
    line = base.mark_line(point=alt.OverlayMarkDef(color=color), color=color).encode(
        y=alt.Y("tokens:Q", title="tokens sent"),
        tooltip=["call", "model", alt.Tooltip("tokens:Q", format=",.0f")])
    rules = alt.Chart(rows[rows["after_compaction"]]).mark_rule(color="#d62728", strokeDash=[4, 3]).encode(x="call:Q")
    charts.append(alt.layer(line, rules).properties(width=620, height=140, title=title))
alt.vconcat(*charts).properties(title="Tokens per model call (red: first call after a compaction)")''')

md("""## Compactions and tools

**Compactions per agent** (a fork's copies left out), beside the number of sessions read:""")

code('''compactions = c.sql("""
    select s.agent, count(distinct s.session_id) as sessions,
           count(k.entry_id) filter (where not k.copied) as compactions
    from sessions s left join compactions k using (session_id) group by 1""").to_pandas()
bars = alt.Chart(compactions).mark_bar().encode(
    y=alt.Y("agent:N", sort=AGENTS, title=None), x=alt.X("compactions:Q", title="compactions", axis=alt.Axis(format="d", tickMinStep=1)),
    color=alt.Color("agent:N", scale=COLORS, legend=None), tooltip=["agent", "sessions", "compactions"])
labels = bars.mark_text(align="left", dx=4).encode(
    text=alt.Text("label:N")).transform_calculate(label="datum.compactions + ' in ' + datum.sessions + ' session(s)'")
(bars + labels).properties(width=520, height=alt.Step(30), title="Compactions per agent")''')

md("""**Tools used per agent**: each agent names its tools its own way (pi's `read`, Claude Code's
`Read`, Codex's `shell` and `apply_patch`). Calls a fork copied from its parent are left out.""")

code('''tools = c.sql("""select agent, tool_name, count(*) as calls from tool_calls where not copied
                 group by 1, 2 order by 1, 3 desc""").to_pandas()
alt.Chart(tools).mark_bar().encode(
    y=alt.Y("tool_name:N", sort="-x", title=None), x=alt.X("calls:Q", axis=alt.Axis(format="d", tickMinStep=1)),
    color=alt.Color("agent:N", scale=COLORS, legend=None),
    row=alt.Row("agent:N", sort=AGENTS, title=None, header=alt.Header(labelAngle=0, labelAlign="left", labelFontWeight="bold")),
    tooltip=["agent", "tool_name", "calls"],
).properties(width=480, height=alt.Step(18), title="Tool calls per agent").resolve_scale(y="independent")''')

md("""## What the model saw at the last call

`pi_lab.open_session(file)` opens any agent's file read-only; `build_session_context(entry)` is
what the model was sent at a point: here at the parent of each session's last model call. For a
Codex rollout after a compaction that is the `replacement_history` and what followed; Claude Code
and Codex do not record their system prompt or tool schemas, so those are not in the count. The
tokens are pi's estimate (characters / 4) of each message, summed by role.""")

code('''import pandas as pd

last_context = []
for row in busiest.itertuples():
    last = calls[calls["session_id"] == row.session_id].iloc[-1]
    session = pi_lab.open_session(row.file)
    for message in session.build_session_context(last["parent_id"]).messages:
        last_context.append({"agent": session.agent, "role": message.get("role"), "tokens": estimate_tokens(message)})
last_context = pd.DataFrame(last_context)
print(last_context.groupby(["agent", "role"]).agg(messages=("tokens", "size"), tokens=("tokens", "sum")).to_string())
bars = alt.Chart(last_context).mark_bar().encode(
    y=alt.Y("agent:N", sort=AGENTS, title=None), x=alt.X("sum(tokens):Q", title="tokens (pi's estimate)"),
    color=alt.Color("role:N", legend=alt.Legend(orient="bottom", title="role")),
    order=alt.Order("role:N"),
    tooltip=["agent", "role", alt.Tooltip("count():Q", title="messages"), alt.Tooltip("sum(tokens):Q", title="tokens")],
)
totals = alt.Chart(last_context).mark_text(align="left", dx=4).encode(
    y=alt.Y("agent:N", sort=AGENTS), x="sum(tokens):Q",
    text=alt.Text("label:N")).transform_aggregate(
    tokens="sum(tokens)", messages="count()", groupby=["agent"]).transform_calculate(
    label="format(datum.tokens, ',') + ' tokens in ' + datum.messages + ' messages'")
(bars + totals).properties(width=560, height=alt.Step(34), title="Context at the last call, by role")''')

md("""## A widget per agent

`pi_lab.open(path)` shows any agent's session: the tree (a Codex rollout is one path; a Claude
Code session keeps its rewinds and sub-agents), the gauge, and "What the model sees" at the
selected entry. Claude Code's and Codex's files show read-only with the reason; pi's opens
read-only too until you allow writing in it.""")

code('''widgets = {}
for row in busiest.itertuples():
    options = {"context_window": recorded_session().context_window} if FOLDERS is None and row.agent == "pi" else {}
    widgets[row.agent] = pi_lab.open(row.file, **options)
widgets.get("pi")''')

code('''widgets.get("claude-code")''')

code('''widgets.get("codex")''')

md("""Clean up the temporary folder (the widgets above keep what they read in memory):""")

code('''shutil.rmtree(WORK)''')

_nb.write("examples/agents.ipynb")
