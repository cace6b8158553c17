// The script of a pi_lab HTML export (bundled to pi_lab/static/export.js and inlined into the
// page by pi_lab/export/html.py): inflate the embedded session, mount the viewer core on a
// StaticTransport, follow `#<entry id>` deep links both ways.

import { mountViewer } from '../core/viewer';

import { ChunkStore, decodeMain, inflate } from './data';
import { StaticTransport } from './staticTransport';

function text(id: string): string {
  return document.getElementById(id)?.textContent ?? '';
}

function hashId(): string | null {
  const raw = window.location.hash.slice(1);
  if (!raw) {
    return null;
  }
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

async function start(): Promise<void> {
  const host = document.getElementById('pi-export');
  if (!host) {
    return;
  }
  const { header, flat } = decodeMain(await inflate(text('pi-main').trim()));
  const offsets = JSON.parse(text('pi-chunk-offsets') || '[0]') as number[];
  // The chunks follow this script in the page: read them once the document is parsed.
  const chunks =
    document.readyState === 'loading'
      ? new Promise<string>(resolve =>
          document.addEventListener('DOMContentLoaded', () => resolve(text('pi-chunks').trim()), { once: true })
        )
      : text('pi-chunks').trim();
  const transport = new StaticTransport(header, flat, new ChunkStore(chunks, offsets, header.chunk));
  const wanted = hashId();
  if (wanted && transport.index(wanted) >= 0) {
    transport.set({ selected_id: wanted });
  }
  transport.set({ height: Math.max(320, window.innerHeight - 4) });
  const viewer = mountViewer(host, transport);
  // For tests and the benchmark: the viewer and its transport from the page.
  (host as HTMLElement & { piLabViewer?: unknown; piLabTransport?: unknown }).piLabViewer = viewer;
  (host as HTMLElement & { piLabTransport?: unknown }).piLabTransport = transport;
  // The selection is the page's address: a copied link opens on the same entry.
  let lastHash = wanted;
  transport.on('selected_id', () => {
    const id = transport.get('selected_id');
    if (id && id !== lastHash) {
      lastHash = id;
      history.replaceState(null, '', `#${encodeURIComponent(id)}`);
    }
  });
  window.addEventListener('hashchange', () => {
    const id = hashId();
    if (id && id !== lastHash && transport.index(id) >= 0) {
      lastHash = id;
      transport.set({ selected_id: id });
    }
  });
}

void start().catch(error => {
  const host = document.getElementById('pi-export');
  if (host) {
    const p = document.createElement('p');
    p.textContent = `pi_lab export could not be opened: ${error instanceof Error ? error.message : String(error)}`;
    host.appendChild(p);
  }
});
