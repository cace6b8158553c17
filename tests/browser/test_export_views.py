"""The context views in an exported page, in Debian's chromium with every network request
blocked: the composition bar of a selected node, the Compare pane's context diff and branch
comparison of two picked nodes (the worked example's A3 against A4, and the leaf before and after
the compaction C1), each answer equal to the kernel's, no "needs a kernel" text and no request
leaving the page; and a hostile session clicked through these views runs none of its code."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
from playwright.sync_api import expect

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "export"))
sys.path.insert(0, str(HERE.parent))
from export_inputs import hostile_session, write_session  # noqa: E402
from helpers import SEED_SECTION_14  # noqa: E402

from pi_lab.export import export_html  # noqa: E402
from pi_lab.session import SessionManager  # noqa: E402
from pi_lab.view.payload import read_request  # noqa: E402
from pi_lab.view.gauge import recorded_context_window  # noqa: E402
from pi_lab.view.payload import SessionView, ViewSettings  # noqa: E402

STATIC = HERE.parents[1] / "pi_lab" / "static" / "export.js"
PANE = ".pi-lab .pi-compare"
SHOTS = Path("/tmp")
WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""


@pytest.fixture(autouse=True)
def _built():
    if not STATIC.exists():
        pytest.skip("pi_lab/static/export.js is not built (jlpm build)")


class Offline:
    """An export opened from disk; every other request is aborted and listed in `leaked`."""

    def __init__(self, page, html: Path):
        self.page = page
        self.url = html.resolve().as_uri()
        self.leaked: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.add_init_script(WATCH)
        page.route("**/*", self._route)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.goto(self.url)
        page.wait_for_selector(".pi-row", timeout=60_000)

    def _route(self, route):
        if route.request.url.split("#")[0] == self.url:
            route.continue_()
        else:
            self.leaked.append(route.request.url)
            route.abort()

    def select(self, entry_id: str) -> None:
        self.page.locator(f".pi-lab .pi-row[data-id='{entry_id}']").click()
        expect(self.page.locator(".pi-lab .pi-row.pi-selected")).to_have_attribute("data-id", entry_id)

    def pick(self, side: str, entry_id: str) -> None:
        self.select(entry_id)
        button = self.page.locator(f"{PANE} .pi-cmp-set[data-side='{side}']")
        expect(button).to_have_attribute("title", f"pick the selected entry ({entry_id}) as {side.upper()}")
        button.click()
        expect(self.page.locator(f"{PANE} .pi-cmp-pick[data-side='{side}']")).to_have_attribute("data-picked", entry_id)

    def tab(self, name: str) -> None:
        self.page.locator(".pi-tab", has_text=name).click()

    def no_kernel_text(self) -> None:
        assert "needs a kernel" not in self.page.locator(".pi-lab").inner_text()

    def done(self) -> None:
        assert self.leaked == [], self.leaked
        assert self.page.evaluate("() => window.__csp") == [], "CSP violations"
        assert self.errors == [], self.errors


def _kernel(path: Path):
    sm = SessionManager.open(str(path), read_only=True)
    window = recorded_context_window(sm)
    view = SessionView.open(sm, ViewSettings(context_window=window) if window else ViewSettings())
    return lambda op, args: orjson.loads(orjson.dumps(read_request(view, op, args)))


def _group(page, group: str) -> list[str]:
    return page.eval_on_selector_all(f"{PANE} .pi-cmp-{group} > .pi-cmp-list > .pi-cmp-item",
                                     "els => els.map(e => e.dataset.source)")


def test_composition_diff_and_branches_in_an_export(page, tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text(SEED_SECTION_14, encoding="utf-8")
    kernel = _kernel(path)
    out = export_html(path, tmp_path / "seed.html")
    page.set_viewport_size({"width": 1400, "height": 900})
    view = Offline(page, out)

    # The composition bar of a selected node, part by part as the kernel splits it.
    view.select("A3")
    view.tab("What the model sees")
    parts = kernel("composition", {"id": "A3"})["parts"]
    legend = page.locator(".pi-lab .pi-composition-legend .pi-composition-item")
    expect(legend).to_have_count(len(parts))
    assert legend.evaluate_all("els => els.map(e => e.dataset.part)") == [p["part"] for p in parts]
    assert page.locator(".pi-lab .pi-composition-bar .pi-composition-segment").count() == len(parts)
    view.no_kernel_text()
    page.screenshot(path=str(SHOTS / "s4a_composition.png"))
    # A part filters the list to its messages.
    legend.first.click()
    expect(legend.first).to_have_attribute("aria-pressed", "true")

    # Compare: the JWT leaf against the cookie leaf.
    view.tab("Compare")
    view.pick("a", "A3")
    view.pick("b", "A4")
    diff = kernel("context_diff", {"a": "A3", "b": "A4"})
    expect(page.locator(f"{PANE} .pi-cmp-both")).to_be_visible()
    for group in ("both", "only_a", "only_b"):
        assert _group(page, group) == [r["source_id"] for r in diff[group]], group
    assert int(page.locator(f"{PANE} .pi-cmp-headline").get_attribute("data-delta")) == diff["delta"]
    expect(page.locator(f"{PANE} .pi-cmp-pick[data-side='b'] .pi-cmp-kind")).to_have_text("assistant")
    # The text search of both contexts, as the kernel finds it.
    page.locator(f"{PANE} .pi-cmp-search-input").fill("JWT")
    page.locator(f"{PANE} .pi-cmp-search-go").click()
    found = kernel("context_search", {"a": "A3", "b": "A4", "query": "JWT"})
    expect(page.locator(f"{PANE} .pi-cmp-search-answer")).to_be_visible()
    snippets = page.locator(f"{PANE} .pi-cmp-search-answer .pi-cmp-preview").all_inner_texts()
    assert snippets == [h["snippet"] for h in found["a"] + found["b"]]
    view.no_kernel_text()
    page.screenshot(path=str(SHOTS / "s4a_diff.png"))

    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    branches = kernel("compare_branches", {"a": "A3", "b": "A4"})
    expect(page.locator(f"{PANE} .pi-cmp-fork")).to_contain_text("Common ancestor")
    expect(page.locator(f"{PANE} .pi-cmp-fork .pi-cmp-id")).to_have_text(branches["common_ancestor"])
    for side in ("a", "b"):
        ids = page.eval_on_selector_all(f"{PANE} .pi-cmp-side-{side} .pi-cmp-item", "els => els.map(e => e.dataset.id)")
        assert ids == branches[side], side
    expect(page.locator(f"{PANE} .pi-cmp-summary .pi-cmp-id")).to_have_text("BS1")
    expect(page.locator(f"{PANE} .pi-cmp-stats")).to_be_visible()
    view.no_kernel_text()
    page.screenshot(path=str(SHOTS / "s4a_branches.png"))

    # Before and after the compaction: what C1 summarised that A6 still holds verbatim.
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='diff']").click()
    view.pick("a", "A6")
    view.pick("b", "C1")
    replaced = kernel("context_diff", {"a": "A6", "b": "C1"})["replaced"]
    assert replaced and replaced[0]["source_ids"]
    expect(page.locator(f"{PANE} .pi-cmp-replaced")).to_be_visible()
    expect(page.locator(f"{PANE} .pi-cmp-replaced-title")).to_contain_text(f"summarized {replaced[0]['count']} entries")
    view.no_kernel_text()
    page.screenshot(path=str(SHOTS / "s4a_compaction_diff.png"))

    # The timeline's point for an entry that is not a model call (answered in the page).
    point = page.evaluate("() => document.getElementById('pi-export').piLabTransport.request('timeline_at', {id: 'U3'})"
                          ".then(r => r.result)")
    assert point == kernel("timeline_at", {"id": "U3"})
    view.done()


def test_hostile_text_in_the_context_views_runs_no_code(page, tmp_path):
    path = write_session(hostile_session(), tmp_path / "hostile.jsonl")
    out = export_html(path, tmp_path / "hostile.html")
    sm = SessionManager.open(str(path), read_only=True)
    ids = [e["id"] for e in sm.get_entries() if isinstance(e.get("id"), str)]
    page.set_viewport_size({"width": 1400, "height": 900})
    view = Offline(page, out)
    page.locator(".pi-filter", has_text="all").first.click()
    # The session_info row (hidden by the default filter) comes in above the others: wait for
    # it, or a click aimed at the row below lands on it as the list moves.
    expect(page.locator(".pi-lab .pi-row[data-id='i0']")).to_have_count(1)
    view.tab("What the model sees")
    for entry_id in ids:
        if page.locator(f".pi-lab .pi-row[data-id='{entry_id}']").count():
            view.select(entry_id)
            page.wait_for_timeout(120)
            page.evaluate("() => document.querySelectorAll('.pi-lab .pi-composition-item').forEach(b => b.click())")
    page.screenshot(path=str(SHOTS / "s4a_hostile_composition.png"))
    view.tab("Compare")
    view.pick("a", "u1")
    view.pick("b", ids[-1])
    expect(page.locator(f"{PANE} .pi-cmp-headline")).to_be_visible()
    page.locator(f"{PANE} .pi-cmp-search-input").fill("script")
    page.locator(f"{PANE} .pi-cmp-search-go").click()
    expect(page.locator(f"{PANE} .pi-cmp-search-answer .pi-cmp-preview").first).to_contain_text("<script>")
    page.evaluate("() => document.querySelectorAll('.pi-lab .pi-compare a').forEach(a => a.click())")
    page.screenshot(path=str(SHOTS / "s4a_hostile_diff.png"))
    page.locator(f"{PANE} .pi-cmp-mode[data-mode='branches']").click()
    expect(page.locator(f"{PANE} .pi-cmp-stats")).to_be_visible()
    page.evaluate("() => document.querySelectorAll('.pi-lab .pi-compare a').forEach(a => a.click())")
    page.screenshot(path=str(SHOTS / "s4a_hostile_branches.png"))
    view.no_kernel_text()
    assert page.evaluate("() => window.__pwned === undefined && parent.__pwned === undefined")
    assert view.dialogs == []
    assert not page.evaluate("() => !!document.querySelector('.pi-lab script, .pi-lab iframe, .pi-lab svg [onload], .pi-lab img[onerror]')")
    view.done()
