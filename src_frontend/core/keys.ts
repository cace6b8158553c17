// Keyboard of the tree list, after pi's /tree (tree-and-context.md §13.6): arrows move (with
// wrap-around), left/right and page keys move by a page, ctrl/alt+left folds or jumps up to
// the segment start, ctrl/alt+right unfolds or jumps down, Enter acts, shift+L edits the
// label, shift+T toggles label times, typing searches; the menu key or shift+F10 opens the
// action menu; F3 and shift+F3 go to the next and previous search hit. Notes (notes.ts):
// shift+N adds a note to the selected entry, alt+N and alt+shift+N go to the next and previous
// row with a note (letters typed alone are the search, so both need a modifier).

export interface TreeKeyActions {
  count: number;
  selected: number;
  page: number;
  move(row: number): void;
  foldOrUp(): void;
  unfoldOrDown(): void;
  activate(): void;
  menu(): void;
  label(): void;
  toggleTimes(): void;
  type(text: string): void;
  backspace(): void;
  escape(): void;
  /** The next (or, backwards, previous) search hit. */
  nextHit?(backwards: boolean): void;
  /** Add a note to the selected entry (shift+N). */
  note?(): void;
  /** The next (or, backwards, previous) row with a note (alt+N, alt+shift+N). */
  nextNote?(backwards: boolean): void;
}

/** Apply one key; returns whether it was handled (then the caller prevents the default). */
export function handleTreeKey(event: KeyboardEvent, a: TreeKeyActions): boolean {
  const { count, selected, page } = a;
  if (count === 0 && !(event.key.length === 1 || event.key === 'Backspace' || event.key === 'Escape')) {
    return false;
  }
  const last = count - 1;
  const jump = event.ctrlKey || event.altKey || event.metaKey;
  switch (event.key) {
    case 'ArrowUp':
      a.move(selected <= 0 ? last : selected - 1);
      return true;
    case 'ArrowDown':
      a.move(selected >= last ? 0 : selected + 1);
      return true;
    case 'ArrowLeft':
      if (jump) {
        a.foldOrUp();
      } else {
        a.move(Math.max(0, selected - page));
      }
      return true;
    case 'ArrowRight':
      if (jump) {
        a.unfoldOrDown();
      } else {
        a.move(Math.min(last, selected + page));
      }
      return true;
    case 'PageUp':
      a.move(Math.max(0, selected - page));
      return true;
    case 'PageDown':
      a.move(Math.min(last, selected + page));
      return true;
    case 'Home':
      a.move(0);
      return true;
    case 'End':
      a.move(last);
      return true;
    case 'Enter':
      a.activate();
      return true;
    case 'ContextMenu':
      a.menu();
      return true;
    case 'F10':
      if (event.shiftKey) {
        a.menu(); // the usual keyboard stand-in for a right click
        return true;
      }
      return false;
    case 'Escape':
      a.escape();
      return true;
    case 'F3':
      if (a.nextHit) {
        a.nextHit(event.shiftKey);
        return true;
      }
      return false;
    case 'Backspace':
      a.backspace();
      return true;
  }
  // By the key's place, not its character: alt+N types "˜" or "ñ" on some layouts.
  if (event.altKey && !event.ctrlKey && !event.metaKey && event.code === 'KeyN' && a.nextNote) {
    a.nextNote(event.shiftKey);
    return true;
  }
  if (jump) {
    return false; // leave the browser's and JupyterLab's shortcuts alone
  }
  if (event.key === 'N' && event.shiftKey && a.note) {
    a.note();
    return true;
  }
  if (event.key === 'L' && event.shiftKey) {
    a.label();
    return true;
  }
  if (event.key === 'T' && event.shiftKey) {
    a.toggleTimes();
    return true;
  }
  if (event.key.length === 1 && event.key !== ' ') {
    a.type(event.key);
    return true;
  }
  return false;
}
