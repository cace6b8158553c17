// The viewer: header, gauge, toolbar, tree list, side pane (detail / what the model sees /
// compactions), live strip and dialogs, wired to a Transport. `mountViewer(el, transport)`
// returns the function that unmounts it.

import { ActionTarget, CompactionPreview, Dialogs, foreignRefusal } from './actions';
import { COMPARE_STYLES, ComparePane } from './compare';
import type { Composition } from './composition';
import { renderDetail, EntryDetail } from './detail';
import { button, clear, el, markWords, rowSafe, searchTokens, shortId } from './dom';
import { GaugeView, renderCompactions } from './gauge';
import { handleTreeKey } from './keys';
import { filterName, markWords as noteMarkWords, NoteFilterControl, NotesModel, NotesSection, renderNotesList } from './notes';
import { renderProjection, Projection } from './projection';
import { childCount, readHeader, RowColumns, segmentStartDown, segmentStartUp } from './row';
import { RowList, rowText } from './rowList';
import { STYLES } from './styles';
import { NAVIGATION_STYLES } from './stylesNavigation';
import { TimelineStrip } from './timeline';
import { CompactionInfo, FILTER_MODES, FilterMode, Gauge, LiveEvent, RowText, SessionInfo, Transport, ViewState } from './transport';

interface RowsReply {
  stale?: boolean;
  version: number;
  start: number;
  rows: RowText[];
}

const TEXT_CHUNK = 100;
const FILTER_LABELS: Record<FilterMode, string> = {
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

interface LocateReply {
  row: number;
  version: number;
  id: string | null;
  /** With `prefix`: the entry the text names, or up to five it could name. */
  found?: string;
  matches?: string[];
}

export interface ViewerHandle {
  unmount(): void;
  /** For tests and the benchmark: the decoded rows. */
  columns(): RowColumns | null;
}

export function mountViewer(host: HTMLElement, transport: Transport): ViewerHandle {
  const offs: (() => void)[] = [];
  const root = el('div', 'pi-lab', host);
  // Keys typed in the viewer are the viewer's: JupyterLab's notebook shortcuts stay out.
  root.setAttribute('data-lm-suppress-shortcuts', 'true');
  el('style', '', root, STYLES + COMPARE_STYLES + NAVIGATION_STYLES);
  root.style.height = `${transport.get('height') || 560}px`;

  // ---------------------------------------------------------------- header and gauge
  const header = el('div', 'pi-header', root);
  const title = el('span', 'pi-title', header);
  const meta = el('span', 'pi-meta', header);
  // Read-only until the reader allows writing (notebook widget) or always (JupyterLab viewer).
  const access = el('span', 'pi-access', header);
  const busy = el('span', 'pi-busy', header);
  const status = el('span', 'pi-status', header);
  status.setAttribute('role', 'status');
  const gauge = new GaugeView(root, {
    open: id => void selectId(id),
    settings: values => transport.set(values as Partial<ViewState>)
  });

  // ---------------------------------------------------------------- toolbar
  const toolbar = el('div', 'pi-toolbar', root);
  const filters = el('div', 'pi-filters', toolbar);
  filters.setAttribute('role', 'radiogroup');
  const filterButtons = new Map<FilterMode, HTMLButtonElement>();
  for (const mode of FILTER_MODES) {
    const b = button(FILTER_LABELS[mode], 'pi-filter', filters, () => transport.set({ filter_mode: mode }));
    b.dataset.mode = mode;
    b.setAttribute('role', 'radio');
    filterButtons.set(mode, b);
  }
  const search = el('input', 'pi-search', toolbar);
  search.type = 'search';
  search.placeholder = 'search (all words)';
  search.setAttribute('aria-label', 'search the tree');
  let searchTimer = 0;
  search.addEventListener('input', () => {
    window.clearTimeout(searchTimer);
    searchTimer = window.setTimeout(() => transport.set({ search: search.value }), 200);
  });
  search.addEventListener('keydown', event => {
    if (event.key === 'Escape') {
      search.value = '';
      transport.set({ search: '' });
      list.el.focus();
    } else if (event.key === 'ArrowDown' || event.key === 'Enter') {
      event.preventDefault();
      list.el.focus();
    } else if (event.key === 'F3') {
      event.preventDefault();
      nextHit(event.shiftKey);
    }
  });
  // Next and previous search hit (F3 and shift+F3 too), with where the selection is among them.
  const hitNav = el('span', 'pi-hit-nav', toolbar);
  hitNav.hidden = true;
  button('↑', 'pi-small pi-hit-prev', hitNav, () => nextHit(true), 'previous hit (shift+F3)').setAttribute('aria-label', 'previous search hit');
  const hitCount = el('span', 'pi-hit-count', hitNav);
  hitCount.setAttribute('aria-live', 'polite');
  button('↓', 'pi-small pi-hit-next', hitNav, () => nextHit(false), 'next hit (F3)').setAttribute('aria-label', 'next search hit');
  // Notes (notes.ts): the note filter and the count of notes, which opens the Notes tab.
  const noteFilter = new NoteFilterControl(toolbar, transport, () => showNotesPane());
  const timesToggle = button('label times', 'pi-filter', toolbar, () =>
    transport.set({ show_label_times: !transport.get('show_label_times') })
  );
  // Go to an entry by its id (or the start of one): Enter selects it and scrolls to it.
  const goTo = el('input', 'pi-input pi-goto', toolbar);
  goTo.type = 'text';
  goTo.placeholder = 'go to entry id';
  goTo.setAttribute('aria-label', 'go to entry id (type or paste an id or its start, then Enter)');
  goTo.spellcheck = false;
  goTo.addEventListener('keydown', event => {
    if (event.key === 'Enter') {
      event.preventDefault();
      void goToId(goTo.value);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      goTo.value = '';
      list.el.focus();
    }
    event.stopPropagation(); // typed into the box, not tree keys
  });
  const position = el('span', 'pi-position', toolbar);
  position.setAttribute('aria-live', 'polite');
  const filterNote = el('span', 'pi-filter-note', toolbar, ALL_NOTE);
  filterNote.title = ALL_NOTE_TITLE;
  filterNote.hidden = true;

  const banner = el('div', 'pi-banner', root);
  banner.setAttribute('role', 'alert');
  banner.hidden = true;
  const editorBox = el('div', 'pi-editor-text', root);
  editorBox.hidden = true;
  // A leaf moved in this view only (a viewer that cannot write): says so, with the way back
  // and the way to a real move.
  const viewLeafBar = el('div', 'pi-view-leaf-bar', root);
  viewLeafBar.setAttribute('role', 'status');
  viewLeafBar.hidden = true;

  // ---------------------------------------------------------------- tree and side pane
  const main = el('div', 'pi-main', root);
  // The context timeline strip, above the tree: a click or Enter selects the call's entry while
  // the keyboard stays on the strip; the tree's selection shows as the strip's highlighted point.
  const timeline = new TimelineStrip(root, main, transport, {
    select: id => void selectId(id, false),
    settings: () => ('context_window' in liveGauge ? liveGauge : null)
  });
  const list = new RowList(main, {
    select: row => select(row),
    activate: row => void withTarget(row, t => dialogs.navigate(t, leafNow())),
    menu: row => void withTarget(row, t => dialogs.menu(t, leafNow())),
    needTexts: (start, end) => fetchTexts(start, end),
    showLabelTimes: () => transport.get('show_label_times'),
    rowClass: row => `${previewClass(row)}${viewLeaf && cols?.texts[row]?.id === viewLeaf ? ' pi-view-leaf' : ''}`.trim(),
    searchWords: () => searchWords(),
    noteMark: id => notes.markOf(id)
  });
  const side = el('div', 'pi-side', main);
  const tabs = el('div', 'pi-tabs', side);
  tabs.setAttribute('role', 'tablist');
  const pane = el('div', 'pi-pane', side);
  const tabButtons = new Map<string, HTMLButtonElement>();
  for (const [name, label] of [['detail', 'Entry'], ['context', 'What the model sees'], ['compactions', 'Compactions'], ['compare', 'Compare']] as const) {
    const b = button(label, 'pi-tab', tabs, () => {
      const again = notesPane && transport.get('side_pane') === name;
      notesPane = false;
      if (again) {
        refreshSide(); // leaving the Notes tab for the pane the state already names
      } else {
        transport.set({ side_pane: name });
      }
    });
    b.setAttribute('role', 'tab');
    tabButtons.set(name, b);
  }
  // The Notes tab is this view's own (not a view-state pane): every note of the session.
  let notesPane = false;
  const notesTab = button('Notes', 'pi-tab pi-tab-notes', tabs, () => showNotesPane());
  notesTab.setAttribute('role', 'tab');
  notesTab.hidden = true; // until the host answers `notes`
  const live = el('div', 'pi-live', root);
  live.hidden = true;
  const dialogs = new Dialogs(root, transport, {
    open: id => void selectId(id),
    preview: p => showPreview(p),
    notify: (message, isError) => notify(message, isError),
    closed: () => list.el.focus(),
    moveLeaf: target => void moveLeafInView(target),
    showContext: id => {
      void selectId(id).then(() => transport.set({ side_pane: 'context' }));
    }
  });
  const compare = new ComparePane(transport, {
    open: id => void selectId(id),
    selected: () => transport.get('selected_id'),
    leaf: () => leafNow(),
    goTo: id => {
      void selectId(id).then(() => {
        if (cols && selected >= 0 && cols.texts[selected]?.id === id) {
          void withTarget(selected, t => dialogs.navigate(t, leafNow()));
        } else {
          // The filter hides the entry: selectId showed its nearest visible ancestor, which is
          // not where the user asked to go, so no dialog opens on it.
          notify(`${id} is hidden by the filter: choose "all" to go there`, true);
        }
      });
    },
    notify: (message, isError) => notify(message, isError)
  });
  const allowButton = button('Allow writing…', 'pi-small', access, () => dialogs.allowWrites());
  const accessBadge = el('span', 'pi-readonly-badge', access, 'read-only');
  access.insertBefore(accessBadge, allowButton);

  // ---------------------------------------------------------------- notes
  const notes = new NotesModel(transport);
  const noteSection = new NotesSection(notes, {
    open: id => void selectId(id),
    notify: (message, isError) => notify(message, isError),
    done: () => list.el.focus(),
    readOnly: () => notesRefusal()
  });
  /** Why a note cannot be written here. */
  function notesRefusal(): string {
    if (transport.notesRefusal) {
      return transport.notesRefusal;
    }
    if (!notes.available) {
      return 'This view has no notes store (an older kernel or a saved snapshot): open the session with pi_lab to add notes.';
    }
    const store = notes.store;
    return `Notes cannot be written here${store ? `: ${store} is not writable` : ''}.`;
  }
  // The entry a note is to be added to once its pane is drawn (shift+N before the pane caught up).
  let noteWanted: string | null = null;
  function addNote(): void {
    void withTarget(selected, target => {
      if (!notes.available || (notes.loaded && !notes.writable)) {
        notify(notesRefusal(), true);
        return;
      }
      if (!notesPane && transport.get('side_pane') === 'detail' && noteSection.shows(target.id)) {
        noteSection.open(null);
        return;
      }
      noteWanted = target.id;
      notesPane = false;
      if (transport.get('side_pane') !== 'detail') {
        transport.set({ side_pane: 'detail' });
      } else {
        refreshSide();
      }
    });
  }
  function showNotesPane(): void {
    notesPane = true;
    refreshSide();
  }
  // The rows of the noted entries in the layout on screen (asked with `locate` once per layout
  // and set of notes), for alt+N / alt+shift+N.
  let notedRowsCache: { version: number; key: string; rows: number[] } | null = null;
  async function notedRows(): Promise<number[]> {
    if (!cols) {
      return [];
    }
    const version = cols.version;
    const ids = notes.notedIds();
    const key = ids.join('\n');
    if (notedRowsCache && notedRowsCache.version === version && notedRowsCache.key === key) {
      return notedRowsCache.rows;
    }
    const replies = await Promise.all(ids.map(id => transport.request<LocateReply>('locate', { id }).then(
      reply => (reply.result.version === version && reply.result.row >= 0 && reply.result.id === id ? reply.result.row : -1),
      () => -1
    )));
    const rows = [...new Set(replies.filter(row => row >= 0))].sort((a, b) => a - b);
    notedRowsCache = { version, key, rows };
    return rows;
  }
  async function nextNote(backwards: boolean): Promise<void> {
    if (!cols) {
      return;
    }
    if (!notes.notedIds().length) {
      notify(notes.writable ? 'No notes in this session yet: shift+N adds one to the selected entry' : 'No notes in this session');
      return;
    }
    const rows = await notedRows();
    if (!rows.length) {
      notify('No noted entry is shown by this filter: choose "all" to see them', true);
      return;
    }
    const after = rows.find(row => row > selected);
    const before = [...rows].reverse().find(row => row < selected);
    const row = backwards ? before ?? rows[rows.length - 1] : after ?? rows[0];
    select(row);
    list.reveal(row);
  }
  function notesChanged(): void {
    notesTab.hidden = !notes.available;
    noteFilter.update(notes);
    list.render();
    updatePosition();
    timeline.setNoteMarks(notes.notedIds().map(id => {
      const mark = notes.markOf(id)!;
      return { entry_id: id, finding: mark.findings > 0, words: noteMarkWords(mark) };
    }));
    if (notesPane) {
      refreshSide();
    } else if (noteSection.shows(transport.get('selected_id'))) {
      noteSection.refresh();
    }
  }
  offs.push(notes.onChange(notesChanged));
  // A few words of each noted entry for the Notes tab, asked once per entry.
  const previews = new Map<string, Promise<string | null>>();
  function entryPreview(id: string): Promise<string | null> {
    let known = previews.get(id);
    if (!known) {
      known = transport.request<EntryDetail>('entry', { id }).then(reply => {
        const d = reply.result;
        const text = d.copy_text ?? d.summary?.text ?? d.tool_result?.text ?? d.bash?.command ?? d.kind;
        return text.replace(/\s+/g, ' ').trim().slice(0, 160);
      }, () => null);
      previews.set(id, known);
    }
    return known;
  }

  // ---------------------------------------------------------------- rows
  let cols: RowColumns | null = null;
  let selected = -1;
  // Deltas carry the gauge, leaf and entry count ahead of the traitlets (which catch up later).
  let liveGauge = transport.get('gauge') as Gauge;
  let liveCompactions: CompactionInfo[] | null = null;
  let liveLeaf = transport.get('leaf_id');
  let liveEntries: number | null = null;
  // A leaf moved in this view only (transport.leafInView: a viewer that cannot write, whose
  // host answers the reads at any leaf); null: the file's leaf.
  let viewLeaf: string | null = null;
  const leafNow = (): string | null => viewLeaf ?? liveLeaf;
  let structurePending = false;
  const textsInFlight = new Set<string>();

  function loadStructure(blob: DataView | null, force = false): void {
    if (!blob || blob.byteLength === 0) {
      return;
    }
    const head = readHeader(blob);
    if (!head || (cols && !force && head.version <= cols.version)) {
      return;
    }
    cols = new RowColumns(blob);
    textsInFlight.clear();
    list.setColumns(cols);
    const wanted = transport.get('selected_id');
    selected = head.selected_row >= 0 && head.selected_row < cols.length ? head.selected_row : cols.length - 1;
    list.setSelected(selected);
    list.reveal(selected, true);
    if (selected >= 0 && !cols.texts[selected]) {
      fetchTexts(selected, selected + 1); // the selection's id, even before it scrolls into view
    }
    updatePosition();
    if (wanted && head.selected_id && head.selected_id !== wanted) {
      transport.set({ selected_id: head.selected_id });
    }
    refreshSide();
  }

  function requestStructure(): void {
    if (structurePending) {
      return;
    }
    structurePending = true;
    transport.request('structure').then(
      reply => {
        structurePending = false;
        loadStructure(reply.buffers[0] ?? null, true);
      },
      () => {
        structurePending = false;
      }
    );
  }

  function fetchTexts(start: number, end: number): void {
    if (!cols) {
      return;
    }
    const version = cols.version;
    for (let chunk = Math.floor(start / TEXT_CHUNK); chunk * TEXT_CHUNK < end; chunk++) {
      const key = `${version}:${chunk}`;
      if (textsInFlight.has(key)) {
        continue;
      }
      textsInFlight.add(key);
      const from = chunk * TEXT_CHUNK;
      transport
        .request<RowsReply>('rows', { start: from, end: from + TEXT_CHUNK, version })
        .then(reply => {
          const result = reply.result;
          if (!cols || result.stale || result.version !== cols.version) {
            textsInFlight.delete(key);
            return;
          }
          result.rows.forEach((text, i) => {
            cols!.setText(result.start + i, text);
            if (!text.text && !text.type && cols!.kindName(result.start + i) === 'unknown') {
              fetchType(text); // a kernel that does not send the type of such rows
            }
          });
          list.render();
          if (selected >= result.start && selected < result.start + result.rows.length) {
            updateSelectedId();
          }
          startTimeline();
        }, () => textsInFlight.delete(key));
    }
  }

  // Rows of an entry type pi does not know are named by that type; where the rows answer does
  // not carry it, the entry answer does (few rows have such types; each is asked for once).
  // The types are kept: a new layout (another filter, a search) brings new row texts without them.
  const typesInFlight = new Set<string>();
  const knownTypes = new Map<string, string>();
  function fetchType(text: RowText): void {
    const known = knownTypes.get(text.id);
    if (known !== undefined) {
      text.type = known;
      return;
    }
    if (typesInFlight.has(text.id)) {
      return;
    }
    typesInFlight.add(text.id);
    transport.request<EntryDetail>('entry', { id: text.id }).then(reply => {
      typesInFlight.delete(text.id);
      const type = reply.result.type;
      if (typeof type !== 'string') {
        return;
      }
      knownTypes.set(text.id, type);
      text.type = type;
      // The rows answer may since have been replaced by a newer one for the same entry.
      cols?.texts.forEach(t => {
        if (t && t.id === text.id && !t.text) {
          t.type = type;
        }
      });
      list.render();
    }, () => typesInFlight.delete(text.id));
  }

  let timelineStarted = false;
  function startTimeline(): void {
    if (!timelineStarted) {
      timelineStarted = true;
      timeline.follow(leafNow());
    }
  }

  function updatePosition(): void {
    const count = cols ? cols.length : 0;
    const mode = transport.get('filter_mode');
    // Until the rows of a new filter or search arrive (seconds on a large session), the count
    // on screen is the old layout's: say that the new one is being made instead.
    const working = cols !== null && (cols.header.filter_mode !== mode || (cols.header.search ?? '') !== transport.get('search'));
    root.classList.toggle('pi-laying-out', working);
    list.el.setAttribute('aria-busy', working ? 'true' : 'false');
    position.classList.toggle('pi-working', working);
    if (working) {
      position.textContent = `laying out ${transport.get('search') ? 'the search' : `"${FILTER_LABELS[mode]}"`}…`;
    } else {
      const shown = (cols?.header.filter_mode ?? mode) as FilterMode;
      const noted = transport.get('note_filter') ?? '';
      position.textContent = count
        ? `(${selected + 1}/${count})${shown === 'default' ? '' : ` [${FILTER_LABELS[shown]}]`}${noted ? ` [${filterName(noted)}]` : ''}`
        : noted ? `No entries with notes (${filterName(noted)})` : 'No entries found';
    }
    filterNote.hidden = working || (cols?.header.filter_mode ?? mode) !== 'all';
    const words = searchWords();
    hitNav.hidden = working || !words.length || !count;
    hitCount.textContent = count ? `${selected + 1} of ${count}` : '';
  }

  /** The words of the search the rows on screen were laid out for (marked in rows and pane). */
  function searchWords(): string[] {
    return cols ? searchTokens(cols.header.search ?? '') : [];
  }

  /**
   * The next (or previous) search hit: first the next marked word in the entry pane, then the
   * next row (every row of a search layout matched it), wrapping at either end.
   */
  function nextHit(backwards: boolean): void {
    if (!cols || !cols.length || !searchWords().length) {
      notify('No search: type words in the search box first');
      return;
    }
    const marks = visibleMarks();
    const at = marks.findIndex(m => m.classList.contains('pi-hit-current'));
    const next = at + (backwards ? -1 : 1);
    const paneIsCurrent = transport.get('side_pane') === 'detail' && markedFor !== null && markedFor === cols.texts[selected]?.id;
    if (paneIsCurrent && at >= 0 && next >= 0 && next < marks.length) {
      showMark(marks, next);
      return;
    }
    const row = backwards ? (selected <= 0 ? cols.length - 1 : selected - 1) : selected >= cols.length - 1 ? 0 : selected + 1;
    markFromEnd = backwards;
    select(row);
    list.reveal(row);
  }
  // Going backwards, the entry pane's hits are entered from its last one.
  let markFromEnd = false;
  // The entry whose hits the pane marks (the pane may still show the one selected before).
  let markedFor: string | null = null;

  /** The marks the reader can see (not those inside a closed "raw JSON" box). */
  function visibleMarks(): HTMLElement[] {
    return Array.from(pane.querySelectorAll<HTMLElement>('mark.pi-hit')).filter(m => m.getClientRects().length > 0);
  }

  function showMark(marks: HTMLElement[], index: number): void {
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

  /** The "go to entry id" box: an id or its start; Enter selects the entry and scrolls to it. */
  async function goToId(text: string): Promise<void> {
    const wanted = text.trim();
    if (!wanted || !cols) {
      return;
    }
    let reply: LocateReply;
    try {
      reply = (await transport.request<LocateReply>('locate', { id: wanted, prefix: true })).result;
    } catch (e) {
      notify(e instanceof Error ? e.message : String(e), true);
      return;
    }
    const matches = reply.matches ?? [];
    if (!reply.found) {
      notify(matches.length
        ? `"${wanted}" is the start of ${matches.length >= 5 ? 'five or more' : matches.length} entry ids (${matches.map(shortId).join(', ')}${matches.length >= 5 ? ', …' : ''}): type more of it`
        : `No entry has an id starting with "${wanted}"`, true);
      goTo.setAttribute('aria-invalid', 'true');
      return;
    }
    goTo.removeAttribute('aria-invalid');
    await selectId(reply.found);
  }

  /** Move the leaf in this view only (nothing is written): pi's rule, a user message re-edited. */
  async function moveLeafInView(target: ActionTarget): Promise<void> {
    let id: string | null = target.id;
    if (target.kind === 'user' || target.kind === 'custom_message') {
      try {
        id = (await transport.request<EntryDetail>('entry', { id: target.id })).result.parent_id ?? null;
      } catch (e) {
        notify(e instanceof Error ? e.message : String(e), true);
        return;
      }
      if (id === null) {
        notify('This is the first message: re-editing it leaves an empty context, with no leaf to show.', true);
        return;
      }
    }
    setViewLeaf(id === liveLeaf ? null : id);
    await selectId(id);
    if (viewLeaf === null) {
      notify("Back at the file's leaf"); // a move elsewhere is said by the bar above the tree
    }
  }

  function setViewLeaf(id: string | null): void {
    viewLeaf = id;
    clear(viewLeafBar);
    viewLeafBar.hidden = viewLeaf === null;
    if (viewLeaf !== null) {
      el('span', '', viewLeafBar, `Leaf moved to ${shortId(viewLeaf)} in this view only; the file is untouched (its leaf: ${shortId(liveLeaf)}).`);
      const moved = viewLeaf;
      button('Show it', 'pi-small', viewLeafBar, () => void selectId(moved));
      button("Back to the file's leaf", 'pi-small pi-view-leaf-back', viewLeafBar, () => {
        setViewLeaf(null);
        void selectId(liveLeaf ?? '');
      });
      const open = transport.openInNotebook?.bind(transport);
      if (open) {
        button('Open in notebook', 'pi-small', viewLeafBar, () => open(), 'Make a notebook where the leaf moves in the file');
      }
    }
    timeline.follow(leafNow());
    refreshViewGauge();
    list.render();
    if (transport.get('side_pane') === 'context' || transport.get('side_pane') === 'compactions') {
      scheduleSide();
    }
  }

  let gaugeToken = 0;
  /** The gauge at the leaf of this view: the file's (from the host's state) or the moved one. */
  function refreshViewGauge(): void {
    const token = ++gaugeToken;
    if (viewLeaf === null) {
      liveGauge = transport.get('gauge') as Gauge;
      gauge.render(liveGauge);
      timeline.redraw();
      return;
    }
    transport.request<Gauge>('gauge', { leaf_id: viewLeaf }).then(reply => {
      if (token === gaugeToken && viewLeaf !== null) {
        liveGauge = reply.result;
        gauge.render(liveGauge);
        timeline.redraw();
        if (transport.get('side_pane') === 'compactions') {
          scheduleSide();
        }
      }
    }, e => notify(e instanceof Error ? e.message : String(e), true));
  }

  function updateSelectedId(): void {
    const id = cols?.texts[selected]?.id;
    if (id && id !== transport.get('selected_id')) {
      transport.set({ selected_id: id });
    }
  }

  function select(row: number): void {
    if (!cols || row < 0 || row >= cols.length) {
      return;
    }
    selected = row;
    list.setSelected(row);
    updatePosition();
    if (cols.texts[row]) {
      updateSelectedId();
    } else {
      fetchTexts(row, row + 1);
    }
  }

  async function selectId(id: string, focusTree = true): Promise<void> {
    if (!cols) {
      return;
    }
    const reply = await transport.request<{ row: number; version: number; id: string | null }>('locate', { id });
    if (cols && reply.result.version === cols.version && reply.result.row >= 0) {
      select(reply.result.row);
      list.reveal(reply.result.row, true);
      if (focusTree) {
        list.el.focus();
      }
      if (reply.result.id !== id) {
        notify(`${id} is hidden by the filter: showing its nearest visible ancestor`);
      }
    } else if (reply.result.row < 0) {
      notify(`${id} is not visible in this view`);
    } else if (cols && reply.result.version !== cols.version) {
      // A new layout is on its way (a filter or search just changed): it selects the entry.
      transport.set({ selected_id: id });
    }
  }

  async function withTarget(row: number, action: (target: ActionTarget) => void): Promise<void> {
    if (!cols) {
      return;
    }
    select(row);
    let text = cols.texts[row];
    if (!text) {
      const version = cols.version;
      const reply = await transport.request<RowsReply>('rows', { start: row, end: row + 1, version });
      text = reply.result.rows?.[0];
    }
    if (text) {
      action({ id: text.id, text: rowText(text, cols.kindName(row)), kind: cols.kindName(row), label: text.label, row });
    }
  }

  function compactionsOf(): CompactionInfo[] {
    if (viewLeaf !== null) {
      return liveGauge.compactions ?? [];
    }
    return liveCompactions ?? transport.get('compactions') ?? liveGauge.compactions ?? [];
  }

  // ---------------------------------------------------------------- side pane
  let sideToken = 0;
  let fullFor: string | null = null;
  function refreshSide(): void {
    const which = transport.get('side_pane');
    tabButtons.forEach((b, name) => {
      b.classList.toggle('pi-on', name === which && !notesPane);
      b.setAttribute('aria-selected', name === which && !notesPane ? 'true' : 'false');
    });
    notesTab.classList.toggle('pi-on', notesPane);
    notesTab.setAttribute('aria-selected', notesPane ? 'true' : 'false');
    const id = transport.get('selected_id');
    const token = ++sideToken;
    markedFor = null;
    if (notesPane) {
      // Drawn again on every selection (a click in the list selects): where the reader was stays.
      const scroll = pane.scrollTop;
      renderNotesList(pane, notes, transport.get('note_filter') ?? '', { open: entry => void selectId(entry), preview: entryPreview });
      pane.scrollTop = scroll;
      return;
    }
    if (which === 'compactions') {
      renderCompactions(pane, liveGauge, compactionsOf(), {
        open: entry => void selectId(entry),
        settings: values => transport.set(values as Partial<ViewState>),
        summary: entry => transport.request<EntryDetail>('entry', { id: entry, full: true }).then(reply => reply.result.summary?.text ?? null)
      });
      return;
    }
    if (which === 'compare') {
      compare.render(pane);
      return;
    }
    if (!id) {
      clear(pane);
      el('p', 'pi-muted', pane, 'Select an entry.');
      return;
    }
    if (which === 'detail') {
      transport.request<EntryDetail>('entry', { id, full: fullFor === id }).then(reply => {
        if (token === sideToken) {
          renderDetail(pane, reply.result, {
            open: entry => void selectId(entry),
            full: entry => {
              fullFor = entry;
              refreshSide();
            },
            toolOutput: () => transport.get('tool_output'),
            setToolOutput: mode => transport.set({ tool_output: mode })
          });
          // The entry's notes, above its body (a long tool output must not push them away).
          noteSection.mount(pane, pane.querySelector('.pi-detail-body'), id);
          if (noteWanted === id) {
            noteWanted = null;
            noteSection.open(null);
          }
          // The search's words, marked where they occur in the entry; the first (or, coming
          // back with shift+F3, the last) is the current one.
          const body = pane.querySelector<HTMLElement>('.pi-detail-body');
          // The raw JSON repeats the entry's text: its words are not walked a second time.
          const marks = body && markWords(body, searchWords(), '.pi-raw').length ? visibleMarks() : [];
          if (marks.length) {
            showMark(marks, markFromEnd ? marks.length - 1 : 0);
          }
          markFromEnd = false;
          markedFor = id;
        }
      }, e => showError(pane, e));
    } else {
      // The composition bar is drawn with the list; a host without it shows the list alone.
      const composition = transport.request<Composition>('composition', { id }).then(reply => reply.result, () => null);
      Promise.all([transport.request<Projection>('context_at', { id }), composition]).then(([reply, parts]) => {
        if (token === sideToken) {
          const draw = (): void => renderProjection(pane, reply.result, entry => void selectId(entry), {
            agent: (transport.get('session') as { agent?: string } | null)?.agent,
            composition: parts,
            part: contextPart,
            choose: part => {
              // The keyboard stays on the part chosen (or on the one just cleared).
              const focus = part ?? contextPart;
              contextPart = part;
              const scroll = pane.scrollTop;
              draw();
              pane.scrollTop = part === null ? scroll : 0;
              pane.querySelector<HTMLElement>(`.pi-composition-item[data-part="${CSS.escape(focus ?? '')}"]`)?.focus();
            }
          });
          draw();
        }
      }, e => showError(pane, e));
    }
  }
  // The part the "what the model sees" list is filtered to; kept from node to node (a part the
  // next node lacks shows every message).
  let contextPart: string | null = null;
  let sideTimer = 0;
  const scheduleSide = (): void => {
    window.clearTimeout(sideTimer);
    sideTimer = window.setTimeout(refreshSide, 60);
  };

  function showError(parent: HTMLElement, e: unknown): void {
    clear(parent);
    el('div', 'pi-error-box', parent, e instanceof Error ? e.message : String(e));
  }

  let preview: CompactionPreview | null = null;
  function showPreview(p: CompactionPreview | null): void {
    preview = p;
    root.classList.toggle('pi-previewing', p !== null);
    if (p?.kept?.first_row !== undefined && p.kept.first_row >= 0) {
      list.reveal(p.kept.first_row, true);
    }
    list.render();
  }

  /** While a compaction preview is open, the rows of the current branch show their part. */
  function previewClass(row: number): string {
    if (!preview || !cols || !cols.has(row, 'on_active_path')) {
      return '';
    }
    const within = (part?: { first_row?: number; last_row?: number }): boolean =>
      part?.first_row !== undefined && part.first_row >= 0 && row >= part.first_row && row <= (part.last_row ?? -1);
    if (within(preview.kept)) {
      return 'pi-pv-kept';
    }
    if (within(preview.turn_prefix)) {
      return 'pi-pv-prefix';
    }
    if (within(preview.summarize)) {
      return 'pi-pv-summarize';
    }
    return '';
  }

  let bannerTimer = 0;
  function notify(message: string, isError = false): void {
    banner.hidden = false;
    banner.textContent = message;
    banner.classList.toggle('pi-banner-error', isError);
    window.clearTimeout(bannerTimer);
    bannerTimer = window.setTimeout(() => {
      banner.hidden = true;
    }, isError ? 12000 : 5000);
  }

  // ---------------------------------------------------------------- keyboard
  list.el.addEventListener('keydown', event => {
    if (!cols || dialogs.isOpen) {
      return;
    }
    const handled = handleTreeKey(event, {
      count: cols.length,
      selected,
      page: list.pageSize(),
      move: row => {
        select(row);
        list.reveal(row);
      },
      foldOrUp: () => foldOrUp(),
      unfoldOrDown: () => unfoldOrDown(),
      activate: () => void withTarget(selected, t => dialogs.navigate(t, leafNow())),
      menu: () => void withTarget(selected, t => dialogs.menu(t, leafNow())),
      nextHit: backwards => nextHit(backwards),
      note: () => addNote(),
      nextNote: backwards => void nextNote(backwards),
      label: () => void withTarget(selected, t => dialogs.label(t)),
      toggleTimes: () => transport.set({ show_label_times: !transport.get('show_label_times') }),
      type: text => {
        search.value += text;
        search.focus();
        window.clearTimeout(searchTimer);
        searchTimer = window.setTimeout(() => transport.set({ search: search.value }), 200);
      },
      backspace: () => {
        search.value = search.value.slice(0, -1);
        transport.set({ search: search.value });
      },
      escape: () => {
        if (search.value) {
          search.value = '';
          transport.set({ search: '' });
        }
      }
    });
    if (handled) {
      event.preventDefault();
      event.stopPropagation();
    }
  });

  function foldOrUp(): void {
    if (!cols || selected < 0) {
      return;
    }
    const id = cols.texts[selected]?.id;
    const folded = transport.get('folded');
    if (id && cols.has(selected, 'foldable') && !folded.includes(id)) {
      transport.set({ folded: [...folded, id] });
      return;
    }
    const row = segmentStartUp(cols, selected, r => childCount(cols!, r));
    select(row);
    list.reveal(row);
  }

  function unfoldOrDown(): void {
    if (!cols || selected < 0) {
      return;
    }
    const id = cols.texts[selected]?.id;
    const folded = transport.get('folded');
    if (id && folded.includes(id)) {
      transport.set({ folded: folded.filter(f => f !== id) });
      return;
    }
    const row = segmentStartDown(cols, selected, r => childCount(cols!, r));
    select(row);
    list.reveal(row);
  }

  // ---------------------------------------------------------------- state → view
  function showHeader(): void {
    const info = transport.get('session') as SessionInfo;
    const file = info.file ? info.file.split(/[\\/]/).pop() : null;
    // Named as the sessions panel names it: its name, else its first user message, else the file.
    const named = info.title || info.name || info.first_message || file || (info.id ? `session ${info.id}` : 'pi session');
    title.textContent = rowSafe(named.replace(/[\t ]+/g, ' ').trim());
    title.title = [named, info.file ?? ''].filter(Boolean).join('\n');
    // The session's own model; the model answering here only when one is attached and differs.
    const model = info.model || 'model unknown';
    const answering = info.answering_model && info.answering_model !== info.model ? ` · answered here by ${info.answering_model}` : '';
    meta.textContent = info.id
      ? `${liveEntries ?? info.entries} entries · ${model}${answering}${info.following ? ' · following the file' : ''}`
      : '';
    meta.title = info.id ? `session model: ${model}${info.answering_model ? `; answering model: ${info.answering_model}` : ''}` : '';
  }
  function showAccess(): void {
    const writable = transport.writable;
    access.hidden = writable;
    root.classList.toggle('pi-read-only', !writable);
    const refusal = foreignRefusal(transport);
    allowButton.hidden = !transport.canAllowWrites || refusal !== null;
    const plan = transport.get('write_plan');
    // Another agent's file is never written: the badge says so where pi's offers to allow writing.
    accessBadge.textContent = refusal ? `read-only: ${refusal}` : 'read-only';
    accessBadge.title = refusal
      ? `pi_lab reads ${refusal.replace(/; pi_lab never writes it\.?$/, '')} and never writes it.`
      : transport.canAllowWrites
        ? `Nothing is written until you allow it.${plan ? ` ${plan}` : ''}`
        : 'This viewer never writes the session file. Open it in a notebook to change it.';
  }
  function showStatus(): void {
    const state = transport.get('busy');
    busy.textContent = state ? `● ${state}` : '';
    busy.hidden = !state;
    status.textContent = transport.get('status');
    root.classList.toggle('pi-is-busy', Boolean(state));
  }
  function showFilters(): void {
    const mode = transport.get('filter_mode');
    filterButtons.forEach((b, name) => {
      b.classList.toggle('pi-on', name === mode);
      b.setAttribute('aria-checked', name === mode ? 'true' : 'false');
    });
    timesToggle.classList.toggle('pi-on', transport.get('show_label_times'));
    if (document.activeElement !== search) {
      search.value = transport.get('search');
    }
    updatePosition();
  }
  function showEditorText(): void {
    const text = transport.get('editor_text');
    clear(editorBox);
    editorBox.hidden = !text;
    if (text) {
      el('span', 'pi-muted', editorBox, 'Offered for re-editing: ');
      const value = el('span', 'pi-editor-value', editorBox, rowSafe(text));
      value.title = text;
      button('copy', 'pi-small', editorBox, () => void navigator.clipboard?.writeText(text));
      button('dismiss', 'pi-small', editorBox, () => transport.set({ editor_text: '' }));
    }
  }
  function showLive(event: LiveEvent): void {
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

  const watch = (key: keyof ViewState, fn: () => void): void => {
    offs.push(transport.on(key, fn));
  };
  watch('structure', () => loadStructure(transport.get('structure')));
  watch('structure_version', () => {
    window.setTimeout(() => {
      if (!cols || cols.version < transport.get('structure_version')) {
        requestStructure();
      }
    }, 50);
  });
  watch('selected_id', () => {
    const id = transport.get('selected_id');
    if (id && cols && cols.texts[selected]?.id !== id) {
      void selectId(id);
    }
    timeline.select(id);
    scheduleSide();
  });
  watch('gauge', () => {
    if (viewLeaf !== null) {
      refreshViewGauge(); // new settings: the gauge again, at the leaf of this view
      return;
    }
    liveGauge = transport.get('gauge') as Gauge;
    gauge.render(liveGauge);
    timeline.redraw();
    if (transport.get('side_pane') === 'compactions') {
      scheduleSide();
    }
  });
  watch('compactions', () => {
    liveCompactions = null;
    if (transport.get('side_pane') === 'compactions') {
      scheduleSide();
    }
  });
  watch('leaf_id', () => {
    liveLeaf = transport.get('leaf_id');
    if (viewLeaf !== null) {
      setViewLeaf(viewLeaf === liveLeaf ? null : viewLeaf); // the bar names the file's new leaf
    }
    timeline.follow(leafNow());
    if (transport.get('side_pane') === 'context') {
      scheduleSide();
    }
  });
  watch('side_pane', () => {
    notesPane = false;
    refreshSide();
  });
  watch('notes_version', () => void notes.load());
  watch('note_filter', () => {
    noteFilter.update(notes);
    updatePosition();
    if (notesPane) {
      refreshSide();
    }
  });
  watch('tool_output', refreshSide);
  watch('filter_mode', showFilters);
  watch('search', showFilters);
  watch('show_label_times', () => {
    showFilters();
    list.render();
  });
  watch('session', () => {
    liveEntries = null;
    showHeader();
    showAccess(); // the session's agent decides what the access bar offers
  });
  watch('status', showStatus);
  watch('writable', showAccess);
  watch('write_plan', showAccess);
  watch('busy', showStatus);
  watch('editor_text', showEditorText);
  watch('height', () => {
    root.style.height = `${transport.get('height') || 560}px`;
    list.render();
  });
  offs.push(
    transport.onDelta(delta => {
      if (!cols) {
        requestStructure();
        return;
      }
      const followLeaf = selected >= 0 && selected === cols.leafRow;
      const ok = cols.apply(delta, (row, by) => {
        if (by > 0 && row <= selected) {
          selected += 1;
        } else if (by < 0 && row < selected) {
          selected -= 1;
        } else if (by < 0 && row === selected) {
          selected = Math.min(selected, cols!.length - 1);
        }
      });
      if (!ok) {
        requestStructure();
        return;
      }
      for (const op of delta.ops) {
        if ((op.op === 'insert' || op.op === 'replace' || op.op === 'text') && !op.text.text && !op.text.type) {
          const row = cols.texts.indexOf(op.text);
          if (row >= 0 && cols.kindName(row) === 'unknown') {
            fetchType(op.text);
          }
        }
      }
      if (delta.gauge && Object.keys(delta.gauge).length && viewLeaf === null) {
        liveGauge = { ...liveGauge, ...delta.gauge } as Gauge;
        gauge.render(liveGauge);
      }
      // Every append may add a call or a marker to the branch: the strip follows (one request
      // per burst); a leaf move is fetched at once.
      if (viewLeaf === null) {
        timeline.follow(delta.leaf_id !== undefined ? delta.leaf_id : liveLeaf, delta.leaf_id === undefined || delta.leaf_id === liveLeaf);
      }
      if (delta.compactions) {
        liveCompactions = delta.compactions;
      }
      if (delta.entries !== undefined) {
        liveEntries = delta.entries;
        showHeader();
      }
      if (delta.leaf_id !== undefined && delta.leaf_id !== liveLeaf) {
        liveLeaf = delta.leaf_id;
        if (transport.get('side_pane') === 'context') {
          scheduleSide();
        }
      }
      if (followLeaf && delta.leaf_row >= 0) {
        selected = delta.leaf_row;
        list.reveal(selected);
      }
      list.setSelected(selected, false);
      updatePosition();
      updateSelectedId();
    })
  );
  offs.push(transport.onEvent(showLive));

  offs.push(() => list.dispose());
  offs.push(() => timeline.dispose());

  showHeader();
  showAccess();
  showStatus();
  showFilters();
  showEditorText();
  gauge.render(liveGauge);
  timeline.select(transport.get('selected_id'));
  // The strip's first request waits for the tree's first texts (or 600 ms): a host answers in
  // order, and the walk of a long branch must not delay the rows the reader looks at first.
  window.setTimeout(startTimeline, 600);
  const initial = transport.get('structure');
  loadStructure(initial);
  const head = initial ? readHeader(initial) : null;
  if (!head || head.version !== transport.get('structure_version')) {
    requestStructure();
  }
  if (!cols) {
    el('p', 'pi-muted', pane, 'Loading…');
  }
  void transport.request('hello').catch(() => undefined);
  noteFilter.update(notes);
  void notes.load();

  return {
    unmount: () => {
      offs.forEach(off => off());
      root.remove();
    },
    columns: () => cols
  };
}
