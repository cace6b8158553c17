// The side pane beside the tree and its tabs: the entry (detail.ts, with its notes and the
// search's words marked), what the model sees (projection.ts with the composition bar), the
// compactions (gauge.ts), Compare (compare.ts) and the Notes tab (notes.ts). The pane the view
// state names is drawn again when the selection or that state changes; the Notes tab is this
// view's own.

import type { ComparePane } from './compare';
import type { Composition } from './composition';
import { renderDetail, EntryDetail } from './detail';
import { button, clear, el, markWords } from './dom';
import { renderCompactions } from './gauge';
import { NotesModel, NotesSection, renderNotesList } from './notes';
import { renderProjection, Projection } from './projection';
import type { CompactionInfo, Gauge, Transport, ViewState } from './transport';

export interface SidePaneHandlers {
  open(id: string): void;
  /** The gauge and compactions at the leaf of this view. */
  gauge(): Gauge;
  compactions(): CompactionInfo[];
  /** The words of the search on screen. */
  searchWords(): string[];
}

export class SidePane {
  readonly pane: HTMLDivElement;
  /** Going backwards, the entry pane's hits are entered from its last one. */
  markFromEnd = false;
  private readonly tabButtons = new Map<string, HTMLButtonElement>();
  private readonly notesTab: HTMLButtonElement;
  // The Notes tab is this view's own (not a view-state pane): every note of the session.
  private notesPane = false;
  // The entry a note is to be added to once its pane is drawn (shift+N before the pane caught up).
  private noteWanted: string | null = null;
  // The entry whose hits the pane marks (the pane may still show the one selected before).
  private markedFor: string | null = null;
  private token = 0;
  private fullFor: string | null = null;
  // The part the "what the model sees" list is filtered to; kept from node to node (a part the
  // next node lacks shows every message).
  private contextPart: string | null = null;
  private timer = 0;
  // A few words of each noted entry for the Notes tab, asked once per entry.
  private readonly previews = new Map<string, Promise<string | null>>();

  constructor(
    main: HTMLElement,
    private readonly transport: Transport,
    private readonly notes: NotesModel,
    private readonly noteSection: NotesSection,
    private readonly compare: () => ComparePane,
    private readonly handlers: SidePaneHandlers
  ) {
    const side = el('div', 'pi-side', main);
    const tabs = el('div', 'pi-tabs', side);
    tabs.setAttribute('role', 'tablist');
    this.pane = el('div', 'pi-pane', side);
    for (const [name, label] of [['detail', 'Entry'], ['context', 'What the model sees'], ['compactions', 'Compactions'], ['compare', 'Compare']] as const) {
      const b = button(label, 'pi-tab', tabs, () => {
        const again = this.notesPane && transport.get('side_pane') === name;
        this.notesPane = false;
        if (again) {
          this.refresh(); // leaving the Notes tab for the pane the state already names
        } else {
          transport.set({ side_pane: name });
        }
      });
      b.setAttribute('role', 'tab');
      this.tabButtons.set(name, b);
    }
    this.notesTab = button('Notes', 'pi-tab pi-tab-notes', tabs, () => this.showNotes());
    this.notesTab.setAttribute('role', 'tab');
    this.notesTab.hidden = true; // until the host answers `notes`
  }

  get showsNotes(): boolean {
    return this.notesPane;
  }

  /** The Notes tab shown once the host keeps notes. */
  notesAvailable(available: boolean): void {
    this.notesTab.hidden = !available;
  }

  showNotes(): void {
    this.notesPane = true;
    this.refresh();
  }

  /** The view state names another pane: the Notes tab gives way to it. */
  paneChanged(): void {
    this.notesPane = false;
    this.refresh();
  }

  /** Open the note editor of `id` once its entry pane is drawn. */
  wantNote(id: string): void {
    this.noteWanted = id;
    this.notesPane = false;
    if (this.transport.get('side_pane') !== 'detail') {
      this.transport.set({ side_pane: 'detail' });
    } else {
      this.refresh();
    }
  }

  /** Whether the entry pane of `id` is on screen (not the Notes tab). */
  showsEntry(id: string): boolean {
    return !this.notesPane && this.transport.get('side_pane') === 'detail' && this.noteSection.shows(id);
  }

  openNoteEditor(): void {
    this.noteSection.open(null);
  }

  /** The notes changed: the Notes tab, or the notes of the entry on screen, drawn again. */
  notesChanged(selectedId: string | null): void {
    if (this.notesPane) {
      this.refresh();
    } else if (this.noteSection.shows(selectedId)) {
      this.noteSection.refresh();
    }
  }

  /** Drawn again a moment later: one drawing for a burst of changes. */
  schedule(): void {
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => this.refresh(), 60);
  }

  refresh(): void {
    const transport = this.transport;
    const pane = this.pane;
    const which = transport.get('side_pane');
    this.tabButtons.forEach((b, name) => {
      b.classList.toggle('pi-on', name === which && !this.notesPane);
      b.setAttribute('aria-selected', name === which && !this.notesPane ? 'true' : 'false');
    });
    this.notesTab.classList.toggle('pi-on', this.notesPane);
    this.notesTab.setAttribute('aria-selected', this.notesPane ? 'true' : 'false');
    const id = transport.get('selected_id');
    const token = ++this.token;
    this.markedFor = null;
    if (this.notesPane) {
      // Drawn again on every selection (a click in the list selects): where the reader was stays.
      const scroll = pane.scrollTop;
      renderNotesList(pane, this.notes, transport.get('note_filter') ?? '', { open: entry => this.handlers.open(entry), preview: entry => this.entryPreview(entry) });
      pane.scrollTop = scroll;
      return;
    }
    if (which === 'compactions') {
      renderCompactions(pane, this.handlers.gauge(), this.handlers.compactions(), {
        open: entry => this.handlers.open(entry),
        settings: values => transport.set(values as Partial<ViewState>),
        summary: entry => transport.request<EntryDetail>('entry', { id: entry, full: true }).then(reply => reply.result.summary?.text ?? null)
      });
      return;
    }
    if (which === 'compare') {
      this.compare().render(pane);
      return;
    }
    if (!id) {
      clear(pane);
      el('p', 'pi-muted', pane, 'Select an entry.');
      return;
    }
    if (which === 'detail') {
      this.drawEntry(id, token);
    } else {
      this.drawContext(id, token);
    }
  }

  private drawEntry(id: string, token: number): void {
    const pane = this.pane;
    const transport = this.transport;
    transport.request<EntryDetail>('entry', { id, full: this.fullFor === id }).then(reply => {
      if (token !== this.token) {
        return;
      }
      renderDetail(pane, reply.result, {
        open: entry => this.handlers.open(entry),
        full: entry => {
          this.fullFor = entry;
          this.refresh();
        },
        toolOutput: () => transport.get('tool_output'),
        setToolOutput: mode => transport.set({ tool_output: mode })
      });
      // The entry's notes, above its body (a long tool output must not push them away).
      this.noteSection.mount(pane, pane.querySelector('.pi-detail-body'), id);
      if (this.noteWanted === id) {
        this.noteWanted = null;
        this.noteSection.open(null);
      }
      // The search's words, marked where they occur in the entry; the first (or, coming
      // back with shift+F3, the last) is the current one.
      const body = pane.querySelector<HTMLElement>('.pi-detail-body');
      // The raw JSON repeats the entry's text: its words are not walked a second time.
      const marks = body && markWords(body, this.handlers.searchWords(), '.pi-raw').length ? this.visibleMarks() : [];
      if (marks.length) {
        this.showMark(marks, this.markFromEnd ? marks.length - 1 : 0);
      }
      this.markFromEnd = false;
      this.markedFor = id;
    }, e => showError(pane, e));
  }

  private drawContext(id: string, token: number): void {
    const pane = this.pane;
    const transport = this.transport;
    // The composition bar is drawn with the list; a host without it shows the list alone.
    const composition = transport.request<Composition>('composition', { id }).then(reply => reply.result, () => null);
    Promise.all([transport.request<Projection>('context_at', { id }), composition]).then(([reply, parts]) => {
      if (token !== this.token) {
        return;
      }
      const draw = (): void => renderProjection(pane, reply.result, entry => this.handlers.open(entry), {
        agent: (transport.get('session') as { agent?: string } | null)?.agent,
        composition: parts,
        part: this.contextPart,
        choose: part => {
          // The keyboard stays on the part chosen (or on the one just cleared).
          const focus = part ?? this.contextPart;
          this.contextPart = part;
          const scroll = pane.scrollTop;
          draw();
          pane.scrollTop = part === null ? scroll : 0;
          pane.querySelector<HTMLElement>(`.pi-composition-item[data-part="${CSS.escape(focus ?? '')}"]`)?.focus();
        }
      });
      draw();
    }, e => showError(pane, e));
  }

  /**
   * The next (or previous) search hit in the entry pane of `selectedId`, when the pane shows
   * it and has one that way; false: the next row's turn.
   */
  stepMark(backwards: boolean, selectedId: string | undefined): boolean {
    const marks = this.visibleMarks();
    const at = marks.findIndex(m => m.classList.contains('pi-hit-current'));
    const next = at + (backwards ? -1 : 1);
    const paneIsCurrent = this.transport.get('side_pane') === 'detail' && this.markedFor !== null && this.markedFor === selectedId;
    if (paneIsCurrent && at >= 0 && next >= 0 && next < marks.length) {
      this.showMark(marks, next);
      return true;
    }
    return false;
  }

  /** The marks the reader can see (not those inside a closed "raw JSON" box). */
  private visibleMarks(): HTMLElement[] {
    return Array.from(this.pane.querySelectorAll<HTMLElement>('mark.pi-hit')).filter(m => m.getClientRects().length > 0);
  }

  private showMark(marks: HTMLElement[], index: number): void {
    const pane = this.pane;
    marks.forEach((m, i) => m.classList.toggle('pi-hit-current', i === index));
    const mark = marks[index];
    if (mark) {
      // Scroll the pane only (the page and the tree stay where they are).
      const box = pane.getBoundingClientRect();
      const r = mark.getBoundingClientRect();
      if (r.top < box.top || r.bottom > box.bottom) {
        pane.scrollTop += r.top - box.top - pane.clientHeight / 3;
      }
    }
  }

  private entryPreview(id: string): Promise<string | null> {
    let known = this.previews.get(id);
    if (!known) {
      known = this.transport.request<EntryDetail>('entry', { id }).then(reply => {
        const d = reply.result;
        const text = d.copy_text ?? d.summary?.text ?? d.tool_result?.text ?? d.bash?.command ?? d.kind;
        return text.replace(/\s+/g, ' ').trim().slice(0, 160);
      }, () => null);
      this.previews.set(id, known);
    }
    return known;
  }
}

function showError(parent: HTMLElement, e: unknown): void {
  clear(parent);
  el('div', 'pi-error-box', parent, e instanceof Error ? e.message : String(e));
}
