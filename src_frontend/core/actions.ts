// Actions on a node: navigate (no summary / summary / summary with instructions), compact with
// a preview first, label edit, fork and clone. Each opens a small dialog inside the viewer;
// refusals from the engine come back as the request's error and are shown in the dialog.

import { button, clear, el, formatTokens, rowSafe, shortId } from './dom';
import type { Transport } from './transport';

export interface ActionTarget {
  id: string;
  text: string;
  kind: string;
  label: string | null;
  row: number;
}

interface PreviewPart {
  count: number;
  tokens: number;
  items: ({ role: string; tokens: number; source_id: string | null; preview: string } | { gap: number })[];
  first_id: string | null;
  last_id: string | null;
  entry_count: number;
  first_row?: number;
  last_row?: number;
}

export interface CompactionPreview {
  ok: boolean;
  reason?: string;
  first_kept_id?: string;
  is_split_turn?: boolean;
  tokens_before?: number;
  previous_summary?: boolean;
  summarize?: PreviewPart;
  turn_prefix?: PreviewPart;
  kept?: PreviewPart;
  system_tokens?: number;
  estimated_after?: number;
  keep_recent_tokens?: number;
  files?: { read: string[]; modified: string[] };
}

export interface ActionHooks {
  /** Jump to an entry in the tree. */
  open(entryId: string): void;
  /** Highlight rows while a compaction preview is shown (null clears). */
  preview(p: CompactionPreview | null): void;
  /** Something changed the session: say it in the status line. */
  notify(message: string, isError?: boolean): void;
  /** A dialog closed: give the keyboard back to the tree. */
  closed?(): void;
  /** A view that cannot write: move its leaf to `target` in this view only (nothing is written). */
  moveLeaf?(target: ActionTarget): void;
  /** Show "what the model sees" with the leaf at this entry. */
  showContext?(entryId: string): void;
}

/**
 * Why nothing is offered that writes: the host's `write_refusal` for another agent's session
 * ("a Claude Code session; pi_lab never writes it.") or for a pi session that has no file (a past
 * moment held in memory, pi_lab.teach); null for a pi session that can be made writable.
 */
export function foreignRefusal(transport: Transport): string | null {
  const info = transport.get('session') as { agent?: string; write_refusal?: string | null } | null;
  if (!info) {
    return null;
  }
  if (info.write_refusal) {
    return info.write_refusal;
  }
  if (!info.agent || info.agent === 'pi') {
    return null;
  }
  return `a ${info.agent} session; pi_lab never writes it.`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What can take the keyboard inside a dialog, in document order. */
const FOCUSABLE_SELECTOR = 'button, input, textarea, select, summary, a[href], [tabindex]:not([tabindex="-1"])';

function focusables(root: HTMLElement): HTMLElement[] {
  return Array.from(root.querySelectorAll<HTMLElement>(FOCUSABLE_SELECTOR)).filter(
    node => !(node as HTMLButtonElement).disabled && !node.closest('[hidden]') && node.getClientRects().length > 0
  );
}

/**
 * The dialogs of one viewer. Only one is open at a time. Each is modal for the keyboard: its
 * first control takes the focus, Tab and shift+Tab cycle inside it, Escape closes it, and the
 * focus goes back to where it was (the tree, on the row that opened it).
 */
export class Dialogs {
  readonly el: HTMLDivElement;
  private closeHook: (() => void) | null = null;
  private box: HTMLDivElement | null = null;

  constructor(parent: HTMLElement, private readonly transport: Transport, private readonly hooks: ActionHooks) {
    this.el = el('div', 'pi-dialog-layer', parent);
    this.el.hidden = true;
    this.el.addEventListener('keydown', event => {
      if (event.key === 'Escape') {
        event.preventDefault();
        this.close();
      } else if (event.key === 'Tab') {
        this.trapTab(event);
      } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        this.moveInMenu(event);
      }
      event.stopPropagation(); // keys typed in a dialog are not tree keys
    });
    // A click on the shade outside the dialog closes it, as Escape does.
    this.el.addEventListener('mousedown', event => {
      if (event.target === this.el) {
        event.preventDefault();
        this.close();
      }
    });
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  close(): void {
    const wasOpen = !this.el.hidden;
    this.el.hidden = true;
    clear(this.el);
    this.box = null;
    this.closeHook?.();
    this.closeHook = null;
    if (wasOpen) {
      this.hooks.closed?.();
    }
  }

  /** Keep Tab inside the open dialog (wrapping at both ends). */
  private trapTab(event: KeyboardEvent): void {
    if (!this.box) {
      return;
    }
    const nodes = focusables(this.box);
    if (!nodes.length) {
      event.preventDefault();
      this.box.focus();
      return;
    }
    const at = nodes.indexOf(document.activeElement as HTMLElement);
    const next = event.shiftKey ? (at <= 0 ? nodes.length - 1 : at - 1) : (at < 0 || at === nodes.length - 1 ? 0 : at + 1);
    event.preventDefault();
    nodes[next].focus();
  }

  /** Up and down move between the items of a menu (Tab works as well). */
  private moveInMenu(event: KeyboardEvent): void {
    const active = document.activeElement as HTMLElement | null;
    const menu = active?.closest('.pi-menu');
    if (!menu || !this.box?.contains(menu)) {
      return;
    }
    const items = focusables(menu as HTMLElement);
    const at = items.indexOf(active as HTMLElement);
    if (at < 0) {
      return;
    }
    event.preventDefault();
    items[(at + (event.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length].focus();
  }

  /** Give the keyboard to the dialog's first control (after the close button), or the dialog. */
  focusFirst(): void {
    if (!this.box) {
      return;
    }
    const body = this.box.querySelector<HTMLElement>('.pi-dialog-body');
    const first = body ? focusables(body)[0] : undefined;
    (first ?? this.box).focus();
  }

  private open(title: string, onClose?: () => void): HTMLDivElement {
    this.close();
    this.el.hidden = false;
    this.closeHook = onClose ?? null;
    const box = el('div', 'pi-dialog', this.el);
    this.box = box;
    box.tabIndex = -1; // keeps the keyboard (Escape) in the dialog when a button is disabled
    box.setAttribute('role', 'dialog');
    box.setAttribute('aria-modal', 'true');
    box.setAttribute('aria-label', title);
    const head = el('div', 'pi-dialog-head', box);
    el('span', 'pi-dialog-title', head, title);
    button('×', 'pi-close', head, () => this.close(), 'Close (Esc)');
    const body = el('div', 'pi-dialog-body', box);
    // The dialog's controls are made after this returns: focus the first one once they exist.
    queueMicrotask(() => {
      if (this.box === box && !box.contains(document.activeElement)) {
        this.focusFirst();
      }
    });
    return body;
  }

  /**
   * A view that cannot write says so before any choice, with the way to one that can: the
   * notebook widget asks to allow writing, the JupyterLab viewer opens the file in a notebook.
   * A view with neither (an export, a notebook snapshot without its kernel) names no button it
   * does not have: it says what to run instead (`readOnlyHint`).
   */
  private readOnlyNote(parent: HTMLElement): void {
    const note = el('div', 'pi-readonly-note', parent);
    const refusal = foreignRefusal(this.transport);
    if (refusal) {
      el('p', 'pi-foreign-refusal', note, `This view is read-only: ${refusal}`);
      return;
    }
    el('p', '', note, this.transport.canAllowWrites
      ? 'This view is read-only: it does not change the session file.'
      : this.transport.openInNotebook
        ? 'This view is read-only: the session file is untouched. Open the session in a notebook to change it.'
        : this.transport.readOnlyHint ?? 'This view is read-only: it never changes the session file.');
    const row = el('div', 'pi-choices', note);
    if (this.transport.canAllowWrites) {
      button('Allow writing…', 'pi-primary', row, () => this.allowWrites());
    } else if (this.transport.openInNotebook) {
      this.openInNotebookButton(row, 'pi-primary');
    }
  }

  private openInNotebookButton(row: HTMLElement, cls: string): void {
    const open = this.transport.openInNotebook?.bind(this.transport);
    if (open) {
      button('Open in notebook', cls, row, () => {
        this.close();
        open();
      }, 'Make a notebook that opens this session in the pi_lab widget, where the leaf moves in the file');
    }
  }

  /**
   * The read-only JupyterLab viewer's "Go to": the leaf moves in this view only (what the model
   * sees, the gauge and the timeline follow it); a real move, with a summary, needs a notebook.
   */
  private moveInView(body: HTMLElement, target: ActionTarget, leafId: string | null): void {
    const reedit = target.kind === 'user' || target.kind === 'custom_message';
    if (target.id === leafId && !reedit) {
      el('p', 'pi-muted', body, 'Already at this point.');
    } else {
      el('p', 'pi-muted', body, reedit
        ? 'As in pi, a user message is re-edited: the leaf moves to its parent.'
        : 'The leaf moves to this entry: what the model sees, the gauge and the timeline follow it.');
    }
    el('p', 'pi-view-only-note', body,
      'This viewer is read-only: it moves the leaf in this view only, and the session file is untouched. ' +
      'To move it in the file (with a branch summary), open the session in a notebook.');
    const choices = el('div', 'pi-choices', body);
    const move = this.hooks.moveLeaf;
    if (move && !(target.id === leafId && !reedit)) {
      button('Move the leaf here (this view only)', 'pi-primary', choices, () => {
        this.close();
        move(target);
      });
    }
    this.openInNotebookButton(choices, '');
  }

  /** The confirmation before the widget may write: says what it will do to which file. */
  allowWrites(): void {
    const body = this.open('Allow writing to the session file');
    const plan = this.transport.get('write_plan');
    el('p', '', body, 'Navigating, compacting, labeling and forking append entries to the session. With writing allowed:');
    el('blockquote', 'pi-write-plan', body, plan || 'The session file is appended to.');
    el('p', 'pi-muted', body, 'If another program (pi itself) is writing the same file, an append is refused instead of mixing the two.');
    const error = this.errorBox(body);
    const row = el('div', 'pi-choices', body);
    const go = button('Allow writing', 'pi-primary', row, async () => {
      const result = await this.run('allow_writes', {}, error, [go, cancel]);
      if (result) {
        this.close();
        // The kernel says what it did (e.g. "Append new entries to /p/x.jsonl").
        const done = [result.message, result.done].find(v => typeof v === 'string' && v) as string | undefined;
        this.hooks.notify(done ? `Writing allowed: ${done}` : 'Writing allowed');
      }
    });
    const cancel = button('Cancel', '', row, () => this.close());
  }

  private errorBox(parent: HTMLElement): HTMLDivElement {
    const box = el('div', 'pi-error-box', parent);
    box.setAttribute('role', 'alert');
    box.hidden = true;
    return box;
  }

  private async run(op: string, args: Record<string, unknown>, error: HTMLDivElement, busy: HTMLElement[]): Promise<Record<string, unknown> | null> {
    busy.forEach(b => ((b as HTMLButtonElement).disabled = true));
    error.hidden = true;
    try {
      const reply = await this.transport.request<Record<string, unknown>>(op, args);
      return reply.result;
    } catch (e) {
      error.hidden = false;
      error.textContent = errorText(e);
      this.hooks.notify(errorText(e), true);
      return null;
    } finally {
      busy.forEach(b => ((b as HTMLButtonElement).disabled = false));
      // A disabled button drops the focus to the page: bring it back into the dialog.
      if (!this.el.hidden && !this.el.contains(document.activeElement)) {
        (this.el.querySelector('.pi-dialog') as HTMLElement | null)?.focus();
      }
    }
  }

  /** The action menu of a node. */
  menu(target: ActionTarget, leafId: string | null): void {
    const body = this.open(`Entry ${shortId(target.id)}`);
    el('div', 'pi-dialog-target', body, rowSafe(target.text));
    const list = el('div', 'pi-menu', body);
    const item = (label: string, hint: string, action: () => void): void => {
      const b = button(label, 'pi-menu-item', list, action);
      el('span', 'pi-muted', b, ` ${hint}`);
    };
    if ((this.transport.writable || this.transport.canAllowWrites) && !foreignRefusal(this.transport)) {
      item('Go here…', target.id === leafId ? '(already the leaf)' : 'move the leaf (pi /tree)', () => this.navigate(target, leafId));
      item('Compact…', 'summarize the older part of the current branch (pi /compact)', () => this.compact());
      item('Label…', target.label ? `now [${target.label}]` : 'bookmark this entry', () => this.label(target));
      if (target.kind === 'user') {
        item('Fork before this message…', 'new session file up to its parent (pi /fork)', () => this.fork(target, 'fork'));
      }
      item('Clone up to here…', 'new session file with the path to this entry (pi /clone)', () => this.fork(target, 'clone'));
      if (!this.transport.writable) {
        this.readOnlyNote(body); // the items that would append say so when chosen
      }
    } else if (this.transport.leafInView && this.hooks.moveLeaf) {
      item('Go here…', 'move the leaf in this view only (the file is untouched)', () => this.navigate(target, leafId));
      this.readOnlyNote(body);
    } else {
      this.readOnlyNote(list);
    }
  }

  /** pi's /tree choice: no summary, summary, or summary with custom instructions. */
  navigate(target: ActionTarget, leafId: string | null): void {
    const body = this.open('Go to this entry');
    el('div', 'pi-dialog-target', body, rowSafe(target.text));
    // The JupyterLab viewer cannot move the leaf at all; the read-only notebook widget moves it
    // in memory (nothing is written), but a summary or a label would append to the file.
    const inMemoryOnly = !this.transport.writable && Boolean(this.transport.canAllowWrites);
    if (!this.transport.writable && !inMemoryOnly) {
      if (this.transport.leafInView) {
        this.moveInView(body, target, leafId);
        return;
      }
      this.readOnlyNote(body);
      const show = this.hooks.showContext;
      if (show) {
        // What this view can do instead: show what the model would see with the leaf there.
        const row = el('div', 'pi-choices', body);
        button('What the model sees here', 'pi-primary', row, () => {
          this.close();
          show(target.id);
        });
      }
      return;
    }
    if (target.id === leafId) {
      el('p', 'pi-muted', body, 'Already at this point.');
      return;
    }
    const reedit = target.kind === 'user' || target.kind === 'custom_message';
    el('p', 'pi-muted', body, reedit
      ? 'A user message is re-edited: the leaf moves to its parent and its text is offered again.'
      : 'The leaf moves to this entry; the next message continues from here.');
    el('p', 'pi-muted', body, inMemoryOnly
      ? 'Read-only: the leaf moves in this view only (nothing is written); a summary of the branch you leave needs writing.'
      : 'Summarize the branch you are leaving?');
    const choices = el('div', 'pi-choices', body);
    const instructions = el('textarea', 'pi-textarea', body);
    instructions.placeholder = 'Custom instructions for the summary';
    instructions.hidden = true;
    const labelRow = el('label', 'pi-setting', body, 'label (optional) ');
    const labelInput = el('input', 'pi-input', labelRow);
    labelRow.hidden = inMemoryOnly;
    const error = this.errorBox(body);
    const progress = el('div', 'pi-progress', body);
    progress.hidden = true;
    const buttons: HTMLButtonElement[] = [];
    const go = async (summarize: boolean): Promise<void> => {
      progress.hidden = !summarize;
      progress.textContent = 'Summarizing the branch… ';
      const cancel = summarize ? button('Cancel', 'pi-small', progress, () => void this.transport.request('cancel')) : null;
      const result = await this.run('navigate', {
        id: target.id,
        summarize,
        instructions: summarize ? instructions.value : '',
        label: labelInput.value
      }, error, buttons);
      cancel?.remove();
      progress.hidden = true;
      if (result) {
        if (result.cancelled) {
          error.hidden = false;
          error.textContent = 'Summary canceled: nothing changed.';
          return;
        }
        this.close();
        // The engine says why no summary was written (nothing abandoned): show its words.
        const said = typeof result.message === 'string' ? result.message : '';
        this.hooks.notify(said || (result.nothing_to_summarize
          ? 'Nothing to summarize: no entries are left behind on the way there. Moved the leaf.'
          : result.summary_id ? 'Moved the leaf and added a branch summary' : 'Moved the leaf'));
      }
    };
    buttons.push(button('No summary', 'pi-primary', choices, () => void go(false)));
    if (inMemoryOnly) {
      this.readOnlyNote(body);
      return;
    }
    buttons.push(button('Summarize', '', choices, () => void go(true)));
    buttons.push(button('Summarize with instructions…', '', choices, () => {
      if (instructions.hidden) {
        instructions.hidden = false;
        instructions.focus();
      } else {
        void go(true);
      }
    }));
  }

  /** /compact with a preview first. */
  compact(): void {
    const body = this.open('Compact the current branch', () => this.hooks.preview(null));
    const status = el('div', 'pi-muted', body, 'Preparing a preview…');
    void this.transport.request<CompactionPreview>('compact_preview').then(
      reply => this.showPreview(body, status, reply.result),
      e => {
        status.textContent = errorText(e);
      }
    );
  }

  private part(parent: HTMLElement, title: string, part: PreviewPart | undefined, cls: string): void {
    if (!part || !part.count) {
      return;
    }
    const box = el('div', `pi-preview-part ${cls}`, parent);
    const head = el('div', 'pi-preview-head', box);
    el('span', 'pi-preview-title', head, title);
    el('span', 'pi-num', head, `${part.count} messages · ${formatTokens(part.tokens)} tokens`);
    const list = el('ul', 'pi-preview-list', box);
    for (const item of part.items) {
      if ('gap' in item) {
        el('li', 'pi-muted', list, `… ${item.gap} more`);
        continue;
      }
      const li = el('li', '', list);
      el('span', `pi-role pi-role-${item.role}`, li, item.role);
      el('span', 'pi-num', li, ` ${formatTokens(item.tokens)} `);
      const text = el('span', item.source_id ? 'pi-link' : '', li, item.preview);
      if (item.source_id) {
        const id = item.source_id;
        text.addEventListener('click', () => this.hooks.open(id));
      }
    }
  }

  private showPreview(body: HTMLElement, status: HTMLElement, p: CompactionPreview): void {
    if (!p.ok) {
      status.textContent = p.reason ?? 'Nothing to compact.';
      status.className = 'pi-error-box';
      status.setAttribute('role', 'alert');
      return;
    }
    this.hooks.preview(p);
    status.textContent =
      `Before: ${formatTokens(p.tokens_before ?? 0)} tokens (estimate). Kept verbatim: about ${formatTokens(p.keep_recent_tokens ?? 0)} ` +
      `tokens from ${shortId(p.first_kept_id)}. After: ${formatTokens(p.estimated_after ?? 0)} tokens plus the summary.`;
    this.part(body, p.previous_summary ? 'Summarized (with the previous summary)' : 'Summarized', p.summarize, 'pi-part-summarize');
    if (p.is_split_turn) {
      this.part(body, 'Split turn: its beginning is summarized separately', p.turn_prefix, 'pi-part-prefix');
    }
    this.part(body, 'Kept as is', p.kept, 'pi-part-kept');
    if (p.files && (p.files.read.length || p.files.modified.length)) {
      el('div', 'pi-muted', body, `files read: ${p.files.read.length} · modified: ${p.files.modified.length}`);
    }
    if (!this.transport.writable) {
      this.readOnlyNote(body); // a compaction appends its checkpoint to the file
      this.focusFirst();
      return;
    }
    const instructions = el('textarea', 'pi-textarea', body);
    instructions.placeholder = 'Optional instructions ("Additional focus") for the summary';
    const error = this.errorBox(body);
    const progress = el('div', 'pi-progress', body);
    progress.hidden = true;
    const row = el('div', 'pi-choices', body);
    const run = button('Compact', 'pi-primary', row, async () => {
      progress.hidden = false;
      progress.textContent = 'Compacting… ';
      const cancel = button('Cancel', 'pi-small', progress, () => void this.transport.request('cancel'));
      const result = await this.run('compact', { instructions: instructions.value }, error, [run]);
      cancel.remove();
      progress.hidden = true;
      if (result) {
        this.close();
        this.hooks.notify(`Compacted: ${formatTokens(result.tokens_before as number)} tokens before`);
      }
    });
    // The preview arrived after the dialog opened: its controls take the keyboard now, unless
    // the reader has already moved it to one.
    if (this.box && (document.activeElement === this.box || !this.box.contains(document.activeElement))) {
      this.focusFirst();
    }
  }

  label(target: ActionTarget): void {
    const body = this.open('Label');
    el('div', 'pi-dialog-target', body, rowSafe(target.text));
    if (!this.transport.writable) {
      this.readOnlyNote(body);
      return;
    }
    const input = el('input', 'pi-input', body);
    input.value = target.label ?? '';
    input.placeholder = 'label (empty removes it)';
    const error = this.errorBox(body);
    const row = el('div', 'pi-choices', body);
    const save = async (text: string): Promise<void> => {
      const result = await this.run('label', { id: target.id, label: text }, error, buttons);
      if (result) {
        this.close();
      }
    };
    const buttons = [button('Save', 'pi-primary', row, () => void save(input.value))];
    if (target.label) {
      buttons.push(button('Remove', '', row, () => void save('')));
    }
    input.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        void save(input.value);
      }
    });
  }

  fork(target: ActionTarget, mode: 'fork' | 'clone'): void {
    const body = this.open(mode === 'fork' ? 'Fork before this message' : 'Clone up to here');
    el('div', 'pi-dialog-target', body, rowSafe(target.text));
    el('p', 'pi-muted', body, mode === 'fork'
      ? 'Creates a new session file holding the path before this message; its text is offered for re-editing. The current file is not changed; this view switches to the new session.'
      : 'Creates a new session file holding the path up to this entry (not the other branches). The current file is not changed; this view switches to the new session.');
    const error = this.errorBox(body);
    const row = el('div', 'pi-choices', body);
    const go = button(mode === 'fork' ? 'Fork' : 'Clone', 'pi-primary', row, async () => {
      const result = await this.run(mode, { id: target.id }, error, [go]);
      if (result) {
        this.close();
        this.hooks.notify(`${mode === 'fork' ? 'Forked' : 'Cloned'} into ${String(result.session_file ?? 'a new session')}`);
      }
    });
  }
}
