// Reading what pi_lab/export/data.py embeds: the PIX1 columns + header, and the entry chunks.

import type { FlatData } from './layout';

export interface ExportHeader {
  count: number;
  chunk: number;
  leaf_id: string | null;
  entry_count: number;
  session: Record<string, unknown>;
  gauge: Record<string, unknown>;
  settings: { context_window: number; reserve_tokens: number; keep_recent_tokens: number };
  ids: (string | null)[];
  labels: (string | null)[];
  label_times: (string | null)[];
  texts: string[];
  search: string[];
  columns: { name: string; dtype: string; offset: number; count: number }[];
  kinds: string[];
  /** Display and search texts, interleaved (data.py); split into `texts` and `search`. */
  text_search?: string[];
  /** data.py COPIED: the detail fields a record's `x` bits copy back from its entry. */
  copied?: string[];
  /** pi_lab/view/kinds.py FLAG_BITS: the flags column's bit names. */
  flags?: string[];
  /** pi_lab/export/views.py `views_header`: what the context views need (views.ts). */
  views?: import('./views').ViewsHeader;
  /** pi_lab.view.timeline_requests `timeline` at the export's leaf, when the view has it. */
  timeline?: Record<string, unknown> | null;
  /**
   * The session's notes when the export was made with them (pi_lab/view/notes.py
   * `notes_payload(..., coverage=True)`, `writable` false); `covered` maps each entry a note
   * covers to the tags of those notes ("" for a note without a tag), for the note filter.
   */
  notes?: (import('../core/notes').NotesPayload & { covered?: Record<string, string[]> }) | null;
}

/** One flattened entry's embedded record: detail, full detail (when it differs), context. */
export interface EntryRecord {
  /** The full detail (payload.entry_payload with full=True); `raw` is null when `e` is sent. */
  f?: Record<string, unknown>;
  /** How the preview detail differs: [path, value], or [path, null, n]: the first n code points
   * (of a string, or of a cut piece's text, which is then marked truncated). */
  p?: [(string | number)[], unknown, number?][];
  /** The entry, from which the raw JSON text is rebuilt (data.py `_stringify_safe`). */
  e?: unknown;
  /** Bit k: detail field COPIED[k] is the entry's own value, sent once in `e` (data.py `_drop_copied`). */
  x?: number;
  /** data.py K_*: the detail's kind, tokens and children are the columns'. */
  k?: number;
  /** pi_lab/export/views.py entry_facts: the entry's share of the context views. */
  v?: Record<string, unknown>;
  /** pi_lab/export/context.py: the parent, the rows added to its rows (m) or a diff of them (d). */
  c: { b: number; m?: unknown[]; d?: unknown[]; s: unknown[] };
}

// pi_lab/export/html.py ALPHABET: printable ASCII without " & ' < > / \\, the first 85.
const ALPHABET = Array.from({ length: 94 }, (_, k) => String.fromCharCode(33 + k))
  .filter(c => !'"&\'<>/\\'.includes(c))
  .slice(0, 85)
  .join('');
const DIGIT = new Int16Array(128).fill(-1);
for (let k = 0; k < ALPHABET.length; k++) {
  DIGIT[ALPHABET.charCodeAt(k)] = k;
}

/** Base85 (Python's b85encode, over ALPHABET): 5 characters per 4 bytes, a short last group. */
export function base85Bytes(text: string): Uint8Array<ArrayBuffer> {
  const groups = Math.floor(text.length / 5);
  const rest = text.length % 5;
  const out = new Uint8Array(groups * 4 + (rest ? rest - 1 : 0));
  let o = 0;
  for (let g = 0; g <= groups; g++) {
    const start = g * 5;
    const size = g < groups ? 5 : rest;
    if (size === 0) {
      break;
    }
    let value = 0;
    for (let k = 0; k < 5; k++) {
      const d = k < size ? DIGIT[text.charCodeAt(start + k)] : 84;
      if (d < 0) {
        throw new Error('corrupt export data');
      }
      value = value * 85 + d;
    }
    const bytes = size === 5 ? 4 : size - 1;
    for (let k = 0; k < bytes; k++) {
      out[o++] = Math.floor(value / 2 ** (24 - 8 * k)) & 0xff;
    }
  }
  return out;
}

// pi_lab/export/html.py pack7: DEL, then 7 bits per character; the 7-bit values 0, 13 and 60
// (NUL, CR and "<", which an HTML parser would change) are written as U+0100..U+0102.
const SEVEN_BIT_MARK = '\x7f';
const SEVEN_ESCAPES: Record<number, number> = { 0x100: 0, 0x101: 13, 0x102: 60 };

export function sevenBits(text: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(Math.floor((text.length * 7) / 8));
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (let k = 0; k < text.length; k++) {
    let v = text.charCodeAt(k);
    if (v > 0x7f) {
      v = SEVEN_ESCAPES[v];
      if (v === undefined) {
        throw new Error('corrupt export data');
      }
    }
    acc = ((acc << 7) | v) & 0x7fff; // at most 14 bits are ever pending
    bits += 7;
    if (bits >= 8) {
      bits -= 8;
      if (o < out.length) {
        out[o++] = (acc >> bits) & 0xff;
      }
    }
  }
  return out;
}

/**
 * A packed part as the page holds it, ready for `inflate`. White space before it is dropped;
 * after it only for base85 (a snapshot, whose host may indent its HTML): 7-bit text can end in
 * a tab, a newline or a space that are data (html.py writes it right up to `</script>`), and
 * `.trim()` cut them, which broke the gzip stream of one export in about twenty.
 */
export function packedPart(text: string): string {
  const start = text.trimStart();
  return start.startsWith(SEVEN_BIT_MARK) ? start : start.trimEnd();
}

/** gunzip a packed part (pack7 or base85) with the browser's (or node's) DecompressionStream. */
export async function inflate(text: string): Promise<ArrayBuffer> {
  const bytes = text.startsWith(SEVEN_BIT_MARK) ? sevenBits(text.slice(1)) : base85Bytes(text);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).arrayBuffer();
}

const TYPED: Record<string, new (buffer: ArrayBuffer) => ArrayLike<number>> = {
  u32: Uint32Array,
  i32: Int32Array,
  u16: Uint16Array,
  u8: Uint8Array
};
const BYTES: Record<string, number> = { u32: 4, i32: 4, u16: 2, u8: 1 };

export function decodeMain(buffer: ArrayBuffer): { header: ExportHeader; flat: FlatData } {
  const bytes = new Uint8Array(buffer);
  if (String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]) !== 'PIX1') {
    throw new Error('not a pi_lab export');
  }
  const length = new DataView(buffer).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length))) as ExportHeader;
  if (header.text_search) {
    // data.py writes each row's display text beside its search text.
    const pairs = header.text_search;
    header.texts = [];
    header.search = [];
    for (let k = 0; k + 1 < pairs.length; k += 2) {
      header.texts.push(pairs[k]);
      header.search.push(pairs[k + 1]);
    }
  }
  const col: Record<string, ArrayLike<number>> = {};
  for (const spec of header.columns) {
    const copy = bytes.slice(spec.offset, spec.offset + spec.count * BYTES[spec.dtype]);
    col[spec.name] = new TYPED[spec.dtype](copy.buffer);
  }
  const flat: FlatData = {
    count: header.count,
    parent: col.parent as Int32Array,
    category: col.category as Uint8Array,
    kind: col.kind as Uint8Array,
    tokens: col.tokens as Uint32Array,
    entry: col.entry as Uint32Array,
    flags: col.flags as Uint16Array,
    facts: col.facts as Uint8Array | undefined,
    ids: header.ids,
    labels: header.labels,
    search: header.search,
    leafId: header.leaf_id
  };
  return { header, flat };
}

/** Undo data.py `_encode_chunk`: `{"$s": k}` is shared string k, a key `$$x` is `$x`. Iterative. */
export function unshare(chunk: { s: string[]; r: unknown[] }): EntryRecord[] {
  const strings = chunk.s;
  const cuts: Record<string, unknown>[] = [];
  const root: unknown[] = [chunk.r];
  const stack: [Record<string | number, unknown>, string | number][] = [[root as unknown as Record<number, unknown>, 0]];
  while (stack.length) {
    const [holder, key] = stack.pop()!;
    const value = holder[key];
    if (Array.isArray(value)) {
      for (let k = 0; k < value.length; k++) {
        stack.push([value as unknown as Record<number, unknown>, k]);
      }
    } else if (value !== null && typeof value === 'object') {
      const object = value as Record<string, unknown>;
      const keys = Object.keys(object);
      if (keys.length === 1 && keys[0] === '$s' && typeof object.$s === 'number') {
        holder[key] = strings[object.$s];
        continue;
      }
      if (keys.length === 1 && keys[0] === '$f' && typeof object.$f === 'string') {
        holder[key] = new PyFloat(object.$f);
        continue;
      }
      if (keys.length === 1 && keys[0] === '$o') {
        holder[key] = OWN;
        continue;
      }
      if (keys.length === 1 && keys[0] === '$i') {
        holder[key] = object.$i === 0 ? SELF_ID : PARENT_ID;
        continue;
      }
      const out: Record<string, unknown> = {};
      for (const k of keys) {
        if (k === '$c') {
          cuts.push(out); // data.py _Cut: its length and truncated once its text is resolved
          continue;
        }
        out[k.startsWith('$$') ? k.slice(1) : k] = object[k];
      }
      holder[key] = out;
      for (const k of Object.keys(out)) {
        stack.push([out, k]);
      }
    }
  }
  for (const piece of cuts) {
    piece.length = codePoints(piece.text as string);
    piece.truncated = false;
  }
  return root[0] as EntryRecord[];
}

/** data.py _Own: a context row's source is the record's own entry. */
const OWN = Object.freeze({ own: true });
/** data.py _IdRef: the entry's own id and its parent's, from the columns. */
const SELF_ID = Object.freeze({ self: true });
const PARENT_ID = Object.freeze({ parent: true });
/** data.py K_KIND, K_TOKENS, K_CHILDREN. */
const K_KIND = 1;
const K_TOKENS = 2;
const K_CHILDREN = 4;

/** What a record leaves to the columns of the flattened tree. */
export interface Columns {
  ids: (string | null)[];
  parent: ArrayLike<number>;
  kind: ArrayLike<number>;
  tokens: ArrayLike<number>;
  kinds: string[];
}

function codePoints(text: string): number {
  let length = 0;
  for (const _ of text) {
    length++;
  }
  return length;
}

/** A float of an entry with its Python JSON text (data.py `_Float`). */
export class PyFloat {
  constructor(readonly text: string) {}
}

/**
 * Python's `json.dumps(value, ensure_ascii=False, indent=2)` (pi_lab/view/detail.py `_pretty`)
 * for what data.py `_printable_entry` lets through: JSON.stringify's format, with floats printed
 * from their Python text. Iterative: entries can nest deeply.
 */
export function pythonJson(value: unknown): string {
  const out: string[] = [];
  // Work items: a value to print at an indent, or a literal piece of text.
  const stack: (string | [unknown, string])[] = [[value, '']];
  while (stack.length) {
    const item = stack.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const [v, indent] = item;
    if (v instanceof PyFloat) {
      out.push(v.text);
    } else if (Array.isArray(v)) {
      if (!v.length) {
        out.push('[]');
        continue;
      }
      const inner = `${indent}  `;
      stack.push(`\n${indent}]`);
      for (let k = v.length - 1; k >= 0; k--) {
        stack.push([v[k], inner]);
        stack.push(k === 0 ? `[\n${inner}` : `,\n${inner}`);
      }
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      if (!keys.length) {
        out.push('{}');
        continue;
      }
      const inner = `${indent}  `;
      stack.push(`\n${indent}}`);
      for (let k = keys.length - 1; k >= 0; k--) {
        stack.push([(v as Record<string, unknown>)[keys[k]], inner]);
        stack.push(`${k === 0 ? '{' : ','}\n${inner}${JSON.stringify(keys[k])}: `);
      }
    } else {
      out.push(JSON.stringify(v));
    }
  }
  return out.join('');
}

/** ``value`` with its floats as numbers again (a detail holds plain JSON values). Iterative. */
export function plain(value: unknown): unknown {
  const root: unknown[] = [value];
  const stack: [Record<string | number, unknown>, string | number][] = [[root as unknown as Record<number, unknown>, 0]];
  while (stack.length) {
    const [holder, key] = stack.pop()!;
    const v = holder[key];
    if (v instanceof PyFloat) {
      holder[key] = Number(v.text);
    } else if (Array.isArray(v)) {
      const copy = v.slice();
      holder[key] = copy;
      for (let k = 0; k < copy.length; k++) {
        stack.push([copy as unknown as Record<number, unknown>, k]);
      }
    } else if (v !== null && typeof v === 'object') {
      const copy = { ...(v as Record<string, unknown>) };
      holder[key] = copy;
      for (const k of Object.keys(copy)) {
        stack.push([copy, k]);
      }
    }
  }
  return root[0];
}

/** data.py COPIED: where each copied detail field lies in the entry. */
const COPIED_PATHS: Record<string, string[]> = {
  id: ['id'],
  type: ['type'],
  parent_id: ['parentId'],
  timestamp: ['timestamp'],
  role: ['message', 'role'],
  stop_reason: ['message', 'stopReason'],
  error_message: ['message', 'errorMessage'],
  model: ['message', 'model'],
  provider: ['message', 'provider'],
  usage: ['message', 'usage'],
  api: ['message', 'api']
};

/** Rebuild what a record's detail left to its entry: the copied fields and the raw JSON text,
 * and the context rows' own entry id. */
function complete(record: EntryRecord, copied: string[], index: number, columns: Columns | null, kids: () => number[][]): EntryRecord {
  const id = columns ? columns.ids[index] ?? null : null;
  for (const row of [...(record.c.m ?? []), ...(record.c.d ?? [])]) {
    if (row !== null && typeof row === 'object' && !Array.isArray(row) && (row as Record<string, unknown>).source_id === OWN) {
      (row as Record<string, unknown>).source_id = id;
    }
  }
  const entry = record.e as Record<string, unknown> | undefined;
  if (entry !== null && typeof entry === 'object' && columns) {
    for (const key of Object.keys(entry)) {
      if (entry[key] === SELF_ID) {
        entry[key] = id;
      } else if (entry[key] === PARENT_ID) {
        entry[key] = columns.ids[columns.parent[index]];
      }
    }
  }
  if (record.f && record.k && columns) {
    if (record.k & K_KIND) {
      record.f.kind = columns.kinds[columns.kind[index]];
    }
    if (record.k & K_TOKENS) {
      record.f.tokens = columns.tokens[index];
    }
    if (record.k & K_CHILDREN) {
      record.f.children = (kids()[index] ?? []).map(j => columns.ids[j]);
    }
  }
  if (record.f && record.e !== undefined && record.x) {
    copied.forEach((name, k) => {
      if (record.x! & (1 << k)) {
        let value: unknown = record.e;
        for (const key of COPIED_PATHS[name]) {
          value = (value as Record<string, unknown>)[key];
        }
        record.f![name] = plain(value);
      }
    });
  }
  if (record.f && record.e !== undefined && record.f.raw === null) {
    const text = pythonJson(record.e);
    record.f.raw = { text, length: codePoints(text), truncated: false };
  }
  return record;
}

/** The preview detail: the full one with the patches of pi_lab/export/data.py `_short_patch`. */
export function previewDetail(record: EntryRecord): Record<string, unknown> | undefined {
  if (!record.f || !record.p || !record.p.length) {
    return record.f;
  }
  const copy = JSON.parse(JSON.stringify(record.f)) as Record<string, unknown>;
  for (const [path, value, cut] of record.p) {
    if (!path.length) {
      return value as Record<string, unknown>;
    }
    let holder = copy as Record<string | number, unknown>;
    for (let k = 0; k < path.length - 1; k++) {
      holder = holder[path[k]] as Record<string | number, unknown>;
    }
    const key = path[path.length - 1];
    if (typeof cut === 'number' && typeof holder[key] === 'string') {
      holder[key] = Array.from(holder[key] as string).slice(0, cut).join('');
    } else if (typeof cut === 'number') {
      const piece = holder[key] as { text: string };
      // Python slices code points, not UTF-16 units.
      holder[key] = { ...piece, text: Array.from(piece.text).slice(0, cut).join(''), truncated: true };
    } else {
      holder[key] = value;
    }
  }
  return copy;
}

export const NOT_EMBEDDED =
  'not embedded in this snapshot (size limit): export the whole session with `pi-lab export FILE -o out.html`, or run the notebook';

/** The chunks of entry records, inflated on first use and kept. */
export class ChunkStore {
  private readonly cache = new Map<number, Promise<EntryRecord[]>>();
  /**
   * `text` is the packed chunks, or a promise of them: the page puts them after its script, so
   * the first rows are drawn while the browser is still reading them.
   */
  constructor(
    private readonly text: string | Promise<string>,
    private readonly offsets: number[],
    private readonly size: number,
    private readonly copied: string[] = [],
    private readonly columns: Columns | null = null
  ) {}

  /** Each flattened entry's children, in flat order (built on first use). */
  private kids = (): number[][] => {
    if (!this.children) {
      const columns = this.columns!;
      this.children = Array.from({ length: columns.ids.length }, () => []);
      for (let j = 0; j < columns.ids.length; j++) {
        const p = columns.parent[j];
        if (p >= 0) {
          this.children[p].push(j);
        }
      }
    }
    return this.children;
  };

  private children: number[][] | null = null;

  record(index: number): Promise<EntryRecord> {
    const chunk = Math.floor(index / this.size);
    if (chunk >= this.offsets.length - 1) {
      // A notebook snapshot embeds the first chunks only (pi_lab/widget/snapshot.py).
      return Promise.reject(new Error(NOT_EMBEDDED));
    }
    let found = this.cache.get(chunk);
    if (!found) {
      found = Promise.resolve(this.text)
        .then(text => inflate(text.slice(this.offsets[chunk], this.offsets[chunk + 1])))
        .then(buffer =>
          unshare(JSON.parse(new TextDecoder().decode(buffer))).map((r, k) =>
            complete(r, this.copied, chunk * this.size + k, this.columns, this.kids)
          )
        );
      this.cache.set(chunk, found);
    }
    return found.then(records => records[index - chunk * this.size]);
  }
}
