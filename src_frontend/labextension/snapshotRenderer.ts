// JupyterLab's renderer for the snapshot a notebook saves beside the pi_lab widget
// (pi_lab/widget/snapshot.py, mime type application/vnd.pi-lab.snapshot+json). JupyterLab
// sanitises the text/html of an untrusted notebook (no scripts) and the widget renderer shows
// "model not found" once the kernel is gone; this renderer is pi_lab's own code, so it may
// render the snapshot in any notebook, trusted or not: it reads the embedded data out of the
// same output's text/html as inert text (DOMParser runs nothing) and mounts the read-only viewer.

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { EmbeddedData, embeddedIn, Mounted, openEmbedded, showError } from '../export/embedded';
import { SNAPSHOT_ATTRIBUTE, SNAPSHOT_HEIGHT, SNAPSHOT_MIME } from '../export/snapshot';

/**
 * The output area's rules, the same text as pi_lab/widget/session_widget.py FALLBACK_CSS
 * (tests/export/test_snapshot.py checks): hide the snapshot where a live viewer is drawn in
 * the same output area, and hide the widget's output right after a drawn snapshot where it
 * draws no viewer ("model not found", or its text/plain without a kernel).
 */
export const SNAPSHOT_CSS =
  '.jp-OutputArea:has(.pi-lab:not(.pi-lab-fallback .pi-lab)) > .jp-OutputArea-child:has(.pi-lab-fallback),' +
  '.jp-OutputArea:has(.pi-lab:not(.pi-lab-fallback .pi-lab)) .pi-lab-fallback{display:none}' +
  '.jp-OutputArea-child:has(.pi-lab-fallback .pi-lab) + .jp-OutputArea-child:not(:has(.pi-lab)){display:none}';

const STYLE_ID = 'pi-lab-snapshot-style';
const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
/** How often the renderer looks at its output area (cheap: a few selector queries). */
const CHECK_MS = 250;
/** A widget output that neither draws nor fails for this long is taken as failed. */
const PENDING_MS = 6000;

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

/** What stands beside the snapshot in its output area. */
function beside(container: HTMLElement): 'live' | 'failed' | 'pending' {
  const area = container.closest('.jp-OutputArea');
  if (!area) {
    return 'failed';
  }
  if (area.querySelector('.pi-lab:not(.pi-lab-fallback .pi-lab)')) {
    return 'live';
  }
  const widget = area.querySelector(`[data-mime-type="${WIDGET_MIME}"]`);
  if (!widget) {
    return 'failed'; // the widget's output was cleared or never saved
  }
  // ipywidgets' renderer writes "Error displaying widget: model not found" without a kernel.
  return /Error displaying widget/i.test(widget.textContent ?? '') ? 'failed' : 'pending';
}

function onScreen(node: HTMLElement): boolean {
  if (!node.isConnected || node.getClientRects().length === 0) {
    return false;
  }
  const box = node.getBoundingClientRect();
  return box.bottom > 0 && box.top < window.innerHeight;
}

export class SnapshotRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('jp-PiLabSnapshot');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    ensureStyle();
    this.stop();
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
      this.watch(container, host, picture, data);
    }
  }

  dispose(): void {
    this.stop();
    super.dispose();
  }

  /**
   * Mount the viewer where the live widget cannot be drawn, once on screen; take it down
   * again when a live viewer appears beside it (a kernel came back and the cell ran), so the
   * page never holds two viewers of the session.
   */
  private watch(container: HTMLElement, host: HTMLElement, picture: HTMLElement, data: EmbeddedData): void {
    const started = Date.now();
    let mounted: Mounted | null = null;
    let opening = false;
    const check = () => {
      const state = beside(container);
      if (state === 'live') {
        if (mounted) {
          mounted.viewer.unmount();
          host.textContent = '';
          mounted = null;
          picture.hidden = false;
          container.removeAttribute('data-pi-lab-mounted');
        }
        return;
      }
      const failed = state === 'failed' || Date.now() - started > PENDING_MS;
      if (mounted || opening || !failed || !onScreen(container)) {
        return;
      }
      opening = true;
      openEmbedded(host, data, { height: SNAPSHOT_HEIGHT }).then(m => {
        opening = false;
        mounted = m;
        picture.hidden = true;
        container.setAttribute('data-pi-lab-mounted', 'true');
      }, error => {
        showError(host, 'pi_lab snapshot could not be opened', error);
        this.stop();
      });
    };
    this.timer = window.setInterval(check, CHECK_MS);
  }

  private stop(): void {
    if (this.timer !== undefined) {
      window.clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private timer: number | undefined;
}

export const snapshotRendererFactory: IRenderMime.IRendererFactory = {
  // Safe: the snapshot's text reaches the page through textContent only; nothing runs.
  safe: true,
  mimeTypes: [SNAPSHOT_MIME],
  // Ahead of text/html, which carries the same snapshot for pages that run its script.
  defaultRank: 0,
  createRenderer: () => new SnapshotRenderer()
};
