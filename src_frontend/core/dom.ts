// Small DOM helpers. Session text only ever enters the page through `textContent` or text
// nodes (see markdown.ts): session files hold arbitrary model and tool output.

const FOCUSABLE = new Set(['input', 'textarea', 'button', 'select', 'summary', 'a']);

/**
 * Keep the host's keyboard shortcuts away from a focusable element. Lumino looks for this
 * attribute from the focused element upwards but stops at the first node matching a
 * shortcut's selector (e.g. `.jp-Notebook.jp-mod-commandMode :focus`), which is the focused
 * element itself, so an attribute on an ancestor is not enough.
 */
export function suppressShortcuts(node: HTMLElement): void {
  node.setAttribute('data-lm-suppress-shortcuts', 'true');
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  parent?: HTMLElement | null,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (FOCUSABLE.has(tag)) {
    suppressShortcuts(node);
  }
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  parent?.appendChild(node);
  return node;
}

/** ``node`` with ``attributes`` set (ARIA roles and labels, mostly); returns it. */
export function withAttributes<T extends HTMLElement>(node: T, attributes: Record<string, string>): T {
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, value);
  }
  return node;
}

export function button(label: string, className: string, parent: HTMLElement, onClick: () => void, title?: string): HTMLButtonElement {
  const b = el('button', `pi-btn ${className}`, parent, label);
  b.type = 'button';
  if (title) {
    b.title = title;
  }
  b.addEventListener('click', event => {
    event.stopPropagation();
    onClick();
  });
  return b;
}

export function clear(node: HTMLElement): void {
  while (node.firstChild) {
    node.removeChild(node.firstChild);
  }
}

/** 1234 → "1.2k", 1234567 → "1.23M"; null → "?". */
export function formatTokens(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '?';
  }
  const abs = Math.abs(n);
  if (abs < 1000) {
    return String(Math.round(n));
  }
  if (abs < 100_000) {
    return `${(n / 1000).toFixed(1).replace(/\.0$/, '')}k`;
  }
  if (abs < 1_000_000) {
    return `${Math.round(n / 1000)}k`;
  }
  return `${(n / 1_000_000).toFixed(2).replace(/\.?0+$/, '')}M`;
}

/**
 * A compaction's count before it, in words: "115k tokens before", or "tokens before not
 * recorded" when the file holds none (Codex never records it; Claude Code without preTokens).
 */
export function tokensBeforeText(n: number | null | undefined): string {
  return n === null || n === undefined || !Number.isFinite(n) ? 'tokens before not recorded' : `${formatTokens(n)} tokens before`;
}

/** pi's label time: HH:MM today, M/D HH:MM this year, YY/M/D HH:MM otherwise (local time). */
export function formatLabelTime(iso: string | null, now: Date = new Date()): string {
  if (!iso) {
    return '';
  }
  const moment = new Date(iso);
  if (Number.isNaN(moment.getTime())) {
    return '';
  }
  const two = (n: number): string => String(n).padStart(2, '0');
  const time = `${two(moment.getHours())}:${two(moment.getMinutes())}`;
  if (moment.toDateString() === now.toDateString()) {
    return time;
  }
  const md = `${moment.getMonth() + 1}/${moment.getDate()}`;
  if (moment.getFullYear() === now.getFullYear()) {
    return `${md} ${time}`;
  }
  return `${String(moment.getFullYear()).slice(-2)}/${md} ${time}`;
}

export function shortId(id: string | null | undefined): string {
  return id ? (id.length > 12 ? `${id.slice(0, 8)}…` : id) : '—';
}

/**
 * The bidi controls that can reorder the text around them: embeddings and overrides
 * (U+202A–U+202E), isolates (U+2066–U+2069) and the implicit marks (U+200E, U+200F, U+061C).
 * Each maps to the short name it is shown as.
 */
const BIDI_NAMES: Record<string, string> = {
  '\u202a': 'LRE', '\u202b': 'RLE', '\u202c': 'PDF', '\u202d': 'LRO', '\u202e': 'RLO',
  '\u2066': 'LRI', '\u2067': 'RLI', '\u2068': 'FSI', '\u2069': 'PDI',
  '\u200e': 'LRM', '\u200f': 'RLM', '\u061c': 'ALM'
};
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/g;

/** Whether `text` holds a bidi control character. */
export function hasBidiControls(text: string): boolean {
  BIDI_CONTROLS.lastIndex = 0;
  return BIDI_CONTROLS.test(text);
}

/** The names of the bidi controls in `text`, each once, in order of first appearance. */
export function bidiControlNames(text: string): string[] {
  const names: string[] = [];
  for (const ch of text.match(BIDI_CONTROLS) ?? []) {
    const name = BIDI_NAMES[ch] ?? 'BIDI';
    if (!names.includes(name)) {
      names.push(name);
    }
  }
  return names;
}

/**
 * `text` with every bidi control replaced by a visible marker such as "⟨RLO⟩": in a one-line
 * place (a tree row, the sessions panel) a hidden override would reverse what follows it, so
 * the reader sees where the control is instead of its effect. The detail pane keeps the text
 * as it is (isolated, see styles.ts).
 */
export function neutralizeBidi(text: string): string {
  return text.replace(BIDI_CONTROLS, ch => `⟨${BIDI_NAMES[ch] ?? 'BIDI'}⟩`);
}

/**
 * One line for a row: line breaks (and other vertical space) shown as "↵", then bidi controls
 * neutralized. A row is 22 px high, so a second line would be drawn over the next row.
 */
export function rowSafe(text: string): string {
  return neutralizeBidi(text.replace(/\r\n|[\n\r\v\f\u0085\u2028\u2029]/g, '↵'));
}

/**
 * Put `text` into `parent` with every occurrence of a search word wrapped in `<mark>` (case
 * folded the way the search folds it, JavaScript's toLowerCase). Text nodes only.
 */
export function appendMarked(parent: HTMLElement, text: string, words: string[]): number {
  const spans = hitSpans(text, words);
  let at = 0;
  for (const [start, end] of spans) {
    if (start > at) {
      parent.appendChild(document.createTextNode(text.slice(at, start)));
    }
    el('mark', 'pi-hit', parent, text.slice(start, end));
    at = end;
  }
  if (at < text.length || !spans.length) {
    parent.appendChild(document.createTextNode(text.slice(at)));
  }
  return spans.length;
}

/** Where the words occur in `text`, as sorted, non-overlapping [start, end) pairs. */
export function hitSpans(text: string, words: string[]): [number, number][] {
  if (!words.length || !text) {
    return [];
  }
  // Lower-casing can change a string's length (İ): then the positions would not line up.
  const lower = text.toLowerCase();
  if (lower.length !== text.length) {
    return [];
  }
  const found: [number, number][] = [];
  for (const word of words) {
    for (let at = lower.indexOf(word); at >= 0 && word; at = lower.indexOf(word, at + word.length)) {
      found.push([at, at + word.length]);
    }
  }
  found.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const merged: [number, number][] = [];
  for (const span of found) {
    const last = merged[merged.length - 1];
    if (last && span[0] <= last[1]) {
      last[1] = Math.max(last[1], span[1]);
    } else {
      merged.push([span[0], span[1]]);
    }
  }
  return merged;
}

/**
 * Mark the search words in every text node under `root` (the entry pane, after it is drawn);
 * returns the marks in document order. Text under a `skip` selector stays as it is. A walk with
 * a TreeWalker, never recursion.
 */
export function markWords(root: HTMLElement, words: string[], skip = ''): HTMLElement[] {
  if (!words.length) {
    return [];
  }
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent && !parent.closest(`button, input, textarea, mark, style${skip ? `, ${skip}` : ''}`)) {
      nodes.push(node as Text);
    }
  }
  for (const node of nodes) {
    const text = node.data;
    if (!hitSpans(text, words).length) {
      continue;
    }
    const holder = document.createElement('span');
    appendMarked(holder, text, words);
    node.replaceWith(...Array.from(holder.childNodes));
  }
  return Array.from(root.querySelectorAll<HTMLElement>('mark.pi-hit'));
}

/** The lower-cased, whitespace-separated words of a query (navigation.search_tokens). */
export function searchTokens(query: string): string[] {
  return query.toLowerCase().split(/\s+/).filter(t => t.length > 0);
}
