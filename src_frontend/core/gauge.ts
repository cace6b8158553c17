// The context gauge: measured tokens (solid) and estimated tokens (hatched) side by side,
// never blended into one bar; the auto-compaction threshold (window − reserve), the
// keep-recent window, the headroom, and pi's "unknown" state after a compaction.

import { clear, el, formatTokens, rowSafe, shortId, tokensBeforeText } from './dom';
import { renderInline, renderMarkdown } from './markdown';
import type { CompactionInfo, Gauge } from './transport';

export interface GaugeHandlers {
  /** Jump to an entry (a compaction, the measured anchor). */
  open(entryId: string): void;
  /** Change the settings the gauge uses (a "pretend" window for teaching). */
  settings(values: { context_window?: number; reserve_tokens?: number; keep_recent_tokens?: number }): void;
  /** The full text of a compaction's summary (the compactions tab renders it as Markdown). */
  summary?(entryId: string): Promise<string | null>;
}

function pct(part: number, whole: number): string {
  return `${Math.max(0, Math.min(100, (part / Math.max(1, whole)) * 100)).toFixed(3)}%`;
}

/** The one-line gauge under the header. */
export class GaugeView {
  readonly el: HTMLDivElement;
  private readonly bar: HTMLDivElement;
  private readonly caption: HTMLDivElement;

  constructor(parent: HTMLElement, private readonly handlers: GaugeHandlers) {
    this.el = el('div', 'pi-gauge', parent);
    this.bar = el('div', 'pi-gauge-bar', this.el);
    this.bar.setAttribute('role', 'meter');
    this.caption = el('div', 'pi-gauge-caption', this.el);
  }

  render(g: Gauge | Record<string, never>): void {
    clear(this.bar);
    clear(this.caption);
    if (!('context_window' in g)) {
      return;
    }
    const window = g.context_window;
    this.el.classList.toggle('pi-gauge-unknown', g.unknown);
    this.el.classList.toggle('pi-gauge-over', g.would_compact);
    this.bar.setAttribute('aria-valuemin', '0');
    this.bar.setAttribute('aria-valuemax', String(window));
    this.bar.setAttribute('aria-valuenow', String(g.tokens ?? g.estimate_total));
    if (g.measured > 0) {
      const m = el('div', 'pi-gauge-measured', this.bar);
      m.style.width = pct(g.measured, window);
      m.title = `measured: ${g.measured} tokens (usage reported with ${shortId(g.anchor_id)})`;
    }
    if (g.estimated > 0) {
      const e = el('div', 'pi-gauge-estimated', this.bar);
      e.style.width = pct(g.estimated, window);
      e.title = `estimated: ${g.estimated} tokens (chars/4 of the messages after the last usage)`;
    }
    const threshold = el('div', 'pi-gauge-threshold', this.bar);
    threshold.style.left = pct(g.threshold, window);
    threshold.title = `auto-compaction threshold: window ${window} − reserve ${g.reserve_tokens} = ${g.threshold}`;
    const total = g.estimate_total;
    if (total > g.keep_recent_tokens) {
      const keep = el('div', 'pi-gauge-keep', this.bar);
      keep.style.left = pct(total - g.keep_recent_tokens, window);
      keep.style.width = pct(g.keep_recent_tokens, window);
      keep.title = `keep-recent window: compaction keeps about the last ${g.keep_recent_tokens} tokens`;
    }

    const add = (cls: string, text: string, title?: string): HTMLSpanElement => {
      const span = el('span', cls, this.caption, text);
      if (title) {
        span.title = title;
      }
      return span;
    };
    if (g.unknown) {
      add('pi-gauge-value pi-unknown', '? / ' + formatTokens(window),
        'Unknown until the next response after the compaction (as pi shows it).');
      add('pi-gauge-note', `estimate ${formatTokens(total)}`, 'chars/4 estimate of the projection');
    } else {
      add('pi-gauge-value', `${formatTokens(g.tokens)} / ${formatTokens(window)}`, `${g.tokens} tokens`);
      add('pi-gauge-pct', g.percent !== null ? `${g.percent.toFixed(1)}%` : '');
      if (g.measured > 0) {
        const m = add('pi-gauge-part pi-measured', `measured ${formatTokens(g.measured)}`);
        if (g.anchor_id) {
          m.classList.add('pi-link');
          m.addEventListener('click', () => this.handlers.open(g.anchor_id as string));
        }
      }
      if (g.estimated > 0) {
        add('pi-gauge-part pi-estimated', g.measured > 0
          ? `+ estimated ${formatTokens(g.estimated)}`
          : `all estimated (no trusted usage yet)`);
      }
    }
    const headroom = add('pi-gauge-headroom',
      g.headroom >= 0 ? `${formatTokens(g.headroom)} until auto-compaction` : `${formatTokens(-g.headroom)} over the threshold`);
    headroom.title = `threshold ${g.threshold} = window ${window} − reserve ${g.reserve_tokens}` +
      (g.enabled ? '' : ' (automatic compaction is off)');
    const count = g.compaction_count ?? g.compactions?.length ?? 0;
    add('pi-gauge-count', `${count} compaction${count === 1 ? '' : 's'}`);
  }
}

/** The compactions tab: every checkpoint on the branch with tokens before and after, and the settings. */
export function renderCompactions(parent: HTMLElement, g: Gauge | Record<string, never>, compactions: CompactionInfo[],
  handlers: GaugeHandlers): void {
  clear(parent);
  if (!('context_window' in g)) {
    return;
  }
  el('h4', 'pi-pane-title', parent, 'Compactions on this branch');
  if (!compactions.length) {
    el('p', 'pi-muted', parent, 'None yet: the model sees the whole branch.');
  } else {
    const table = el('table', 'pi-compactions', parent);
    const head = el('tr', '', el('thead', '', table));
    for (const title of ['checkpoint', 'before', 'after', 'kept from', 'summary']) {
      el('th', '', head, title);
    }
    const body = el('tbody', '', table);
    for (const c of compactions) {
      const tr = el('tr', '', body);
      const id = el('td', 'pi-link', tr, shortId(c.id));
      id.addEventListener('click', () => handlers.open(c.id));
      el('td', 'pi-num', tr, c.tokens_before === null || c.tokens_before === undefined ? 'not recorded' : formatTokens(c.tokens_before));
      const after = el('td', `pi-num ${c.after_kind === 'measured' ? 'pi-measured' : 'pi-estimated'}`, tr,
        `${formatTokens(c.after)}${c.after_kind === 'estimated' ? ' (est.)' : ''}`);
      after.title = c.after_kind === 'measured'
        ? 'usage reported by the first successful response after the checkpoint'
        : 'estimate of the projection right after the checkpoint (no response yet)';
      const kept = el('td', 'pi-link', tr, shortId(c.first_kept_id));
      if (c.first_kept_id) {
        kept.addEventListener('click', () => handlers.open(c.first_kept_id as string));
      }
      // The preview is one line of the summary's Markdown: its inline marks are rendered, its
      // block marks (headings, bullets) are dropped, and nothing is ever parsed as HTML.
      const preview = el('td', 'pi-preview', tr);
      renderInline(preview, rowSafe(c.summary_preview.replace(/(^|\s)(#{1,6}|[-*+]|\d+[.)])\s+/g, '$1')));
    }
    el('h4', 'pi-pane-title', parent, 'Summaries');
    compactions.forEach((c, i) => {
      const box = el('details', 'pi-compaction-summary', parent);
      el('summary', '', box, `${shortId(c.id)} · ${tokensBeforeText(c.tokens_before)}${c.from_hook ? ' · from an extension' : ''}`);
      const body = el('div', 'pi-md', box);
      let loaded = false;
      const load = (): void => {
        if (loaded) {
          return;
        }
        loaded = true;
        el('p', 'pi-muted', body, 'Loading…');
        const fetch = handlers.summary ? handlers.summary(c.id) : Promise.resolve(null);
        fetch.then(text => {
          clear(body);
          renderMarkdown(body, text ?? c.summary_preview);
        }, () => {
          clear(body);
          renderMarkdown(body, c.summary_preview);
        });
      };
      box.addEventListener('toggle', () => {
        if (box.open) {
          load();
        }
      });
      if (i === compactions.length - 1) {
        box.open = true; // the latest checkpoint is the one the model reads now
        load();
      }
    });
  }
  el('h4', 'pi-pane-title', parent, 'Settings used by the gauge and the preview');
  const form = el('div', 'pi-settings', parent);
  const field = (name: 'context_window' | 'reserve_tokens' | 'keep_recent_tokens', label: string, value: number): void => {
    const wrap = el('label', 'pi-setting', form, label + ' ');
    const input = el('input', 'pi-input', wrap);
    input.type = 'number';
    input.min = '0';
    input.step = '1000';
    input.value = String(value);
    input.dataset.setting = name;
    let committed = value;
    const commit = (): void => {
      const n = Math.max(0, Math.round(Number(input.value)));
      if (input.value.trim() !== '' && Number.isFinite(n) && n !== committed) {
        committed = n;
        handlers.settings({ [name]: n });
      }
    };
    // Blur fires "change"; Enter commits at once (a number field sends no change on Enter).
    input.addEventListener('change', commit);
    input.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        commit();
      }
    });
  };
  field('context_window', 'context window', g.context_window);
  field('reserve_tokens', 'reserve', g.reserve_tokens);
  field('keep_recent_tokens', 'keep recent', g.keep_recent_tokens);
  el('p', 'pi-muted', parent,
    'A smaller "pretend" window shows when a long session would compact (threshold = window − reserve).');
}
