// The script of a pi_lab HTML export (bundled to pi_lab/static/export.js and inlined into the
// page by pi_lab/export/html.py): inflate the embedded session, mount the viewer core on a
// StaticTransport, follow `#<entry id>` deep links both ways. The same script inside a
// notebook snapshot's HTML (pi_lab/widget/snapshot.py) mounts that snapshot instead.

import { packedPart } from './data';
import { embeddedIn, openEmbedded, showError } from './embedded';
import { mountSnapshot, SNAPSHOT_ATTRIBUTE } from './snapshot';

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
  // The chunks follow this script in the page: read them once the document is parsed.
  const chunks =
    document.readyState === 'loading'
      ? new Promise<string>(resolve =>
          document.addEventListener('DOMContentLoaded', () => resolve(packedPart(text('pi-chunks'))), { once: true })
        )
      : packedPart(text('pi-chunks'));
  const wanted = hashId();
  const { transport } = await openEmbedded(
    host,
    { main: text('pi-main'), offsets: JSON.parse(text('pi-chunk-offsets') || '[0]') as number[], chunks },
    { height: Math.max(320, window.innerHeight - 4), selected: wanted }
  );
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

// Read while this script runs: later it is null.
const snapshot = document.currentScript?.closest<HTMLElement>(`[${SNAPSHOT_ATTRIBUTE}]`) ?? null;
if (snapshot) {
  const data = embeddedIn(snapshot);
  if (data) {
    void mountSnapshot(snapshot, data, { delayMs: 0 }).catch(() => undefined);
  }
} else {
  void start().catch(error => {
    const host = document.getElementById('pi-export');
    if (host) {
      showError(host, 'pi_lab export could not be opened', error);
    }
  });
}
