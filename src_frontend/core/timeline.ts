// The context timeline strip: the size of the context at every model call along the current
// branch (the sawtooth of compactions), drawn above the tree.
//
// Measured points (the provider's usage) are a solid line, pi's estimate of what was sent a
// dashed one; the auto-compaction threshold (window − reserve) and keep-recent are horizontal
// lines; compactions, branch summaries and overflows are markers. A 100,000-entry session has
// tens of thousands of calls, so the lines are drawn from a min/max per pixel column (computed
// once per data and width); the pointer, the keyboard and the caption always read the real call.
//
// Two canvases: the base (lines, markers) is redrawn only when the data, the settings or the
// size change; the overlay (hover and focus cursors) on every pointer move.

import { button, el, formatTokens, rowSafe, shortId, tokensBeforeText, withAttributes } from './dom';
import { Columns, columnsOf } from './timelineColumns';
import type { Transport } from './transport';
import { Hypothesis, WhatIfPanel } from './whatif';

export interface TimelineMarker {
  kind: 'compaction' | 'branch_summary' | 'overflow';
  entry_id: string | null;
  /** Index of the first call after the marker; an overflow names its own call. */
  call: number;
  tokens_before?: number | null;
  estimated?: number;
  first_kept_id?: string | null;
  from_id?: string | null;
  empty?: boolean;
  error?: string | null;
}

/** The `timeline` payload (pi_lab/view/timeline_requests.py): calls as parallel columns. */
export interface TimelineData {
  leaf_id: string | null;
  /** The walk this answer comes from (null: not kept); `since` names it to ask for appends. */
  serial?: number | null;
  /** An answer to `since`: the calls from `calls_from` and markers from `markers_from` only. */
  append?: boolean;
  calls_from?: number;
  markers_from?: number;
  calls: {
    id: (string | null)[];
    measured: (number | null)[];
    estimated: number[];
    window: (number | null)[];
    model: number[];
    compaction: number[];
  };
  models: (string | null)[];
  markers: TimelineMarker[];
  call_count: number;
  measured_count: number;
  context_window: number;
  reserve_tokens: number;
  keep_recent_tokens: number;
}

/** A noted entry, marked under the plot at its call. */
export interface TimelineNoteMark {
  entry_id: string;
  /** A model finding is among its notes (drawn apart from the reader's notes). */
  finding: boolean;
  /** "2 notes, 1 model finding". */
  words: string;
}

export interface TimelineSettings {
  context_window: number;
  reserve_tokens: number;
  keep_recent_tokens: number;
}

export interface TimelineHandlers {
  /** Select an entry in the tree (keep the keyboard focus where it is). */
  select(entryId: string): void;
  /** The settings the gauge uses now (a "pretend" window changes the threshold line). */
  settings(): TimelineSettings | null;
}

/** A call, a marker of the session, or a what-if compaction (`hyp`, the panel's replay). */
type Focus = { kind: 'call'; index: number } | { kind: 'marker'; index: number } | { kind: 'hyp'; index: number };

const HEIGHT = 96;
/** The viewer width (px) under which the strip starts folded: styles.ts stacks the panes there. */
const NARROW = 760;
const PAD = { left: 46, right: 10, top: 14, bottom: 12 };
const MARKER_NAMES: Record<TimelineMarker['kind'], string> = {
  compaction: 'compaction',
  branch_summary: 'branch summary',
  overflow: 'context overflow'
};

/** An earlier answer continued by an `append` answer (the kernel checked it continues it). */
function merged(held: TimelineData, more: TimelineData): TimelineData {
  const c = held.calls;
  const keep = more.calls_from ?? c.id.length;
  const calls = {
    id: c.id.slice(0, keep).concat(more.calls.id),
    measured: c.measured.slice(0, keep).concat(more.calls.measured),
    estimated: c.estimated.slice(0, keep).concat(more.calls.estimated),
    window: c.window.slice(0, keep).concat(more.calls.window),
    model: c.model.slice(0, keep).concat(more.calls.model),
    compaction: c.compaction.slice(0, keep).concat(more.calls.compaction)
  };
  const markers = held.markers.slice(0, more.markers_from ?? held.markers.length).concat(more.markers);
  return { ...more, append: false, calls, markers };
}

export class TimelineStrip {
  readonly el: HTMLDivElement;
  private readonly toggle: HTMLButtonElement;
  private readonly summary: HTMLSpanElement;
  private readonly above: HTMLSpanElement;
  private readonly body: HTMLDivElement;
  private readonly plot: HTMLDivElement;
  private readonly base: HTMLCanvasElement;
  private readonly overlay: HTMLCanvasElement;
  private readonly tip: HTMLDivElement;
  private readonly caption: HTMLDivElement;
  private readonly message: HTMLParagraphElement;
  private data: TimelineData | null = null;
  private index = new Map<string, number>();
  private columns: Columns | null = null;
  private focus: Focus | null = null;
  private hover = -1;
  /** The call of the entry selected in the tree (-1: none, or not on this branch). */
  private selectedCall = -1;
  private selectedId: string | null = null;
  private token = 0;
  private atToken = 0;
  private collapsed = false;
  /** Folded by the layout (a narrow viewer), not by the user: the user's toggle overrides it. */
  private folded = false;
  /** The user pressed the toggle: the width no longer folds or unfolds the strip. */
  private chosen = false;
  private readonly width: ResizeObserver | null;
  private stale = true;
  private leaf: string | null = null;
  private refreshTimer = 0;
  private atTimer = 0;
  private frame = 0;
  private readonly resize: ResizeObserver | null;
  /** The what-if panel (whatif.ts) and the hypothetical sawtooth it hands the strip to draw. */
  private readonly whatIf: WhatIfPanel;
  private hyp: Hypothesis | null = null;
  private readonly legend: HTMLSpanElement;
  /** The note marks under the plot (notes.ts): one button per noted entry on this branch. */
  private readonly noteLane: HTMLDivElement;
  private noteMarks: TimelineNoteMark[] = [];
  /** The call each noted entry stands at on the branch drawn (-1: not on it), asked once per branch. */
  private noteCalls = new Map<string, number>();
  private noteCallsLeaf: string | null = null;

  constructor(parent: HTMLElement, before: HTMLElement | null, private readonly transport: Transport,
    private readonly handlers: TimelineHandlers) {
    this.el = el('div', 'pi-timeline');
    parent.insertBefore(this.el, before);
    const head = el('div', 'pi-timeline-head', this.el);
    this.toggle = button('▾ Context timeline', 'pi-timeline-toggle pi-small', head, () => {
      this.chosen = true;
      this.setCollapsed(!this.collapsed);
    });
    this.toggle.setAttribute('aria-expanded', 'true');
    this.summary = el('span', 'pi-timeline-summary pi-muted', head);
    this.above = el('span', 'pi-timeline-above', head);
    const legend = this.legend = el('span', 'pi-timeline-legend', head);
    el('span', 'pi-tl-key pi-tl-key-measured', legend, 'measured');
    el('span', 'pi-tl-key pi-tl-key-estimated', legend, 'estimated');
    el('span', 'pi-tl-key pi-tl-key-threshold', legend, 'auto-compaction');
    el('span', 'pi-tl-key pi-tl-key-keep', legend, 'keep recent');
    el('span', 'pi-tl-key pi-tl-key-compaction', legend, 'compaction');
    el('span', 'pi-tl-key pi-tl-key-branch', legend, 'branch summary');
    el('span', 'pi-tl-key pi-tl-key-overflow', legend, 'overflow');
    // The what-if keys, shown while a replay is drawn.
    el('span', 'pi-tl-key pi-tl-key-whatif', legend, 'what if');
    el('span', 'pi-tl-key pi-tl-key-whatif-compaction', legend, 'what-if compaction');
    this.body = el('div', 'pi-timeline-body', this.el);
    this.toggle.setAttribute('aria-controls', this.body.id = `pi-timeline-${Math.random().toString(36).slice(2, 10)}`);
    // A slider is what the strip is to the keyboard: one value (the call) moved by the arrows.
    this.plot = el('div', 'pi-timeline-plot', this.body);
    this.plot.tabIndex = 0;
    this.plot.setAttribute('role', 'slider');
    this.plot.setAttribute('aria-label', 'context size per model call along the current branch');
    this.plot.setAttribute('data-lm-suppress-shortcuts', 'true');
    this.base = el('canvas', 'pi-timeline-canvas', this.plot);
    this.overlay = el('canvas', 'pi-timeline-canvas pi-timeline-overlay', this.plot);
    this.base.setAttribute('aria-hidden', 'true');
    this.overlay.setAttribute('aria-hidden', 'true');
    this.tip = el('div', 'pi-timeline-tip', this.plot);
    this.tip.hidden = true;
    this.noteLane = withAttributes(el('div', 'pi-tl-notes', this.body), { role: 'group', 'aria-label': 'notes on this branch' });
    this.noteLane.hidden = true;
    this.message = el('p', 'pi-timeline-message pi-muted', this.body);
    this.message.hidden = true;
    this.caption = withAttributes(el('div', 'pi-timeline-caption', this.body), { role: 'status', 'aria-live': 'polite' });
    this.whatIf = new WhatIfPanel(head, this.body, transport, {
      leaf: () => this.data?.leaf_id ?? this.leaf,
      settings: () => this.settings(),
      callIndex: id => this.index.get(id),
      callCount: () => this.data?.call_count ?? 0,
      selectedCallId: () => (this.data && this.selectedCall >= 0 ? this.data.calls.id[this.selectedCall] : null),
      show: h => this.showHypothesis(h),
      select: id => handlers.select(id),
      unfold: () => {
        if (this.collapsed) {
          this.chosen = true; // as if the user had unfolded it: the width no longer folds it
          this.setCollapsed(false);
        }
      }
    });
    // the toggle sits after the summary, before the legend
    head.insertBefore(this.whatIf.toggle, legend);

    this.plot.addEventListener('pointermove', event => this.onPointer(event));
    this.plot.addEventListener('pointerleave', () => {
      this.hover = -1;
      this.tip.hidden = true;
      this.schedule();
    });
    this.plot.addEventListener('click', event => this.onClick(event));
    this.plot.addEventListener('keydown', event => this.onKey(event));
    this.plot.addEventListener('focus', () => {
      if (!this.focus && this.data && this.data.call_count) {
        this.focus = { kind: 'call', index: this.selectedCall >= 0 ? this.selectedCall : this.data.call_count - 1 };
      }
      this.describe();
      this.schedule();
    });
    this.plot.addEventListener('blur', () => this.schedule());
    this.resize = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => {
      this.columns = null;
      this.drawBase();
      this.schedule();
    });
    this.resize?.observe(this.plot);
    // A narrow viewer (two widgets side by side, a side panel) starts with the strip folded to
    // its one-line head, so the tree keeps the height; the toggle unfolds it (issue 22).
    this.width = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => this.fitWidth(parent));
    this.width?.observe(parent);
  }

  /** Fold the strip when the viewer is narrower than NARROW, unfold it when it is wider again,
   * until the user chooses with the toggle. */
  private fitWidth(viewer: HTMLElement): void {
    const width = viewer.getBoundingClientRect().width;
    if (this.chosen || !width) {
      return;
    }
    const narrow = width < NARROW;
    this.el.classList.toggle('pi-timeline-compact', narrow);
    if (narrow !== this.collapsed) {
      this.folded = narrow;
      this.setCollapsed(narrow);
    }
  }

  dispose(): void {
    this.whatIf.dispose();
    this.width?.disconnect();
    this.resize?.disconnect();
    window.clearTimeout(this.refreshTimer);
    window.clearTimeout(this.atTimer);
    window.cancelAnimationFrame(this.frame);
  }

  /**
   * Show the branch to `leafId` (null: the current leaf). `appended`: entries were added (one
   * request per burst, 400 ms after the last); otherwise a changed leaf is fetched at once.
   */
  follow(leafId: string | null, appended = false): void {
    if (!appended && leafId !== null && this.data !== null && this.data.leaf_id === leafId) {
      this.leaf = leafId; // the traitlet catching up with what the strip already shows
      return;
    }
    this.leaf = leafId;
    this.stale = true;
    if (this.collapsed && !this.folded) {
      return; // fetched when expanded (a strip the layout folded still says what it holds)
    }
    window.clearTimeout(this.refreshTimer);
    if (appended) {
      this.refreshTimer = window.setTimeout(() => this.fetch(), 400);
    } else {
      this.fetch();
    }
  }

  /** Highlight the point of the entry selected in the tree (nearest call at or before it). */
  select(entryId: string | null): void {
    this.selectedId = entryId;
    const token = ++this.atToken;
    if (!entryId || !this.data) {
      this.setSelectedCall(-1);
      return;
    }
    const direct = this.index.get(entryId);
    if (direct !== undefined) {
      this.setSelectedCall(direct);
      return;
    }
    // Not a call: the kernel knows which call stands for it. Asked once the selection rests (an
    // arrow key held down in the tree moves it row by row).
    window.clearTimeout(this.atTimer);
    const leaf = this.data.leaf_id;
    this.atTimer = window.setTimeout(() => {
      this.transport.request<{ on_branch: boolean; call_id: string | null }>('timeline_at', { id: entryId, leaf_id: leaf })
        .then(reply => {
          if (token === this.atToken) {
            const call = reply.result.call_id;
            this.setSelectedCall(call ? this.index.get(call) ?? -1 : -1, reply.result.on_branch ? null : 'not on this branch');
          }
        }, () => {
          if (token === this.atToken) {
            this.setSelectedCall(-1);
          }
        });
    }, 60);
  }

  /** The noted entries to mark under the plot (a click selects the entry). */
  setNoteMarks(marks: TimelineNoteMark[]): void {
    this.noteMarks = marks;
    this.placeNotes();
  }

  /** Put a mark under the call of each noted entry on this branch (asking the host once for an entry that is not a call). */
  private placeNotes(): void {
    const d = this.data;
    const lane = this.noteLane;
    while (lane.firstChild) {
      lane.removeChild(lane.firstChild);
    }
    if (!d || !d.call_count || this.collapsed || !this.noteMarks.length) {
      lane.hidden = true;
      return;
    }
    if (this.noteCallsLeaf !== d.leaf_id) {
      this.noteCalls = new Map();
      this.noteCallsLeaf = d.leaf_id;
    }
    let placed = 0;
    const unknown: string[] = [];
    // Several noted entries at one call (a user message and the reply it led to) stand side by side.
    const atCall = new Map<number, number>();
    for (const mark of this.noteMarks) {
      const call = this.index.get(mark.entry_id) ?? this.noteCalls.get(mark.entry_id);
      if (call === undefined) {
        unknown.push(mark.entry_id);
        continue;
      }
      if (call < 0) {
        continue;
      }
      const b = button(mark.finding ? '◆' : '✎', `pi-tl-note${mark.finding ? ' pi-tl-note-finding' : ''}`, lane,
        () => this.handlers.select(mark.entry_id));
      const beside = atCall.get(call) ?? 0;
      atCall.set(call, beside + 1);
      b.style.left = `${Math.round(this.xOf(call)) - 7 + beside * 12}px`;
      b.dataset.entry = mark.entry_id;
      b.setAttribute('aria-label', `${mark.words} on entry ${shortId(mark.entry_id)} (call ${call + 1}): select it`);
      b.title = `${mark.words} on entry ${mark.entry_id}`;
      placed += 1;
    }
    lane.hidden = placed === 0;
    // At most a few hundred entries are asked about: a mark is a pointer, not a census.
    const leaf = d.leaf_id;
    const ask = unknown.slice(0, 300);
    if (!ask.length) {
      return;
    }
    for (const id of ask) {
      this.noteCalls.set(id, -1); // asked once, whatever the answer
    }
    void Promise.all(ask.map(id => this.transport.request<{ on_branch: boolean; call_id: string | null; exact?: boolean }>('timeline_at', { id, leaf_id: leaf })
      .then(reply => {
        const call = reply.result.on_branch && reply.result.call_id ? this.index.get(reply.result.call_id) : undefined;
        this.noteCalls.set(id, call ?? -1);
      }, () => undefined)))
      .then(() => {
        if (this.data && this.data.leaf_id === leaf) {
          this.placeNotes();
        }
      });
  }

  /** Redraw (the gauge's settings changed). */
  redraw(): void {
    this.columns = null;
    this.drawBase();
    this.schedule();
  }

  /** Draw the what-if panel's hypothetical sawtooth over the real one (null: remove it). */
  private showHypothesis(h: Hypothesis | null): void {
    this.hyp = h;
    if (this.focus?.kind === 'hyp' && this.focus.index >= (h?.markers.length ?? 0)) {
      this.focus = null;
    }
    this.legend.classList.toggle('pi-timeline-whatif-on', h !== null);
    this.el.dataset.whatif = h ? String(h.markers.length) : '';
    this.redraw();
  }

  private setSelectedCall(call: number, note: string | null = null): void {
    this.selectedCall = call;
    this.el.dataset.selectedCall = String(call);
    this.whatIf.selectedCall(call >= 0 && this.data ? this.data.calls.id[call] : null);
    if (call >= 0 && document.activeElement !== this.plot) {
      this.focus = { kind: 'call', index: call };
    }
    this.el.classList.toggle('pi-timeline-off-branch', note !== null);
    if (document.activeElement !== this.plot) {
      this.describe(note);
    }
    this.schedule();
  }

  private setCollapsed(collapsed: boolean): void {
    if (this.chosen) {
      this.folded = false;
    }
    this.collapsed = collapsed;
    this.body.hidden = collapsed;
    this.el.classList.toggle('pi-timeline-collapsed', collapsed);
    this.toggle.textContent = `${collapsed ? '▸' : '▾'} Context timeline`;
    this.toggle.setAttribute('aria-expanded', collapsed ? 'false' : 'true');
    if (!collapsed && this.stale) {
      this.fetch();
    } else if (!collapsed) {
      this.redraw();
    }
  }

  private fetch(): void {
    const token = ++this.token;
    this.stale = false;
    const started = performance.now();
    const held = this.data;
    // What the strip holds already: the kernel then sends only the calls added since, when the
    // branch only grew (a live run), not the whole branch again.
    const since = held && held.serial ? { serial: held.serial, calls: held.call_count, markers: held.markers.length } : undefined;
    this.transport.request<TimelineData>('timeline', { leaf_id: this.leaf, ...(since ? { since } : {}) }).then(reply => {
      if (token === this.token) {
        const result = reply.result;
        this.el.dataset.reply = result.append ? `append ${result.calls.id.length}` : 'full';
        this.setData(result.append && held ? merged(held, result) : result);
        this.el.dataset.fetchMs = String(Math.round(performance.now() - started));
      }
    }, error => {
      if (token !== this.token) {
        return;
      }
      const text = error instanceof Error ? error.message : String(error);
      if (/unknown request/.test(text)) {
        this.el.hidden = true; // a host without the timeline (an older kernel, a static export)
        return;
      }
      this.data = null;
      this.showMessage(`The timeline could not be read: ${text}`);
    });
  }

  private setData(data: TimelineData): void {
    const previous = this.focus && this.focus.kind === 'call' && this.data ? this.data.calls.id[this.focus.index] : null;
    this.data = data;
    this.columns = null;
    this.index = new Map();
    data.calls.id.forEach((id, i) => {
      if (id !== null) {
        this.index.set(id, i);
      }
    });
    const n = data.call_count;
    const compactions = data.markers.filter(m => m.kind === 'compaction').length;
    const summaries = data.markers.filter(m => m.kind === 'branch_summary').length;
    const overflows = data.markers.filter(m => m.kind === 'overflow').length;
    const parts = [`${n} model call${n === 1 ? '' : 's'} on this branch`];
    if (n) {
      parts.push(data.measured_count ? `${data.measured_count} measured` : 'no usage recorded: estimates only');
    }
    parts.push(`${compactions} compaction${compactions === 1 ? '' : 's'}`);
    if (summaries) {
      parts.push(`${summaries} branch summar${summaries === 1 ? 'y' : 'ies'}`);
    }
    if (overflows) {
      parts.push(`${overflows} overflow${overflows === 1 ? '' : 's'}`);
    }
    this.summary.textContent = parts.join(' · ');
    this.el.dataset.calls = String(n);
    this.el.dataset.leaf = data.leaf_id ?? '';
    if (!n) {
      this.focus = null;
      this.showMessage(data.leaf_id === null
        ? 'An empty session: no model calls to plot yet.'
        : 'No model calls on this branch yet: the timeline starts with the first assistant reply.');
      return;
    }
    this.message.hidden = true;
    this.plot.hidden = false;
    this.caption.hidden = false;
    this.plot.setAttribute('aria-valuemin', '1');
    this.plot.setAttribute('aria-valuemax', String(n));
    if (this.focus?.kind === 'call') {
      const kept = previous !== null ? this.index.get(previous) : undefined;
      this.focus = { kind: 'call', index: kept ?? Math.min(this.focus.index, n - 1) };
    } else if ((this.focus?.kind === 'marker' && this.focus.index >= data.markers.length) ||
      (this.focus?.kind === 'hyp' && this.focus.index >= (this.hyp?.markers.length ?? 0))) {
      this.focus = null;
    }
    this.drawBase();
    this.el.dataset.drawn = String(performance.now());
    this.select(this.selectedId);
    this.whatIf.dataChanged();
  }

  private showMessage(text: string): void {
    this.plot.hidden = true;
    this.noteLane.hidden = true;
    this.caption.hidden = true;
    this.message.hidden = false;
    this.message.textContent = text;
    this.el.dataset.drawn = String(performance.now());
  }

  // ------------------------------------------------------------------ geometry

  private get cssWidth(): number {
    return Math.max(60, this.plot.clientWidth || 600);
  }

  private plotWidth(): number {
    return Math.max(10, this.cssWidth - PAD.left - PAD.right);
  }

  /** The x of call i (its centre), in CSS pixels. */
  private xOf(i: number): number {
    const n = this.data?.call_count ?? 1;
    return PAD.left + ((i + 0.5) / n) * this.plotWidth();
  }

  /** The x of the boundary before call i (where a marker sits). */
  private xBefore(i: number): number {
    const n = this.data?.call_count ?? 1;
    return PAD.left + (i / n) * this.plotWidth();
  }

  private callAt(x: number): number {
    const n = this.data?.call_count ?? 0;
    if (!n) {
      return -1;
    }
    const i = Math.floor(((x - PAD.left) / this.plotWidth()) * n);
    return Math.max(0, Math.min(n - 1, i));
  }

  private settings(): TimelineSettings {
    const s = this.handlers.settings();
    const d = this.data;
    return {
      context_window: s?.context_window ?? d?.context_window ?? 0,
      reserve_tokens: s?.reserve_tokens ?? d?.reserve_tokens ?? 0,
      keep_recent_tokens: s?.keep_recent_tokens ?? d?.keep_recent_tokens ?? 0
    };
  }

  private threshold(): number {
    const s = this.settings();
    return s.context_window - s.reserve_tokens;
  }

  private computeColumns(): Columns {
    return columnsOf(this.data as TimelineData, Math.max(1, Math.floor(this.plotWidth())), this.hyp, this.threshold());
  }

  private yOf(tokens: number): number {
    const cols = this.columns as Columns;
    const h = HEIGHT - PAD.top - PAD.bottom;
    return PAD.top + h - (Math.max(0, tokens) / cols.yMax) * h;
  }

  private prepare(canvas: HTMLCanvasElement): CanvasRenderingContext2D | null {
    const ratio = window.devicePixelRatio || 1;
    const w = this.cssWidth;
    if (canvas.width !== Math.round(w * ratio) || canvas.height !== Math.round(HEIGHT * ratio)) {
      canvas.width = Math.round(w * ratio);
      canvas.height = Math.round(HEIGHT * ratio);
    }
    canvas.style.width = `${w}px`;
    canvas.style.height = `${HEIGHT}px`;
    const ctx = canvas.getContext('2d');
    if (!ctx) {
      return null;
    }
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, HEIGHT);
    return ctx;
  }

  private colour(name: string, fallback: string): string {
    const value = getComputedStyle(this.el).getPropertyValue(name).trim();
    return value || fallback;
  }

  // ------------------------------------------------------------------ drawing

  private drawBase(): void {
    const d = this.data;
    if (!d || !d.call_count || this.collapsed || this.plot.hidden) {
      return;
    }
    const started = performance.now();
    this.columns ??= this.computeColumns();
    const cols = this.columns;
    const ctx = this.prepare(this.base);
    if (!ctx) {
      return;
    }
    const measuredColour = this.colour('--pi-measured', '#2f6fb3');
    const estimatedColour = this.colour('--pi-tl-estimated', '#5b84b1');
    const muted = this.colour('--pi-muted', '#6e7781');
    const border = this.colour('--pi-border', '#d8dee4');
    const bad = this.colour('--pi-bad', '#cf222e');
    const good = this.colour('--pi-good', '#1a7f37');
    const w = this.cssWidth;
    const bottom = HEIGHT - PAD.bottom;
    ctx.font = '10px sans-serif';
    ctx.textBaseline = 'middle';

    // axis: 0 and the top value
    ctx.strokeStyle = border;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(PAD.left, bottom + 0.5);
    ctx.lineTo(w - PAD.right, bottom + 0.5);
    ctx.stroke();
    // y labels: the settings lines' values first, the top value and 0 only where they fit
    const taken: number[] = [];
    const yLabel = (text: string, y: number, colour: string): void => {
      if (taken.some(t => Math.abs(t - y) < 10)) {
        return;
      }
      taken.push(y);
      ctx.fillStyle = colour;
      ctx.textAlign = 'right';
      ctx.fillText(text, PAD.left - 4, y);
    };

    // settings lines
    const s = this.settings();
    const threshold = this.threshold();
    const hline = (tokens: number, colour: string, dash: number[]): void => {
      const y = Math.round(this.yOf(tokens)) + 0.5;
      ctx.strokeStyle = colour;
      ctx.setLineDash(dash);
      ctx.beginPath();
      ctx.moveTo(PAD.left, y);
      ctx.lineTo(w - PAD.right, y);
      ctx.stroke();
      ctx.setLineDash([]);
      yLabel(formatTokens(tokens), y, colour);
    };
    if (threshold > 0 && threshold <= cols.yMax) {
      hline(threshold, bad, []);
    }
    // A threshold far above the data (a 1M window) is named beside the summary, not drawn.
    this.above.textContent = threshold > cols.yMax ? `auto-compaction at ${formatTokens(threshold)}, above the plot` : '';
    if (s.keep_recent_tokens > 0 && s.keep_recent_tokens <= cols.yMax) {
      hline(s.keep_recent_tokens, good, [2, 3]);
    }
    yLabel(formatTokens(cols.yMax / 1.06), this.yOf(cols.yMax / 1.06), muted);
    yLabel('0', bottom, muted);

    // estimated (dashed) then measured (solid) over it: per pixel column, its max and its min
    const series = (lo: Float64Array, hi: Float64Array, colour: string, dash: number[], width: number): void => {
      ctx.strokeStyle = colour;
      ctx.lineWidth = width;
      ctx.setLineDash(dash);
      ctx.beginPath();
      let open = false;
      const step = this.plotWidth() / cols.width;
      const sparse = d.call_count < cols.width;
      for (let c = 0; c < cols.width; c++) {
        if (Number.isNaN(hi[c])) {
          if (!sparse) {
            open = false; // a column without a value (no usage there): a gap
          }
          continue;
        }
        const x = PAD.left + (c + 0.5) * step;
        const top = this.yOf(hi[c]);
        const low = this.yOf(lo[c]);
        if (!open) {
          ctx.moveTo(x, top);
          open = true;
        } else {
          ctx.lineTo(x, top);
        }
        if (low !== top) {
          ctx.lineTo(x, low);
        }
      }
      ctx.stroke();
      ctx.setLineDash([]);
    };
    series(cols.eMin, cols.eMax, estimatedColour, [4, 3], 1.2);
    series(cols.mMin, cols.mMax, measuredColour, [], 1.6);
    if (d.call_count <= cols.width / 4) {
      // few calls: each one a point (filled: measured; hollow: estimated only)
      for (let i = 0; i < d.call_count; i++) {
        const m = d.calls.measured[i];
        const x = this.xOf(i);
        ctx.beginPath();
        if (m !== null) {
          ctx.fillStyle = measuredColour;
          ctx.arc(x, this.yOf(m), 2.5, 0, Math.PI * 2);
          ctx.fill();
        } else {
          ctx.strokeStyle = estimatedColour;
          ctx.lineWidth = 1.2;
          ctx.arc(x, this.yOf(d.calls.estimated[i]), 2.5, 0, Math.PI * 2);
          ctx.stroke();
        }
      }
    }

    // markers: compactions (a line, before → after on top), branch summaries (a triangle at
    // the bottom), overflows (a cross at the top). Labels that would overlap are left out.
    const teal = this.colour('--pi-tl-compaction', '#1a9c9c');
    const amber = this.colour('--pi-tl-branch', '#b7791f');
    let lastLabel = -Infinity;
    for (const m of d.markers) {
      if (m.kind === 'compaction') {
        const x = Math.round(this.xBefore(m.call)) + 0.5;
        ctx.strokeStyle = teal;
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.moveTo(x, PAD.top);
        ctx.lineTo(x, bottom);
        ctx.stroke();
        const label = `${formatTokens(m.tokens_before)}→${formatTokens(m.estimated)}`;
        const width = ctx.measureText(label).width;
        // right of the line, or left of it at the right edge
        const start = x + 2 + width < w ? x + 2 : x - 2 - width;
        if (start > lastLabel + 6 && start >= PAD.left) {
          ctx.fillStyle = teal;
          ctx.textAlign = 'left';
          ctx.fillText(label, start, PAD.top - 7);
          lastLabel = start + width;
        }
      } else if (m.kind === 'branch_summary') {
        const x = this.xBefore(m.call);
        ctx.fillStyle = amber;
        ctx.beginPath();
        ctx.moveTo(x, bottom - 7);
        ctx.lineTo(x - 4, bottom);
        ctx.lineTo(x + 4, bottom);
        ctx.closePath();
        ctx.fill();
      } else {
        const x = this.xOf(Math.max(0, m.call));
        const y = PAD.top + 3;
        ctx.strokeStyle = bad;
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(x - 3, y - 3);
        ctx.lineTo(x + 3, y + 3);
        ctx.moveTo(x + 3, y - 3);
        ctx.lineTo(x - 3, y + 3);
        ctx.stroke();
      }
    }
    if (this.hyp) {
      this.drawHypothesis(ctx, this.hyp);
    }
    this.el.dataset.drawMs = (performance.now() - started).toFixed(2);
    this.drawOverlay();
    this.placeNotes();
  }

  /** The what-if replay: its threshold (dashed), its sawtooth (one line, a point per call when
   * few) and its compactions (a dashed line and a diamond on the bottom band: the real ones are
   * solid teal lines labelled on top). Drawn per call: the replay is bounded to 1,000 calls. */
  private drawHypothesis(ctx: CanvasRenderingContext2D, h: Hypothesis): void {
    const colour = this.colour('--pi-tl-whatif', '#8250df');
    const w = this.cssWidth;
    const bottom = HEIGHT - PAD.bottom;
    const cols = this.columns as Columns;
    if (h.threshold > 0 && h.threshold <= cols.yMax) {
      const y = Math.round(this.yOf(h.threshold)) + 0.5;
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1;
      ctx.setLineDash([6, 3]);
      ctx.beginPath();
      ctx.moveTo(PAD.left, y);
      ctx.lineTo(w - PAD.right, y);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.strokeStyle = colour;
    ctx.lineWidth = 1.8;
    ctx.beginPath();
    let open = false;
    for (let i = 0; i < h.tokens.length; i++) {
      const t = h.tokens[i];
      if (Number.isNaN(t)) {
        open = false;
        continue;
      }
      const x = this.xOf(i);
      if (open) {
        ctx.lineTo(x, this.yOf(t));
      } else {
        ctx.moveTo(x, this.yOf(t));
        open = true;
      }
    }
    ctx.stroke();
    const few = h.tokens.length <= cols.width / 4;
    for (let i = 0; few && i < h.tokens.length; i++) {
      if (!Number.isNaN(h.tokens[i])) {
        ctx.fillStyle = colour;
        ctx.fillRect(this.xOf(i) - 2, this.yOf(h.tokens[i]) - 2, 4, 4);
      }
    }
    for (const m of h.markers) {
      const x = Math.round(this.xBefore(m.call)) + 0.5;
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1;
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(x, PAD.top);
      ctx.lineTo(x, bottom);
      ctx.stroke();
      ctx.setLineDash([]);
      // a diamond: filled when new, hollow when it is the session's own compaction again
      const y = bottom - 5;
      ctx.beginPath();
      ctx.moveTo(x, y - 5);
      ctx.lineTo(x + 4, y);
      ctx.lineTo(x, y + 5);
      ctx.lineTo(x - 4, y);
      ctx.closePath();
      if (m.realEntryId) {
        ctx.fillStyle = this.colour('--pi-bg', '#ffffff');
        ctx.fill();
        ctx.lineWidth = 1.5;
        ctx.stroke();
      } else {
        ctx.fillStyle = colour;
        ctx.fill();
      }
    }
  }

  /** The hypothetical compaction whose diamond is under the pointer (-1: none). */
  private hypotheticalAt(x: number, y: number): number {
    const h = this.hyp;
    if (!h || y < HEIGHT - PAD.bottom - 14) {
      return -1;
    }
    let best = -1;
    let bestDistance = 6;
    h.markers.forEach((m, k) => {
      const distance = Math.abs(x - this.xBefore(m.call));
      if (distance < bestDistance) {
        best = k;
        bestDistance = distance;
      }
    });
    return best;
  }

  private describeHypothetical(k: number): string {
    const m = (this.hyp as Hypothesis).markers[k];
    const words = [`what-if compaction ${k + 1}`, `${formatTokens(m.tokensBefore)} tokens before`];
    words.push(m.realEntryId ? `the same as the real compaction ${shortId(m.realEntryId)}` : 'not in the session');
    words.push('click to see what it would summarize and keep');
    return words.join(' · ');
  }

  private schedule(): void {
    if (!this.frame) {
      this.frame = window.requestAnimationFrame(() => {
        this.frame = 0;
        this.drawOverlay();
      });
    }
  }

  private valueOf(i: number): number {
    const d = this.data as TimelineData;
    return d.calls.measured[i] ?? d.calls.estimated[i];
  }

  private drawOverlay(): void {
    const d = this.data;
    if (!d || !d.call_count || !this.columns || this.collapsed || this.plot.hidden) {
      return;
    }
    const ctx = this.prepare(this.overlay);
    if (!ctx) {
      return;
    }
    const accent = this.colour('--pi-accent', '#1f6feb');
    const muted = this.colour('--pi-muted', '#6e7781');
    const cursor = (i: number, colour: string, radius: number, dashed: boolean): void => {
      const x = this.xOf(i);
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1;
      ctx.setLineDash(dashed ? [2, 2] : []);
      ctx.beginPath();
      ctx.moveTo(x, PAD.top);
      ctx.lineTo(x, HEIGHT - PAD.bottom);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.beginPath();
      ctx.arc(x, this.yOf(this.valueOf(i)), radius, 0, Math.PI * 2);
      ctx.fillStyle = colour;
      ctx.fill();
    };
    if (this.hover >= 0) {
      cursor(this.hover, muted, 2.5, true);
    }
    if (this.selectedCall >= 0) {
      cursor(this.selectedCall, accent, 4, false);
    }
    const focused = document.activeElement === this.plot;
    if (focused && this.focus) {
      const x = this.focus.kind === 'call' ? this.xOf(this.focus.index) : this.xBefore(this.rawCall(this.focus));
      ctx.strokeStyle = accent;
      ctx.lineWidth = 2;
      ctx.strokeRect(x - 5, PAD.top - 2, 10, HEIGHT - PAD.top - PAD.bottom + 4);
    }
  }

  // ------------------------------------------------------------------ words

  /** One call in words, from its real row (never from a downsampled column). */
  describeCall(i: number): string {
    const d = this.data as TimelineData;
    const c = d.calls;
    const m = c.measured[i];
    const words = [`call ${i + 1} of ${d.call_count}`];
    words.push(m !== null ? `measured ${formatTokens(m)}` : 'not measured');
    words.push(`estimated ${formatTokens(c.estimated[i])} tokens`);
    const model = d.models[c.model[i]];
    if (model) {
      words.push(rowSafe(model) + (c.window[i] ? ` (window ${formatTokens(c.window[i])})` : ''));
    }
    const compaction = c.compaction[i];
    if (compaction >= 0) {
      const marker = d.markers[compaction];
      words.push(`after compaction ${shortId(marker.entry_id)} (${tokensBeforeText(marker.tokens_before)} → ${formatTokens(marker.estimated)} after)`);
    }
    if (d.markers.some(mk => mk.kind === 'overflow' && mk.call === i)) {
      words.push('overflowed the context');
    }
    if (this.hyp && !Number.isNaN(this.hyp.tokens[i])) {
      words.push(`what if: ${formatTokens(this.hyp.tokens[i])}`);
    }
    words.push(`entry ${shortId(c.id[i])}`);
    return words.join(' · ');
  }

  private describeMarker(k: number): string {
    const m = (this.data as TimelineData).markers[k];
    const words = [`${MARKER_NAMES[m.kind]} ${shortId(m.entry_id)}`];
    if (m.kind === 'compaction') {
      words.push(`${tokensBeforeText(m.tokens_before)} → ${formatTokens(m.estimated)} after (estimated)`);
    } else if (m.kind === 'branch_summary') {
      words.push(m.empty ? 'empty (adds nothing to the context)' : `context ${formatTokens(m.estimated)} after it`);
    } else if (m.error) {
      words.push(rowSafe(m.error));
    }
    return words.join(' · ');
  }

  private describe(note: string | null = null): void {
    const d = this.data;
    if (!d || !d.call_count) {
      return;
    }
    let text: string;
    if (document.activeElement === this.plot && this.focus) {
      const f = this.focus;
      text = f.kind === 'call' ? this.describeCall(f.index) : f.kind === 'marker' ? this.describeMarker(f.index) : this.describeHypothetical(f.index);
      this.plot.setAttribute('aria-valuenow', String((f.kind === 'call' ? f.index : this.rawCall(f)) + 1));
    } else if (this.selectedCall >= 0) {
      text = this.describeCall(this.selectedCall);
      this.plot.setAttribute('aria-valuenow', String(this.selectedCall + 1));
    } else {
      text = note ? `The selected entry is ${note}.` : 'Select an entry, or focus the strip and use ←/→.';
    }
    this.caption.textContent = text;
    this.plot.setAttribute('aria-valuetext', text);
  }

  // ------------------------------------------------------------------ input

  private onPointer(event: PointerEvent): void {
    if (!this.data || !this.data.call_count) {
      return;
    }
    const rect = this.plot.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const marker = this.markerAt(x, y);
    const hypothetical = this.hypotheticalAt(x, y);
    this.hover = this.callAt(x);
    this.tip.hidden = false;
    this.tip.textContent = hypothetical >= 0 ? this.describeHypothetical(hypothetical)
      : marker >= 0 ? this.describeMarker(marker) : this.describeCall(this.hover);
    const left = Math.min(Math.max(0, x + 12), Math.max(0, this.cssWidth - 320));
    this.tip.style.left = `${left}px`;
    this.schedule();
  }

  /** A marker under the pointer: compaction labels on the top band, triangles at the bottom. */
  private markerAt(x: number, y: number): number {
    const d = this.data as TimelineData;
    let best = -1;
    let bestDistance = 5;
    const top = y < PAD.top + 4;
    const low = y > HEIGHT - PAD.bottom - 8;
    d.markers.forEach((m, k) => {
      const wanted = (m.kind === 'compaction' && top) || (m.kind === 'overflow' && top) || (m.kind === 'branch_summary' && low);
      if (!wanted) {
        return;
      }
      const mx = m.kind === 'overflow' ? this.xOf(Math.max(0, m.call)) : this.xBefore(m.call);
      const distance = m.kind === 'compaction' && x >= mx ? Math.max(0, x - mx - 40) : Math.abs(x - mx);
      if (distance < bestDistance) {
        best = k;
        bestDistance = distance;
      }
    });
    return best;
  }

  private onClick(event: MouseEvent): void {
    const d = this.data;
    if (!d || !d.call_count) {
      return;
    }
    const rect = this.plot.getBoundingClientRect();
    const hypothetical = this.hypotheticalAt(event.clientX - rect.left, event.clientY - rect.top);
    if (hypothetical >= 0) {
      this.focus = { kind: 'hyp', index: hypothetical };
      this.whatIf.showCompaction(hypothetical);
      return;
    }
    const marker = this.markerAt(event.clientX - rect.left, event.clientY - rect.top);
    if (marker >= 0) {
      this.focus = { kind: 'marker', index: marker };
      const id = d.markers[marker].entry_id;
      if (id) {
        this.handlers.select(id);
      }
      return;
    }
    const i = this.callAt(event.clientX - rect.left);
    this.focus = { kind: 'call', index: i };
    this.describe();
    const id = d.calls.id[i];
    if (id) {
      this.handlers.select(id);
    }
  }

  /** The call index a focus stands at (a marker's: the first call after it, as drawn). */
  private rawCall(f: Focus): number {
    if (f.kind === 'call') {
      return f.index;
    }
    return f.kind === 'marker' ? (this.data as TimelineData).markers[f.index].call : (this.hyp as Hypothesis).markers[f.index].call;
  }

  /** The markers the keyboard stops at, in call order (the session's before the what-if ones). */
  private stops(): Focus[] {
    const d = this.data as TimelineData;
    const all: Focus[] = d.markers.map((_m, index) => ({ kind: 'marker', index }) as Focus);
    for (let index = 0; index < (this.hyp?.markers.length ?? 0); index++) {
      all.push({ kind: 'hyp', index });
    }
    // a stable sort: at one call the session's marker comes first
    return all.map((f, order) => ({ f, order })).sort((a, b) => this.rawCall(a.f) - this.rawCall(b.f) || a.order - b.order)
      .map(x => x.f);
  }

  private onKey(event: KeyboardEvent): void {
    const d = this.data;
    if (!d || !d.call_count) {
      return;
    }
    const n = d.call_count;
    const at = this.focus ?? { kind: 'call', index: this.selectedCall >= 0 ? this.selectedCall : n - 1 };
    // the call a marker stands before (its own call for an overflow)
    const callOf = (f: Focus): number => (f.kind === 'call' ? f.index : Math.min(n - 1, Math.max(0, this.rawCall(f))));
    const page = Math.max(1, Math.round(n / 10));
    let next: Focus | null = null;
    switch (event.key) {
      case 'ArrowLeft':
        // from a marker: the call before it
        next = { kind: 'call', index: Math.max(0, callOf(at) - (at.kind === 'call' && event.shiftKey ? page : 1)) };
        break;
      case 'ArrowRight':
        // from a marker: the call after it (an overflow's own call)
        next = { kind: 'call', index: Math.min(n - 1, at.kind !== 'call' ? callOf(at) : callOf(at) + (event.shiftKey ? page : 1)) };
        break;
      case 'Home':
        next = { kind: 'call', index: 0 };
        break;
      case 'End':
        next = { kind: 'call', index: n - 1 };
        break;
      case 'PageUp':
      case 'PageDown': {
        // to the previous / next marker (compaction, branch summary, overflow, what-if compaction)
        const forward = event.key === 'PageDown';
        const stops = this.stops();
        const position = at.kind === 'call' ? -1 : stops.findIndex(f => f.kind === at.kind && f.index === at.index);
        const here = callOf(at);
        let found = -1;
        if (position >= 0) {
          found = forward ? position + 1 : position - 1;
        } else if (forward) {
          found = stops.findIndex(f => this.rawCall(f) > here);
        } else {
          for (let k = stops.length - 1; k >= 0; k--) {
            if (this.rawCall(stops[k]) <= here) {
              found = k;
              break;
            }
          }
        }
        next = found >= 0 && found < stops.length ? stops[found] : at;
        break;
      }
      case 'Enter':
      case ' ': {
        if (at.kind === 'hyp') {
          this.whatIf.showCompaction(at.index); // what it would summarize and keep
          event.preventDefault();
          event.stopPropagation();
          return;
        }
        const id = at.kind === 'call' ? d.calls.id[at.index] : d.markers[at.index].entry_id;
        if (id) {
          this.handlers.select(id);
        }
        event.preventDefault();
        event.stopPropagation();
        return;
      }
      default:
        return;
    }
    event.preventDefault();
    event.stopPropagation();
    this.focus = next;
    this.hover = -1;
    this.tip.hidden = true;
    this.describe();
    this.schedule();
  }
}
