// Run by tests/export/test_export_views.py in node: open an export's packed parts as the page
// does (the real StaticTransport over the real ChunkStore) and answer a list of requests, each
// {op, args}, printing [{result} | {error}] for comparison with the kernel's answers.
import { readFileSync } from 'fs';

import { ChunkStore, decodeMain, inflate } from '../../src_frontend/export/data';
import { StaticTransport } from '../../src_frontend/export/staticTransport';

interface Ask {
  op: string;
  args: Record<string, unknown>;
}

async function main(): Promise<void> {
  const parts = JSON.parse(readFileSync(process.argv[2], 'utf8')) as { main: string; chunks: string; offsets: number[] };
  const asks = JSON.parse(readFileSync(process.argv[3], 'utf8')) as Ask[];
  const { header, flat } = decodeMain(await inflate(parts.main));
  const store = new ChunkStore(parts.chunks, parts.offsets, header.chunk, header.copied ?? [], {
    ids: header.ids, parent: flat.parent, kind: flat.kind, tokens: flat.tokens, kinds: header.kinds
  });
  const transport = new StaticTransport(header, flat, store);
  const out = [];
  for (const ask of asks) {
    try {
      out.push({ result: (await transport.request(ask.op, ask.args)).result });
    } catch (error) {
      out.push({ error: error instanceof Error ? error.message : String(error) });
    }
  }
  process.stdout.write(JSON.stringify(out));
}

void main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error));
  process.exit(1);
});
