// Rows: the binary row columns sent by the kernel (pi_lab/view/columns.py), kept up to date
// by deltas, plus pi's /tree prefix drawn from them.

import { FLAG_BITS, KIND_NAMES } from './contract';
import type { DeltaMessage, RowText } from './transport';

// Entry kinds and row flags come from pi_lab/view/contract.py through the generated contract.ts;
// re-exported here for the modules that read rows.
export { FLAG_BITS, KIND_NAMES };
export type KindName = (typeof KIND_NAMES)[number];

export type FlagName = (typeof FLAG_BITS)[number];
export const FLAG = Object.fromEntries(FLAG_BITS.map((name, bit) => [name, 1 << bit])) as Record<FlagName, number>;

/**
 * The tokens column's "not estimated yet" value (pi_lab/view/columns.py TOKENS_UNKNOWN): the
 * kernel estimates a row when its text is asked for and sends the estimate with the text
 * (RowText.tokens), which setText writes into the column. Real estimates stay below it.
 */
export const TOKENS_UNKNOWN = 0xffffffff;

export interface StructureHeader {
  version: number;
  row_count: number;
  kinds: string[];
  flags: string[];
  leaf_id: string | null;
  leaf_row: number;
  anchor_row: number;
  selected_row: number;
  selected_id: string | null;
  filter_mode: string;
  search: string;
  multiple_roots: boolean;
  entry_count: number;
  session_id?: string;
  session_file?: string | null;
  session_name?: string | null;
  columns: { name: string; dtype: string; offset: number; count: number }[];
}

type Column = Uint32Array | Int32Array | Uint16Array | Uint8Array;
const COLUMN_NAMES = ['entry', 'parent', 'indent', 'flags', 'kind', 'tokens', 'gutter'] as const;
const CONSTRUCTORS: Record<string, { new (n: number): Column; BYTES_PER_ELEMENT: number }> = {
  u32: Uint32Array,
  i32: Int32Array,
  u16: Uint16Array,
  u8: Uint8Array
};

function asBytes(data: DataView | ArrayBuffer | Uint8Array): Uint8Array {
  if (data instanceof Uint8Array) {
    return data;
  }
  if (data instanceof ArrayBuffer) {
    return new Uint8Array(data);
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Header of a structure blob without decoding the columns. */
export function readHeader(data: DataView | ArrayBuffer | Uint8Array): StructureHeader | null {
  const bytes = asBytes(data);
  if (bytes.length < 8 || String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]) !== 'PIR1') {
    return null;
  }
  const length = bytes[4] | (bytes[5] << 8) | (bytes[6] << 16) | (bytes[7] << 24);
  return JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length))) as StructureHeader;
}

/**
 * The visible rows as growable typed columns (one item per row), the gutter prefix tree and
 * a cache of row texts fetched on demand. Mirrors RowColumns/GutterTable in Python.
 */
export class RowColumns {
  header: StructureHeader;
  version: number;
  length: number;
  entry!: Uint32Array;
  parent!: Int32Array;
  indent!: Uint16Array;
  flags!: Uint16Array;
  kind!: Uint8Array;
  tokens!: Uint32Array;
  gutter!: Uint32Array;
  gutterParent: number[];
  gutterPosition: number[];
  gutterShow: number[];
  texts: (RowText | undefined)[];
  leafRow: number;

  constructor(data: DataView | ArrayBuffer | Uint8Array) {
    const header = readHeader(data);
    if (header === null) {
      throw new Error('not a pi_lab row structure');
    }
    const bytes = asBytes(data);
    const raw: Record<string, number[] | Column> = {};
    for (const spec of header.columns) {
      const make = CONSTRUCTORS[spec.dtype];
      const start = spec.offset;
      const end = start + spec.count * make.BYTES_PER_ELEMENT;
      // Copy: the blob's own offset inside its buffer need not be aligned for a typed view.
      const copy = bytes.slice(start, end);
      raw[spec.name] = new (make as unknown as { new (b: ArrayBuffer): Column })(copy.buffer);
    }
    this.header = header;
    this.version = header.version;
    this.length = header.row_count;
    const capacity = Math.max(16, Math.ceil(this.length * 1.25));
    this.entry = grow(new Uint32Array(capacity), raw.entry as Column) as Uint32Array;
    this.parent = grow(new Int32Array(capacity), raw.parent as Column) as Int32Array;
    this.indent = grow(new Uint16Array(capacity), raw.indent as Column) as Uint16Array;
    this.flags = grow(new Uint16Array(capacity), raw.flags as Column) as Uint16Array;
    this.kind = grow(new Uint8Array(capacity), raw.kind as Column) as Uint8Array;
    this.tokens = grow(new Uint32Array(capacity), raw.tokens as Column) as Uint32Array;
    this.gutter = grow(new Uint32Array(capacity), raw.gutter as Column) as Uint32Array;
    this.gutterParent = Array.from(raw.gutter_parent as Column);
    this.gutterPosition = Array.from(raw.gutter_position as Column);
    this.gutterShow = Array.from(raw.gutter_show as Column);
    this.texts = new Array(this.length);
    this.leafRow = header.leaf_row;
  }

  has(row: number, flag: FlagName): boolean {
    return (this.flags[row] & FLAG[flag]) !== 0;
  }

  kindName(row: number): KindName {
    return KIND_NAMES[this.kind[row]] ?? 'unknown';
  }

  /** The row's gutter list as (position, show) pairs, outermost first. */
  gutters(row: number): [number, boolean][] {
    const out: [number, boolean][] = [];
    let id = this.gutter[row];
    while (id > 0) {
      out.push([this.gutterPosition[id], this.gutterShow[id] === 1]);
      id = this.gutterParent[id];
    }
    return out.reverse();
  }

  private ensureCapacity(n: number): void {
    if (n <= this.entry.length) {
      return;
    }
    const size = Math.max(n, this.entry.length * 2);
    this.entry = grow(new Uint32Array(size), this.entry.subarray(0, this.length)) as Uint32Array;
    this.parent = grow(new Int32Array(size), this.parent.subarray(0, this.length)) as Int32Array;
    this.indent = grow(new Uint16Array(size), this.indent.subarray(0, this.length)) as Uint16Array;
    this.flags = grow(new Uint16Array(size), this.flags.subarray(0, this.length)) as Uint16Array;
    this.kind = grow(new Uint8Array(size), this.kind.subarray(0, this.length)) as Uint8Array;
    this.tokens = grow(new Uint32Array(size), this.tokens.subarray(0, this.length)) as Uint32Array;
    this.gutter = grow(new Uint32Array(size), this.gutter.subarray(0, this.length)) as Uint32Array;
  }

  private columns(): Column[] {
    return [this.entry, this.parent, this.indent, this.flags, this.kind, this.tokens, this.gutter];
  }

  private write(row: number, values: number[]): void {
    const cols = this.columns();
    for (let c = 0; c < COLUMN_NAMES.length; c++) {
      cols[c][row] = values[c];
    }
  }

  insert(row: number, values: number[], text: RowText): void {
    this.ensureCapacity(this.length + 1);
    for (const col of this.columns()) {
      col.copyWithin(row + 1, row, this.length);
    }
    this.length += 1;
    const parent = this.parent;
    for (let r = row + 1; r < this.length; r++) {
      if (parent[r] >= row) {
        parent[r] += 1;
      }
    }
    this.write(row, values);
    this.texts.splice(row, 0, undefined);
    this.setText(row, text);
  }

  /** A row's text from the kernel, with the estimate it carries (older kernels send none). */
  setText(row: number, text: RowText): void {
    this.texts[row] = text;
    if (typeof text.tokens === 'number' && text.tokens >= 0 && text.tokens < TOKENS_UNKNOWN) {
      this.tokens[row] = text.tokens;
    }
  }

  /** The row's estimate, or null while the kernel has not sent it (nothing is drawn then). */
  tokenCount(row: number): number | null {
    const value = this.tokens[row];
    return value === TOKENS_UNKNOWN ? null : value;
  }

  remove(row: number): void {
    for (const col of this.columns()) {
      col.copyWithin(row, row + 1, this.length);
    }
    this.length -= 1;
    const parent = this.parent;
    for (let r = row; r < this.length; r++) {
      if (parent[r] > row) {
        parent[r] -= 1;
      }
    }
    this.texts.splice(row, 1);
  }

  /**
   * Apply a delta. Returns false (and changes nothing) when it does not start at this version;
   * the caller then asks for the whole structure again.
   */
  apply(delta: DeltaMessage, onRowShift?: (row: number, by: number) => void): boolean {
    if (delta.from !== this.version || delta.gutter_base !== this.gutterParent.length) {
      return false;
    }
    for (const [parent, position, show] of delta.gutters) {
      this.gutterParent.push(parent);
      this.gutterPosition.push(position);
      this.gutterShow.push(show);
    }
    for (const op of delta.ops) {
      switch (op.op) {
        case 'flags':
          this.flags[op.row] = op.flags;
          break;
        case 'insert':
          this.insert(op.row, op.values, op.text);
          onRowShift?.(op.row, 1);
          break;
        case 'replace':
          this.write(op.row, op.values);
          this.setText(op.row, op.text);
          break;
        case 'remove':
          this.remove(op.row);
          onRowShift?.(op.row, -1);
          break;
        case 'text':
          this.setText(op.row, op.text);
          break;
      }
    }
    this.version = delta.to;
    this.leafRow = delta.leaf_row;
    return true;
  }
}

function grow(target: Column, source: ArrayLike<number>): Column {
  target.set(source as ArrayLike<number>);
  return target;
}

/** At most this many levels of the prefix are drawn; deeper rows show a depth badge instead. */
export const MAX_PREFIX_LEVELS = 6;

export interface Prefix {
  /** Levels elided on the left (0 when the whole prefix is drawn). */
  elided: number;
  text: string;
}

/**
 * pi's /tree prefix for a row (tree-and-context.md §13.4): three columns per level, `│` for an
 * open gutter, `├`/`└` plus a fold glyph at the connector level. Deep rows keep only the
 * innermost MAX_PREFIX_LEVELS levels so their text stays in view at any branch depth.
 */
export function rowPrefix(cols: RowColumns, row: number, maxLevels = MAX_PREFIX_LEVELS): Prefix {
  const levels = cols.indent[row];
  if (levels <= 0) {
    return { elided: 0, text: '' };
  }
  const open = new Map<number, boolean>();
  for (const [position, show] of cols.gutters(row)) {
    if (!open.has(position)) {
      open.set(position, show);
    }
  }
  const connector = cols.has(row, 'show_connector') && !cols.has(row, 'is_virtual_root_child');
  const first = Math.max(0, levels - maxLevels);
  let text = '';
  for (let level = first; level < levels; level++) {
    const gutter = open.get(level);
    if (gutter !== undefined) {
      text += gutter ? '│  ' : '   ';
    } else if (connector && level === levels - 1) {
      const glyph = cols.has(row, 'folded') ? '⊞' : cols.has(row, 'foldable') ? '⊟' : '─';
      text += (cols.has(row, 'is_last') ? '└' : '├') + glyph + ' ';
    } else {
      text += '   ';
    }
  }
  return { elided: first, text };
}

/** The row index of the nearest segment start above `row` (pi's fold/up jump). */
export function segmentStartUp(cols: RowColumns, row: number, childCount: (r: number) => number): number {
  let current = row;
  for (;;) {
    const parent = cols.parent[current];
    if (parent < 0) {
      return current;
    }
    if (childCount(parent) > 1 && current < row) {
      return current;
    }
    current = parent;
  }
}

/** Follow single visible children down (pi's unfold/down jump). */
export function segmentStartDown(cols: RowColumns, row: number, childCount: (r: number) => number): number {
  let current = row;
  for (;;) {
    const children = childCount(current);
    if (children === 0) {
      return current;
    }
    if (children > 1) {
      return current + 1;
    }
    current += 1;
  }
}

/** Number of visible children of `row` (rows are in pre-order: children follow their parent). */
export function childCount(cols: RowColumns, row: number): number {
  if (!cols.has(row, 'has_children')) {
    return 0;
  }
  let count = 0;
  for (let r = row + 1; r < cols.length; r++) {
    const p = cols.parent[r];
    if (p === row) {
      count += 1;
    } else if (p < row) {
      break; // left the subtree
    }
  }
  return count;
}
