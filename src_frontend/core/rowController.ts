// The tree's rows and selection: the binary layout (loaded from the state, asked again when a
// newer one exists, patched by deltas), the row texts fetched a chunk at a time as they scroll
// into view, and the selected row kept in step with the `selected_id` of the view state.
// The viewer (viewer.ts) draws around it; the list (rowList.ts) paints what it holds.

import type { ActionTarget } from './actions';
import type { EntryDetail } from './detail';
import { childCount, readHeader, RowColumns, segmentStartDown, segmentStartUp } from './row';
import { RowList, rowText } from './rowList';
import type { DeltaMessage, RowText, Transport } from './transport';

export interface RowsReply {
  stale?: boolean;
  version: number;
  start: number;
  rows: RowText[];
}

export interface LocateReply {
  row: number;
  version: number;
  id: string | null;
  /** With `prefix`: the entry the text names, or up to five it could name. */
  found?: string;
  matches?: string[];
}

const TEXT_CHUNK = 100;

export interface RowHandlers {
  /** The rows or the selected row changed: the position and the hit count say it again. */
  moved(): void;
  /** A new layout is on screen: the side pane follows its selection. */
  laidOut(): void;
  /** Row texts arrived (the timeline's first request waits for them). */
  texts(): void;
  notify(message: string, isError?: boolean): void;
}

export class RowController {
  /** The decoded layout on screen (null until the first one arrives). */
  cols: RowColumns | null = null;
  selected = -1;
  private structurePending = false;
  private readonly textsInFlight = new Set<string>();
  // Rows of an entry type pi does not know are named by that type; where the rows answer does
  // not carry it, the entry answer does (few rows have such types; each is asked for once).
  // The types are kept: a new layout (another filter, a search) brings new row texts without them.
  private readonly typesInFlight = new Set<string>();
  private readonly knownTypes = new Map<string, string>();

  constructor(
    private readonly transport: Transport,
    private readonly list: RowList,
    private readonly handlers: RowHandlers
  ) {}

  /** The id of the selected row, when its text has arrived. */
  get selectedId(): string | undefined {
    return this.cols?.texts[this.selected]?.id;
  }

  loadStructure(blob: DataView | null, force = false): void {
    if (!blob || blob.byteLength === 0) {
      return;
    }
    const head = readHeader(blob);
    if (!head || (this.cols && !force && head.version <= this.cols.version)) {
      return;
    }
    const cols = new RowColumns(blob);
    this.cols = cols;
    this.textsInFlight.clear();
    this.list.setColumns(cols);
    const wanted = this.transport.get('selected_id');
    this.selected = head.selected_row >= 0 && head.selected_row < cols.length ? head.selected_row : cols.length - 1;
    this.list.setSelected(this.selected);
    this.list.reveal(this.selected, true);
    if (this.selected >= 0 && !cols.texts[this.selected]) {
      this.fetchTexts(this.selected, this.selected + 1); // the selection's id, even before it scrolls into view
    }
    this.handlers.moved();
    if (wanted && head.selected_id && head.selected_id !== wanted) {
      this.transport.set({ selected_id: head.selected_id });
    }
    this.handlers.laidOut();
  }

  requestStructure(): void {
    if (this.structurePending) {
      return;
    }
    this.structurePending = true;
    this.transport.request('structure').then(
      reply => {
        this.structurePending = false;
        this.loadStructure(reply.buffers[0] ?? null, true);
      },
      () => {
        this.structurePending = false;
      }
    );
  }

  fetchTexts(start: number, end: number): void {
    if (!this.cols) {
      return;
    }
    const version = this.cols.version;
    for (let chunk = Math.floor(start / TEXT_CHUNK); chunk * TEXT_CHUNK < end; chunk++) {
      const key = `${version}:${chunk}`;
      if (this.textsInFlight.has(key)) {
        continue;
      }
      this.textsInFlight.add(key);
      const from = chunk * TEXT_CHUNK;
      this.transport
        .request<RowsReply>('rows', { start: from, end: from + TEXT_CHUNK, version })
        .then(reply => {
          const result = reply.result;
          const cols = this.cols;
          if (!cols || result.stale || result.version !== cols.version) {
            this.textsInFlight.delete(key);
            return;
          }
          result.rows.forEach((text, i) => {
            cols.setText(result.start + i, text);
            if (!text.text && !text.type && cols.kindName(result.start + i) === 'unknown') {
              this.fetchType(text); // a kernel that does not send the type of such rows
            }
          });
          this.list.render();
          if (this.selected >= result.start && this.selected < result.start + result.rows.length) {
            this.updateSelectedId();
          }
          this.handlers.texts();
        }, () => this.textsInFlight.delete(key));
    }
  }

  private fetchType(text: RowText): void {
    const known = this.knownTypes.get(text.id);
    if (known !== undefined) {
      text.type = known;
      return;
    }
    if (this.typesInFlight.has(text.id)) {
      return;
    }
    this.typesInFlight.add(text.id);
    this.transport.request<EntryDetail>('entry', { id: text.id }).then(reply => {
      this.typesInFlight.delete(text.id);
      const type = reply.result.type;
      if (typeof type !== 'string') {
        return;
      }
      this.knownTypes.set(text.id, type);
      text.type = type;
      // The rows answer may since have been replaced by a newer one for the same entry.
      this.cols?.texts.forEach(t => {
        if (t && t.id === text.id && !t.text) {
          t.type = type;
        }
      });
      this.list.render();
    }, () => this.typesInFlight.delete(text.id));
  }

  updateSelectedId(): void {
    const id = this.selectedId;
    if (id && id !== this.transport.get('selected_id')) {
      this.transport.set({ selected_id: id });
    }
  }

  select(row: number): void {
    const cols = this.cols;
    if (!cols || row < 0 || row >= cols.length) {
      return;
    }
    this.selected = row;
    this.list.setSelected(row);
    this.handlers.moved();
    if (cols.texts[row]) {
      this.updateSelectedId();
    } else {
      this.fetchTexts(row, row + 1);
    }
  }

  /** Select `row` and scroll the list to it. */
  moveTo(row: number): void {
    this.select(row);
    this.list.reveal(row);
  }

  async selectId(id: string, focusTree = true): Promise<void> {
    if (!this.cols) {
      return;
    }
    const reply = await this.transport.request<LocateReply>('locate', { id });
    const cols = this.cols;
    if (cols && reply.result.version === cols.version && reply.result.row >= 0) {
      this.select(reply.result.row);
      this.list.reveal(reply.result.row, true);
      if (focusTree) {
        this.list.el.focus();
      }
      if (reply.result.id !== id) {
        this.handlers.notify(`${id} is hidden by the filter: showing its nearest visible ancestor`);
      }
    } else if (reply.result.row < 0) {
      this.handlers.notify(`${id} is not visible in this view`);
    } else if (cols && reply.result.version !== cols.version) {
      // A new layout is on its way (a filter or search just changed): it selects the entry.
      this.transport.set({ selected_id: id });
    }
  }

  async withTarget(row: number, action: (target: ActionTarget) => void): Promise<void> {
    const cols = this.cols;
    if (!cols) {
      return;
    }
    this.select(row);
    let text = cols.texts[row];
    if (!text) {
      const version = cols.version;
      const reply = await this.transport.request<RowsReply>('rows', { start: row, end: row + 1, version });
      text = reply.result.rows?.[0];
    }
    // The layout on screen now (a new one may have come while the row's text was asked for).
    const now = this.cols!;
    if (text) {
      action({ id: text.id, text: rowText(text, now.kindName(row)), kind: now.kindName(row), label: text.label, row });
    }
  }

  /** ctrl/alt+←: fold the selected entry, or go up to the start of its segment. */
  foldOrUp(): void {
    this.foldOr(false);
  }

  /** ctrl/alt+→: unfold the selected entry, or go down to the start of the next segment. */
  unfoldOrDown(): void {
    this.foldOr(true);
  }

  private foldOr(down: boolean): void {
    const cols = this.cols;
    if (!cols || this.selected < 0) {
      return;
    }
    const id = cols.texts[this.selected]?.id;
    const folded = this.transport.get('folded');
    if (down && id && folded.includes(id)) {
      this.transport.set({ folded: folded.filter(f => f !== id) });
      return;
    }
    if (!down && id && cols.has(this.selected, 'foldable') && !folded.includes(id)) {
      this.transport.set({ folded: [...folded, id] });
      return;
    }
    const jump = down ? segmentStartDown : segmentStartUp;
    this.moveTo(jump(cols, this.selected, r => childCount(cols, r)));
  }

  /**
   * A delta's rows, applied in place (the selection stays on its entry, or on the leaf when it
   * was there); `between` runs once they are, before the selection is settled. Without a
   * layout, or when the delta does not fit the one on screen, the whole layout is asked again.
   */
  applyDelta(delta: DeltaMessage, between: () => void): void {
    const cols = this.cols;
    if (!cols) {
      this.requestStructure();
      return;
    }
    const followLeaf = this.selected >= 0 && this.selected === cols.leafRow;
    const ok = cols.apply(delta, (row, by) => {
      if (by > 0 && row <= this.selected) {
        this.selected += 1;
      } else if (by < 0 && row < this.selected) {
        this.selected -= 1;
      } else if (by < 0 && row === this.selected) {
        this.selected = Math.min(this.selected, cols.length - 1);
      }
    });
    if (!ok) {
      this.requestStructure();
      return;
    }
    for (const op of delta.ops) {
      if ((op.op === 'insert' || op.op === 'replace' || op.op === 'text') && !op.text.text && !op.text.type) {
        const row = cols.texts.indexOf(op.text);
        if (row >= 0 && cols.kindName(row) === 'unknown') {
          this.fetchType(op.text);
        }
      }
    }
    between();
    if (followLeaf && delta.leaf_row >= 0) {
      this.selected = delta.leaf_row;
      this.list.reveal(this.selected);
    }
    this.list.setSelected(this.selected, false);
    this.handlers.moved();
    this.updateSelectedId();
  }
}
