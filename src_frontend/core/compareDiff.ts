// The context diff of the Compare pane: the token delta, the messages in both contexts / only in
// A / only in B by source entry, and under a compaction summary the entries it replaced that
// the other side still holds verbatim. Also the per-side answer of a text search.

import { el, formatTokens, shortId } from './dom';
import { DiffAnswer, DiffGroup, DiffRow, entryButton, line, moreButton, Replaced, roleTag, SearchAnswer, SearchHit, signed, tokens } from './compareParts';

export interface DiffContext {
  open(entryId: string): void;
  /** Ask again with a larger limit. */
  more(): void;
}

const GROUPS: [DiffGroup, string][] = [
  ['both', 'In both'],
  ['only_a', 'Only in A'],
  ['only_b', 'Only in B']
];

const MESSAGES_MEANING = "the sum of pi's estimate (characters / 4) of each message in the lists below";
const CONTEXT_MEANING = 'the context size pi counts at each entry, as the gauge shows it: the usage the last reply before it ' +
  'reported, plus estimates of the messages after that reply. Reported usage also counts the system prompt, the tool ' +
  "definitions and the reply itself, in the provider's own tokens, so it differs from the sum of the messages";

/** One "label: a → b (±delta)" line of the diff's token figures. */
function figure(parent: HTMLElement, className: string, valueClass: string, label: string, a: number, b: number,
  meaning: string): HTMLElement {
  const line = el('div', className, parent);
  const delta = b - a;
  line.setAttribute('data-delta', String(delta));
  line.dataset.a = String(a);
  line.dataset.b = String(b);
  line.title = meaning;
  el('span', 'pi-cmp-headline-label', line, `${label} A → B: `);
  el('strong', `pi-num ${valueClass}`, line, `${formatTokens(a)} → ${formatTokens(b)}`);
  el('span', `pi-num pi-cmp-delta ${delta > 0 ? 'pi-warn' : delta < 0 ? 'pi-good' : 'pi-muted'}`, line, ` (${signed(delta)})`);
  return line;
}

export function renderDiff(parent: HTMLElement, d: DiffAnswer, ctx: DiffContext): void {
  // Two figures answer "how big": the messages listed (they sum to it) and the context size the
  // gauge shows (usage-anchored). Without reported usage they are the same pair, shown once;
  // otherwise each is named, and the caption says why they differ (issue 22).
  const same = d.context_a === d.tokens_a && d.context_b === d.tokens_b;
  const head = figure(parent, 'pi-cmp-headline', 'pi-cmp-tokens', same ? 'Tokens' : 'Messages listed', d.tokens_a, d.tokens_b,
    same ? `${MESSAGES_MEANING}; no reply on either path reported usage, so it is also the context size the gauge shows` : MESSAGES_MEANING);
  head.classList.add('pi-cmp-figure');
  const caption = el('div', 'pi-cmp-figures-caption pi-muted pi-small-text', parent);
  if (same) {
    caption.textContent = "pi's estimate of the messages below (characters / 4); no reply reported its usage, so this is also the context size the gauge shows.";
  } else {
    figure(parent, 'pi-cmp-context pi-cmp-figure', 'pi-cmp-context-tokens', 'Context size', d.context_a, d.context_b, CONTEXT_MEANING)
      .after(caption);
    caption.textContent = "Messages listed: pi's estimate (characters / 4) of the messages below, which sum to it. " +
      'Context size: what the gauge shows, the usage the last reply reported (it also counts the system prompt, tools and the ' +
      'reply) plus estimates of what came after it.';
  }

  const bySide = new Map<string, Replaced>();
  for (const r of d.replaced) {
    bySide.set(r.side, r);
  }
  for (const [group, title] of GROUPS) {
    const rows = d[group];
    const total = d.counts[group];
    const section = el('section', `pi-cmp-group pi-cmp-${group}`, parent);
    section.setAttribute('aria-label', `${title}: ${total} messages`);
    const h = el('h5', 'pi-cmp-group-title', section);
    el('span', '', h, title);
    el('span', 'pi-muted pi-num', h, ` · ${total} message${total === 1 ? '' : 's'} · ${tokens(d.group_tokens[group])}`);
    if (!total) {
      el('p', 'pi-muted pi-cmp-empty', section, group === 'both' ? 'The two contexts share no message.' : 'Nothing.');
      continue;
    }
    const list = el('ol', 'pi-cmp-list', section);
    // A compaction summary that opens one side: what it stands for, listed under it.
    const side = group === 'only_a' ? bySide.get('a') : group === 'only_b' ? bySide.get('b') : undefined;
    let placed = false;
    for (const row of rows) {
      const item = diffItem(list, row, ctx);
      if (side && !placed && row.role === 'compactionSummary' && row.source_id === side.compaction_id) {
        replacedBlock(item, side, group === 'only_b' ? 'A' : 'B', ctx);
        placed = true;
      }
    }
    if (side && !placed) {
      replacedBlock(section, side, group === 'only_b' ? 'A' : 'B', ctx);
    }
    moreButton(section, rows.length, total, ctx.more);
  }
}

function diffItem(list: HTMLElement, row: DiffRow, ctx: DiffContext): HTMLElement {
  const item = el('li', `pi-cmp-item pi-role-${row.role ?? 'unknown'}`, list);
  if (row.source_id) {
    item.dataset.source = row.source_id;
  }
  const head = el('div', 'pi-cmp-item-head', item);
  entryButton(head, row.source_id, ctx.open);
  roleTag(head, row.role);
  el('span', 'pi-num pi-cmp-item-tokens', head, tokens(row.tokens));
  if (row.edited) {
    const edited = el('span', 'pi-warn pi-small-text', head, `edited on B: ${tokens(row.tokens_b ?? 0)}`);
    edited.title = 'a context edit changed this message on one side';
  }
  if (row.preview) {
    line(item, 'pi-cmp-preview', row.preview);
  }
  return item;
}

function replacedBlock(parent: HTMLElement, r: Replaced, other: 'A' | 'B', ctx: DiffContext): void {
  const box = el('div', 'pi-cmp-replaced', parent);
  box.setAttribute('role', 'group');
  box.setAttribute('aria-label', `what compaction ${r.compaction_id ?? ''} replaced`);
  if (!r.count) {
    el('div', 'pi-muted pi-small-text', box, `This summary replaced nothing that ${other} holds verbatim.`);
    return;
  }
  el('div', 'pi-small-text pi-cmp-replaced-title', box,
    `Compaction ${shortId(r.compaction_id)} summarized ${r.count} entr${r.count === 1 ? 'y' : 'ies'} that ${other} holds verbatim (${tokens(r.tokens)} there):`);
  const list = el('ol', 'pi-cmp-list pi-cmp-replaced-list', box);
  for (const row of r.rows) {
    diffItem(list, row, ctx);
  }
  moreButton(box, r.rows.length, r.count, ctx.more);
}

export function renderSearch(parent: HTMLElement, s: SearchAnswer, open: (id: string) => void, more: () => void): void {
  const answer = el('div', 'pi-cmp-search-answer', parent);
  answer.setAttribute('role', 'status');
  for (const side of ['a', 'b'] as const) {
    const name = side.toUpperCase();
    const hits: SearchHit[] = s[side];
    const count = side === 'a' ? s.a_count : s.b_count;
    const entries = side === 'a' ? s.a_hits : s.b_hits;
    const block = el('div', `pi-cmp-search-side pi-cmp-search-${side}`, answer);
    const verdict = el('div', 'pi-cmp-search-verdict', block);
    el('strong', '', verdict, `${name}: `);
    if (!entries) {
      el('span', 'pi-muted', verdict, 'not in what the model sees');
      continue;
    }
    el('span', 'pi-num', verdict, `${count} hit${count === 1 ? '' : 's'} in ${entries} message${entries === 1 ? '' : 's'}`);
    const list = el('ol', 'pi-cmp-list', block);
    for (const hit of hits) {
      const item = el('li', 'pi-cmp-item', list);
      const head = el('div', 'pi-cmp-item-head', item);
      entryButton(head, hit.source_id, open);
      roleTag(head, hit.role);
      if (hit.count > 1) {
        el('span', 'pi-num pi-muted', head, `×${hit.count}`);
      }
      line(item, 'pi-cmp-preview', hit.snippet);
    }
    moreButton(block, hits.length, entries, more);
  }
}
