// The detail pane: one entry, rendered (Markdown through the escaping renderer), with tool
// calls and their arguments, tool results with a none/preview/full toggle, collapsible
// thinking, usage, and the raw JSON.

import { bidiControlNames, button, clear, el, formatTokens, shortId, tokensBeforeText } from './dom';
import { renderMarkdown } from './markdown';

interface Cut {
  text: string;
  length: number;
  truncated: boolean;
}

interface Block extends Partial<Cut> {
  type: 'text' | 'thinking' | 'tool_call' | 'image' | 'other';
  id?: string;
  name?: string;
  arguments?: Cut;
  mime?: string;
  bytes?: number;
  redacted?: boolean;
  block_type?: string;
}

/** The entry payload (pi_lab/view/detail.py entry_detail + payload.entry_payload). */
export interface EntryDetail {
  id: string;
  type: string;
  kind: string;
  parent_id: string | null;
  timestamp: string;
  label: string | null;
  label_timestamp: string | null;
  tokens: number;
  raw: Cut;
  copy_text: string | null;
  role?: string;
  stop_reason?: string;
  error_message?: string;
  model?: string;
  provider?: string;
  usage?: Record<string, unknown>;
  blocks?: Block[];
  tool_result?: Cut & { tool_name: string; tool_call_id: string; is_error: boolean; lines: number; call?: { name: string; arguments: Cut } };
  bash?: { command: string; exit_code: number | null; cancelled: boolean; output: Cut; exclude_from_context: boolean };
  system?: { sections: string[]; tools_added: string[]; tools_removed: string[] };
  summary?: Cut;
  tokens_before?: number;
  first_kept_id?: string;
  from_id?: string;
  from_hook?: boolean;
  details?: Cut;
  custom_type?: string;
  target_id?: string;
  replacement?: Cut | null;
  label_text?: string;
  thinking_level?: string;
  name?: string;
  on_active_path: boolean;
  out_of_context: boolean;
  children: string[];
}

export interface DetailHandlers {
  open(entryId: string): void;
  full(entryId: string): void;
  toolOutput(): 'none' | 'preview' | 'full';
  setToolOutput(mode: 'none' | 'preview' | 'full'): void;
}

const PREVIEW_LINES = 12;

function cutNote(parent: HTMLElement, cut: Cut, entryId: string, handlers: DetailHandlers): void {
  if (cut.truncated) {
    const note = el('div', 'pi-muted', parent, `Showing ${cut.text.length} of ${cut.length} characters. `);
    button('Load all', 'pi-small', note, () => handlers.full(entryId));
  }
}

function link(parent: HTMLElement, label: string, id: string | null | undefined, handlers: DetailHandlers): void {
  if (!id) {
    return;
  }
  const span = el('span', 'pi-link', parent, `${label} ${shortId(id)}`);
  span.title = id;
  span.addEventListener('click', () => handlers.open(id));
}

function renderBlocks(parent: HTMLElement, d: EntryDetail, handlers: DetailHandlers): void {
  for (const block of d.blocks ?? []) {
    if (block.type === 'text') {
      const body = el('div', 'pi-md', parent);
      renderMarkdown(body, block.text ?? '');
      cutNote(parent, block as Cut, d.id, handlers);
    } else if (block.type === 'thinking') {
      const box = el('details', 'pi-thinking', parent);
      el('summary', '', box, block.redacted ? 'thinking (redacted)' : `thinking · ${formatTokens(Math.ceil((block.length ?? 0) / 4))} tokens`);
      el('pre', 'pi-pre', box, block.text ?? '');
    } else if (block.type === 'tool_call') {
      const call = el('div', 'pi-toolcall', parent);
      const head = el('div', 'pi-toolcall-head', call);
      el('span', 'pi-toolcall-name', head, `→ ${block.name ?? '?'}`);
      el('span', 'pi-muted', head, ` ${shortId(block.id)}`);
      el('pre', 'pi-pre', call, block.arguments?.text ?? '');
    } else if (block.type === 'image') {
      el('div', 'pi-muted', parent, `[image ${block.mime ?? ''}, ${block.bytes ?? 0} bytes]`);
    } else {
      el('pre', 'pi-pre', parent, block.text ?? '');
    }
  }
}

function renderToolResult(parent: HTMLElement, d: EntryDetail, handlers: DetailHandlers): void {
  const result = d.tool_result!;
  if (result.call) {
    const call = el('div', 'pi-toolcall', parent);
    el('div', 'pi-toolcall-name', call, `→ ${result.call.name}`);
    el('pre', 'pi-pre', call, result.call.arguments.text);
  }
  const box = el('div', `pi-toolresult${result.is_error ? ' pi-error' : ''}`, parent);
  const head = el('div', 'pi-toolresult-head', box);
  el('span', '', head, `${result.is_error ? 'error from' : 'result of'} ${result.tool_name ?? 'tool'} · ${result.lines} lines`);
  const modes = el('span', 'pi-segmented', head);
  const mode = handlers.toolOutput();
  for (const m of ['none', 'preview', 'full'] as const) {
    const b = button(m, `pi-small${m === mode ? ' pi-on' : ''}`, modes, () => handlers.setToolOutput(m));
    b.setAttribute('aria-pressed', m === mode ? 'true' : 'false');
  }
  if (mode === 'none') {
    return;
  }
  let text = result.text;
  if (mode === 'preview') {
    const lines = text.split('\n');
    if (lines.length > PREVIEW_LINES) {
      text = lines.slice(0, PREVIEW_LINES).join('\n');
      el('pre', 'pi-pre', box, text);
      el('div', 'pi-muted', box, `… ${lines.length - PREVIEW_LINES} more lines (choose "full")`);
      renderBlocks(box, d, handlers);
      return;
    }
  }
  el('pre', 'pi-pre', box, text);
  cutNote(box, result, d.id, handlers);
  renderBlocks(box, d, handlers);
}

function renderUsage(parent: HTMLElement, usage: Record<string, unknown>): void {
  const table = el('table', 'pi-usage', parent);
  const row = (name: string, value: unknown): void => {
    const tr = el('tr', '', table);
    el('th', '', tr, name);
    el('td', 'pi-num', tr, typeof value === 'number' ? String(value) : JSON.stringify(value ?? null));
  };
  for (const key of ['input', 'output', 'cacheRead', 'cacheWrite', 'totalTokens']) {
    if (key in usage) {
      row(key, usage[key]);
    }
  }
  const cost = usage.cost as Record<string, unknown> | undefined;
  if (cost && typeof cost.total === 'number') {
    row('cost', `$${(cost.total as number).toFixed(4)}`);
  }
}

/** Render entry `d` into `parent`. */
export function renderDetail(parent: HTMLElement, d: EntryDetail, handlers: DetailHandlers): void {
  clear(parent);
  const head = el('div', 'pi-detail-head', parent);
  // An entry of a type pi does not know is named by its own type.
  const tag = el('span', `pi-kind-tag pi-kind-${d.kind}`, head, d.kind === 'unknown' ? `type: ${d.type}` : d.kind.replace('_', ' '));
  tag.title = d.kind === 'unknown' ? 'an entry type pi does not know (kept as is, not sent to the model)' : '';
  el('span', 'pi-detail-id', head, d.id);
  if (d.label) {
    // The whole label, line breaks and bidi controls as written (isolated from the UI around it).
    el('bdi', 'pi-detail-label', head, `[${d.label}]`);
  }
  const facts = el('div', 'pi-detail-facts', parent);
  el('span', '', facts, new Date(d.timestamp).toLocaleString());
  el('span', '', facts, `${formatTokens(d.tokens)} tokens (estimate)`);
  el('span', d.on_active_path ? 'pi-good' : 'pi-muted', facts, d.on_active_path ? 'on the current branch' : 'on another branch');
  if (d.out_of_context) {
    el('span', 'pi-warn', facts, 'summarized away by the latest compaction');
  }
  // The pane shows the text as written, so an override may reorder it here: say so.
  const controls = bidiControlNames(d.raw.text);
  if (controls.length) {
    const note = el('span', 'pi-warn pi-bidi-note', facts, `holds bidi controls (${controls.join(', ')}): the text below may read reordered`);
    note.title = 'Rows show these characters as markers such as ⟨RLO⟩; here they act as written.';
  }
  const nav = el('div', 'pi-detail-links', parent);
  link(nav, 'parent', d.parent_id, handlers);
  for (const child of d.children.slice(0, 8)) {
    link(nav, 'child', child, handlers);
  }
  if (d.children.length > 8) {
    el('span', 'pi-muted', nav, `+${d.children.length - 8} more children`);
  }

  const body = el('div', 'pi-detail-body', parent);
  if (d.error_message) {
    el('div', 'pi-error-box', body, d.error_message);
  }
  if (d.tool_result) {
    renderToolResult(body, d, handlers);
  } else if (d.bash) {
    el('pre', 'pi-pre pi-bash-command', body, `$ ${d.bash.command}`);
    el('pre', 'pi-pre', body, d.bash.output.text);
    el('div', 'pi-muted', body,
      `exit ${d.bash.exit_code ?? '?'}${d.bash.cancelled ? ' · canceled' : ''}${d.bash.exclude_from_context ? ' · not sent to the model' : ''}`);
  } else if (d.summary) {
    if (d.type === 'compaction') {
      const info = el('div', 'pi-detail-facts', body);
      el('span', '', info, tokensBeforeText(d.tokens_before));
      link(info, 'first kept', d.first_kept_id, handlers);
    } else {
      const info = el('div', 'pi-detail-facts', body);
      link(info, 'left branch at', d.from_id, handlers);
    }
    const md = el('div', 'pi-md', body);
    renderMarkdown(md, d.summary.text);
    cutNote(body, d.summary, d.id, handlers);
    if (d.details) {
      const box = el('details', '', body);
      el('summary', '', box, 'details');
      el('pre', 'pi-pre', box, d.details.text);
    }
  } else if (d.type === 'context_edit') {
    const info = el('div', 'pi-detail-facts', body);
    link(info, d.replacement ? 'replaces the content of' : 'omits', d.target_id, handlers);
    if (d.replacement) {
      el('pre', 'pi-pre', body, d.replacement.text);
    }
  } else if (d.type === 'label') {
    const info = el('div', 'pi-detail-facts', body);
    link(info, d.label_text ? `labels "${d.label_text}" on` : 'clears the label of', d.target_id, handlers);
  } else if (d.system) {
    renderBlocks(body, d, handlers);
    el('div', 'pi-muted', body,
      `sections: ${d.system.sections.join(', ') || '—'} · tools added: ${d.system.tools_added.join(', ') || '—'}`);
  } else {
    renderBlocks(body, d, handlers);
    for (const [key, value] of [['model', d.model], ['thinking level', d.thinking_level], ['title', d.name], ['custom type', d.custom_type]]) {
      if (value) {
        el('div', 'pi-muted', body, `${key}: ${value}`);
      }
    }
  }
  if (d.usage && typeof d.usage === 'object') {
    const box = el('details', 'pi-usage-box', body);
    el('summary', '', box, `usage${d.stop_reason ? ` · stop: ${d.stop_reason}` : ''}${d.model ? ` · ${d.provider ?? ''}/${d.model}` : ''}`);
    renderUsage(box, d.usage);
  }
  const raw = el('details', 'pi-raw', body);
  el('summary', '', raw, `raw JSON (${d.raw.length} characters)`);
  el('pre', 'pi-pre', raw, d.raw.text);
  cutNote(raw, d.raw, d.id, handlers);
}
