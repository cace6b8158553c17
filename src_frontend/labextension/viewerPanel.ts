// A Lumino widget showing one pi session read-only: the viewer core over the REST transport,
// a note saying what this view cannot do, and a clear message when the file cannot be shown.
// It follows the file while it is attached: every 1.5 s when visible, every 6 s when hidden.

import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import type { CompactionPreview } from '../core/actions';
import { mountViewer, ViewerHandle } from '../core/viewer';

import { ApiError, PiLabApi, SessionState } from './api';
import { element } from './dom';
import { READ_ONLY_MESSAGE, RestTransport } from './restTransport';
import { sessionTitle, TitleSource } from './title';

const POLL_VISIBLE_MS = 1500;
const POLL_HIDDEN_MS = 6000;

/** How a viewer starts: with a search applied (and an entry selected), named until it loads. */
export interface ViewerOptions {
  search?: string;
  select?: string | null;
  title?: string;
  /** Told the session's title whenever an answer brings it (for the tab). */
  onTitle?: (title: string) => void;
}

export class SessionViewerPanel extends Widget {
  constructor(
    private readonly api: PiLabApi,
    path: string,
    private readonly options: ViewerOptions = {}
  ) {
    super();
    this.addClass('jp-PiSessionView');
    this.transport = new RestTransport(api, path, {
      state: state => this.onState(state),
      problem: error => this.onProblem(error)
    });
    this.transport.preset({ search: options.search, selected_id: options.select });
    if (options.title) {
      this.transport.setTitleHint(options.title);
    }
    this.note = element('div', 'jp-PiSessionView-note', this.node);
    this.note.textContent = `${READ_ONLY_MESSAGE}.`;
    this.message = element('div', 'jp-PiSessionView-message', this.node);
    this.message.setAttribute('role', 'status');
    this.message.textContent = 'Loading the session…';
    this.host = element('div', 'jp-PiSessionView-host', this.node);
    this.host.hidden = true;
    // The first read starts with the panel, not when JupyterLab attaches it: a large file's read
    // on the server is what the first rows wait for. The viewer is mounted once attached.
    this.attached = new Promise(resolve => (this.markAttached = resolve));
    this.started = true;
    this.readyPromise = this.reload();
  }

  /** The file, as the server names it. */
  get path(): string {
    return this.transport.location;
  }

  /** The state of the last answer, once the session is loaded. */
  get sessionState(): SessionState | null {
    return this.lastState;
  }

  /** Resolves when the first load ended (shown or refused). */
  get ready(): Promise<void> {
    return this.readyPromise;
  }

  /** Point the view at another file (the document was renamed). */
  setPath(path: string): void {
    if (path !== this.transport.location) {
      this.transport.setLocation(path);
      void this.reload();
    }
  }

  /** Select entry `entryId` (every row shown, so a tool result or a hidden entry is reachable). */
  select(entryId: string): void {
    const state = { selected_id: entryId, filter_mode: 'all' as const };
    if (!this.viewer) {
      this.transport.preset(state);
      return;
    }
    this.transport.set(state);
  }

  /** Show the rows that match `search` (the viewer's own search box shows it), selecting `select`. */
  applySearch(search: string, select?: string | null): void {
    if (!this.viewer) {
      this.transport.preset({ search, selected_id: select });
      return;
    }
    this.transport.set(select ? { search, selected_id: select } : { search });
  }

  /** Read the file again from the server's cache (a new layout), or show why it cannot be. */
  async reload(): Promise<void> {
    this.loading = true;
    try {
      await this.transport.load();
      await this.attached;
      this.showViewer();
    } catch (error) {
      this.showProblem(error);
    } finally {
      this.loading = false;
    }
  }

  /** What a manual compaction of the current branch would do now (a dry run; nothing is written). */
  async compactionPreview(): Promise<CompactionPreview> {
    const reply = await this.transport.request<CompactionPreview>('compact_preview');
    return reply.result;
  }

  /** What the viewer's own "Open in notebook" buttons do (the toolbar's command). */
  setOpenInNotebook(open: () => void): void {
    this.transport.openInNotebook = open;
  }

  async openInNotebook(): Promise<string> {
    const made = await this.api.openInNotebook(this.path);
    return made.path;
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.markAttached();
    this.resizeObserver = new ResizeObserver(() => this.fitViewer());
    this.resizeObserver.observe(this.node);
    this.schedulePoll();
  }

  protected onBeforeDetach(msg: Message): void {
    this.resizeObserver?.disconnect();
    this.resizeObserver = null;
    window.clearTimeout(this.pollTimer);
    super.onBeforeDetach(msg);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.fitViewer();
    this.schedulePoll(200);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    window.clearTimeout(this.pollTimer);
    this.resizeObserver?.disconnect();
    this.viewer?.unmount();
    this.viewer = null;
    super.dispose();
  }

  // ------------------------------------------------------------------ internals

  private showViewer(): void {
    this.message.hidden = true;
    this.message.classList.remove('jp-PiSessionView-error');
    this.host.hidden = false;
    if (!this.viewer) {
      this.viewer = mountViewer(this.host, this.transport);
      (this.host as HTMLElement & { piLabViewer?: ViewerHandle }).piLabViewer = this.viewer;
    }
    this.fitViewer();
  }

  private showProblem(error: unknown): void {
    const text = error instanceof Error ? error.message : String(error);
    this.message.hidden = false;
    this.message.classList.add('jp-PiSessionView-error');
    this.message.dataset.reason = error instanceof ApiError ? error.reason ?? '' : '';
    this.message.textContent = text;
    if (!this.viewer) {
      this.host.hidden = true;
    }
  }

  private onState(state: SessionState): void {
    this.lastState = state;
    const named = state.session as SessionState['session'] & TitleSource;
    const title = sessionTitle(
      { title: named.title, name: named.name, first_message: named.first_message ?? this.options.title },
      state.location?.name ?? ''
    );
    if (title) {
      this.title.label = title;
      this.options.onTitle?.(title); // every answer: a renamed document's tab went back to the file name
    }
    const file = state.file;
    const parts = [`${READ_ONLY_MESSAGE}.`];
    if (file.skipped_lines > 0) {
      const lines = file.first_skipped_lines.join(', ');
      parts.push(`${file.skipped_lines} line${file.skipped_lines === 1 ? ' is' : 's are'} not JSON and skipped (line ${lines}${file.skipped_lines > file.first_skipped_lines.length ? ', …' : ''}).`);
    }
    if (file.incomplete_tail) {
      parts.push('The last line is still being written.');
    }
    this.note.textContent = parts.join(' ');
    this.note.classList.toggle('jp-PiSessionView-warn', file.skipped_lines > 0);
  }

  private onProblem(error: ApiError | null): void {
    if (error === null) {
      if (this.followProblem) {
        this.followProblem = false;
        this.message.hidden = true;
      }
      return;
    }
    this.followProblem = true;
    this.message.hidden = false;
    this.message.classList.add('jp-PiSessionView-error');
    this.message.textContent =
      error.status === 0 ? `Not following the file: ${error.message}` : `Stopped following the file: ${error.message}`;
  }

  private fitViewer(): void {
    if (!this.viewer || this.host.hidden) {
      return;
    }
    const height = Math.max(320, Math.floor(this.host.clientHeight) - 2);
    if (height !== this.transport.get('height')) {
      this.transport.set({ height });
    }
  }

  private schedulePoll(delay?: number): void {
    window.clearTimeout(this.pollTimer);
    if (this.isDisposed || !this.isAttached) {
      return;
    }
    const active = this.viewer !== null && this.isVisible && document.visibilityState === 'visible';
    const wait = delay ?? (active ? POLL_VISIBLE_MS : POLL_HIDDEN_MS);
    this.pollTimer = window.setTimeout(() => void this.pollOnce(), wait);
  }

  private async pollOnce(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    try {
      if (this.loading) {
        // the first read of a large file is still going on
      } else if (this.viewer) {
        await this.transport.poll();
      } else if (this.started) {
        await this.reload(); // not shown yet (an error at first): try again, the file may have changed
      }
    } catch {
      // shown by onProblem; keep trying
    }
    this.schedulePoll();
  }

  private readonly transport: RestTransport;
  private readonly note: HTMLDivElement;
  private readonly message: HTMLDivElement;
  private readonly host: HTMLDivElement;
  private viewer: ViewerHandle | null = null;
  private resizeObserver: ResizeObserver | null = null;
  private pollTimer = 0;
  private started = false;
  private loading = false;
  private followProblem = false;
  private lastState: SessionState | null = null;
  private readyPromise: Promise<void> = Promise.resolve();
  private readonly attached: Promise<void>;
  private markAttached: () => void = () => undefined;
}
