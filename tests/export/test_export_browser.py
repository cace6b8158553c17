"""HTML exports opened in a real browser with every network request blocked: the page works,
nothing leaves it, deep links select, every filter and tab answers like the Python side, and
a hostile session runs none of its own code."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_inputs import HOSTILE, copy_fixture, fixture_files, generated_session, hostile_session, write_session  # noqa: E402,F401
from helpers import SEED_SECTION_14  # noqa: E402

from pi_lab.export import export_html  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.session.flatten import FILTER_MODES  # noqa: E402
from pi_lab.view.payload import SessionView, entry_payload, context_payload  # noqa: E402
from pi_lab.view.kinds import FLAG  # noqa: E402
from pi_lab.view.rows import RowState  # noqa: E402

pytestmark = pytest.mark.browser
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path("/tmp/pi-lab-screenshots")
STATIC = Path(__file__).resolve().parents[2] / "pi_lab" / "static" / "export.js"

WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("chromium is needed at /usr/bin/chromium")
    if not STATIC.exists():
        pytest.skip("pi_lab/static/export.js is not built (jlpm build)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM))
        yield b
        b.close()


class Page:
    """One export opened offline; `leaked` lists every request the page tried."""

    def __init__(self, browser, html: Path, fragment: str = ""):
        self.url = html.resolve().as_uri()
        self.page = browser.new_page(viewport={"width": 1300, "height": 860})
        self.leaked: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.add_init_script(WATCH)
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(self.url + fragment)
        self.page.wait_for_selector(".pi-row", timeout=60_000)

    def _route(self, route):
        if route.request.url.split("#")[0] == self.url:
            route.continue_()
        else:
            self.leaked.append(route.request.url)
            route.abort()

    def call(self, script: str, arg=None):
        return self.page.evaluate(script, arg)

    def request(self, op: str, args: dict):
        return self.call("([op, args]) => document.getElementById('pi-export').piLabTransport.request(op, args)"
                         ".then(r => r.result)", [op, args])

    def row_ids(self) -> list:
        return self.call("""() => { const v = document.getElementById('pi-export').piLabViewer.columns();
            const t = document.getElementById('pi-export').piLabTransport;
            return t.request('rows', {start: 0, end: v.length}).then(r => r.result.rows.map(x => x.id)); }""")

    def close(self):
        assert self.leaked == [], self.leaked
        assert self.call("() => window.__csp") == [], "CSP violations"
        self.page.close()


def _inputs(tmp: Path) -> list[tuple[str, Path]]:
    found = [(p.stem, copy_fixture(p, tmp)) for p in fixture_files()]
    seed = [orjson.loads(line) for line in SEED_SECTION_14.strip().splitlines()]
    found.append(("seed", write_session(seed, tmp / "seed.jsonl")))
    found.append(("generated", write_session(generated_session(7, 220), tmp / "gen.jsonl")))
    # Values nested 3000 levels deep (pi_lab walks them with stacks; so must the export). JSON
    # writers recurse, so the text is built by hand and spliced in.
    deep = '"bottom"'
    for level in range(3000):
        deep = f'{{"k":{deep}}}' if level % 2 else f'[{deep},1.5]'
    entries = generated_session(8, 30)
    last = entries[-1]["id"]
    entries.append({"type": "custom", "id": "deep1", "parentId": last, "timestamp": "2026-01-02T00:00:00Z",
                    "customType": "deep", "data": "@DEEP@"})
    entries.append({"type": "message", "id": "deep2", "parentId": "deep1", "timestamp": "2026-01-02T00:00:01Z",
                    "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": False,
                                "content": [{"type": "text", "text": "ok"}], "details": "@DEEP@", "timestamp": 5}})
    path = write_session(entries, tmp / "deep.jsonl")
    path.write_text(path.read_text().replace('"@DEEP@"', deep))
    found.append(("deep", path))
    return found


def test_exports_open_offline_and_answer_like_python(browser, tmp_path):
    SHOTS.mkdir(exist_ok=True)
    for name, path in _inputs(tmp_path):
        before = path.read_bytes()
        out = export_html(path, tmp_path / f"{name}.html")
        assert path.read_bytes() == before  # the session file is only read
        sm = SessionManager.open(str(path), read_only=True)
        view = SessionView.open(sm)
        page = Page(browser, out)
        try:
            assert page.row_ids() == RowState(sm).ids, name
            ids = [e["id"] for e in sm.entries if isinstance(e.get("id"), str)]
            sample = ids if len(ids) <= 40 else ids[:: max(1, len(ids) // 40)]
            for entry_id in sample:
                for full in (False, True):
                    got = page.request("entry", {"id": entry_id, "full": full})
                    assert got == orjson.loads(orjson.dumps(entry_payload(view, entry_id, full))), (name, entry_id, full)
                got = page.request("context_at", {"id": entry_id})
                assert got == orjson.loads(orjson.dumps(context_payload(view, entry_id))), (name, entry_id)
            page.page.screenshot(path=str(SHOTS / f"export-{name}.png"))
            assert page.errors == [], page.errors
        finally:
            page.close()


def test_filters_search_tabs_and_deep_link(browser, tmp_path):
    path = write_session(generated_session(11, 200), tmp_path / "g.jsonl")
    sm = SessionManager.open(str(path), read_only=True)
    target = next(e["id"] for e in sm.entries[40:] if e.get("type") == "message"
                  and e["message"].get("role") == "user")
    out = export_html(path, tmp_path / "g.html")
    page = Page(browser, out, f"#{target}")
    try:
        selected = page.call("() => document.getElementById('pi-export').piLabTransport.get('selected_id')")
        assert selected == target
        page.page.wait_for_selector(".pi-row.pi-selected")
        for k, mode in enumerate(FILTER_MODES):
            page.page.locator(".pi-filter").nth(k).click()
            page.page.wait_for_timeout(150)
            assert page.row_ids() == RowState(sm, filter_mode=mode).ids, mode
        page.page.locator(".pi-filter").nth(0).click()
        page.page.fill("input.pi-search", "question")
        page.page.wait_for_timeout(500)
        assert page.row_ids() == RowState(sm, search="question").ids
        page.page.fill("input.pi-search", "")
        page.page.wait_for_timeout(500)
        for tab in ("What the model sees", "Compactions", "Entry"):
            page.page.locator(".pi-tab", has_text=tab).click()
            page.page.wait_for_timeout(200)
            page.page.screenshot(path=str(SHOTS / f"export-tab-{tab.split()[0].lower()}.png"))
        # A smaller window in the compactions tab redraws the gauge (recomputed in the page).
        page.page.locator(".pi-tab", has_text="Compactions").click()
        before = page.call("() => document.getElementById('pi-export').piLabTransport.get('gauge')")
        page.page.locator("input[data-setting=context_window]").fill("50000")
        page.page.locator("input[data-setting=context_window]").press("Enter")
        page.page.wait_for_timeout(200)
        after = page.call("() => document.getElementById('pi-export').piLabTransport.get('gauge')")
        assert after["context_window"] == 50000 and after["threshold"] == 50000 - before["reserve_tokens"]
        assert after["percent"] != before["percent"] or before["percent"] is None
        page.page.locator(".pi-tab", has_text="Entry").click()
        # Folding with ctrl+left on a branch point hides its subtree, as RowState does.
        rows_all = RowState(sm)
        foldable = next(rows_all.ids[r] for r in range(len(rows_all.ids))
                        if rows_all.columns.flags[r] & FLAG["foldable"])
        page.call("id => { location.hash = '#' + encodeURIComponent(id); }", foldable)
        page.page.wait_for_timeout(300)
        page.page.locator(".pi-row.pi-selected").click()
        page.page.keyboard.press("Control+ArrowLeft")
        page.page.wait_for_timeout(300)
        assert page.call("() => document.getElementById('pi-export').piLabTransport.get('folded')") == [foldable]
        assert page.row_ids() == RowState(sm, folded=[foldable]).ids
        page.page.keyboard.press("Control+ArrowRight")
        page.page.wait_for_timeout(300)
        assert page.row_ids() == rows_all.ids
        # Keyboard: moving down selects the next row and the address follows.
        page.page.locator(".pi-row.pi-selected").click()
        page.page.keyboard.press("ArrowDown")
        page.page.wait_for_timeout(200)
        now = page.call("() => document.getElementById('pi-export').piLabTransport.get('selected_id')")
        assert now != target
        assert page.call("() => decodeURIComponent(location.hash.slice(1))") == now
        assert page.errors == [], page.errors
    finally:
        page.close()


def test_hostile_session_runs_no_code(browser, tmp_path):
    path = write_session(hostile_session(), tmp_path / "hostile.jsonl")
    out = export_html(path, tmp_path / "hostile.html")
    text = out.read_text()
    assert "window.__pwned" not in text.split("<script>")[-1]  # not in the viewer script
    assert "'unsafe-inline'" not in text.split("script-src")[1].split(";")[0]
    page = Page(browser, out, "#u1")
    try:
        page.page.locator(".pi-filter").nth(FILTER_MODES.index("all")).click()
        page.page.wait_for_timeout(200)
        count = page.call("() => document.getElementById('pi-export').piLabViewer.columns().length")
        assert count >= 10
        for tab in ("Entry", "What the model sees", "Compactions"):
            for row in range(count):
                page.page.locator(".pi-row").nth(row).click()
                page.page.locator(".pi-tab", has_text=tab).click()
                # Open every collapsed part (raw JSON, thinking, tool output) and follow every link.
                page.call("() => document.querySelectorAll('.pi-lab details').forEach(d => { d.open = true; })")
                page.call("() => document.querySelectorAll('.pi-lab a').forEach(a => a.click())")
                page.page.wait_for_timeout(30)
        page.page.keyboard.press("Enter")
        page.page.screenshot(path=str(SHOTS / "export-hostile.png"))
        assert page.call("() => window.__pwned === undefined && parent.__pwned === undefined")
        assert page.dialogs == []
        assert not page.call("() => !!document.querySelector('.pi-lab script, .pi-lab iframe, .pi-lab svg [onload], .pi-lab img[onerror]')")
        assert page.call("() => window.__csp") == []
        # The watchers can see an attack: markup injected as HTML is refused by the policy.
        page.call("""() => document.body.insertAdjacentHTML('beforeend',
            '<img src="data:," onerror="window.__pwned=1"><a href="javascript:window.__pwned=2" id="probe">p</a>')""")
        page.page.click("#probe")
        page.page.wait_for_timeout(300)
        assert page.call("() => window.__pwned === undefined")
        assert page.call("() => window.__csp.length") > 0
        page.call("() => { window.__csp = []; }")
    finally:
        page.close()


def test_the_timeline_is_embedded_and_the_context_views_answer_without_a_kernel(browser, tmp_path):
    """The timeline of the export's leaf is embedded; the composition bar, the diff, the text
    search of two contexts and the branch comparison are answered from the embedded facts (as
    the kernel answers them); the timeline of another leaf still needs a kernel."""
    from pi_lab.view.gauge import recorded_context_window
    from pi_lab.view.payload import READ_OPS, ViewSettings, read_request

    if "timeline" not in READ_OPS:
        pytest.skip("this pi_lab has no timeline request")
    path = write_session(generated_session(21, 200), tmp_path / "t.jsonl")
    out = export_html(path, tmp_path / "t.html")
    sm = SessionManager.open(str(path), read_only=True)
    window = recorded_context_window(sm)
    view = SessionView.open(sm, ViewSettings(context_window=window) if window else ViewSettings())
    expected = orjson.loads(orjson.dumps(read_request(view, "timeline", {})))
    page = Page(browser, out)
    try:
        # "serial" counts the timeline requests a view has answered: not part of the data.
        def data(timeline: dict) -> dict:
            return {k: v for k, v in timeline.items() if k != "serial"}

        assert data(page.request("timeline", {})) == data(expected)
        assert data(page.request("timeline", {"leaf_id": sm.leaf_id})) == data(expected)
        other = next(e["id"] for e in sm.entries if e["id"] != sm.leaf_id)
        for op, args in (("timeline", {"leaf_id": other}),):
            message = page.call("([op, args]) => document.getElementById('pi-export').piLabTransport.request(op, args)"
                                ".then(() => 'answered', e => e.message)", [op, args])
            assert "needs a kernel" in message, (op, message)
        for op, args in (("composition", {"id": other}), ("context_diff", {"a": other, "b": sm.leaf_id}),
                         ("compare_branches", {"a": other, "b": sm.leaf_id}), ("timeline_at", {"id": other}),
                         ("compare_node", {"id": other, "side": "a"}),
                         ("context_search", {"a": other, "b": sm.leaf_id, "query": "auth"})):
            want = orjson.loads(orjson.dumps(read_request(view, op, args)))
            assert page.request(op, args) == want, op
        assert page.errors == [], page.errors
    finally:
        page.page.close()


def _ending_in_white_space(tmp_path, part: str, monkeypatch) -> Path:
    """An export whose packed ``part`` (pi-main or pi-chunks) ends in a character JavaScript's
    ``trim()`` drops. 7-bit text ends so only when the gzip trailer's length is 16 MiB or more
    (its top byte not 0): the part is padded with bytes the page ignores (zeros after the main
    blob's columns, white space after the last chunk's JSON), which compress to almost nothing.
    Which padding works depends on the compressed length modulo 7 (how many bits the last 7-bit
    character takes from the trailer), and a run of zeros or spaces adds a byte to it only every
    few kilobytes: the paddings tried are 1,000 bytes apart, so they reach every remainder
    whatever the part's own size."""
    import re

    import pi_lab.export.html as html_module

    path = write_session(generated_session(30, 40), tmp_path / "s.jsonl")
    real = html_module.export_data
    for extra in range(17_000_000, 17_200_000, 1_000):
        def padded(sm, *args, **kwargs):
            main, chunks = real(sm, *args, **kwargs)
            if part == "pi-main":
                return main + b"\0" * extra, chunks
            return main, chunks[:-1] + [chunks[-1] + b" " * extra]

        monkeypatch.setattr(html_module, "export_data", padded)
        out = export_html(path, tmp_path / "s.html")
        text = re.search(rf'id="{part}">(.*?)</script>', out.read_text(encoding="utf-8"), re.S).group(1)
        if text[-1] in " \t\n\x0b\x0c":
            monkeypatch.setattr(html_module, "export_data", real)
            return out
    raise AssertionError("no padding gave such an ending")


@pytest.mark.parametrize("part", ["pi-main", "pi-chunks"])
def test_an_export_whose_packed_data_ends_in_white_space_opens(browser, tmp_path, monkeypatch, part):
    out = _ending_in_white_space(tmp_path, part, monkeypatch)
    page = Page(browser, out)
    try:
        # every entry's detail and context inflate (the last chunk holds the last entry)
        ids = page.row_ids()
        assert len(ids) > 5
        last = page.request("entry", {"id": ids[-1], "full": True})
        assert last["id"] == ids[-1]
        assert page.request("context_at", {"id": ids[-1]})["messages"] is not None
        assert page.errors == [], page.errors
    finally:
        page.close()
