// The snapshot a notebook saves beside the pi_lab widget (pi_lab/widget/snapshot.py): the
// read-only viewer on the session as it was displayed, for wherever the widget cannot be
// drawn (a notebook reopened without its kernel, nbconvert's HTML, a static site). Mounted
// by export.js when it runs inside the snapshot's own HTML, and by the JupyterLab extension's
// renderer for the snapshot's mime type (no trust needed: nothing of the notebook runs).

import { EmbeddedData, Mounted, openEmbedded, showError } from './embedded';

export const SNAPSHOT_MIME = 'application/vnd.pi-lab.snapshot+json';
export const SNAPSHOT_ATTRIBUTE = 'data-pi-lab-snapshot';
export const SNAPSHOT_HEIGHT = 520;

function visible(node: HTMLElement): boolean {
  // Hidden by the output area's rule (a live viewer is drawn beside it) or scrolled away.
  return node.isConnected && node.getClientRects().length > 0;
}

/**
 * Mount the viewer in `container` (the snapshot's root) once it is on screen and has stayed
 * visible for `delayMs`: beside a live widget the output area hides the snapshot (CSS), and a
 * hidden snapshot is never inflated or drawn. Resolves with the mounted viewer.
 */
export function mountSnapshot(container: HTMLElement, data: EmbeddedData, options: { delayMs: number }): Promise<Mounted> {
  return new Promise((resolve, reject) => {
    let timer: number | undefined;
    let done = false;
    const mount = () => {
      if (done || !visible(container)) {
        return;
      }
      done = true;
      observer?.disconnect();
      let host = container.querySelector<HTMLElement>('.pi-lab-snapshot-host');
      if (!host) {
        host = document.createElement('div');
        host.className = 'pi-lab-snapshot-host';
        container.appendChild(host);
      }
      openEmbedded(host, data, { height: SNAPSHOT_HEIGHT }).then(mounted => {
        // The text picture stays in the file for frontends without scripts; the viewer replaces it here.
        const text = container.querySelector<HTMLElement>('.pi-lab-snapshot-text');
        if (text) {
          text.hidden = true;
        }
        container.setAttribute('data-pi-lab-mounted', 'true');
        resolve(mounted);
      }, error => {
        showError(host!, 'pi_lab snapshot could not be opened', error);
        reject(error);
      });
    };
    const observer =
      typeof IntersectionObserver === 'function'
        ? new IntersectionObserver(records => {
            if (records.some(r => r.isIntersecting)) {
              window.clearTimeout(timer);
              timer = window.setTimeout(mount, options.delayMs);
            }
          })
        : null;
    if (observer) {
      observer.observe(container);
    } else {
      window.setTimeout(mount, options.delayMs);
    }
  });
}
