// The Compare pane: two nodes side by side. Context diff (what the model sees at A and at B:
// in both, only in A, only in B, what a compaction summary replaced, a text search per side)
// and branch comparison (two leaves from their common ancestor, with what each side did).
//
// The viewer owns the tab and calls `render(pane)` whenever the pane is shown or the state it
// reads changes; everything else (the picked nodes, the mode, requests) lives here.

import { renderBranches } from './compareBranches';
import { renderDiff, renderSearch } from './compareDiff';
import { BranchesAnswer, CompareNode, DiffAnswer, line, SearchAnswer } from './compareParts';
import { button, clear, el, shortId } from './dom';
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

type Mode = 'diff' | 'branches';
type Side = 'a' | 'b';

/** Rows per list asked for at first, and added by each "show more". */
const PAGE = 200;

/** CSS of the pane, appended to the viewer's styles. */
export const COMPARE_STYLES = `
.pi-compare { display: flex; flex-direction: column; gap: 6px; font-size: 12px; }
.pi-cmp-picks { display: grid; grid-template-columns: auto minmax(0, 1fr); gap: 4px 8px; align-items: center; }
.pi-cmp-side-name { font-weight: 700; font-family: var(--pi-mono); }
.pi-cmp-pick { display: flex; gap: 6px; align-items: center; min-width: 0; flex-wrap: wrap; }
.pi-cmp-pick-node { display: flex; gap: 6px; align-items: center; min-width: 0; flex: 1 1 100%; }
.pi-cmp-node-text { flex: 1 1 auto; min-width: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; font-family: var(--pi-mono); }
.pi-cmp-controls { display: flex; gap: 6px; flex-wrap: wrap; align-items: center; }
.pi-cmp-modes { display: inline-flex; }
.pi-cmp-modes .pi-btn { border-radius: 0; margin-left: -1px; }
.pi-cmp-modes .pi-btn:first-child { border-radius: 3px 0 0 3px; margin-left: 0; }
.pi-cmp-modes .pi-btn:last-child { border-radius: 0 3px 3px 0; }
.pi-cmp-id { font-family: var(--pi-mono); }
.pi-cmp-body { display: flex; flex-direction: column; gap: 6px; }
.pi-cmp-headline { font-size: 14px; }
.pi-cmp-context { font-size: 13px; }
.pi-cmp-figures-caption { max-width: 70ch; }
.pi-cmp-note { border-left: 3px solid var(--pi-warn); padding: 2px 8px; }
.pi-cmp-group { border-top: 1px solid var(--pi-border); padding-top: 4px; }
.pi-cmp-group-title { margin: 2px 0 4px; font-size: 12px; }
.pi-cmp-list { list-style: none; padding: 0; margin: 0; }
.pi-cmp-item { padding: 2px 0; border-bottom: 1px solid var(--pi-bg2); min-width: 0; }
.pi-cmp-item.pi-error .pi-cmp-seg-text { color: var(--pi-bad); }
.pi-cmp-item-head { display: flex; gap: 6px; align-items: center; min-width: 0; }
.pi-cmp-item-tokens { margin-left: auto; color: var(--pi-muted); }
.pi-cmp-preview, .pi-cmp-seg-text { display: block; min-width: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.pi-cmp-seg-text { flex: 1 1 auto; font-family: var(--pi-mono); font-size: 11px; }
.pi-cmp-replaced { margin: 4px 0 2px 14px; padding-left: 6px; border-left: 3px solid #1a9c9c; }
.pi-cmp-replaced-title { color: var(--pi-muted); margin-bottom: 2px; }
.pi-cmp-search { display: flex; gap: 6px; align-items: center; }
.pi-cmp-search .pi-input { flex: 1 1 auto; min-width: 8ch; }
.pi-cmp-search-answer { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 8px; }
.pi-cmp-sides { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 8px; align-items: start; }
.pi-cmp-side { min-width: 0; border-top: 1px solid var(--pi-border); padding-top: 4px; }
.pi-cmp-stats { border-collapse: collapse; width: 100%; table-layout: fixed; }
.pi-cmp-stats th, .pi-cmp-stats td { text-align: left; vertical-align: top; padding: 1px 6px 1px 0; overflow-wrap: anywhere; }
.pi-cmp-stats thead th { border-bottom: 1px solid var(--pi-border); }
.pi-cmp-stats tbody th { font-weight: 400; color: var(--pi-muted); width: 26%; }
.pi-cmp-summary { margin: 4px 0; border-left: 3px solid #b7791f; padding-left: 6px; }
.pi-cmp-summary-text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 12em; overflow: auto; }
.pi-cmp-go { display: flex; gap: 6px; }
.pi-cmp-fork { display: flex; gap: 6px; align-items: center; min-width: 0; }
.pi-cmp-fork > .pi-muted:first-child { white-space: nowrap; }
.pi-cmp-busy { color: var(--pi-warn); }
.pi-compare.pi-cmp-loading .pi-cmp-result { opacity: .55; }
`;

export class ComparePane {
  private readonly root: HTMLElement;
  private readonly picks: Record<Side, string | null> = { a: null, b: null };
  private readonly nodes: Record<Side, CompareNode | null> = { a: null, b: null };
  private readonly pickBoxes: Record<Side, HTMLElement>;
  private readonly selectButtons: Record<Side, HTMLButtonElement>;
  private readonly modeButtons = new Map<Mode, HTMLButtonElement>();
  private readonly body: HTMLElement;
  private readonly searchRow: HTMLElement;
  private readonly searchInput: HTMLInputElement;
  private readonly searchBox: HTMLElement;
  private readonly result: HTMLElement;
  private mode: Mode = 'diff';
  private limit = PAGE;
  private searchLimit = PAGE;
  private query = '';
  /** Each request gets a number; an answer that is not the latest one is dropped. */
  private token = 0;
  /** The session's leaf when the answer on screen was asked for (undefined: no answer). */
  private answeredLeaf: string | null | undefined = undefined;
  private searchToken = 0;

  constructor(
    private readonly transport: Transport,
    private readonly handlers: CompareHandlers
  ) {
    const root = el('div', 'pi-compare');
    this.root = root;
    root.setAttribute('role', 'region');
    root.setAttribute('aria-label', 'Compare two entries');

    const picks = el('div', 'pi-cmp-picks', root);
    const boxes = {} as Record<Side, HTMLElement>;
    const selects = {} as Record<Side, HTMLButtonElement>;
    for (const side of ['a', 'b'] as const) {
      const name = side.toUpperCase();
      el('span', 'pi-cmp-side-name', picks, name);
      const pick = el('div', 'pi-cmp-pick', picks);
      pick.dataset.side = side;
      boxes[side] = el('div', 'pi-cmp-pick-node', pick);
      const b = button(`${name} = selected entry`, 'pi-small pi-cmp-set', pick, () => this.pickSelected(side));
      b.dataset.side = side;
      selects[side] = b;
      if (side === 'b') {
        const leaf = button('B = current leaf', 'pi-small pi-cmp-leaf', pick, () => this.pickLeaf());
        leaf.setAttribute('aria-label', 'pick the current leaf as B');
      }
    }
    this.pickBoxes = boxes;
    this.selectButtons = selects;

    const controls = el('div', 'pi-cmp-controls', root);
    const swap = button('⇄ swap A and B', 'pi-small pi-cmp-swap', controls, () => this.swap());
    swap.setAttribute('aria-label', 'swap A and B');
    const modes = el('div', 'pi-cmp-modes', controls);
    modes.setAttribute('role', 'radiogroup');
    modes.setAttribute('aria-label', 'what to compare');
    for (const [mode, label, title] of [
      ['diff', 'Context diff', 'what the model sees at A against what it sees at B (any two entries)'],
      ['branches', 'Branches', 'the two branches from their common ancestor to A and to B (two leaves)']
    ] as const) {
      const b = button(label, 'pi-filter pi-cmp-mode', modes, () => this.setMode(mode), title);
      b.setAttribute('role', 'radio');
      b.dataset.mode = mode;
      b.addEventListener('keydown', event => {
        // Arrow keys move between the two modes, as in any radio group.
        if (['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown'].includes(event.key)) {
          event.preventDefault();
          event.stopPropagation();
          const next: Mode = this.mode === 'diff' ? 'branches' : 'diff';
          this.setMode(next);
          this.modeButtons.get(next)?.focus();
        }
      });
      this.modeButtons.set(mode, b);
    }

    const refresh = button('↻ again', 'pi-small pi-cmp-refresh', controls, () => this.runCompare(),
      'compare again (after the session grew)');
    refresh.setAttribute('aria-label', 'compare again');

    this.body = el('div', 'pi-cmp-body', root);
    // Placed under the diff's headline once there is a diff (see runCompare).
    this.searchRow = el('div', 'pi-cmp-search-block');
    // Not a <form>: a host page may cancel the implicit submit of Enter (JupyterLab's notebook
    // handles Enter itself), so the field and the button each start the search.
    const form = el('div', 'pi-cmp-search', this.searchRow);
    form.setAttribute('role', 'search');
    this.searchInput = el('input', 'pi-input pi-cmp-search-input', form);
    this.searchInput.type = 'search';
    this.searchInput.placeholder = 'search both contexts, e.g. auth.ts';
    this.searchInput.setAttribute('aria-label', 'search both contexts');
    const start = (): void => {
      this.query = this.searchInput.value;
      this.searchLimit = PAGE;
      this.runSearch();
    };
    button('Search both', 'pi-small pi-cmp-search-go', form, start, 'look for the text in what the model sees at A and at B');
    this.searchInput.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        event.stopPropagation();
        start();
      } else if (event.key === 'Escape' && this.searchInput.value) {
        event.stopPropagation();
        this.searchInput.value = '';
        this.query = '';
        clear(this.searchBox);
      }
    });
    this.searchBox = el('div', 'pi-cmp-search-box', this.searchRow);
    this.result = el('div', 'pi-cmp-result', this.body);
    this.result.setAttribute('aria-live', 'polite');
    this.drawPicks();
    this.drawModes();
    this.runCompare();
  }

  /**
   * Draw the pane into `parent`. The pane's element is kept between calls, so a redraw (the
   * viewer calls this on every selection change) keeps the picks, the answers, the focus and
   * the scroll position; only what depends on the selection is updated.
   */
  render(parent: HTMLElement): void {
    if (this.root.parentElement !== parent) {
      clear(parent);
      parent.appendChild(this.root);
    }
    this.drawSelection();
    // The session moved on (a navigation, an append): the answer on screen is out of date.
    if (this.answeredLeaf !== undefined && this.answeredLeaf !== this.handlers.leaf()) {
      this.runCompare();
    }
  }

  /** For tests and the notebook: the picks. */
  picked(): { a: string | null; b: string | null; mode: Mode } {
    return { a: this.picks.a, b: this.picks.b, mode: this.mode };
  }

  // ------------------------------------------------------------------ picks

  private pickSelected(side: Side): void {
    const id = this.handlers.selected();
    if (!id) {
      this.handlers.notify('Select an entry in the tree first, then pick it.');
      return;
    }
    this.setPick(side, id);
  }

  private pickLeaf(): void {
    const id = this.handlers.leaf();
    if (!id) {
      this.handlers.notify('The session has no leaf yet.');
      return;
    }
    this.setPick('b', id);
  }

  private setPick(side: Side, id: string): void {
    this.picks[side] = id;
    this.nodes[side] = null;
    this.limit = PAGE;
    this.drawPicks();
    this.describe(side, id);
    this.runCompare();
  }

  private swap(): void {
    [this.picks.a, this.picks.b] = [this.picks.b, this.picks.a];
    [this.nodes.a, this.nodes.b] = [this.nodes.b, this.nodes.a];
    this.drawPicks();
    this.runCompare();
  }

  private setMode(mode: Mode): void {
    if (mode === this.mode) {
      return;
    }
    this.mode = mode;
    this.limit = PAGE;
    this.drawModes();
    this.runCompare();
  }

  /** Ask the kernel how to name a pick (kind and text), unless an answer already did. */
  private describe(side: Side, id: string): void {
    this.transport.request<CompareNode>('compare_node', { id, side }).then(reply => {
      if (this.picks[side] === id) {
        this.nodes[side] = reply.result;
        this.drawPicks();
      }
    }, () => undefined); // an unknown id is said by the comparison itself
  }

  private drawPicks(): void {
    // A pick box is drawn anew (its node's name arrives after the pick): a keyboard user on
    // its button keeps the focus there, instead of it falling back to the page.
    const focused = this.focusedPick();
    for (const side of ['a', 'b'] as const) {
      const box = this.pickBoxes[side];
      clear(box);
      const id = this.picks[side];
      const node = this.nodes[side];
      box.parentElement?.setAttribute('data-picked', id ?? '');
      if (!id) {
        el('span', 'pi-muted', box, 'not picked: select an entry in the tree, then pick it');
        continue;
      }
      const open = button(shortId(id), 'pi-small pi-cmp-id pi-cmp-pick-id', box, () => this.handlers.open(id),
        `select ${side.toUpperCase()} (${id}) in the tree`);
      open.setAttribute('aria-label', `${side.toUpperCase()} is ${id}: select it in the tree`);
      if (node) {
        el('span', `pi-kind-tag pi-cmp-kind`, box, node.kind.replace(/_/g, ' '));
        line(box, 'pi-cmp-node-text', node.text);
        if (node.is_leaf) {
          el('span', 'pi-small-text pi-good', box, 'current leaf');
        }
      }
    }
    if (focused) {
      this.pickBoxes[focused].querySelector<HTMLElement>('.pi-cmp-pick-id')?.focus();
    }
    this.drawSelection();
  }

  /** The side whose pick box holds the focus, if one does. */
  private focusedPick(): Side | null {
    const active = this.root.ownerDocument.activeElement;
    for (const side of ['a', 'b'] as const) {
      if (active && this.pickBoxes[side].contains(active)) {
        return side;
      }
    }
    return null;
  }

  private drawSelection(): void {
    const selected = this.handlers.selected();
    for (const side of ['a', 'b'] as const) {
      const b = this.selectButtons[side];
      b.disabled = !selected;
      b.title = selected ? `pick the selected entry (${selected}) as ${side.toUpperCase()}` : 'select an entry in the tree first';
      b.setAttribute('aria-label', b.title);
    }
  }

  private drawModes(): void {
    this.modeButtons.forEach((b, mode) => {
      const on = mode === this.mode;
      b.classList.toggle('pi-on', on);
      b.setAttribute('aria-checked', on ? 'true' : 'false');
      b.tabIndex = on ? 0 : -1;
    });
    this.searchRow.hidden = this.mode !== 'diff';
  }

  // ------------------------------------------------------------------ requests

  private runCompare(): void {
    const token = ++this.token;
    const { a, b } = this.picks;
    this.answeredLeaf = undefined;
    if (!a || !b) {
      clear(this.result);
      clear(this.searchBox);
      el('p', 'pi-muted pi-cmp-hint', this.result,
        this.mode === 'diff'
          ? 'Pick two entries, e.g. the leaf before and after a compaction, or the same point on two branches: select one in the tree and press "A = selected entry", then another for B.'
          : 'Pick two leaves (or any two entries: the comparison then runs to them): select one in the tree and press "A = selected entry", then "B = current leaf" or another entry for B.');
      return;
    }
    // An answer on screen stays until the new one replaces it (no flash, the scroll position
    // kept); an empty pane says that it is working.
    if (!this.result.querySelector('.pi-cmp-headline, .pi-cmp-fork')) {
      clear(this.result);
      el('p', 'pi-cmp-busy', this.result, 'Comparing…');
    }
    this.root.classList.add('pi-cmp-loading');
    const leaf = this.handlers.leaf();
    const op = this.mode === 'diff' ? 'context_diff' : 'compare_branches';
    this.transport.request<DiffAnswer | BranchesAnswer>(op, { a, b, limit: this.limit }).then(
      reply => {
        if (token !== this.token) {
          return;
        }
        const answer = reply.result;
        this.root.classList.remove('pi-cmp-loading');
        this.answeredLeaf = leaf;
        this.nodes.a = answer.nodes.a;
        this.nodes.b = answer.nodes.b;
        this.drawPicks();
        const scroller = this.root.parentElement;
        const scrolled = scroller?.scrollTop ?? 0;
        clear(this.result);
        clear(this.searchBox);
        for (const note of answer.notes) {
          el('div', 'pi-cmp-note', this.result, note);
        }
        const more = (): void => {
          this.limit += PAGE * 4;
          this.runCompare();
        };
        if (this.mode === 'diff') {
          renderDiff(this.result, answer as DiffAnswer, { open: id => this.handlers.open(id), more });
          // The search answers "is X still in what the model sees?" for these two nodes: it
          // goes between the token headline and the lists.
          this.result.insertBefore(this.searchRow, this.result.querySelector('.pi-cmp-group'));
          if (this.query) {
            this.runSearch();
          }
        } else {
          renderBranches(this.result, answer as BranchesAnswer, {
            open: id => this.handlers.open(id),
            more,
            goTo: id => this.handlers.goTo(id)
          });
        }
        if (scroller) {
          scroller.scrollTop = scrolled;
        }
      },
      error => {
        if (token === this.token) {
          this.root.classList.remove('pi-cmp-loading');
          this.showError(this.result, error);
        }
      }
    );
  }

  private runSearch(): void {
    const token = ++this.searchToken;
    const { a, b } = this.picks;
    clear(this.searchBox);
    if (!a || !b) {
      el('p', 'pi-muted', this.searchBox, 'Pick A and B first.');
      return;
    }
    el('p', 'pi-cmp-busy', this.searchBox, 'Searching…');
    this.transport.request<SearchAnswer>('context_search', { a, b, query: this.query, limit: this.searchLimit }).then(
      reply => {
        if (token === this.searchToken) {
          clear(this.searchBox);
          renderSearch(this.searchBox, reply.result, id => this.handlers.open(id), () => {
            this.searchLimit += PAGE * 4;
            this.runSearch();
          });
        }
      },
      error => {
        if (token === this.searchToken) {
          this.showError(this.searchBox, error);
        }
      }
    );
  }

  private showError(parent: HTMLElement, error: unknown): void {
    clear(parent);
    const box = el('div', 'pi-error-box pi-cmp-error', parent, error instanceof Error ? error.message : String(error));
    box.setAttribute('role', 'alert');
  }
}
