// The viewer: header, gauge, toolbar, tree list, side pane (detail / what the model sees /
// compactions), live strip and dialogs, wired to a Transport. `mountViewer(el, transport)`
// returns the function that unmounts it. The parts live in their own modules: the rows and the
// selection (rowController.ts), the header and banner (header.ts), the toolbar (toolbar.ts),
// the side pane (sidePane.ts), the leaf of this view and its gauge (leafView.ts), notes
// (viewerNotes.ts); here they are made in screen order and told of each other.

import { ActionTarget, CompactionPreview, Dialogs } from './actions';
import { COMPARE_STYLES, ComparePane } from './compare';
import { el } from './dom';
import { GaugeView } from './gauge';
import { Banner, showEditorText, showLive, ViewerHeader } from './header';
import { handleTreeKey } from './keys';
import { LeafView } from './leafView';
import { NotesModel, NotesSection } from './notes';
import { readHeader, RowColumns } from './row';
import { RowController } from './rowController';
import { RowList } from './rowList';
import { SidePane } from './sidePane';
import { STYLES } from './styles';
import { NAVIGATION_STYLES } from './stylesNavigation';
import { TimelineStrip } from './timeline';
import { searchWordsOf, Toolbar } from './toolbar';
import { Transport, ViewState } from './transport';
import { ViewerNotes } from './viewerNotes';

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
  const selectId = (id: string): void => void rows.selectId(id);
  const notify = (message: string, isError = false): void => banner.notify(message, isError);
  const focusTree = (): void => list.el.focus();
  const navigate = (row: number): void => void rows.withTarget(row, (t: ActionTarget) => dialogs.navigate(t, leaf.leaf));
  const menu = (row: number): void => void rows.withTarget(row, (t: ActionTarget) => dialogs.menu(t, leaf.leaf));

  // ---------------------------------------------------------------- header, gauge, toolbar
  const header = new ViewerHeader(root, transport, () => dialogs.allowWrites());
  const gauge = new GaugeView(root, { open: selectId, settings: values => transport.set(values as Partial<ViewState>) });
  const toolbar = new Toolbar(root, transport, {
    focusTree,
    nextHit: backwards => nextHit(backwards),
    showNotes: () => side.showNotes(),
    hasRows: () => rows.cols !== null,
    selectId: id => rows.selectId(id),
    notify
  });
  const banner = new Banner(root);
  const editorBox = el('div', 'pi-editor-text', root);
  editorBox.hidden = true;
  // A leaf moved in this view only (a viewer that cannot write): says so, with the way back
  // and the way to a real move.
  const leaf = new LeafView(transport, el('div', 'pi-view-leaf-bar', root));

  // ---------------------------------------------------------------- tree and side pane
  const main = el('div', 'pi-main', root);
  // The context timeline strip, above the tree: a click or Enter selects the call's entry while
  // the keyboard stays on the strip; the tree's selection shows as the strip's highlighted point.
  const timeline = new TimelineStrip(root, main, transport, {
    select: id => void rows.selectId(id, false),
    settings: () => ('context_window' in leaf.gauge ? leaf.gauge : null)
  });
  const list: RowList = new RowList(main, {
    select: row => rows.select(row),
    activate: navigate,
    menu,
    needTexts: (start, end) => rows.fetchTexts(start, end),
    showLabelTimes: () => transport.get('show_label_times'),
    rowClass: row => `${preview.rowClass(rows.cols, row)}${leaf.isViewLeaf(rows.cols?.texts[row]?.id) ? ' pi-view-leaf' : ''}`.trim(),
    searchWords: () => searchWordsOf(rows.cols),
    noteMark: id => notes.model.markOf(id)
  });
  const preview = new PreviewMarks(root, list);
  const rows: RowController = new RowController(transport, list, { moved: () => updatePosition(), laidOut: () => side.refresh(), texts: () => startTimeline(), notify });
  const notes = new ViewerNotes(transport, new NotesModel(transport));
  const noteSection = new NotesSection(notes.model, { open: selectId, notify, done: focusTree, readOnly: () => notes.refusal() });
  const side = new SidePane(main, transport, notes.model, noteSection, () => compare, {
    open: selectId,
    gauge: () => leaf.gauge,
    compactions: () => leaf.compactionsOf(),
    searchWords: () => searchWordsOf(rows.cols)
  });
  const live = el('div', 'pi-live', root);
  live.hidden = true;
  const dialogs = new Dialogs(root, transport, {
    open: selectId,
    preview: p => preview.show(p),
    notify,
    closed: focusTree,
    moveLeaf: target => void leaf.moveInView(target),
    showContext: id => {
      void rows.selectId(id).then(() => transport.set({ side_pane: 'context' }));
    }
  });
  const compare = new ComparePane(transport, {
    open: selectId,
    selected: () => transport.get('selected_id'),
    leaf: () => leaf.leaf,
    goTo: id => {
      void rows.selectId(id).then(() => {
        if (rows.cols && rows.selected >= 0 && rows.selectedId === id) {
          navigate(rows.selected);
        } else {
          // The filter hides the entry: selectId showed its nearest visible ancestor, which is
          // not where the user asked to go, so no dialog opens on it.
          notify(`${id} is hidden by the filter: choose "all" to go there`, true);
        }
      });
    },
    notify
  });
  leaf.attach({ gauge, timeline, list, side, selectId: id => rows.selectId(id), notify });
  notes.attach({ rows, list, side, timeline, filter: toolbar.noteFilter, moved: () => updatePosition(), notify });
  offs.push(notes.model.onChange(() => notes.changed()));

  let timelineStarted = false;
  function startTimeline(): void {
    if (!timelineStarted) {
      timelineStarted = true;
      timeline.follow(leaf.leaf);
    }
  }

  function updatePosition(): void {
    const working = toolbar.showPosition(rows.cols, rows.selected);
    root.classList.toggle('pi-laying-out', working);
    list.el.setAttribute('aria-busy', working ? 'true' : 'false');
  }

  /**
   * The next (or previous) search hit: first the next marked word in the entry pane, then the
   * next row (every row of a search layout matched it), wrapping at either end.
   */
  function nextHit(backwards: boolean): void {
    const cols = rows.cols;
    if (!cols || !cols.length || !searchWordsOf(cols).length) {
      notify('No search: type words in the search box first');
      return;
    }
    if (side.stepMark(backwards, rows.selectedId)) {
      return;
    }
    const selected = rows.selected;
    side.markFromEnd = backwards;
    rows.moveTo(backwards ? (selected <= 0 ? cols.length - 1 : selected - 1) : selected >= cols.length - 1 ? 0 : selected + 1);
  }

  const parts: Parts = { transport, root, header, toolbar, list, rows, side, leaf, notes, timeline, dialogs, editorBox, live, updatePosition, nextHit, navigate, menu };
  bindTreeKeys(parts);
  offs.push(...watchState(parts));
  offs.push(() => list.dispose());
  offs.push(() => timeline.dispose());

  header.showSession();
  header.showAccess();
  header.showStatus();
  toolbar.showFilters();
  updatePosition();
  showEditorText(editorBox, transport);
  gauge.render(leaf.gauge);
  timeline.select(transport.get('selected_id'));
  // The strip's first request waits for the tree's first texts (or 600 ms): a host answers in
  // order, and the walk of a long branch must not delay the rows the reader looks at first.
  window.setTimeout(startTimeline, 600);
  const initial = transport.get('structure');
  rows.loadStructure(initial);
  const head = initial ? readHeader(initial) : null;
  if (!head || head.version !== transport.get('structure_version')) {
    rows.requestStructure();
  }
  if (!rows.cols) {
    el('p', 'pi-muted', side.pane, 'Loading…');
  }
  void transport.request('hello').catch(() => undefined);
  toolbar.noteFilter.update(notes.model);
  void notes.model.load();

  return {
    unmount: () => {
      offs.forEach(off => off());
      root.remove();
    },
    columns: () => rows.cols
  };
}

/** A compaction preview on the tree: while its dialog is open, the rows of the current branch
 *  show the part they would be in (kept, the turn's prefix, summarized). */
class PreviewMarks {
  private preview: CompactionPreview | null = null;

  constructor(
    private readonly root: HTMLElement,
    private readonly list: RowList
  ) {}

  show(p: CompactionPreview | null): void {
    this.preview = p;
    this.root.classList.toggle('pi-previewing', p !== null);
    if (p?.kept?.first_row !== undefined && p.kept.first_row >= 0) {
      this.list.reveal(p.kept.first_row, true);
    }
    this.list.render();
  }

  rowClass(cols: RowColumns | null, row: number): string {
    const preview = this.preview;
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
    return within(preview.summarize) ? 'pi-pv-summarize' : '';
  }
}

/** The parts of one viewer, as mountViewer makes them, for the bindings below. */
interface Parts {
  transport: Transport;
  root: HTMLElement;
  header: ViewerHeader;
  toolbar: Toolbar;
  list: RowList;
  rows: RowController;
  side: SidePane;
  leaf: LeafView;
  notes: ViewerNotes;
  timeline: TimelineStrip;
  dialogs: Dialogs;
  editorBox: HTMLElement;
  live: HTMLElement;
  updatePosition(): void;
  nextHit(backwards: boolean): void;
  /** Enter on a row: "go here" (navigate) on it. */
  navigate(row: number): void;
  menu(row: number): void;
}

/** pi's tree keys (keys.ts) on the list, while no dialog is open. */
function bindTreeKeys(p: Parts): void {
  const { transport, list, rows, dialogs, toolbar, notes } = p;
  list.el.addEventListener('keydown', (event: KeyboardEvent) => {
    if (!rows.cols || dialogs.isOpen) {
      return;
    }
    const handled = handleTreeKey(event, {
      count: rows.cols.length,
      selected: rows.selected,
      page: list.pageSize(),
      move: row => rows.moveTo(row),
      foldOrUp: () => rows.foldOrUp(),
      unfoldOrDown: () => rows.unfoldOrDown(),
      activate: () => p.navigate(rows.selected),
      menu: () => p.menu(rows.selected),
      nextHit: backwards => p.nextHit(backwards),
      note: () => notes.add(),
      nextNote: backwards => void notes.next(backwards),
      label: () => void rows.withTarget(rows.selected, (t: ActionTarget) => dialogs.label(t)),
      toggleTimes: () => transport.set({ show_label_times: !transport.get('show_label_times') }),
      type: text => toolbar.type(text),
      backspace: () => toolbar.backspace(),
      escape: () => toolbar.clearSearch()
    });
    if (handled) {
      event.preventDefault();
      event.stopPropagation();
    }
  });
}

/** Each part drawn again when the state it shows changes; deltas and live events. Returns the functions that stop it. */
function watchState(p: Parts): (() => void)[] {
  const { transport, root, header, toolbar, list, rows, side, leaf, notes, timeline, updatePosition } = p;
  const offs: (() => void)[] = [];
  const showFilters = (): void => {
    toolbar.showFilters();
    updatePosition();
  };
  const watch = (key: keyof ViewState, fn: () => void): void => {
    offs.push(transport.on(key, fn));
  };
  watch('structure', () => rows.loadStructure(transport.get('structure')));
  watch('structure_version', () => {
    window.setTimeout(() => {
      if (!rows.cols || rows.cols.version < transport.get('structure_version')) {
        rows.requestStructure();
      }
    }, 50);
  });
  watch('selected_id', () => {
    const id = transport.get('selected_id');
    if (id && rows.cols && rows.selectedId !== id) {
      void rows.selectId(id);
    }
    timeline.select(id);
    side.schedule();
  });
  watch('gauge', () => leaf.gaugeChanged());
  watch('compactions', () => leaf.compactionsChanged());
  watch('leaf_id', () => leaf.leafChanged());
  watch('side_pane', () => side.paneChanged());
  watch('notes_version', () => void notes.model.load());
  watch('note_filter', () => {
    toolbar.noteFilter.update(notes.model);
    updatePosition();
    if (side.showsNotes) {
      side.refresh();
    }
  });
  watch('tool_output', () => side.refresh());
  watch('filter_mode', showFilters);
  watch('search', showFilters);
  watch('show_label_times', () => {
    showFilters();
    list.render();
  });
  watch('session', () => {
    header.entries = null;
    header.showSession();
    header.showAccess(); // the session's agent decides what the access bar offers
  });
  watch('status', () => header.showStatus());
  watch('writable', () => header.showAccess());
  watch('write_plan', () => header.showAccess());
  watch('busy', () => header.showStatus());
  watch('editor_text', () => showEditorText(p.editorBox, transport));
  watch('height', () => {
    root.style.height = `${transport.get('height') || 560}px`;
    list.render();
  });
  offs.push(
    transport.onDelta(delta =>
      rows.applyDelta(delta, () => {
        leaf.applyDelta(delta);
        if (delta.entries !== undefined) {
          header.entries = delta.entries;
          header.showSession();
        }
      })
    )
  );
  offs.push(transport.onEvent(event => showLive(p.live, event)));

  return offs;
}
