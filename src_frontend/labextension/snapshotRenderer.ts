// JupyterLab's renderer for the snapshot a notebook saves beside the pi_lab widget
// (pi_lab/widget/snapshot.py, mime type application/vnd.pi-lab.snapshot+json). JupyterLab
// sanitises the text/html of an untrusted notebook (no scripts) and the widget renderer shows
// "model not found" once the kernel is gone; this renderer is pi_lab's own code, so it may
// render the snapshot in any notebook, trusted or not: it reads the embedded data out of the
// same output's text/html as inert text (DOMParser runs nothing) and mounts the read-only viewer.

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { embeddedIn } from '../export/embedded';
import { mountSnapshot, SNAPSHOT_ATTRIBUTE, SNAPSHOT_MIME } from '../export/snapshot';

/**
 * The output area's rules, the same text as pi_lab/widget/session_widget.py FALLBACK_CSS
 * (tests/export/test_snapshot.py checks): hide the snapshot where a live viewer is drawn in
 * the same output area, and hide the widget's error beside a snapshot that is drawn.
 */
export const SNAPSHOT_CSS =
  '.jp-OutputArea:has(.pi-lab:not(.pi-lab-fallback .pi-lab)) > .jp-OutputArea-child:has(.pi-lab-fallback),' +
  '.jp-OutputArea:has(.pi-lab:not(.pi-lab-fallback .pi-lab)) .pi-lab-fallback{display:none}' +
  '.jp-OutputArea:has(.pi-lab-fallback .pi-lab) > .jp-OutputArea-child:has([data-mime-type="application/vnd.jupyter.widget-view+json"]):not(:has(.pi-lab)){display:none}';

const STYLE_ID = 'pi-lab-snapshot-style';
const SNAPSHOT_DELAY_MS = 800;

function ensureStyle(): void {
  if (!document.getElementById(STYLE_ID)) {
    const style = document.createElement('style');
    style.id = STYLE_ID;
    style.textContent = SNAPSHOT_CSS;
    document.head.appendChild(style);
  }
}

function text(value: unknown): string {
  return Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : '';
}

export class SnapshotRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('jp-PiLabSnapshot');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    ensureStyle();
    this.node.textContent = '';
    const parsed = new DOMParser().parseFromString(text(model.data['text/html']), 'text/html');
    const source = parsed.querySelector(`[${SNAPSHOT_ATTRIBUTE}]`);
    const container = document.createElement('div');
    container.className = 'pi-lab-fallback';
    container.setAttribute(SNAPSHOT_ATTRIBUTE, '1');
    const note = document.createElement('div');
    note.className = 'pi-lab-snapshot-note';
    note.textContent = source?.querySelector('.pi-lab-snapshot-note')?.textContent ?? '';
    const picture = document.createElement('pre');
    picture.className = 'pi-lab-snapshot-text';
    picture.textContent = source?.querySelector('.pi-lab-snapshot-text')?.textContent ?? text(model.data['text/plain']);
    const host = document.createElement('div');
    host.className = 'pi-lab-snapshot-host';
    container.append(note, picture, host);
    this.node.appendChild(container);
    const data = source ? embeddedIn(source) : null;
    if (data) {
      // Waits until on screen and not hidden by a live viewer beside it.
      void mountSnapshot(container, data, { delayMs: SNAPSHOT_DELAY_MS }).catch(() => undefined);
    }
  }
}

export const snapshotRendererFactory: IRenderMime.IRendererFactory = {
  // Safe: the snapshot's text reaches the page through textContent only; nothing runs.
  safe: true,
  mimeTypes: [SNAPSHOT_MIME],
  // Ahead of text/html, which carries the same snapshot for pages that run its script.
  defaultRank: 0,
  createRenderer: () => new SnapshotRenderer()
};
