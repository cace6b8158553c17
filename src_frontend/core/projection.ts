// "What the model sees" at the selected entry: pi's projection with the leaf put on that entry
// (compaction summary first, the kept messages, branch summaries, context edits applied, the
// system snapshot), each message with its token estimate and a link to its source entry.

import { Composition, renderComposition } from './composition';
import { button, clear, el, formatTokens, rowSafe, shortId } from './dom';

export interface ProjectedMessage {
  role: string;
  source_id: string;
  source_type?: string;
  tokens: number;
  preview: string;
  usage_tokens?: number;
  omitted?: boolean;
  replaced?: boolean;
  reason?: string;
  error?: boolean;
}

/** The context_at payload (pi_lab/view/context.py). */
export interface Projection {
  at: string | null;
  is_leaf?: boolean;
  messages: ProjectedMessage[];
  message_count: number;
  estimated_total: number;
  context_tokens: number;
  measured_tokens: number;
  trailing_tokens: number;
  thinking_level: string;
  model: { provider?: string; modelId?: string } | null;
  system_tokens: number;
  compaction_id: string | null;
}

const ROLE_NAMES: Record<string, string> = {
  compactionSummary: 'compaction summary',
  branchSummary: 'branch summary',
  toolResult: 'tool result',
  bashExecution: 'bash',
  custom: 'custom message'
};

/** How a message role is named on screen (this pane and the Compare pane). */
export function roleName(role: string | null): string {
  return role ? ROLE_NAMES[role] ?? role : 'message';
}

/** The composition bar above the list and the part the list is filtered to. */
export interface ProjectionParts {
  composition: Composition | null;
  /** The part shown alone (null: every message). */
  part: string | null;
  choose(part: string | null): void;
  /** The agent that wrote the session (`pi`, `claude-code`, `codex`), when the host says. */
  agent?: string;
}

/** The agents' names as people write them. */
const AGENT_NAMES: Record<string, string> = { 'claude-code': 'Claude Code', codex: 'Codex' };

/**
 * The pane on which a composition part was chosen, and the entry it was chosen on: a part
 * filters the list of that entry only (the next entry shows every message, issue 22). Keyed by
 * the pane element, so two viewers on one page never share a choice.
 */
const chosenOn = new WeakMap<HTMLElement, string | null>();

/**
 * Whether the selected entry is a user message. pi's projection with the leaf on a user message
 * ends with that message (it is what the model received when the message was sent), so the
 * list's last projected row names it; the pane reads it there, the same in every host.
 */
export function sentWith(p: Projection): boolean {
  for (let i = p.messages.length - 1; i >= 0; i--) {
    const m = p.messages[i];
    if (!m.omitted) {
      return m.role === 'user' && m.source_id === p.at;
    }
  }
  return false;
}

export function renderProjection(parent: HTMLElement, p: Projection, open: (entryId: string) => void,
  parts?: ProjectionParts): void {
  clear(parent);
  const title = el('h4', 'pi-pane-title', parent);
  const sent = sentWith(p);
  if (sent) {
    // A reader who selects a message expects the context it was sent in, the message included;
    // pi's own rule (going to a user message puts the leaf before it) is said under the title.
    title.textContent = `The context sent with this message${p.is_leaf ? ' (the current leaf)' : ''}`;
    el('p', 'pi-muted pi-small-text pi-context-sent', parent,
      `What the model received with user message ${shortId(p.at)}: the context before it on its branch, then the message ` +
      'itself (last below). Going to a user message in pi\'s tree puts the leaf on the entry before it, so the message can ' +
      'be edited and sent again.');
  } else {
    title.textContent = p.is_leaf ? 'What the model sees now (at the leaf)' : `What the model would see with the leaf at ${shortId(p.at)}`;
  }
  if (parts?.agent && parts.agent !== 'pi') {
    // Another agent's file records the messages, not what its program added around them.
    el('p', 'pi-muted pi-small-text pi-context-unrecorded', parent,
      `${AGENT_NAMES[parts.agent] ?? parts.agent} does not record its system prompt or tool schemas in the ` +
      'session file: they are not shown here, and no estimate of them is made.');
  }
  const facts = el('div', 'pi-detail-facts', parent);
  el('span', '', facts, `${p.message_count} messages`);
  el('span', '', facts, `${formatTokens(p.estimated_total)} tokens estimated in all`);
  if (p.measured_tokens > 0) {
    el('span', 'pi-measured', facts, `context: ${formatTokens(p.measured_tokens)} measured + ${formatTokens(p.trailing_tokens)} estimated`);
  } else {
    el('span', 'pi-estimated', facts, `context: ${formatTokens(p.context_tokens)} estimated (no trusted usage)`);
  }
  if (p.model?.modelId) {
    el('span', 'pi-muted', facts, `${p.model.provider ?? ''}/${p.model.modelId} · thinking ${p.thinking_level}`);
  }
  if (!p.messages.length) {
    el('p', 'pi-muted', parent, 'Nothing: the model would start from an empty context.');
    return;
  }
  // The composition's indexes count projected messages; the list also holds placeholders for
  // what a context edit or an older checkpoint dropped (omitted), which are not projected. So
  // the k-th listed message that is not omitted is projected message k.
  let shown: Set<number> | null = null;
  // A part chosen on another entry is not this entry's: every message is shown.
  const mine = chosenOn.get(parent) === p.at;
  if (!mine) {
    chosenOn.delete(parent);
  }
  const chosen = (mine && parts?.composition?.parts.find(c => c.part === parts.part)) || null;
  const choose = (part: string | null): void => {
    chosenOn.set(parent, p.at);
    parts?.choose(part);
  };
  if (parts?.composition) {
    renderComposition(el('div', '', parent), parts.composition, chosen ? chosen.part : null, choose);
  }
  if (chosen && parts) {
    shown = new Set(chosen.indexes);
    const note = el('div', 'pi-composition-filter', parent);
    el('span', '', note, `Showing the ${chosen.indexes.length} message${chosen.indexes.length === 1 ? '' : 's'} of “${rowSafe(chosen.part)}”`);
    button('show all', 'pi-small', note, () => choose(null));
  }
  let max = 1; // a loop, not Math.max(...list): a long context would overflow the argument list
  for (const m of p.messages) {
    max = Math.max(max, m.tokens);
  }
  const list = el('ol', 'pi-context', parent);
  let projected = -1;
  for (const m of p.messages) {
    if (!m.omitted) {
      projected++;
    }
    if (shown && (m.omitted || !shown.has(projected))) {
      continue;
    }
    const item = el('li', `pi-context-item pi-role-${m.role}${m.omitted ? ' pi-omitted' : ''}${m.error ? ' pi-error' : ''}`, list);
    if (sent && !m.omitted && m.source_id === p.at) {
      item.classList.add('pi-context-sent-item'); // the message itself, last in its context
    }
    const head = el('div', 'pi-context-head', item);
    el('span', `pi-role pi-role-${m.role}`, head, roleName(m.role));
    const bar = el('span', 'pi-context-bar', head);
    const fill = el('span', 'pi-context-fill', bar);
    fill.style.width = `${Math.max(1, (m.tokens / max) * 100)}%`;
    el('span', 'pi-num', head, m.omitted ? `0 (${m.reason})` : `${formatTokens(m.tokens)}`);
    if (m.usage_tokens !== undefined) {
      const u = el('span', 'pi-measured pi-small-text', head, `usage ${formatTokens(m.usage_tokens)}`);
      u.title = 'context size this response reported (measured)';
    }
    if (m.replaced) {
      el('span', 'pi-warn pi-small-text', head, 'edited');
    }
    const src = el('span', 'pi-link pi-source', head, shortId(m.source_id));
    src.title = `from entry ${m.source_id}`;
    src.addEventListener('click', () => open(m.source_id));
    el('div', 'pi-context-preview', item, m.preview);
  }
}
