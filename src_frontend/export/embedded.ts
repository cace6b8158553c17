// Mounting the viewer on data embedded in a page: the HTML export (main.ts) and the snapshot
// a notebook saves beside the widget (snapshot.ts, pi_lab/widget/snapshot.py). The data is
// text that is never parsed as HTML: base85 of gzip in non-executable script elements.

import { mountViewer, ViewerHandle } from '../core/viewer';

import { ChunkStore, decodeMain, inflate, packedPart } from './data';
import { StaticTransport } from './staticTransport';

export interface EmbeddedData {
  /** The packed main part (columns and header). */
  main: string;
  /** Where each packed chunk ends in `chunks` (offsets[0] = 0). */
  offsets: number[];
  /** The packed chunks, or a promise of them (a page still being parsed). */
  chunks: string | Promise<string>;
}

export interface Mounted {
  viewer: ViewerHandle;
  transport: StaticTransport;
}

/** Inflate the main part and mount a read-only viewer on it in `host`. */
export async function openEmbedded(
  host: HTMLElement,
  data: EmbeddedData,
  options: { height: number; selected?: string | null }
): Promise<Mounted> {
  const { header, flat } = decodeMain(await inflate(packedPart(data.main)));
  const transport = new StaticTransport(header, flat, new ChunkStore(data.chunks, data.offsets, header.chunk, header.copied ?? [], {
    ids: header.ids,
    parent: flat.parent,
    kind: flat.kind,
    tokens: flat.tokens,
    kinds: header.kinds
  }));
  if (options.selected && transport.index(options.selected) >= 0) {
    transport.set({ selected_id: options.selected });
  }
  transport.set({ height: options.height });
  const viewer = mountViewer(host, transport);
  // For tests and the benchmark: the viewer and its transport from the page.
  const tagged = host as HTMLElement & { piLabViewer?: unknown; piLabTransport?: unknown };
  tagged.piLabViewer = viewer;
  tagged.piLabTransport = transport;
  return { viewer, transport };
}

/** The embedded parts inside `scope`, found by class (a page can hold many snapshots). */
export function embeddedIn(scope: ParentNode): EmbeddedData | null {
  const part = (name: string) => scope.querySelector(`script.${name}`)?.textContent ?? null;
  const main = part('pi-main');
  if (main === null) {
    return null;
  }
  return {
    main,
    offsets: JSON.parse(part('pi-chunk-offsets') || '[0]') as number[],
    chunks: packedPart(part('pi-chunks') ?? '')
  };
}

export function showError(host: HTMLElement, what: string, error: unknown): void {
  const p = document.createElement('p');
  p.className = 'pi-lab-export-error';
  p.textContent = `${what}: ${error instanceof Error ? error.message : String(error)}`;
  host.appendChild(p);
}
