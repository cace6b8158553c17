// The viewer core's Transport over the data an HTML export embeds (pi_lab/export/): a
// read-only viewer like the JupyterLab one, but with no server. Filters, search and folds are
// laid out here (layout.ts); entry details and "what the model sees" come from the embedded
// chunks; the gauge is recomputed here when the reader changes the window or the reserve.

import { FLAG_BITS, KIND_NAMES, MAX_ROWS_PER_REQUEST, WRITE_OP_NAMES } from '../core/contract';
import type { DeltaMessage, FilterMode, Gauge, LiveEvent, Reply, RowText, SessionInfo, Transport, ViewState } from '../core/transport';
import { KeyListeners, openingView, SETTINGS_KEYS, VIEW_KEYS, writeChanges } from '../core/viewState';

import { ChunkStore, ExportHeader, previewDetail } from './data';
import { encodeStructure, FlatData, Layout, layoutRows, locateRow, searchHit } from './layout';
import { ContextRow, StaticViews } from './views';

export const READ_ONLY_MESSAGE = 'read-only export — open the session file with pi_lab to navigate or compact';
/** What the export answers to a note write (pi_lab/view/notes.py STATIC_REFUSAL, the one wording). */
export const NOTES_REFUSAL =
  'This page is a static export: notes are read-only here. Open the session in JupyterLab or a notebook to add notes.';
const NOTE_WRITES = new Set(['note_add', 'note_edit', 'note_remove']);
const WRITE_OPS = new Set<string>([...WRITE_OP_NAMES, 'compact_preview', 'allow_writes']);
/** The context views' requests that compute over the whole tree. An export answers them from
 * the facts it embeds (views.ts); one made before those facts needs a kernel. The "what if"
 * replay re-runs compactions under other settings, which only the kernel can do. */
const KERNEL_OPS = new Set(['timeline_at', 'composition', 'compare_node', 'context_diff', 'context_search', 'compare_branches',
  'what_if', 'what_if_compaction', 'what_if_context']);
export const NEEDS_KERNEL = 'needs a kernel: open the session with pi_lab (pi_lab.open(path) in a notebook)';
const SCALARS = ['message_count', 'estimated_total', 'context_tokens', 'measured_tokens', 'trailing_tokens',
  'thinking_level', 'model', 'system_tokens', 'compaction_id'];

/** pi_lab/view/gauge.py `_finish`: the numbers derived from the window and the reserve. */
export function finishGauge(g: Record<string, unknown>): Gauge {
  const window = Number(g.context_window) || 0;
  const measured = Number(g.measured) || 0;
  const estimated = Number(g.estimated) || 0;
  const threshold = window - (Number(g.reserve_tokens) || 0);
  const total = measured + estimated;
  const tokens = g.unknown ? null : total;
  return {
    ...(g as unknown as Gauge),
    threshold,
    estimate_total: total,
    tokens,
    headroom: threshold - total,
    percent: tokens !== null && window > 0 ? (tokens / window) * 100 : null,
    estimate_percent: window > 0 ? (total / window) * 100 : null,
    would_compact: Boolean(g.enabled && window > 0 && total > threshold)
  };
}

/** What an export or a kernel-less snapshot says in place of a button it does not have. */
export const READ_ONLY_HINT =
  'This page is a read-only copy of the session: it cannot move the leaf. To navigate or compact, open the session file with pi_lab (pi_lab.open(path) in a notebook).';

export class StaticTransport implements Transport {
  readonly writable = false;
  readonly canAllowWrites = false;
  readonly readOnlyHint = READ_ONLY_HINT;
  readonly notesRefusal = NOTES_REFUSAL;

  constructor(
    private readonly header: ExportHeader,
    private readonly flat: FlatData,
    private readonly chunks: ChunkStore
  ) {
    const settings = header.settings;
    this.state = {
      ...openingView(),
      leaf_id: header.leaf_id,
      selected_id: header.leaf_id,
      structure_version: 1,
      row_count: 0,
      gauge: header.gauge as unknown as Gauge,
      context_window: settings.context_window,
      reserve_tokens: settings.reserve_tokens,
      keep_recent_tokens: settings.keep_recent_tokens,
      session: header.session as unknown as SessionInfo,
      height: 0
    };
    this.indexOf = new Map();
    header.ids.forEach((id, i) => {
      if (id !== null) {
        this.indexOf.set(id, i);
      }
    });
    this.current = this.layout();
    this.state.row_count = this.current.rowIndex.length;
    this.views = StaticViews.available(header)
      ? new StaticViews(header, flat, index => this.chunks.record(index), index => this.rowsAt(index), id => this.index(id))
      : null;
  }

  /** The flat index of an entry id, or -1. */
  index(id: string | null | undefined): number {
    return id ? this.indexOf.get(id) ?? -1 : -1;
  }

  // ------------------------------------------------------------------ Transport

  get<K extends keyof ViewState>(key: K): ViewState[K] {
    return this.state[key];
  }

  set(changes: Partial<ViewState>): void {
    // Like pi (and the other views), a new filter or search clears the folds.
    const changed = writeChanges(this.state, changes);
    if (changed.some(key => VIEW_KEYS.has(key))) {
      this.current = this.layout();
      this.state.row_count = this.current.rowIndex.length;
      this.state.structure_version = this.version;
      changed.push('row_count', 'structure_version');
    }
    if (changed.some(key => SETTINGS_KEYS.has(key))) {
      this.state.gauge = this.gauge();
      changed.push('gauge');
    }
    changed.forEach(key => this.listeners.emit(key));
  }

  on(key: keyof ViewState, callback: () => void): () => void {
    return this.listeners.on(key, callback);
  }

  onDelta(_callback: (delta: DeltaMessage) => void): () => void {
    return () => undefined; // an export never grows
  }

  onEvent(_callback: (event: LiveEvent) => void): () => void {
    return () => undefined;
  }

  async request<T = unknown>(op: string, args: Record<string, unknown> = {}): Promise<Reply<T>> {
    const reply = (result: unknown, buffers: DataView[] = []): Reply<T> => ({ result: result as T, buffers });
    if (WRITE_OPS.has(op)) {
      throw new Error(READ_ONLY_MESSAGE);
    }
    if (NOTE_WRITES.has(op)) {
      throw new Error(NOTES_REFUSAL);
    }
    if (this.views && StaticViews.answers(op)) {
      return reply(await this.views.answer(op, args));
    }
    switch (op) {
      case 'hello':
        return reply({});
      case 'notes': {
        // Embedded at export time (read-only); an export made without notes has none to show.
        const notes = this.header.notes;
        if (!notes) {
          throw new Error(`unknown request ${JSON.stringify(op)}`);
        }
        const { covered: _covered, ...payload } = notes;
        return reply({ ...payload, writable: false });
      }
      case 'structure':
        return reply({}, [new DataView(this.structure())]);
      case 'rows':
        return reply(this.rows(Number(args.start) || 0, Number(args.end) || 0, args.version as number | undefined));
      case 'locate': {
        // With `prefix` (the "go to entry id" box) the id may be its start (payload.py _locate).
        let id = args.id as string;
        const extra: Record<string, unknown> = {};
        if (args.prefix) {
          const matches = this.idPrefixMatches(String(id ?? '').trim());
          extra.matches = matches;
          if (matches.length !== 1) {
            return reply({ row: -1, version: this.version, id: null, ...extra });
          }
          id = extra.found = matches[0];
        }
        const row = locateRow(this.flat, this.current, this.index(id), false);
        return reply({ row, version: this.version, id: row >= 0 ? this.flat.ids[this.current.rowIndex[row]] : null, ...extra });
      }
      case 'entry':
        return reply(await this.entry(args.id as string, Boolean(args.full)));
      case 'context_at':
        return reply(await this.contextAt((args.id as string | undefined) ?? this.header.leaf_id));
      case 'gauge':
        return reply(this.state.gauge);
      case 'timeline': {
        // Embedded at export time for the export's leaf (data.py); another leaf needs a kernel.
        const leaf = (args.leaf_id as string | null | undefined) ?? this.header.leaf_id;
        if (!this.header.timeline) {
          throw new Error(`unknown request ${JSON.stringify(op)}`);
        }
        if (leaf !== this.header.leaf_id) {
          throw new Error(`The timeline of another leaf ${NEEDS_KERNEL}`);
        }
        return reply(this.header.timeline);
      }
      default:
        break;
    }
    if (KERNEL_OPS.has(op)) {
      throw new Error(`${op.replace(/_/g, ' ')} ${NEEDS_KERNEL}`);
    }
    throw new Error(`unknown request ${JSON.stringify(op)}`);
  }

  // ------------------------------------------------------------------ answers

  /** The entry ids starting with `prefix` (the id itself when it is one), at most five, in file order. */
  private idPrefixMatches(prefix: string): string[] {
    if (!prefix) {
      return [];
    }
    if (this.indexOf.has(prefix)) {
      return [prefix];
    }
    const found: string[] = [];
    for (const id of this.header.ids) {
      if (id !== null && id.startsWith(prefix)) {
        found.push(id);
        if (found.length === 5) {
          break;
        }
      }
    }
    return found;
  }

  private layout(): Layout {
    this.version += 1;
    return layoutRows(this.flat, this.state.filter_mode as FilterMode, this.state.search, this.state.folded, this.notedMask());
  }

  /** The entries the note filter keeps, from the notes' coverage the export embeds (null: off). */
  private notedMask(): Uint8Array | null {
    const filter = this.state.note_filter ?? '';
    if (!filter) {
      return null;
    }
    const mask = new Uint8Array(this.flat.count);
    const covered = this.header.notes?.covered ?? {};
    const tag = filter.startsWith('tag:') ? filter.slice('tag:'.length) : null;
    for (const [id, tags] of Object.entries(covered)) {
      const index = this.index(id);
      if (index >= 0 && (tag === null || tags.includes(tag))) {
        mask[index] = 1;
      }
    }
    return mask;
  }

  /** The structure blob, with the selection resolved by pi's nearest-visible rule. */
  structure(): ArrayBuffer {
    const layout = this.current;
    const wanted = this.state.selected_id;
    const selected = wanted !== null ? locateRow(this.flat, layout, this.index(wanted), true) : layout.anchorRow;
    const session = this.header.session;
    return encodeStructure(layout, {
      version: this.version,
      kinds: KIND_NAMES,
      flags: FLAG_BITS,
      leaf_id: this.header.leaf_id,
      leaf_row: layout.leafRow,
      anchor_row: layout.anchorRow,
      filter_mode: this.state.filter_mode,
      search: this.state.search,
      multiple_roots: layout.multipleRoots,
      entry_count: this.header.entry_count,
      selected_row: selected,
      selected_id: selected >= 0 ? this.flat.ids[layout.rowIndex[selected]] : null,
      session_id: session.id,
      session_file: session.file,
      session_name: session.name
    });
  }

  private rows(start: number, end: number, version?: number): unknown {
    if (version !== undefined && version !== null && version !== this.version) {
      return { stale: true, version: this.version };
    }
    const layout = this.current;
    const from = Math.max(0, start);
    const to = Math.min(layout.rowIndex.length, end, from + MAX_ROWS_PER_REQUEST);
    const rows = [];
    for (let r = from; r < to; r++) {
      const i = layout.rowIndex[r];
      const label = this.header.labels[i];
      const row: RowText = { id: this.flat.ids[i] as string, text: this.header.texts[i], label, label_time: label !== null ? this.header.label_times[i] : null };
      const hit = this.state.search ? searchHit(this.state.search, this.flat.search[i] ?? '', row.text, label) : undefined;
      if (hit) {
        row.hit = hit;
      }
      rows.push(row);
    }
    return { version: this.version, start: from, rows };
  }

  private async entry(id: string, full: boolean): Promise<unknown> {
    const index = this.index(id);
    if (index < 0) {
      throw new Error(`Entry ${id} not found`);
    }
    const record = await this.chunks.record(index);
    const detail = full ? record.f : previewDetail(record);
    if (!detail) {
      throw new Error(`Entry ${id} not found`);
    }
    return detail;
  }

  /** The context rows at flat entry `index`, with the facts the context views read (`v`). */
  async rowsAt(index: number): Promise<ContextRow[]> {
    const first = await this.chunks.record(index);
    const chain = [first];
    for (let at = first.c.b; at >= 0; ) {
      const record = await this.chunks.record(at);
      chain.push(record);
      at = record.c.b;
    }
    // Root first: each record adds rows to its parent's or rewrites them (context.py messages_of).
    let messages: unknown[] = [];
    for (let k = chain.length - 1; k >= 0; k--) {
      const c = chain[k].c;
      if (c.d) {
        const base = messages;
        messages = [];
        for (const op of c.d) {
          if (Array.isArray(op)) {
            for (let j = op[0] as number; j < (op[1] as number); j++) {
              messages.push(base[j]);
            }
          } else {
            messages.push(op);
          }
        }
      } else {
        for (const row of c.m ?? []) {
          messages.push(row);
        }
      }
    }
    return messages as ContextRow[];
  }

  /** "What the model sees" at an entry: its own messages after those of the entries it extends. */
  async contextAt(id: string | null): Promise<Record<string, unknown>> {
    const index = this.index(id);
    if (index < 0) {
      throw new Error(`Entry ${id} not found`);
    }
    const first = await this.chunks.record(index);
    // The rows as context_at gives them: without the views' facts.
    const messages = (await this.rowsAt(index)).map(row => {
      if (row === null || typeof row !== 'object' || !('v' in row)) {
        return row;
      }
      const { v: _facts, ...rest } = row;
      return rest;
    });
    const result: Record<string, unknown> = { at: id, messages };
    SCALARS.forEach((name, k) => {
      result[name] = first.c.s[k];
    });
    result.is_leaf = id === this.header.leaf_id;
    return result;
  }

  private gauge(): Gauge {
    return finishGauge({
      ...(this.header.gauge as Record<string, unknown>),
      context_window: this.state.context_window,
      reserve_tokens: this.state.reserve_tokens,
      keep_recent_tokens: this.state.keep_recent_tokens
    });
  }

  private readonly views: StaticViews | null;
  private readonly state: ViewState;
  private readonly listeners = new KeyListeners();
  private readonly indexOf: Map<string, number>;
  private current: Layout;
  private version = 0;
}
