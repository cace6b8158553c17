// The composition bar of an export (composition.py `compose`, through
// timeline_requests.composition_payload): the tokens of what the model sees at an entry, by
// part, folded from each context row's embedded shares.

import type { Json } from './pyValues';
import { has } from './pyValues';
import { ContextRow, ViewsData } from './viewsData';
import { sideAt } from './viewsDiff';

type Shares = [string, number][];

/** A row's composition shares (views.py row_extras `q`; absent: derived as there). */
async function sharesOf(data: ViewsData, row: ContextRow, source: number): Promise<Shares> {
  const v = data.views;
  const q = row.v?.q;
  if (q === undefined) {
    const role = row.role;
    if (role === 'toolResult') {
      // A tool result's part is named by its tool (composition._tool_part), read from the
      // embedded entry; views.py sends `q` whenever that would not give the kernel's part.
      const entry = (await data.record(source)).e as Json;
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

/** timeline_requests.composition_payload at entry `id`. */
export async function composition(data: ViewsData, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const id = args.id;
  const index = data.require(id);
  const side = await sideAt(data, index);
  const shares = await Promise.all(side.rows.map(({ row, source }) => sharesOf(data, row, source)));
  // composition.compose
  const tokens = new Map<string, number>();
  const indexes = new Map<string, number[]>();
  const toolParts: string[] = [];
  shares.forEach((rowShares, position) => {
    for (const [part, amount] of rowShares) {
      if (!tokens.has(part)) {
        tokens.set(part, 0);
        indexes.set(part, []);
        if (part.startsWith(data.views.tool_result)) {
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
  for (const part of data.views.order) {
    if (part === data.views.tool_result) {
      order.push(...toolParts);
    } else if (tokens.has(part)) {
      order.push(part);
    }
  }
  const parts = order.map(part => ({ part, tokens: tokens.get(part)!, messages: indexes.get(part)!.length, indexes: indexes.get(part)! }));
  return { at: id, parts, total: parts.reduce((sum, p) => sum + p.tokens, 0) };
}
