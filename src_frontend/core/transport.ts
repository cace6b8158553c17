// The only thing the viewer core knows about where its data comes from.
//
// The notebook widget (src_frontend/widget.ts) implements it over an anywidget model: durable
// state in traitlets, requests as custom messages. The JupyterLab document viewer implements it
// over REST. Both answer the same requests with the same payloads (pi_lab/view/payload.py).

import { FILTER_MODES as CONTRACT_FILTER_MODES } from './contract';

/** Durable view state: what a view needs to redraw. Mirrors the SessionWidget traitlets. */
export interface ViewState {
  leaf_id: string | null;
  selected_id: string | null;
  filter_mode: FilterMode;
  search: string;
  folded: string[];
  show_label_times: boolean;
  tool_output: 'none' | 'preview' | 'full';
  side_pane: 'detail' | 'context' | 'compactions' | 'compare';
  structure: DataView | null;
  structure_version: number;
  row_count: number;
  gauge: Gauge | Record<string, never>;
  /** The compactions on the branch; a transport may instead keep them in `gauge.compactions`. */
  compactions?: CompactionInfo[];
  context_window: number;
  reserve_tokens: number;
  keep_recent_tokens: number;
  session: SessionInfo | Record<string, never>;
  status: string;
  busy: string;
  editor_text: string;
  height: number;
  /** The notebook widget: whether it may write the session file (read-only until allowed). */
  writable?: boolean;
  /** The notebook widget: what allowing writes will do, to which file (shown before confirming). */
  write_plan?: string;
  /**
   * The note filter (notes.ts): "" (off), "noted" (entries with a note) or "tag:<tag>". Laid out
   * by the host like the search (widget traitlet `note_filter`, REST `view.note_filter`).
   */
  note_filter?: string;
  /** Changes whenever the notes store's notes change (any writer): the view asks for `notes` again. */
  notes_version?: number;
}

/** The filter modes in ctrl+o cycling order (pi_lab/view/contract.py, through contract.ts). */
export type FilterMode = (typeof CONTRACT_FILTER_MODES)[number];
export const FILTER_MODES: FilterMode[] = [...CONTRACT_FILTER_MODES];

export interface SessionInfo {
  id: string;
  file: string | null;
  name: string | null;
  /** The agent that wrote the file ("pi", "claude-code", "codex"), when the host sends it. */
  agent?: string;
  /** Why the session cannot be written (other agents' files), or null. */
  write_refusal?: string | null;
  /** What the session is called (its name, else its first user message), when the host sends it. */
  title?: string | null;
  first_message?: string | null;
  cwd: string;
  entries: number;
  /** The model the session itself records (its last model change or assistant reply). */
  model: string;
  /** The model answering new prompts in this kernel, when one is attached (e.g. "pi-lab/offline"). */
  answering_model?: string | null;
  following: boolean;
}

export interface CompactionInfo {
  id: string;
  timestamp: string;
  tokens_before: number | null;
  after: number | null;
  after_kind: 'measured' | 'estimated' | null;
  after_entry_id: string | null;
  first_kept_id: string | null;
  from_hook: boolean;
  summary_preview: string;
}

/** The context gauge (pi_lab/view/gauge.py). */
export interface Gauge {
  leaf_id: string | null;
  context_window: number;
  reserve_tokens: number;
  keep_recent_tokens: number;
  enabled: boolean;
  unknown: boolean;
  measured: number;
  estimated: number;
  estimate_total: number;
  tokens: number | null;
  threshold: number;
  headroom: number;
  percent: number | null;
  estimate_percent: number | null;
  would_compact: boolean;
  anchor_id: string | null;
  compactions?: CompactionInfo[];
  compaction_count?: number;
  message_count: number;
}

/** A row-structure delta (pi_lab/view/rows.py Delta.message()). */
export interface DeltaMessage {
  kind: 'delta';
  from: number;
  to: number;
  ops: DeltaOp[];
  gutter_base: number;
  gutters: [number, number, number][];
  row_count: number;
  leaf_row: number;
  /** The notebook widget also sends the new leaf, entry count and the gauge fields that changed. */
  leaf_id?: string | null;
  entries?: number;
  gauge?: Partial<Gauge>;
  compactions?: CompactionInfo[];
}

export type DeltaOp =
  | { op: 'flags'; row: number; flags: number }
  | { op: 'insert' | 'replace'; row: number; values: number[]; text: RowText }
  | { op: 'remove'; row: number }
  | { op: 'text'; row: number; text: RowText };

/** The text part of one row (payload.rows_payload). */
export interface RowText {
  id: string;
  text: string;
  label: string | null;
  label_time: string | null;
  /** The entry's raw `type`, sent for rows whose type pi does not know (they have no text). */
  type?: string;
  /** pi's estimate of the row's entry; the structure's tokens column waits for it (row.ts TOKENS_UNKNOWN). */
  tokens?: number;
  /**
   * While a search is on, for a row whose shown text and label do not hold every search word:
   * the words around the first match in the entry's search text (a tool result's output...).
   */
  hit?: string;
}

/** Live notifications: streaming text and tool progress. */
export type LiveEvent =
  | { type: 'stream'; text: string; thinking: string }
  | { type: 'stream_end' }
  | { type: 'tool'; phase: 'start' | 'end'; name: string; call_id: string; error?: boolean };

export interface Reply<T> {
  result: T;
  buffers: DataView[];
}

export interface Transport {
  /** Ask the kernel (or server); rejects with the engine's message when refused. */
  request<T = unknown>(op: string, args?: Record<string, unknown>): Promise<Reply<T>>;
  get<K extends keyof ViewState>(key: K): ViewState[K];
  /** Change durable state (saved with the notebook, seen by every view). */
  set(state: Partial<ViewState>): void;
  /** Call `callback` when `key` changes; returns the function that stops it. */
  on(key: keyof ViewState, callback: () => void): () => void;
  onDelta(callback: (delta: DeltaMessage) => void): () => void;
  onEvent(callback: (event: LiveEvent) => void): () => void;
  /** Whether actions that write (navigate, compact, label, fork) are possible now. */
  readonly writable: boolean;
  /**
   * Whether writing can be switched on from the view (the notebook widget: request
   * "allow_writes" after a confirmation quoting `write_plan`).
   */
  readonly canAllowWrites?: boolean;
  /** A read-only view's way to a writable one (the JupyterLab viewer: Open in notebook). */
  openInNotebook?(): void;
  /**
   * The host answers the gauge (`gauge` with `leaf_id`), the timeline and "what the model sees"
   * at any leaf, so a view that cannot write may still move its leaf in that view only (the
   * JupyterLab viewer; the file and the server's leaf stay as they are).
   */
  readonly leafInView?: boolean;
  /** What a read-only view with no way to a writable one tells the reader to do instead. */
  readonly readOnlyHint?: string;
  /** Why this view cannot write notes, when it never can (the static export's sentence). */
  readonly notesRefusal?: string;
}
