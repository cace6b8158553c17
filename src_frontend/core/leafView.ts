// The leaf this view shows and the gauge at it. Usually the file's leaf, with the gauge and
// compactions of the view state, which deltas bring ahead of the state; in a viewer that
// cannot write, a leaf moved in this view only (transport.leafInView: its host answers the
// reads at any leaf), said by a bar above the tree with the way back and the way to a real move.

import type { ActionTarget } from './actions';
import type { EntryDetail } from './detail';
import { button, clear, shortId, el } from './dom';
import type { GaugeView } from './gauge';
import type { RowList } from './rowList';
import type { SidePane } from './sidePane';
import type { TimelineStrip } from './timeline';
import type { CompactionInfo, DeltaMessage, Gauge, Transport } from './transport';

export interface LeafViewParts {
  gauge: GaugeView;
  timeline: TimelineStrip;
  list: RowList;
  side: SidePane;
  selectId(id: string): Promise<void>;
  notify(message: string, isError?: boolean): void;
}

export class LeafView {
  /** The gauge at the leaf on screen (deltas carry it ahead of the state, which catches up later). */
  gauge: Gauge;
  private compactions: CompactionInfo[] | null = null;
  private liveLeaf: string | null;
  // A leaf moved in this view only; null: the file's leaf.
  private viewLeaf: string | null = null;
  private gaugeToken = 0;
  private parts: LeafViewParts | null = null;

  constructor(
    private readonly transport: Transport,
    private readonly bar: HTMLElement
  ) {
    this.gauge = transport.get('gauge') as Gauge;
    this.liveLeaf = transport.get('leaf_id');
    bar.setAttribute('role', 'status');
    bar.hidden = true;
  }

  /** The parts that show the leaf, once they are made. */
  attach(parts: LeafViewParts): void {
    this.parts = parts;
  }

  private get p(): LeafViewParts {
    return this.parts!;
  }

  /** The leaf on screen: the one moved in this view, else the file's. */
  get leaf(): string | null {
    return this.viewLeaf ?? this.liveLeaf;
  }

  /** Whether `id` is a leaf moved in this view only. */
  isViewLeaf(id: string | undefined): boolean {
    return this.viewLeaf !== null && id === this.viewLeaf;
  }

  compactionsOf(): CompactionInfo[] {
    if (this.viewLeaf !== null) {
      return this.gauge.compactions ?? [];
    }
    return this.compactions ?? this.transport.get('compactions') ?? this.gauge.compactions ?? [];
  }

  /** Move the leaf in this view only (nothing is written): pi's rule, a user message re-edited. */
  async moveInView(target: ActionTarget): Promise<void> {
    let id: string | null = target.id;
    if (target.kind === 'user' || target.kind === 'custom_message') {
      try {
        id = (await this.transport.request<EntryDetail>('entry', { id: target.id })).result.parent_id ?? null;
      } catch (e) {
        this.p.notify(e instanceof Error ? e.message : String(e), true);
        return;
      }
      if (id === null) {
        this.p.notify('This is the first message: re-editing it leaves an empty context, with no leaf to show.', true);
        return;
      }
    }
    this.setViewLeaf(id === this.liveLeaf ? null : id);
    await this.p.selectId(id);
    if (this.viewLeaf === null) {
      this.p.notify("Back at the file's leaf"); // a move elsewhere is said by the bar above the tree
    }
  }

  private setViewLeaf(id: string | null): void {
    const bar = this.bar;
    this.viewLeaf = id;
    clear(bar);
    bar.hidden = id === null;
    if (id !== null) {
      el('span', '', bar, `Leaf moved to ${shortId(id)} in this view only; the file is untouched (its leaf: ${shortId(this.liveLeaf)}).`);
      button('Show it', 'pi-small', bar, () => void this.p.selectId(id));
      button("Back to the file's leaf", 'pi-small pi-view-leaf-back', bar, () => {
        this.setViewLeaf(null);
        void this.p.selectId(this.liveLeaf ?? '');
      });
      const open = this.transport.openInNotebook?.bind(this.transport);
      if (open) {
        button('Open in notebook', 'pi-small', bar, () => open(), 'Make a notebook where the leaf moves in the file');
      }
    }
    this.p.timeline.follow(this.leaf);
    this.refreshViewGauge();
    this.p.list.render();
    if (this.transport.get('side_pane') === 'context' || this.transport.get('side_pane') === 'compactions') {
      this.p.side.schedule();
    }
  }

  /** The gauge drawn again (and the compactions pane, which reads it). */
  private showGauge(gauge: Gauge): void {
    this.gauge = gauge;
    this.p.gauge.render(gauge);
    this.p.timeline.redraw();
    if (this.transport.get('side_pane') === 'compactions') {
      this.p.side.schedule();
    }
  }

  /** The gauge at the leaf of this view: the file's (from the host's state) or the moved one. */
  private refreshViewGauge(): void {
    const token = ++this.gaugeToken;
    if (this.viewLeaf === null) {
      this.gauge = this.transport.get('gauge') as Gauge;
      this.p.gauge.render(this.gauge);
      this.p.timeline.redraw();
      return;
    }
    this.transport.request<Gauge>('gauge', { leaf_id: this.viewLeaf }).then(reply => {
      if (token === this.gaugeToken && this.viewLeaf !== null) {
        this.showGauge(reply.result);
      }
    }, e => this.p.notify(e instanceof Error ? e.message : String(e), true));
  }

  /** The `gauge` state changed (new settings, or the file grew). */
  gaugeChanged(): void {
    if (this.viewLeaf !== null) {
      this.refreshViewGauge(); // new settings: the gauge again, at the leaf of this view
      return;
    }
    this.showGauge(this.transport.get('gauge') as Gauge);
  }

  compactionsChanged(): void {
    this.compactions = null;
    if (this.transport.get('side_pane') === 'compactions') {
      this.p.side.schedule();
    }
  }

  /** The file's leaf moved (the `leaf_id` state). */
  leafChanged(): void {
    this.liveLeaf = this.transport.get('leaf_id');
    if (this.viewLeaf !== null) {
      this.setViewLeaf(this.viewLeaf === this.liveLeaf ? null : this.viewLeaf); // the bar names the file's new leaf
    }
    this.p.timeline.follow(this.leaf);
    if (this.transport.get('side_pane') === 'context') {
      this.p.side.schedule();
    }
  }

  /** What a delta says of the gauge, the compactions and the file's leaf. */
  applyDelta(delta: DeltaMessage): void {
    const viewLeaf = this.viewLeaf;
    if (delta.gauge && Object.keys(delta.gauge).length && viewLeaf === null) {
      this.gauge = { ...this.gauge, ...delta.gauge } as Gauge;
      this.p.gauge.render(this.gauge);
    }
    // Every append may add a call or a marker to the branch: the strip follows (one request
    // per burst); a leaf move is fetched at once.
    if (viewLeaf === null) {
      this.p.timeline.follow(delta.leaf_id !== undefined ? delta.leaf_id : this.liveLeaf, delta.leaf_id === undefined || delta.leaf_id === this.liveLeaf);
    }
    if (delta.compactions) {
      this.compactions = delta.compactions;
    }
    if (delta.leaf_id !== undefined && delta.leaf_id !== this.liveLeaf) {
      this.liveLeaf = delta.leaf_id;
      if (this.transport.get('side_pane') === 'context') {
        this.p.side.schedule();
      }
    }
  }
}
