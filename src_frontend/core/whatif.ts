// The timeline's "what if" panel: pi's automatic compaction replayed under other settings
// (pi_lab.replay, answered by the kernel's `what_if` requests, pi_lab/view/whatif.py).
//
// Three settings and a Run button (Enter in a field runs too); the strip draws the
// hypothetical sawtooth over the real one (timeline.ts, from the Hypothesis this panel hands
// it); the hypothetical compactions are listed here as buttons as well (the keyboard's way to
// them), and one chosen (a click on its diamond, or Enter on its button) shows what it would
// summarize and keep; for the call selected in the tree, what the model would see under these
// settings beside what it did see. A host with no kernel (a static export page) refuses the
// requests as unknown: the panel says it needs a kernel.

import { button, clear, el, formatTokens, rowSafe, shortId, withAttributes } from './dom';
import { Projection, renderProjection } from './projection';
import type { Transport } from './transport';

/** What the strip draws: the replay's calls mapped onto the strip's own call indexes. */
export interface Hypothesis {
  /** Per strip call: the hypothetical context tokens (NaN: the call is not on the replay). */
  tokens: Float64Array;
  markers: HypotheticalMarker[];
  threshold: number;
  keepRecent: number;
}

export interface HypotheticalMarker {
  /** Index of the first strip call after it (the call count: after the last call). */
  call: number;
  id: string;
  tokensBefore: number;
  /** The session's own compaction it coincides with. */
  realEntryId: string | null;
}

export interface WhatIfSettings {
  context_window: number;
  reserve_tokens: number;
  keep_recent_tokens: number;
}

/** The strip, as the panel sees it. */
export interface WhatIfHost {
  /** The leaf of the branch the strip shows (null: the current leaf). */
  leaf(): string | null;
  /** The settings to prefill (the widget's own). */
  settings(): WhatIfSettings;
  /** The strip's index of a call's entry id, and its call count. */
  callIndex(id: string): number | undefined;
  callCount(): number;
  /** The entry id of the call selected in the strip (null: none). */
  selectedCallId(): string | null;
  /** Draw (or, null, remove) the hypothetical sawtooth. */
  show(h: Hypothesis | null): void;
  /** Select an entry in the tree. */
  select(entryId: string): void;
  /** Unfold the strip (the panel lives in its body). */
  unfold(): void;
}

interface WhatIfAnswer extends WhatIfSettings {
  leaf_id: string | null;
  threshold: number;
  calls: { id: (string | null)[]; tokens: number[]; estimated: boolean[]; compaction: number[] };
  compactions: {
    id: string;
    after_entry_id: string | null;
    call: number;
    first_kept_entry_id: string | null;
    tokens_before: number;
    is_split_turn: boolean;
    real_entry_id: string | null;
    summarized_count: number;
    kept_count: number;
  }[];
  dropped_real_compactions: string[];
}

interface CompactionDetail {
  id: string;
  after_entry_id: string | null;
  first_kept_entry_id: string | null;
  tokens_before: number;
  context_tokens_at_check: number;
  check_point: string;
  is_split_turn: boolean;
  real_entry_id: string | null;
  summary: string;
  summary_truncated: boolean;
  summarized: { id: string; text: string }[];
  summarized_count: number;
  kept: { id: string; text: string }[];
  kept_count: number;
}

const NEEDS_KERNEL = 'The what-if replay runs in the kernel: open the session with pi_lab.open(...) in a notebook ' +
  '(this page has no kernel).';

const FIELDS: [keyof WhatIfSettings, string, string][] = [
  ['context_window', 'context window', 'the model\'s context window, in tokens'],
  ['reserve_tokens', 'reserve tokens', 'pi compacts when the context passes the window minus this'],
  ['keep_recent_tokens', 'keep recent tokens', 'how much of the recent conversation a compaction keeps'],
];

export class WhatIfPanel {
  readonly el: HTMLDivElement;
  readonly toggle: HTMLButtonElement;
  private readonly form: HTMLFormElement;
  private readonly inputs = new Map<keyof WhatIfSettings, HTMLInputElement>();
  private readonly status: HTMLParagraphElement;
  private readonly list: HTMLDivElement;
  private readonly detail: HTMLDivElement;
  private readonly compare: HTMLDivElement;
  private answer: WhatIfAnswer | null = null;
  /** The settings of the answer held (the requests after it name the same replay). */
  private asked: WhatIfSettings | null = null;
  private token = 0;
  private contextToken = 0;
  private contextTimer = 0;
  private prefilled = false;
  private contextFor: string | null = null;

  constructor(head: HTMLElement, body: HTMLElement, private readonly transport: Transport, private readonly host: WhatIfHost) {
    this.toggle = button('What if…', 'pi-small pi-whatif-toggle', head, () => this.setOpen(this.el.hidden),
      'replay pi\'s automatic compaction on this branch under other settings');
    this.toggle.setAttribute('aria-expanded', 'false');
    this.el = el('div', 'pi-whatif', body);
    this.el.hidden = true;
    this.toggle.setAttribute('aria-controls', this.el.id = `pi-whatif-${Math.random().toString(36).slice(2, 10)}`);
    this.form = el('form', 'pi-whatif-form', this.el);
    this.form.setAttribute('aria-label', 'what-if compaction settings');
    el('span', 'pi-whatif-title', this.form, 'What if pi had compacted with');
    for (const [name, label, title] of FIELDS) {
      const field = el('label', 'pi-whatif-field', this.form);
      el('span', '', field, label);
      const input = el('input', 'pi-whatif-input', field);
      input.type = 'number';
      input.min = name === 'context_window' ? '1' : '0';
      input.step = '1';
      input.name = name;
      input.title = title;
      this.inputs.set(name, input);
    }
    const run = el('button', 'pi-btn pi-small pi-whatif-run', this.form, 'Run');
    run.type = 'submit';
    // A form's submit is what Enter in any of its fields does, so Enter runs too.
    this.form.addEventListener('submit', event => {
      event.preventDefault();
      event.stopPropagation();
      this.run();
    });
    // The viewer's own keys (arrows, Enter on rows) must not fire while typing here.
    this.el.addEventListener('keydown', event => event.stopPropagation());
    this.status = withAttributes(el('p', 'pi-whatif-status pi-muted', this.el), { role: 'status', 'aria-live': 'polite' });
    this.list = withAttributes(el('div', 'pi-whatif-list', this.el), { role: 'group', 'aria-label': 'hypothetical compactions' });
    this.detail = el('div', 'pi-whatif-detail', this.el);
    this.detail.hidden = true;
    this.compare = el('div', 'pi-whatif-compare', this.el);
    this.compare.hidden = true;
  }

  get open(): boolean {
    return !this.el.hidden;
  }

  setOpen(open: boolean): void {
    this.el.hidden = !open;
    this.toggle.setAttribute('aria-expanded', open ? 'true' : 'false');
    this.toggle.classList.toggle('pi-active', open);
    if (open && !this.prefilled) {
      this.prefill();
    }
    if (open) {
      this.host.unfold();
    }
    if (open) {
      this.host.show(this.hypothesis());
    } else {
      this.host.show(null);
    }
  }

  private prefill(): void {
    const s = this.host.settings();
    for (const [name] of FIELDS) {
      (this.inputs.get(name) as HTMLInputElement).value = String(s[name] ?? '');
    }
    this.prefilled = true;
    this.status.textContent = 'Change the settings and press Run (or Enter): the replay is drawn over the real timeline.';
  }

  private read(): WhatIfSettings | string {
    const values: Partial<WhatIfSettings> = {};
    for (const [name, label] of FIELDS) {
      const text = (this.inputs.get(name) as HTMLInputElement).value.trim();
      const value = Number(text);
      if (!text || !Number.isInteger(value) || value < 0) {
        return `${label} must be a whole number of tokens`;
      }
      values[name] = value;
    }
    return values as WhatIfSettings;
  }

  /** Run the replay with the fields' settings. */
  run(): void {
    const settings = this.read();
    if (typeof settings === 'string') {
      this.say(settings, true);
      return;
    }
    const token = ++this.token;
    this.el.dataset.state = 'running';
    this.say('Replaying the branch under these settings…');
    this.transport.request<WhatIfAnswer>('what_if', { ...settings, leaf_id: this.host.leaf() }).then(reply => {
      if (token !== this.token) {
        return;
      }
      this.asked = settings;
      this.setAnswer(reply.result);
    }, error => {
      if (token !== this.token) {
        return;
      }
      const text = error instanceof Error ? error.message : String(error);
      this.answer = null;
      this.host.show(null);
      clear(this.list);
      this.detail.hidden = true;
      this.compare.hidden = true;
      // The static page refuses kernel-only requests ("... needs a kernel"; older pages: "unknown request").
      const noKernel = /unknown request|needs a kernel/.test(text);
      this.el.dataset.state = noKernel ? 'no-kernel' : 'error';
      this.say(noKernel ? NEEDS_KERNEL : `The replay could not run: ${text}`, true);
    });
  }

  private say(text: string, bad = false): void {
    this.status.textContent = text;
    this.status.classList.toggle('pi-whatif-bad', bad);
  }

  private setAnswer(answer: WhatIfAnswer): void {
    this.answer = answer;
    this.detail.hidden = true;
    const n = answer.compactions.length;
    const same = answer.compactions.filter(c => c.real_entry_id).length;
    const words = [`${answer.calls.id.length} model calls replayed`,
      `${n} compaction${n === 1 ? '' : 's'} would fire (threshold ${formatTokens(answer.threshold)})`];
    if (same) {
      words.push(`${same} the same as the session's own`);
    }
    if (answer.dropped_real_compactions.length) {
      const d = answer.dropped_real_compactions.length;
      words.push(`${d} real compaction${d === 1 ? '' : 's'} would not happen`);
    }
    this.say(words.join(' · ') + '.');
    this.el.dataset.state = 'done';
    this.el.dataset.compactions = String(n);
    clear(this.list);
    if (n) {
      el('span', 'pi-muted pi-small-text', this.list, 'Hypothetical compactions:');
    }
    answer.compactions.forEach((c, k) => {
      const label = `◆ ${c.call < answer.calls.id.length ? `before call ${c.call + 1}` : 'after the last call'} · ${formatTokens(c.tokens_before)}`;
      const b = button(label, 'pi-small pi-whatif-marker', this.list, () => this.showCompaction(k),
        `hypothetical compaction ${k + 1}: what it would summarize and keep`);
      b.dataset.index = String(k);
      if (c.real_entry_id) {
        b.classList.add('pi-whatif-same');
      }
    });
    this.host.show(this.hypothesis());
    this.contextFor = null;
    this.selectedCall(this.host.selectedCallId());
  }

  /** The answer mapped onto the strip's calls (null: none, or it is of another branch). */
  private hypothesis(): Hypothesis | null {
    const a = this.answer;
    if (!a || !this.open) {
      return null;
    }
    const count = this.host.callCount();
    const tokens = new Float64Array(count).fill(NaN);
    let mapped = 0;
    a.calls.id.forEach((id, i) => {
      const at = id === null ? undefined : this.host.callIndex(id);
      if (at !== undefined) {
        tokens[at] = a.calls.tokens[i];
        mapped++;
      }
    });
    if (!mapped && a.calls.id.length) {
      return null; // the strip shows another branch now
    }
    const markers = a.compactions.map(c => {
      const id = a.calls.id[c.call];
      const at = id ? this.host.callIndex(id) : undefined;
      return { call: at ?? count, id: c.id, tokensBefore: c.tokens_before, realEntryId: c.real_entry_id };
    });
    return { tokens, markers, threshold: a.threshold, keepRecent: a.keep_recent_tokens };
  }

  /** The strip's data changed (another branch, the session grew): draw again, or ask to re-run. */
  dataChanged(): void {
    if (!this.answer) {
      return;
    }
    const leaf = this.host.leaf();
    if (leaf !== null && this.answer.leaf_id !== leaf) {
      this.answer = null;
      clear(this.list);
      this.detail.hidden = true;
      this.compare.hidden = true;
      this.host.show(null);
      this.say('The branch changed: press Run to replay it.');
      return;
    }
    this.host.show(this.hypothesis());
  }

  /** Show what hypothetical compaction `k` would summarize and keep. */
  showCompaction(k: number): void {
    const a = this.answer;
    const settings = this.asked;
    if (!a || !settings || !a.compactions[k]) {
      return;
    }
    const c = a.compactions[k];
    for (const b of Array.from(this.list.querySelectorAll<HTMLButtonElement>('.pi-whatif-marker'))) {
      b.classList.toggle('pi-active', b.dataset.index === String(k));
      b.setAttribute('aria-pressed', b.dataset.index === String(k) ? 'true' : 'false');
    }
    this.detail.hidden = false;
    clear(this.detail);
    el('p', 'pi-muted', this.detail, `Reading hypothetical compaction ${k + 1}…`);
    this.transport.request<CompactionDetail>('what_if_compaction', { ...settings, leaf_id: a.leaf_id, id: c.id }).then(reply => {
      if (this.answer === a) {
        this.renderDetail(k, reply.result);
      }
    }, error => {
      clear(this.detail);
      el('p', 'pi-whatif-bad', this.detail, `The compaction could not be read: ${error instanceof Error ? error.message : String(error)}`);
    });
  }

  private renderDetail(k: number, d: CompactionDetail): void {
    clear(this.detail);
    this.detail.dataset.id = d.id;
    const title = el('h4', 'pi-pane-title', this.detail, `Hypothetical compaction ${k + 1}`);
    title.tabIndex = -1;
    const facts = el('div', 'pi-detail-facts', this.detail);
    el('span', '', facts, `fires ${d.check_point} (after ${shortId(d.after_entry_id)})`);
    el('span', '', facts, `${formatTokens(d.tokens_before)} tokens before`);
    el('span', '', facts, `first kept ${shortId(d.first_kept_entry_id)}`);
    el('span', d.is_split_turn ? 'pi-warn' : 'pi-muted', facts, d.is_split_turn ? 'splits a turn' : 'cuts at a turn boundary');
    if (d.real_entry_id) {
      const same = el('p', 'pi-whatif-same-note', this.detail);
      same.append('Same as the real compaction ');
      const link = el('span', 'pi-link', same, shortId(d.real_entry_id));
      link.title = `entry ${d.real_entry_id}`;
      link.addEventListener('click', () => this.host.select(d.real_entry_id as string));
      same.append(' (its summary is reused).');
    }
    const columns = el('div', 'pi-whatif-split', this.detail);
    const side = (name: string, items: { id: string; text: string }[], count: number, cls: string): void => {
      const box = el('div', `pi-whatif-side ${cls}`, columns);
      el('h5', '', box, `${name} (${count} message${count === 1 ? '' : 's'})`);
      const list = el('ol', 'pi-whatif-entries', box);
      for (const item of items) {
        const li = el('li', '', list);
        const link = el('span', 'pi-link pi-source', li, shortId(item.id));
        link.title = `select entry ${item.id}`;
        link.addEventListener('click', () => this.host.select(item.id));
        el('span', 'pi-whatif-text', li, ` ${rowSafe(item.text)}`);
      }
      if (count > items.length) {
        el('li', 'pi-muted', list, `… and ${count - items.length} more`);
      }
    };
    side('Summarized', d.summarized, d.summarized_count, 'pi-whatif-summarized');
    side('Kept', d.kept, d.kept_count, 'pi-whatif-kept');
    el('h5', '', this.detail, d.real_entry_id ? 'The summary (the real one)' : 'The summary (written by the offline model, no network)');
    el('pre', 'pi-whatif-summary', this.detail, d.summary + (d.summary_truncated ? '\n…' : ''));
    title.focus({ preventScroll: true });
  }

  /** The strip's selected call changed: show its two contexts (after the selection rests). */
  selectedCall(entryId: string | null): void {
    if (!this.answer || !this.open || !entryId || entryId === this.contextFor) {
      return;
    }
    const a = this.answer;
    const settings = this.asked as WhatIfSettings;
    window.clearTimeout(this.contextTimer);
    const token = ++this.contextToken;
    this.contextTimer = window.setTimeout(() => {
      this.transport.request<{ id: string; hypothetical: Projection; real: Projection }>('what_if_context',
        { ...settings, leaf_id: a.leaf_id, id: entryId }).then(reply => {
        if (token === this.contextToken && this.answer === a) {
          this.contextFor = entryId;
          this.renderCompare(reply.result.real, reply.result.hypothetical);
        }
      }, error => {
        if (token === this.contextToken) {
          this.compare.hidden = false;
          clear(this.compare);
          el('p', 'pi-muted', this.compare, `What the model would see there could not be read: ${error instanceof Error ? error.message : String(error)}`);
        }
      });
    }, 120);
  }

  private renderCompare(real: Projection, hypothetical: Projection): void {
    this.compare.hidden = false;
    clear(this.compare);
    this.compare.dataset.at = real.at ?? '';
    const open = (id: string): void => this.host.select(id);
    const did = el('div', 'pi-whatif-column pi-whatif-real', this.compare);
    renderProjection(did, real, open);
    const would = el('div', 'pi-whatif-column pi-whatif-hypothetical', this.compare);
    renderProjection(would, hypothetical, open);
    // The columns' own words: the pane's title speaks of the leaf, here both are at one call.
    (did.querySelector('.pi-pane-title') as HTMLElement).textContent = `What the model did see at ${shortId(real.at)}`;
    (would.querySelector('.pi-pane-title') as HTMLElement).textContent = `What it would see under these settings`;
  }

  dispose(): void {
    window.clearTimeout(this.contextTimer);
  }
}
