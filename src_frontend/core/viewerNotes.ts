// The viewer's side of notes (notes.ts holds the store, the pane section, the marks and the
// filter): shift+N on the selected row, alt+N / alt+shift+N to the next / previous noted row,
// why a view cannot write one, and what follows when the notes change.

import { markWords as noteMarkWords, NoteFilterControl, NotesModel } from './notes';
import type { RowController, LocateReply } from './rowController';
import type { RowList } from './rowList';
import type { SidePane } from './sidePane';
import type { TimelineStrip } from './timeline';
import type { Transport } from './transport';

export interface ViewerNotesParts {
  rows: RowController;
  list: RowList;
  side: SidePane;
  timeline: TimelineStrip;
  filter: NoteFilterControl;
  /** The position line again (it names the note filter). */
  moved(): void;
  notify(message: string, isError?: boolean): void;
}

export class ViewerNotes {
  // The rows of the noted entries in the layout on screen (asked with `locate` once per layout
  // and set of notes), for alt+N / alt+shift+N.
  private notedRowsCache: { version: number; key: string; rows: number[] } | null = null;
  private parts: ViewerNotesParts | null = null;

  constructor(
    private readonly transport: Transport,
    readonly model: NotesModel
  ) {}

  /** The parts that show notes, once they are made. */
  attach(parts: ViewerNotesParts): void {
    this.parts = parts;
  }

  private get p(): ViewerNotesParts {
    return this.parts!;
  }

  /** Why a note cannot be written here. */
  refusal(): string {
    if (this.transport.notesRefusal) {
      return this.transport.notesRefusal;
    }
    if (!this.model.available) {
      return 'This view has no notes store (an older kernel or a saved snapshot): open the session with pi_lab to add notes.';
    }
    const store = this.model.store;
    return `Notes cannot be written here${store ? `: ${store} is not writable` : ''}.`;
  }

  /** shift+N: the note editor of the selected entry, in its entry pane. */
  add(): void {
    const { rows, side } = this.p;
    void rows.withTarget(rows.selected, target => {
      if (!this.model.available || (this.model.loaded && !this.model.writable)) {
        this.p.notify(this.refusal(), true);
        return;
      }
      if (side.showsEntry(target.id)) {
        this.p.side.openNoteEditor();
        return;
      }
      side.wantNote(target.id);
    });
  }

  private async notedRows(): Promise<number[]> {
    const cols = this.p.rows.cols;
    if (!cols) {
      return [];
    }
    const version = cols.version;
    const ids = this.model.notedIds();
    const key = ids.join('\n');
    const cache = this.notedRowsCache;
    if (cache && cache.version === version && cache.key === key) {
      return cache.rows;
    }
    const replies = await Promise.all(ids.map(id => this.transport.request<LocateReply>('locate', { id }).then(
      reply => (reply.result.version === version && reply.result.row >= 0 && reply.result.id === id ? reply.result.row : -1),
      () => -1
    )));
    const rows = [...new Set(replies.filter(row => row >= 0))].sort((a, b) => a - b);
    this.notedRowsCache = { version, key, rows };
    return rows;
  }

  /** alt+N / alt+shift+N: the next / previous noted row, wrapping at either end. */
  async next(backwards: boolean): Promise<void> {
    const controller = this.p.rows;
    if (!controller.cols) {
      return;
    }
    if (!this.model.notedIds().length) {
      this.p.notify(this.model.writable ? 'No notes in this session yet: shift+N adds one to the selected entry' : 'No notes in this session');
      return;
    }
    const rows = await this.notedRows();
    if (!rows.length) {
      this.p.notify('No noted entry is shown by this filter: choose "all" to see them', true);
      return;
    }
    const selected = controller.selected;
    const after = rows.find(row => row > selected);
    const before = [...rows].reverse().find(row => row < selected);
    controller.moveTo(backwards ? before ?? rows[rows.length - 1] : after ?? rows[0]);
  }

  /** The notes changed (loaded, added, edited): every place that shows them follows. */
  changed(): void {
    const { side, filter, list, timeline } = this.p;
    side.notesAvailable(this.model.available);
    filter.update(this.model);
    list.render();
    this.p.moved();
    timeline.setNoteMarks(this.model.notedIds().map(id => {
      const mark = this.model.markOf(id)!;
      return { entry_id: id, finding: mark.findings > 0, words: noteMarkWords(mark) };
    }));
    side.notesChanged(this.transport.get('selected_id'));
  }
}
