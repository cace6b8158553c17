"""Writes examples/corpus.ipynb (run from the repository root). Edit here, then regenerate:
``.venv/bin/python tools/make_corpus_notebook.py``.

The notebook's first code cell holds its parameters (tagged ``parameters``, the cell papermill
overrides): ``SESSIONS`` points it at a folder of sessions without editing code. The plots are
Altair (Vega-Lite): JupyterLab draws them, interactive and offline, from the kernel's output, and
each output also carries a PNG (vl-convert) for nbconvert's HTML, static sites and any viewer
without Vega. Cell ids are fixed so that regenerating changes only what was edited.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _notebook import Notebook  # noqa: E402  (the generators' one cell writer)

_nb = Notebook("cell")
md, code = _nb.md, _nb.code

md("""# A corpus of pi sessions

One session at a time answers "what did the model see here?". Many sessions at once answer the
researcher's questions: how often compaction fires, how full the window was at each call, which
tools fill it, what a project cost. `pi_lab.corpus` reads a folder of session files into Arrow
tables (one row per session, entry, message, model call, tool call, compaction, branch summary),
runs SQL on them with DuckDB and writes Parquet. It never writes a session file.

The numbers follow pi's own rules: `model_calls.context_tokens_est` is pi's
`estimate_context_tokens` of pi_lab's projection at the call's parent, `context_tokens_projected`
the estimate pi's footer gauge shows (usage measured before the last compaction or edit is not
trusted), and usage counts every branch once, forks included (see the counting rules in
`help(pi_lab.corpus)`).""")

code("""# Parameters (papermill: -p SESSIONS ~/.pi/agent/sessions). SESSIONS is a folder of pi sessions, a
# session file, or a list of them; None reads pi's real fixtures beside a checkout of pi_lab
# (copied first), or else a small folder generated here. Nothing in SESSIONS is ever written.
SESSIONS = None""", tags=["parameters"])

code('''import shutil, tempfile
from pathlib import Path

import altair as alt
from altair.vegalite.v5.display import mimetype_renderer, png_renderer

from pi_lab.corpus import Corpus

WORK = Path(tempfile.mkdtemp(prefix="pi-corpus-"))


def find_fixtures():
    """pi's real session files, kept in ../shared beside a checkout of pi_lab."""
    for folder in (Path.cwd(), *Path.cwd().parents):
        candidate = folder / "shared" / "fixtures" / "pi-sessions"
        if candidate.is_dir() and any(candidate.glob("*.jsonl")):
            return candidate
    return None


def vega_lite_and_png(spec, **metadata):
    """Each chart as Vega-Lite (drawn by JupyterLab, offline) and as a PNG beside it (drawn by
    nbconvert's HTML, static sites and viewers without Vega)."""
    data, meta = mimetype_renderer(spec, **metadata)
    data.update(png_renderer(spec, scale_factor=2)[0])
    return data, meta


alt.renderers.register("lab_and_static", vega_lite_and_png)
alt.renderers.enable("lab_and_static")
alt.data_transformers.disable_max_rows()''')

md("""## The corpus

Set `SESSIONS` in the parameters cell to read your own sessions (pi keeps them in
`~/.pi/agent/sessions`). Left at `None`: with a checkout of pi_lab that has `../shared` beside it,
the corpus is pi's **real** session files (copied to a temporary folder first); anywhere else (a
pip install) the notebook **generates** a small folder with pi_lab's own session engine: a few
projects over several days, two models, tool calls, compactions, a branch summary and a fork
whose header names its parent. The next cell says which one you are looking at.""")

code('''def build_generated(folder):
    """Sessions written by pi_lab's SessionManager with a deterministic clock and ids."""
    import itertools
    from datetime import datetime, timedelta, timezone
    from pi_lab.session import SessionManager

    counter = itertools.count(1)
    ids = lambda: f"{next(counter):08x}-0000-4000-8000-000000000000"
    now = [datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)]
    def clock():
        now[0] += timedelta(seconds=40)
        return now[0]

    def usage(context, out, price_in, price_out):
        cost_in, cost_out = context * price_in / 1e6, out * price_out / 1e6
        return {"input": context, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": context + out,
                "cost": {"input": cost_in, "output": cost_out, "cacheRead": 0, "cacheWrite": 0, "total": cost_in + cost_out}}

    def turns(sm, n, model, provider, context):
        prices = (3, 15) if provider == "anthropic" else (1.25, 10)
        for t in range(n):
            user = sm.append_message({"role": "user", "content": f"step {t}: look at part {t % 5}", "timestamp": 0})
            tool = ("read", "bash", "edit")[t % 3]
            call = f"call-{next(counter)}"
            context += 2500
            sm.append_message({"role": "assistant", "provider": provider, "model": model, "api": "x",
                               "content": [{"type": "toolCall", "id": call, "name": tool, "arguments": {"path": f"src/m{t}.py"}}],
                               "usage": usage(context, 60, *prices), "stopReason": "toolUse", "timestamp": 0})
            output = "x" * (400 * (1 + t % 4) if tool == "read" else 120 if tool == "bash" else 40)
            sm.append_message({"role": "toolResult", "toolCallId": call, "toolName": tool,
                               "content": [{"type": "text", "text": output}], "isError": False, "timestamp": 0})
            context += len(output) // 4 + 100
            sm.append_message({"role": "assistant", "provider": provider, "model": model, "api": "x",
                               "content": [{"type": "text", "text": f"done with step {t}"}],
                               "usage": usage(context, 80, *prices), "stopReason": "stop", "timestamp": 0})
            if t % 7 == 6:  # a compaction keeps the last turn
                sm.append_compaction(f"Summary of steps up to {t}.", user, context)
                context = 3000
        return context

    paths = []
    for day, (project, model, provider) in enumerate([
        ("/home/dev/pi-lab", "claude-sonnet-4-5", "anthropic"),
        ("/home/dev/pi-lab", "gpt-5", "openai"),
        ("/home/dev/tree-viewer", "claude-sonnet-4-5", "anthropic"),
        ("/home/dev/tree-viewer", "gpt-5", "openai"),
    ]):
        now[0] = datetime(2026, 3, 2 + day, 9, 0, tzinfo=timezone.utc)
        sm = SessionManager.create(project, folder / project.strip("/").replace("/", "-"), uuid_factory=ids, clock=clock)
        turns(sm, 10 + 4 * day, model, provider, 4000)
        if day == 0:  # go back and summarise the abandoned branch, then fork the session
            target = [e for e in sm.get_entries() if e.get("type") == "message" and e["message"]["role"] == "user"][3]
            sm.branch_with_summary(target["id"], "Tried the other approach; it failed on part 3.")
            turns(sm, 3, model, provider, 9000)
            paths.append(Path(sm.session_file))
            fork_point = [e for e in sm.get_entries() if e.get("type") == "message"][12]["id"]
            sm.create_branched_session(fork_point)
            turns(sm, 4, model, provider, 12000)
        paths.append(Path(sm.session_file))
    return paths


fixtures = find_fixtures()
if SESSIONS is not None:
    folder = [Path(p).expanduser() for p in ([SESSIONS] if isinstance(SESSIONS, (str, Path)) else SESSIONS)]
    SOURCE = "your sessions: " + ", ".join(map(str, folder))
elif fixtures is not None:
    folder = WORK / "real-fixtures"
    folder.mkdir()
    for source in sorted(fixtures.glob("*.jsonl")):
        shutil.copyfile(source, folder / source.name)
    SOURCE = "real pi session files"
else:
    folder = WORK / "generated"
    build_generated(folder)
    SOURCE = "a generated folder (no ../shared here)"

c = Corpus.scan(folder, cache=WORK / "cache")
print(f"Corpus: {SOURCE} — {c.sessions.num_rows} sessions, {c.entries.num_rows} entries, "
      f"{c.model_calls.num_rows} model calls, errors: {c.errors}")''')

md("""## The tables

Seven pyarrow tables; ids join them (`session_id`, `entry_id`), and every per-entry table says
whether a row is a fork's copy (`copied`, `copied_from`). A second `Corpus.scan` of the same
folder comes from the cache (keyed by path, size, mtime and inode):""")

code("""again = Corpus.scan(folder, cache=WORK / "cache")
print(again.stats)
for name, table in c.tables.items():
    print(f"{name:17} {table.num_rows:6} rows  {', '.join(table.column_names[:9])}, ...")""")

code('''c.sql("""select session_id, entries, branch_points, leaves, max_depth, compactions, models, round(cost, 4) as cost
         from sessions order by entries desc""").to_pandas()''')

md("""## Three questions

**1. How full was the window when compaction fired, and how much did it free?**""")

code('''c.sql("""
select c.session_id, c.trigger, c.tokens_before, c.tokens_after, c.kept_entries,
       round(1 - c.tokens_after / nullif(c.tokens_before, 0), 3) as freed
from compactions c order by c.session_id, c.timestamp
""").to_pandas()''')

md("""**2. Which tools put the most bytes into the context, and how often do they fail?**""")

code('''c.sql("""
select tool_name, count(*) as calls, sum(result_bytes) as result_bytes,
       round(avg(result_bytes)) as avg_bytes, sum(case when is_error then 1 else 0 end) as errors
from tool_calls where not copied group by 1 order by result_bytes desc nulls last
""").to_pandas()''')

md("""**3. What did each model cost per day, counting every branch once?** (`usage()` leaves out the
calls a fork copied from its parent; `copied` shows them.)""")

code("""print(c.sql("select count(*) as copied_calls from model_calls where copied").to_pylist())
c.usage(by="model").to_pandas()""")

md("""## Plots

**Context fill at each call** of the sessions with the most calls: pi's gauge estimate of what
the model saw (pi_lab's projection at the call's parent), the model's window from
`llm.catalog` (dashed; a model the catalog does not know has none, and the title says so), and
each compaction (a red rule). Each session has its own scale; hover a point for its numbers.""")

code("""busiest = [r["session_id"] for r in c.sql(
    "select session_id from model_calls where on_active_path group by 1 order by count(*) desc limit 3").to_pylist()]
charts = []
for sid in busiest:
    calls = c.sql(f\"\"\"select row_number() over (order by timestamp) as call, timestamp, model, context_tokens_projected as tokens,
                             context_window as window, compaction_id
                      from model_calls where session_id = '{sid}' and on_active_path order by timestamp\"\"\").to_pandas()
    compacted = calls[calls["compaction_id"].ne(calls["compaction_id"].shift()) & calls["compaction_id"].notna()]
    windows = sorted({int(w) for w in calls["window"].dropna()})
    models = ", ".join(sorted(calls["model"].dropna().unique())) or "?"
    title = (f"{sid[:8]} · {models} · window " + (" / ".join(f"{w:,}" for w in windows) if windows else "unknown")
             + f" · peak {calls['tokens'].max():,.0f} tokens")
    base = alt.Chart(calls).encode(x=alt.X("call:Q", title="model call on the active path",
                                           axis=alt.Axis(format="d", tickMinStep=1)))
    context = base.mark_line(point=len(calls) <= 60).encode(
        y=alt.Y("tokens:Q", title="tokens"),
        color=alt.Color("series:N", scale=alt.Scale(domain=["context (gauge estimate)", "window", "compaction"],
                                                    range=["#1f77b4", "#7f7f7f", "#d62728"]), title=None),
        tooltip=["call", "timestamp", "model", alt.Tooltip("tokens:Q", format=",.0f"), alt.Tooltip("window:Q", format=",")],
    ).transform_calculate(series="'context (gauge estimate)'")
    window = base.mark_line(strokeDash=[6, 4]).encode(y="window:Q", color="series:N").transform_calculate(series="'window'")
    rules = alt.Chart(compacted).mark_rule(strokeDash=[3, 3]).encode(x="call:Q", color="series:N").transform_calculate(
        series="'compaction'")
    charts.append(alt.layer(context, window, rules).properties(width=640, height=170, title=title))
alt.vconcat(*charts).configure_legend(orient="bottom")""")

md("""**Tokens per day by model** on a time axis, every branch counted once (forks' copies left
out): input, output, cache reads and cache writes each on their own scale, so that cache reads,
often the largest by far, do not flatten the rest.""")

code("""daily = c.sql(\"\"\"
select date_trunc('day', timestamp) as day, coalesce(model, '?') as model,
       sum(input) as input, sum(output) as output, sum(cache_read) as "cache read", sum(cache_write) as "cache write"
from model_calls where not copied and timestamp is not null group by 1, 2 order by 1\"\"\").to_pandas()
span = (daily["day"].max() - daily["day"].min()).days + 1 if len(daily) else 1
bar = max(3, min(36, 0.7 * 640 / span))  # a day's width on the axis, but never a hairline
alt.Chart(daily).transform_fold(["input", "output", "cache read", "cache write"], as_=["kind", "tokens"]).mark_bar(size=bar).encode(
    x=alt.X("yearmonthdate(day):T", title=None),
    y=alt.Y("sum(tokens):Q", title=None),
    color=alt.Color("model:N", legend=alt.Legend(orient="bottom")),
    row=alt.Row("kind:N", title=None, sort=["input", "output", "cache read", "cache write"],
                header=alt.Header(labelAngle=0, labelAlign="left", labelFontWeight="bold")),
    tooltip=[alt.Tooltip("yearmonthdate(day):T", title="day"), "model:N", "kind:N", alt.Tooltip("sum(tokens):Q", format=",")],
).properties(width=640, height=90, title="Tokens per day by model").resolve_scale(y="independent")""")

md("""**Tool result bytes by tool** (what each tool put into the window), with the number of calls:""")

code("""tools = c.sql(\"\"\"select tool_name, sum(result_bytes)::bigint as bytes, count(*) as calls from tool_calls
                 where result_bytes is not null and not copied group by 1 order by 2 desc\"\"\").to_pandas()
bars = alt.Chart(tools).mark_bar(color="#2ca02c").encode(
    x=alt.X("bytes:Q", title="result bytes"), y=alt.Y("tool_name:N", sort=list(tools["tool_name"]), title=None),
    tooltip=["tool_name", alt.Tooltip("bytes:Q", format=","), "calls"])
labels = bars.mark_text(align="left", dx=3).encode(text=alt.Text("calls:Q", format="d"))
(bars + labels).properties(width=560, height=alt.Step(22), title="Tool result bytes by tool (label: calls)")""")

md("""## Keep the tables

`c.to_parquet(folder)` writes one Parquet file per table, for pandas, polars, DuckDB or Spark.
From a shell: `pi-lab corpus DIR --out out/` and `pi-lab usage DIR --by day`. For a cluster,
`pi_lab.corpus.ray.read_sessions(paths)` gives the same tables as Ray Data datasets.""")

code("""written = c.to_parquet(WORK / "parquet")
print([p.name for p in written])
shutil.rmtree(WORK)""")

_nb.write("examples/corpus.ipynb")
