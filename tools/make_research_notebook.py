"""Writes examples/research.ipynb (run from the repository root). Edit here, then regenerate:
``.venv/bin/python tools/make_research_notebook.py``.

The notebook annotates a session, finds entries without a model, asks one question of a corpus
with a model, and looks at the findings. Its first code cell holds the parameters (tagged
``parameters``): without ``JUDGE_BASE_URL`` it only estimates what asking would cost (the offline
model cannot judge, and pi_lab refuses to pretend it can); the test runs it against a loopback
OpenAI-compatible server with scripted answers. Cell ids are fixed so that regenerating changes
only what was edited.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _notebook import Notebook  # noqa: E402  (the generators' one cell writer)

_nb = Notebook("research")
md, code = _nb.md, _nb.code


md("""# Research on sessions: notes, and one question asked of many

Reading an agent's sessions, a researcher does two things: mark what they find, at the entry
where it happens ("the agent claimed the tests pass without running them", here), and ask the same
question of hundreds of sessions ("in which calls did the agent edit a file it had not read?").
pi_lab keeps the notes **beside** the session files (never inside them), and asks a model the
question of each session, branch or model call, reading what the model saw there; every finding
cites the entries it rests on, and becomes a note you can open in the viewer.""")

code("""# Parameters (papermill: -p JUDGE_BASE_URL http://localhost:8000/v1 -p JUDGE_MODEL qwen2.5-7b).
# SESSIONS: a folder of session files (pi, Claude Code or Codex), or None for a copy of the session
# shipped with pi_lab. JUDGE_BASE_URL: an OpenAI-compatible server (vLLM, llama.cpp's server,
# Ollama, OpenAI itself with OPENAI_API_KEY set); None only estimates the cost of asking.
import os
SESSIONS = None
JUDGE_BASE_URL = os.environ.get("PI_LAB_JUDGE_URL")
JUDGE_MODEL = os.environ.get("PI_LAB_JUDGE_MODEL", "judge")
JUDGE_WINDOW = 32_000""", tags=["parameters"])

code('''import shutil, tempfile
from pathlib import Path

import pi_lab
from pi_lab.corpus import Corpus
from pi_lab.data import recorded_session

WORK = Path(tempfile.mkdtemp(prefix="pi-research-"))
if SESSIONS is None:
    # a copy: nothing here writes a session, but a copy keeps the shipped file out of reach
    (WORK / "sessions").mkdir()
    shutil.copy(recorded_session().path, WORK / "sessions" / "2026-03-02T14-00-00-000Z_tiny-auth.jsonl")
    SESSIONS = WORK / "sessions"
c = Corpus.scan([SESSIONS], cache=False)
c.notes_path = WORK / "notes.jsonl"     # default: pi-lab-notes.jsonl beside the notebook
c''')

md("""## 1. A note on an entry

A note is (session, entry, tag, text, author, time); it can also cover a range of entries on one
path or a whole branch. The notes file is plain JSON Lines, one operation a line, safe with two
writers and a killed kernel, so it can be committed with the notebook and read without pi_lab.""")

code('''session_file = c.sessions.column("file")[0].as_py()
s = pi_lab.open_session(session_file)
jwt = next(e for e in s.get_entries()
           if e["type"] == "message" and e["message"]["role"] == "user" and "JWT" in str(e["message"]["content"]))
note = c.notes.add(s, jwt["id"], "the user changes course here: JWT is tried, then abandoned", tag="change-of-plan")
print(note.tag, "on", note.entry_id, "-", note.text)
print(open(c.notes_path).read().splitlines()[0][:120], "...")''')

md("""## 2. Cheap questions need no model

`c.find` looks for a pattern in the text, the tool arguments or the tool results of every entry
and can write each match as a note.""")

code('''hits = c.find("auth.py", in_="tool_args", note="touches-auth")
hits.select(["entry_id", "role", "snippet"]).to_pandas() if hits.num_rows else "no match"''')

md("""## 3. One question, every model call

`c.ask` builds, for each unit, the transcript a judge reads (for a call: what the model saw at
that call, then its answer), asks for one JSON object with the answer, an explanation and the
cited entry ids, checks the citations, and writes the findings as notes. First it says how many
requests, tokens and dollars it would take; `max_cost` stops before a limit. Answers are cached, so
running the cell again costs nothing.

pi_lab's offline model cannot judge, and pi_lab refuses to pretend: point `JUDGE_BASE_URL` at a real
model to ask.""")

code('''from pi_lab.llm import OpenAIClient
from pi_lab.llm.model import Model

QUESTION = "Did the model edit a file in this call without having read it first?"
judge = Model(provider="judge", id=JUDGE_MODEL, api="openai-completions", context_window=JUDGE_WINDOW,
              max_tokens=1_000, base_url=JUDGE_BASE_URL)
client = OpenAIClient(base_url=JUDGE_BASE_URL)
estimate = c.ask(QUESTION, client=client, model=judge, unit="call", where="stop_reason = 'toolUse'", dry_run=True)
print(estimate)''')

code('''if JUDGE_BASE_URL:
    findings = c.ask(QUESTION, client=client, model=judge, unit="call", where="stop_reason = 'toolUse'",
                     concurrency=2, progress=False)
    shown = findings.select(["unit_id", "answer", "explanation", "cited_entry_ids", "invalid_citations", "malformed"])
else:
    findings, shown = None, "set JUDGE_BASE_URL to ask (see the parameters cell)"
shown.to_pandas() if findings is not None else shown''')

md("""## 4. The findings, with everything else

`c.annotations` holds the person's notes and the model's findings (`source` names the model and
the question); in SQL it joins the other tables.""")

code('''c.sql("""
    select a.tag, a.source, a.entry_id, m.role, m.tool_name
    from annotations a left join messages m using (session_id, entry_id)
    order by a.created
""").to_pandas()''')

md("""`c.open(session, entry)` opens the session in the viewer with that entry selected, its notes and
the model's findings marked in the tree (✎ a note, ◆ a finding) and under the timeline. In the
viewer, **shift+N** adds a note on the selected row and **alt+N** goes to the next noted one; the
notes filter beside the search keeps the noted rows, and the Notes tab lists them all. Notes go to
the corpus's notes file, never into the session.""")

code('''first = c.annotations.to_pylist()[0]
c.open(first["session_id"], first["entry_id"])''')

_nb.write("examples/research.ipynb")
