// The branch comparison of an export (branches.py): where two leaves fork, each side's
// segment with its stats (calls, tools, files, tokens and cost, errors) folded from the
// embedded facts, and the summaries that cross from one side to the other.

import { PyFloat } from './data';
import { pyCompare } from './pyValues';
import { limitOf, node, pair, segmentRows } from './viewsCompare';
import { ABORTED, ROLE_ASSISTANT, ROLE_MASK, ROLE_TOOL_RESULT, ROLE_USER, TOOL_ERROR, ViewsData } from './viewsData';

/** Usage counters of an embedded usage object (views.py `_page_usage`). */
function usageOf(data: ViewsData, value: unknown): (number | null)[] | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return null;
  }
  const number = (x: unknown): number | null => (x instanceof PyFloat ? Number(x.text) : typeof x === 'number' ? x : null);
  const usage = value as Record<string, unknown>;
  const out = data.views.usage_keys.map(key => number(usage[key]));
  const cost = usage.cost;
  out.push(cost !== null && typeof cost === 'object' && !Array.isArray(cost) ? number((cost as Record<string, unknown>).total) : null);
  return out.some(x => x !== null) ? out : null;
}

async function sideStats(data: ViewsData, segment: number[], leaf: number): Promise<Record<string, unknown>> {
  const tools = new Map<string, number>();
  const read = new Set<string>();
  const written = new Set<string>();
  const edited = new Set<string>();
  const usage = { input: 0, output: 0, cache_read: 0, cache_write: 0, cost: 0, records: 0 };
  const counters = ['input', 'output', 'cache_read', 'cache_write'] as const;
  const records = await Promise.all(segment.map(i => data.record(i)));
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
    const bits = data.facts(index);
    let numbers: (number | null)[] | null = null;
    const entry = records[k].e as Record<string, unknown> | undefined;
    if (v.u === 1) {
      numbers = usageOf(data, (entry?.message as Record<string, unknown> | undefined)?.usage);
    } else if (v.u === 2) {
      numbers = usageOf(data, entry?.usage);
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
  const leafRecord = await data.record(leaf);
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

export async function compareBranches(data: ViewsData, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const [ia, ib] = pair(data, args);
  const limit = limitOf(data, args);
  const pathA = data.path(ia);
  const pathB = data.path(ib);
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
  const aStats = await sideStats(data, sideA, ia);
  const bStats = await sideStats(data, sideB, ib);
  for (const [name, segment, stats] of [['A', sideA, aStats], ['B', sideB, bStats]] as const) {
    if (segment.length && !stats.usage_known) {
      notes.push(`${name}'s side has no recorded usage (no reply on it reported any): its tokens and cost are unknown, shown as 0`);
    }
  }
  const idsOf = (side: number[]): Set<string> => new Set(side.map(i => data.flat.ids[i]).filter((x): x is string => x !== null));
  const idsA = idsOf(sideA);
  const idsB = idsOf(sideB);
  const onA = new Set(sideA);
  const onB = new Set(sideB);
  const summaries: Record<string, unknown>[] = [];
  for (const [at, entryId, fromId, parentId, own] of data.views.summaries) {
    const left = fromId !== null ? (idsA.has(fromId) ? 'a' : idsB.has(fromId) ? 'b' : null) : null;
    const on = at >= 0 && onA.has(at) ? 'a' : at >= 0 && onB.has(at) ? 'b' : null;
    if (left === null && on === null) {
      continue;
    }
    const [text, truncated] = own ?? ((await data.record(at)).v as { s: [string, boolean] }).s;
    const summary: Record<string, unknown> = { entry_id: entryId, from_id: fromId, parent_id: parentId, left_side: left, on_side: on, summary: text };
    if (truncated) {
      summary.truncated = true;
    }
    summaries.push(summary);
  }
  const ids = (side: number[]): (string | null)[] => side.map(i => data.flat.ids[i]);
  return {
    leaf_a: args.a,
    leaf_b: args.b,
    common_ancestor: common >= 0 ? data.flat.ids[common] : null,
    a: ids(sideA).slice(0, limit),
    b: ids(sideB).slice(0, limit),
    a_stats: aStats,
    b_stats: bStats,
    summaries,
    notes,
    a_count: sideA.length,
    b_count: sideB.length,
    a_rows: await segmentRows(data, sideA, limit),
    b_rows: await segmentRows(data, sideB, limit),
    limit,
    nodes: { a: await node(data, ia), b: await node(data, ib), common: await node(data, common) }
  };
}
