"""The JupyterLab viewer's cold open asks for the structure with the state (issue 11).

The document's transport (src_frontend/labextension/restTransport.ts) is bundled with esbuild
and run in node over a recording API whose answers this test releases one by one, so the
order of the requests is seen as the server would see it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None or not ESBUILD.exists(), reason="needs node and esbuild")

DRIVER = r"""
import { RestTransport } from '%(src)s';

function blob(head: object): ArrayBuffer {
  const text = new TextEncoder().encode(JSON.stringify(head));
  const bytes = new Uint8Array(8 + text.length);
  bytes.set([80, 73, 82, 49, text.length & 255, (text.length >> 8) & 255, 0, 0]);
  bytes.set(text, 8);
  return bytes.buffer;
}

const STATE = {
  generation: 1, version: 5, row_count: 4, leaf_id: 'L', session: {}, gauge: {},
  file: { size: 1, mtime: 0, generation: 1, skipped_lines: 0, first_skipped_lines: [], incomplete_tail: false },
  location: { path: 's.jsonl', area: 'root', name: 's.jsonl' }
};

async function scenario(structureVersion: number, selectedRow: number) {
  const calls: { op: string; body: any }[] = [];
  const pending: ((value: unknown) => void)[] = [];
  const answer = (op: string, body: any) => new Promise<any>(resolve => {
    calls.push({ op, body });
    pending.push(() => resolve(op === 'structure'
      ? blob({ version: structureVersion, selected_row: selectedRow, selected_id: selectedRow >= 0 ? 'L' : null })
      : STATE));
  });
  const api: any = {
    post: (parts: string[], body: any) => answer(parts[1], body),
    postBinary: (parts: string[], body: any) => answer(parts[1], body)
  };
  const transport = new RestTransport(api, 's.jsonl');
  const loading = transport.load();
  await Promise.resolve();
  const beforeState = calls.map(c => c.op);
  pending.splice(0).forEach(release => release(undefined));
  await loading;
  const firstAsk = transport.request('structure');
  await new Promise(resolve => setTimeout(resolve, 0));
  pending.splice(0).forEach(release => release(undefined));
  const first = await firstAsk;
  const afterFirst = calls.map(c => c.op);
  const secondAsk = transport.request('structure');
  await new Promise(resolve => setTimeout(resolve, 0));
  pending.splice(0).forEach(release => release(undefined));
  await secondAsk;
  return {
    beforeState,
    afterFirst,
    all: calls.map(c => c.op),
    selectedSent: calls.filter(c => c.op === 'structure').map(c => c.body.selected_id ?? null),
    firstBytes: first.buffers[0].byteLength
  };
}

(async () => {
  const out = {
    same: await scenario(5, 2),
    moved_on: await scenario(4, 2),
    nothing_shown: await scenario(5, -1)
  };
  console.log(JSON.stringify(out));
})();
"""


# The viewer panel made as JupyterLab's document factory makes it, not yet attached; the few DOM
# names Lumino and JupyterLab touch when their modules load are stand-ins (node has no DOM).
PANEL_DRIVER = r"""
class FakeElement {
  children: FakeElement[] = []; attrs: Record<string, string> = {}; dataset: Record<string, string> = {};
  style: Record<string, string> = {}; hidden = false; textContent = ''; className = ''; tabIndex = 0;
  classList = { add: () => undefined, remove: () => undefined, toggle: () => false, contains: () => false };
  constructor(readonly tagName: string) {}
  appendChild(child: FakeElement) { this.children.push(child); return child; }
  setAttribute(name: string, value: string) { this.attrs[name] = value; }
  removeAttribute(name: string) { delete this.attrs[name]; }
  getAttribute(name: string) { return this.attrs[name] ?? null; }
  addEventListener() {} removeEventListener() {}
}
(globalThis as any).document = { createElement: (tag: string) => new FakeElement(tag), getElementById: () => null, addEventListener: () => undefined, body: new FakeElement('body'), visibilityState: 'visible' };
(globalThis as any).window = globalThis;
for (const name of ['DragEvent', 'MouseEvent', 'KeyboardEvent', 'PointerEvent', 'FocusEvent', 'UIEvent', 'WheelEvent', 'ClipboardEvent', 'InputEvent', 'HTMLDivElement', 'Node', 'Text', 'DocumentFragment', 'WebSocket']) { if (!(name in globalThis)) { (globalThis as any)[name] = class {}; } }
(globalThis as any).Element = FakeElement; (globalThis as any).HTMLElement = FakeElement; (FakeElement.prototype as any).matches = () => false;
Object.defineProperty(globalThis, 'navigator', { value: { userAgent: 'node', platform: 'Linux' }, configurable: true });
const { SessionViewerPanel } = require('%(panel)s');
const calls: string[] = [];
const api: any = {
  post: (parts: string[]) => { calls.push(parts.join('/')); return new Promise(() => undefined); },
  postBinary: (parts: string[]) => { calls.push(parts.join('/')); return new Promise(() => undefined); }
};
new SessionViewerPanel(api, 's.jsonl');
console.log(JSON.stringify(calls));
"""


def run_driver(work: Path, text: str) -> object:
    source = work / "driver.ts"
    source.write_text(text)
    bundle = work / "driver.cjs"
    subprocess.run([str(ESBUILD), str(source), "--bundle", "--platform=node", "--format=cjs", f"--outfile={bundle}",
                    "--log-level=error"], check=True, timeout=120, cwd=ROOT)
    run = subprocess.run([NODE, str(bundle)], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("transport")
    return run_driver(work, DRIVER % {"src": (ROOT / "src_frontend" / "labextension" / "restTransport").as_posix()})


def test_the_panel_asks_for_the_session_when_it_is_made(tmp_path):
    # Before: the first requests waited for JupyterLab to attach the panel to the page.
    calls = run_driver(tmp_path, PANEL_DRIVER % {"panel": (ROOT / "src_frontend" / "labextension" / "viewerPanel").as_posix()})
    assert calls == ["session/structure", "session/state"]


def test_the_structure_is_asked_for_with_the_state_and_used_by_the_core(results):
    same = results["same"]
    # Before: only the state was asked for; the structure followed its answer (a round trip more).
    assert same["beforeState"] == ["structure", "state"]
    # The core's first structure request takes that answer: no request of its own ...
    assert same["afterFirst"] == ["structure", "state"]
    assert same["firstBytes"] > 8
    # ... and only the first one: the next asks the server again, with the leaf selected.
    assert same["all"] == ["structure", "state", "structure"]
    assert same["selectedSent"] == [None, "L"]


def test_an_early_structure_of_another_version_is_not_used(results):
    # Another viewer moved the layout on between the two answers: the core asks again.
    assert results["moved_on"]["afterFirst"] == ["structure", "state", "structure"]


def test_an_early_structure_without_a_selected_row_is_not_used(results):
    # Nothing of the leaf's path is shown: the server's row for the leaf id may differ, ask with it.
    assert results["nothing_shown"]["afterFirst"] == ["structure", "state", "structure"]
    assert results["nothing_shown"]["selectedSent"][:2] == [None, "L"]
