// The payloads of the Compare pane's requests (pi_lab/view/compare_requests.py) and the small
// pieces both of its views draw: an entry button, a role tag, a "show more" button.
// Session text enters only through textContent (el / button).

import { button, el, formatTokens, rowSafe, shortId } from './dom';
import { roleName } from './projection';

/** A picked entry as the kernel names it (compare_node, and `nodes` of the answers). */
export interface CompareNode {
  id: string;
  kind: string;
  text: string;
  /** The session's current leaf. */
  is_leaf: boolean;
  /** Nothing follows it in the tree. */
  is_tip: boolean;
}

export interface DiffRow {
  source_id: string | null;
  role: string | null;
  tokens: number;
  source_type?: string | null;
  preview?: string;
  edited?: boolean;
  tokens_b?: number;
}

export interface Replaced {
  side: 'a' | 'b';
  compaction_id: string | null;
  source_ids: (string | null)[];
  tokens: number;
  rows: DiffRow[];
  count: number;
}

export type DiffGroup = 'both' | 'only_a' | 'only_b';

export interface DiffAnswer {
  a_id: string;
  b_id: string;
  both: DiffRow[];
  only_a: DiffRow[];
  only_b: DiffRow[];
  tokens_a: number;
  tokens_b: number;
  delta: number;
  context_a: number;
  context_b: number;
  replaced: Replaced[];
  notes: string[];
  counts: Record<DiffGroup, number>;
  group_tokens: Record<DiffGroup, number>;
  limit: number;
  nodes: { a: CompareNode; b: CompareNode };
}

export interface SearchHit {
  index: number;
  source_id: string | null;
  role: string | null;
  count: number;
  snippet: string;
}

export interface SearchAnswer {
  text: string;
  a: SearchHit[];
  b: SearchHit[];
  in_a: boolean;
  in_b: boolean;
  a_hits: number;
  b_hits: number;
  a_count: number;
  b_count: number;
  limit: number;
}

export interface SideStats {
  entries: number;
  user_messages: number;
  calls: number;
  tools: Record<string, number>;
  tool_calls: number;
  tool_results: number;
  tool_errors: number;
  files_read: string[];
  files_modified: string[];
  tokens: { input: number; output: number; cache_read: number; cache_write: number; total: number };
  cost: number;
  usage_known: boolean;
  errors: { entry_id: string | null; error: string | null; overflow: boolean; retryable: boolean; omitted: boolean }[];
  error_count: number;
  aborted: number;
  retries: number;
  context_tokens: number;
}

export interface SegmentRow {
  id: string | null;
  kind: string;
  text: string;
  error: boolean;
}

export interface BranchSummaryInfo {
  entry_id: string | null;
  from_id: string | null;
  parent_id: string | null;
  left_side: 'a' | 'b' | null;
  on_side: 'a' | 'b' | null;
  summary: string;
  truncated?: boolean;
}

export interface BranchesAnswer {
  leaf_a: string;
  leaf_b: string;
  common_ancestor: string | null;
  a: string[];
  b: string[];
  a_rows: SegmentRow[];
  b_rows: SegmentRow[];
  a_count: number;
  b_count: number;
  a_stats: SideStats;
  b_stats: SideStats;
  summaries: BranchSummaryInfo[];
  notes: string[];
  limit: number;
  nodes: { a: CompareNode; b: CompareNode; common: CompareNode | null };
}

export function roleTag(parent: HTMLElement, role: string | null): HTMLElement {
  return el('span', `pi-role pi-role-${role ?? 'unknown'}`, parent, roleName(role));
}

/** A short entry id as a button that selects the entry in the tree. */
export function entryButton(parent: HTMLElement, id: string | null, open: (id: string) => void, what = 'entry'): HTMLButtonElement {
  const b = button(shortId(id), 'pi-small pi-cmp-id', parent, () => {
    if (id) {
      open(id);
    }
  }, id ? `select ${what} ${id} in the tree` : 'an entry without an id');
  b.disabled = !id;
  b.setAttribute('aria-label', id ? `select ${what} ${id} in the tree` : 'entry without an id');
  return b;
}

/** "Show n more" under a list cut at the request's limit. */
export function moreButton(parent: HTMLElement, shown: number, total: number, more: () => void): void {
  if (total <= shown) {
    return;
  }
  const b = button(`Show more (${total - shown} not shown)`, 'pi-small pi-cmp-more', parent, more);
  b.setAttribute('aria-label', `show more: ${total - shown} of ${total} not shown`);
}

/** One line of session text (line breaks and bidi controls made visible). */
export function line(parent: HTMLElement, className: string, text: string): HTMLElement {
  const node = el('span', className, parent, rowSafe(text));
  node.title = text;
  return node;
}

export function tokens(n: number): string {
  return `${formatTokens(n)} tok`;
}

/** "+1.2k" / "−300" / "±0". */
export function signed(n: number): string {
  if (n === 0) {
    return '±0';
  }
  return `${n > 0 ? '+' : '−'}${formatTokens(Math.abs(n))}`;
}
