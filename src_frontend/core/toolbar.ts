// The toolbar above the tree: pi's filter modes, the search box with its next / previous hit,
// the note filter, "label times", the "go to entry id" box and the position among the rows
// ("(3/120) [no tools]"), which also says when a new filter or search is still being laid out.

import { button, el, searchTokens, shortId } from './dom';
import { filterName, NoteFilterControl } from './notes';
import type { RowColumns } from './row';
import type { LocateReply } from './rowController';
import { FILTER_MODES, FilterMode, Transport } from './transport';

export const FILTER_LABELS: Record<FilterMode, string> = {
  default: 'default',
  'no-tools': 'no tools',
  'user-only': 'user only',
  'labeled-only': 'labeled',
  all: 'all'
};
/** Said beside the count under "all": pi's "all" still leaves out one kind of line. */
const ALL_NOTE = 'tool-call-only replies hidden, as in pi';
const ALL_NOTE_TITLE =
  "pi's \"all\" filter shows every entry except assistant messages that hold only tool calls (their calls show on the tool result rows); the one at the leaf stays.";

/** The words of the search `cols` were laid out for (marked in rows and pane). */
export function searchWordsOf(cols: RowColumns | null): string[] {
  return cols ? searchTokens(cols.header.search ?? '') : [];
}

export interface ToolbarHandlers {
  /** The keyboard back to the tree. */
  focusTree(): void;
  nextHit(backwards: boolean): void;
  /** The Notes tab (the note filter's count opens it). */
  showNotes(): void;
  /** Whether a layout is on screen (the go-to box waits for one). */
  hasRows(): boolean;
  selectId(id: string): Promise<void>;
  notify(message: string, isError?: boolean): void;
}

export class Toolbar {
  readonly el: HTMLDivElement;
  readonly noteFilter: NoteFilterControl;
  private readonly filterButtons = new Map<FilterMode, HTMLButtonElement>();
  private readonly search: HTMLInputElement;
  private searchTimer = 0;
  private readonly hitNav: HTMLSpanElement;
  private readonly hitCount: HTMLSpanElement;
  private readonly timesToggle: HTMLButtonElement;
  private readonly goTo: HTMLInputElement;
  private readonly position: HTMLSpanElement;
  private readonly filterNote: HTMLSpanElement;

  constructor(
    parent: HTMLElement,
    private readonly transport: Transport,
    private readonly handlers: ToolbarHandlers
  ) {
    const toolbar = el('div', 'pi-toolbar', parent);
    this.el = toolbar;
    const filters = el('div', 'pi-filters', toolbar);
    filters.setAttribute('role', 'radiogroup');
    for (const mode of FILTER_MODES) {
      const b = button(FILTER_LABELS[mode], 'pi-filter', filters, () => transport.set({ filter_mode: mode }));
      b.dataset.mode = mode;
      b.setAttribute('role', 'radio');
      this.filterButtons.set(mode, b);
    }
    const search = el('input', 'pi-search', toolbar);
    this.search = search;
    search.type = 'search';
    search.placeholder = 'search (all words)';
    search.setAttribute('aria-label', 'search the tree');
    search.addEventListener('input', () => this.searchSoon());
    search.addEventListener('keydown', event => {
      if (event.key === 'Escape') {
        search.value = '';
        transport.set({ search: '' });
        handlers.focusTree();
      } else if (event.key === 'ArrowDown' || event.key === 'Enter') {
        event.preventDefault();
        handlers.focusTree();
      } else if (event.key === 'F3') {
        event.preventDefault();
        handlers.nextHit(event.shiftKey);
      }
    });
    // Next and previous search hit (F3 and shift+F3 too), with where the selection is among them.
    this.hitNav = el('span', 'pi-hit-nav', toolbar);
    this.hitNav.hidden = true;
    button('↑', 'pi-small pi-hit-prev', this.hitNav, () => handlers.nextHit(true), 'previous hit (shift+F3)').setAttribute('aria-label', 'previous search hit');
    this.hitCount = el('span', 'pi-hit-count', this.hitNav);
    this.hitCount.setAttribute('aria-live', 'polite');
    button('↓', 'pi-small pi-hit-next', this.hitNav, () => handlers.nextHit(false), 'next hit (F3)').setAttribute('aria-label', 'next search hit');
    // Notes (notes.ts): the note filter and the count of notes, which opens the Notes tab.
    this.noteFilter = new NoteFilterControl(toolbar, transport, () => handlers.showNotes());
    this.timesToggle = button('label times', 'pi-filter', toolbar, () =>
      transport.set({ show_label_times: !transport.get('show_label_times') })
    );
    // Go to an entry by its id (or the start of one): Enter selects it and scrolls to it.
    const goTo = el('input', 'pi-input pi-goto', toolbar);
    this.goTo = goTo;
    goTo.type = 'text';
    goTo.placeholder = 'go to entry id';
    goTo.setAttribute('aria-label', 'go to entry id (type or paste an id or its start, then Enter)');
    goTo.spellcheck = false;
    goTo.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        void this.goToId(goTo.value);
      } else if (event.key === 'Escape') {
        event.preventDefault();
        goTo.value = '';
        handlers.focusTree();
      }
      event.stopPropagation(); // typed into the box, not tree keys
    });
    this.position = el('span', 'pi-position', toolbar);
    this.position.setAttribute('aria-live', 'polite');
    this.filterNote = el('span', 'pi-filter-note', toolbar, ALL_NOTE);
    this.filterNote.title = ALL_NOTE_TITLE;
    this.filterNote.hidden = true;
  }

  /** The search box's text, sent once the typing pauses. */
  private searchSoon(): void {
    window.clearTimeout(this.searchTimer);
    this.searchTimer = window.setTimeout(() => this.transport.set({ search: this.search.value }), 200);
  }

  /** Text typed in the tree goes to the search box (pi's tree searches as you type). */
  type(text: string): void {
    this.search.value += text;
    this.search.focus();
    this.searchSoon();
  }

  backspace(): void {
    this.search.value = this.search.value.slice(0, -1);
    this.transport.set({ search: this.search.value });
  }

  /** Escape in the tree: the search is cleared. */
  clearSearch(): void {
    if (this.search.value) {
      this.search.value = '';
      this.transport.set({ search: '' });
    }
  }

  /** The filter, search and label-times state drawn again. */
  showFilters(): void {
    const mode = this.transport.get('filter_mode');
    this.filterButtons.forEach((b, name) => {
      b.classList.toggle('pi-on', name === mode);
      b.setAttribute('aria-checked', name === mode ? 'true' : 'false');
    });
    this.timesToggle.classList.toggle('pi-on', this.transport.get('show_label_times'));
    if (document.activeElement !== this.search) {
      this.search.value = this.transport.get('search');
    }
  }

  /** Where the selection is among the rows; true while a new layout is being made. */
  showPosition(cols: RowColumns | null, selected: number): boolean {
    const transport = this.transport;
    const count = cols ? cols.length : 0;
    const mode = transport.get('filter_mode');
    // Until the rows of a new filter or search arrive (seconds on a large session), the count
    // on screen is the old layout's: say that the new one is being made instead.
    const working = cols !== null && (cols.header.filter_mode !== mode || (cols.header.search ?? '') !== transport.get('search'));
    this.position.classList.toggle('pi-working', working);
    if (working) {
      this.position.textContent = `laying out ${transport.get('search') ? 'the search' : `"${FILTER_LABELS[mode]}"`}…`;
    } else {
      const shown = (cols?.header.filter_mode ?? mode) as FilterMode;
      const noted = transport.get('note_filter') ?? '';
      this.position.textContent = count
        ? `(${selected + 1}/${count})${shown === 'default' ? '' : ` [${FILTER_LABELS[shown]}]`}${noted ? ` [${filterName(noted)}]` : ''}`
        : noted ? `No entries with notes (${filterName(noted)})` : 'No entries found';
    }
    this.filterNote.hidden = working || (cols?.header.filter_mode ?? mode) !== 'all';
    const words = searchWordsOf(cols);
    this.hitNav.hidden = working || !words.length || !count;
    this.hitCount.textContent = count ? `${selected + 1} of ${count}` : '';
    return working;
  }

  /** The "go to entry id" box: an id or its start; Enter selects the entry and scrolls to it. */
  private async goToId(text: string): Promise<void> {
    const wanted = text.trim();
    if (!wanted || !this.handlers.hasRows()) {
      return;
    }
    let reply: LocateReply;
    try {
      reply = (await this.transport.request<LocateReply>('locate', { id: wanted, prefix: true })).result;
    } catch (e) {
      this.handlers.notify(e instanceof Error ? e.message : String(e), true);
      return;
    }
    const matches = reply.matches ?? [];
    if (!reply.found) {
      this.handlers.notify(matches.length
        ? `"${wanted}" is the start of ${matches.length >= 5 ? 'five or more' : matches.length} entry ids (${matches.map(shortId).join(', ')}${matches.length >= 5 ? ', …' : ''}): type more of it`
        : `No entry has an id starting with "${wanted}"`, true);
      this.goTo.setAttribute('aria-invalid', 'true');
      return;
    }
    this.goTo.removeAttribute('aria-invalid');
    await this.handlers.selectId(reply.found);
  }
}
