"""The tour's first part in marimo: the worked example and a real session, side by side.

Run it with ``marimo edit examples/tour_marimo.py`` (or ``marimo run``). The widgets are pi_lab's
own (``pi_lab.open``), shown by marimo's anywidget support (``mo.ui.anywidget``): the tree, the
gauge, the context timeline and its what-if panel work as in JupyterLab.

The worked example's JSONL is the one examples/tour.ipynb shows too (``pi_lab.data.WORKED_EXAMPLE``),
and the real session is the one the tour falls back to, ``tiny-auth.jsonl`` shipped with pi_lab (``pi_lab.data``). Every file
this app writes is a copy in a fresh temporary folder.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full")


@app.cell
def _():
    import marimo as mo

    mo.md(
        """
        # A tour of pi's session engine, in marimo

        pi keeps a conversation as an **append-only JSONL file** holding a **tree** of entries; the
        model sees one **projection** of one **path** through it. Left: the explainer's worked
        example (§14): `U1 → A1 → T1 → A2` read the auth code, the user went down a JWT path
        (`U2 → A3`), came back to `U2` with a branch summary `BS1`, took the cookie path (`U2B …`),
        and a compaction `C1` kept only `U4` onwards. Right: `tiny-auth.jsonl`, recorded by pi_lab's
        own `AgentSession` on the offline model (a branch, two compactions on a 4,000-token window).
        """
    )
    return (mo,)


@app.cell
def _(mo):
    import shutil
    import tempfile
    from pathlib import Path

    import pi_lab
    from pi_lab.data import WORKED_EXAMPLE, recorded_session

    WORK = Path(tempfile.mkdtemp(prefix="pi-lab-tour-marimo-"))

    seed_path = WORK / "seed.jsonl"
    seed_path.write_text(WORKED_EXAMPLE, encoding="utf-8")
    rec = recorded_session("tiny-auth")
    real_path = Path(shutil.copyfile(rec.path, WORK / rec.path.name))
    return WORK, pi_lab, real_path, rec, seed_path


@app.cell
def _(mo, pi_lab, real_path, rec, seed_path):
    seed_w = pi_lab.open(str(seed_path), height=520)
    # The offline model's window is not in the file: the widget is told the one it was recorded with.
    real_w = pi_lab.open(str(real_path), height=520, context_window=rec.context_window,
                         reserve_tokens=rec.reserve_tokens, keep_recent_tokens=rec.keep_recent_tokens)
    seed_view = mo.ui.anywidget(seed_w)
    real_view = mo.ui.anywidget(real_w)
    mo.hstack([seed_view, real_view], widths="equal")
    return real_w, seed_view, seed_w


@app.cell
def _(mo, seed_w):
    sm = seed_w.session_manager
    lines = [f"- **file entries**: {len(sm.file_entries)} lines, both branches",
             f"- **leaf**: `{sm.leaf_id}` (on open, the last line of the file)",
             "- **current branch**: " + " → ".join(f"`{e['id']}`" for e in sm.get_branch()),
             "- **what the model sees**: " + ", ".join(
                 f"`{m['role']}`" for m in sm.build_session_context().messages)]
    mo.md("## The four states of the worked example\n\n" + "\n".join(lines))
    return


@app.cell
def _(mo, seed_view):
    # Clicking a row in the left widget selects it; marimo re-runs this cell with its selection.
    selected = seed_view.value.get("selected_id") if isinstance(seed_view.value, dict) else None
    mo.md(f"Selected in the left widget: `{selected}`" if selected else
          "Click a row in the left widget: its id shows here.")
    return


@app.cell
def _(mo, real_w):
    replayed = __import__("pi_lab").replay(real_w.session_manager, context_window=3000, reserve_tokens=1500,
                                           keep_recent_tokens=300)
    mo.md(
        f"""
        ## What if the window had been 3,000 tokens?

        `pi_lab.replay` walks the right-hand session under other compaction settings and writes
        nothing: at 3,000 tokens (reserve 1,500, keep 300) **{len(replayed.compactions)}** compactions
        would have fired instead of {sum(e['type'] == 'compaction' for e in real_w.session_manager.get_branch())}.
        Open *What if…* in the right widget's timeline to draw it over the real sawtooth.
        """
    )
    return


if __name__ == "__main__":
    app.run()
