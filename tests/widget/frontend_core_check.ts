// Checks of the framework-free viewer core that need no browser: the Markdown renderer (inert
// text, termination on hostile input), pi's row prefixes and delta application. Bundled by
// esbuild and run with node from tests/widget/test_frontend_core.py, which passes in a
// structure blob made by the Python side. Prints one JSON object with the results.

import { hasBidiControls, neutralizeBidi, rowSafe } from '../../src_frontend/core/dom';
import { handleTreeKey, TreeKeyActions } from '../../src_frontend/core/keys';
import { renderInline, renderMarkdown } from '../../src_frontend/core/markdown';
import { rowText } from '../../src_frontend/core/rowList';
import { RowColumns, rowPrefix } from '../../src_frontend/core/row';
import type { DeltaMessage, RowText } from '../../src_frontend/core/transport';

// A minimal DOM: elements with tag, attributes and children; text nodes with text.
class FakeNode {
  children: FakeNode[] = [];
  attributes: Record<string, string> = {};
  dataset: Record<string, string> = {};
  textContent = '';
  href = '';
  target = '';
  rel = '';
  start = 1;
  constructor(public tag: string) {}
  appendChild(child: FakeNode): FakeNode {
    this.children.push(child);
    return child;
  }
  get lastChild(): FakeNode | null {
    return this.children[this.children.length - 1] ?? null;
  }
}
(globalThis as unknown as { document: unknown }).document = {
  createElement: (tag: string) => new FakeNode(tag),
  createTextNode: (text: string) => {
    const node = new FakeNode('#text');
    node.textContent = text;
    return node;
  }
};

function tags(node: FakeNode, out: string[] = []): string[] {
  const stack = [node];
  while (stack.length) {
    const n = stack.pop()!;
    out.push(n.tag);
    stack.push(...n.children);
  }
  return out;
}

function text(node: FakeNode): string {
  if (node.tag === '#text') {
    return node.textContent;
  }
  return node.tag === 'code' || node.tag === 'pre' ? node.textContent + node.children.map(text).join('') : node.children.map(text).join('');
}

function md(source: string): FakeNode {
  const root = new FakeNode('div');
  renderMarkdown(root as unknown as HTMLElement, source);
  return root;
}

const results: Record<string, unknown> = {};
const hostile = [
  '<script>alert(1)</script>',
  '<img src=x onerror="window.__p=1">',
  "Here: <img src=x onerror=\"w.__p='img'\"> and [click](javascript:w.__p='link') **bold** `<svg onload=w.__p=1>`",
  '[ok](https://example.com) [bad](javascript:alert(1)) [data](data:text/html,<b>x</b>)'
];
results.hostile = hostile.map(source => {
  const root = md(source);
  const all = tags(root);
  const links = [] as string[];
  const stack = [root];
  while (stack.length) {
    const n = stack.pop()!;
    if (n.tag === 'a') {
      links.push(n.href);
    }
    stack.push(...n.children);
  }
  return { tags: Array.from(new Set(all)).sort(), text: text(root), links };
});
const t0 = Date.now();
md('> '.repeat(5000) + 'deep quote');
md('*'.repeat(20000) + ' stars ' + '_'.repeat(20000));
md('**a **b **c **d **e **f **g **h** g** f** e** d** c** b** a**');
renderInline(new FakeNode('p') as unknown as Node, '[x](https://e.com) '.repeat(2000));
results.hostile_ms = Date.now() - t0;
const sample = md('# Title\n\nSome *em* and **strong** and `code` and snake_case_name.\n\n- one\n- two\n\n1. first\n2. second\n\n```py\nprint("<b>")\n```\n\n> quoted');
results.sample_tags = tags(sample);
results.sample_text = text(sample);

// One-line, bidi-safe row text.
const BIDI = ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u200e', '\u200f', '\u061c'];
results.bidi = BIDI.map(ch => {
  const shown = neutralizeBidi(`abc${ch}def`);
  return { code: ch.charCodeAt(0), shown, controls_left: hasBidiControls(shown), detected: hasBidiControls(`x${ch}`) };
});
results.bidi_plain = neutralizeBidi('user: 改成 JWT 🚀 שלום');
results.row_safe = rowSafe('line one\nline two\r\nthree\u2028four\u202e!');
results.row_text = {
  unknown_with_type: rowText({ id: 'w', text: '', label: null, label_time: null, type: 'weird_new_thing' }, 'unknown'),
  unknown_without_type: rowText({ id: 'w', text: '', label: null, label_time: null }, 'unknown'),
  user_empty: rowText({ id: 'u', text: '', label: null, label_time: null }, 'user'),
  user: rowText({ id: 'u', text: 'user: hi', label: null, label_time: null }, 'user')
};
const keyCalls: string[] = [];
const keyActions: TreeKeyActions = {
  count: 3, selected: 1, page: 2,
  move: row => keyCalls.push(`move ${row}`), foldOrUp: () => keyCalls.push('foldOrUp'), unfoldOrDown: () => keyCalls.push('unfoldOrDown'),
  activate: () => keyCalls.push('activate'), menu: () => keyCalls.push('menu'), label: () => keyCalls.push('label'),
  toggleTimes: () => keyCalls.push('toggleTimes'), type: text => keyCalls.push(`type ${text}`), backspace: () => keyCalls.push('backspace'),
  escape: () => keyCalls.push('escape')
};
const press = (key: string, mods: Partial<KeyboardEvent> = {}): boolean =>
  handleTreeKey({ key, shiftKey: false, ctrlKey: false, altKey: false, metaKey: false, ...mods } as KeyboardEvent, keyActions);
results.keys = { shift_f10: press('F10', { shiftKey: true }), f10: press('F10'), context_menu: press('ContextMenu'), calls: keyCalls };

// Rows from the structure blob given on the command line (base64).
const blob = Buffer.from(process.argv[2] ?? '', 'base64');
if (blob.length) {
  const cols = new RowColumns(new Uint8Array(blob));
  results.prefixes = Array.from({ length: cols.length }, (_, r) => rowPrefix(cols, r).text);
  results.deep = rowPrefix(cols, 0, 0);
  // Issue 11: the structure leaves estimates out; each comes with its row's text.
  const count = (): (number | null)[] => Array.from({ length: cols.length }, (_, r) => cols.tokenCount(r));
  results.tokens_at_load = count();
  const texts = JSON.parse(process.argv[3] ?? '[]') as RowText[];
  texts.forEach((t, r) => {
    if (r % 2 === 0) {
      cols.setText(r, t); // the even rows only: the odd ones still wait
    }
  });
  results.tokens_after_even_texts = count();
  const delta: DeltaMessage = {
    kind: 'delta', from: cols.version, to: cols.version + 1, gutter_base: cols.gutterParent.length, gutters: [],
    row_count: cols.length + 1, leaf_row: 1,
    ops: [{ op: 'insert', row: 1, values: [99, 0, 0, 4, 1, 7, 0], text: { id: 'NEW', text: 'user: new', label: null, label_time: null } }]
  };
  const parentsBefore = Array.from(cols.parent.subarray(0, cols.length));
  results.applied = cols.apply(delta);
  results.applied_again = cols.apply(delta); // stale: must be refused
  results.parents_before = parentsBefore;
  results.parents_after = Array.from(cols.parent.subarray(0, cols.length));
  results.new_text = cols.texts[1]?.text;
  results.new_tokens = cols.tokenCount(1); // a delta's row carries its estimate at once
}
console.log(JSON.stringify(results));
