// What the context at a node is made of: a stacked bar of pi's token estimate by part (system
// prompt and tools, compaction summary, branch summaries, user, assistant text, thinking, tool
// calls, tool results by tool name, custom messages), drawn at the top of "What the model sees".
// Each part is a button: it filters the message list below to the messages of that part.

import { clear, el, formatTokens, rowSafe } from './dom';

export interface CompositionPart {
  part: string;
  tokens: number;
  messages: number;
  /** Positions in the projected messages (pi_lab/view/composition.py). */
  indexes: number[];
}

/** The `composition` payload (pi_lab/view/timeline_requests.py). */
export interface Composition {
  at: string;
  parts: CompositionPart[];
  total: number;
}

const FIXED: Record<string, string> = {
  'system prompt and tools': '#8957e5',
  'compaction summary': '#1a9c9c',
  'branch summaries': '#b7791f',
  user: '#1f6feb',
  'assistant text': '#6e7781',
  thinking: '#b083f0',
  'tool calls': '#a0622d',
  'custom messages': '#bf3989',
  'bash executions': '#d4a72c',
  other: '#adb5bd'
};
// Tool results, one part per tool: greens, in the order the tools first appear.
const TOOL_GREENS = ['#1a7f37', '#2da44e', '#4ac26b', '#116329', '#6fdd8b', '#0f5323'];

export function partColour(part: string, toolIndex: number): string {
  return FIXED[part] ?? TOOL_GREENS[toolIndex % TOOL_GREENS.length];
}

function share(tokens: number, total: number): string {
  if (!total) {
    return '0%';
  }
  const value = (tokens / total) * 100;
  return value > 0 && value < 1 ? '<1%' : `${Math.round(value)}%`;
}

/**
 * Draw the bar and its legend into `parent` (emptied first). `active` is the part the list is
 * filtered to (null: none); `choose(part)` is called with the part clicked, or null to clear.
 */
export function renderComposition(parent: HTMLElement, c: Composition, active: string | null,
  choose: (part: string | null) => void): void {
  clear(parent);
  parent.classList.add('pi-composition');
  const head = el('div', 'pi-composition-head', parent);
  el('span', 'pi-composition-title', head, 'Made of');
  el('span', 'pi-muted', head, `${formatTokens(c.total)} tokens estimated (chars/4) in ${c.parts.length} part${c.parts.length === 1 ? '' : 's'}`);
  if (!c.parts.length) {
    return;
  }
  const bar = el('div', 'pi-composition-bar', parent);
  // The bar is for the pointer; the legend below holds the same parts as keyboard buttons, so
  // each part is one tab stop.
  bar.setAttribute('aria-hidden', 'true');
  const legend = el('div', 'pi-composition-legend', parent);
  legend.setAttribute('role', 'group');
  legend.setAttribute('aria-label', 'context parts: choose one to show only its messages');
  let tools = 0;
  for (const p of c.parts) {
    const colour = partColour(p.part, p.part.startsWith('tool result: ') ? tools++ : 0);
    const pressed = active === p.part;
    const words = `${rowSafe(p.part)}: ${formatTokens(p.tokens)} tokens, ${share(p.tokens, c.total)}, ${p.messages} message${p.messages === 1 ? '' : 's'}`;
    const segment = el('button', 'pi-composition-segment', bar);
    segment.type = 'button';
    segment.tabIndex = -1;
    segment.style.flexGrow = String(Math.max(p.tokens, 0));
    segment.style.background = colour;
    segment.title = words;
    segment.dataset.part = p.part;
    segment.classList.toggle('pi-on', pressed);
    segment.addEventListener('click', event => {
      event.stopPropagation();
      choose(pressed ? null : p.part);
    });
    const item = el('button', 'pi-btn pi-composition-item', legend);
    item.type = 'button';
    item.dataset.part = p.part;
    item.setAttribute('aria-pressed', pressed ? 'true' : 'false');
    item.setAttribute('aria-label', `${words}${pressed ? ' (showing only these; press to show all)' : ''}`);
    item.classList.toggle('pi-on', pressed);
    const swatch = el('span', 'pi-composition-swatch', item);
    swatch.style.background = colour;
    // A tool's name comes from the session: one line, its bidi controls shown, not obeyed.
    el('span', 'pi-composition-name', item, rowSafe(p.part));
    el('span', 'pi-num pi-muted', item, `${formatTokens(p.tokens)} · ${share(p.tokens, c.total)}`);
    item.addEventListener('click', event => {
      event.stopPropagation();
      choose(pressed ? null : p.part);
    });
  }
}
