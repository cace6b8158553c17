"""The snapshot a notebook saves beside the widget (pi_lab/widget/snapshot.py): what it embeds,
its size limit and note, the rule that hides it beside a live viewer, and inert session text."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from export_inputs import HOSTILE, generated_session, hostile_session, write_session  # noqa: E402
from helpers import SEED_SECTION_14  # noqa: E402

from pi_lab.export.html import unpack  # noqa: E402
from pi_lab.widget import SessionWidget  # noqa: E402
from pi_lab.widget.snapshot import SNAPSHOT_LIMIT, SNAPSHOT_MIME  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "pi_lab" / "static" / "export.js"
needs_script = pytest.mark.skipif(not STATIC.exists(), reason="pi_lab/static/export.js is not built (jlpm build)")


def _part(html: str, name: str) -> str | None:
    found = re.search(rf'<script type="[^"]+" class="{name}" hidden>([^<]*)</script>', html)
    return found.group(1) if found else None


@needs_script
def test_a_small_session_is_embedded_whole(tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    data, metadata = SessionWidget(path).snapshot_bundle()
    info = data[SNAPSHOT_MIME]
    assert info["complete"] and info["entries"] == 14 and info["limit"] == SNAPSHOT_LIMIT
    assert metadata["pi_lab"]["snapshot"]
    html = data["text/html"]
    assert html.startswith('<div class="pi-lab-fallback" data-pi-lab-snapshot="1">')
    assert unpack(_part(html, "pi-main")).startswith(b"PIX1")
    assert _part(html, "pi-chunks")
    assert "Run the cell for the live viewer" in info["note"] and "pi-lab export" not in info["note"]
    assert html.rstrip().endswith("</script></div>")  # the viewer script last: the data is parsed before it runs


@needs_script
def test_the_limit_keeps_the_tree_and_the_first_chunks_and_says_how_to_get_the_rest(tmp_path):
    path = write_session(generated_session(4, 1200), tmp_path / "big.jsonl")
    widget = SessionWidget(path)
    whole = widget.snapshot_bundle()[0]
    main = len(_part(whole["text/html"], "pi-main"))
    chunks = len(_part(whole["text/html"], "pi-chunks"))
    assert whole[SNAPSHOT_MIME]["complete"]
    limit = main + chunks // 2
    data = widget.snapshot_bundle(limit=limit)[0]
    info, html = data[SNAPSHOT_MIME], data["text/html"]
    assert not info["complete"] and 0 < info["embedded_chunks"] < whole[SNAPSHOT_MIME]["embedded_chunks"]
    assert len(_part(html, "pi-main")) + len(_part(html, "pi-chunks")) <= limit
    assert f"pi-lab export {path} -o {str(path)[:-6]}.html" in info["note"]
    assert info["note"] in html
    # Too small for the tree itself: the text picture and the note only, no viewer.
    tiny = widget.snapshot_bundle(limit=main - 1)[0]
    assert _part(tiny["text/html"], "pi-main") is None and "<script>" not in tiny["text/html"]
    assert "too large for a snapshot" in tiny[SNAPSHOT_MIME]["note"]
    assert "<pre class=\"pi-lab-snapshot-text\">" in tiny["text/html"]


def test_the_css_rule_is_the_labextension_renderers():
    from pi_lab.widget.session_widget import FALLBACK_CSS

    source = (REPO / "src_frontend" / "labextension" / "snapshotRenderer.ts").read_text()
    body = source.split("export const SNAPSHOT_CSS =", 1)[1].split(";\n", 1)[0]
    assert "".join(re.findall(r"'([^']*)'", body)) == FALLBACK_CSS


@needs_script
def test_a_hostile_session_stays_text_in_the_snapshot(tmp_path):
    path = write_session(hostile_session(), tmp_path / "hostile.jsonl")
    widget = SessionWidget(path)
    text = widget.fallback_text()  # the rows were laid out without their text: this raised
    assert HOSTILE[0] in text
    html = widget.snapshot_bundle()[0]["text/html"]
    outside_viewer = html.rsplit("<script>", 1)[0]
    for attack in HOSTILE:
        assert attack not in outside_viewer
    assert "window.__pwned" not in html.rsplit("<script>", 1)[1]
    # Exactly our elements: the data blocks, the viewer script, no others.
    assert re.findall(r"<script[^>]*>", html) == [
        '<script type="application/octet-stream" class="pi-main" hidden>',
        '<script type="application/json" class="pi-chunk-offsets" hidden>',
        '<script type="application/octet-stream" class="pi-chunks" hidden>',
        "<script>",
    ]


@needs_script
def test_a_snapshot_at_its_limit_computes_only_what_it_embeds(tmp_path, monkeypatch):
    import pi_lab.export.data as data
    from pi_lab.export.data import SNAPSHOT_CHUNK

    path = write_session(generated_session(6, 2500), tmp_path / "big.jsonl")
    widget = SessionWidget(path)
    pulled = []
    real = data.iter_context_records

    def counting(entries, parents, *rest):
        for record in real(entries, parents, *rest):
            pulled.append(1)
            yield record

    monkeypatch.setattr(data, "iter_context_records", counting)
    html = widget.snapshot_bundle()[0]["text/html"]
    main = len(_part(html, "pi-main"))
    pulled.clear()
    data_at_limit = widget.snapshot_bundle(limit=main + 1)[0]
    info = data_at_limit[SNAPSHOT_MIME]
    assert _part(data_at_limit["text/html"], "pi-main") is not None  # the tree, and no chunk
    assert info["embedded_chunks"] == 0 and not info["complete"]
    assert len(pulled) <= SNAPSHOT_CHUNK, len(pulled)


def test_a_session_far_over_the_limit_is_told_so_without_building_the_tree(tmp_path, monkeypatch):
    import pi_lab.export.data as data
    from pi_lab.widget.snapshot import snapshot_bundle

    path = write_session(generated_session(8, 300), tmp_path / "s.jsonl")
    widget = SessionWidget(path)
    monkeypatch.setattr(data, "export_parts", lambda *a, **k: (_ for _ in ()).throw(AssertionError("built")))
    entries = widget.view.sm.get_entry_count()
    info = snapshot_bundle(widget.view.sm, text="t", css="", max_entries=entries - 1)[0][SNAPSHOT_MIME]
    assert "too large for a snapshot" in info["note"] and "pi-lab export" in info["note"]


@needs_script
def test_the_snapshot_follows_the_leaf_in_a_kernel(tmp_path):
    """A notebook saved after navigating shows where the reader left it: the snapshot output has
    a display id and is updated in place once the leaf has stayed put."""
    jupyter_client = pytest.importorskip("jupyter_client")
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()

    def run(code: str, until: str | None = None, timeout: float = 60) -> list[dict]:
        msg_id = kc.execute(code)
        seen: list[dict] = []
        idle = False
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = kc.get_iopub_msg(timeout=1)
            except Exception:
                if idle and until is None:
                    break
                continue
            kind = msg["msg_type"]
            if kind in ("display_data", "update_display_data", "error"):
                seen.append(msg)
                assert kind != "error", msg["content"]
            if kind == until:
                break
            if msg["parent_header"].get("msg_id") == msg_id and kind == "status" \
                    and msg["content"]["execution_state"] == "idle":
                idle = True
                if until is None:
                    break
        return seen

    try:
        kc.wait_for_ready(timeout=60)
        shown = run("import pi_lab.widget.session_widget as sw\nsw.SNAPSHOT_DELAY_S = 0.3\n"
                    f"from pi_lab.widget import SessionWidget\nw = SessionWidget({str(path)!r})\nw")
        snapshot = shown[0]["content"]
        display_id = snapshot["transient"]["display_id"]
        assert snapshot["data"][SNAPSHOT_MIME]["leaf_id"] == "C1"
        updates = run("w.view.sm.branch('A2'); w.sync()", until="update_display_data")
        update = [m for m in updates if m["msg_type"] == "update_display_data"]
        assert update, updates
        content = update[-1]["content"]
        assert content["transient"]["display_id"] == display_id
        assert content["data"][SNAPSHOT_MIME]["leaf_id"] == "A2"
        assert "leaf A2" in content["data"]["text/plain"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_same_session_and_leaf_give_the_same_snapshot_bytes(tmp_path):
    """A kernel's second snapshot (or a second export in one process) is byte for byte the first:
    the embedded timeline carried the process's walk counter (``serial``) and so differed."""
    from pi_lab.export.data import export_data
    from pi_lab.session import SessionManager

    path = write_session(generated_session(11, 200), tmp_path / "gen.jsonl")
    first = export_data(SessionManager.open(str(path), read_only=True))
    second = export_data(SessionManager.open(str(path), read_only=True))
    assert first == second
    assert SessionWidget(str(path)).snapshot_bundle() == SessionWidget(str(path)).snapshot_bundle()
