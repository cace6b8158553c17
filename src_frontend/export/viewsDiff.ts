// The context diff and the context search of an export (diff.py): what the model sees at A and
// at B, message by message (both / only A / only B, what a summary replaced), and where a text
// occurs on each side, with Python's casefold and white space.

import { plain } from './data';
import { codePoints, cutText, has, isObject, Json, pyTruthy, strOrNull } from './pyValues';
import { limitOf, node, pair } from './viewsCompare';
import { ContextRow, ViewsData } from './viewsData';

export interface Side {
  index: number;
  path: number[];
  rows: { row: ContextRow; source: number; key: string }[];
  /** Every source of a row, omitted rows too: the entries of the projection that matter. */
  sources: Set<number>;
  keys: Map<string, ContextRow>;
  context: number;
  /** The first row, omitted or not. */
  first: ContextRow | undefined;
}

// The white space of Python's str.split, per export (a set made at the first search).
const SPACES = new WeakMap<ViewsData, Set<string>>();

/**
 * diff._searchable over session._text.content_preview(content, "\n", thinking_text=True): the
 * text of a message as the model reads it. Used only for messages views.py `_page_rebuilds`
 * accepts (string tool names and block types, plain JSON arguments); any other message's text
 * is embedded as it is.
 */
export function searchableText(message: Json): string {
  const role = message.role;
  if (role === 'compactionSummary' || role === 'branchSummary') {
    return typeof message.summary === 'string' ? message.summary : '';
  }
  if (role === 'bashExecution') {
    return [message.command, message.output].filter(t => typeof t === 'string').join('\n');
  }
  const content = message.content;
  if (typeof content === 'string') {
    return content;
  }
  if (!Array.isArray(content)) {
    return '';
  }
  const parts: string[] = [];
  for (const block of content) {
    if (!isObject(block)) {
      continue;
    }
    const kind = block.type;
    if (kind === 'text') {
      if (typeof block.text === 'string') {
        parts.push(block.text);
      }
    } else if (kind === 'toolCall') {
      const args = 'arguments' in block ? plain(block.arguments) : {};
      parts.push(`→ ${block.name as string}(${JSON.stringify(args)})`);
    } else if (kind === 'thinking') {
      parts.push(typeof block.thinking === 'string' ? `(thinking) ${block.thinking}` : '[thinking]');
    } else if (kind !== null && kind !== undefined) {
      parts.push(`[${kind as string}]`);
    }
  }
  return parts.join('\n');
}

export async function sideAt(data: ViewsData, index: number): Promise<Side> {
  const rows: Side['rows'] = [];
  const sources = new Set<number>();
  const keys = new Map<string, ContextRow>();
  let previous = -2;
  let k = 0;
  const all = await data.rowsAt(index);
  for (const row of all) {
    const source = row.v?.o ?? data.index(row.source_id as string);
    sources.add(source);
    if (row.omitted) {
      continue;
    }
    // A projected message is named by its entry and its place among that entry's messages
    // (diff._Side): an entry's messages are next to each other.
    k = source === previous ? k + 1 : 0;
    previous = source;
    const key = `${source}:${k}`;
    rows.push({ row, source, key });
    keys.set(key, row);
  }
  const record = await data.record(index);
  return { index, path: data.path(index), rows, sources, keys, context: record.c.s[2] as number, first: all[0] };
}

function diffRow(data: ViewsData, row: ContextRow): Record<string, unknown> {
  return { source_id: strOrNull(row.source_id), role: strOrNull(row.role), tokens: row.tokens, source_type: strOrNull(row.source_type) };
}

function replacedOn(data: ViewsData, side: Side, other: Side, name: string): Record<string, unknown> | null {
  // diff._replaced: the projection opens with a compaction and its summary.
  const first = side.first;
  if (!first || first.omitted || first.source_type !== 'compaction' || !side.rows.length) {
    return null;
  }
  const compaction = side.rows[0].source;
  const at = side.path.lastIndexOf(compaction);
  const byOther = new Map<number, number>();
  for (const { row, source } of other.rows) {
    byOther.set(source, (byOther.get(source) ?? 0) + row.tokens);
  }
  const ids: (string | null)[] = [];
  let tokens = 0;
  // Python's path[:at]: at -1 leaves out the last entry, as slice(0, -1) does.
  for (const entry of side.path.slice(0, at)) {
    // summarised on this side (before the checkpoint, not kept) and verbatim on the other
    if (!side.sources.has(entry) && byOther.has(entry)) {
      ids.push(data.flat.ids[entry]);
      tokens += byOther.get(entry)!;
    }
  }
  return { side: name, compaction_id: data.flat.ids[compaction], source_ids: ids, tokens };
}

export async function contextDiff(data: ViewsData, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const [ia, ib] = pair(data, args);
  const limit = limitOf(data, args);
  const a = await sideAt(data, ia);
  const b = await sideAt(data, ib);
  const groups: Record<string, { out: Record<string, unknown>; row: ContextRow }[]> = { both: [], only_a: [], only_b: [] };
  for (const { row, key } of a.rows) {
    const out = diffRow(data, row);
    const other = b.keys.get(key);
    if (!other) {
      groups.only_a.push({ out, row });
      continue;
    }
    if ((row.v?.h ?? '') !== (other.v?.h ?? '')) {
      out.edited = true;
      out.tokens_b = other.tokens;
    }
    groups.both.push({ out, row });
  }
  for (const { row, key } of b.rows) {
    if (!a.keys.has(key)) {
      groups.only_b.push({ out: diffRow(data, row), row });
    }
  }
  const sum = (side: Side): number => side.rows.reduce((total, r) => total + r.row.tokens, 0);
  const tokensA = sum(a);
  const tokensB = sum(b);
  const replaced = [replacedOn(data, a, b, 'a'), replacedOn(data, b, a, 'b')].filter(r => r !== null) as Record<string, unknown>[];
  const notes: string[] = [];
  if (!groups.both.length && a.rows.length && b.rows.length) {
    const shared = a.path.length && b.path.length && a.path[0] === b.path[0];
    notes.push('the two contexts share no message' + (shared ? '' : ' (the entries are on unrelated roots)'));
  }
  const preview = (row: ContextRow): string => cutText(row.preview ?? '', data.views.preview);
  for (const r of replaced) {
    const wanted = r.source_ids as (string | null)[];
    const pool = r.side === 'b' ? 'only_a' : 'only_b';
    const rows: Record<string, unknown>[] = [];
    for (const { out, row } of groups[pool]) {
      if (wanted.includes(out.source_id as string | null) && rows.length < limit) {
        rows.push({ ...out, preview: preview(row) });
      }
    }
    r.rows = rows;
    r.count = wanted.length;
  }
  const result: Record<string, unknown> = {
    a_id: args.a,
    b_id: args.b,
    tokens_a: tokensA,
    tokens_b: tokensB,
    delta: tokensB - tokensA,
    context_a: a.context,
    context_b: b.context,
    replaced,
    notes
  };
  const counts: Record<string, number> = {};
  const groupTokens: Record<string, number> = {};
  for (const group of ['both', 'only_a', 'only_b']) {
    const rows = groups[group];
    counts[group] = rows.length;
    groupTokens[group] = rows.reduce((total, r) => total + (r.out.tokens as number), 0);
    result[group] = rows.slice(0, limit).map(({ out, row }) => ({ ...out, preview: preview(row) }));
  }
  result.counts = counts;
  result.group_tokens = groupTokens;
  result.limit = limit;
  result.nodes = { a: await node(data, ia), b: await node(data, ib) };
  return result;
}

/** Python's `text.casefold()`: each character lower-cased, except where the table says. */
function fold(data: ViewsData, text: string): string {
  const table = data.views.fold;
  let out = '';
  for (const ch of text) {
    out += has(table, ch) ? table[ch] : ch.toLowerCase();
  }
  return out;
}

/** Python's `" ".join(text.split())` (and `text.strip()` when empty). */
function words(data: ViewsData, text: string): string {
  let spaces = SPACES.get(data);
  if (!spaces) {
    spaces = new Set(Array.from(data.views.space));
    SPACES.set(data, spaces);
  }
  const words: string[] = [];
  let word = '';
  for (const ch of text) {
    if (spaces.has(ch)) {
      if (word) {
        words.push(word);
      }
      word = '';
    } else {
      word += ch;
    }
  }
  if (word) {
    words.push(word);
  }
  return words.join(' ');
}

/** The text the search reads in one row (views.py row_extras `t`). */
async function searched(data: ViewsData, row: ContextRow, source: number): Promise<string> {
  const t = row.v?.t;
  if (typeof t === 'string') {
    return t;
  }
  if (t === 1) {
    return row.preview ?? '';
  }
  if (Array.isArray(t)) {
    return data.views.texts![t[0]];
  }
  const entry = (await data.record(source)).e as Json;
  return searchableText(entry.message as Json);
}

/** diff._hits: where `needle` (folded unless case-sensitive) occurs in one side's messages. */
async function hitsOn(data: ViewsData, side: Side, needle: string, caseSensitive: boolean): Promise<Record<string, unknown>[]> {
  const hits: Record<string, unknown>[] = [];
  const width = codePoints(needle);
  for (let index = 0; index < side.rows.length; index++) {
    const { row, source } = side.rows[index];
    const text = await searched(data, row, source);
    const haystack = caseSensitive ? text : fold(data, text);
    const found = haystack.indexOf(needle);
    if (found < 0) {
      continue;
    }
    let count = 0;
    for (let at = found; at >= 0; at = haystack.indexOf(needle, at + needle.length)) {
      count++;
    }
    // Python's positions are code points of the folded text, applied to the text itself.
    const at = codePoints(haystack.slice(0, found));
    const chars = Array.from(text);
    const start = Math.max(0, at - data.views.snippet);
    const end = Math.min(chars.length, at + width + data.views.snippet);
    hits.push({ index, source_id: strOrNull(row.source_id), role: strOrNull(row.role), count, snippet: words(data, chars.slice(start, end).join('')) });
  }
  return hits;
}

/** compare_requests._search: the text in what the model sees at A and at B. */
export async function contextSearch(data: ViewsData, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const [ia, ib] = pair(data, args);
  const limit = limitOf(data, args);
  const query = args.query;
  if (typeof query !== 'string' || !words(data, query)) {
    throw new Error('type the text to look for in both contexts');
  }
  const caseSensitive = pyTruthy(args.case_sensitive);
  const needle = caseSensitive ? query : fold(data, query);
  const found: Record<string, unknown> = { text: query };
  for (const [name, index] of [['a', ia], ['b', ib]] as const) {
    const hits = await hitsOn(data, await sideAt(data, index), needle, caseSensitive);
    found[name] = hits.slice(0, limit);
    found[`in_${name}`] = hits.length > 0;
    found[`${name}_hits`] = hits.length;
    found[`${name}_count`] = hits.reduce((n, h) => n + (h.count as number), 0);
  }
  found.limit = limit;
  return found;
}
