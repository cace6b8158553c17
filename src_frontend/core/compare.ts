// The Compare pane: two nodes side by side. Context diff (what the model sees at A and at B:
// in both, only in A, only in B, what a compaction summary replaced, a text search per side)
// and branch comparison (two leaves from their common ancestor, with what each side did).
//
// The viewer owns the tab and calls `render(pane)` whenever the pane is shown or the state it
// reads changes; everything else (the picked nodes, the mode, requests) lives here.

import { clear, el } from './dom';
import { Transport } from './transport';

export interface CompareHandlers {
  /** Select an entry in the tree (and reveal it). */
  open(entryId: string): void;
  /** The entry selected in the tree now, if any. */
  selected(): string | null;
  /** The session's current leaf. */
  leaf(): string | null;
  /**
   * Open the viewer's "Go here" dialog for an entry (no summary / summary / summary with
   * instructions): the notebook widget appends a pi-compatible branch_summary when asked; a
   * read-only view only moves its leaf in memory. The entry is selected in the tree first.
   */
  goTo(entryId: string): void;
  /** A short message in the viewer's banner. */
  notify(message: string, isError?: boolean): void;
}

/** CSS of the pane, appended to the viewer's styles. */
export const COMPARE_STYLES = '';

export class ComparePane {
  constructor(
    private readonly transport: Transport,
    private readonly handlers: CompareHandlers
  ) {}

  /** Draw the pane into `parent` (emptied first). */
  render(parent: HTMLElement): void {
    clear(parent);
    el('p', 'pi-muted', parent, 'Compare two entries: select one in the tree, then pick it as A or B.');
    void this.transport;
    void this.handlers;
  }
}
