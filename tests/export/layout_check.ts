// Run by tests/export/test_export_layout.py in node: read an export's main blob (base64 of gzip,
// as the page holds it) and a list of views from argv, print the row columns the page would lay
// out for each view, for comparison with pi_lab.view.rows.RowState.
import { readFileSync } from 'fs';

import { decodeMain, inflate } from '../../src_frontend/export/data';
import { layoutRows } from '../../src_frontend/export/layout';
import { StaticTransport } from '../../src_frontend/export/staticTransport';
import { readHeader, RowColumns } from '../../src_frontend/core/row';
import type { FilterMode } from '../../src_frontend/core/transport';

interface View {
  filter_mode: FilterMode;
  search: string;
  folded: string[];
}

async function main(): Promise<void> {
  const packed = readFileSync(process.argv[2], 'utf8').trim();
  const views = JSON.parse(readFileSync(process.argv[3], 'utf8')) as View[];
  const { header, flat } = decodeMain(await inflate(packed));
  const out = [];
  for (const view of views) {
    const layout = layoutRows(flat, view.filter_mode, view.search, view.folded);
    // Through the transport too: the blob it hands the core decodes to the same columns.
    const transport = new StaticTransport(header, flat, null as never);
    transport.set({ filter_mode: view.filter_mode });
    transport.set({ search: view.search });
    transport.set({ folded: view.folded });
    const blob = transport.structure();
    const cols = new RowColumns(blob);
    const head = readHeader(blob)!;
    out.push({
      entry: Array.from(layout.entry),
      parent: Array.from(layout.parent),
      indent: Array.from(layout.indent),
      flags: Array.from(layout.flags),
      kind: Array.from(layout.kind),
      tokens: Array.from(layout.tokens),
      gutter: Array.from(layout.gutter),
      gutter_parent: layout.gutterParent,
      gutter_position: layout.gutterPosition,
      gutter_show: layout.gutterShow,
      leaf_row: layout.leafRow,
      anchor_row: layout.anchorRow,
      multiple_roots: layout.multipleRoots,
      blob_flags: Array.from(cols.flags.subarray(0, cols.length)),
      blob_gutter: Array.from(cols.gutter.subarray(0, cols.length)),
      blob_row_count: head.row_count,
      blob_leaf_row: head.leaf_row,
      ids: Array.from(layout.rowIndex).map(i => flat.ids[i])
    });
  }
  process.stdout.write(JSON.stringify(out));
}

void main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error));
  process.exit(1);
});
