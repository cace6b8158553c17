// The context views of an HTML export without a kernel: the composition bar, the timeline's
// point for any entry, and the Compare pane (node names, context diff and search, branch
// comparison).
//
// The kernel answers these from the entries (pi_lab/view/composition.py, diff.py, branches.py,
// compare_requests.py, timeline_requests.py). The export embeds each entry's share of those
// answers, computed in Python by the same functions (pi_lab/export/views.py): per context row
// its composition shares and, for an edited message, a digest; per entry its usage counters,
// tool names, file paths, error, the id a context edit drops; per entry in the `facts` column
// its role, tool error, abort and whether it has a child. Here they are folded along the paths
// of the flat tree, as compose() and fold_stats() fold them there; tests/export/test_export_views.py
// runs this file in node against the kernel's answers.

import { FACT_BITS, ROLES } from '../core/contract';
import { plain, PyFloat } from './data';
import type { EntryRecord, ExportHeader } from './data';
import type { FlatData } from './layout';

/** pi_lab/export/views.py `views_header`. */
export interface ViewsHeader {
  part_of_role: Record<string, string>;
  other: string;
  order: string[];
  tool_result: string;
  usage_keys: string[];
  default_limit: number;
  max_limit: number;
  preview: number;
  /** [flat index, id, fromId, parentId, ([text, truncated] when not in the tree)] */
  summaries: [number, string | null, string | null, string | null, [string, boolean]?][];
  /** Python's str.casefold where it is not each character lower-cased, and its white space. */
  fold: Record<string, string>;
  space: string;
  /** diff._SNIPPET: characters of context each side of a hit. */
  snippet: number;
  /** Long searched texts held once (a system prompt): a row's `t` of [k] is texts[k]. */
  texts?: string[];
}

/** A context row as the export embeds it (pi_lab/view/context.py context_at, plus `v`). */
export interface ContextRow {
  role?: unknown;
  source_id?: unknown;
  source_type?: unknown;
  tokens: number;
  preview?: string;
  omitted?: boolean;
  /** views.py row_extras: q shares, h digest of an edited message, o the source's flat index. */
  v?: { q?: string | (number | string)[]; h?: string; o?: number; t?: string | 1 | [number] };
}

/** The facts column (pi_lab/view/contract.py ROLES and FACT_BITS, through contract.ts). */
const ROLE_MASK = 3;
const ROLE_USER = ROLES.indexOf('user');
const ROLE_ASSISTANT = ROLES.indexOf('assistant');
const ROLE_TOOL_RESULT = ROLES.indexOf('toolResult');
const TOOL_ERROR = FACT_BITS.tool_error;
const ABORTED = FACT_BITS.aborted;
const HAS_CHILD = FACT_BITS.has_child;

const NAMES: Record<string, string> = { a: 'A', b: 'B' };

function strOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function has(table: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(table, key);
}

/** Python's `len` of a string: code points. */
function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) {
    n++;
  }
  return n;
}

/** `text` cut to `limit` code points with an ellipsis, as compare_requests.row_text and
 * view.context.message_preview cut (`text[: limit - 1] + "…"`). */
export function cutText(text: string, limit: number): string {
  if (codePoints(text) <= limit) {
    return text;
  }
  return Array.from(text).slice(0, limit - 1).join('') + '…';
}

/** Python's string order (code points), for the tool counts' tie break. */
function pyCompare(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let k = 0; k < Math.min(x.length, y.length); k++) {
    const d = x[k].codePointAt(0)! - y[k].codePointAt(0)!;
    if (d) {
      return d;
    }
  }
  return x.length - y.length;
}

/** A value's JSON kind as the kernel's refusals name it (pi_lab.view.payload.kind_of). */
function jsonKind(value: unknown): string {
  if (value === null || value === undefined) {
    return 'null';
  }
  if (typeof value === 'boolean') {
    return value ? 'true' : 'false';
  }
  if (typeof value === 'number') {
    return 'a number';
  }
  if (typeof value === 'string') {
    return 'a string';
  }
  return Array.isArray(value) ? 'a list' : 'an object';
}

/** Python's truth of a JSON value (`bool(args.get(...))`). */
function pyTruthy(value: unknown): boolean {
  if (Array.isArray(value)) {
    return value.length > 0;
  }
  if (value !== null && typeof value === 'object') {
    return Object.keys(value).length > 0;
  }
  return Boolean(value);
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof PyFloat);
}

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

/** Python's `repr` of a simple JSON value, for the refusals' text (others as JSON). */
function pyRepr(value: unknown): string {
  if (value === null || value === undefined) {
    return 'None';
  }
  if (typeof value === 'boolean') {
    return value ? 'True' : 'False';
  }
  if (typeof value === 'string') {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
    const body = value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r');
    return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
  }
  return JSON.stringify(value);
}

interface Side {
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

type Shares = [string, number][];

export class StaticViews {
  private readonly views: ViewsHeader;

  constructor(
    private readonly header: ExportHeader,
    private readonly flat: FlatData,
    private readonly record: (index: number) => Promise<EntryRecord>,
    private readonly rowsAt: (index: number) => Promise<ContextRow[]>,
    private readonly index: (id: string | null | undefined) => number
  ) {
    this.views = header.views!;
  }

  /** Whether this export embeds the views' facts (exports made before them do not). */
  static available(header: ExportHeader): boolean {
    return Boolean(header.views);
  }

  // ------------------------------------------------------------------ helpers

  private path(index: number): number[] {
    const path: number[] = [];
    for (let at = index; at >= 0; at = this.flat.parent[at]) {
      path.push(at);
    }
    return path.reverse();
  }

  private facts(index: number): number {
    return this.flat.facts ? this.flat.facts[index] : 0;
  }

  /** An entry named by the kernel's rule (view._common.require_entry), or the refusal in the
   *  viewer's words the kernel sends (view.errors.UnknownEntry.user_text). */
  private require(id: unknown): number {
    if (typeof id !== 'string') {
      throw new Error(`an entry id is text, not ${jsonKind(id)}`);
    }
    if (!id) {
      throw new Error('no entry was named');
    }
    const index = this.index(id);
    if (index < 0) {
      throw new Error(`entry ${id} is not in this session`);
    }
    return index;
  }

  /** A row's composition shares (views.py row_extras `q`; absent: derived as there). */
  private async shares(row: ContextRow, source: number): Promise<Shares> {
    const v = this.views;
    const q = row.v?.q;
    if (q === undefined) {
      const role = row.role;
      if (role === 'toolResult') {
        // A tool result's part is named by its tool (composition._tool_part), read from the
        // embedded entry; views.py sends `q` whenever that would not give the kernel's part.
        const entry = (await this.record(source)).e as Json;
        return [[v.tool_result + ((entry.message as Json).toolName as string), row.tokens]];
      }
      return [[typeof role === 'string' && has(v.part_of_role, role) ? v.part_of_role[role] : v.other, row.tokens]];
    }
    if (typeof q === 'string') {
      return [[v.tool_result + q, row.tokens]];
    }
    const out: Shares = [];
    let used = 0;
    for (let k = 0; k < q.length; k += 2) {
      const part = typeof q[k] === 'number' ? v.order[q[k] as number] : v.tool_result + (q[k] as string);
      // An odd length leaves out the last share: the row's tokens less the others'.
      const amount = k + 1 < q.length ? (q[k + 1] as number) : row.tokens - used;
      used += amount;
      out.push([part, amount]);
    }
    return out;
  }

  // ------------------------------------------------------------------ composition

  /** timeline_requests.composition_payload at entry `id`. */
  async composition(args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = args.id;
    const index = this.require(id);
    const side = await this.side(index);
    const shares = await Promise.all(side.rows.map(({ row, source }) => this.shares(row, source)));
    // composition.compose
    const tokens = new Map<string, number>();
    const indexes = new Map<string, number[]>();
    const toolParts: string[] = [];
    shares.forEach((rowShares, position) => {
      for (const [part, amount] of rowShares) {
        if (!tokens.has(part)) {
          tokens.set(part, 0);
          indexes.set(part, []);
          if (part.startsWith(this.views.tool_result)) {
            toolParts.push(part);
          }
        }
        tokens.set(part, tokens.get(part)! + amount);
        const seen = indexes.get(part)!;
        if (!seen.length || seen[seen.length - 1] !== position) {
          seen.push(position);
        }
      }
    });
    const order: string[] = [];
    for (const part of this.views.order) {
      if (part === this.views.tool_result) {
        order.push(...toolParts);
      } else if (tokens.has(part)) {
        order.push(part);
      }
    }
    const parts = order.map(part => ({ part, tokens: tokens.get(part)!, messages: indexes.get(part)!.length, indexes: indexes.get(part)! }));
    return { at: id, parts, total: parts.reduce((sum, p) => sum + p.tokens, 0) };
  }

  // ------------------------------------------------------------------ timeline point

  /** timeline_requests.timeline_at_payload: the call that stands for entry `id` on a branch. */
  timelineAt(args: Record<string, unknown>): Record<string, unknown> {
    const id = args.id;
    const entry = this.require(id);
    let leafId = args.leaf_id === null || args.leaf_id === undefined || args.leaf_id === '' ? null : args.leaf_id;
    let leaf: number;
    if (leafId === null) {
      leafId = this.header.leaf_id;
      if (leafId === null) {
        return { id, on_branch: false, call_id: null };
      }
      leaf = this.index(leafId as string);
    } else {
      leaf = this.require(leafId);
    }
    const toEntry = this.path(entry);
    const toLeaf = leaf >= 0 ? this.path(leaf) : [];
    const depth = toEntry.length - 1;
    const onBranch = depth < toLeaf.length && this.flat.ids[toLeaf[depth]] === id;
    let call: string | null = null;
    if (onBranch) {
      for (let at = depth; at >= 0; at--) {
        if ((this.facts(toEntry[at]) & ROLE_MASK) === ROLE_ASSISTANT) {
          call = this.flat.ids[toEntry[at]];
          break;
        }
      }
    }
    return { id, on_branch: onBranch, call_id: call };
  }

  // ------------------------------------------------------------------ Compare: picks and names

  private pick(args: Record<string, unknown>, key: string): number {
    const name = NAMES[key];
    const value = args[key];
    if (value === null || value === undefined || value === '') {
      throw new Error(`pick ${name} first: no entry is chosen as ${name}`);
    }
    if (typeof value !== 'string') {
      throw new Error(`${name} must be an entry id (a string), not ${jsonKind(value)}`);
    }
    const index = this.index(value);
    if (index < 0) {
      throw new Error(`${name}: entry ${value} is not in this session`);
    }
    return index;
  }

  private pair(args: Record<string, unknown>): [number, number] {
    const a = this.pick(args, 'a');
    const b = this.pick(args, 'b');
    if (a === b) {
      throw new Error(`A and B are the same entry (${args.a as string}): pick two different entries to compare`);
    }
    return [a, b];
  }

  private limit(args: Record<string, unknown>): number {
    const value = args.limit === undefined ? this.views.default_limit : args.limit;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
      throw new Error(`limit must be a positive whole number, not ${pyRepr(value)}`);
    }
    return Math.min(value, this.views.max_limit);
  }

  /** The Compare pane's one line for an entry (compare_requests.row_text). */
  private async text(index: number): Promise<string> {
    const record = await this.record(index);
    const own = (record.v as { n?: string } | undefined)?.n;
    return own ?? cutText(this.header.texts[index], this.views.preview);
  }

  /** compare_requests._nodes for one entry (null: none). */
  async node(index: number): Promise<Record<string, unknown> | null> {
    if (index < 0) {
      return null;
    }
    const id = this.flat.ids[index];
    return {
      id,
      kind: this.header.kinds[this.flat.kind[index]],
      text: await this.text(index),
      is_leaf: id === this.header.leaf_id,
      is_tip: !(this.facts(index) & HAS_CHILD)
    };
  }

  async compareNode(args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const side = args.side === undefined ? 'a' : args.side;
    if (side !== 'a' && side !== 'b') {
      throw new Error(`side must be 'a' or 'b', not ${pyRepr(side)}`);
    }
    return (await this.node(this.pick({ [side]: args.id }, side)))!;
  }

  // ------------------------------------------------------------------ context diff

  private async side(index: number): Promise<Side> {
    const rows: Side['rows'] = [];
    const sources = new Set<number>();
    const keys = new Map<string, ContextRow>();
    let previous = -2;
    let k = 0;
    const all = await this.rowsAt(index);
    for (const row of all) {
      const source = row.v?.o ?? this.index(row.source_id as string);
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
    const record = await this.record(index);
    return { index, path: this.path(index), rows, sources, keys, context: record.c.s[2] as number, first: all[0] };
  }

  private diffRow(row: ContextRow): Record<string, unknown> {
    return { source_id: strOrNull(row.source_id), role: strOrNull(row.role), tokens: row.tokens, source_type: strOrNull(row.source_type) };
  }

  private replaced(side: Side, other: Side, name: string): Record<string, unknown> | null {
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
        ids.push(this.flat.ids[entry]);
        tokens += byOther.get(entry)!;
      }
    }
    return { side: name, compaction_id: this.flat.ids[compaction], source_ids: ids, tokens };
  }

  async contextDiff(args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const [ia, ib] = this.pair(args);
    const limit = this.limit(args);
    const a = await this.side(ia);
    const b = await this.side(ib);
    const groups: Record<string, { out: Record<string, unknown>; row: ContextRow }[]> = { both: [], only_a: [], only_b: [] };
    for (const { row, key } of a.rows) {
      const out = this.diffRow(row);
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
        groups.only_b.push({ out: this.diffRow(row), row });
      }
    }
    const sum = (side: Side): number => side.rows.reduce((total, r) => total + r.row.tokens, 0);
    const tokensA = sum(a);
    const tokensB = sum(b);
    const replaced = [this.replaced(a, b, 'a'), this.replaced(b, a, 'b')].filter(r => r !== null) as Record<string, unknown>[];
    const notes: string[] = [];
    if (!groups.both.length && a.rows.length && b.rows.length) {
      const shared = a.path.length && b.path.length && a.path[0] === b.path[0];
      notes.push('the two contexts share no message' + (shared ? '' : ' (the entries are on unrelated roots)'));
    }
    const preview = (row: ContextRow): string => cutText(row.preview ?? '', this.views.preview);
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
    result.nodes = { a: await this.node(ia), b: await this.node(ib) };
    return result;
  }

  // ------------------------------------------------------------------ context search

  /** Python's `text.casefold()`: each character lower-cased, except where the table says. */
  private fold(text: string): string {
    const table = this.views.fold;
    let out = '';
    for (const ch of text) {
      out += has(table, ch) ? table[ch] : ch.toLowerCase();
    }
    return out;
  }

  private spaces: Set<string> | null = null;

  /** Python's `" ".join(text.split())` (and `text.strip()` when empty). */
  private words(text: string): string {
    if (!this.spaces) {
      this.spaces = new Set(Array.from(this.views.space));
    }
    const words: string[] = [];
    let word = '';
    for (const ch of text) {
      if (this.spaces.has(ch)) {
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
  private async searched(row: ContextRow, source: number): Promise<string> {
    const t = row.v?.t;
    if (typeof t === 'string') {
      return t;
    }
    if (t === 1) {
      return row.preview ?? '';
    }
    if (Array.isArray(t)) {
      return this.views.texts![t[0]];
    }
    const entry = (await this.record(source)).e as Json;
    return searchableText(entry.message as Json);
  }

  /** diff._hits: where `needle` (folded unless case-sensitive) occurs in one side's messages. */
  private async hits(side: Side, needle: string, caseSensitive: boolean): Promise<Record<string, unknown>[]> {
    const hits: Record<string, unknown>[] = [];
    const width = codePoints(needle);
    for (let index = 0; index < side.rows.length; index++) {
      const { row, source } = side.rows[index];
      const text = await this.searched(row, source);
      const haystack = caseSensitive ? text : this.fold(text);
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
      const start = Math.max(0, at - this.views.snippet);
      const end = Math.min(chars.length, at + width + this.views.snippet);
      hits.push({ index, source_id: strOrNull(row.source_id), role: strOrNull(row.role), count, snippet: this.words(chars.slice(start, end).join('')) });
    }
    return hits;
  }

  /** compare_requests._search: the text in what the model sees at A and at B. */
  async contextSearch(args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const [ia, ib] = this.pair(args);
    const limit = this.limit(args);
    const query = args.query;
    if (typeof query !== 'string' || !this.words(query)) {
      throw new Error('type the text to look for in both contexts');
    }
    const caseSensitive = pyTruthy(args.case_sensitive);
    const needle = caseSensitive ? query : this.fold(query);
    const found: Record<string, unknown> = { text: query };
    for (const [name, index] of [['a', ia], ['b', ib]] as const) {
      const hits = await this.hits(await this.side(index), needle, caseSensitive);
      found[name] = hits.slice(0, limit);
      found[`in_${name}`] = hits.length > 0;
      found[`${name}_hits`] = hits.length;
      found[`${name}_count`] = hits.reduce((n, h) => n + (h.count as number), 0);
    }
    found.limit = limit;
    return found;
  }

  // ------------------------------------------------------------------ branch comparison

  /** Usage counters of an embedded usage object (views.py `_page_usage`). */
  private usageOf(value: unknown): (number | null)[] | null {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return null;
    }
    const number = (x: unknown): number | null => (x instanceof PyFloat ? Number(x.text) : typeof x === 'number' ? x : null);
    const usage = value as Record<string, unknown>;
    const out = this.views.usage_keys.map(key => number(usage[key]));
    const cost = usage.cost;
    out.push(cost !== null && typeof cost === 'object' && !Array.isArray(cost) ? number((cost as Record<string, unknown>).total) : null);
    return out.some(x => x !== null) ? out : null;
  }

  private async sideStats(segment: number[], leaf: number): Promise<Record<string, unknown>> {
    const tools = new Map<string, number>();
    const read = new Set<string>();
    const written = new Set<string>();
    const edited = new Set<string>();
    const usage = { input: 0, output: 0, cache_read: 0, cache_write: 0, cost: 0, records: 0 };
    const counters = ['input', 'output', 'cache_read', 'cache_write'] as const;
    const records = await Promise.all(segment.map(i => this.record(i)));
    const facts = records.map(r => (r.v ?? {}) as Record<string, unknown>);
    const omitted = new Set<string>();
    for (const v of facts) {
      if (typeof v.o === 'string') {
        omitted.add(v.o);
      }
    }
    const errors: Record<string, unknown>[] = [];
    let calls = 0;
    let aborted = 0;
    let toolResults = 0;
    let toolErrors = 0;
    let userMessages = 0;
    segment.forEach((index, k) => {
      const v = facts[k];
      const bits = this.facts(index);
      let numbers: (number | null)[] | null = null;
      const entry = records[k].e as Record<string, unknown> | undefined;
      if (v.u === 1) {
        numbers = this.usageOf((entry?.message as Record<string, unknown> | undefined)?.usage);
      } else if (v.u === 2) {
        numbers = this.usageOf(entry?.usage);
      } else if (Array.isArray(v.u)) {
        numbers = v.u as (number | null)[];
      }
      if (numbers) {
        counters.forEach((name, c) => {
          if (numbers![c] !== null) {
            usage[name] += numbers![c]!;
          }
        });
        if (numbers[4] !== null) {
          usage.cost += numbers[4];
        }
        usage.records += 1;
      }
      const role = bits & ROLE_MASK;
      if (role === ROLE_USER) {
        userMessages += 1;
      } else if (role === ROLE_ASSISTANT) {
        calls += 1;
      } else if (role === ROLE_TOOL_RESULT) {
        toolResults += 1;
      }
      if (bits & TOOL_ERROR) {
        toolErrors += 1;
      }
      const files = v.f as string[][] | undefined;
      if (files) {
        files[0].forEach(p => read.add(p));
        files[1].forEach(p => written.add(p));
        files[2].forEach(p => edited.add(p));
      }
      for (const name of (v.k as string[] | undefined) ?? []) {
        tools.set(name, (tools.get(name) ?? 0) + 1);
      }
      if (bits & ABORTED) {
        aborted += 1;
      }
      const error = v.x as [string | null, string | null, boolean, boolean] | undefined;
      if (error) {
        errors.push({ entry_id: error[0], error: error[1], overflow: error[2], retryable: error[3], omitted: error[0] !== null && omitted.has(error[0]) });
      }
    });
    // file_ops.compute_file_lists: modified = edited ∪ written, read leaves them out; both in
    // JavaScript's default order (js_sort_key).
    const modified = new Set<string>([...edited, ...written]);
    const readOnly = [...read].filter(p => !modified.has(p)).sort();
    const sortedTools = [...tools.entries()].sort((x, y) => y[1] - x[1] || pyCompare(x[0], y[0]));
    const leafRecord = await this.record(leaf);
    return {
      entries: segment.length,
      user_messages: userMessages,
      calls,
      tools: Object.fromEntries(sortedTools),
      tool_calls: sortedTools.reduce((n, [, c]) => n + c, 0),
      tool_results: toolResults,
      tool_errors: toolErrors,
      files_read: readOnly,
      files_modified: [...modified].sort(),
      tokens: {
        input: usage.input,
        output: usage.output,
        cache_read: usage.cache_read,
        cache_write: usage.cache_write,
        total: usage.input + usage.output + usage.cache_read + usage.cache_write
      },
      cost: usage.cost,
      usage_known: usage.records > 0,
      errors,
      error_count: errors.length,
      aborted,
      retries: errors.filter(e => e.omitted).length,
      context_tokens: leafRecord.c.s[2]
    };
  }

  private async segmentRows(ids: number[], limit: number): Promise<Record<string, unknown>[]> {
    const errorBit = 1 << (this.header as ExportHeader & { flags?: string[] }).flags!.indexOf('error');
    const rows: Record<string, unknown>[] = [];
    for (const index of ids.slice(0, limit)) {
      const id = this.flat.ids[index];
      if (id === null) {
        rows.push({ id: null, kind: 'unknown', text: '', error: false });
        continue;
      }
      rows.push({ id, kind: this.header.kinds[this.flat.kind[index]], text: await this.text(index), error: Boolean(this.flat.flags[index] & errorBit) });
    }
    return rows;
  }

  async compareBranches(args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const [ia, ib] = this.pair(args);
    const limit = this.limit(args);
    const pathA = this.path(ia);
    const pathB = this.path(ib);
    let shared = 0;
    while (shared < Math.min(pathA.length, pathB.length) && pathA[shared] === pathB[shared]) {
      shared++;
    }
    const common = shared ? pathA[shared - 1] : -1;
    const sideA = pathA.slice(shared);
    const sideB = pathB.slice(shared);
    const notes: string[] = [];
    if (common < 0) {
      notes.push('no common ancestor: the two entries are on unrelated roots (each side is its whole path)');
    } else if (!sideA.length && !sideB.length) {
      notes.push('the same entry on both sides: nothing diverges');
    } else if (!sideA.length) {
      notes.push("A comes before B on the same branch: A is the fork point, so A's side is empty and B's side is what followed A");
    } else if (!sideB.length) {
      notes.push("B comes before A on the same branch: B is the fork point, so B's side is empty and A's side is what followed B");
    }
    const aStats = await this.sideStats(sideA, ia);
    const bStats = await this.sideStats(sideB, ib);
    for (const [name, segment, stats] of [['A', sideA, aStats], ['B', sideB, bStats]] as const) {
      if (segment.length && !stats.usage_known) {
        notes.push(`${name}'s side has no recorded usage (no reply on it reported any): its tokens and cost are unknown, shown as 0`);
      }
    }
    const idsOf = (side: number[]): Set<string> => new Set(side.map(i => this.flat.ids[i]).filter((x): x is string => x !== null));
    const idsA = idsOf(sideA);
    const idsB = idsOf(sideB);
    const onA = new Set(sideA);
    const onB = new Set(sideB);
    const summaries: Record<string, unknown>[] = [];
    for (const [at, entryId, fromId, parentId, own] of this.views.summaries) {
      const left = fromId !== null ? (idsA.has(fromId) ? 'a' : idsB.has(fromId) ? 'b' : null) : null;
      const on = at >= 0 && onA.has(at) ? 'a' : at >= 0 && onB.has(at) ? 'b' : null;
      if (left === null && on === null) {
        continue;
      }
      const [text, truncated] = own ?? ((await this.record(at)).v as { s: [string, boolean] }).s;
      const summary: Record<string, unknown> = { entry_id: entryId, from_id: fromId, parent_id: parentId, left_side: left, on_side: on, summary: text };
      if (truncated) {
        summary.truncated = true;
      }
      summaries.push(summary);
    }
    const ids = (side: number[]): (string | null)[] => side.map(i => this.flat.ids[i]);
    return {
      leaf_a: args.a,
      leaf_b: args.b,
      common_ancestor: common >= 0 ? this.flat.ids[common] : null,
      a: ids(sideA).slice(0, limit),
      b: ids(sideB).slice(0, limit),
      a_stats: aStats,
      b_stats: bStats,
      summaries,
      notes,
      a_count: sideA.length,
      b_count: sideB.length,
      a_rows: await this.segmentRows(sideA, limit),
      b_rows: await this.segmentRows(sideB, limit),
      limit,
      nodes: { a: await this.node(ia), b: await this.node(ib), common: await this.node(common) }
    };
  }
}
