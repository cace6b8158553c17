// The viewer core's Transport over the server's REST API, for the read-only JupyterLab viewer.
//
// The view state (filter, search, folds, selection, gauge settings, panes) lives here, in the
// document; the server keeps the parsed session and a few shared row layouts. A change of
// filter, search or folds asks the server for that layout's state; the core then fetches the
// structure. `poll()` catches up with a file that grows: its deltas go to the core as they
// are, a layout change makes the core fetch the structure again.

import type {
  DeltaMessage,
  FilterMode,
  Gauge,
  LiveEvent,
  Reply,
  SessionInfo,
  Transport,
  ViewState
} from '../core/transport';

import { readHeader } from '../core/row';
import { KeyListeners, openingView, sameValue, SETTINGS_KEYS, VIEW_KEYS, writeChanges } from '../core/viewState';

import { ApiError, GaugeSettings, PiLabApi, PollReply, SessionState, ViewParams } from './api';
import { sessionTitle, TitleSource } from './title';

export const READ_ONLY_MESSAGE = 'read-only viewer — Open in notebook to navigate or compact';
// The server names the requests this viewer refuses (session.write_actions, from the one Python
// list pi_lab.view.actions.WRITE_ACTIONS); this set only answers before its first state arrives.
const WRITE_OPS_BEFORE_STATE = new Set(['navigate', 'compact', 'cancel', 'label', 'fork', 'clone']);

function initialState(): ViewState {
  return {
    ...openingView(),
    leaf_id: null,
    selected_id: null,
    structure_version: 0,
    row_count: 0,
    gauge: {},
    context_window: 128_000,
    reserve_tokens: 16_384,
    keep_recent_tokens: 20_000,
    session: {},
    height: 560
  };
}

/** What the hosting panel hears about besides the state the core watches. */
export interface TransportHooks {
  /** A state answer arrived (first load, new layout, growth). */
  state?(state: SessionState): void;
  /** Following the file failed (removed, no longer a session, server gone) or recovered (null). */
  problem?(error: ApiError | null): void;
}

export class RestTransport implements Transport {
  readonly writable = false;
  // The server answers the gauge, the timeline and the context at any leaf: the viewer moves
  // its leaf in memory (this view only); the file and the server's leaf stay as they are.
  readonly leafInView = true;
  /** Set by the hosting panel: make a notebook that opens this session (writable there). */
  openInNotebook?: () => void;

  constructor(
    private readonly api: PiLabApi,
    private path: string,
    private readonly hooks: TransportHooks = {}
  ) {}

  /** The file, as the server names it (a path under the root or `@sessions/...`). */
  get location(): string {
    return this.path;
  }

  /**
   * Start with this search (and selected entry) instead of the defaults: the Pi Sessions panel
   * opens a hit with its query applied. Call before `load()`; later changes go through `set`.
   */
  preset(view: { search?: string; selected_id?: string | null; filter_mode?: ViewState['filter_mode'] }): void {
    if (view.search !== undefined) {
      this.state.search = view.search;
    }
    if (view.filter_mode !== undefined) {
      this.state.filter_mode = view.filter_mode;
    }
    if (view.selected_id) {
      this.state.selected_id = view.selected_id;
    }
  }

  /** The name shown until the server's answer names the session (the panel's title for it). */
  setTitleHint(title: string): void {
    this.titleHint = title;
  }

  /** Follow a renamed document. */
  setLocation(path: string): void {
    this.path = path;
    this.generation = -1;
  }

  // ------------------------------------------------------------------ Transport

  get<K extends keyof ViewState>(key: K): ViewState[K] {
    return this.state[key];
  }

  set(changes: Partial<ViewState>): void {
    if (changes.context_window !== undefined && changes.context_window !== this.state.context_window) {
      this.windowChosen = true;
    }
    // Like pi (and the notebook widget), a new filter or search clears the folds.
    const changed = writeChanges(this.state, changes);
    changed.forEach(key => this.emit(key));
    if (changed.some(key => VIEW_KEYS.has(key))) {
      void this.relayout();
    } else if (changed.some(key => SETTINGS_KEYS.has(key))) {
      void this.refreshGauge();
    }
  }

  on(key: keyof ViewState, callback: () => void): () => void {
    return this.listeners.on(key, callback);
  }

  onDelta(callback: (delta: DeltaMessage) => void): () => void {
    this.deltaListeners.add(callback);
    return () => this.deltaListeners.delete(callback);
  }

  onEvent(_callback: (event: LiveEvent) => void): () => void {
    return () => undefined; // a file on disk streams no partial text
  }

  async request<T = unknown>(op: string, args: Record<string, unknown> = {}): Promise<Reply<T>> {
    if (op === 'hello') {
      return { result: {} as T, buffers: [] };
    }
    const named = (this.state.session as { write_actions?: string[] }).write_actions;
    if (named ? named.includes(op) : WRITE_OPS_BEFORE_STATE.has(op)) {
      throw new Error(READ_ONLY_MESSAGE);
    }
    const body = this.body({ args });
    if (op === 'structure') {
      const blob = (await this.takeEarlyStructure()) ?? (await this.api.postBinary(['session', 'structure'], {
        ...body,
        selected_id: this.state.selected_id
      }));
      const head = readHeader(blob);
      if (head && head.version !== this.version) {
        // Another viewer of the same layout moved it on: the next poll brings the whole state.
        this.version = -1;
        this.seen(head.version);
      }
      return { result: {} as T, buffers: [new DataView(blob)] };
    }
    try {
      const result = await this.api.post<T>(['session', op], body);
      return { result, buffers: [] };
    } catch (error) {
      throw error instanceof ApiError ? new Error(error.message) : error;
    }
  }

  // ------------------------------------------------------------------ loading and following

  /** Load (or reload) the session's state for the current layout. */
  async load(): Promise<SessionState> {
    const body = this.body();
    // The structure is asked for with the state, not after it: the server answers it as soon
    // as the state's layout is made (the same layout, under the session's lock), so the first
    // rows wait one round trip less. The core's first structure request takes it (see
    // takeEarlyStructure) when nothing it depends on changed meanwhile.
    const selected = this.state.selected_id;
    const blob = this.api.postBinary(['session', 'structure'], { ...body, selected_id: selected });
    blob.catch(() => undefined); // the state's answer says what went wrong
    const early = { view: JSON.stringify(body.view), selected, blob, leaf: null as string | null };
    this.earlyStructure = early;
    try {
      const state = await this.api.post<SessionState>(['session', 'state'], body);
      early.leaf = state.leaf_id;
      this.applyState(state, true);
      return state;
    } catch (error) {
      if (this.earlyStructure === early) {
        this.earlyStructure = null;
      }
      throw error;
    }
  }

  /**
   * The structure asked for with the last state, when it is the one the core would ask for
   * now: same layout, same selection (or none then and the leaf now, which the server resolves
   * to the same row whenever the leaf or one of its ancestors is shown), and of the version
   * the state announced. Used once; null means ask again.
   */
  private async takeEarlyStructure(): Promise<ArrayBuffer | null> {
    const early = this.earlyStructure;
    this.earlyStructure = null;
    if (!early || early.view !== JSON.stringify(this.body().view)) {
      return null;
    }
    const now = this.state.selected_id;
    if (now !== early.selected && !(early.selected === null && early.leaf !== null && now === early.leaf)) {
      return null;
    }
    let blob: ArrayBuffer;
    try {
      blob = await early.blob;
    } catch {
      return null;
    }
    const head = readHeader(blob);
    if (!head || head.version !== this.version) {
      return null;
    }
    if (now !== early.selected && !(head.selected_row >= 0)) {
      return null; // nothing of the leaf's path is shown: the server's answer depends on the id
    }
    return blob;
  }

  /** Ask the server whether the file changed; apply what it says. */
  async poll(): Promise<PollReply['kind']> {
    if (this.polling) {
      return 'none';
    }
    this.polling = true;
    try {
      const reply = await this.api.post<PollReply>(['session', 'poll'], {
        ...this.body(),
        version: this.version,
        generation: this.generation
      });
      this.hooks.problem?.(null);
      if (typeof reply.notes_version === 'number') {
        this.put({ notes_version: reply.notes_version }); // another writer changed the notes
      }
      if (reply.kind === 'delta' && reply.generation === this.generation) {
        for (const delta of reply.deltas) {
          this.seen(delta.to);
          this.deltaListeners.forEach(cb => cb(delta));
        }
        this.applyState(reply, false);
      } else if (reply.kind !== 'none') {
        this.applyState(reply as SessionState, true);
      }
      return reply.kind;
    } catch (error) {
      if (error instanceof ApiError) {
        this.hooks.problem?.(error);
      }
      throw error;
    } finally {
      this.polling = false;
    }
  }

  private async relayout(): Promise<void> {
    this.earlyStructure = null;
    const token = ++this.layoutToken;
    try {
      const state = await this.api.post<SessionState>(['session', 'state'], this.body());
      if (token === this.layoutToken) {
        this.applyState(state, true);
      }
    } catch (error) {
      this.notify(error);
    }
  }

  private async refreshGauge(): Promise<void> {
    try {
      const reply = await this.request<Gauge>('gauge');
      this.put({ gauge: reply.result });
    } catch (error) {
      this.notify(error);
    }
  }

  private applyState(state: SessionState, layout: boolean): void {
    this.generation = state.generation;
    this.version = state.version;
    this.seen(state.version);
    // The header shows `name`: give it the session's title (its name, else its first user
    // message; see title.ts), so it reads like the tab and the panel rather than a file name.
    const named = state.session as SessionInfo & TitleSource;
    const title = sessionTitle(
      { title: named.title, name: named.name, first_message: named.first_message ?? this.titleHint },
      '',
      200
    );
    const session: SessionInfo = {
      ...state.session,
      name: title || state.session.name,
      file: state.location?.name ?? state.session.file
    };
    const changes: Partial<ViewState> = {
      // Until the reader picks an entry, the leaf is selected (what pi's /tree starts on).
      selected_id: this.state.selected_id ?? state.leaf_id,
      leaf_id: state.leaf_id,
      row_count: state.row_count,
      gauge: state.gauge,
      session,
      status: layout ? this.state.status : `updated ${new Date().toLocaleTimeString()}`
    };
    if (typeof state.notes_version === 'number') {
      changes.notes_version = state.notes_version;
    }
    const window = (state.gauge as { context_window?: number }).context_window;
    if (!this.windowChosen && typeof window === 'number' && window > 0) {
      changes.context_window = window; // the model's published window, picked by the server
    }
    // The core fetches the structure when structure_version passes the version it holds; a
    // layout may be an older one (back to a filter seen before), so go past every version seen.
    changes.structure_version = layout ? this.maxSeen + 1 : state.version;
    if (layout) {
      this.maxSeen += 1;
    }
    this.put(changes);
    this.hooks.state?.(state);
  }

  private seen(version: number): void {
    this.maxSeen = Math.max(this.maxSeen, version);
  }

  /** Change state the server decided (no relayout, no gauge request). */
  private put(changes: Partial<ViewState>): void {
    // Each key is told as soon as it is written (a listener may read the keys before it).
    for (const [key, value] of Object.entries(changes) as [keyof ViewState, unknown][]) {
      if (!sameValue(this.state[key], value)) {
        (this.state as unknown as Record<string, unknown>)[key] = value;
        this.emit(key);
      }
    }
  }

  private notify(error: unknown): void {
    this.put({ status: error instanceof Error ? error.message : String(error) });
  }

  private emit(key: keyof ViewState): void {
    this.listeners.emit(key);
  }

  private body(extra: Record<string, unknown> = {}): Record<string, unknown> {
    const view: ViewParams = {
      filter_mode: this.state.filter_mode as FilterMode,
      search: this.state.search,
      folded: this.state.folded,
      note_filter: this.state.note_filter ?? ''
    };
    // Until the reader picks a window, the server uses the published window of the session's
    // model (its answer's gauge carries it back, see applyState).
    const settings: Partial<GaugeSettings> = {
      reserve_tokens: this.state.reserve_tokens,
      keep_recent_tokens: this.state.keep_recent_tokens
    };
    if (this.windowChosen) {
      settings.context_window = this.state.context_window;
    }
    return { path: this.path, view, settings, ...extra };
  }

  private readonly state: ViewState = initialState();
  private readonly listeners = new KeyListeners();
  private readonly deltaListeners = new Set<(delta: DeltaMessage) => void>();
  private generation = -1;
  private version = -1;
  private windowChosen = false;
  private maxSeen = 0;
  private polling = false;
  private layoutToken = 0;
  private titleHint: string | null = null;
  private earlyStructure: {
    view: string;
    selected: string | null;
    blob: Promise<ArrayBuffer>;
    leaf: string | null;
  } | null = null;
}
