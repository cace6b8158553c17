// The context views of an HTML export without a kernel: the composition bar, the timeline's
// point for any entry, and the Compare pane (node names, context diff and search, branch
// comparison).
//
// The kernel answers these from the entries (pi_lab/view/composition.py, diff.py, branches.py,
// compare_requests.py, timeline_requests.py). The export embeds each entry's share of those
// answers, computed in Python by the same functions (pi_lab/export/views.py): per context row
// its composition shares and, for an edited message, a digest; per entry its usage counters,
// tool names, file paths, error, the id a context edit drops; per entry in the `facts` column
// its role, tool error, abort and whether it has a child. They are folded along the paths of
// the flat tree, as compose() and fold_stats() fold them there, one module per Python module:
// viewsComposition.ts, viewsTimeline.ts, viewsCompare.ts, viewsDiff.ts, viewsBranches.ts (over
// the shared reads of viewsData.ts); tests/export/test_export_views.py runs them in node
// against the kernel's answers.

import type { ExportHeader } from './data';
import { compareBranches } from './viewsBranches';
import { compareNode } from './viewsCompare';
import { composition } from './viewsComposition';
import { ViewsData } from './viewsData';
import { contextDiff, contextSearch } from './viewsDiff';
import { timelineAt } from './viewsTimeline';

export type { ContextRow, ViewsHeader } from './viewsData';

type Args = Record<string, unknown>;
type Answer = Record<string, unknown>;

/** The requests an export answers from the views' facts, by name, each as its Python module does. */
const REQUESTS: Record<string, (views: ViewsData, args: Args) => Answer | Promise<Answer>> = {
  composition,
  timeline_at: timelineAt,
  compare_node: compareNode,
  context_diff: contextDiff,
  context_search: contextSearch,
  compare_branches: compareBranches
};

export class StaticViews extends ViewsData {
  /** Whether this export embeds the views' facts (exports made before them do not). */
  static available(header: ExportHeader): boolean {
    return Boolean(header.views);
  }

  /** Whether `op` is one of the requests answered here. */
  static answers(op: string): boolean {
    return Object.prototype.hasOwnProperty.call(REQUESTS, op);
  }

  /** The answer to `op` (one `answers` names), or its refusal thrown in the kernel's words. */
  async answer(op: string, args: Args): Promise<Answer> {
    return REQUESTS[op](this, args);
  }
}
