// What the context views of an export read: the header `views` (pi_lab/export/views.py
// `views_header`), each context row with its extras, the facts column, and the entries of the
// flat tree, with the kernel's rule for naming one (view._common.require_entry). The views
// themselves are one module per Python module they port: viewsComposition.ts, viewsTimeline.ts,
// viewsCompare.ts, viewsDiff.ts, viewsBranches.ts; views.ts answers the requests with them.

import { FACT_BITS, ROLES } from '../core/contract';
import type { EntryRecord, ExportHeader } from './data';
import type { FlatData } from './layout';
import { jsonKind } from './pyValues';

/** The facts column (pi_lab/view/contract.py ROLES and FACT_BITS, through contract.ts). */
export const ROLE_MASK = 3;
export const ROLE_USER = ROLES.indexOf('user');
export const ROLE_ASSISTANT = ROLES.indexOf('assistant');
export const ROLE_TOOL_RESULT = ROLES.indexOf('toolResult');
export const TOOL_ERROR = FACT_BITS.tool_error;
export const ABORTED = FACT_BITS.aborted;
export const HAS_CHILD = FACT_BITS.has_child;

/** pi_lab/export/views.py `views_header`. */
export interface ViewsHeader {
  part_of_role: Record<string, string>;
  other: string;
  order: string[];
  tool_result: string;
  usage_keys: string[];
  default_limit: number;
  max_limit: number;
  preview: number;
  /** [flat index, id, fromId, parentId, ([text, truncated] when not in the tree)] */
  summaries: [number, string | null, string | null, string | null, [string, boolean]?][];
  /** Python's str.casefold where it is not each character lower-cased, and its white space. */
  fold: Record<string, string>;
  space: string;
  /** diff._SNIPPET: characters of context each side of a hit. */
  snippet: number;
  /** Long searched texts held once (a system prompt): a row's `t` of [k] is texts[k]. */
  texts?: string[];
}

/** A context row as the export embeds it (pi_lab/view/context.py context_at, plus `v`). */
export interface ContextRow {
  role?: unknown;
  source_id?: unknown;
  source_type?: unknown;
  tokens: number;
  preview?: string;
  omitted?: boolean;
  /** views.py row_extras: q shares, h digest of an edited message, o the source's flat index. */
  v?: { q?: string | (number | string)[]; h?: string; o?: number; t?: string | 1 | [number] };
}

/** The embedded facts of one export and the reads every view shares. */
export class ViewsData {
  readonly views: ViewsHeader;

  constructor(
    readonly header: ExportHeader,
    readonly flat: FlatData,
    readonly record: (index: number) => Promise<EntryRecord>,
    readonly rowsAt: (index: number) => Promise<ContextRow[]>,
    readonly index: (id: string | null | undefined) => number
  ) {
    this.views = header.views!;
  }

  path(index: number): number[] {
    const path: number[] = [];
    for (let at = index; at >= 0; at = this.flat.parent[at]) {
      path.push(at);
    }
    return path.reverse();
  }

  facts(index: number): number {
    return this.flat.facts ? this.flat.facts[index] : 0;
  }

  /** An entry named by the kernel's rule (view._common.require_entry), or the refusal in the
   *  viewer's words the kernel sends (view.errors.UnknownEntry.user_text). */
  require(id: unknown): number {
    if (typeof id !== 'string') {
      throw new Error(`an entry id is text, not ${jsonKind(id)}`);
    }
    if (!id) {
      throw new Error('no entry was named');
    }
    const index = this.index(id);
    if (index < 0) {
      throw new Error(`entry ${id} is not in this session`);
    }
    return index;
  }
}
