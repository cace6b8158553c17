// The bookkeeping every Transport does over its ViewState: the per-key listeners the core
// subscribes with `on`, and writing a change into the state (new filter or search clears the
// folds, unchanged values are not changes). The two read-only transports (the JupyterLab
// viewer's REST one and the HTML export's static one) share it; they differ only in what a
// change of view or settings sets off.

import type { ViewState } from './transport';

/** The keys whose change needs a new row layout. */
export const VIEW_KEYS: ReadonlySet<keyof ViewState> = new Set<keyof ViewState>(['filter_mode', 'search', 'folded', 'note_filter']);
/** The keys whose change needs a new gauge. */
export const SETTINGS_KEYS: ReadonlySet<keyof ViewState> = new Set<keyof ViewState>([
  'context_window',
  'reserve_tokens',
  'keep_recent_tokens'
]);

/**
 * The state a read-only viewer opens with, apart from what its source knows (leaf, session,
 * gauge and its settings, sizes): no filter, search or folds, the detail pane, no messages.
 */
export function openingView(): Pick<
  ViewState,
  'filter_mode' | 'search' | 'folded' | 'note_filter' | 'notes_version' | 'show_label_times' | 'tool_output' | 'side_pane' | 'structure' | 'status' | 'busy' | 'editor_text'
> {
  return {
    filter_mode: 'default',
    search: '',
    folded: [],
    note_filter: '',
    notes_version: 0,
    show_label_times: false,
    tool_output: 'preview',
    side_pane: 'detail',
    structure: null,
    status: '',
    busy: '',
    editor_text: ''
  };
}

/** Equal as view-state values: the same value, or arrays with the same items in order. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => item === b[i]);
  }
  return false;
}

/**
 * Write a reader's `changes` into `state` and return the keys whose value changed, in the
 * order given. A new filter or search also clears the folds (as pi does, and the widget).
 */
export function writeChanges(state: ViewState, changes: Partial<ViewState>): (keyof ViewState)[] {
  const next = { ...changes };
  if (
    (next.filter_mode !== undefined && next.filter_mode !== state.filter_mode) ||
    (next.search !== undefined && next.search !== state.search)
  ) {
    next.folded = [];
  }
  const changed: (keyof ViewState)[] = [];
  for (const [key, value] of Object.entries(next) as [keyof ViewState, unknown][]) {
    if (!sameValue(state[key], value)) {
      (state as unknown as Record<string, unknown>)[key] = value;
      changed.push(key);
    }
  }
  return changed;
}

/** Callbacks per view-state key. */
export class KeyListeners {
  /** Call `callback` whenever `key` changes; returns the unsubscribe function. */
  on(key: keyof ViewState, callback: () => void): () => void {
    let set = this.map.get(key);
    if (!set) {
      set = new Set();
      this.map.set(key, set);
    }
    set.add(callback);
    return () => set!.delete(callback);
  }

  emit(key: keyof ViewState): void {
    this.map.get(key)?.forEach(cb => cb());
  }

  private readonly map = new Map<keyof ViewState, Set<() => void>>();
}
