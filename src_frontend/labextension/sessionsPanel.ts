// The "Pi Sessions" side panel: every session in pi's sessions folder, grouped by project
// (shown as the working directory its sessions' headers name), newest first, searchable.
// Session text is untrusted: everything is written with textContent, one-line places through
// rowSafe (a bidi override shows as a marker instead of reversing the text after it).
// A search shows, under each matching session, a few snippets of the messages that match; a
// click (or Enter) opens the session with the same search applied in the viewer.
// Keyboard: ArrowDown from the search box enters the list, ArrowUp/ArrowDown move between
// sessions and their snippets, Home/End jump, Enter or Space opens, Escape goes back to search.

import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { rowSafe } from '../core/dom';

import {
  AGENT_LABELS,
  ListedSession,
  PiLabApi,
  SearchSnippet,
  SESSIONS_PREFIX,
  SessionGroup,
  SessionListing
} from './api';
import { element } from './dom';
import { sessionTitle } from './title';

/** Opens a session: its location, its title, and (from a search) the query and the matching entry. */
export type OpenSession = (location: string, title: string, search?: string, select?: string | null) => void;

// Styles of the parts this module adds (kept here, next to the code that makes the elements).
const PANEL_CSS = `
.jp-PiSessions-hits { color: var(--jp-ui-font-color2); font-size: var(--jp-ui-font-size0); }
.jp-PiSessions-snippet {
  margin: 2px 0 0; padding: 2px 6px; border-left: 2px solid var(--jp-border-color2);
  font-size: var(--jp-ui-font-size0); color: var(--jp-ui-font-color1);
  overflow-wrap: anywhere; cursor: pointer; unicode-bidi: isolate;
}
.jp-PiSessions-snippet:hover { background: var(--jp-layout-color2); }
.jp-PiSessions-snippet:focus-visible, .jp-PiSessions-item:focus-visible {
  outline: 1px solid var(--jp-brand-color1); outline-offset: -1px;
}
.jp-PiSessions-snippet mark {
  background: var(--jp-search-selected-match-background-color, #f5d90a);
  color: var(--jp-search-selected-match-color, inherit); border-radius: 2px; padding: 0 1px;
}
.jp-PiSessions-role { color: var(--jp-ui-font-color2); margin-right: 4px; font-style: italic; }
.jp-PiSessions-agent {
  display: inline-block; padding: 0 4px; border-radius: 3px; border: 1px solid var(--jp-border-color2);
  font-size: var(--jp-ui-font-size0); color: var(--jp-ui-font-color1);
}
.jp-PiSessions-agent-claude-code { border-color: #c96442; }
.jp-PiSessions-agent-codex { border-color: #10a37f; }
.jp-PiSessions-skipped { padding: 0 12px 6px; color: var(--jp-warn-color1); font-size: var(--jp-ui-font-size0); }
`;

function addStyles(): void {
  if (document.getElementById('pi-lab-sessions-css')) {
    return;
  }
  const style = document.createElement('style');
  style.id = 'pi-lab-sessions-css';
  style.textContent = PANEL_CSS;
  document.head.appendChild(style);
}

const REFRESH_MS = 30_000;
const SEARCH_DELAY_MS = 250;

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
    private readonly open: OpenSession
  ) {
    super();
    addStyles();
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
    this.search.addEventListener('keydown', event => {
      if (event.key === 'ArrowDown') {
        event.preventDefault();
        this.stops()[0]?.focus();
      }
    });
    this.summary = element('div', 'jp-PiSessions-summary', this.node);
    this.skipped = element('div', 'jp-PiSessions-skipped', this.node);
    this.skipped.hidden = true;
    this.list = element('div', 'jp-PiSessions-list', this.node);
    this.list.setAttribute('role', 'list');
    this.list.addEventListener('keydown', event => this.onListKey(event));
  }

  /** The focusable places of the list, in order: each session, then its snippets. */
  private stops(): HTMLElement[] {
    return Array.from(this.list.querySelectorAll<HTMLElement>('.jp-PiSessions-item, .jp-PiSessions-snippet'));
  }

  private onListKey(event: KeyboardEvent): void {
    const stops = this.stops();
    const at = stops.indexOf(document.activeElement as HTMLElement);
    if (at < 0) {
      return;
    }
    let next = -1;
    if (event.key === 'ArrowDown') {
      next = Math.min(stops.length - 1, at + 1);
    } else if (event.key === 'ArrowUp') {
      if (at === 0) {
        event.preventDefault();
        this.search.focus();
        return;
      }
      next = at - 1;
    } else if (event.key === 'Home') {
      next = 0;
    } else if (event.key === 'End') {
      next = stops.length - 1;
    } else if (event.key === 'Escape') {
      event.preventDefault();
      this.search.focus();
      return;
    }
    if (next >= 0) {
      event.preventDefault();
      stops[next].focus();
    }
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
      this.summary.textContent = `${listing.shown} of ${listing.total} match · full text`;
      this.summary.title = `${listing.folder}\nEvery word is looked for in the whole text of each session (its name, folder, id and every user and assistant message)`;
    } else {
      // pi's folder, and Claude Code's, Codex's and configured folders where they exist
      const others = (listing.folders ?? []).filter(f => f.exists && f.prefix !== SESSIONS_PREFIX).length;
      const where = others ? `${listing.folder} and ${others} other folder${others === 1 ? '' : 's'}` : listing.folder;
      this.summary.textContent = `${listing.total} session${listing.total === 1 ? '' : 's'} in ${where}`;
    }
    const skipped = listing.skipped ?? [];
    this.skipped.hidden = skipped.length === 0;
    this.skipped.textContent = skipped.length
      ? `${skipped.length} file${skipped.length === 1 ? '' : 's'} named like a session ${skipped.length === 1 ? 'is' : 'are'} not a regular file and ${skipped.length === 1 ? 'was' : 'were'} not read`
      : '';
    this.skipped.title = skipped.map(s => rowSafe(`${s.file}: ${s.reason}`)).join('\n');
    this.query = listing.query;
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
    const head = element('div', 'jp-PiSessions-project', box, rowSafe(group.cwd || group.dir || '(sessions folder)'));
    head.title = rowSafe(group.dir ? `${group.cwd}\n${group.dir}` : group.cwd);
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
    item.title = rowSafe(`${session.file}\n${session.first_message}`).replace(/↵/g, '\n');
    const title = sessionTitle(session, session.file, 300);
    item.setAttribute('aria-label', title);
    element('div', 'jp-PiSessions-name', item, title);
    if (session.name) {
      element('div', 'jp-PiSessions-first', item, rowSafe(session.first_message));
    }
    const meta = element('div', 'jp-PiSessions-meta', item);
    const agent = session.agent ?? 'pi';
    item.dataset.agent = agent;
    element('span', `jp-PiSessions-agent jp-PiSessions-agent-${agent}`, meta, AGENT_LABELS[agent] ?? agent);
    meta.append(` · ${session.message_count} message${session.message_count === 1 ? '' : 's'} · ${relativeTime(session.modified, now)}`);
    meta.title = `last change ${new Date(session.modified).toLocaleString()}`;
    const search = this.query || undefined;
    const openAt = (select: string | null): void => this.open(session.location, title, search, select);
    activate(item, () => openAt(null));
    const hits = session.hits;
    if (hits) {
      const count = `${hits.count}${hits.capped ? '+' : ''}`;
      element('div', 'jp-PiSessions-hits', item,
        hits.count ? `${count} matching message${hits.count === 1 ? '' : 's'}` : 'matches its name, folder or id');
      for (const piece of hits.snippets) {
        const snip = this.renderSnippet(piece);
        activate(snip, () => openAt(piece.entry_id));
        item.appendChild(snip);
      }
    }
    return item;
  }

  private renderSnippet(piece: SearchSnippet): HTMLElement {
    const node = document.createElement('div');
    node.className = 'jp-PiSessions-snippet';
    node.tabIndex = 0;
    node.setAttribute('role', 'link');
    node.title = 'Open the session with this search';
    if (piece.role && piece.role !== 'session') {
      element('span', 'jp-PiSessions-role', node, piece.role);
    }
    for (const [text, marked] of piece.parts) {
      // Marked or not, a part is text: a snippet of "<b>x</b>" shows those characters.
      element(marked ? 'mark' : 'span', '', node, rowSafe(text));
    }
    return node;
  }

  private readonly search: HTMLInputElement;
  private readonly summary: HTMLDivElement;
  private readonly skipped: HTMLDivElement;
  private query = '';
  private readonly list: HTMLDivElement;
  private searchTimer = 0;
  private timer = 0;
  private token = 0;
}

/** `fn` on a click, and on Enter or Space while `node` has the focus (a click inside a snippet
 * opens that snippet's entry, not the whole session). */
function activate(node: HTMLElement, fn: () => void): void {
  node.addEventListener('click', event => {
    event.stopPropagation();
    fn();
  });
  node.addEventListener('keydown', event => {
    if (event.target === node && (event.key === 'Enter' || event.key === ' ')) {
      event.preventDefault();
      event.stopPropagation();
      fn();
    }
  });
}
