// The branch comparison of the Compare pane: the common ancestor, the two divergent segments
// side by side from the fork point down, what each side did (tools, files, tokens, cost, errors,
// retries) and the branch summaries written when leaving either side.

import { button, el, formatTokens, shortId } from './dom';
import { BranchesAnswer, entryButton, line, moreButton, SegmentRow, SideStats } from './compareParts';

export interface BranchesContext {
  open(entryId: string): void;
  more(): void;
  goTo(entryId: string): void;
}

export function renderBranches(parent: HTMLElement, r: BranchesAnswer, ctx: BranchesContext): void {
  const fork = el('div', 'pi-cmp-fork', parent);
  if (r.common_ancestor && r.nodes.common) {
    el('span', 'pi-muted', fork, 'Common ancestor (fork point): ');
    entryButton(fork, r.common_ancestor, ctx.open, 'the common ancestor');
    line(fork, 'pi-cmp-node-text', r.nodes.common.text);
  } else {
    el('strong', 'pi-warn', fork, 'No common ancestor: A and B are on unrelated roots (each side is its whole path).');
  }
  for (const [side, node] of [['A', r.nodes.a], ['B', r.nodes.b]] as const) {
    if (!node.is_tip) {
      el('div', 'pi-cmp-note pi-small-text', parent,
        `${side} (${shortId(node.id)}) is not a leaf: the comparison runs from the fork to ${side} itself; what follows it is left out.`);
    }
  }

  const go = el('div', 'pi-cmp-go', parent);
  for (const [side, node] of [['A', r.nodes.a], ['B', r.nodes.b]] as const) {
    const b = button(`Go to ${side}'s leaf…`, 'pi-small pi-cmp-goto', go, () => ctx.goTo(node.id),
      `put the session's leaf on ${side} (${node.id}); the dialog offers a summary of the branch left behind`);
    b.dataset.side = side.toLowerCase();
    b.disabled = node.is_leaf;
    if (node.is_leaf) {
      b.title = `${side} is the current leaf`;
    }
  }

  // The two segments, aligned at the fork point: row k of each column is k entries below it.
  const grid = el('div', 'pi-cmp-sides', parent);
  for (const side of ['a', 'b'] as const) {
    const rows = side === 'a' ? r.a_rows : r.b_rows;
    const count = side === 'a' ? r.a_count : r.b_count;
    const col = el('section', `pi-cmp-side pi-cmp-side-${side}`, grid);
    col.setAttribute('aria-label', `side ${side.toUpperCase()}: ${count} entries after the fork`);
    el('h5', 'pi-cmp-group-title', col, `${side.toUpperCase()} · ${count} entr${count === 1 ? 'y' : 'ies'} after the fork`);
    if (!count) {
      el('p', 'pi-muted pi-cmp-empty', col, 'Nothing: this side stops at the fork point.');
      continue;
    }
    const list = el('ol', 'pi-cmp-list pi-cmp-segment', col);
    for (const row of rows) {
      segmentItem(list, row, ctx);
    }
    moreButton(col, rows.length, count, ctx.more);
  }

  statsTable(parent, r.a_stats, r.b_stats, r.a_count, r.b_count);

  const sums = el('section', 'pi-cmp-summaries', parent);
  sums.setAttribute('aria-label', 'branch summaries');
  el('h5', 'pi-cmp-group-title', sums, `Branch summaries · ${r.summaries.length}`);
  if (!r.summaries.length) {
    el('p', 'pi-muted pi-cmp-empty', sums, 'No branch summary was written when leaving either side.');
  }
  for (const s of r.summaries) {
    const box = el('div', 'pi-cmp-summary', sums);
    const head = el('div', 'pi-cmp-item-head', box);
    entryButton(head, s.entry_id, ctx.open, 'the branch summary');
    const where: string[] = [];
    if (s.left_side) {
      where.push(`written when leaving ${s.left_side.toUpperCase()}`);
    }
    if (s.on_side) {
      where.push(`on side ${s.on_side.toUpperCase()}`);
    }
    if (!s.left_side && s.on_side) {
      // An older file (and the seed explainer) records where the navigation went, not the leaf
      // it left: say so in the pane's words, not by the JSON field's name.
      where.push(`names ${shortId(s.from_id)} as where it came from: the entry navigated to, not the leaf left behind`);
    }
    el('span', 'pi-small-text pi-muted', head, where.join(' · '));
    el('div', 'pi-cmp-summary-text', box, s.summary + (s.truncated ? ' …' : ''));
  }
}

function segmentItem(list: HTMLElement, row: SegmentRow, ctx: BranchesContext): void {
  const item = el('li', `pi-cmp-item pi-kind-${row.kind}${row.error ? ' pi-error' : ''}`, list);
  if (row.id) {
    item.dataset.id = row.id;
  }
  const head = el('div', 'pi-cmp-item-head', item);
  entryButton(head, row.id, ctx.open);
  line(head, 'pi-cmp-seg-text', row.text || `[${row.kind}]`);
}

function statsTable(parent: HTMLElement, a: SideStats, b: SideStats, aCount: number, bCount: number): void {
  const table = el('table', 'pi-cmp-stats', parent);
  table.setAttribute('aria-label', 'what each side did');
  const head = el('tr', '', el('thead', '', table));
  for (const text of ['', 'A', 'B']) {
    el('th', '', head, text);
  }
  const body = el('tbody', '', table);
  const row = (name: string, fa: (s: SideStats) => string, cls = ''): void => {
    const tr = el('tr', cls, body);
    el('th', '', tr, name);
    el('td', 'pi-num', tr, fa(a));
    el('td', 'pi-num', tr, fa(b));
  };
  const usage = (s: SideStats, text: string): string => (s.usage_known ? text : 'no usage recorded');
  const tools = (s: SideStats): string =>
    Object.keys(s.tools).length ? Object.entries(s.tools).map(([n, c]) => `${n} ×${c}`).join(', ') : '—';
  const files = (list: string[]): string => (list.length ? list.join(', ') : '—');
  row('entries', s => String(s === a ? aCount : bCount));
  row('model calls', s => String(s.calls));
  row('tools run', tools, 'pi-cmp-tools');
  row('tool errors', s => String(s.tool_errors));
  row('files read', s => files(s.files_read), 'pi-cmp-files');
  row('files modified', s => files(s.files_modified), 'pi-cmp-files');
  row('tokens (usage)', s => usage(s, `${formatTokens(s.tokens.total)} (in ${formatTokens(s.tokens.input)}, out ${formatTokens(s.tokens.output)}, cache ${formatTokens(s.tokens.cache_read + s.tokens.cache_write)})`));
  row('cost', s => usage(s, `$${s.cost.toFixed(s.cost < 1 ? 4 : 2)}`));
  row('errors', s => (s.error_count ? `${s.error_count} (${s.errors.filter(e => e.overflow).length} overflow)` : '0'));
  row('retries', s => String(s.retries));
  row('context at the end', s => `${formatTokens(s.context_tokens)} estimated`);
}
