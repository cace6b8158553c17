// The "Pi Sessions" side panel: every session in pi's sessions folder, grouped by project
// (shown as the working directory its sessions' headers name), newest first, searchable.
// Session text is untrusted: everything is written with textContent.

import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { ListedSession, PiLabApi, SessionGroup, SessionListing } from './api';

const REFRESH_MS = 30_000;
const SEARCH_DELAY_MS = 250;

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, parent: HTMLElement, text?: string) {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  parent.appendChild(node);
  return node;
}

/** "3 min ago", "yesterday 14:02", "2025-11-20": how long ago `iso` was. */
export function relativeTime(iso: string, now: Date = new Date()): string {
  const moment = new Date(iso);
  const ms = now.getTime() - moment.getTime();
  if (Number.isNaN(ms)) {
    return '';
  }
  const minutes = Math.round(ms / 60_000);
  if (minutes < 1) {
    return 'just now';
  }
  if (minutes < 60) {
    return `${minutes} min ago`;
  }
  const hours = Math.round(minutes / 60);
  if (hours < 24) {
    return `${hours} h ago`;
  }
  const days = Math.round(hours / 24);
  if (days < 30) {
    return `${days} d ago`;
  }
  return moment.toISOString().slice(0, 10);
}

export class SessionsPanel extends Widget {
  constructor(
    private readonly api: PiLabApi,
    private readonly open: (location: string, title: string) => void
  ) {
    super();
    this.id = 'pi-lab-sessions';
    this.addClass('jp-PiSessions');
    const head = element('div', 'jp-PiSessions-head', this.node);
    element('span', 'jp-PiSessions-title', head, 'Pi Sessions');
    const refresh = element('button', 'jp-PiSessions-refresh jp-Button jp-mod-minimal', head, '↻');
    refresh.type = 'button';
    refresh.title = 'List the sessions again';
    refresh.setAttribute('aria-label', 'Refresh');
    refresh.addEventListener('click', () => void this.refresh());
    this.search = element('input', 'jp-PiSessions-search jp-mod-styled', this.node);
    this.search.type = 'search';
    this.search.placeholder = 'Search sessions';
    this.search.setAttribute('aria-label', 'Search sessions');
    this.search.addEventListener('input', () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => void this.refresh(), SEARCH_DELAY_MS);
    });
    this.summary = element('div', 'jp-PiSessions-summary', this.node);
    this.list = element('div', 'jp-PiSessions-list', this.node);
    this.list.setAttribute('role', 'list');
  }

  /** List the sessions again (with the current search). */
  async refresh(): Promise<void> {
    const token = ++this.token;
    const query = this.search.value.trim();
    this.node.classList.add('jp-mod-loading');
    try {
      const listing = await this.api.listSessions(query);
      if (token === this.token) {
        this.render(listing);
      }
    } catch (error) {
      if (token === this.token) {
        this.list.replaceChildren();
        this.summary.textContent = error instanceof Error ? error.message : String(error);
        this.summary.classList.add('jp-PiSessions-error');
      }
    } finally {
      if (token === this.token) {
        this.node.classList.remove('jp-mod-loading');
      }
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
    window.clearInterval(this.timer);
    this.timer = window.setInterval(() => {
      if (this.isVisible && document.visibilityState === 'visible') {
        void this.refresh();
      }
    }, REFRESH_MS);
  }

  protected onAfterHide(msg: Message): void {
    window.clearInterval(this.timer);
    super.onAfterHide(msg);
  }

  dispose(): void {
    window.clearInterval(this.timer);
    window.clearTimeout(this.searchTimer);
    super.dispose();
  }

  private render(listing: SessionListing): void {
    this.summary.classList.remove('jp-PiSessions-error');
    this.summary.title = listing.folder;
    if (!listing.exists) {
      this.summary.textContent = `No sessions folder at ${listing.folder}`;
    } else if (listing.total === 0) {
      this.summary.textContent = `No pi sessions in ${listing.folder}`;
    } else if (listing.query) {
      this.summary.textContent = `${listing.shown} of ${listing.total} sessions match`;
    } else {
      this.summary.textContent = `${listing.total} session${listing.total === 1 ? '' : 's'} in ${listing.folder}`;
    }
    const fragment = document.createDocumentFragment();
    const now = new Date();
    for (const group of listing.groups) {
      fragment.appendChild(this.renderGroup(group, now));
    }
    this.list.replaceChildren(fragment);
  }

  private renderGroup(group: SessionGroup, now: Date): HTMLElement {
    const box = document.createElement('div');
    box.className = 'jp-PiSessions-group';
    const head = element('div', 'jp-PiSessions-project', box, group.cwd || group.dir || '(sessions folder)');
    head.title = group.dir ? `${group.cwd}\n${group.dir}` : group.cwd;
    element('span', 'jp-PiSessions-count', head, ` ${group.sessions.length + group.more}`);
    for (const session of group.sessions) {
      box.appendChild(this.renderSession(session, now));
    }
    if (group.more) {
      element('div', 'jp-PiSessions-more', box, `… ${group.more} more`);
    }
    return box;
  }

  private renderSession(session: ListedSession, now: Date): HTMLElement {
    const item = document.createElement('div');
    item.className = 'jp-PiSessions-item';
    item.setAttribute('role', 'listitem');
    item.tabIndex = 0;
    item.dataset.location = session.location;
    item.title = `${session.file}\n${session.first_message}`;
    const title = session.name || session.first_message;
    element('div', 'jp-PiSessions-name', item, title);
    if (session.name) {
      element('div', 'jp-PiSessions-first', item, session.first_message);
    }
    const meta = element('div', 'jp-PiSessions-meta', item);
    meta.textContent = `${session.message_count} message${session.message_count === 1 ? '' : 's'} · ${relativeTime(session.modified, now)}`;
    meta.title = `last change ${new Date(session.modified).toLocaleString()}`;
    const openIt = (): void => this.open(session.location, session.name || session.file);
    item.addEventListener('click', openIt);
    item.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        openIt();
      }
    });
    return item;
  }

  private readonly search: HTMLInputElement;
  private readonly summary: HTMLDivElement;
  private readonly list: HTMLDivElement;
  private searchTimer = 0;
  private timer = 0;
  private token = 0;
}
