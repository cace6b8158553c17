// The Compare pane's requests in an export (compare_requests.py): the two picks A and B and the
// refusals when they are missing or the same, the limit, each entry's one line and node, and the
// rows of a branch's segment.

import { cutText, jsonKind, pyRepr } from './pyValues';
import type { ExportHeader } from './data';
import { HAS_CHILD, ViewsData } from './viewsData';

const NAMES: Record<string, string> = { a: 'A', b: 'B' };

export function pick(data: ViewsData, args: Record<string, unknown>, key: string): number {
  const name = NAMES[key];
  const value = args[key];
  if (value === null || value === undefined || value === '') {
    throw new Error(`pick ${name} first: no entry is chosen as ${name}`);
  }
  if (typeof value !== 'string') {
    throw new Error(`${name} must be an entry id (a string), not ${jsonKind(value)}`);
  }
  const index = data.index(value);
  if (index < 0) {
    throw new Error(`${name}: entry ${value} is not in this session`);
  }
  return index;
}

export function pair(data: ViewsData, args: Record<string, unknown>): [number, number] {
  const a = pick(data, args, 'a');
  const b = pick(data, args, 'b');
  if (a === b) {
    throw new Error(`A and B are the same entry (${args.a as string}): pick two different entries to compare`);
  }
  return [a, b];
}

export function limitOf(data: ViewsData, args: Record<string, unknown>): number {
  const value = args.limit === undefined ? data.views.default_limit : args.limit;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new Error(`limit must be a positive whole number, not ${pyRepr(value)}`);
  }
  return Math.min(value, data.views.max_limit);
}

/** The Compare pane's one line for an entry (compare_requests.row_text). */
async function text(data: ViewsData, index: number): Promise<string> {
  const record = await data.record(index);
  const own = (record.v as { n?: string } | undefined)?.n;
  return own ?? cutText(data.header.texts[index], data.views.preview);
}

/** compare_requests._nodes for one entry (null: none). */
export async function node(data: ViewsData, index: number): Promise<Record<string, unknown> | null> {
  if (index < 0) {
    return null;
  }
  const id = data.flat.ids[index];
  return {
    id,
    kind: data.header.kinds[data.flat.kind[index]],
    text: await text(data, index),
    is_leaf: id === data.header.leaf_id,
    is_tip: !(data.facts(index) & HAS_CHILD)
  };
}

export async function compareNode(data: ViewsData, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const side = args.side === undefined ? 'a' : args.side;
  if (side !== 'a' && side !== 'b') {
    throw new Error(`side must be 'a' or 'b', not ${pyRepr(side)}`);
  }
  return (await node(data, pick(data, { [side]: args.id }, side)))!;
}

export async function segmentRows(data: ViewsData, ids: number[], limit: number): Promise<Record<string, unknown>[]> {
  const errorBit = 1 << (data.header as ExportHeader & { flags?: string[] }).flags!.indexOf('error');
  const rows: Record<string, unknown>[] = [];
  for (const index of ids.slice(0, limit)) {
    const id = data.flat.ids[index];
    if (id === null) {
      rows.push({ id: null, kind: 'unknown', text: '', error: false });
      continue;
    }
    rows.push({ id, kind: data.header.kinds[data.flat.kind[index]], text: await text(data, index), error: Boolean(data.flat.flags[index] & errorBit) });
  }
  return rows;
}
