// The lines of text around the tree: the header (the session's title, entries and model, the
// read-only badge with "Allow writing…", busy and status), the banner that says what an action
// did or why it could not, the text offered for re-editing and the live strip of a running turn.

import { foreignRefusal } from './actions';
import { button, clear, el, rowSafe } from './dom';
import type { LiveEvent, SessionInfo, Transport } from './transport';

export class ViewerHeader {
  /** The entry count a delta brought ahead of the `session` state (null: the state's). */
  entries: number | null = null;
  private readonly title: HTMLSpanElement;
  private readonly meta: HTMLSpanElement;
  // Read-only until the reader allows writing (notebook widget) or always (JupyterLab viewer).
  private readonly access: HTMLSpanElement;
  private readonly busy: HTMLSpanElement;
  private readonly status: HTMLSpanElement;
  private readonly allowButton: HTMLButtonElement;
  private readonly accessBadge: HTMLSpanElement;

  constructor(
    private readonly root: HTMLElement,
    private readonly transport: Transport,
    allowWrites: () => void
  ) {
    const header = el('div', 'pi-header', root);
    this.title = el('span', 'pi-title', header);
    this.meta = el('span', 'pi-meta', header);
    this.access = el('span', 'pi-access', header);
    this.busy = el('span', 'pi-busy', header);
    this.status = el('span', 'pi-status', header);
    this.status.setAttribute('role', 'status');
    this.allowButton = button('Allow writing…', 'pi-small', this.access, allowWrites);
    this.accessBadge = el('span', 'pi-readonly-badge', this.access, 'read-only');
    this.access.insertBefore(this.accessBadge, this.allowButton);
  }

  /** The title and the facts line (entries, model, following). */
  showSession(): void {
    const entries = this.entries;
    const info = this.transport.get('session') as SessionInfo;
    const file = info.file ? info.file.split(/[\\/]/).pop() : null;
    // Named as the sessions panel names it: its name, else its first user message, else the file.
    const named = info.title || info.name || info.first_message || file || (info.id ? `session ${info.id}` : 'pi session');
    this.title.textContent = rowSafe(named.replace(/[\t ]+/g, ' ').trim());
    this.title.title = [named, info.file ?? ''].filter(Boolean).join('\n');
    // The session's own model; the model answering here only when one is attached and differs.
    const model = info.model || 'model unknown';
    const answering = info.answering_model && info.answering_model !== info.model ? ` · answered here by ${info.answering_model}` : '';
    this.meta.textContent = info.id
      ? `${entries ?? info.entries} entries · ${model}${answering}${info.following ? ' · following the file' : ''}`
      : '';
    this.meta.title = info.id ? `session model: ${model}${info.answering_model ? `; answering model: ${info.answering_model}` : ''}` : '';
  }

  showAccess(): void {
    const transport = this.transport;
    const writable = transport.writable;
    this.access.hidden = writable;
    this.root.classList.toggle('pi-read-only', !writable);
    const refusal = foreignRefusal(transport);
    this.allowButton.hidden = !transport.canAllowWrites || refusal !== null;
    const plan = transport.get('write_plan');
    // Another agent's file is never written: the badge says so where pi's offers to allow writing.
    this.accessBadge.textContent = refusal ? `read-only: ${refusal}` : 'read-only';
    this.accessBadge.title = refusal
      ? `pi_lab reads ${refusal.replace(/; pi_lab never writes it\.?$/, '')} and never writes it.`
      : transport.canAllowWrites
        ? `Nothing is written until you allow it.${plan ? ` ${plan}` : ''}`
        : 'This viewer never writes the session file. Open it in a notebook to change it.';
  }

  showStatus(): void {
    const state = this.transport.get('busy');
    this.busy.textContent = state ? `● ${state}` : '';
    this.busy.hidden = !state;
    this.status.textContent = this.transport.get('status');
    this.root.classList.toggle('pi-is-busy', Boolean(state));
  }
}

/** The banner under the toolbar: a message for five seconds, an error for twelve. */
export class Banner {
  private readonly el: HTMLDivElement;
  private timer = 0;

  constructor(parent: HTMLElement) {
    this.el = el('div', 'pi-banner', parent);
    this.el.setAttribute('role', 'alert');
    this.el.hidden = true;
  }

  notify(message: string, isError = false): void {
    const banner = this.el;
    banner.hidden = false;
    banner.textContent = message;
    banner.classList.toggle('pi-banner-error', isError);
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => {
      banner.hidden = true;
    }, isError ? 12000 : 5000);
  }
}

/** The text a navigation offered for re-editing (the `editor_text` state), with copy and dismiss. */
export function showEditorText(box: HTMLElement, transport: Transport): void {
  const text = transport.get('editor_text');
  clear(box);
  box.hidden = !text;
  if (text) {
    el('span', 'pi-muted', box, 'Offered for re-editing: ');
    const value = el('span', 'pi-editor-value', box, rowSafe(text));
    value.title = text;
    button('copy', 'pi-small', box, () => void navigator.clipboard?.writeText(text));
    button('dismiss', 'pi-small', box, () => transport.set({ editor_text: '' }));
  }
}

/** The live strip: the tail of a streamed reply, or the tool running now. */
export function showLive(live: HTMLElement, event: LiveEvent): void {
  if (event.type === 'stream_end') {
    window.setTimeout(() => {
      live.hidden = true;
    }, 400);
    return;
  }
  live.hidden = false;
  if (event.type === 'stream') {
    live.textContent = (event.thinking ? `(thinking) ${event.thinking.slice(-200)}\n` : '') + event.text.slice(-600);
  } else {
    live.textContent = event.phase === 'start' ? `⚙ running ${event.name}…` : `⚙ ${event.name} ${event.error ? 'failed' : 'done'}`;
  }
}
