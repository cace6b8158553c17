// A researcher's notes on entries (issue 26): kept in a sidecar store by the host (never in the
// session file), asked for with the `notes` request and changed with `note_add`, `note_edit`
// and `note_remove` (pi_lab/view/notes.py; the protocol is the one every transport answers).
//
// `NotesModel` holds this session's notes and tells the view when they change; `NotesSection`
// is the list and inline editor in the entry pane; `renderNotesList` is the Notes tab (every
// note of the session, findings grouped by question). Note text is the reader's or a model's
// free text: it reaches the page through textContent only, like session text.

import { button, clear, el, formatLabelTime, rowSafe, shortId } from './dom';
import type { Transport } from './transport';

export type NoteScope = 'entry' | 'range' | 'branch';

export interface Note {
  id: string;
  entry_id: string;
  end_entry_id: string | null;
  scope: NoteScope;
  tag: string;
  text: string;
  author: string;
  created: string;
  updated: string;
  /** "person", or "model:<model>" for a finding of `Corpus.ask`. */
  source: string;
  question: string | null;
  /** The entry is not in this session (the note is listed, flagged, never marked). */
  missing: boolean;
}

export interface NotesPayload {
  notes: Note[];
  tags: string[];
  store: string | null;
  writable: boolean;
  version: number;
}

/** The note filter's values (ViewState.note_filter): off, any note, or one tag. */
export const NOTE_FILTER_NOTED = 'noted';
export const NOTE_FILTER_TAG = 'tag:';

/** A model's finding (written by `Corpus.ask`), not a person's note. */
export function isFinding(note: Note): boolean {
  return note.source.startsWith('model:');
}

/** The model a finding names ("model:<model>"). */
export function findingModel(note: Note): string {
  return note.source.slice('model:'.length);
}

/** Whether `note` passes the note filter `filter` ("" passes every note). */
export function noteMatches(note: Note, filter: string): boolean {
  if (!filter || filter === NOTE_FILTER_NOTED) {
    return true;
  }
  return filter.startsWith(NOTE_FILTER_TAG) && note.tag === filter.slice(NOTE_FILTER_TAG.length);
}

/** What a row's note mark says: how many notes, how many of them model findings. */
export interface NoteMark {
  count: number;
  findings: number;
}

/** The mark's words, for the row's title and its accessible name. */
export function markWords(mark: NoteMark): string {
  const people = mark.count - mark.findings;
  const parts: string[] = [];
  if (people) {
    parts.push(`${people} note${people === 1 ? '' : 's'}`);
  }
  if (mark.findings) {
    parts.push(`${mark.findings} model finding${mark.findings === 1 ? '' : 's'}`);
  }
  return parts.join(', ');
}

/** This session's notes, as the host last answered them. */
export class NotesModel {
  /** False once the host says it has no notes (an older kernel, a notebook snapshot). */
  available = true;
  private payload: NotesPayload | null = null;
  private byEntry = new Map<string, Note[]>();
  private readonly listeners = new Set<() => void>();
  private token = 0;

  constructor(private readonly transport: Transport) {}

  get loaded(): boolean {
    return this.payload !== null;
  }

  get notes(): Note[] {
    return this.payload?.notes ?? [];
  }

  get tags(): string[] {
    return this.payload?.tags ?? [];
  }

  get store(): string | null {
    return this.payload?.store ?? null;
  }

  /** Whether notes can be added here (false in a static export or with a store that cannot be written). */
  get writable(): boolean {
    return Boolean(this.payload?.writable);
  }

  onChange(callback: () => void): () => void {
    this.listeners.add(callback);
    return () => this.listeners.delete(callback);
  }

  /** Ask the host for the notes again (on opening, and whenever `notes_version` changes). */
  async load(): Promise<void> {
    const token = ++this.token;
    try {
      const reply = await this.transport.request<NotesPayload>('notes', {});
      if (token === this.token) {
        this.apply(reply.result);
      }
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      if (/unknown request|not found|404/i.test(text) && token === this.token) {
        this.available = false; // a host without notes: no notes UI rather than an error on every entry
        this.emit();
      }
    }
  }

  /** Run one of the three writes; its answer is the notes after it. Rejects with the host's refusal. */
  async change(op: 'note_add' | 'note_edit' | 'note_remove', args: Record<string, unknown>): Promise<void> {
    const token = ++this.token;
    const reply = await this.transport.request<NotesPayload>(op, args);
    if (token === this.token) {
      this.apply(reply.result);
    }
  }

  private apply(payload: NotesPayload): void {
    if (!payload || !Array.isArray(payload.notes)) {
      return;
    }
    this.available = true;
    this.payload = payload;
    this.byEntry = new Map();
    for (const note of payload.notes) {
      if (note.missing) {
        continue;
      }
      // A range is marked at both ends; its entry pane lists it at both.
      for (const id of note.end_entry_id && note.end_entry_id !== note.entry_id ? [note.entry_id, note.end_entry_id] : [note.entry_id]) {
        const list = this.byEntry.get(id);
        if (list) {
          list.push(note);
        } else {
          this.byEntry.set(id, [note]);
        }
      }
    }
    this.emit();
  }

  private emit(): void {
    this.listeners.forEach(cb => cb());
  }

  /** The notes on an entry (at either end of a range), oldest first. */
  notesOf(entryId: string): Note[] {
    return this.byEntry.get(entryId) ?? [];
  }

  /** The note mark of an entry's row, or null. */
  markOf(entryId: string): NoteMark | null {
    const list = this.byEntry.get(entryId);
    if (!list || !list.length) {
      return null;
    }
    return { count: list.length, findings: list.filter(isFinding).length };
  }

  /** The entries with a note that passes `filter`, in the order their first note was added. */
  notedIds(filter = ''): string[] {
    const ids: string[] = [];
    for (const [id, list] of this.byEntry) {
      if (list.some(note => noteMatches(note, filter))) {
        ids.push(id);
      }
    }
    return ids;
  }

  /** How many notes pass `filter` (the count the filter control shows). */
  count(filter = ''): number {
    return this.notes.filter(note => !note.missing && noteMatches(note, filter)).length;
  }
}

export interface NoteViewHandlers {
  /** Select an entry in the tree and scroll to it. */
  open(entryId: string): void;
  notify(message: string, isError?: boolean): void;
  /** The editor closed (saved or cancelled): the keyboard goes back to the tree, on the row. */
  done(): void;
  /** Why notes cannot be written here, when they cannot. */
  readOnly(): string;
}

/** When a note was written (and edited), in the reader's words. */
function noteTime(note: Note): string {
  const created = formatLabelTime(note.created) || note.created;
  return note.updated && note.updated !== note.created ? `${created} (edited ${formatLabelTime(note.updated) || note.updated})` : created;
}

/** One note: tag chip, who and when (a finding: its model and question), the text as written. */
function drawNote(parent: HTMLElement, note: Note, options: { grouped?: boolean } = {}): HTMLElement {
  const item = el('div', `pi-note${isFinding(note) ? ' pi-note-finding' : ''}${note.missing ? ' pi-note-missing' : ''}`, parent);
  item.dataset.noteId = note.id;
  item.dataset.entry = note.entry_id;
  item.setAttribute('role', 'listitem');
  const head = el('div', 'pi-note-head', item);
  if (note.tag) {
    const chip = el('span', 'pi-note-tag', head, rowSafe(note.tag));
    chip.title = note.tag;
  }
  if (isFinding(note)) {
    el('span', 'pi-note-source', head, `finding · ${rowSafe(findingModel(note))}`);
  }
  const who = [note.author ? rowSafe(note.author) : '', noteTime(note)].filter(Boolean).join(' · ');
  el('span', 'pi-note-meta pi-muted', head, who);
  if (note.scope !== 'entry') {
    el('span', 'pi-note-scope pi-muted', head,
      note.scope === 'range' ? `range to ${shortId(note.end_entry_id)}` : 'whole branch');
  }
  if (isFinding(note) && note.question && !options.grouped) {
    el('div', 'pi-note-question', item, `Q: ${note.question}`);
  }
  if (note.text) {
    el('div', 'pi-note-text', item, note.text);
  }
  return item;
}

/**
 * The notes of the selected entry in its pane: each note with Edit and Remove (Remove asks
 * first), and "Add note", an inline editor (tag with the session's tags offered, text;
 * ctrl/cmd+Enter saves, Escape cancels).
 */
export class NotesSection {
  private box: HTMLElement | null = null;
  private entryId: string | null = null;
  /** The note being edited (null: a new one), while the editor is open. */
  private editing: { noteId: string | null } | null = null;
  private listEl: HTMLElement | null = null;
  private editorEl: HTMLElement | null = null;
  private heading: HTMLElement | null = null;
  private addButton: HTMLButtonElement | null = null;
  /** The editor field that last had the keyboard (given back when the pane is drawn again). */
  private lastFocus: HTMLElement | null = null;

  constructor(
    private readonly model: NotesModel,
    private readonly handlers: NoteViewHandlers
  ) {}

  /** Draw the section for `entryId` into `parent`, before `before`. */
  mount(parent: HTMLElement, before: Element | null, entryId: string): void {
    if (!this.model.available) {
      this.box = null;
      return;
    }
    if (entryId !== this.entryId) {
      this.editing = null; // another entry: a draft of the last one is dropped, as in the label dialog
    }
    this.entryId = entryId;
    const box = el('section', 'pi-notes');
    parent.insertBefore(box, before);
    box.setAttribute('aria-label', 'notes on this entry');
    this.box = box;
    const head = el('div', 'pi-notes-head', box);
    this.heading = el('span', 'pi-notes-title', head);
    this.addButton = button('Add note', 'pi-small pi-note-add', head, () => this.open(null), 'Add a note to this entry (shift+N in the tree)');
    this.listEl = el('div', 'pi-note-list', box);
    this.listEl.setAttribute('role', 'list');
    const old = this.editorEl;
    if (this.editing && old && old.firstChild) {
      // The pane is drawn again (the selection's answer, a tool-output toggle) while a note is
      // written: the editor moves over as it is, with what is typed and where the caret was.
      // The pane was emptied first, which dropped the focus to the page: it goes back to the
      // editor field that had it (not when the reader has since moved it elsewhere).
      box.appendChild(old);
      const lost = !document.activeElement || document.activeElement === document.body || old.contains(document.activeElement);
      if (lost && this.lastFocus && old.contains(this.lastFocus)) {
        this.lastFocus.focus();
      }
    } else {
      this.editorEl = el('div', 'pi-note-editor-box', box);
      if (this.editing) {
        this.drawEditor();
      }
    }
    this.refresh();
  }

  /** Whether the section is on screen for `entryId`. */
  shows(entryId: string | null): boolean {
    return this.box !== null && this.box.isConnected && this.entryId === entryId;
  }

  get isEditing(): boolean {
    return this.editing !== null && this.box !== null && this.box.isConnected;
  }

  /** Redraw the notes (the editor, if open, keeps what is typed in it). */
  refresh(): void {
    const list = this.listEl;
    if (!list || !this.heading || !this.entryId || !this.addButton) {
      return;
    }
    clear(list);
    const notes = this.model.notesOf(this.entryId);
    this.heading.textContent = notes.length ? `Notes (${notes.length})` : 'Notes';
    this.addButton.hidden = !this.model.writable;
    if (!notes.length) {
      el('div', 'pi-muted pi-note-none', list,
        this.model.writable ? 'No notes on this entry.' : 'No notes on this entry (notes are read-only here).');
    }
    for (const note of notes) {
      const item = drawNote(list, note);
      if (this.model.writable) {
        const actions = el('div', 'pi-note-actions', item);
        button('Edit', 'pi-small pi-note-edit', actions, () => this.open(note.id)).setAttribute('aria-label', `edit note ${note.tag || shortId(note.id)}`);
        const remove = button('Remove', 'pi-small pi-note-remove', actions, () => this.confirmRemove(actions, note));
        remove.setAttribute('aria-label', `remove note ${note.tag || shortId(note.id)}`);
      }
    }
  }

  /** Open the editor: a new note (null) or the note `noteId`. */
  open(noteId: string | null): void {
    if (!this.model.writable) {
      this.handlers.notify(this.handlers.readOnly(), true);
      return;
    }
    this.editing = { noteId };
    this.drawEditor();
  }

  private drawEditor(): void {
    const box = this.editorEl;
    const entryId = this.entryId;
    if (!box || !this.editing || !entryId) {
      return;
    }
    const noteId = this.editing.noteId;
    const note = noteId ? this.model.notes.find(n => n.id === noteId) : undefined;
    clear(box);
    const form = el('form', 'pi-note-editor', box);
    form.addEventListener('focusin', event => {
      this.lastFocus = event.target as HTMLElement;
    });
    form.setAttribute('aria-label', note ? 'edit note' : 'add a note');
    const suffix = Math.random().toString(36).slice(2, 8);
    const tagRow = el('div', 'pi-note-field', form);
    const tagLabel = el('label', '', tagRow, 'Tag');
    const tag = el('input', 'pi-input pi-note-tag-input', tagRow);
    tag.id = tagLabel.htmlFor = `pi-note-tag-${suffix}`;
    tag.maxLength = 100;
    tag.placeholder = 'e.g. claim-unverified';
    tag.spellcheck = false;
    const tags = el('datalist', '', tagRow);
    tags.id = `pi-note-tags-${suffix}`;
    tag.setAttribute('list', tags.id);
    for (const t of this.model.tags) {
      const option = el('option', '', tags);
      option.value = t;
    }
    const textRow = el('div', 'pi-note-field', form);
    const textLabel = el('label', '', textRow, 'Note');
    const text = el('textarea', 'pi-input pi-note-text-input', textRow);
    text.id = textLabel.htmlFor = `pi-note-text-${suffix}`;
    text.rows = 3;
    text.maxLength = 20000;
    text.placeholder = 'what you found here (ctrl+Enter saves, Escape cancels)';
    tag.value = note?.tag ?? '';
    text.value = note?.text ?? '';
    const error = el('div', 'pi-error-box', form);
    error.hidden = true;
    error.setAttribute('role', 'alert');
    const row = el('div', 'pi-choices', form);
    const save = button(note ? 'Save' : 'Add note', 'pi-primary pi-note-save', row, () => void submit(), 'ctrl+Enter');
    button('Cancel', 'pi-note-cancel', row, () => this.close(), 'Escape');
    let saving = false;
    const submit = async (): Promise<void> => {
      if (saving) {
        return;
      }
      if (tag.value.includes('\n')) {
        tag.value = tag.value.replace(/[\r\n]+/g, ' ');
      }
      if (!tag.value.trim() && !text.value.trim()) {
        error.hidden = false;
        error.textContent = 'Write a note or a tag first.';
        text.focus();
        return;
      }
      saving = true;
      save.disabled = true;
      try {
        if (note) {
          await this.model.change('note_edit', { id: note.id, text: text.value, tag: tag.value.trim() });
        } else {
          await this.model.change('note_add', { entry_id: entryId, text: text.value, tag: tag.value.trim() });
        }
        this.handlers.notify(note ? 'Note saved' : 'Note added');
        this.close();
      } catch (e) {
        error.hidden = false;
        error.textContent = e instanceof Error ? e.message : String(e);
      } finally {
        saving = false;
        save.disabled = false;
      }
    };
    form.addEventListener('submit', event => {
      event.preventDefault();
      void submit();
    });
    form.addEventListener('keydown', event => {
      // The editor's keys are its own: the tree and the notebook never see them.
      event.stopPropagation();
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        void submit();
      } else if (event.key === 'Escape') {
        event.preventDefault();
        this.close();
      }
    });
    text.focus();
    form.scrollIntoView?.({ block: 'nearest' });
  }

  /** Close the editor; the keyboard goes back to the tree. */
  close(): void {
    this.editing = null;
    if (this.editorEl) {
      clear(this.editorEl);
    }
    this.handlers.done();
  }

  private confirmRemove(actions: HTMLElement, note: Note): void {
    clear(actions);
    el('span', 'pi-warn', actions, 'Remove this note?');
    const yes = button('Remove', 'pi-small pi-note-remove-yes', actions, () => {
      this.model.change('note_remove', { id: note.id }).then(
        () => {
          this.handlers.notify('Note removed');
          this.handlers.done();
        },
        e => this.handlers.notify(e instanceof Error ? e.message : String(e), true)
      );
    });
    const no = button('Keep', 'pi-small pi-note-remove-no', actions, () => {
      this.refresh();
      this.listEl?.querySelector<HTMLElement>(`.pi-note[data-note-id="${CSS.escape(note.id)}"] .pi-note-remove`)?.focus();
    });
    actions.addEventListener('keydown', event => {
      if (event.key === 'Escape') {
        event.stopPropagation();
        no.click();
      }
    });
    yes.focus();
  }
}

const MAX_LISTED = 1000;
const MAX_PREVIEWS = 200;

export interface NotesListHandlers {
  open(entryId: string): void;
  /** A few words of an entry (its first line), for the list; null while unknown. */
  preview(entryId: string): Promise<string | null>;
}

/**
 * The Notes tab: every note of the session. The reader's notes first (in the order written),
 * then the model findings grouped by question; notes whose entry is not in this session on
 * one line at the end (opened to list them). A click (or Enter) on a note selects its entry.
 */
export function renderNotesList(pane: HTMLElement, model: NotesModel, filter: string, handlers: NotesListHandlers): void {
  clear(pane);
  const box = el('div', 'pi-notes-all', pane);
  const title = el('div', 'pi-pane-title', box);
  const shown = model.notes.filter(note => noteMatches(note, filter));
  const present = shown.filter(note => !note.missing);
  const missing = shown.filter(note => note.missing);
  title.textContent = `${present.length} note${present.length === 1 ? '' : 's'} in this session${filter ? ` (note filter: ${filterName(filter)})` : ''}`;
  if (model.store) {
    const where = el('div', 'pi-muted pi-notes-store', box, `kept in ${model.store}${model.writable ? '' : ' (read-only here)'}`);
    where.title = 'Notes live in this file, beside the sessions; the session files are never written.';
  } else if (!model.writable) {
    el('div', 'pi-muted pi-notes-store', box, 'read-only here');
  }
  if (!shown.length) {
    el('p', 'pi-muted', box, model.notes.length ? 'No note passes the note filter.' : 'No notes yet: select an entry and press shift+N (or "Add note" in its pane).');
  }
  // A corpus question can leave thousands of findings: the list draws the first MAX_LISTED and
  // asks for the entry words of the first MAX_PREVIEWS only (each is a request to the host).
  let listed = 0;
  const item = (parent: HTMLElement, note: Note): void => {
    listed += 1;
    if (listed > MAX_LISTED) {
      return;
    }
    // A finding's question heads its group: not repeated on each of its notes.
    const node = drawNote(parent, note, { grouped: isFinding(note) && !note.missing });
    node.classList.add('pi-note-pick');
    const preview = el('div', 'pi-note-entry pi-muted', node, `entry ${shortId(note.entry_id)}`);
    node.insertBefore(preview, node.children[1] ?? null);
    if (!note.missing) {
      node.tabIndex = 0;
      node.setAttribute('role', 'button');
      node.setAttribute('aria-label', `select entry ${note.entry_id}: ${note.tag ? `[${note.tag}] ` : ''}${note.text.slice(0, 80)}`);
      node.addEventListener('click', () => handlers.open(note.entry_id));
      node.addEventListener('keydown', event => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          event.stopPropagation();
          handlers.open(note.entry_id);
        }
      });
      if (listed > MAX_PREVIEWS) {
        return;
      }
      void handlers.preview(note.entry_id).then(words => {
        if (words !== null) {
          preview.textContent = `entry ${shortId(note.entry_id)}: ${rowSafe(words)}`;
          preview.title = note.entry_id;
        }
      });
    }
  };
  const people = present.filter(note => !isFinding(note));
  if (people.length) {
    const group = el('div', 'pi-notes-group', box);
    el('div', 'pi-notes-group-title', group, `Notes (${people.length})`);
    const list = el('div', 'pi-note-list', group);
    list.setAttribute('role', 'list');
    people.forEach(note => item(list, note));
  }
  const questions = new Map<string, Note[]>();
  for (const note of present.filter(isFinding)) {
    const key = note.question ?? '';
    const list = questions.get(key);
    if (list) {
      list.push(note);
    } else {
      questions.set(key, [note]);
    }
  }
  for (const [question, notes] of questions) {
    const group = el('div', 'pi-notes-group pi-notes-findings', box);
    const models = [...new Set(notes.map(findingModel))].map(rowSafe).join(', ');
    el('div', 'pi-notes-group-title', group, `Findings (${notes.length}) · ${models}`);
    if (question) {
      el('div', 'pi-note-question', group, `Q: ${question}`);
    }
    const list = el('div', 'pi-note-list', group);
    list.setAttribute('role', 'list');
    notes.forEach(note => item(list, note));
  }
  if (listed > MAX_LISTED) {
    el('p', 'pi-muted pi-notes-more', box,
      `${listed - MAX_LISTED} more not listed here: the note filter (by tag) narrows the list, alt+N walks the rows.`);
  }
  if (missing.length) {
    const line = el('details', 'pi-notes-missing', box);
    el('summary', '', line, `${missing.length} note${missing.length === 1 ? '' : 's'} on entries not in this session`);
    const list = el('div', 'pi-note-list', line);
    list.setAttribute('role', 'list');
    missing.forEach(note => item(list, note));
  }
}

/** The filter's words ("noted", "tag: X"). */
export function filterName(filter: string): string {
  if (filter === NOTE_FILTER_NOTED) {
    return 'noted';
  }
  return filter.startsWith(NOTE_FILTER_TAG) ? `tag: ${filter.slice(NOTE_FILTER_TAG.length)}` : 'any row';
}

/**
 * The note filter control beside the search: a select "notes: any row / noted / tag: X" with
 * the number of notes; choosing sets ViewState `note_filter` (the host lays the rows out).
 */
export class NoteFilterControl {
  readonly el: HTMLSpanElement;
  private readonly select: HTMLSelectElement;
  private readonly countEl: HTMLButtonElement;

  constructor(parent: HTMLElement, private readonly transport: Transport, showList: () => void) {
    this.el = el('span', 'pi-note-filter-box', parent);
    // No visible label (the first option says "notes: …"): a narrow widget keeps its toolbar on two lines.
    this.select = el('select', 'pi-note-filter', this.el);
    this.select.setAttribute('aria-label', 'note filter');
    this.select.title = 'Show every row, the rows with a note, or those with a note of one tag (alt+N / alt+shift+N: next / previous noted row)';
    this.select.addEventListener('change', () => transport.set({ note_filter: this.select.value }));
    this.select.addEventListener('keydown', event => event.stopPropagation());
    this.countEl = button('', 'pi-small pi-note-count', this.el, showList, 'List every note of this session');
  }

  update(model: NotesModel): void {
    const current = this.transport.get('note_filter') ?? '';
    // Shown once the session has a note (or the filter is on): nothing to filter before that,
    // and the toolbar of a narrow widget keeps its lines for the tree.
    this.el.hidden = !model.available || (!model.notes.length && !current);
    const options: [string, string][] = [['', 'notes: any row'], [NOTE_FILTER_NOTED, `notes: noted (${model.count()})`]];
    for (const tag of model.tags) {
      options.push([`${NOTE_FILTER_TAG}${tag}`, `notes: tag: ${rowSafe(tag)} (${model.count(NOTE_FILTER_TAG + tag)})`]);
    }
    if (current && !options.some(([value]) => value === current)) {
      options.push([current, `notes: ${filterName(current)} (0)`]); // a tag whose last note went: still chosen
    }
    clear(this.select);
    for (const [value, text] of options) {
      const option = el('option', '', this.select, text);
      option.value = value;
    }
    this.select.value = current;
    this.select.classList.toggle('pi-on', Boolean(current));
    const total = model.count();
    this.countEl.textContent = `✎ ${total} note${total === 1 ? '' : 's'}`;
    this.countEl.setAttribute('aria-label', `${total} notes in this session: list them`);
  }
}
