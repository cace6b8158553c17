// Checks of the framework-free viewer core that need no browser: the Markdown renderer (inert
// text, termination on hostile input), pi's row prefixes and delta application. Bundled by
// esbuild and run with node from tests/widget/test_frontend_core.py, which passes in a
// structure blob made by the Python side. Prints one JSON object with the results.

import { renderInline, renderMarkdown } from '../../src_frontend/core/markdown';
import { RowColumns, rowPrefix } from '../../src_frontend/core/row';
import type { DeltaMessage } from '../../src_frontend/core/transport';

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

// Rows from the structure blob given on the command line (base64).
const blob = Buffer.from(process.argv[2] ?? '', 'base64');
if (blob.length) {
  const cols = new RowColumns(new Uint8Array(blob));
  results.prefixes = Array.from({ length: cols.length }, (_, r) => rowPrefix(cols, r).text);
  results.deep = rowPrefix(cols, 0, 0);
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
}
console.log(JSON.stringify(results));
