// pi's /tree rows for a filter, search and folds, computed in the page from the flattened tree
// an export embeds. A port of pi_lab/session/navigation.py `_visible_rows` (pi §13.1–13.3) plus
// the row columns of pi_lab/view/rows.py `RowState.layout`, encoded as the same PIR1 blob
// (pi_lab/view/columns.py). tests/export/layout_check.ts compares the two on real sessions.

import { FILTER_CATEGORIES } from '../core/contract';
import { searchTokens } from '../core/dom';
import { FLAG } from '../core/row';
import type { FilterMode } from '../core/transport';

/** The flattened tree (pi_lab/export/data.py): one item per entry, in pi's display order. */
export interface FlatData {
  count: number;
  parent: Int32Array;
  category: Uint8Array;
  kind: Uint8Array;
  tokens: Uint32Array;
  entry: Uint32Array;
  /** The flags that do not depend on the layout (on path, label, context marks, error). */
  flags: Uint16Array;
  /** pi_lab/export/views.py FACT_BITS (absent in exports made before the context views). */
  facts?: Uint8Array;
  ids: (string | null)[];
  labels: (string | null)[];
  search: string[];
  leafId: string | null;
}

// Filter categories (pi_lab/view/contract.py FILTER_CATEGORIES, through contract.ts); which
// categories each mode shows is pi_lab/session/flatten.py _MODE_CATEGORIES.
const { usage: CAT_USAGE, tool_only: CAT_TOOL_ONLY, settings: CAT_SETTINGS, tool_result: CAT_TOOL_RESULT, user: CAT_USER, other: CAT_OTHER } =
  FILTER_CATEGORIES;
const MODE_CATEGORIES: Record<Exclude<FilterMode, 'labeled-only'>, number[]> = {
  default: [CAT_TOOL_ONLY, CAT_TOOL_RESULT, CAT_USER, CAT_OTHER],
  'no-tools': [CAT_TOOL_ONLY, CAT_USER, CAT_OTHER],
  'user-only': [CAT_USER],
  all: [CAT_TOOL_ONLY, CAT_SETTINGS, CAT_TOOL_RESULT, CAT_USER, CAT_OTHER]
};

export interface Layout {
  /** Flat index of each row. */
  rowIndex: Int32Array;
  entry: Uint32Array;
  parent: Int32Array;
  indent: Uint16Array;
  flags: Uint16Array;
  kind: Uint8Array;
  tokens: Uint32Array;
  gutter: Uint32Array;
  gutterParent: number[];
  gutterPosition: number[];
  gutterShow: number[];
  multipleRoots: boolean;
  /** Row of each flat index, -1 when hidden. */
  rowOf: Int32Array;
  leafRow: number;
  anchorRow: number;
}

// The words of a query are the viewer core's (the rows mark the same words).
export { searchTokens };

/**
 * `noted`: the note filter (flatten.py `keep_ids`), one byte per flat entry (1: a note the filter
 * keeps covers it), or null when the filter is off. It narrows what the mode keeps, as a search does.
 */
export function layoutRows(flat: FlatData, mode: FilterMode, search: string, folded: Iterable<string>, noted: Uint8Array | null = null): Layout {
  const { count, parent: parents, category, ids, labels } = flat;
  const leaf = flat.leafId;
  const foldedIds = new Set(folded);
  const tokens = search ? searchTokens(search) : [];

  const keep = new Uint8Array(count);
  if (mode === 'labeled-only') {
    for (let i = 0; i < count; i++) {
      if (labels[i] !== null && category[i] !== CAT_USAGE) {
        keep[i] = 1;
      }
    }
  } else {
    const accepted = new Uint8Array(8);
    for (const c of MODE_CATEGORIES[mode]) {
      accepted[c] = 1;
    }
    for (let i = 0; i < count; i++) {
      keep[i] = accepted[category[i]];
    }
  }
  for (let i = 0; i < count; i++) {
    if (category[i] === CAT_TOOL_ONLY && (leaf === null || ids[i] !== leaf)) {
      keep[i] = 0;
    }
  }
  if (noted) {
    for (let i = 0; i < count; i++) {
      if (!noted[i]) {
        keep[i] = 0;
      }
    }
  }
  if (tokens.length) {
    for (let i = 0; i < count; i++) {
      if (keep[i]) {
        const text = flat.search[i];
        for (const token of tokens) {
          if (!text.includes(token)) {
            keep[i] = 0;
            break;
          }
        }
      }
    }
  }
  if (foldedIds.size) {
    // Descendants of a folded entry (through the real parent chain) disappear.
    const hidden = new Uint8Array(count);
    for (let i = 0; i < count; i++) {
      const p = parents[i];
      if (p >= 0) {
        const pid = ids[p];
        if (hidden[p] || (pid !== null && foldedIds.has(pid))) {
          hidden[i] = 1;
          keep[i] = 0;
        }
      }
    }
  }

  // Re-attach every kept entry to its nearest kept ancestor (§13.3); flat order is pre-order.
  const nearest = new Int32Array(count);
  const rowOf = new Int32Array(count).fill(-1);
  const rowIndexList: number[] = [];
  const rowParentList: number[] = [];
  for (let i = 0; i < count; i++) {
    const p = parents[i];
    const above = p >= 0 ? nearest[p] : -1;
    if (keep[i]) {
      nearest[i] = rowIndexList.length;
      rowOf[i] = rowIndexList.length;
      rowIndexList.push(i);
      rowParentList.push(above);
    } else {
      nearest[i] = above;
    }
  }
  const size = rowIndexList.length;
  const childCount = new Int32Array(size);
  const lastChild = new Int32Array(size).fill(-1);
  let roots = 0;
  let lastRoot = -1;
  for (let r = 0; r < size; r++) {
    const p = rowParentList[r];
    if (p < 0) {
      roots += 1;
      lastRoot = r;
    } else {
      childCount[p] += 1;
      lastChild[p] = r;
    }
  }

  // Gutter lists as a prefix tree (columns.GutterTable): list 0 is the empty list.
  const gutterParent: number[] = [-1];
  const gutterPosition: number[] = [0];
  const gutterShow: number[] = [0];
  const gutterIds = new Map<string, number>();
  const extend = (base: number, position: number, show: boolean): number => {
    const key = `${base},${position},${show ? 1 : 0}`;
    let id = gutterIds.get(key);
    if (id === undefined) {
      id = gutterParent.length;
      gutterParent.push(base);
      gutterPosition.push(position);
      gutterShow.push(show ? 1 : 0);
      gutterIds.set(key, id);
    }
    return id;
  };

  const multipleRoots = roots > 1;
  const indents = new Int32Array(size);
  const branched = new Uint8Array(size);
  const childGutters = new Int32Array(size);
  const rowIndex = Int32Array.from(rowIndexList);
  const out = {
    entry: new Uint32Array(size),
    parent: Int32Array.from(rowParentList),
    indent: new Uint16Array(size),
    flags: new Uint16Array(size),
    kind: new Uint8Array(size),
    tokens: new Uint32Array(size),
    gutter: new Uint32Array(size)
  };
  const rootIndent = multipleRoots ? 1 : 0;
  for (let r = 0; r < size; r++) {
    const i = rowIndex[r];
    const p = rowParentList[r];
    let indent: number;
    let showConnector: boolean;
    let justBranched: boolean;
    let virtual: boolean;
    let isLast: boolean;
    let gutters: number;
    let foldable: boolean;
    if (p < 0) {
      indent = rootIndent;
      justBranched = showConnector = virtual = multipleRoots;
      isLast = r === lastRoot;
      gutters = 0;
      foldable = childCount[r] > 0;
    } else {
      const many = childCount[p] > 1;
      const parentIndent = indents[p];
      indent = many || (branched[p] && parentIndent > 0) ? parentIndent + 1 : parentIndent;
      justBranched = showConnector = many;
      virtual = false;
      isLast = lastChild[p] === r;
      gutters = childGutters[p];
      foldable = many && childCount[r] > 0;
    }
    indents[r] = indent;
    branched[r] = justBranched ? 1 : 0;
    const displayIndent = multipleRoots ? (indent > 0 ? indent - 1 : 0) : indent;
    if (childCount[r]) {
      if (showConnector && !virtual) {
        childGutters[r] = extend(gutters, displayIndent > 0 ? displayIndent - 1 : 0, !isLast);
      } else {
        childGutters[r] = gutters;
      }
    }
    const id = ids[i];
    let f = flat.flags[i];
    if (showConnector) f |= FLAG.show_connector;
    if (isLast) f |= FLAG.is_last;
    if (leaf !== null && id === leaf) f |= FLAG.is_leaf;
    if (foldable) f |= FLAG.foldable;
    if (foldedIds.size && id !== null && foldedIds.has(id)) f |= FLAG.folded;
    if (virtual) f |= FLAG.is_virtual_root_child;
    if (childCount[r] > 0) f |= FLAG.has_children;
    out.entry[r] = flat.entry[i];
    out.indent[r] = Math.min(displayIndent, 0xffff);
    out.flags[r] = f;
    out.kind[r] = flat.kind[i];
    out.tokens[r] = flat.tokens[i];
    out.gutter[r] = gutters;
  }
  const leafIndex = leaf === null ? -1 : ids.lastIndexOf(leaf);
  const leafRow = leafIndex >= 0 ? rowOf[leafIndex] : -1;
  const layout: Layout = {
    rowIndex, ...out, gutterParent, gutterPosition, gutterShow, multipleRoots, rowOf, leafRow, anchorRow: -1
  };
  layout.anchorRow = locateRow(flat, layout, leafIndex, false);
  return layout;
}

/** Row of flat entry `index`, else of its nearest visible ancestor (pi's selection rule),
 * else the last row (or -1 without `fallbackLast`). */
export function locateRow(flat: FlatData, layout: Layout, index: number, fallbackLast = true): number {
  let i = index;
  while (i >= 0) {
    const row = layout.rowOf[i];
    if (row >= 0) {
      return row;
    }
    i = flat.parent[i];
  }
  return fallbackLast && layout.rowIndex.length ? layout.rowIndex.length - 1 : -1;
}

function pad4(n: number): number {
  return (n + 3) & ~3;
}

/** The PIR1 blob of a layout (pi_lab/view/columns.py encode_structure). */
export function encodeStructure(layout: Layout, header: Record<string, unknown>): ArrayBuffer {
  const rows = layout.rowIndex.length;
  const gutterCount = layout.gutterParent.length;
  const wide = gutterCount > 0xffff;
  const specs: [string, string, ArrayLike<number>][] = [
    ['entry', 'u32', layout.entry],
    ['parent', 'i32', layout.parent],
    ['indent', 'u16', layout.indent],
    ['flags', 'u16', layout.flags],
    ['kind', 'u8', layout.kind],
    ['tokens', 'u32', layout.tokens],
    ['gutter', wide ? 'u32' : 'u16', layout.gutter],
    ['gutter_parent', 'i32', layout.gutterParent],
    ['gutter_position', 'u16', layout.gutterPosition],
    ['gutter_show', 'u8', layout.gutterShow]
  ];
  const sizes: Record<string, number> = { u32: 4, i32: 4, u16: 2, u8: 1 };
  let described: { name: string; dtype: string; offset: number; count: number }[] = [];
  let head = new Uint8Array(0);
  for (;;) {
    const json = JSON.stringify({ ...header, row_count: rows, gutter_count: gutterCount, columns: described });
    const raw = new TextEncoder().encode(json);
    head = new Uint8Array(pad4(raw.length)).fill(0x20);
    head.set(raw);
    let offset = 8 + head.length;
    const next = specs.map(([name, dtype, values]) => {
      const spec = { name, dtype, offset, count: values.length };
      offset += pad4(values.length * sizes[dtype]);
      return spec;
    });
    if (JSON.stringify(next) === JSON.stringify(described)) {
      break;
    }
    described = next;
  }
  const total = described.length ? described[described.length - 1].offset + pad4(specs[specs.length - 1][2].length) : 8 + head.length;
  const buffer = new ArrayBuffer(total);
  const bytes = new Uint8Array(buffer);
  bytes.set([0x50, 0x49, 0x52, 0x31]);
  new DataView(buffer).setUint32(4, head.length, true);
  bytes.set(head, 8);
  const view = new DataView(buffer);
  specs.forEach(([, dtype, values], k) => {
    let at = described[k].offset;
    const size = sizes[dtype];
    for (let j = 0; j < values.length; j++, at += size) {
      const v = values[j];
      if (dtype === 'u32') view.setUint32(at, v, true);
      else if (dtype === 'i32') view.setInt32(at, v, true);
      else if (dtype === 'u16') view.setUint16(at, v, true);
      else view.setUint8(at, v);
    }
  });
  return buffer;
}

/** Characters of the entry's search text shown before and after a match (rows.py HIT_BEFORE, HIT_AFTER). */
const HIT_BEFORE = 12;
const HIT_AFTER = 40;

/**
 * Why a row matched when its shown text and label do not say it: the words around the first
 * search word only the entry's search text holds (pi_lab.view.rows.search_hit, its twin).
 */
export function searchHit(search: string, full: string, shown: string, label: string | null): string | undefined {
  const visible = `${shown} ${label ?? ''}`.toLowerCase();
  const missing = searchTokens(search).find(word => !visible.includes(word));
  if (missing === undefined) {
    return undefined;
  }
  const at = full.indexOf(missing);
  if (at < 0) {
    return undefined;
  }
  const start = Math.max(0, at - HIT_BEFORE);
  const end = Math.min(full.length, at + missing.length + HIT_AFTER);
  const words = full.slice(start, end).split(/\s+/).filter(Boolean).join(' ');
  return `${start ? '…' : ''}${words}${end < full.length ? '…' : ''}`;
}
