// Run by tests/export/test_export_requests.py in node: open an export's packed parts as the page
// does (the real StaticTransport over the real ChunkStore) and ask it every read request the
// kernel answers (READ_OP_NAMES of the generated contract.ts), with valid arguments. Each must be
// answered, or refused with an Error whose message is a sentence a reader can act on (never
// "unknown request", never "undefined"). Prints [{op, result} | {op, error}] and exits 1 on the
// first request that breaks the rule.
import { readFileSync } from 'fs';

import { READ_OP_NAMES } from '../../src_frontend/core/contract';
import { ChunkStore, decodeMain, inflate } from '../../src_frontend/export/data';
import { StaticTransport } from '../../src_frontend/export/staticTransport';

/** Why `message` is not a sentence a reader can act on, or null when it is one. */
function notASentence(message: string): string | null {
  if (/unknown request|undefined|\[object |NaN/.test(message)) {
    return 'names no reason';
  }
  if (message.trim().split(/\s+/).length < 4) {
    return 'is not a sentence';
  }
  return null;
}

async function main(): Promise<void> {
  const parts = JSON.parse(readFileSync(process.argv[2], 'utf8')) as { main: string; chunks: string; offsets: number[] };
  const { header, flat } = decodeMain(await inflate(parts.main));
  const store = new ChunkStore(parts.chunks, parts.offsets, header.chunk, header.copied ?? [], {
    ids: header.ids, parent: flat.parent, kind: flat.kind, tokens: flat.tokens, kinds: header.kinds
  });
  const transport = new StaticTransport(header, flat, store);
  const leaf = header.leaf_id as string;
  const first = header.ids.find(id => id !== null && id !== leaf) ?? leaf;
  const valid: Record<string, Record<string, unknown>> = {
    rows: { start: 0, end: 10 },
    locate: { id: leaf },
    entry: { id: leaf },
    context_at: { id: leaf },
    gauge: {},
    compact_preview: {},
    timeline: { leaf_id: leaf },
    timeline_at: { id: leaf, leaf_id: leaf },
    composition: { id: leaf },
    what_if: { leaf_id: leaf },
    what_if_compaction: { id: leaf, leaf_id: leaf },
    what_if_context: { id: leaf, leaf_id: leaf },
    compare_node: { id: leaf, side: 'a' },
    context_diff: { a: first, b: leaf },
    context_search: { a: first, b: leaf, query: 'the' },
    compare_branches: { a: first, b: leaf }
  };
  const out: Record<string, unknown>[] = [];
  let failed = false;
  for (const op of READ_OP_NAMES) {
    const args = valid[op];
    if (args === undefined) {
      out.push({ op, error: 'requests_check.ts has no valid arguments for this request: add them' });
      failed = true;
      continue;
    }
    try {
      const reply = await transport.request(op, args);
      out.push({ op, result: reply.result === undefined ? 'undefined' : 'answered' });
      failed ||= reply.result === undefined;
    } catch (error) {
      const message = error instanceof Error ? error.message : `not an Error: ${String(error)}`;
      const why = error instanceof Error ? notASentence(message) : 'is not an Error';
      out.push({ op, error: message, ...(why ? { broken: why } : {}) });
      failed ||= why !== null;
    }
  }
  process.stdout.write(JSON.stringify(out));
  process.exit(failed ? 1 : 0);
}

void main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error));
  process.exit(2);
});
