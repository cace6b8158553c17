// The tree list: a virtualized list of fixed-height rows. Only the rows in view (plus a small
// overscan) exist in the DOM, so 100,000 rows cost the same as 30.

import { appendMarked, clear, el, formatLabelTime, formatTokens, rowSafe, suppressShortcuts } from './dom';
import type { RowText } from './transport';
import { markWords as noteMarkWords, NoteMark } from './notes';
import { RowColumns, rowPrefix } from './row';

export const ROW_HEIGHT = 22;
/** The spans of a row, left to right (paint() fills them; the styles place them). */
const ROW_PARTS = ['cursor', 'depth', 'prefix', 'fold', 'marker', 'glyph', 'label', 'note', 'text', 'why', 'badge', 'tokens'];
const OVERSCAN = 12;

export interface RowListHandlers {
  select(row: number): void;
  activate(row: number): void;
  menu(row: number, anchor: HTMLElement): void;
  needTexts(start: number, end: number): void;
  showLabelTimes(): boolean;
  /** Extra classes for a row (e.g. the parts of a compaction preview). */
  rowClass?(row: number): string;
  /** The words of the search the rows were laid out for: marked in each row's text. */
  searchWords?(): string[];
  /** The note mark of an entry's row (notes.ts), or null. */
  noteMark?(entryId: string): NoteMark | null;
}

const KIND_GLYPH: Record<string, string> = {
  user: '▸',
  assistant: '◂',
  tool_call: '⚙',
  tool_result: '⚙',
  thinking: '∴',
  branch_summary: '⎇',
  compaction: '▣',
  custom_message: '✎',
  model_change: '◇',
  thinking_change: '◇',
  label: '#',
  session_info: '◇',
  context_edit: '✂',
  bash: '$',
  system: '§',
  custom: '◇',
  usage: '¤',
  assistant_error: '✖',
  other_message: '·',
  unknown: '·'
};

/**
 * What a row says. pi draws an entry of a type it does not know as an empty row; here it says
 * its type (sent as `type` for such rows), so it can be told apart from a blank message.
 */
export function rowText(text: RowText, kind: string): string {
  if (text.text || kind !== 'unknown') {
    return text.text;
  }
  return unknownEntryText(text.type);
}

/**
 * The one name of an entry whose type pi does not know, in every view (the notebook widget,
 * the JupyterLab viewer, the export and a snapshot all draw rows here); its Python twin is
 * pi_lab.view.kinds.unknown_entry_text.
 */
export function unknownEntryText(type: string | null | undefined): string {
  return type ? `[entry of an unknown type: ${type}]` : '[entry of an unknown type]';
}

export class RowList {
  readonly el: HTMLDivElement;
  private readonly spacer: HTMLDivElement;
  private readonly window: HTMLDivElement;
  private readonly pool: HTMLDivElement[] = [];
  private cols: RowColumns | null = null;
  private selected = -1;
  private first = 0;
  private frame = 0;
  private pendingReveal: { row: number; center: boolean } | null = null;
  // Reading clientHeight/scrollTop after a DOM change forces a layout; keep them instead.
  private viewHeight = 0;
  private scrollPos = 0;
  private readonly resize: ResizeObserver;

  constructor(parent: HTMLElement, private readonly handlers: RowListHandlers) {
    this.el = el('div', 'pi-rows', parent);
    this.el.tabIndex = 0;
    suppressShortcuts(this.el);
    this.el.setAttribute('role', 'tree');
    this.el.setAttribute('aria-label', 'session tree');
    this.spacer = el('div', 'pi-rows-spacer', this.el);
    this.window = el('div', 'pi-rows-window', this.spacer);
    this.el.addEventListener('scroll', () => {
      this.scrollPos = this.el.scrollTop;
      this.schedule();
    });
    this.resize = new ResizeObserver(entries => {
      this.viewHeight = entries[entries.length - 1].contentRect.height;
      this.schedule();
    });
    this.resize.observe(this.el);
    this.window.addEventListener('click', event => {
      const row = this.rowOf(event.target);
      if (row === null) {
        return;
      }
      const target = event.target as HTMLElement;
      if (target.closest('.pi-row-menu')) {
        this.handlers.menu(row, target);
      } else {
        this.handlers.select(row);
      }
    });
    this.window.addEventListener('dblclick', event => {
      const row = this.rowOf(event.target);
      if (row !== null) {
        this.handlers.activate(row);
      }
    });
    this.window.addEventListener('contextmenu', event => {
      const row = this.rowOf(event.target);
      if (row !== null) {
        event.preventDefault();
        this.handlers.menu(row, event.target as HTMLElement);
      }
    });
  }

  private rowOf(target: EventTarget | null): number | null {
    const node = (target as HTMLElement | null)?.closest?.('.pi-row') as HTMLElement | null;
    if (!node || node.dataset.row === undefined) {
      return null;
    }
    return Number(node.dataset.row);
  }

  setColumns(cols: RowColumns | null): void {
    this.cols = cols;
    this.render();
  }

  get columns(): RowColumns | null {
    return this.cols;
  }

  /** Stop observing the element's size. */
  dispose(): void {
    this.resize.disconnect();
  }

  private scrollTo(top: number): void {
    this.scrollPos = Math.max(0, top);
    this.el.scrollTop = this.scrollPos;
  }

  setSelected(row: number, reveal = true): void {
    const previous = this.selected;
    this.selected = row;
    const top = this.scrollPos;
    if (reveal && row >= 0) {
      this.reveal(row);
    }
    if (this.scrollPos === top && this.cols && this.repaintRow(previous) && this.repaintRow(row)) {
      return; // both rows are on screen and nothing scrolled: two rows to repaint, not all of them
    }
    this.render();
  }

  /** Repaint one drawn row; false when it is not drawn. */
  private repaintRow(row: number): boolean {
    const i = row - this.first;
    const node = this.window.children[i] as HTMLDivElement | undefined;
    if (row < 0 || !node || !this.cols || node.dataset.row !== String(row)) {
      return row < 0;
    }
    this.paint(node, this.cols, row);
    return true;
  }

  /** Scroll just enough to show `row` (centre it when it is far away). */
  reveal(row: number, center = false): void {
    if (!this.el.isConnected || this.viewHeight === 0) {
      // Not laid out yet (a view renders before it is attached): scroll once it has a size.
      this.pendingReveal = { row, center };
      return;
    }
    const top = row * ROW_HEIGHT;
    const view = this.viewHeight;
    const scroll = this.scrollPos;
    if (center || top < scroll - view || top > scroll + 2 * view) {
      this.scrollTo(top - view / 2);
    } else if (top < scroll) {
      this.scrollTo(top);
    } else if (top + ROW_HEIGHT > scroll + view) {
      this.scrollTo(top + ROW_HEIGHT - view);
    }
  }

  /** How many rows fit in the view (the page size of page keys). */
  pageSize(): number {
    return Math.max(1, Math.floor((this.viewHeight || ROW_HEIGHT * 20) / ROW_HEIGHT) - 1);
  }

  schedule(): void {
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.render();
      });
    }
  }

  /** Redraw the rows in view. */
  render(): void {
    const started = performance.now();
    this.renderRows();
    // The cost of the last redraw, for the benchmark (bench/widget_bench.py reads it).
    this.el.dataset.renderMs = (performance.now() - started).toFixed(3);
  }

  private renderRows(): void {
    if (this.pendingReveal && this.el.isConnected && this.viewHeight > 0) {
      const { row, center } = this.pendingReveal;
      this.pendingReveal = null;
      this.reveal(row, center);
    }
    const cols = this.cols;
    const count = cols ? cols.length : 0;
    this.spacer.style.height = `${count * ROW_HEIGHT}px`;
    if (!cols || count === 0) {
      this.window.replaceChildren();
      return;
    }
    const view = this.viewHeight || ROW_HEIGHT * 20;
    // The scroll position may have been clamped by the browser (fewer rows than before).
    const scroll = Math.min(this.scrollPos, Math.max(0, count * ROW_HEIGHT - view));
    const first = Math.max(0, Math.floor(scroll / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(count, Math.ceil((scroll + view) / ROW_HEIGHT) + OVERSCAN);
    this.first = first;
    this.window.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    const needed = last - first;
    while (this.pool.length < needed) {
      this.pool.push(this.makeRow());
    }
    const nodes = this.pool.slice(0, needed);
    if (this.window.childElementCount !== needed) {
      this.window.replaceChildren(...nodes);
    }
    let missingFrom = -1;
    let missingTo = -1;
    for (let i = 0; i < needed; i++) {
      const row = first + i;
      this.paint(nodes[i], cols, row);
      if (cols.texts[row] === undefined) {
        if (missingFrom < 0) {
          missingFrom = row;
        }
        missingTo = row + 1;
      }
    }
    if (missingFrom >= 0) {
      this.handlers.needTexts(missingFrom, missingTo);
    }
  }

  /** Index of the first row drawn (for tests and the benchmark). */
  get firstRendered(): number {
    return this.first;
  }

  private makeRow(): HTMLDivElement {
    const node = el('div', 'pi-row');
    node.setAttribute('role', 'treeitem');
    for (const part of ROW_PARTS) {
      el('span', `pi-row-${part}`, node);
    }
    const menu = el('span', 'pi-row-menu', node, '⋯');
    menu.title = 'Actions';
    return node;
  }

  private paint(node: HTMLDivElement, cols: RowColumns, row: number): void {
    const kind = cols.kindName(row);
    const text = cols.texts[row];
    const flags = cols.flags[row];
    node.dataset.row = String(row);
    node.dataset.kind = kind;
    node.dataset.id = text?.id ?? '';
    const extra = this.handlers.rowClass?.(row);
    node.className = `pi-row pi-kind-${kind}${extra ? ` ${extra}` : ''}`;
    const toggle = (name: string, on: boolean): void => {
      if (on) {
        node.classList.add(name);
      }
    };
    toggle('pi-selected', row === this.selected);
    toggle('pi-active', cols.has(row, 'on_active_path'));
    toggle('pi-leaf', cols.has(row, 'is_leaf'));
    toggle('pi-out', cols.has(row, 'out_of_context'));
    toggle('pi-first-kept', cols.has(row, 'first_kept'));
    toggle('pi-omitted', cols.has(row, 'omitted'));
    toggle('pi-replaced', cols.has(row, 'replaced'));
    toggle('pi-error', cols.has(row, 'error'));
    node.setAttribute('aria-selected', row === this.selected ? 'true' : 'false');
    const parts = node.children;
    const prefix = rowPrefix(cols, row);
    parts[0].textContent = row === this.selected ? '›' : '';
    const depth = parts[1] as HTMLElement;
    depth.textContent = prefix.elided ? `⋯${cols.indent[row]}` : '';
    depth.title = prefix.elided ? `${cols.indent[row]} levels deep; the ${prefix.elided} outer levels are not drawn` : '';
    parts[2].textContent = prefix.text;
    const connector = (flags & 1) !== 0 && !cols.has(row, 'is_virtual_root_child');
    parts[3].textContent = cols.has(row, 'folded') && !connector ? '⊞ ' : '';
    parts[4].textContent = cols.has(row, 'on_active_path') ? '• ' : '';
    parts[5].textContent = KIND_GLYPH[kind] ?? '·';
    const label = parts[6] as HTMLElement;
    if (text?.label) {
      const time = this.handlers.showLabelTimes() ? formatLabelTime(text.label_time) : '';
      // A label is free text: one line here (the detail pane shows all of it).
      label.textContent = `[${rowSafe(text.label)}]${time ? ` ${time}` : ''}`;
      label.title = text.label.length > 40 || text.label !== rowSafe(text.label) ? text.label : '';
    } else {
      label.textContent = '';
      label.title = '';
    }
    const shown = text ? rowSafe(rowText(text, kind)) : '…';
    const words = text ? this.handlers.searchWords?.() ?? [] : [];
    // A note mark: ✎ for the reader's notes, ◆ when a model finding is among them; the count
    // is in the row's accessible name and title.
    const noteMark = text ? this.handlers.noteMark?.(text.id) ?? null : null;
    const markPart = parts[7] as HTMLElement;
    if (noteMark) {
      const said = noteMarkWords(noteMark);
      markPart.textContent = `${noteMark.findings ? '◆' : '✎'}${noteMark.count > 1 ? noteMark.count : ''}`;
      markPart.className = `pi-row-note${noteMark.findings ? ' pi-row-note-finding' : ''}`;
      markPart.title = said;
      node.title = said;
      node.setAttribute('aria-label', `${shown} (${said})`);
    } else {
      markPart.textContent = '';
      markPart.className = 'pi-row-note';
      markPart.title = '';
      node.removeAttribute('title');
      node.removeAttribute('aria-label');
    }
    const textPart = parts[8] as HTMLElement;
    const why = parts[9] as HTMLElement;
    why.textContent = '';
    why.title = '';
    if (words.length) {
      clear(textPart);
      appendMarked(textPart, shown, words);
      // A row that matched in text it does not show (a tool result's output, a message beyond
      // the row's first line) says where: the host sends the words around the match (`hit`).
      if (text?.hit) {
        appendMarked(why, `⌕ ${rowSafe(text.hit)}`, words);
        why.title = `matched in the entry's text, not all of it in this row: “${text.hit}”`;
      }
    } else {
      textPart.textContent = shown;
    }
    const badge = parts[10] as HTMLElement;
    badge.textContent = cols.has(row, 'first_kept')
      ? 'kept from here'
      : cols.has(row, 'omitted')
        ? 'omitted'
        : cols.has(row, 'is_leaf')
          ? 'leaf'
          : node.classList.contains('pi-view-leaf')
            ? 'leaf in this view' // moved by a viewer that cannot write (leafView.ts)
            : '';
    // Nothing for 0 tokens, nor while the estimate has not come with the row's text.
    const count = cols.tokenCount(row);
    parts[11].textContent = count ? formatTokens(count) : '';
    (parts[11] as HTMLElement).title = count ? `${count} tokens (estimate)` : '';
  }
}
